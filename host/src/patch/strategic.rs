// placeholder until the strategic merge module lands
use serde_json::Value;
#[derive(Debug, thiserror::Error)]
pub enum StrategicPatchError {
    #[error("x")]
    X,
}
#[derive(Debug, Clone, Default)]
pub struct PatchSchema;
impl PatchSchema {
    pub fn for_kind(_g: &str, _k: &str) -> Self {
        PatchSchema
    }
}
pub fn apply(o: &Value, p: &Value, _s: &PatchSchema) -> Result<Value, StrategicPatchError> {
    let mut d = o.clone();
    json_patch::merge(&mut d, p);
    Ok(d)
}
