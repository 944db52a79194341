//! Service cluster IPs and node ports claimed in the store, so that hosts sharing one etcd never
//! hand out the same value (`crate::allocator` decides within one host, from memory).
//!
//! A cluster IP is claimed as kube ≥ 1.33 claims it: an `IPAddress` (`networking.k8s.io/v1`)
//! named by the address, with the Service as its `spec.parentRef`, created only if no object of
//! that name exists (etcd compares the key's create revision). A node port is claimed the same
//! way by an object in a resource no client sees (`NODE_PORTS`; kube keeps node ports in a
//! bitmap object that clients do not see either). A write whose claim finds the value taken marks
//! it held in memory and allocates again (`Service::allocate`); claims are removed with the
//! Service, when an update gives a value up, and when the write they were made for fails.
//! Claims are made with `--store sled` too, so `kubectl get ipaddresses` shows what kube shows.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use crate::allocator::{Item, Txn};
use crate::model::meta;
use crate::model::ObjectKey;
use crate::store::{Precondition, Store, StoreError, WriteOp};

/// Where `IPAddress` objects are stored.
pub const IP_ADDRESSES: &str = "ipaddresses.networking.k8s.io";
/// Node port claims: not a served resource (a CRD's resource cannot contain `~`).
pub const NODE_PORTS: &str = "~servicenodeports";
/// kube's label on the IPAddresses its allocator makes.
const MANAGED_BY: &str = "ipaddress.kubernetes.io/managed-by";
const IPALLOCATOR: &str = "ipallocator.k8s.io";

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// Another Service (of another host, or an IPAddress made by hand) holds the value.
    #[error("{0:?} is already claimed")]
    Taken(Item),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The store key of an item's claim.
pub fn key(item: Item) -> ObjectKey {
    match item {
        Item::Ip(ip) => ObjectKey::new(IP_ADDRESSES, "", &Ipv4Addr::from(ip).to_string()),
        Item::Port(p) => ObjectKey::new(NODE_PORTS, "", &p.to_string()),
    }
}

/// The claim object of `item` for Service `svc`.
fn claim_object(item: Item, svc: &Value) -> Value {
    let parent = json!({
        "group": "",
        "resource": "services",
        "namespace": meta::namespace(svc),
        "name": meta::name(svc),
    });
    let name = key(item).name;
    let metadata = json!({
        "name": name,
        "uid": uuid::Uuid::new_v4().to_string(),
        "creationTimestamp": meta::now_rfc3339(),
    });
    match item {
        Item::Ip(_) => {
            let mut metadata = metadata;
            metadata["labels"] = json!({
                "ipaddress.kubernetes.io/ip-family": "IPv4",
                MANAGED_BY: IPALLOCATOR,
            });
            json!({
                "apiVersion": "networking.k8s.io/v1",
                "kind": "IPAddress",
                "metadata": metadata,
                "spec": {"parentRef": parent},
            })
        }
        Item::Port(_) => json!({"metadata": metadata, "parentRef": parent}),
    }
}

/// The Service (`namespace`, `name`) a claim names as its parent.
fn parent_of(claim: &Value) -> (&str, &str) {
    let p = claim
        .pointer("/spec/parentRef")
        .or_else(|| claim.get("parentRef"));
    let s = |k: &str| {
        p.and_then(|p| p.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    (s("namespace"), s("name"))
}

/// Claim every value `txn` takes for `svc`; on failure the claims made here are removed again.
pub async fn claim(store: &dyn Store, txn: &Txn, svc: &Value) -> Result<(), ClaimError> {
    for (i, &item) in txn.taken().iter().enumerate() {
        let op = WriteOp::Put {
            key: key(item),
            value: claim_object(item, svc),
            precondition: Precondition::MustNotExist,
        };
        let err = match store.write(op).await {
            Ok(_) => continue,
            Err(StoreError::AlreadyExists) => ClaimError::Taken(item),
            Err(e) => ClaimError::Store(e),
        };
        release(store, &txn.taken()[..i], svc).await;
        return Err(err);
    }
    Ok(())
}

/// Remove the claims of `items` that name `svc` as their parent (a claim another Service holds
/// is left alone). Failures are logged: a claim left behind costs a value, never a duplicate.
pub async fn release(store: &dyn Store, items: &[Item], svc: &Value) {
    let want = (meta::namespace(svc), meta::name(svc));
    for &item in items {
        let key = key(item);
        let Some(current) = store.get(&key) else {
            continue;
        };
        if parent_of(&current.parse()) != want {
            continue;
        }
        let op = WriteOp::Delete {
            key: key.clone(),
            precondition: Precondition::ResourceVersion(current.rv),
        };
        match store.write(op).await {
            Ok(_) | Err(StoreError::NotFound | StoreError::Conflict { .. }) => {}
            Err(e) => tracing::warn!(claim = %key.name, error = %e, "a claim was not removed"),
        }
    }
}

/// Point the claims of `items` held by Service `from` (namespace, name) at `svc` (a create whose
/// generated name was replaced after the claims were made).
pub async fn adopt(store: &dyn Store, items: &[Item], from: (&str, &str), svc: &Value) {
    for &item in items {
        let key = key(item);
        let Some(current) = store.get(&key) else {
            continue;
        };
        let mut claim = current.parse().into_owned();
        if parent_of(&claim) != from {
            continue;
        }
        let parent = if claim.get("spec").is_some() {
            claim.pointer_mut("/spec/parentRef")
        } else {
            claim.get_mut("parentRef")
        };
        if let Some(p) = parent {
            p["name"] = Value::String(meta::name(svc).to_owned());
        }
        let op = WriteOp::Put {
            key: key.clone(),
            value: claim,
            precondition: Precondition::ResourceVersion(current.rv),
        };
        if let Err(e) = store.write(op).await {
            tracing::warn!(claim = %key.name, error = %e, "a claim was not moved to its Service's name");
        }
    }
}

/// The values claims in the store show held (at start: with the Services' own values, what
/// this host must never hand out).
pub fn claimed(store: &dyn Store) -> Vec<Item> {
    let mut out = Vec::new();
    for resource in [IP_ADDRESSES, NODE_PORTS] {
        if let Ok(snap) = store.list(resource, None) {
            out.extend(
                snap.items
                    .values()
                    .filter_map(|o| claimed_item(resource, meta::name(o.head()))),
            );
        }
    }
    out
}

/// How often the controllers' leader repairs the claims (kube's repair interval for Service IPs
/// and node ports).
pub const REPAIR_INTERVAL: std::time::Duration = std::time::Duration::from_secs(180);

/// [`repair`] every [`REPAIR_INTERVAL`] on the host that leads the controllers, until shutdown
/// (a claim orphaned by a host that died, or by a request cancelled between its claim and its
/// write, goes within minutes).
pub async fn repair_periodically(
    service: std::sync::Arc<crate::service::Service>,
    grace: std::time::Duration,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(REPAIR_INTERVAL) => {}
            _ = shutdown.changed() => return,
        }
        if service.leadership.is_leading() {
            repair(&*service.store, &service.allocators, grace).await;
        }
    }
}

/// kube's repair loops (at start, and on the leader every [`REPAIR_INTERVAL`]): every stored
/// Service's values are claimed (Services
/// stored before claims existed), and a claim of the allocator's whose Service is gone or holds
/// another value is removed once it is older than `grace` (a claim younger than that may belong
/// to a write still under way on another host).
pub async fn repair(
    store: &dyn Store,
    allocators: &crate::allocator::Allocators,
    grace: std::time::Duration,
) {
    let Ok(services) = store.list("services", None) else {
        return;
    };
    let mut held = std::collections::HashMap::new();
    for svc in services.items.values() {
        let svc = svc.parse();
        for item in allocators.items_of(&svc) {
            held.insert(
                item,
                (
                    meta::namespace(&*svc).to_owned(),
                    meta::name(&*svc).to_owned(),
                ),
            );
            if store.get(&key(item)).is_some() {
                continue;
            }
            let op = WriteOp::Put {
                key: key(item),
                value: claim_object(item, &svc),
                precondition: Precondition::MustNotExist,
            };
            match store.write(op).await {
                Ok(_) | Err(StoreError::AlreadyExists) => {}
                Err(e) => tracing::warn!(error = %e, "a Service's value was not claimed"),
            }
        }
    }
    let now = chrono::Utc::now();
    for resource in [IP_ADDRESSES, NODE_PORTS] {
        let Ok(snap) = store.list(resource, None) else {
            continue;
        };
        for o in snap.items.values() {
            let claim = o.parse();
            let managed = resource == NODE_PORTS
                || claim
                    .pointer("/metadata/labels")
                    .and_then(|l| l.get(MANAGED_BY))
                    == Some(&json!(IPALLOCATOR));
            let old = meta::meta_str(&*claim, "creationTimestamp")
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| {
                    now.signed_duration_since(t)
                        .to_std()
                        .is_ok_and(|age| age >= grace)
                });
            let (ns, name) = parent_of(&claim);
            let item = claimed_item(resource, meta::name(&*claim));
            let owned = item
                .and_then(|i| held.get(&i))
                .is_some_and(|(hns, hname)| hns == ns && hname == name);
            // The Services were listed before the claims: one created since then (on another
            // host) holds its claim now, however old the claim is.
            let holds_now = || {
                let svc = store.get(&ObjectKey::new("services", ns, name));
                svc.zip(item)
                    .is_some_and(|(s, i)| allocators.items_of(&s.parse()).contains(&i))
            };
            if managed && old && !owned && !holds_now() {
                let op = WriteOp::Delete {
                    key: ObjectKey::new(resource, "", meta::name(&*claim)),
                    precondition: Precondition::ResourceVersion(o.rv),
                };
                if let Err(e) = store.write(op).await {
                    tracing::debug!(error = %e, "an orphaned claim was not removed");
                }
            }
        }
    }
}

/// Keep this host's allocator in step with the claims every host makes and removes, until
/// shutdown: a value claimed elsewhere is held here, and one whose claim went (its Service was
/// deleted or gave it up through another host) is free here again.
pub async fn follow(
    service: std::sync::Arc<crate::service::Service>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    use crate::informer::{Change, Reflector, StoreSource, Watcher};
    let follow_one = |resource: &'static str| {
        let watcher = Watcher::new(
            StoreSource {
                store: service.store.clone(),
                resource: resource.to_owned(),
                namespace: None,
            },
            None,
        );
        let allocators = &service.allocators;
        crate::informer::run(watcher, Reflector::new(), move |change| {
            let (object, gone) = match &change {
                Change::Listed { object, .. } | Change::Applied { object, .. } => (object, false),
                Change::Deleted { object, .. } => (object, true),
            };
            let Some(item) = claimed_item(resource, meta::name(object.head())) else {
                return;
            };
            if gone {
                allocators.unclaimed(item);
            } else {
                allocators.taken_elsewhere(item);
            }
        })
    };
    tokio::select! {
        () = async { tokio::join!(follow_one(IP_ADDRESSES), follow_one(NODE_PORTS)); } => {}
        _ = shutdown.changed() => {}
    }
}

fn claimed_item(resource: &str, name: &str) -> Option<Item> {
    if resource == IP_ADDRESSES {
        name.parse::<Ipv4Addr>()
            .ok()
            .map(|ip| Item::Ip(u32::from(ip)))
    } else {
        name.parse::<u16>().ok().map(Item::Port)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::*;
    use crate::model::Registry;
    use crate::service::{Service, WriteOptions};

    /// Two hosts over one store: each its own allocator memory, as hosts on one etcd.
    async fn two_hosts(label: &str) -> (Service, Service, std::path::PathBuf) {
        let (store, dir) = crate::store::sled_store::temp_store(label);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        store
            .write(WriteOp::Put {
                key: ObjectKey::new("namespaces", "", "default"),
                value: ns,
                precondition: Precondition::MustNotExist,
            })
            .await
            .unwrap();
        let host = || {
            Service::with_service_ranges(
                store.clone(),
                Arc::new(Registry::with_builtins()),
                "10.0.0.0/29".parse().unwrap(),
                "30000-30005".parse().unwrap(),
            )
        };
        (host(), host(), dir)
    }

    fn service(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
    }

    async fn create(
        host: &Service,
        name: &str,
        spec: Value,
        dry_run: bool,
    ) -> Result<Value, crate::model::ApiError> {
        let ri = host.registry.lookup("", "v1", "services").unwrap();
        let opts = WriteOptions {
            dry_run,
            ..Default::default()
        };
        let w = host
            .create(&ri, "default", service(name, spec), &opts)
            .await?;
        Ok(w.object.parse().into_owned())
    }

    fn claims(store: &dyn Store, resource: &str) -> BTreeSet<String> {
        store
            .list(resource, None)
            .unwrap()
            .items
            .values()
            .map(|o| meta::name(o.head()).to_owned())
            .collect()
    }

    #[tokio::test]
    async fn two_hosts_on_one_store_never_hand_out_the_same_ip_or_node_port() {
        let (a, b, dir) = two_hosts("claims-two-hosts").await;
        let np = json!({"type": "NodePort", "ports": [{"port": 80}]});
        // 6 usable addresses, 6 node ports: each host believes all of them are free.
        let mut ips = BTreeSet::new();
        let mut ports = BTreeSet::new();
        for i in 0..6 {
            let host = if i % 2 == 0 { &a } else { &b };
            let svc = create(host, &format!("s{i}"), np.clone(), false)
                .await
                .unwrap();
            assert!(ips.insert(svc["spec"]["clusterIP"].as_str().unwrap().to_owned()));
            assert!(ports.insert(svc["spec"]["ports"][0]["nodePort"].as_i64().unwrap()));
        }
        let store = &*a.store;
        assert_eq!(claims(store, IP_ADDRESSES), ips);
        let port_names: BTreeSet<String> = ports.iter().map(i64::to_string).collect();
        assert_eq!(claims(store, NODE_PORTS), port_names);
        // The IPAddress is kube's.
        let ip = ips.iter().next().unwrap();
        let obj = store.get(&ObjectKey::new(IP_ADDRESSES, "", ip)).unwrap();
        let obj = obj.parse();
        assert_eq!(obj["kind"], "IPAddress");
        assert_eq!(obj["metadata"]["labels"][MANAGED_BY], IPALLOCATOR);
        assert_eq!(obj["spec"]["parentRef"]["resource"], "services");
        assert_eq!(obj["spec"]["parentRef"]["namespace"], "default");

        // Full on both, whatever each one's memory says.
        for host in [&a, &b] {
            let e = create(host, "full", json!({"ports": [{"port": 80}]}), false)
                .await
                .unwrap_err();
            assert_eq!(e.code, 500, "{}", e.message);
            assert!(e.message.contains("range is full"), "{}", e.message);
        }
        // A value held through the other host is refused when asked for by name.
        let taken = create(
            &a,
            "s0-again",
            json!({"clusterIP": ip, "ports": [{"port": 80}]}),
            false,
        );
        let e = taken.await.unwrap_err();
        assert_eq!(e.code, 422, "{}", e.message);
        assert!(
            e.message.contains("provided IP is already allocated"),
            "{}",
            e.message
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn claims_go_with_the_service_and_a_dry_run_makes_none() {
        let (a, b, dir) = two_hosts("claims-lifecycle").await;
        let store = a.store.clone();
        let ri = a.registry.lookup("", "v1", "services").unwrap();
        let np = json!({"type": "NodePort", "ports": [{"port": 80}]});
        create(&a, "dry", np.clone(), true).await.unwrap();
        assert!(claims(&*store, IP_ADDRESSES).is_empty());
        assert!(claims(&*store, NODE_PORTS).is_empty());

        let svc = create(&a, "web", np.clone(), false).await.unwrap();
        let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
        assert_eq!(claims(&*store, IP_ADDRESSES), BTreeSet::from([ip.clone()]));
        assert_eq!(claims(&*store, NODE_PORTS).len(), 1);

        // An update that gives the node port up removes its claim, keeps the IP's.
        let body =
            json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80, "nodePort": null}]}});
        a.patch(
            &ri,
            "default",
            "web",
            crate::patch::PatchType::Merge,
            body.to_string().as_bytes(),
            crate::service::Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(claims(&*store, IP_ADDRESSES), BTreeSet::from([ip.clone()]));
        assert!(claims(&*store, NODE_PORTS).is_empty());

        // Deleted through the other host: the claim goes, and the address is free for a host
        // that never held it.
        b.delete(&ri, "default", "web", &Default::default())
            .await
            .unwrap();
        assert!(claims(&*store, IP_ADDRESSES).is_empty());
        let again = create(
            &b,
            "again",
            json!({"clusterIP": ip, "ports": [{"port": 80}]}),
            false,
        );
        assert_eq!(again.await.unwrap()["spec"]["clusterIP"], ip.as_str());
        let _ = std::fs::remove_dir_all(dir);
    }

    async fn until(what: &str, mut f: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !f() {
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_host_follows_what_other_hosts_claim_and_release() {
        let (a, b, dir) = two_hosts("claims-follow").await;
        let b = Arc::new(b);
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let follower = tokio::spawn(follow(b.clone(), stopped));
        let np = json!({"type": "NodePort", "ports": [{"port": 80}]});
        let svc = create(&a, "web", np, false).await.unwrap();
        until("b holds what a claimed", || {
            b.allocators.allocated() == (1, 1)
        })
        .await;
        // Released through a: b frees it too (without following, b would hold it for good and,
        // with a small range, run out).
        let ri = a.registry.lookup("", "v1", "services").unwrap();
        a.delete(&ri, "default", "web", &Default::default())
            .await
            .unwrap();
        until("b frees what a released", || {
            b.allocators.allocated() == (0, 0)
        })
        .await;
        let ip = svc["spec"]["clusterIP"].as_str().unwrap();
        let again = create(
            &b,
            "again",
            json!({"clusterIP": ip, "ports": [{"port": 80}]}),
            false,
        );
        assert_eq!(again.await.unwrap()["spec"]["clusterIP"], ip);
        let _ = stop.send(true);
        follower.await.unwrap();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn repair_claims_what_services_hold_and_removes_old_orphans_only() {
        let (a, _b, dir) = two_hosts("claims-repair").await;
        let store = a.store.clone();
        let svc = create(&a, "web", json!({"ports": [{"port": 80}]}), false)
            .await
            .unwrap();
        let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
        // A Service stored before claims existed: its claim is gone.
        let k = key(Item::Ip(u32::from(ip.parse::<Ipv4Addr>().unwrap())));
        store
            .write(WriteOp::Delete {
                key: k.clone(),
                precondition: Precondition::Exists,
            })
            .await
            .unwrap();
        // An orphan: a claim whose Service was never written (its host died).
        let orphan = claim_object(Item::Port(30004), &service("ghost", json!({})));
        let okey = key(Item::Port(30004));
        store
            .write(WriteOp::Put {
                key: okey.clone(),
                value: orphan,
                precondition: Precondition::MustNotExist,
            })
            .await
            .unwrap();
        repair(&*store, &a.allocators, std::time::Duration::from_secs(60)).await;
        assert!(
            store.get(&k).is_some(),
            "the Service's address is claimed again"
        );
        assert!(
            store.get(&okey).is_some(),
            "a young orphan may be a create under way"
        );
        let claimed_at = store.get(&k).unwrap().rv;
        repair(&*store, &a.allocators, std::time::Duration::ZERO).await;
        assert_eq!(
            store.get(&k).map(|c| c.rv),
            Some(claimed_at),
            "a claim that is there is left as it is"
        );
        assert!(store.get(&okey).is_none(), "an old orphan goes");
        let _ = std::fs::remove_dir_all(dir);
    }
}
