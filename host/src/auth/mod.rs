//! Who is asking and may they: bearer-token authentication, request attributes, RBAC
//! authorization over the stored roles and bindings, and the TLS material the server presents.

pub mod attributes;
pub mod rbac;
pub mod tls;
pub mod tokens;

use std::sync::Arc;

use crate::model::{ObjectKey, ResourceInfo};
use crate::store::Store;

pub use attributes::request_attributes;
pub use rbac::{Attributes, Decision, UserInfo};
pub use tokens::Authenticator;

/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";
/// Members are allowed everything, as on a cluster.
pub const MASTERS: &str = "system:masters";

pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The authenticated identity a request runs as (after impersonation).
#[derive(Debug, Clone)]
pub struct Principal(pub UserInfo);

/// RBAC over the store's current roles and bindings: a change takes effect with the next request.
pub struct Authorizer {
    store: Arc<dyn Store>,
    cache: std::sync::Mutex<DecisionCache>,
}

/// Decisions remembered for as long as no role or binding changes. The four RBAC maps are
/// persistent: any write makes a new map, so comparing them by pointer detects every change.
#[derive(Default)]
struct DecisionCache {
    maps: Vec<imbl::OrdMap<String, Arc<crate::store::StoredObject>>>,
    decisions: std::collections::HashMap<String, Decision>,
}

const RBAC_RESOURCES: [&str; 4] = [
    "roles",
    "rolebindings",
    "clusterroles",
    "clusterrolebindings",
];
const DECISION_CACHE_MAX: usize = 8192;

struct StoreObjects<'a> {
    store: &'a dyn Store,
}

fn key(resource: &str) -> String {
    format!("{resource}.{RBAC_GROUP}")
}

impl rbac::RbacObjects for StoreObjects<'_> {
    fn cluster_role(&self, name: &str) -> Option<serde_json::Value> {
        self.store
            .get(&ObjectKey::new(&key("clusterroles"), "", name))
            .map(|o| o.value.clone())
    }

    fn role(&self, namespace: &str, name: &str) -> Option<serde_json::Value> {
        self.store
            .get(&ObjectKey::new(&key("roles"), namespace, name))
            .map(|o| o.value.clone())
    }

    fn cluster_roles(&self) -> Vec<serde_json::Value> {
        self.store
            .list(&key("clusterroles"), None)
            .map(|s| s.items.values().map(|o| o.value.clone()).collect())
            .unwrap_or_default()
    }

    fn cluster_role_bindings(&self) -> Vec<serde_json::Value> {
        self.store
            .list(&key("clusterrolebindings"), None)
            .map(|s| s.items.values().map(|o| o.value.clone()).collect())
            .unwrap_or_default()
    }

    fn role_bindings(&self, namespace: &str) -> Vec<serde_json::Value> {
        let prefix = format!("{namespace}/");
        self.store
            .list(&key("rolebindings"), None)
            .map(|s| {
                s.items
                    .range(prefix.clone()..)
                    .take_while(|(k, _)| k.starts_with(&prefix))
                    .map(|(_, o)| o.value.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Authorizer {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            cache: std::sync::Mutex::new(DecisionCache::default()),
        }
    }

    fn rbac_maps(&self) -> Vec<imbl::OrdMap<String, Arc<crate::store::StoredObject>>> {
        RBAC_RESOURCES
            .iter()
            .map(|r| {
                self.store
                    .list(&key(r), None)
                    .map(|s| s.items)
                    .unwrap_or_default()
            })
            .collect()
    }

    pub fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
        if user.groups.iter().any(|g| g == MASTERS) {
            return Decision::Allow {
                reason: format!("group {MASTERS} is allowed everything"),
            };
        }
        let same = |a: &[imbl::OrdMap<_, _>], b: &[imbl::OrdMap<_, _>]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.ptr_eq(y))
        };
        let before = self.rbac_maps();
        let cache_key = format!("{}\0{}\0{:?}", user.name, user.groups.join(","), attrs);
        if let Ok(mut c) = self.cache.lock() {
            if !same(&c.maps, &before) {
                c.maps = before.clone();
                c.decisions.clear();
            } else if let Some(d) = c.decisions.get(&cache_key) {
                return d.clone();
            }
        }
        let decision = rbac::authorize(
            &StoreObjects {
                store: self.store.as_ref(),
            },
            user,
            attrs,
        );
        // Remember it only if no role or binding changed while it was computed.
        let after = self.rbac_maps();
        if let Ok(mut c) = self.cache.lock() {
            if same(&before, &after) && same(&c.maps, &after) {
                if c.decisions.len() >= DECISION_CACHE_MAX {
                    c.decisions.clear();
                }
                c.decisions.insert(cache_key, decision.clone());
            }
        }
        decision
    }

    pub fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<serde_json::Value>, Vec<serde_json::Value>, bool) {
        if user.groups.iter().any(|g| g == MASTERS) {
            return (
                vec![serde_json::json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
                vec![serde_json::json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
                false,
            );
        }
        rbac::rules_for(
            &StoreObjects {
                store: self.store.as_ref(),
            },
            user,
            namespace,
        )
    }
}

/// The resources authorization and reviews add to the registry's built-ins.
pub fn is_review(ri: &ResourceInfo) -> bool {
    matches!(
        (ri.group.as_str(), ri.resource.as_str()),
        ("authorization.k8s.io", "selfsubjectaccessreviews")
            | ("authorization.k8s.io", "subjectaccessreviews")
            | ("authorization.k8s.io", "selfsubjectrulesreviews")
            | ("authorization.k8s.io", "localsubjectaccessreviews")
            | ("authentication.k8s.io", "selfsubjectreviews")
    )
}
