//! Who is asking and may they: bearer-token authentication, RBAC
//! authorization over the stored roles and bindings, and the TLS material the server presents.

pub mod csr;
pub mod der;
pub mod escalation;
pub mod rbac;
pub mod serviceaccount;
pub mod signer;
pub mod tls;
pub mod tokens;

/// Write a secret file (a key, a token) as a whole or not at all: to a temporary file readable
/// only by its owner, synced, renamed over `path`, and the directory synced, so that a crash or
/// a power loss leaves either the old file or the new one, never an empty or partial one (a
/// partial service account key would stop the host, and replacing it invalidates every token).
pub(crate) fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

use std::sync::Arc;

use crate::model::{ObjectKey, ResourceInfo};
use crate::store::Store;

pub use rbac::{Attributes, Decision, UserInfo};
pub use tokens::Authenticator;

/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";

/// An extra key as a header carries it (client-go's escaping: `%XX`), unescaped as kube's
/// `unescapeExtraKey` does: a key that does not decode is kept as it is.
pub fn unescape_extra_key(key: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let digits = bytes
                .get(i + 1)
                .copied()
                .and_then(hex)
                .zip(bytes.get(i + 2).copied().and_then(hex));
            let Some((hi, lo)) = digits else {
                return key.to_owned();
            };
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_owned())
}
/// kube's `user.CredentialIDKey`: the extra naming the credential a user authenticated with.
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";
/// Members are allowed everything, as on a cluster.
pub const MASTERS: &str = "system:masters";

pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The authenticated identity a request runs as (after impersonation).
#[derive(Debug, Clone)]
pub struct Principal(pub UserInfo);

/// RBAC over the store's current roles and bindings: a change takes effect with the next request.
pub struct Authorizer {
    store: Arc<dyn Store>,
    cache: std::sync::Mutex<RulesCache>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authorizer")
    }
}

/// The effective rules of each (user, groups, namespace), kept for as long as no role or
/// binding changes. The four RBAC maps are persistent: any write makes a new map, so comparing
/// them by pointer detects every change. RBAC is a union of rules, so a request is allowed
/// exactly when one of the user's effective rules in its namespace allows it.
#[derive(Default)]
struct RulesCache {
    maps: Vec<imbl::OrdMap<String, Arc<crate::store::StoredObject>>>,
    rules: std::collections::HashMap<String, Arc<Vec<rbac::PolicyRule>>>,
}

const RBAC_RESOURCES: [&str; 4] = [
    "roles",
    "rolebindings",
    "clusterroles",
    "clusterrolebindings",
];
const RULES_CACHE_MAX: usize = 4096;

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
            .map(|o| o.value().clone())
    }

    // Roles and RoleBindings, which namespace admins write, are parsed and not kept with the
    // stored version: a kept tree is memory the watch history's byte budget does not count
    // (its versions stay there as events' `prev`). The effective rules are cached instead.
    fn role(&self, namespace: &str, name: &str) -> Option<serde_json::Value> {
        self.store
            .get(&ObjectKey::new(&key("roles"), namespace, name))
            .map(|o| o.parse().into_owned())
    }

    fn cluster_roles(&self) -> Vec<serde_json::Value> {
        self.store
            .list(&key("clusterroles"), None)
            .map(|s| s.items.values().map(|o| o.value().clone()).collect())
            .unwrap_or_default()
    }

    fn cluster_role_bindings(&self) -> Vec<serde_json::Value> {
        self.store
            .list(&key("clusterrolebindings"), None)
            .map(|s| s.items.values().map(|o| o.value().clone()).collect())
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
                    .map(|(_, o)| o.parse().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Authorizer {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            cache: std::sync::Mutex::new(RulesCache::default()),
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
        // kube's `privilegedGroupAuthorizer` (`authorizerfactory/builtin.go`): allowed, with
        // no reason.
        if user.groups.iter().any(|g| g == MASTERS) {
            return Decision::Allow {
                reason: String::new(),
            };
        }
        let rules = self.effective_rules(user, &attrs.namespace);
        if rules.iter().any(|r| rbac::rule_allows(attrs, r)) {
            Decision::Allow {
                reason: format!(
                    "RBAC: allowed by the rules bound to User \"{}\" and its groups",
                    user.name
                ),
            }
        } else {
            Decision::Deny {
                reason: String::new(),
            }
        }
    }

    /// Every rule that applies to `user` in `namespace` (cluster-wide plus the namespace's).
    fn effective_rules(&self, user: &UserInfo, namespace: &str) -> Arc<Vec<rbac::PolicyRule>> {
        let same =
            |a: &[imbl::OrdMap<String, Arc<crate::store::StoredObject>>],
             b: &[imbl::OrdMap<String, Arc<crate::store::StoredObject>>]| {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.ptr_eq(y))
            };
        let before = self.rbac_maps();
        let cache_key = format!("{}\0{}\0{namespace}", user.name, user.groups.join("\0"));
        if let Ok(mut c) = self.cache.lock() {
            if !same(&c.maps, &before) {
                c.maps = before.clone();
                c.rules.clear();
            } else if let Some(r) = c.rules.get(&cache_key) {
                return r.clone();
            }
        }
        let (resource_rules, non_resource_rules, _) = rbac::rules_for(
            &StoreObjects {
                store: self.store.as_ref(),
            },
            user,
            namespace,
        );
        let rules: Arc<Vec<rbac::PolicyRule>> = Arc::new(
            resource_rules
                .iter()
                .chain(&non_resource_rules)
                .map(rbac::PolicyRule::from_json)
                .collect(),
        );
        // Remember them only if no role or binding changed while they were computed, and only
        // for a name a namespace can have (at most 63 bytes): a longer one, which a CEL
        // `authorizer` check can take from an object, could otherwise make each cache key
        // as big as an object.
        let after = self.rbac_maps();
        if let Ok(mut c) = self.cache.lock() {
            if namespace.len() <= 63 && same(&before, &after) && same(&c.maps, &after) {
                if c.rules.len() >= RULES_CACHE_MAX {
                    c.rules.clear();
                }
                c.rules.insert(cache_key, rules.clone());
            }
        }
        rules
    }

    /// The rules a SelfSubjectRulesReview lists for `user` in `namespace`: RBAC's, for every
    /// user. kube's `system:masters` authorizer allows everything but is no rule resolver (its
    /// `newForConfig` lists only the node authorizer and RBAC as resolvers), so a member's
    /// review is what RBAC grants it: `cluster-admin`'s `*` rules through the bootstrap
    /// binding to `system:masters`, and those of `system:authenticated`'s roles (basic-user,
    /// discovery, public-info-viewer) besides.
    pub fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<serde_json::Value>, Vec<serde_json::Value>, bool) {
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

#[cfg(test)]
mod tests {
    use super::{Attributes, Authorizer, Decision, UserInfo, MASTERS};

    /// `system:masters` is allowed everything with no reason, as kube's privileged-group
    /// authorizer answers; anyone else without rules is denied.
    #[test]
    fn masters_are_allowed_without_a_reason() {
        let (store, dir) = crate::store::sled_store::temp_store("authz-masters");
        let authz = Authorizer::new(store);
        let user = |groups: &[&str]| UserInfo {
            name: "admin".to_owned(),
            uid: String::new(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            extra: Default::default(),
        };
        let attrs = Attributes::resource("delete", "", "pods", "ns", "p");
        match authz.authorize(&user(&[MASTERS, "system:authenticated"]), &attrs) {
            Decision::Allow { reason } => assert_eq!(reason, ""),
            other => panic!("{other:?}"),
        }
        assert!(!authz
            .authorize(&user(&["system:authenticated"]), &attrs)
            .is_allowed());
        drop(authz);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A member of `system:masters` is reviewed by RBAC like anyone (kube's privileged-group
    /// authorizer resolves no rules): `cluster-admin`'s `*` rules from the bootstrap binding,
    /// and the rules every authenticated user has. Without the binding, only the latter.
    #[tokio::test]
    async fn the_rules_of_masters_are_rbacs() {
        use serde_json::json;
        let (store, dir) = crate::store::sled_store::temp_store("authz-masters-rules");
        let registry = std::sync::Arc::new(crate::model::Registry::with_builtins());
        let service = crate::service::Service::new(store.clone(), registry);
        service.bootstrap().await.unwrap();
        assert_eq!(
            service
                .reconcile_bootstrap_policy(super::rbac::bootstrap_objects())
                .await,
            0
        );
        let authz = Authorizer::new(store);
        let admin = UserInfo {
            name: "admin".to_owned(),
            uid: String::new(),
            groups: vec![MASTERS.to_owned(), "system:authenticated".to_owned()],
            extra: Default::default(),
        };
        let (resources, non_resources, incomplete) = authz.rules_for(&admin, "default");
        assert!(!incomplete);
        let everything = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
        assert!(resources.contains(&everything), "{resources:?}");
        assert!(
            resources.contains(
                &json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})
            ),
            "{resources:?}"
        );
        assert!(
            non_resources.contains(&json!({"verbs": ["*"], "nonResourceURLs": ["*"]})),
            "{non_resources:?}"
        );
        // system:public-info-viewer's and system:discovery's.
        for url in ["/healthz", "/apis/*"] {
            assert!(
                non_resources.iter().any(|r| r["nonResourceURLs"]
                    .as_array()
                    .is_some_and(|u| u.contains(&json!(url)))),
                "{url}: {non_resources:?}"
            );
        }
        // The binding gone, the group alone grants no rule (it is still allowed everything).
        let bindings = service
            .registry
            .lookup("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
            .unwrap();
        service
            .delete(
                &bindings,
                "",
                "cluster-admin",
                &crate::service::DeleteOptions::default(),
            )
            .await
            .unwrap();
        let (resources, non_resources, _) = authz.rules_for(&admin, "default");
        assert!(!resources.contains(&everything), "{resources:?}");
        assert!(!non_resources.contains(&json!({"verbs": ["*"], "nonResourceURLs": ["*"]})));
        assert!(!resources.is_empty());
        assert!(authz
            .authorize(
                &admin,
                &Attributes::resource("delete", "", "pods", "ns", "p")
            )
            .is_allowed());
        drop(authz);
        drop(service);
        let _ = std::fs::remove_dir_all(dir);
    }
}
