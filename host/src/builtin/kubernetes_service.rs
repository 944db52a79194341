//! The `kubernetes` Service in `default`, as kube-apiserver's controlplane reconciler keeps it:
//! the first address of the service IP range, port 443 `https` to the API server's port, and an
//! Endpoints and an EndpointSlice (both named `kubernetes`) with the host's listen address.
//! Reconciled at every start (the address or port may have changed); a listen address of
//! 0.0.0.0 or :: is advertised as the loopback address.
//!
//! Hosts sharing one etcd ([`keep`]) do what kube-apiserver's lease endpoint reconciler does:
//! each keeps a lease of its own (a hidden object named by the host's identity, holding its
//! advertised address and port, renewed every [`INTERVAL`]; kube's `/masterleases/`), and writes
//! the endpoints from every live lease, so they name every host; a host that stops removes
//! itself. A lease is dead once a host has seen it unchanged for [`TTL`] by its own clock (kube
//! uses etcd's lease TTLs; the store has none, and clocks of two machines are not compared).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use serde_json::{json, Value};

use crate::model::meta::{self, Meta};
use crate::model::{ApiError, ObjectKey};
use crate::service::{Service, Subresource, WriteOptions};
use crate::store::{Precondition, WriteOp};

pub const NAME: &str = "kubernetes";
pub const NAMESPACE: &str = "default";
/// The hosts' leases (not a served resource: a CRD's resource cannot contain `~`).
pub const LEASES: &str = "~apiserverleases";
/// How often a host renews its lease and rewrites the endpoints (kube's `EndpointInterval`).
pub const INTERVAL: Duration = Duration::from_secs(10);
/// A lease seen unchanged for this long is dead (kube's master lease TTL).
pub const TTL: Duration = Duration::from_secs(15);

/// The address the `kubernetes` endpoints advertise for a listen address.
pub fn advertised(addr: SocketAddr) -> IpAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    }
}

/// The serving hosts: their advertised addresses, grouped by port (hosts of one cluster normally
/// share a port, as kube-apiservers do).
pub type Hosts = BTreeMap<u16, Vec<IpAddr>>;

/// One host.
pub fn only(addr: SocketAddr) -> Hosts {
    BTreeMap::from([(addr.port(), vec![advertised(addr)])])
}

fn https(port: u16) -> Value {
    json!([{"name": "https", "port": port, "protocol": "TCP"}])
}

/// The EndpointSlices for `hosts`: `kubernetes` for the first port, `kubernetes-PORT` for each
/// other one (an EndpointSlice has one list of ports); with no host at all, an empty `kubernetes`
/// on `port`.
fn slices(port: u16, hosts: &Hosts) -> Vec<Value> {
    let none = Hosts::from([(port, Vec::new())]);
    let hosts = if hosts.is_empty() { &none } else { hosts };
    hosts
        .iter()
        .enumerate()
        .map(|(i, (port, ips))| {
            let name = if i == 0 {
                NAME.to_owned()
            } else {
                format!("{NAME}-{port}")
            };
            let address_type = if ips.first().is_none_or(IpAddr::is_ipv4) {
                "IPv4"
            } else {
                "IPv6"
            };
            json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": name, "namespace": NAMESPACE,
                             "labels": {"kubernetes.io/service-name": NAME}},
                "addressType": address_type,
                "endpoints": ips.iter()
                    .map(|ip| json!({"addresses": [ip.to_string()], "conditions": {"ready": true}}))
                    .collect::<Vec<_>>(),
                "ports": https(*port),
            })
        })
        .collect()
}

/// The Service (its target port `port`), the Endpoints and the EndpointSlices, for `hosts`,
/// with service IP `cluster_ip`.
pub fn objects(port: u16, hosts: &Hosts, cluster_ip: Ipv4Addr) -> Vec<Value> {
    let mut out = vec![
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": cluster_ip.to_string(),
                     "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}
        }),
        json!({
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": hosts.iter()
                .map(|(port, ips)| json!({
                    "addresses": ips.iter().map(|ip| json!({"ip": ip.to_string()})).collect::<Vec<_>>(),
                    "ports": https(*port),
                }))
                .collect::<Vec<_>>(),
        }),
    ];
    out.extend(slices(port, hosts));
    out
}

/// The fields of each object this host owns (brought back to what they should be).
fn owned(obj: &Value) -> &'static [&'static str] {
    match obj["kind"].as_str() {
        Some("Service") => &["/spec/ports"],
        Some("Endpoints") => &["/subsets"],
        _ => &["/addressType", "/endpoints", "/ports"],
    }
}

/// Create the objects, or bring the parts this server owns (ports, addresses) back to what they
/// should be; EndpointSlices of ports no host serves any more go. With `service` false the
/// Service is only created if missing (hosts on different ports would otherwise take its target
/// port from each other at every renewal).
pub async fn reconcile(
    service: &Service,
    port: u16,
    hosts: &Hosts,
    with_service: bool,
) -> Result<(), ApiError> {
    let wanted = objects(port, hosts, service.allocators.ips.first_ip());
    let mut slice_names = Vec::new();
    for obj in wanted {
        let av = obj["apiVersion"].as_str().unwrap_or("");
        let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
        let kind = obj["kind"].as_str().unwrap_or("").to_owned();
        let ri = service
            .registry
            .lookup_kind(group, version, &kind)
            .ok_or_else(|| ApiError::internal(format!("{kind} is not served")))?;
        let name = meta::name(&obj).to_owned();
        if kind == "EndpointSlice" {
            slice_names.push(name.clone());
        }
        let opts = WriteOptions::default();
        let Ok(current) = service.get(&ri, NAMESPACE, &name) else {
            match service.create(&ri, NAMESPACE, obj, &opts).await {
                Ok(_) => continue,
                Err(e) if e.code == 409 => continue,
                // Another host is creating the Service at the same moment: its claim on the
                // first address came first.
                Err(e) if e.code == 422 && kind == "Service" => continue,
                Err(e) => return Err(e),
            }
        };
        if kind == "Service" && !with_service {
            continue;
        }
        let mut next = current.parse().into_owned();
        let mut changed = false;
        for pointer in owned(&obj) {
            if let (Some(have), Some(want)) = (next.pointer_mut(pointer), obj.pointer(pointer)) {
                if have != want {
                    *have = want.clone();
                    changed = true;
                }
            }
        }
        if changed {
            service
                .update(&ri, NAMESPACE, &name, next, Subresource::Main, &opts)
                .await?;
        }
    }
    // `kubernetes-PORT` slices of the `kubernetes` Service for a port no host serves any more.
    if let Some(ri) = service
        .registry
        .lookup_kind("discovery.k8s.io", "v1", "EndpointSlice")
    {
        let prefix = format!("{NAME}-");
        let stale: Vec<String> = service
            .store
            .list(&ri.group_resource(), None)
            .map(|snap| {
                snap.items
                    .values()
                    .map(|o| o.head())
                    .filter(|h| {
                        meta::namespace(*h) == NAMESPACE
                            && h.label("kubernetes.io/service-name") == Some(NAME)
                    })
                    .map(|h| meta::name(h).to_owned())
                    .filter(|n| {
                        n.strip_prefix(&prefix)
                            .is_some_and(|p| p.parse::<u16>().is_ok())
                            && !slice_names.contains(n)
                    })
                    .collect()
            })
            .unwrap_or_default();
        for n in stale {
            let _ = service
                .delete(&ri, NAMESPACE, &n, &Default::default())
                .await;
        }
    }
    Ok(())
}

/// The default ServiceCIDR, `kubernetes`, with the service IP range, as kube-apiserver's
/// `kubernetes-service-cidr-controller` keeps it: created if missing, and its `Ready` condition
/// set to True (kube's message, no reason) while its CIDRs are this host's range and it has no
/// `Ready` condition yet. (turtles allocates cluster IPs from the range itself, not from
/// ServiceCIDR objects: `docs/api.md`.)
pub async fn ensure_service_cidr(service: &Service) -> Result<(), ApiError> {
    let Some(ri) = service
        .registry
        .lookup_kind("networking.k8s.io", "v1", "ServiceCIDR")
    else {
        return Ok(());
    };
    let range = service.allocators.ips.to_string();
    let opts = WriteOptions::default();
    let current = match service.get(&ri, "", NAME) {
        Ok(c) => c.parse().into_owned(),
        Err(e) if e.code == 404 => {
            let obj = json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
                             "metadata": {"name": NAME}, "spec": {"cidrs": [range]}});
            match service.create(&ri, "", obj, &opts).await {
                Ok(w) => w.object.parse().into_owned(),
                // Another host on the same etcd made it first.
                Err(e) if e.code == 409 => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let same = current.pointer("/spec/cidrs") == Some(&json!([range]));
    let has_ready = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready"));
    if !same || has_ready {
        return Ok(());
    }
    let mut next = current;
    next["status"] = json!({"conditions": [{
        "type": "Ready", "status": "True", "reason": "",
        "message": "Kubernetes default Service CIDR is ready",
        "lastTransitionTime": meta::now_rfc3339(),
    }]});
    match service
        .update(&ri, "", NAME, next, Subresource::Status, &opts)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// One host's lease as this host has seen it: its revision and when (by this host's clock)
/// that revision was first seen. A lease is live while its revision keeps changing: liveness is
/// judged by this host's own clock, never by comparing clocks of two machines.
#[derive(Debug, Default)]
pub struct Seen {
    leases: std::collections::HashMap<String, (u64, std::time::Instant)>,
}

/// What [`renew`] does with this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// The host starts: its lease, the endpoints, and the Service's target port.
    Start,
    /// The lease and the endpoints.
    Renew,
    /// The host stops: its lease goes and the endpoints lose it.
    Leave,
}

/// Renew (or remove) this host's lease (`identity`), drop leases not renewed for [`TTL`] (as
/// this host has seen them), and write the endpoints from the live ones.
pub async fn renew(
    service: &Service,
    identity: &str,
    addr: SocketAddr,
    how: Renewal,
    seen: &mut Seen,
) -> Result<(), ApiError> {
    let alive = how != Renewal::Leave;
    let ip = advertised(addr);
    let key = ObjectKey::new(LEASES, "", identity);
    let store = &*service.store;
    let current = store.get(&key);
    let op = match (alive, &current) {
        (true, _) => Some(WriteOp::Put {
            key: key.clone(),
            value: json!({"metadata": {"name": identity}, "ip": ip.to_string(),
                          "port": addr.port()}),
            precondition: current.as_ref().map_or(Precondition::MustNotExist, |c| {
                Precondition::ResourceVersion(c.rv)
            }),
        }),
        (false, Some(c)) => Some(WriteOp::Delete {
            key: key.clone(),
            precondition: Precondition::ResourceVersion(c.rv),
        }),
        (false, None) => None,
    };
    if let Some(op) = op {
        if let Err(e) = store.write(op).await {
            tracing::debug!(error = %e, "the host's lease was not written");
        }
    }
    let now = std::time::Instant::now();
    let mut hosts = Hosts::new();
    if alive {
        hosts.entry(addr.port()).or_default().push(ip);
    }
    let leases = store
        .list(LEASES, None)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let mut listed = std::collections::HashSet::new();
    for lease in leases.items.values() {
        let name = meta::name(lease.head()).to_owned();
        let first_seen = match seen.leases.get(&name) {
            Some((rv, at)) if *rv == lease.rv => *at,
            _ => now,
        };
        seen.leases.insert(name.clone(), (lease.rv, first_seen));
        listed.insert(name.clone());
        if name == identity {
            continue;
        }
        let l = lease.parse();
        let host = l["ip"].as_str().and_then(|i| i.parse::<IpAddr>().ok());
        let port = l["port"].as_u64().and_then(|p| u16::try_from(p).ok());
        match (host, port) {
            (Some(h), Some(p)) if now.duration_since(first_seen) <= TTL => {
                let ips = hosts.entry(p).or_default();
                if !ips.contains(&h) {
                    ips.push(h);
                }
            }
            _ => {
                let op = WriteOp::Delete {
                    key: ObjectKey::new(LEASES, "", &name),
                    precondition: Precondition::ResourceVersion(lease.rv),
                };
                let _ = store.write(op).await;
            }
        }
    }
    seen.leases.retain(|n, _| listed.contains(n));
    for ips in hosts.values_mut() {
        ips.sort();
    }
    reconcile(service, addr.port(), &hosts, how == Renewal::Start).await
}

/// Hosts on etcd: renew this host's lease and the endpoints every [`INTERVAL`] until shutdown,
/// then remove this host from them. The first renewal is the caller's ([`renew`] at start).
pub async fn keep(
    service: std::sync::Arc<Service>,
    identity: String,
    addr: SocketAddr,
    mut seen: Seen,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(INTERVAL) => {}
            _ = shutdown.changed() => break,
        }
        if let Err(e) = renew(&service, &identity, addr, Renewal::Renew, &mut seen).await {
            tracing::warn!(error = %e.message, "the kubernetes endpoints were not renewed");
        }
    }
    if let Err(e) = renew(&service, &identity, addr, Renewal::Leave, &mut seen).await {
        tracing::warn!(error = %e.message, "this host was not removed from the kubernetes endpoints");
    }
}
