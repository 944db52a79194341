//! Placeholder: replaced by the RBAC authorizer module.
use serde_json::Value;
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    pub resource_request: bool,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub path: String,
}
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow { reason: String },
    Deny { reason: String },
}
pub trait RbacObjects {
    fn cluster_role(&self, name: &str) -> Option<Value>;
    fn role(&self, namespace: &str, name: &str) -> Option<Value>;
    fn cluster_role_bindings(&self) -> Vec<Value>;
    fn role_bindings(&self, namespace: &str) -> Vec<Value>;
}
pub fn authorize(_o: &dyn RbacObjects, _u: &UserInfo, _a: &Attributes) -> Decision {
    Decision::Deny {
        reason: String::new(),
    }
}
pub fn rules_for(_o: &dyn RbacObjects, _u: &UserInfo, _ns: &str) -> (Vec<Value>, Vec<Value>, bool) {
    (vec![], vec![], true)
}
pub fn forbidden_message(u: &UserInfo, a: &Attributes) -> String {
    format!(
        "forbidden: User \"{}\" cannot {} resource \"{}\"",
        u.name, a.verb, a.resource
    )
}
pub fn bootstrap_objects() -> Vec<Value> {
    vec![]
}
