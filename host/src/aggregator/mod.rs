//! The aggregation layer, as kube-aggregator runs it in front of kube-apiserver:
//!
//! - every group/version this host serves has a *local* `APIService` (`v1.apps`, `v1.` for the
//!   core group, `v1.stable.example.com` for a CRD's), kept by [`registration`];
//! - an `APIService` with a `service` names an *extension API server*: requests under
//!   `/apis/GROUP/VERSION` are authorized here, then [`proxy`]'d to it with the user in
//!   `X-Remote-*` headers, over TLS with the front-proxy client certificate;
//! - [`availability`] keeps every APIService's `Available` condition (local ones always, remote
//!   ones by checking the Service, its EndpointSlices and the server's discovery document) and
//!   fetches the remote servers' discovery for `/apis`;
//! - [`authentication`] publishes `kube-system/extension-apiserver-authentication`, which
//!   extension servers read to trust the proxy's headers.
//!
//! [`Aggregator`] is what the request path reads: an index of the stored APIServices (kept by
//! the availability controller's informer) and the remote servers' discovery.

pub mod authentication;
pub mod availability;
pub mod proxy;
pub mod registration;

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

/// The APIServices' group, version and resource.
pub const GROUP: &str = "apiregistration.k8s.io";
pub const RESOURCE: &str = "apiservices";

/// Why the aggregation layer could not do something.
#[derive(Debug, thiserror::Error)]
pub enum AggregatorError {
    /// The TLS configuration for an APIService cannot be built (its `caBundle`).
    #[error("{0}")]
    Tls(String),
    /// The extension server could not be reached or answered badly (Go's error text).
    #[error("{0}")]
    Call(String),
    /// The front-proxy certificate could not be made or read.
    #[error("the front-proxy certificate: {0}")]
    FrontProxy(#[from] crate::auth::tls::TlsError),
}

/// Where a remote APIService's server is: `spec.service`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: u16,
}

/// One stored APIService, as the request path needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiService {
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// None: served by this host.
    pub service: Option<ServiceRef>,
    /// `spec.caBundle` (base64 of PEM, as stored).
    pub ca_bundle: String,
    pub insecure_skip_tls_verify: bool,
    /// Its `Available` condition is `True`.
    pub available: bool,
}

impl ApiService {
    /// Read a stored APIService (None when it lacks a group version).
    pub fn from_object(v: &Value) -> Option<Self> {
        let spec = v.get("spec")?;
        let s = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let version = s("version");
        if version.is_empty() {
            return None;
        }
        let service = spec
            .get("service")
            .filter(|s| s.is_object())
            .map(|svc| ServiceRef {
                namespace: svc
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                name: svc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                port: svc
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            });
        let available = v
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Available")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            });
        Some(Self {
            name: crate::model::meta::name(v).to_owned(),
            group: s("group"),
            version,
            group_priority: spec
                .get("groupPriorityMinimum")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            version_priority: spec
                .get("versionPriority")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            service,
            ca_bundle: s("caBundle"),
            insecure_skip_tls_verify: spec
                .get("insecureSkipTLSVerify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            available,
        })
    }
}

/// What a remote server's discovery said of its group version: the `resources` of its
/// `APIVersionDiscovery`, or None while it could not be fetched (shown as `Stale`).
pub type RemoteDiscovery = Option<Arc<Value>>;

/// A remote server's OpenAPI v3 document of its group version, as served here.
#[derive(Debug)]
pub struct RemoteOpenApi {
    /// The document's JSON.
    pub json: bytes::Bytes,
    /// What `/openapi/v3` addresses it with (`?hash=`).
    pub hash: String,
}

/// The aggregation layer's shared state.
pub struct Aggregator {
    /// Every stored APIService by name.
    services: RwLock<HashMap<String, Arc<ApiService>>>,
    /// Remote discovery by APIService name.
    discovery: RwLock<HashMap<String, RemoteDiscovery>>,
    /// Remote OpenAPI v3 documents by APIService name.
    openapi: RwLock<HashMap<String, Arc<RemoteOpenApi>>>,
    /// The client that calls extension servers.
    pub client: proxy::Client,
    /// Turns among a Service's ready endpoints.
    turn: std::sync::atomic::AtomicUsize,
    /// Notified when an APIService changes (the discovery of remote ones is read again).
    pub changed: tokio::sync::Notify,
    /// Watches open through the proxy, per user (each holds a connection to a server).
    pub watches: Arc<crate::api::pod_streams::Follows>,
}

impl std::fmt::Debug for Aggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregator").finish_non_exhaustive()
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Aggregator {
    pub fn new(front_proxy: &crate::auth::tls::FrontProxy) -> Result<Arc<Self>, AggregatorError> {
        Ok(Arc::new(Self {
            services: RwLock::default(),
            discovery: RwLock::default(),
            openapi: RwLock::default(),
            client: proxy::Client::new(front_proxy)?,
            turn: std::sync::atomic::AtomicUsize::new(0),
            changed: tokio::sync::Notify::new(),
            watches: Arc::new(crate::api::pod_streams::Follows::named(
                "watches of extension API servers",
            )),
        }))
    }

    /// Record a stored APIService (or its removal: `None`). Its remote discovery is forgotten
    /// when it goes or names another server or group version.
    pub fn observe(&self, name: &str, service: Option<ApiService>) {
        let mut g = write(&self.services);
        let before = match service {
            Some(s) => g.insert(name.to_owned(), Arc::new(s)),
            None => g.remove(name),
        };
        let now = g.get(name);
        let same_target = |a: &ApiService, b: &ApiService| {
            a.service == b.service && a.group == b.group && a.version == b.version
        };
        if !matches!((&before, now), (Some(b), Some(n)) if same_target(b, n)) {
            write(&self.discovery).remove(name);
            write(&self.openapi).remove(name);
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<ApiService>> {
        read(&self.services).get(name).cloned()
    }

    /// Every stored APIService.
    pub fn all(&self) -> Vec<Arc<ApiService>> {
        read(&self.services).values().cloned().collect()
    }

    /// The remote APIService for `group`/`version`, if one names a service.
    pub fn remote(&self, group: &str, version: &str) -> Option<Arc<ApiService>> {
        read(&self.services)
            .values()
            .find(|s| s.service.is_some() && s.group == group && s.version == version)
            .cloned()
    }

    /// Which of several ready endpoints the next request goes to.
    pub fn turn(&self) -> usize {
        self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The remote APIService a request path is for (`/apis/GROUP/VERSION[/...]` of a group
    /// version this host does not serve itself), and whether it is the version's discovery
    /// document.
    pub fn route(
        &self,
        registry: &crate::model::Registry,
        path: &str,
    ) -> Option<(Arc<ApiService>, bool)> {
        let mut segs = path.trim_matches('/').split('/');
        if segs.next() != Some("apis") {
            return None;
        }
        let (group, version) = (segs.next()?, segs.next()?);
        // Most hosts have no remote APIService: that is looked at first.
        let api = self.remote(group, version)?;
        if registry.has_group_version(group, version) {
            return None;
        }
        Some((api, segs.next().is_none_or(str::is_empty)))
    }

    /// Record what `api`'s server said of its group version, if `api` is still the stored
    /// APIService of that name (not deleted or changed while its server was asked).
    pub fn set_discovery(&self, api: &ApiService, resources: RemoteDiscovery) {
        let g = read(&self.services);
        if g.get(&api.name).map(|s| &**s) == Some(api) {
            write(&self.discovery).insert(api.name.clone(), resources);
        }
    }

    /// Record `api`'s server's OpenAPI v3 document (None: none could be read), if `api` is still
    /// the stored APIService of that name.
    pub fn set_openapi(&self, api: &ApiService, doc: Option<RemoteOpenApi>) {
        let g = read(&self.services);
        if g.get(&api.name).map(|s| &**s) == Some(api) {
            let mut o = write(&self.openapi);
            match doc {
                Some(d) => {
                    o.insert(api.name.clone(), Arc::new(d));
                }
                None => {
                    o.remove(&api.name);
                }
            }
        }
    }

    /// The OpenAPI v3 documents of remote group versions: (group, version, document).
    pub fn openapi_documents(&self) -> Vec<(String, String, Arc<RemoteOpenApi>)> {
        let services = read(&self.services);
        read(&self.openapi)
            .iter()
            .filter_map(|(name, doc)| {
                let s = services.get(name)?;
                Some((s.group.clone(), s.version.clone(), doc.clone()))
            })
            .collect()
    }

    /// The OpenAPI v3 document of a remote group version.
    pub fn openapi_document(&self, group: &str, version: &str) -> Option<Arc<RemoteOpenApi>> {
        let api = self.remote(group, version)?;
        read(&self.openapi).get(&api.name).cloned()
    }

    pub fn discovery(&self, name: &str) -> RemoteDiscovery {
        read(&self.discovery).get(name).cloned().flatten()
    }
}

/// A group version's place in discovery: kube's `groupPriorityMinimum` and `versionPriority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    pub group: i64,
    pub version: i64,
}

/// CRDs' group versions (kube's crdregistration controller): after every built-in group.
pub const CRD_PRIORITY: Priority = Priority {
    group: 1000,
    version: 100,
};

/// kube-apiserver's priorities of its own group versions (`apiVersionPriorities`: the generic
/// control plane's table merged with kube-apiserver's). A group version not in it gets no
/// APIService in kube; turtles' own `turtles.dev` is given a CRD's place.
pub fn builtin_priority(group: &str, version: &str) -> Option<Priority> {
    let (g, v) = match (group, version) {
        ("", "v1") => (18000, 1),
        ("apps", "v1") => (17800, 15),
        ("events.k8s.io", "v1") => (17750, 15),
        ("events.k8s.io", "v1beta1") => (17750, 5),
        ("authentication.k8s.io", "v1") => (17700, 15),
        ("authentication.k8s.io", "v1beta1") => (17700, 9),
        ("authentication.k8s.io", "v1alpha1") => (17700, 1),
        ("authorization.k8s.io", "v1") => (17600, 15),
        ("autoscaling", "v1") => (17500, 15),
        ("autoscaling", "v2") => (17500, 30),
        ("autoscaling", "v2beta1") => (17500, 9),
        ("autoscaling", "v2beta2") => (17500, 1),
        ("batch", "v1") => (17400, 15),
        ("batch", "v1beta1") => (17400, 9),
        ("certificates.k8s.io", "v1") => (17300, 15),
        ("certificates.k8s.io", "v1beta1") => (17300, 9),
        ("certificates.k8s.io", "v1alpha1") => (17300, 1),
        ("networking.k8s.io", "v1") => (17200, 15),
        ("networking.k8s.io", "v1beta1") => (17200, 9),
        ("policy", "v1") => (17100, 15),
        ("policy", "v1beta1") => (17100, 9),
        ("rbac.authorization.k8s.io", "v1") => (17000, 15),
        ("storage.k8s.io", "v1") => (16800, 15),
        ("storage.k8s.io", "v1beta1") => (16800, 9),
        ("storage.k8s.io", "v1alpha1") => (16800, 1),
        ("apiextensions.k8s.io", "v1") => (16700, 15),
        ("admissionregistration.k8s.io", "v1") => (16700, 15),
        ("admissionregistration.k8s.io", "v1beta1") => (16700, 12),
        ("admissionregistration.k8s.io", "v1alpha1") => (16700, 9),
        ("scheduling.k8s.io", "v1") => (16600, 15),
        ("coordination.k8s.io", "v1") => (16500, 15),
        ("coordination.k8s.io", "v1beta1") => (16500, 13),
        ("coordination.k8s.io", "v1alpha2") => (16500, 12),
        ("node.k8s.io", "v1") => (16300, 15),
        ("node.k8s.io", "v1beta1") => (16300, 9),
        ("node.k8s.io", "v1alpha1") => (16300, 1),
        ("discovery.k8s.io", "v1") => (16200, 15),
        ("discovery.k8s.io", "v1beta1") => (16200, 12),
        // kube 1.34 adds resource.k8s.io/v1 above v1beta2's 15; its exact number was not
        // readable here, and turtles serves no other version of the group to order it against.
        ("resource.k8s.io", "v1") => (16200, 21),
        ("resource.k8s.io", "v1beta2") => (16200, 15),
        ("resource.k8s.io", "v1beta1") => (16200, 9),
        ("resource.k8s.io", "v1alpha3") => (16200, 1),
        ("flowcontrol.apiserver.k8s.io", "v1") => (16100, 21),
        ("flowcontrol.apiserver.k8s.io", "v1beta3") => (16100, 18),
        ("internal.apiserver.k8s.io", "v1alpha1") => (16000, 9),
        ("storagemigration.k8s.io", "v1alpha1") => (15800, 9),
        ("turtles.dev", _) => return Some(CRD_PRIORITY),
        _ => return None,
    };
    Some(Priority {
        group: g,
        version: v,
    })
}

/// An APIService's name: `VERSION.GROUP` (`v1.` for the core group).
pub fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// kube's `CompareKubeAwareVersionStrings`: GA before beta before alpha, higher numbers first
/// within each, and versions that are not kube-like last, alphabetically. `Greater` means `a`
/// comes first.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    // (major, stage: 2 GA, 1 beta, 0 alpha, minor)
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, n) = match tail.strip_prefix("beta") {
            Some(n) => (1, n),
            None => (0, tail.strip_prefix("alpha")?),
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((major, stage, n.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => {
            if sa != sb {
                // GA beats beta beats alpha whatever the majors.
                sa.cmp(&sb)
            } else if ma != mb {
                ma.cmp(&mb)
            } else {
                na.cmp(&nb)
            }
        }
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        // Both not kube-like: alphabetical, the smaller first.
        (None, None) => b.cmp(a),
    }
}

/// One group version in discovery, with its priority and APIService name (for kube's order).
#[derive(Debug, Clone)]
pub struct Listed {
    pub group: String,
    pub version: String,
    pub priority: Priority,
    pub name: String,
    /// Served by an extension server.
    pub remote: bool,
}

/// kube's discovery order of groups and their versions: groups by highest
/// `groupPriorityMinimum`, versions by highest `versionPriority` then kube-aware version order,
/// `apiregistration.k8s.io` first. Ties between groups: in `/apis` (the aggregator's
/// `SortedByGroupAndVersion`) by the APIService's name, in aggregated discovery
/// (`aggregated`: its discovery manager's order, the aggregator's own group at priority 20001)
/// by the group's name. `local` are the group versions this host serves (named groups); a
/// stored APIService's priorities are used where there is one.
pub fn ordered(
    local: &[(String, String)],
    aggregator: Option<&Aggregator>,
    aggregated: bool,
) -> Vec<Vec<Listed>> {
    let stored: HashMap<String, Arc<ApiService>> = aggregator
        .map(|a| read(&a.services).clone())
        .unwrap_or_default();
    let mut all: Vec<Listed> = Vec::new();
    for (group, version) in local {
        let name = name_of(group, version);
        let priority = match stored.get(&name).filter(|s| s.service.is_none()) {
            Some(s) => Priority {
                group: s.group_priority,
                version: s.version_priority,
            },
            None => builtin_priority(group, version).unwrap_or(CRD_PRIORITY),
        };
        all.push(Listed {
            group: group.clone(),
            version: version.clone(),
            priority,
            name,
            remote: false,
        });
    }
    for s in stored.values() {
        if s.service.is_none()
            || s.group.is_empty()
            || all
                .iter()
                .any(|l| l.group == s.group && l.version == s.version)
        {
            continue;
        }
        all.push(Listed {
            group: s.group.clone(),
            version: s.version.clone(),
            priority: Priority {
                group: s.group_priority,
                version: s.version_priority,
            },
            name: s.name.clone(),
            remote: true,
        });
    }
    // Groups: a group's place is its first APIService's in kube's sort of all of them.
    all.sort_by(|a, b| {
        let tie = if aggregated {
            a.group.cmp(&b.group)
        } else {
            a.name.cmp(&b.name)
        };
        b.priority.group.cmp(&a.priority.group).then(tie)
    });
    let mut groups: Vec<Vec<Listed>> = Vec::new();
    for l in all {
        match groups.iter_mut().find(|g| g[0].group == l.group) {
            Some(g) => g.push(l),
            None => groups.push(vec![l]),
        }
    }
    for g in &mut groups {
        g.sort_by(|a, b| {
            b.priority
                .version
                .cmp(&a.priority.version)
                .then_with(|| compare_versions(&b.version, &a.version))
        });
    }
    // kube's aggregator lists its own group first.
    if let Some(i) = groups.iter().position(|g| g[0].group == GROUP) {
        let own = groups.remove(i);
        groups.insert(0, own);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_aware_versions_order_ga_then_beta_then_alpha() {
        let mut v = vec![
            "v1alpha1",
            "foo",
            "v11alpha2",
            "v1",
            "v10beta3",
            "v2",
            "v1beta2",
            "v12alpha1",
            "v11beta2",
            "v3beta1",
            "bar",
            "v1beta1",
        ];
        v.sort_by(|a, b| compare_versions(b, a));
        // kube's own example order (CompareKubeAwareVersionStrings' doc).
        assert_eq!(
            v,
            vec![
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v1beta2",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo"
            ]
        );
    }

    fn local(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(g, v)| (g.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn discovery_follows_kube_priorities_with_its_own_group_first() {
        let groups = ordered(
            &local(&[
                ("admissionregistration.k8s.io", "v1"),
                ("apiregistration.k8s.io", "v1"),
                ("apps", "v1"),
                ("autoscaling", "v1"),
                ("autoscaling", "v2"),
                ("stable.example.com", "v1beta1"),
                ("stable.example.com", "v1"),
                ("events.k8s.io", "v1"),
            ]),
            None,
            false,
        );
        let names: Vec<String> = groups
            .iter()
            .map(|g| {
                let vs: Vec<&str> = g.iter().map(|l| l.version.as_str()).collect();
                format!("{}:{}", g[0].group, vs.join(","))
            })
            .collect();
        assert_eq!(
            names,
            vec![
                "apiregistration.k8s.io:v1",
                "apps:v1",
                "events.k8s.io:v1",
                "autoscaling:v2,v1",
                "admissionregistration.k8s.io:v1",
                "stable.example.com:v1,v1beta1",
            ]
        );
    }
}
