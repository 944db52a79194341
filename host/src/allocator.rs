//! Service cluster IPs and node ports, allocated in the write path as kube-apiserver's
//! `ipallocator`, `portallocator` and `registry/core/service/storage/alloc.go` do: a requested
//! value is honoured if free and in range (else kube's 422), an empty one gets a free value
//! (random, in the upper band first, leaving the lower band to static requests), headless and
//! ExternalName Services get no IP. The allocated sets live in memory, are derived from the
//! stored Services at start, and every change is a transaction: reserved under the lock before
//! the store write (so two concurrent creates can never both get a value), committed (values the
//! update gave up released) or reverted (values it took released) once the write is decided.
//! Single-stack IPv4.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};

use rand::Rng;
use serde_json::{json, Map, Value};

use crate::model::meta;
use crate::model::{ApiError, Cause};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RangeError {
    #[error("invalid service cluster IP range {0:?}: expected an IPv4 CIDR such as 10.96.0.0/12")]
    Cidr(String),
    #[error("invalid service node port range {0:?}: expected FIRST-LAST such as 30000-32767")]
    Ports(String),
}

/// `--service-cluster-ip-range`: an IPv4 CIDR; its network and broadcast addresses are never
/// handed out (kube's allocator skips them too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    network: u32,
    prefix: u8,
}

impl IpRange {
    fn first(&self) -> u32 {
        self.network + 1
    }
    fn size(&self) -> u64 {
        (1u64 << (32 - u32::from(self.prefix))).saturating_sub(2)
    }
    fn contains(&self, ip: u32) -> bool {
        ip >= self.first() && u64::from(ip - self.first()) < self.size()
    }
    /// The first usable address: the `kubernetes` Service's.
    pub fn first_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.first())
    }
}

impl FromStr for IpRange {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, RangeError> {
        let err = || RangeError::Cidr(s.to_owned());
        let (ip, prefix) = s.split_once('/').ok_or_else(err)?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| err())?;
        let prefix: u8 = prefix.parse().map_err(|_| err())?;
        // At least two usable addresses (a /30), as kube requires of the range.
        if !(1..=30).contains(&prefix) {
            return Err(err());
        }
        let mask = u32::MAX << (32 - u32::from(prefix));
        Ok(Self {
            network: u32::from(ip) & mask,
            prefix,
        })
    }
}

impl fmt::Display for IpRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

/// `--service-node-port-range`: `FIRST-LAST`, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    first: u16,
    last: u16,
}

impl PortRange {
    fn size(&self) -> u64 {
        u64::from(self.last - self.first) + 1
    }
    fn contains(&self, port: i64) -> bool {
        port >= i64::from(self.first) && port <= i64::from(self.last)
    }
}

impl FromStr for PortRange {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, RangeError> {
        let err = || RangeError::Ports(s.to_owned());
        let (a, b) = s.split_once('-').ok_or_else(err)?;
        let first: u16 = a.trim().parse().map_err(|_| err())?;
        let last: u16 = b.trim().parse().map_err(|_| err())?;
        if first == 0 || last < first {
            return Err(err());
        }
        Ok(Self { first, last })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

impl Default for IpRange {
    fn default() -> Self {
        Self {
            network: u32::from(Ipv4Addr::new(10, 96, 0, 0)),
            prefix: 12,
        }
    }
}

impl Default for PortRange {
    fn default() -> Self {
        Self {
            first: 30000,
            last: 32767,
        }
    }
}

/// One allocated value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Item {
    Ip(u32),
    Port(u16),
}

/// The holder recorded for a value a claim in the store shows another host (or an IPAddress
/// made by hand) holds: never released by this host's Services.
const ELSEWHERE: &str = "";

/// What one write reserved (to release if the write fails) and what it gives up (to release
/// once it succeeded), for the Service with `uid`.
#[derive(Debug, Default)]
#[must_use]
pub struct Txn {
    uid: String,
    allocated: Vec<Item>,
    release: Vec<Item>,
    /// The values in `allocated` were claimed in the store (`crate::claims`): undo the claims
    /// if the write does not happen.
    pub(crate) claimed: bool,
}

impl Txn {
    /// The values this write takes that the Service did not hold before.
    pub fn taken(&self) -> &[Item] {
        &self.allocated
    }

    /// The values the Service gives up if the write happens.
    pub fn given_up(&self) -> &[Item] {
        &self.release
    }
}

/// One allocation under the lock: the state, the transaction, the Service's name.
struct Op<'a> {
    st: &'a mut State,
    txn: &'a mut Txn,
    name: &'a str,
}

#[derive(Debug, Default)]
struct State {
    /// Allocated value → the uid of the Service holding it.
    held: HashMap<Item, String>,
    /// Values reserved by writes not yet settled (committed or reverted).
    pending: std::collections::HashSet<Item>,
}

#[derive(Debug, Default)]
pub struct Allocators {
    pub ips: IpRange,
    pub ports: PortRange,
    state: Mutex<State>,
}

/// kube's `calculateRangeOffset`: the lower band, `min(max(lo, size/step), hi)` values, is where
/// dynamic allocation goes last.
fn band(size: u64, lo: u64, step: u64, hi: u64) -> u64 {
    (size / step).clamp(lo, hi).min(size)
}

/// A free index in `0..size`: random in the upper band `offset..size` first, then in the lower.
fn next_free(size: u64, offset: u64, taken: impl Fn(u64) -> bool) -> Option<u64> {
    let mut rng = rand::rng();
    for (lo, hi) in [(offset, size), (0, offset)] {
        if lo >= hi {
            continue;
        }
        let n = hi - lo;
        let start = rng.random_range(0..n);
        if let Some(i) = (0..n).map(|k| lo + (start + k) % n).find(|&i| !taken(i)) {
            return Some(i);
        }
    }
    None
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn cluster_ips(spec: &Value) -> Vec<String> {
    spec.get("clusterIPs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn needs_cluster_ip(spec: &Value) -> bool {
    str_at(spec, "type") != "ExternalName"
}

fn needs_node_port(spec: &Value) -> bool {
    matches!(str_at(spec, "type"), "NodePort" | "LoadBalancer")
}

/// kube's `NeedsHealthCheck`: a LoadBalancer that keeps traffic on the node it arrives at gets a
/// node port for the load balancer's health checks.
fn needs_health_check(spec: &Value) -> bool {
    str_at(spec, "type") == "LoadBalancer" && str_at(spec, "externalTrafficPolicy") == "Local"
}

fn health_check_port(spec: &Value) -> i64 {
    spec.get("healthCheckNodePort")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn ports(spec: &Value) -> &[Value] {
    spec.get("ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn node_port(port: &Value) -> i64 {
    port.get("nodePort").and_then(Value::as_i64).unwrap_or(0)
}

fn node_ports(spec: &Value) -> BTreeSet<i64> {
    ports(spec)
        .iter()
        .map(node_port)
        .filter(|&p| p != 0)
        .collect()
}

/// A `[]string` as kube 1.34's field errors print it (`json.Marshal`: `["10.96.0.5"]`).
fn go_strings(v: &[String]) -> String {
    crate::builtin::validation::field::json_value(&json!(v))
}

fn invalid(name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid("", "Service", name, causes)
}

/// 422 with one `FieldValueInvalid` cause.
fn invalid_field(name: &str, field: &str, message: String) -> ApiError {
    invalid(name, vec![Cause::new("FieldValueInvalid", field, message)])
}

/// kube's `dropTypeDependentFields` and `patchAllocatedValues` (its update strategy): values a
/// new type no longer needs are dropped if the client left them as they were; values the client
/// left out that were allocated before are kept.
fn prepare_update(spec: &mut Map<String, Value>, old: &Value) {
    let new_view = Value::Object(spec.clone());
    if needs_cluster_ip(old) && !needs_cluster_ip(&new_view) {
        if cluster_ips(old) == cluster_ips(&new_view) {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        for f in ["ipFamilies", "ipFamilyPolicy"] {
            if old.get(f) == spec.get(f) {
                spec.remove(f);
            }
        }
    }
    if needs_node_port(old)
        && !needs_node_port(&new_view)
        && node_ports(old) == node_ports(&new_view)
    {
        for p in spec
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(p) = p.as_object_mut() {
                p.remove("nodePort");
            }
        }
    }
    if needs_cluster_ip(old) && needs_cluster_ip(&new_view) {
        if str_at(&new_view, "clusterIP").is_empty() && !str_at(old, "clusterIP").is_empty() {
            spec.insert("clusterIP".into(), old["clusterIP"].clone());
        }
        if cluster_ips(&new_view).is_empty() && !cluster_ips(old).is_empty() {
            spec.insert("clusterIPs".into(), old["clusterIPs"].clone());
        }
    }
    if needs_node_port(old) && needs_node_port(&new_view) {
        let used: BTreeSet<i64> = node_ports(old)
            .intersection(&node_ports(&new_view))
            .copied()
            .collect();
        let by_name: HashMap<&str, i64> = ports(old)
            .iter()
            .map(|p| (str_at(p, "name"), node_port(p)))
            .collect();
        for p in spec
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if node_port(p) != 0 {
                continue;
            }
            let old_val = by_name.get(str_at(p, "name")).copied().unwrap_or(0);
            if old_val != 0 && !used.contains(&old_val) {
                if let Some(p) = p.as_object_mut() {
                    p.insert("nodePort".into(), json!(old_val));
                }
            }
        }
    }
    if needs_health_check(old) {
        let hc = health_check_port(&new_view);
        if !needs_health_check(&new_view) && hc == health_check_port(old) {
            spec.remove("healthCheckNodePort");
        } else if needs_health_check(&new_view) && hc == 0 {
            spec.insert("healthCheckNodePort".into(), json!(health_check_port(old)));
        }
    }
    if str_at(old, "type") != str_at(&new_view, "type")
        && !needs_node_port(&new_view)
        && old.get("externalTrafficPolicy") == spec.get("externalTrafficPolicy")
    {
        spec.remove("externalTrafficPolicy");
    }
    // What only a LoadBalancer uses, when the client left it as stored.
    if str_at(old, "type") == "LoadBalancer" && str_at(&new_view, "type") != "LoadBalancer" {
        let allocate = old.get("allocateLoadBalancerNodePorts");
        if allocate.is_some_and(|a| !a.is_null())
            && allocate == spec.get("allocateLoadBalancerNodePorts")
        {
            spec.remove("allocateLoadBalancerNodePorts");
        }
        if old.get("loadBalancerClass") == spec.get("loadBalancerClass") {
            spec.remove("loadBalancerClass");
        }
    }
}

impl Allocators {
    pub fn new(ips: IpRange, ports: PortRange) -> Self {
        Self {
            ips,
            ports,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The values a Service holds.
    pub fn items_of(&self, svc: &Value) -> Vec<Item> {
        let Some(spec) = svc.get("spec") else {
            return Vec::new();
        };
        let mut items = Vec::new();
        if needs_cluster_ip(spec) {
            for ip in cluster_ips(spec) {
                if let Ok(ip) = ip.parse::<Ipv4Addr>() {
                    items.push(Item::Ip(u32::from(ip)));
                }
            }
        }
        let health_check = needs_health_check(spec).then(|| health_check_port(spec));
        for p in node_ports(spec).into_iter().chain(health_check) {
            if let Ok(p) = u16::try_from(p) {
                items.push(Item::Port(p));
            }
        }
        items
    }

    /// Record what stored Services hold (at start).
    pub fn load<'a>(&self, services: impl IntoIterator<Item = &'a Value>) {
        let mut st = self.lock();
        for svc in services {
            let uid = meta::meta_str(svc, "uid").unwrap_or("").to_owned();
            for item in self.items_of(svc) {
                st.held.entry(item).or_insert_with(|| uid.clone());
            }
        }
    }

    /// A claim in the store shows `item` held by a Service this host did not allocate it for
    /// (another host's): never hand it out. (Freed only by a restart, which reloads from the
    /// store; a stale entry costs a value, never a duplicate.)
    pub fn taken_elsewhere(&self, item: Item) {
        self.lock()
            .held
            .entry(item)
            .or_insert_with(|| ELSEWHERE.to_owned());
    }

    /// Whether a value is held (by anyone); for tests and metrics.
    pub fn allocated(&self) -> (usize, usize) {
        let st = self.lock();
        let ips = st.held.keys().filter(|i| matches!(i, Item::Ip(_))).count();
        (ips, st.held.len() - ips)
    }

    /// Fill in and reserve the IPs and node ports of `svc` (defaulted and validated already),
    /// created (`old` None) or updating `old`.
    pub fn allocate(&self, svc: &mut Value, old: Option<&Value>) -> Result<Txn, ApiError> {
        let name = meta::name(svc).to_owned();
        let uid = meta::meta_str(svc, "uid").unwrap_or("").to_owned();
        let Some(map) = svc.as_object_mut() else {
            return Ok(Txn::default());
        };
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        let Some(spec) = spec.as_object_mut() else {
            return Ok(Txn::default());
        };
        let old_spec = old.and_then(|o| o.get("spec"));
        if let Some(o) = old_spec {
            prepare_update(spec, o);
        }
        let mut txn = Txn {
            uid,
            ..Txn::default()
        };
        let mut st = self.lock();
        let mut op = Op {
            st: &mut st,
            txn: &mut txn,
            name: &name,
        };
        let result = self.allocate_locked(&mut op, spec, old_spec);
        if let Err(e) = result {
            Self::settled(&mut st, &txn.allocated);
            Self::release(&mut st, &txn.uid, &txn.allocated);
            return Err(e);
        }
        Ok(txn)
    }

    fn allocate_locked(
        &self,
        op: &mut Op<'_>,
        spec: &mut Map<String, Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let view = Value::Object(spec.clone());
        let old_ips = old
            .filter(|o| needs_cluster_ip(o))
            .map(cluster_ips)
            .unwrap_or_default();
        if !needs_cluster_ip(&view) {
            op.txn.release.extend(
                old_ips
                    .iter()
                    .filter_map(|ip| ip.parse::<Ipv4Addr>().ok())
                    .map(|ip| Item::Ip(u32::from(ip))),
            );
        } else {
            self.cluster_ip(op, spec, old, &old_ips)?;
        }
        // A requested health check port is reserved before the service ports draw theirs, so
        // that none of them is handed the port it asks for (kube draws the service ports first).
        let held_hc = old
            .filter(|o| needs_health_check(o))
            .map(health_check_port)
            .unwrap_or(0);
        let requested_hc = health_check_port(&view);
        if needs_health_check(&view) && requested_hc != 0 && requested_hc != held_hc {
            self.reserve_port(op.st, op.txn, requested_hc)
                .map_err(|msg| {
                    ApiError::internal(format!(
                        "failed to allocate requested HealthCheck NodePort {requested_hc}: {msg}"
                    ))
                })?;
        }
        let old_ports = old.map(node_ports).unwrap_or_default();
        let mut new_ports = BTreeSet::new();
        if needs_node_port(&view) {
            self.node_ports(op, spec, &old_ports)?;
            new_ports = node_ports(&Value::Object(spec.clone()));
        } else {
            let ty = str_at(&view, "type").to_owned();
            let causes: Vec<Cause> = ports(&view)
                .iter()
                .enumerate()
                .filter(|(_, p)| node_port(p) != 0)
                .map(|(i, _)| {
                    Cause::new(
                        "FieldValueForbidden",
                        &format!("spec.ports[{i}].nodePort"),
                        format!("Forbidden: may not be used when `type` is '{ty}'"),
                    )
                })
                .collect();
            if !causes.is_empty() {
                return Err(invalid(op.name, causes));
            }
        }
        op.txn.release.extend(
            old_ports
                .difference(&new_ports)
                .filter_map(|&p| u16::try_from(p).ok())
                .map(Item::Port),
        );
        self.health_check_port(op, spec, &view, held_hc)
    }

    /// kube's `allocHealthCheckNodePort` / `updateHealthCheckNodePort`: a LoadBalancer with
    /// `externalTrafficPolicy: Local` gets `healthCheckNodePort` (the requested one if it is
    /// free, else the next free node port), kept across updates and released when no longer
    /// needed; any other Service may not set it.
    /// `view` is the spec as requested, `held` the port the stored Service held (0: none).
    fn health_check_port(
        &self,
        op: &mut Op<'_>,
        spec: &mut Map<String, Value>,
        view: &Value,
        held: i64,
    ) -> Result<(), ApiError> {
        let mut kept = 0;
        if !needs_health_check(view) {
            if health_check_port(view) != 0 {
                return Err(invalid(
                    op.name,
                    vec![Cause::new(
                        "FieldValueForbidden",
                        "spec.healthCheckNodePort",
                        "Forbidden: may only be set when `type` is 'LoadBalancer' and \
                         `externalTrafficPolicy` is 'Local'",
                    )],
                ));
            }
        } else {
            let requested = health_check_port(view);
            if requested == 0 {
                let port = self.next_port(op.st, op.txn).map_err(|e| {
                    ApiError::internal(format!(
                        "failed to allocate a HealthCheck NodePort 0: {}",
                        e.message
                    ))
                })?;
                spec.insert("healthCheckNodePort".into(), json!(port));
                kept = port;
            } else {
                // The old one, or reserved by `allocate_locked` before the service ports.
                kept = requested;
            }
        }
        if held != 0 && held != kept {
            if let Ok(p) = u16::try_from(held) {
                op.txn.release.push(Item::Port(p));
            }
        }
        Ok(())
    }

    fn cluster_ip(
        &self,
        op: &mut Op<'_>,
        spec: &mut Map<String, Value>,
        old: Option<&Value>,
        old_ips: &[String],
    ) -> Result<(), ApiError> {
        let Op { st, txn, name } = op;
        // kube's normalizeClusterIPs: clusterIP and clusterIPs[0] name the same address.
        let ip = str_at(&Value::Object(spec.clone()), "clusterIP").to_owned();
        let mut ips = cluster_ips(&Value::Object(spec.clone()));
        if ips.is_empty() && !ip.is_empty() {
            ips = vec![ip.clone()];
        }
        if !ips.is_empty() && ip.is_empty() {
            spec.insert("clusterIP".into(), json!(ips[0]));
        } else if !ips.is_empty() && ips[0] != ip {
            return Err(invalid_field(
                name,
                "spec.clusterIPs",
                format!(
                    "Invalid value: {}: first value must match `clusterIP`",
                    go_strings(&ips)
                ),
            ));
        }
        // kube's validateUpgradeDowngradeClusterIPs: the primary address never changes.
        if !old_ips.is_empty() && !ips.is_empty() && old_ips[0] != ips[0] {
            return Err(invalid_field(
                name,
                "spec.clusterIPs[0]",
                format!(
                    "Invalid value: {}: may not change once set",
                    go_strings(&ips)
                ),
            ));
        }
        let headless = ips.first().map(String::as_str) == Some("None");
        let selectorless = spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        // kube's initIPFamilyFields on a single-stack IPv4 cluster.
        let policy = match spec.get("ipFamilyPolicy").and_then(Value::as_str) {
            Some(p) => p.to_owned(),
            None => match old
                .and_then(|o| o.get("ipFamilyPolicy"))
                .and_then(Value::as_str)
            {
                Some(p) => p.to_owned(),
                None if headless && selectorless => "RequireDualStack".to_owned(),
                None => "SingleStack".to_owned(),
            },
        };
        spec.insert("ipFamilyPolicy".into(), json!(policy));
        let mut families: Vec<String> = spec
            .get("ipFamilies")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default();
        if headless && selectorless {
            if families.is_empty() {
                families.push("IPv4".into());
            }
            if families.len() < 2 && policy != "SingleStack" {
                let other = if families[0] == "IPv4" {
                    "IPv6"
                } else {
                    "IPv4"
                };
                families.push(other.into());
            }
            spec.insert("ipFamilies".into(), json!(families));
            spec.insert("clusterIPs".into(), json!(ips));
            return Ok(());
        }
        let mut causes = Vec::new();
        if policy == "RequireDualStack" {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "spec.ipFamilyPolicy",
                "Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
            ));
        }
        for (i, f) in families.iter().enumerate() {
            if f != "IPv4" {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    &format!("spec.ipFamilies[{i}]"),
                    format!(
                        "Invalid value: {}: not configured on this cluster",
                        crate::builtin::validation::field::json_value(&json!(f))
                    ),
                ));
            }
        }
        if ips.len() > 1 && policy == "SingleStack" {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "spec.ipFamilyPolicy",
                "Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if !causes.is_empty() {
            return Err(invalid(name, causes));
        }
        if families.is_empty() {
            families.push("IPv4".into());
        }
        spec.insert("ipFamilies".into(), json!(families));
        if headless {
            spec.insert("clusterIPs".into(), json!(ips));
            return Ok(());
        }
        let requested = ips.first().cloned().unwrap_or_default();
        if !requested.is_empty() && old_ips.first() == Some(&requested) {
            return Ok(()); // held already
        }
        let ip = if requested.is_empty() {
            let offset = band(self.ips.size(), 16, 16, 256);
            let first = self.ips.first();
            let i = next_free(self.ips.size(), offset, |i| {
                st.held.contains_key(&Item::Ip(first + i as u32))
            })
            .ok_or_else(|| ApiError::internal("failed to allocate a serviceIP: range is full"))?;
            first + i as u32
        } else {
            let field_err = |msg: String| {
                invalid_field(
                    name,
                    "spec.clusterIPs",
                    format!(
                        "Invalid value: {}: failed to allocate IP {requested}: {msg}",
                        go_strings(&ips)
                    ),
                )
            };
            let ip = match requested.parse::<IpAddr>() {
                Ok(IpAddr::V4(ip)) => u32::from(ip),
                Ok(IpAddr::V6(_)) => {
                    return Err(invalid_field(name, "spec.clusterIPs[0]", format!(
                                "Invalid value: {}: IPv6 is not configured on this cluster",
                                go_strings(&ips)
                            )))
                }
                Err(_) => {
                    return Err(invalid_field(name, "spec.clusterIPs[0]", format!(
                                "Invalid value: {}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                                crate::builtin::validation::field::quoted(&requested)
                            )))
                }
            };
            if !self.ips.contains(ip) {
                return Err(field_err(format!(
                    "the provided IP ({requested}) is not in the valid range. The range of valid IPs is {}",
                    self.ips
                )));
            }
            if st.held.contains_key(&Item::Ip(ip)) {
                return Err(field_err("provided IP is already allocated".into()));
            }
            ip
        };
        st.held.insert(Item::Ip(ip), txn.uid.clone());
        st.pending.insert(Item::Ip(ip));
        txn.allocated.push(Item::Ip(ip));
        let text = Ipv4Addr::from(ip).to_string();
        spec.insert("clusterIP".into(), json!(text));
        spec.insert("clusterIPs".into(), json!([text]));
        Ok(())
    }

    /// kube's `initNodePorts` / `updateNodePorts`: requested ports reserved unless the old
    /// object held them, the others allocated (one per service port number; none at all for a
    /// LoadBalancer with `allocateLoadBalancerNodePorts: false`).
    fn node_ports(
        &self,
        op: &mut Op<'_>,
        spec: &mut Map<String, Value>,
        old_ports: &BTreeSet<i64>,
    ) -> Result<(), ApiError> {
        let Op { st, txn, name } = op;
        let allocate_new = spec
            .get("allocateLoadBalancerNodePorts")
            .and_then(Value::as_bool)
            .unwrap_or(true)
            || str_at(&Value::Object(spec.clone()), "type") != "LoadBalancer";
        let mut by_port: HashMap<i64, i64> = HashMap::new();
        let mut ports = spec
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .map(std::mem::take)
            .unwrap_or_default();
        let svc_port = |p: &Value| p.get("port").and_then(Value::as_i64).unwrap_or(0);
        // Requested ports first, so that none is handed out to a port that asked for nothing.
        let mut result = Ok(());
        for (i, p) in ports.iter().enumerate() {
            let requested = node_port(p);
            if requested == 0 {
                continue;
            }
            by_port.entry(svc_port(p)).or_insert(requested);
            let held = old_ports.contains(&requested)
                || u16::try_from(requested).is_ok_and(|r| txn.allocated.contains(&Item::Port(r)));
            if held {
                continue;
            }
            if let Err(msg) = self.reserve_port(st, txn, requested) {
                result = Err(invalid_field(
                    name,
                    &format!("spec.ports[{i}].nodePort"),
                    format!("Invalid value: {requested}: {msg}"),
                ));
                break;
            }
        }
        if result.is_ok() && allocate_new {
            for p in ports.iter_mut().filter(|p| node_port(p) == 0) {
                let np = match by_port.get(&svc_port(p)) {
                    Some(&np) => np,
                    None => match self.next_port(st, txn) {
                        Ok(np) => np,
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    },
                };
                by_port.insert(svc_port(p), np);
                if let Some(m) = p.as_object_mut() {
                    m.insert("nodePort".into(), json!(np));
                }
            }
        }
        spec.insert("ports".into(), Value::Array(ports));
        result
    }

    fn reserve_port(&self, st: &mut State, txn: &mut Txn, port: i64) -> Result<i64, String> {
        if !self.ports.contains(port) {
            return Err(format!(
                "provided port is not in the valid range. The range of valid ports is {}",
                self.ports
            ));
        }
        let item = Item::Port(port as u16);
        if st.held.contains_key(&item) {
            return Err("provided port is already allocated".into());
        }
        st.held.insert(item, txn.uid.clone());
        st.pending.insert(item);
        txn.allocated.push(item);
        Ok(port)
    }

    fn next_port(&self, st: &mut State, txn: &mut Txn) -> Result<i64, ApiError> {
        let size = self.ports.size();
        let first = self.ports.first;
        let i = next_free(size, band(size, 16, 32, 128), |i| {
            st.held.contains_key(&Item::Port(first + i as u16))
        })
        .ok_or_else(|| ApiError::internal("failed to allocate a nodePort: range is full"))?;
        let port = first + i as u16;
        st.held.insert(Item::Port(port), txn.uid.clone());
        st.pending.insert(Item::Port(port));
        txn.allocated.push(Item::Port(port));
        Ok(i64::from(port))
    }

    fn release(st: &mut State, uid: &str, items: &[Item]) {
        for item in items {
            if st.held.get(item).is_some_and(|h| h == uid) {
                st.held.remove(item);
            }
        }
    }

    /// The write happened: release what the update gave up.
    pub fn commit(&self, txn: Txn) {
        let mut st = self.lock();
        Self::settled(&mut st, &txn.allocated);
        Self::release(&mut st, &txn.uid, &txn.release);
    }

    /// The write did not happen (or was a dry run): release what was reserved for it.
    pub fn revert(&self, txn: Txn) {
        let mut st = self.lock();
        Self::settled(&mut st, &txn.allocated);
        Self::release(&mut st, &txn.uid, &txn.allocated);
    }

    fn settled(st: &mut State, items: &[Item]) {
        for item in items {
            st.pending.remove(item);
        }
    }

    /// The store's claim of `item` went (another host's Service let it go, or a start-up repair
    /// removed an orphan): free it here too, unless a write of this host is reserving it now.
    /// Wrongly freeing a value costs at most a retry (its claim still guards it); never freeing
    /// one would leak it.
    pub fn unclaimed(&self, item: Item) {
        let mut st = self.lock();
        if !st.pending.contains(&item) {
            st.held.remove(&item);
        }
    }

    /// A Service was deleted: release everything it held.
    pub fn release_service(&self, svc: &Value) {
        let uid = meta::meta_str(svc, "uid").unwrap_or("");
        Self::release(&mut self.lock(), uid, &self.items_of(svc));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name, "uid": format!("uid-{name}")}, "spec": spec})
    }

    /// The message of the refusal of a new Service `name` with `spec`.
    fn refused(a: &Allocators, name: &str, spec: Value) -> String {
        a.allocate(&mut svc(name, spec), None).unwrap_err().message
    }

    fn small() -> Allocators {
        Allocators::new(
            "10.0.0.0/29".parse().unwrap(),
            "30000-30003".parse().unwrap(),
        )
    }

    #[test]
    fn leaving_load_balancer_drops_what_only_it_uses() {
        let old = json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true,
            "loadBalancerClass": "example.com/lb", "clusterIP": "10.0.0.2",
            "ports": [{"port": 80, "nodePort": 30001}]});
        let mut spec = old.as_object().unwrap().clone();
        spec.insert("type".into(), json!("ClusterIP"));
        prepare_update(&mut spec, &old);
        assert!(!spec.contains_key("allocateLoadBalancerNodePorts"));
        assert!(!spec.contains_key("loadBalancerClass"));
        assert!(spec["ports"][0].get("nodePort").is_none());
        // A client that changes the field too keeps its value (validation then judges it).
        let mut spec = old.as_object().unwrap().clone();
        spec.insert("type".into(), json!("ClusterIP"));
        spec.insert("allocateLoadBalancerNodePorts".into(), json!(false));
        prepare_update(&mut spec, &old);
        assert_eq!(spec["allocateLoadBalancerNodePorts"], json!(false));
    }

    #[test]
    fn ranges_parse() {
        let r: IpRange = "10.96.0.0/12".parse().unwrap();
        assert_eq!(r, IpRange::default());
        assert_eq!(r.first_ip(), Ipv4Addr::new(10, 96, 0, 1));
        assert_eq!(r.size(), (1 << 20) - 2);
        assert!(!r.contains(u32::from(Ipv4Addr::new(10, 96, 0, 0))));
        assert!(!r.contains(u32::from(Ipv4Addr::new(10, 111, 255, 255))));
        assert!(r.contains(u32::from(Ipv4Addr::new(10, 111, 255, 254))));
        assert!("10.96.0.0".parse::<IpRange>().is_err());
        assert!("::1/64".parse::<IpRange>().is_err());
        assert_eq!(
            "30000-32767".parse::<PortRange>().unwrap(),
            PortRange::default()
        );
        assert!("5-4".parse::<PortRange>().is_err());
    }

    #[test]
    fn allocates_distinct_ips_until_full() {
        let a = small();
        let mut seen = BTreeSet::new();
        for i in 0..6 {
            let mut s = svc(
                &format!("s{i}"),
                json!({"type": "ClusterIP", "selector": {"a": "b"}}),
            );
            a.commit(a.allocate(&mut s, None).unwrap());
            let ip = s["spec"]["clusterIP"].as_str().unwrap().to_owned();
            assert_eq!(s["spec"]["clusterIPs"], json!([ip]));
            assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
            assert_eq!(s["spec"]["ipFamilyPolicy"], json!("SingleStack"));
            assert!(seen.insert(ip));
        }
        let mut s = svc("full", json!({"type": "ClusterIP"}));
        let e = a.allocate(&mut s, None).unwrap_err();
        assert_eq!(e.code, 500);
        assert!(e.message.contains("range is full"), "{}", e.message);
    }

    #[test]
    fn requested_ip_conflicts_and_range() {
        let a = small();
        let mut s = svc("a", json!({"clusterIP": "10.0.0.3"}));
        a.commit(a.allocate(&mut s, None).unwrap());
        assert_eq!(s["spec"]["clusterIPs"], json!(["10.0.0.3"]));
        assert_eq!(
            refused(&a, "b", json!({"clusterIP": "10.0.0.3"})),
            "Service \"b\" is invalid: spec.clusterIPs: Invalid value: [\"10.0.0.3\"]: failed to allocate IP 10.0.0.3: provided IP is already allocated"
        );
        let e = refused(&a, "c", json!({"clusterIP": "10.0.0.7"}));
        assert!(e.contains("the provided IP (10.0.0.7) is not in the valid range. The range of valid IPs is 10.0.0.0/29"), "{e}");
        // Released on delete: free again.
        a.release_service(&s);
        let mut t = svc("b", json!({"clusterIP": "10.0.0.3"}));
        assert!(a.allocate(&mut t, None).is_ok());
    }

    #[test]
    fn revert_frees_and_dry_run_leaves_nothing() {
        let a = small();
        let mut s = svc(
            "a",
            json!({"clusterIP": "10.0.0.2", "type": "NodePort", "ports": [{"port": 80, "nodePort": 30001}]}),
        );
        let txn = a.allocate(&mut s, None).unwrap();
        assert_eq!(a.allocated(), (1, 1));
        a.revert(txn);
        assert_eq!(a.allocated(), (0, 0));
    }

    #[test]
    fn headless_and_external_name() {
        let a = small();
        let mut s = svc("h", json!({"clusterIP": "None", "selector": {"a": "b"}}));
        a.commit(a.allocate(&mut s, None).unwrap());
        assert_eq!(s["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], json!("SingleStack"));
        let mut s = svc("h2", json!({"clusterIP": "None"}));
        a.commit(a.allocate(&mut s, None).unwrap());
        assert_eq!(s["spec"]["ipFamilyPolicy"], json!("RequireDualStack"));
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
        let mut s = svc(
            "x",
            json!({"type": "ExternalName", "externalName": "a.example"}),
        );
        a.commit(a.allocate(&mut s, None).unwrap());
        assert!(s["spec"].get("clusterIP").is_none());
        assert_eq!(a.allocated(), (0, 0));
    }

    #[test]
    fn health_check_node_ports_for_local_load_balancers() {
        let a = small();
        let lb = |hc: Value| {
            let mut spec = json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                                  "ports": [{"port": 80}]});
            if !hc.is_null() {
                spec["healthCheckNodePort"] = hc;
            }
            spec
        };
        let mut s1 = svc("a", lb(Value::Null));
        a.commit(a.allocate(&mut s1, None).unwrap());
        let hc = s1["spec"]["healthCheckNodePort"].as_i64().unwrap();
        assert!(
            a.ports.contains(hc) && hc != s1["spec"]["ports"][0]["nodePort"],
            "{s1}"
        );
        // A requested one that is taken: kube's internal error.
        let mut s2 = svc("b", lb(json!(hc)));
        let e = a.allocate(&mut s2, None).unwrap_err();
        assert_eq!(e.code, 500);
        assert!(e.message.contains(&format!(
            "failed to allocate requested HealthCheck NodePort {hc}: provided port is already allocated"
        )), "{}", e.message);
        // An update that leaves it out keeps it; one to Cluster releases it.
        let mut upd = svc("a", lb(Value::Null));
        upd["spec"]["ports"] = s1["spec"]["ports"].clone();
        a.commit(a.allocate(&mut upd, Some(&s1)).unwrap());
        assert_eq!(upd["spec"]["healthCheckNodePort"], json!(hc));
        let mut cluster = upd.clone();
        cluster["spec"]["externalTrafficPolicy"] = json!("Cluster");
        a.commit(a.allocate(&mut cluster, Some(&upd)).unwrap());
        assert!(
            cluster["spec"].get("healthCheckNodePort").is_none(),
            "{cluster}"
        );
        let mut s2 = svc("b", lb(json!(hc)));
        a.commit(a.allocate(&mut s2, None).unwrap());
        // Not a local LoadBalancer: forbidden.
        let msg = refused(
            &a,
            "c",
            json!({"type": "NodePort", "healthCheckNodePort": 30100,
                                          "ports": [{"port": 80}]}),
        );
        assert!(msg.contains("spec.healthCheckNodePort: Forbidden: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"), "{msg}");
    }

    #[test]
    fn node_ports_requested_shared_and_released_on_type_change() {
        let a = small();
        let mut s = svc(
            "n",
            json!({"type": "NodePort", "ports": [
                {"name": "a", "port": 53, "protocol": "TCP"},
                {"name": "b", "port": 53, "protocol": "UDP"},
                {"name": "c", "port": 80, "nodePort": 30002}]}),
        );
        a.commit(a.allocate(&mut s, None).unwrap());
        let p = &s["spec"]["ports"];
        assert_eq!(p[0]["nodePort"], p[1]["nodePort"]);
        assert_eq!(p[2]["nodePort"], json!(30002));
        assert_eq!(a.allocated(), (1, 2));
        let e = refused(
            &a,
            "m",
            json!({"type": "NodePort", "ports": [{"port": 1, "nodePort": 30002}]}),
        );
        assert_eq!(e, "Service \"m\" is invalid: spec.ports[0].nodePort: Invalid value: 30002: provided port is already allocated");
        let out_of_range = json!({"type": "NodePort", "ports": [{"port": 1, "nodePort": 80}]});
        let ports_msg =
            "provided port is not in the valid range. The range of valid ports is 30000-30003";
        assert!(refused(&a, "m", out_of_range).ends_with(ports_msg));
        // An update that leaves node ports out keeps them; one to ClusterIP releases them.
        let old = s.clone();
        let mut u = s.clone();
        for port in u["spec"]["ports"].as_array_mut().unwrap() {
            port.as_object_mut().unwrap().remove("nodePort");
        }
        u["spec"].as_object_mut().unwrap().remove("clusterIP");
        u["spec"].as_object_mut().unwrap().remove("clusterIPs");
        a.commit(a.allocate(&mut u, Some(&old)).unwrap());
        assert_eq!(u["spec"], old["spec"]);
        let mut c = old.clone();
        c["spec"]["type"] = json!("ClusterIP");
        a.commit(a.allocate(&mut c, Some(&old)).unwrap());
        assert!(c["spec"]["ports"][2].get("nodePort").is_none());
        assert_eq!(a.allocated(), (1, 0));
        // clusterIP is immutable.
        // (Another address than the one drawn at random for it.)
        let other = if c["spec"]["clusterIP"] == "10.0.0.6" {
            "10.0.0.5"
        } else {
            "10.0.0.6"
        };
        let mut d = c.clone();
        d["spec"]["clusterIP"] = json!(other);
        d["spec"]["clusterIPs"] = json!([other]);
        let e = a.allocate(&mut d, Some(&c)).unwrap_err();
        assert!(
            e.message.contains(&format!(
                "spec.clusterIPs[0]: Invalid value: [\"{other}\"]: may not change once set"
            )),
            "{}",
            e.message
        );
        // A nodePort on a ClusterIP Service is refused.
        let forbidden = json!({"type": "ClusterIP", "ports": [{"port": 1, "nodePort": 30000}]});
        let forbidden_msg =
            "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'";
        assert!(refused(&a, "f", forbidden).contains(forbidden_msg));
    }

    #[test]
    fn load_restores_holdings() {
        let a = small();
        let stored = svc(
            "s",
            json!({"type": "NodePort", "clusterIP": "10.0.0.4", "clusterIPs": ["10.0.0.4"], "ports": [{"port": 1, "nodePort": 30001}]}),
        );
        a.load([&stored]);
        assert_eq!(a.allocated(), (1, 1));
        let mut t = svc("t", json!({"clusterIP": "10.0.0.4"}));
        assert_eq!(a.allocate(&mut t, None).unwrap_err().code, 422);
    }
}
