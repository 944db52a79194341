//! The `kubernetes` Service in `default`, as kube-apiserver's controlplane reconciler keeps it:
//! the first address of the service IP range, port 443 `https` to the API server's port, and an
//! Endpoints and an EndpointSlice (both named `kubernetes`) with the host's listen address.
//! Reconciled at every start (the address or port may have changed); a listen address of
//! 0.0.0.0 or :: is advertised as the loopback address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde_json::{json, Value};

use crate::model::ApiError;
use crate::service::{Service, Subresource, WriteOptions};

pub const NAME: &str = "kubernetes";
pub const NAMESPACE: &str = "default";

/// The address the `kubernetes` endpoints advertise for a listen address.
pub fn advertised(addr: SocketAddr) -> IpAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    }
}

/// The three objects, for a server listening on `addr` with service IP `cluster_ip`.
pub fn objects(addr: SocketAddr, cluster_ip: Ipv4Addr) -> [Value; 3] {
    let ip = advertised(addr);
    let port = addr.port();
    let address_type = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    [
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
            "subsets": [{"addresses": [{"ip": ip.to_string()}],
                         "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
        }),
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {"kubernetes.io/service-name": NAME}},
            "addressType": address_type,
            "endpoints": [{"addresses": [ip.to_string()], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]
        }),
    ]
}

/// Create the three objects, or bring the parts this server owns (ports, addresses) back to
/// what they should be.
pub async fn reconcile(service: &Service, addr: SocketAddr) -> Result<(), ApiError> {
    let wanted = objects(addr, service.allocators.ips.first_ip());
    for (obj, owned) in wanted.into_iter().zip([
        &["/spec/ports"][..],
        &["/subsets"][..],
        &["/addressType", "/endpoints", "/ports"][..],
    ]) {
        let av = obj["apiVersion"].as_str().unwrap_or("");
        let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
        let kind = obj["kind"].as_str().unwrap_or("");
        let ri = service
            .registry
            .lookup_kind(group, version, kind)
            .ok_or_else(|| ApiError::internal(format!("{kind} is not served")))?;
        let opts = WriteOptions::default();
        let Ok(current) = service.get(&ri, NAMESPACE, NAME) else {
            match service.create(&ri, NAMESPACE, obj, &opts).await {
                Ok(_) => continue,
                Err(e) if e.code == 409 => continue,
                Err(e) => return Err(e),
            }
        };
        let mut next = current.value().clone();
        let mut changed = false;
        for pointer in owned {
            if let (Some(have), Some(want)) = (next.pointer_mut(pointer), obj.pointer(pointer)) {
                if have != want {
                    *have = want.clone();
                    changed = true;
                }
            }
        }
        if changed {
            service
                .update(&ri, NAMESPACE, NAME, next, Subresource::Main, &opts)
                .await?;
        }
    }
    Ok(())
}
