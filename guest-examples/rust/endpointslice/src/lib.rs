//! `endpointslice`: keeps the `discovery.k8s.io/v1` EndpointSlices and the core/v1 Endpoints of
//! every Service with a selector in step with its Pods, as kube-controller-manager's
//! endpointslice and endpoints controllers do (what `kubectl get endpointslices` and
//! `kubectl describe service` show).
//!
//! Watches: Services (the primary), Pods (mapped to their own key), the slices this controller
//! manages (mapped to their owning Service) and Endpoints (their key is their Service's). A key
//! can therefore name a Service, a Pod, or both; each reconcile syncs the Service of that name
//! if there is one, then every Service that selects the Pod of that name or whose slices list it
//! (so a Pod's changes, relabelling and deletion reach the Services it belongs to). An Endpoints
//! object whose Service is gone is deleted, as kube does; slices go with their Service through
//! their owner reference.
//!
//! The informer cache can lag behind this controller's own writes: the slices and Endpoints it
//! wrote are remembered with their resourceVersions, and a Service whose cache has not caught up
//! is looked at again a moment later instead of being synced from stale data (which would create
//! duplicate slices) — the job of kube's `EndpointSliceTracker`.

pub mod desired;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use turtles_controller::{
    api, export, json, meta, ApiError, Controller, Gvr, Object, ObjectKey, Outcome, Permission,
    Registration, Value, Watch,
};

use desired::{SliceContent, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY};

const SERVICES: Gvr<'static> = Gvr::core("services");
const PODS: Gvr<'static> = Gvr::core("pods");
const ENDPOINTS: Gvr<'static> = Gvr::core("endpoints");
const SLICES: Gvr<'static> = Gvr::new("discovery.k8s.io", "v1", "endpointslices");

/// How soon to look again at a Service whose cache lags behind this controller's writes.
const CACHE_LAG_RETRY_MS: u32 = 20;

/// kube's leader-election annotation: Endpoints carrying it are locks, not a Service's.
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

/// What this controller last wrote, per Service key (`ns/name`): object name -> the
/// resourceVersion written (`None`: deleted).
static WRITTEN: Mutex<BTreeMap<String, BTreeMap<String, Option<u64>>>> =
    Mutex::new(BTreeMap::new());

struct EndpointSliceController;

impl Controller for EndpointSliceController {
    fn register() -> Registration {
        Registration::new(Watch::of(SERVICES))
            .watch(Watch::of(PODS))
            .watch(
                Watch::of(SLICES)
                    .label_selector(&format!("{LABEL_MANAGED_BY}={MANAGED_BY}"))
                    .owned_by("", "Service"),
            )
            .watch(Watch::of(ENDPOINTS))
            .permission(Permission::group(
                "discovery.k8s.io",
                &["endpointslices"],
                &["create", "update", "delete"],
            ))
            .permission(Permission::core(
                &["endpoints"],
                &["create", "update", "delete"],
            ))
    }

    fn reconcile(key: ObjectKey, service: Option<Object>) -> Outcome {
        let mut outcome = Outcome::Done;
        let mut synced = BTreeSet::new();
        match &service {
            Some(svc) => {
                outcome = worst(outcome, sync(svc));
                synced.insert(key.name.clone());
            }
            None => outcome = worst(outcome, forget_service(&key)),
        }
        // The key may also name a Pod: every Service it belongs to, or belonged to, follows.
        for svc in services_of_pod(&key) {
            let name = meta::name(&svc).unwrap_or_default().to_owned();
            if synced.insert(name) {
                outcome = worst(outcome, sync(&svc));
            }
        }
        outcome
    }
}

export!(EndpointSliceController);

/// The more urgent of two outcomes: an error over a requeue over done.
fn worst(a: Outcome, b: Outcome) -> Outcome {
    let rank = |o: &Outcome| match o {
        Outcome::Done => 0,
        Outcome::RequeueAfter(_) => 1,
        Outcome::TerminalError(_) => 2,
        Outcome::TransientError(_) => 3,
    };
    match (&a, &b) {
        (Outcome::RequeueAfter(x), Outcome::RequeueAfter(y)) => Outcome::RequeueAfter(*x.min(y)),
        _ if rank(&b) > rank(&a) => b,
        _ => a,
    }
}

/// The Services in the key's namespace that select the Pod of that name, or whose slices still
/// list a Pod of that name.
fn services_of_pod(key: &ObjectKey) -> Vec<Value> {
    if key.namespace.is_empty() {
        return Vec::new();
    }
    let pod = turtles_controller::cache::get(PODS, &key.namespace, &key.name);
    let listed: BTreeSet<String> = turtles_controller::cache::list(SLICES, Some(&key.namespace))
        .iter()
        .filter(|s| {
            s["endpoints"].as_array().is_some_and(|eps| {
                eps.iter().any(|e| {
                    e["targetRef"]["kind"] == "Pod" && e["targetRef"]["name"] == key.name.as_str()
                })
            })
        })
        .filter_map(|s| meta::label(s, LABEL_SERVICE_NAME).map(str::to_owned))
        .collect();
    turtles_controller::cache::list(SERVICES, Some(&key.namespace))
        .into_iter()
        .filter(|svc| {
            let name = meta::name(svc).unwrap_or_default();
            listed.contains(name)
                || pod.as_ref().is_some_and(|p| {
                    desired::selector(svc).is_some_and(|sel| desired::selects(sel, p))
                })
        })
        .collect()
}

/// The Service of this key is gone: delete its Endpoints (kube's endpoints controller does; its
/// slices go through their owner reference) and what we remember of it.
fn forget_service(key: &ObjectKey) -> Outcome {
    let service_key = key.display();
    let Some(ep) = turtles_controller::cache::get(ENDPOINTS, &key.namespace, &key.name) else {
        lock().remove(&service_key);
        return Outcome::Done;
    };
    if meta::annotation(&ep, LEADER_ANNOTATION).is_some() {
        return Outcome::Done;
    }
    match api::delete(&ENDPOINTS.object_path(&key.namespace, &key.name)) {
        Ok(_) => {
            remember(&service_key, &key.name, None);
            Outcome::Done
        }
        Err(e) if e.is_not_found() => Outcome::Done,
        Err(e) => e.into(),
    }
}

fn lock() -> std::sync::MutexGuard<'static, BTreeMap<String, BTreeMap<String, Option<u64>>>> {
    WRITTEN.lock().unwrap_or_else(|e| e.into_inner())
}

fn remember(service_key: &str, object: &str, rv: Option<u64>) {
    lock()
        .entry(service_key.to_owned())
        .or_default()
        .insert(object.to_owned(), rv);
}

fn resource_version(obj: &Value) -> Option<u64> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|rv| rv.parse().ok())
}

/// Whether the cache has caught up with everything we wrote for this Service (slices and
/// Endpoints); forgets what it has caught up with.
fn cache_caught_up(service_key: &str, namespace: &str, slices: &[Value]) -> bool {
    let mut written = lock();
    let Some(objects) = written.get_mut(service_key) else {
        return true;
    };
    let cached_rv = |name: &str| -> Option<u64> {
        if let Some(s) = slices.iter().find(|s| meta::name(s) == Some(name)) {
            return resource_version(s);
        }
        turtles_controller::cache::get(ENDPOINTS, namespace, name)
            .as_ref()
            .and_then(resource_version)
    };
    objects.retain(|name, rv| match (*rv, cached_rv(name)) {
        (None, None) => false,                     // deleted and gone
        (Some(w), Some(c)) => c < w,               // cached older than what we wrote
        (Some(_), None) | (None, Some(_)) => true, // not seen yet / not gone yet
    });
    let caught_up = objects.is_empty();
    if caught_up {
        written.remove(service_key);
    }
    caught_up
}

fn sync(service: &Value) -> Outcome {
    let namespace = meta::namespace(service).unwrap_or_default().to_owned();
    let name = meta::name(service).unwrap_or_default().to_owned();
    let service_key = format!("{namespace}/{name}");
    let uid = service["metadata"]["uid"].as_str().unwrap_or_default();
    let existing: Vec<Value> = turtles_controller::cache::list(SLICES, Some(&namespace))
        .into_iter()
        .filter(|s| meta::label(s, LABEL_SERVICE_NAME) == Some(name.as_str()))
        .filter(|s| owned_by(s, uid))
        .collect();
    if !cache_caught_up(&service_key, &namespace, &existing) {
        return Outcome::RequeueAfter(CACHE_LAG_RETRY_MS);
    }
    if meta::is_deleting(service) {
        return Outcome::Done;
    }
    // kube leaves Services without a selector (their endpoints are someone else's) and
    // ExternalName Services alone.
    let external = service.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName");
    if external || desired::selector(service).is_none() {
        return Outcome::Done;
    }
    let pods = turtles_controller::cache::list(PODS, Some(&namespace));
    let mut want = desired::slices(service, &pods);
    if want.is_empty() {
        // kube keeps one placeholder slice, without ports or endpoints, for a Service that
        // selects no Pod it can list.
        want.push(SliceContent {
            ports: Vec::new(),
            endpoints: Vec::new(),
        });
    }
    let mut outcome = match sync_slices(service, &service_key, &namespace, existing, want) {
        Ok(()) => Outcome::Done,
        Err(e) => e.into(),
    };
    if let Err(e) = sync_endpoints(service, &service_key, &namespace, &name, &pods) {
        outcome = worst(outcome, e.into());
    }
    outcome
}

/// A list field's items: none when it is `[]`, `null` or left out. The server leaves out an
/// empty list (and kube answers `null` for a slice's empty `endpoints` and `ports`), so a slice
/// read back never holds the `[]` it was written with.
fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn owned_by(slice: &Value, uid: &str) -> bool {
    slice["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r["kind"] == "Service" && r["apiVersion"] == "v1" && r["uid"] == uid)
        })
}

/// Make the Service's slices hold `want`: existing slices with the same ports are updated in
/// place (only when their endpoints or labels differ), missing ones created with kube's
/// `generateName` (`SERVICE-`), the rest deleted.
fn sync_slices(
    service: &Value,
    service_key: &str,
    namespace: &str,
    existing: Vec<Value>,
    want: Vec<SliceContent>,
) -> Result<(), ApiError> {
    let labels = desired::slice_labels(service);
    let mut existing: Vec<Option<Value>> = existing.into_iter().map(Some).collect();
    // Fullest first, so that reused slices keep the most endpoints in place.
    existing.sort_by_key(|s| {
        std::cmp::Reverse(
            s.as_ref()
                .and_then(|s| s["endpoints"].as_array().map(Vec::len))
                .unwrap_or(0),
        )
    });
    for content in want {
        let reuse = existing.iter_mut().find(|s| {
            s.as_ref()
                .is_some_and(|s| items(&s["ports"]) == content.ports.as_slice())
        });
        match reuse.and_then(Option::take) {
            Some(mut slice) => {
                let same = items(&slice["endpoints"]) == content.endpoints.as_slice()
                    && slice["metadata"]["labels"] == labels;
                if same {
                    continue;
                }
                slice["endpoints"] = Value::Array(content.endpoints);
                slice["metadata"]["labels"] = labels.clone();
                let slice_name = meta::name(&slice).unwrap_or_default().to_owned();
                let written = api::update(&SLICES.object_path(namespace, &slice_name), &slice)?;
                remember(service_key, &slice_name, resource_version(&written));
            }
            None => {
                let slice = json!({
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "generateName": slice_prefix(meta::name(service).unwrap_or_default()),
                        "namespace": namespace,
                        "labels": labels.clone(),
                        "ownerReferences": [{
                            "apiVersion": "v1",
                            "kind": "Service",
                            "name": meta::name(service),
                            "uid": service["metadata"]["uid"],
                            "controller": true,
                            "blockOwnerDeletion": true,
                        }],
                    },
                    "addressType": "IPv4",
                    "endpoints": content.endpoints,
                    "ports": content.ports,
                });
                let written = api::create(&SLICES.path(namespace), &slice)?;
                if let Some(n) = meta::name(&written) {
                    remember(service_key, n, resource_version(&written));
                }
            }
        }
    }
    for slice in existing.into_iter().flatten() {
        let slice_name = meta::name(&slice).unwrap_or_default().to_owned();
        match api::delete(&SLICES.object_path(namespace, &slice_name)) {
            Ok(_) => remember(service_key, &slice_name, None),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// kube's `getEndpointSlicePrefix`: `SERVICE-` when that still makes a valid name.
fn slice_prefix(service: &str) -> String {
    if service.len() < 253 {
        format!("{service}-")
    } else {
        service.to_owned()
    }
}

/// Make the Service's core/v1 Endpoints (same name) hold its Pods' addresses.
fn sync_endpoints(
    service: &Value,
    service_key: &str,
    namespace: &str,
    name: &str,
    pods: &[Value],
) -> Result<(), ApiError> {
    let (subsets, over) = desired::subsets(service, pods);
    let labels = desired::endpoints_labels(service);
    let current = turtles_controller::cache::get(ENDPOINTS, namespace, name);
    let mut annotations = current
        .as_ref()
        .and_then(|c| c.pointer("/metadata/annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let had_over = annotations.contains_key(desired::ANNOTATION_OVER_CAPACITY);
    if over {
        annotations.insert(desired::ANNOTATION_OVER_CAPACITY.into(), json!("truncated"));
    } else {
        annotations.remove(desired::ANNOTATION_OVER_CAPACITY);
    }
    let written = match current {
        Some(mut ep) => {
            let current_subsets = items(&ep["subsets"]);
            let labels_now = ep.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
            if current_subsets == subsets.as_slice() && labels_now == labels && had_over == over {
                return Ok(());
            }
            ep["subsets"] = Value::Array(subsets);
            ep["metadata"]["labels"] = labels;
            ep["metadata"]["annotations"] = Value::Object(annotations);
            api::update(&ENDPOINTS.object_path(namespace, name), &ep)?
        }
        None => {
            let mut ep = json!({
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": { "name": name, "namespace": namespace, "labels": labels },
                "subsets": subsets,
            });
            if !annotations.is_empty() {
                ep["metadata"]["annotations"] = Value::Object(annotations);
            }
            // AlreadyExists (our cache lags a create) is retried like any error: by then the
            // cache has it and this becomes an update.
            api::create(&ENDPOINTS.path(namespace), &ep)?
        }
    };
    remember(service_key, name, resource_version(&written));
    Ok(())
}
