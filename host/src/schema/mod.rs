//! Placeholder while the structural-schema module is written (replaced wholesale).
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub reason: String,
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Schema {
    root: Value,
}

impl Schema {
    pub fn from_crd_schema(v: &Value, _field_path: &str) -> Result<Schema, Vec<Violation>> {
        Ok(Schema { root: v.clone() })
    }
    pub fn prune(&self, _obj: &mut Value) -> Vec<String> {
        Vec::new()
    }
    pub fn apply_defaults(&self, _obj: &mut Value) {}
    pub fn validate(&self, _obj: &Value) -> Vec<Violation> {
        Vec::new()
    }
    pub fn validate_cel(&self, _obj: &Value, _old: Option<&Value>) -> Vec<Violation> {
        Vec::new()
    }
    pub fn at_path(&self, _path: &str) -> Option<&Value> {
        Some(&self.root)
    }
}
