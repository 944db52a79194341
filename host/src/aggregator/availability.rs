//! kube-aggregator's availability controllers, local and remote in one: every APIService's
//! `Available` condition, with kube's reasons and messages.
//!
//! - A local APIService (no `service`) is always `True`/`Local`.
//! - A remote one is checked in kube's order: its Service exists (`ServiceNotFound`), has the
//!   port (`ServicePortError`), has EndpointSlices (`EndpointsNotFound`) with a ready endpoint for
//!   the port's name (`MissingEndpoints`), and the server answers its discovery document
//!   (`GET /apis/GROUP/VERSION` as `system:kube-aggregator`, 2xx within 5 s, its certificate not
//!   verified, as kube's probe does): `FailedDiscoveryCheck`, else `True`/`Passed`. It is
//!   checked again every 30 s, when its Service or EndpointSlices change, and after a failure
//!   with kube's backoff (5 ms doubling to 30 s).
//!
//! Every host (not only the one running controllers) keeps its own copy of the available remote
//! servers' discovery ([`keep_discovery`]: `GET /apis` as aggregated discovery, else the group
//! version's `APIResourceList`) for its aggregated discovery; one that is not available is shown
//! there as `Stale`.
//!
//! This controller's informer also keeps the [`Aggregator`]'s index of APIServices, which the
//! request path reads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use bytes::Bytes;
use serde_json::{json, Value};

use super::proxy::{self, Unresolved};
use super::{Aggregator, ApiService, RemoteDiscovery, ServiceRef};
use crate::controllers::{Follower, Observed, Reconciled};
use crate::model::{meta, ResourceInfo};
use crate::service::{Service, Subresource, WriteOptions};

pub const IDENTITY: crate::controllers::Identity = crate::controllers::Identity {
    name: "apiservice-availability-controller",
    description: "Keeps every APIService's Available condition: local ones always, remote ones by checking their Service, endpoints and discovery.",
    workers: 2,
};

/// kube's availability probe makes this many attempts at once.
const PROBE_ATTEMPTS: usize = 5;
/// How often a remote APIService is checked again (kube's informer resync).
const RESYNC: Duration = Duration::from_secs(30);
/// The answer to a probe, a discovery document or an OpenAPI index is read up to this size
/// (real ones are a few KiB); a group version's OpenAPI document up to [`OPENAPI_LIMIT`], and a
/// group version's resources in aggregated discovery up to [`RESOURCES_LIMIT`] (only those are
/// parsed whole, into a tree tens of times the text's size).
const DISCOVERY_LIMIT: usize = 1 << 20;
const OPENAPI_LIMIT: usize = 8 << 20;
const RESOURCES_LIMIT: usize = 256 << 10;
/// Aggregated discovery's media type.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

pub struct Availability {
    base: crate::controllers::Base<String>,
    aggregator: Arc<Aggregator>,
    /// Consecutive failed checks per APIService (the backoff).
    failures: Mutex<HashMap<String, u32>>,
}

/// One check's outcome: the condition's status, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

impl Verdict {
    fn fail(reason: &'static str, message: String) -> Self {
        Self {
            status: "False",
            reason,
            message,
        }
    }
}

/// The verdict on a remote APIService whose server could not be resolved.
pub fn unresolved(svc: &ServiceRef, why: &Unresolved) -> Verdict {
    let (ns, name) = (&svc.namespace, &svc.name);
    match why {
        Unresolved::ServiceNotFound => Verdict::fail(
            "ServiceNotFound",
            format!("service/{name} in {ns:?} is not present"),
        ),
        Unresolved::PortError => Verdict::fail(
            "ServicePortError",
            format!("service/{name} in {ns:?} is not listening on port {}", svc.port),
        ),
        Unresolved::EndpointsNotFound => Verdict::fail(
            "EndpointsNotFound",
            format!("cannot find endpointslices for service/{name} in {ns:?}"),
        ),
        Unresolved::MissingEndpoints { port_name } => Verdict::fail(
            "MissingEndpoints",
            format!(
                "endpointslices for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
            ),
        ),
        Unresolved::Lookup(e) => Verdict::fail("FailedDiscoveryCheck", e.clone()),
    }
}

/// kube's `SetAPIServiceCondition` on `status`: the `Available` condition added, or its status
/// (and transition time) changed only when it differs, its reason and message always.
pub fn set_condition(status: &mut Value, verdict: &Verdict, now: &str) {
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()
        .map(|m| m.entry("conditions").or_insert_with(|| json!([])));
    let Some(conditions) = conditions else { return };
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
    {
        Some(c) => {
            if c.get("status").and_then(Value::as_str) != Some(verdict.status) {
                c["status"] = json!(verdict.status);
                c["lastTransitionTime"] = json!(now);
            }
            c["reason"] = json!(verdict.reason);
            c["message"] = json!(verdict.message);
        }
        None => list.push(json!({"type": "Available", "status": verdict.status,
            "lastTransitionTime": now, "reason": verdict.reason, "message": verdict.message})),
    }
}

/// kube's item backoff: 5 ms doubling per failure, at most 30 s.
fn backoff(failures: u32) -> Duration {
    let ms = 5u64.saturating_mul(1u64 << failures.min(20));
    Duration::from_millis(ms).min(RESYNC)
}

/// The path of a group version's discovery document (`/api/v1` for `v1.`).
fn discovery_path(api: &ApiService) -> String {
    if api.group.is_empty() {
        format!("/api/{}", api.version)
    } else {
        format!("/apis/{}/{}", api.group, api.version)
    }
}

/// How one GET to an extension server goes: the server verified with the APIService's TLS
/// settings (else not at all: kube's availability probe), and as `system:kube-aggregator` in
/// `system:masters` or in no group (kube's legacy discovery fallback).
struct Ask<'a> {
    api: &'a ApiService,
    svc: &'a ServiceRef,
    verify: bool,
    /// Who asks: `system:kube-aggregator` (discovery) or `system:aggregator` (OpenAPI, as kube's
    /// downloader, in no group).
    user: &'static str,
    masters: bool,
    /// The answer is read up to this size.
    limit: usize,
}

/// One GET to an extension server, the whole exchange within [`proxy::DISCOVERY_TIMEOUT`]:
/// its status, headers and body.
async fn get(
    client: &proxy::Client,
    addr: std::net::SocketAddr,
    ask: &Ask<'_>,
    path: &str,
    accept: &str,
) -> Result<(StatusCode, HeaderMap, Bytes), String> {
    let url = format!("https://{addr}{path}");
    let (ca_bundle, insecure) = if ask.verify {
        (ask.api.ca_bundle.as_str(), ask.api.insecure_skip_tls_verify)
    } else {
        ("", true)
    };
    let exchange = async {
        let mut sender = client
            .connect(addr, &proxy::server_name(ask.svc), ca_bundle, insecure)
            .await
            .map_err(|e| e.to_string())?;
        let mut req = hyper::Request::new(axum::body::Body::empty());
        *req.uri_mut() = path.parse().map_err(|e| format!("{e}"))?;
        let h = req.headers_mut();
        if let Ok(host) = HeaderValue::from_str(&addr.to_string()) {
            h.insert(header::HOST, host);
        }
        if let Ok(a) = HeaderValue::from_str(accept) {
            h.insert(header::ACCEPT, a);
        }
        let groups = if ask.masters {
            vec!["system:masters".to_owned()]
        } else {
            Vec::new()
        };
        proxy::set_user(
            h,
            &crate::auth::rbac::UserInfo {
                name: ask.user.into(),
                uid: String::new(),
                groups,
                extra: Default::default(),
            },
        )?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| crate::admission::hook_client::error_chain(&e))?;
        let (parts, body) = resp.into_parts();
        use http_body_util::BodyExt;
        let bytes = http_body_util::Limited::new(body, ask.limit)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok::<_, String>((parts.status, parts.headers, bytes))
    };
    match tokio::time::timeout(proxy::DISCOVERY_TIMEOUT, exchange).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(format!("Get {url:?}: {e}")),
        Err(_) => Err(format!(
            "Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

/// An `APIResourceList` as aggregated discovery's resources (subresources under their
/// resource).
pub fn from_resource_list(list: &Value, group: &str, version: &str) -> Value {
    let items: Vec<&Value> = list
        .get("resources")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let kind_of = |r: &Value| {
        json!({"group": r.get("group").and_then(Value::as_str).unwrap_or(group),
               "version": r.get("version").and_then(Value::as_str).unwrap_or(version),
               "kind": r.get("kind").cloned().unwrap_or(Value::Null)})
    };
    let mut out: Vec<Value> = Vec::new();
    for r in &items {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() || name.contains('/') {
            continue;
        }
        let mut e = json!({
            "resource": name,
            "responseKind": kind_of(r),
            "scope": if r.get("namespaced").and_then(Value::as_bool).unwrap_or(false) { "Namespaced" } else { "Cluster" },
            "singularResource": r.get("singularName").cloned().unwrap_or(json!("")),
            "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        for k in ["shortNames", "categories"] {
            if let Some(v) = r
                .get(k)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                e[k] = v.clone();
            }
        }
        let subs: Vec<Value> = items
            .iter()
            .filter_map(|s| {
                let n = s.get("name").and_then(Value::as_str)?;
                let sub = n.strip_prefix(name)?.strip_prefix('/')?;
                Some(json!({"subresource": sub, "responseKind": kind_of(s),
                            "verbs": s.get("verbs").cloned().unwrap_or(json!([]))}))
            })
            .collect();
        if !subs.is_empty() {
            e["subresources"] = json!(subs);
        }
        out.push(e);
    }
    json!(out)
}

impl Availability {
    pub fn new(service: Arc<Service>, aggregator: Arc<Aggregator>) -> Arc<Self> {
        Arc::new(Self {
            base: crate::controllers::Base::new(service),
            aggregator,
            failures: Mutex::default(),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    /// Check a remote APIService: its Service and endpoints, then kube's probe, five attempts
    /// at once (each at the next ready endpoint), one success enough.
    async fn check(&self, api: &ApiService, svc: &ServiceRef) -> Verdict {
        let store = &*self.base.service.store;
        let first = self.aggregator.turn();
        if let Err(why) = proxy::resolve(store, svc, first).await {
            return unresolved(svc, &why);
        }
        let path = discovery_path(api);
        let ask = Ask {
            api,
            svc,
            verify: false,
            user: KUBE_AGGREGATOR,
            masters: true,
            limit: DISCOVERY_LIMIT,
        };
        let attempts = (0..PROBE_ATTEMPTS).map(|i| {
            let (ask, path) = (&ask, path.as_str());
            async move {
                let addr = proxy::resolve(store, svc, first + i)
                    .await
                    .map_err(|why| unresolved(svc, &why).message)?;
                let url = format!("https://{addr}{path}");
                match get(&self.aggregator.client, addr, ask, path, "application/json").await {
                    Ok((code, _, _)) if code.is_success() => Ok(()),
                    Ok((code, _, _)) => Err(format!(
                        "failing or missing response from {url}: bad status from {url}: {}",
                        code.as_u16()
                    )),
                    Err(e) => Err(format!("failing or missing response from {url}: {e}")),
                }
            }
        });
        let results = futures::future::join_all(attempts).await;
        if results.iter().any(Result::is_ok) {
            return Verdict {
                status: "True",
                reason: "Passed",
                message: "all checks passed".into(),
            };
        }
        let last = results
            .into_iter()
            .filter_map(Result::err)
            .next_back()
            .unwrap_or_default();
        Verdict::fail("FailedDiscoveryCheck", last)
    }

    async fn reconcile(&self, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup(super::GROUP, "v1", super::RESOURCE) else {
            return Ok(None);
        };
        let current = match svc.get(&ri, "", name) {
            Ok(c) => c,
            Err(e) if e.code == 404 => {
                // The informer forgets it in the index (it alone writes the index).
                self.failures
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(name);
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let v = current.value();
        let Some(api) = ApiService::from_object(v) else {
            return Ok(None);
        };
        let verdict = match &api.service {
            None => Verdict {
                status: "True",
                reason: "Local",
                message: "Local APIServices are always available".into(),
            },
            Some(s) => self.check(&api, s).await,
        };
        let passed = verdict.status == "True";
        let mut status = v.get("status").cloned().unwrap_or_else(|| json!({}));
        set_condition(&mut status, &verdict, &meta::now_rfc3339());
        if v.get("status") != Some(&status) {
            let mut updated = v.clone();
            updated["status"] = status;
            match svc
                .update(
                    &ri,
                    "",
                    name,
                    updated,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
        if api.service.is_none() {
            return Ok(None);
        }
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        if passed {
            failures.remove(name);
            return Ok(Some(RESYNC));
        }
        let n = failures.entry(name.to_owned()).or_insert(0);
        let delay = backoff(*n);
        *n = n.saturating_add(1);
        Ok(Some(delay))
    }

    /// Queue every remote APIService served by Service `ns`/`name`.
    fn service_changed(&self, ns: &str, name: &str) {
        for s in self.aggregator.all() {
            if s.service
                .as_ref()
                .is_some_and(|r| r.namespace == ns && r.name == name)
            {
                self.base.queue.add(s.name.clone());
            }
        }
    }
}

/// Read a remote server's discovery of its group version: `/apis` as aggregated discovery if
/// it serves that, else the group version's `APIResourceList`. None when neither can be read.
async fn fetch_discovery(
    client: &proxy::Client,
    store: &dyn crate::store::Store,
    api: &ApiService,
    turn: usize,
) -> RemoteDiscovery {
    let svc = api.service.as_ref()?;
    let addr = proxy::resolve(store, svc, turn).await.ok()?;
    // As kube reads it: through the proxy's own TLS settings (the APIService's caBundle).
    let mut ask = Ask {
        api,
        svc,
        verify: true,
        user: KUBE_AGGREGATOR,
        masters: true,
        limit: DISCOVERY_LIMIT,
    };
    if let Ok((code, headers, body)) = get(client, addr, &ask, "/apis", AGGREGATED).await {
        let v2 = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.contains("g=apidiscovery.k8s.io") && t.contains("v=v2"));
        if code.is_success() && v2 {
            if let Some(r) = aggregated_resources(&body, &api.group, &api.version) {
                return Some(Arc::new(r));
            }
        }
    }
    ask.masters = false;
    ask.limit = RESOURCES_LIMIT;
    let (code, _, body) = get(client, addr, &ask, &discovery_path(api), "application/json")
        .await
        .ok()?;
    if !code.is_success() {
        return None;
    }
    serde_json::from_slice::<Value>(&body)
        .ok()
        .map(|l| Arc::new(from_resource_list(&l, &api.group, &api.version)))
}

const KUBE_AGGREGATOR: &str = "system:kube-aggregator";

/// The resources of `group`/`version` in an aggregated discovery document, read without
/// building a tree of the rest (only that version's resources are parsed whole, if small).
fn aggregated_resources(doc: &[u8], group: &str, version: &str) -> Option<Value> {
    use serde::Deserialize;
    use serde_json::value::RawValue;
    #[derive(Deserialize)]
    struct List<'a> {
        #[serde(borrow, default)]
        items: Vec<Group<'a>>,
    }
    #[derive(Deserialize)]
    struct Group<'a> {
        #[serde(default)]
        metadata: Meta,
        #[serde(borrow, default)]
        versions: Vec<Version<'a>>,
    }
    #[derive(Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        name: String,
    }
    #[derive(Deserialize)]
    struct Version<'a> {
        #[serde(default)]
        version: String,
        #[serde(borrow)]
        resources: Option<&'a RawValue>,
    }
    let list: List<'_> = serde_json::from_slice(doc).ok()?;
    let raw = list
        .items
        .iter()
        .find(|g| g.metadata.name == group)?
        .versions
        .iter()
        .find(|v| v.version == version)?
        .resources;
    match raw {
        None => Some(json!([])),
        Some(r) if r.get().len() <= RESOURCES_LIMIT => serde_json::from_str(r.get()).ok(),
        Some(_) => None,
    }
}

/// A remote server's OpenAPI v3 document of its group version: its `/openapi/v3` index read
/// for the group version's URL, then that document (kube's OpenAPI v3 aggregation).
async fn fetch_openapi(
    client: &proxy::Client,
    store: &dyn crate::store::Store,
    api: &ApiService,
    turn: usize,
) -> Option<super::RemoteOpenApi> {
    let svc = api.service.as_ref()?;
    let addr = proxy::resolve(store, svc, turn).await.ok()?;
    let mut ask = Ask {
        api,
        svc,
        verify: true,
        user: "system:aggregator",
        masters: false,
        limit: DISCOVERY_LIMIT,
    };
    let (code, _, body) = get(client, addr, &ask, "/openapi/v3", "application/json")
        .await
        .ok()?;
    if !code.is_success() {
        return None;
    }
    // The index read for its URLs only.
    #[derive(serde::Deserialize)]
    struct Index {
        #[serde(default)]
        paths: std::collections::HashMap<String, Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(rename = "serverRelativeURL", default)]
        url: String,
    }
    let index: Index = serde_json::from_slice(&body).ok()?;
    let key = discovery_path(api).trim_start_matches('/').to_owned();
    let url = index.paths.get(&key)?.url.clone();
    ask.limit = OPENAPI_LIMIT;
    // Only a path on the same server.
    if !url.starts_with("/openapi/v3/") {
        return None;
    }
    let (code, _, json) = get(client, addr, &ask, &url, "application/json")
        .await
        .ok()?;
    if !code.is_success() || serde_json::from_slice::<serde::de::IgnoredAny>(&json).is_err() {
        return None;
    }
    let hash = crate::api::openapi::fnv_hex(&json);
    Some(super::RemoteOpenApi { json, hash })
}

/// Read one remote server's discovery and OpenAPI document again.
async fn refresh(aggregator: &Aggregator, store: &dyn crate::store::Store, api: Arc<ApiService>) {
    let found = if api.available {
        fetch_discovery(&aggregator.client, store, &api, aggregator.turn()).await
    } else {
        None
    };
    // Kept only if still the same APIService (not deleted or changed meanwhile).
    aggregator.set_discovery(&api, found);
    // A document once read stays while its server is available (a failed read keeps it).
    if !api.available {
        aggregator.set_openapi(&api, None);
    } else if let Some(doc) =
        fetch_openapi(&aggregator.client, store, &api, aggregator.turn()).await
    {
        aggregator.set_openapi(&api, Some(doc));
    }
}

/// Every host's copy of the remote servers' discovery (for its `/apis`) and OpenAPI v3
/// documents (for its `/openapi/v3`): read again whenever an APIService changes and every minute
/// (kube's discovery manager's poll); an APIService that is not `Available` is `Stale`, and its
/// document is not listed.
pub async fn keep_discovery(
    aggregator: Arc<Aggregator>,
    store: Arc<dyn crate::store::Store>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    const EVERY: Duration = Duration::from_secs(60);
    loop {
        // Every server at once: a slow one holds up no other.
        let refreshes = aggregator
            .all()
            .into_iter()
            .filter(|api| api.service.is_some())
            .map(|api| refresh(&aggregator, &*store, api));
        futures::future::join_all(refreshes).await;
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {}
            () = aggregator.changed.notified() => {}
            _ = shutdown.changed() => return,
        }
    }
}

impl crate::controllers::Reconcile<String> for Availability {
    fn reconcile_key(&self, name: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(name)
    }
}

impl Follower for Availability {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        let head = obj.head();
        match (ri.group.as_str(), ri.resource.as_str()) {
            (super::GROUP, super::RESOURCE) => {
                let name = meta::name(head);
                if how == Observed::Deleted {
                    self.aggregator.observe(name, None);
                } else {
                    self.aggregator
                        .observe(name, ApiService::from_object(&obj.parse()));
                }
                self.aggregator.changed.notify_one();
                self.base.queue.add(name.to_owned());
            }
            ("", "services") => self.service_changed(meta::namespace(head), meta::name(head)),
            ("discovery.k8s.io", "endpointslices") => {
                if let Some(svc) = meta::Meta::label(head, "kubernetes.io/service-name") {
                    self.service_changed(meta::namespace(head), svc);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_moves_its_time_only_when_its_status_changes() {
        let mut status = json!({});
        let down = Verdict::fail(
            "ServiceNotFound",
            "service/m in \"kube-system\" is not present".into(),
        );
        set_condition(&mut status, &down, "t1");
        assert_eq!(
            status,
            json!({"conditions": [{"type": "Available", "status": "False", "lastTransitionTime": "t1",
                "reason": "ServiceNotFound", "message": "service/m in \"kube-system\" is not present"}]})
        );
        let other = Verdict::fail("MissingEndpoints", "x".into());
        set_condition(&mut status, &other, "t2");
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t1");
        assert_eq!(status["conditions"][0]["reason"], "MissingEndpoints");
        let up = Verdict {
            status: "True",
            reason: "Passed",
            message: "all checks passed".into(),
        };
        set_condition(&mut status, &up, "t3");
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t3");
        assert_eq!(status["conditions"][0]["status"], "True");
    }

    #[test]
    fn kube_messages_for_each_unresolved_reason() {
        let svc = ServiceRef {
            namespace: "kube-system".into(),
            name: "metrics-server".into(),
            port: 443,
        };
        assert_eq!(
            unresolved(&svc, &Unresolved::PortError).message,
            "service/metrics-server in \"kube-system\" is not listening on port 443"
        );
        assert_eq!(
            unresolved(&svc, &Unresolved::EndpointsNotFound).message,
            "cannot find endpointslices for service/metrics-server in \"kube-system\""
        );
        assert_eq!(
            unresolved(
                &svc,
                &Unresolved::MissingEndpoints {
                    port_name: "https".into()
                }
            )
            .message,
            "endpointslices for service/metrics-server in \"kube-system\" have no addresses with port name \"https\""
        );
    }

    #[test]
    fn backoff_doubles_from_5ms_to_30s() {
        assert_eq!(backoff(0), Duration::from_millis(5));
        assert_eq!(backoff(3), Duration::from_millis(40));
        assert_eq!(backoff(30), RESYNC);
    }

    #[test]
    fn a_resource_list_becomes_aggregated_resources() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "metrics.k8s.io/v1beta1",
            "resources": [
                {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
                {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get"]},
                {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"], "shortNames": ["nm"]}]});
        let r = from_resource_list(&list, "metrics.k8s.io", "v1beta1");
        assert_eq!(r.as_array().unwrap().len(), 2);
        assert_eq!(r[0]["resource"], "pods");
        assert_eq!(r[0]["scope"], "Namespaced");
        assert_eq!(
            r[0]["responseKind"],
            json!({"group": "metrics.k8s.io", "version": "v1beta1", "kind": "PodMetrics"})
        );
        assert_eq!(r[0]["subresources"][0]["subresource"], "status");
        assert_eq!(r[1]["scope"], "Cluster");
        assert_eq!(r[1]["shortNames"], json!(["nm"]));
    }
}
