//! One Wasm admission policy (`turtles:admission@0.1.0`) loaded from the controllers folder: its
//! current version in the admission chain (`admission::WasmPolicies`), a small pool of warm
//! instances per version (a call takes one, or instantiates a fresh one, and gives it back
//! unless the call failed: a faulted instance is thrown away), its identity and RBAC for cache
//! reads (`system:controller:NAME`, granted the declared permissions), and its `Controller`
//! status object (`status.type: AdmissionPolicy`).
//!
//! A new file is compiled and registered in the background while the version before it goes on
//! serving; the new version then replaces it in the chain in one step, so no request fails
//! during a swap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wasmtime::Store;

use super::bindings_admission::Policy as Bindings;
use super::compile::{Code, Tier};
use super::controller::{remove_identity, user_name, write_status};
use super::driver::{Metered, Stats};
use super::{wit_admission as wit, GuestState, Host, HostCtx, RuntimeError};
use crate::admission::{Answer, CallFuture, Denial, Patch, Phase, PolicyVersion, Request, Spec};
use crate::selector::LabelSelector;
use crate::service::Service;

/// Warm instances kept per version (calls beyond run on fresh ones).
const MAX_IDLE: usize = 4;
/// Calls of one policy at once (all its versions); more wait, up to the call's budget.
const MAX_CALLS: usize = 16;
/// The WIT package policies are built against.
pub const WIT: &str = "turtles:admission@0.1.0";

/// What a component's top-level exports make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exports {
    /// `validate` or `mutate`: an admission policy.
    Policy,
    /// `reconcile`: a controller.
    Controller,
    /// Neither (not a component, truncated, corrupt).
    Unknown,
}

/// What a component is, by its top-level exports, read from the bytes without compiling.
pub fn exports(bytes: &[u8]) -> Exports {
    // Any file may be dropped into the folder: whatever the parser makes of it, the folder goes on.
    std::panic::catch_unwind(|| read_exports(bytes)).unwrap_or(Exports::Unknown)
}

fn read_exports(bytes: &[u8]) -> Exports {
    use wasmparser::{Chunk, Parser, Payload};
    let mut parser = Parser::new(0);
    let mut rest = bytes;
    loop {
        let Ok(Chunk::Parsed { consumed, payload }) = parser.parse(rest, true) else {
            return Exports::Unknown;
        };
        rest = &rest[consumed..];
        match payload {
            // Nested modules and components are not the component's own exports.
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => {
                // The outer parser goes on after the nested one's bytes.
                let len = usize::try_from(unchecked_range.end - unchecked_range.start);
                let Some(len) = len.ok().filter(|l| *l <= rest.len()) else {
                    return Exports::Unknown;
                };
                rest = &rest[len..];
            }
            Payload::ComponentExportSection(exports) => {
                for e in exports.into_iter().flatten() {
                    match e.name.name {
                        "validate" | "mutate" => return Exports::Policy,
                        "reconcile" => return Exports::Controller,
                        _ => {}
                    }
                }
            }
            Payload::End(_) => return Exports::Unknown,
            _ => {}
        }
    }
}

/// One live instance of a policy.
pub struct PolicyInstance {
    store: Store<GuestState>,
    bindings: Bindings,
}

impl PolicyInstance {
    pub(super) fn new(store: Store<GuestState>, bindings: Bindings) -> Self {
        Self { store, bindings }
    }

    pub fn memory_bytes(&self) -> usize {
        self.store.data().limits.memory_bytes
    }

    /// The budget of each later call (never more than the runtime's call deadline, which the
    /// instance was made with).
    fn limit_deadline(&mut self, deadline: Duration) {
        let d = &mut self.store.data_mut().call_deadline;
        *d = (*d).min(deadline);
    }

    pub async fn register(&mut self) -> Result<wit::Registration, RuntimeError> {
        super::arm(&mut self.store);
        let r = self.bindings.call_register(&mut self.store).await;
        let _ = super::drain_output(&mut self.store);
        r.map_err(|e| RuntimeError::Guest(super::describe_trap(&e)))
    }

    async fn call(&mut self, phase: Phase, req: &wit::Request) -> Result<Answer, RuntimeError> {
        super::arm(&mut self.store);
        let r = match phase {
            Phase::Validate => self
                .bindings
                .call_validate(&mut self.store, req)
                .await
                .map(|v| Answer {
                    denied: v.denied.map(denial),
                    warnings: v.warnings,
                    patch: None,
                }),
            Phase::Mutate => self
                .bindings
                .call_mutate(&mut self.store, req)
                .await
                .map(|m| Answer {
                    denied: m.denied.map(denial),
                    warnings: m.warnings,
                    patch: match m.patch {
                        wit::Patch::None => None,
                        wit::Patch::Object(b) => Some(Patch::Object(b)),
                        wit::Patch::JsonPatch(b) => Some(Patch::JsonPatch(b)),
                    },
                }),
        };
        let _ = super::drain_output(&mut self.store);
        r.map_err(|e| RuntimeError::Guest(super::describe_trap(&e)))
    }
}

fn denial(d: wit::Denial) -> Denial {
    Denial {
        code: d.code,
        reason: d.reason,
        message: d.message,
    }
}

/// Counters of one policy (all its versions).
#[derive(Default)]
struct Counters {
    denied: AtomicU64,
    mutated: AtomicU64,
}

/// One loaded version: what it registered, its component and its idle instances.
struct Version {
    spec: Spec,
    registration: wit::Registration,
    /// Baseline code at first for a new component, swapped to the optimized code in place.
    code: Arc<Code>,
    /// Keeps the compiled artifact shared with other components of identical bytes.
    artifact: Arc<super::compile::Artifact>,
    deadline: Duration,
    /// Idle instances, with the code version each was made from.
    idle: Mutex<Vec<(u64, PolicyInstance)>>,
    host: Arc<Host>,
    ctx: Arc<HostCtx>,
    stats: Arc<Stats>,
    counters: Arc<Counters>,
    calls: Arc<tokio::sync::Semaphore>,
}

impl Version {
    /// An idle instance of the current code, or a new one (idle instances of the code before a
    /// swap to the optimized code are dropped).
    async fn instance(&self) -> Result<(u64, PolicyInstance), RuntimeError> {
        let current = self.code.version();
        let idle = self.idle.lock().ok().and_then(|mut idle| {
            idle.retain(|(v, _)| *v == current);
            idle.pop()
        });
        match idle {
            Some(i) => Ok(i),
            None => {
                let (version, component) = self.code.get();
                self.host
                    .runtime
                    .instantiate_policy(&component, self.ctx.clone(), self.deadline)
                    .await
                    .map(|i| (version, i))
            }
        }
    }

    async fn run(
        &self,
        phase: Phase,
        req: &Request<'_>,
        object: Option<&Value>,
    ) -> Result<Answer, String> {
        let started = Instant::now();
        let permit = tokio::time::timeout(self.deadline, self.calls.clone().acquire_owned()).await;
        let Ok(Ok(_permit)) = permit else {
            self.stats.errors.fetch_add(1, Ordering::Relaxed);
            return Err(format!(
                "{MAX_CALLS} calls already running for longer than the call budget"
            ));
        };
        let request = to_wit(req, object);
        let result = match self.instance().await {
            Ok((version, mut inst)) => {
                let r = inst.call(phase, &request).await;
                self.stats
                    .instance_memory
                    .store(inst.memory_bytes() as u64, Ordering::Relaxed);
                if r.is_ok() {
                    if let Ok(mut idle) = self.idle.lock() {
                        if idle.len() < MAX_IDLE {
                            idle.push((version, inst));
                        }
                    }
                }
                r
            }
            Err(e) => Err(e),
        };
        let elapsed = started.elapsed();
        self.stats.reconciles.fetch_add(1, Ordering::Relaxed);
        self.stats.latency.observe(elapsed);
        match &result {
            Ok(a) => {
                if a.denied.is_some() {
                    self.counters.denied.fetch_add(1, Ordering::Relaxed);
                }
                if a.patch.is_some() {
                    self.counters.mutated.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                if matches!(e, RuntimeError::Guest(_)) {
                    self.stats.traps.fetch_add(1, Ordering::Relaxed);
                }
                let failure = if self.spec.fail_open {
                    "ignored (failure-policy ignore)"
                } else {
                    "request refused (failure-policy fail)"
                };
                self.stats.set_last_error(format!("{e}: {failure}"));
                self.ctx
                    .log
                    .push(format!("ERROR call failed: {e}: {failure}"));
            }
        }
        result.map_err(|e| e.to_string())
    }
}

impl PolicyVersion for Version {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn call<'a>(
        &'a self,
        phase: Phase,
        req: &'a Request<'a>,
        object: Option<&'a Value>,
    ) -> CallFuture<'a> {
        Box::pin(self.run(phase, req, object))
    }
}

/// The request as the guest gets it.
fn to_wit(req: &Request<'_>, object: Option<&Value>) -> wit::Request {
    let ri = req.ri;
    let json = |v: &Value| serde_json::to_vec(v).unwrap_or_default();
    wit::Request {
        uid: uuid::Uuid::new_v4().to_string(),
        kind: {
            let [group, version, kind] = req.kind();
            wit::GroupVersionKind {
                group: group.to_owned(),
                version: version.to_owned(),
                kind: kind.to_owned(),
            }
        },
        resource: wit::GroupVersionResource {
            group: ri.group.clone(),
            version: ri.version.clone(),
            resource: ri.resource.clone(),
        },
        sub_resource: req.subresource.to_owned(),
        name: req.name.to_owned(),
        namespace: req.namespace.to_owned(),
        operation: match req.operation {
            crate::admission::Operation::Create => wit::Operation::Create,
            crate::admission::Operation::Update => wit::Operation::Update,
            crate::admission::Operation::Delete => wit::Operation::Delete,
        },
        user_info: wit::UserInfo {
            username: req.user.name.clone(),
            uid: req.user.uid.clone(),
            groups: req.user.groups.clone(),
            extra: req
                .user
                .extra
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        },
        dry_run: req.dry_run,
        object: object.map(json),
        old_object: req.old_object.map(json),
    }
}

/// A registration as the chain matches it (`Err`: why it cannot be used).
fn spec(name: &str, reg: &wit::Registration) -> Result<Spec, RuntimeError> {
    let bad = |m: String| RuntimeError::Registration(m);
    if !reg.validating && !reg.mutating {
        return Err(bad(
            "neither validating nor mutating: the policy would never be called".into(),
        ));
    }
    if reg.rules.is_empty() {
        return Err(bad("at least one rule is required".into()));
    }
    let mut rules = Vec::with_capacity(reg.rules.len());
    for (i, r) in reg.rules.iter().enumerate() {
        if r.api_groups.is_empty() || r.api_versions.is_empty() || r.resources.is_empty() {
            return Err(bad(format!(
                "rule {i}: api-groups, api-versions and resources must each name at least one (\"*\": any)"
            )));
        }
        let operations: Vec<&str> = if r.operations.is_empty() {
            vec!["*"]
        } else {
            r.operations
                .iter()
                .map(|o| match o {
                    wit::Operation::Create => "CREATE",
                    wit::Operation::Update => "UPDATE",
                    wit::Operation::Delete => "DELETE",
                })
                .collect()
        };
        let scope = match r.scope {
            wit::Scope::Any => "*",
            wit::Scope::Cluster => "Cluster",
            wit::Scope::Namespaced => "Namespaced",
        };
        rules.push(json!({
            "operations": operations, "apiGroups": r.api_groups,
            "apiVersions": r.api_versions, "resources": r.resources, "scope": scope,
        }));
    }
    let selector = |what: &str, s: &Option<String>| match s {
        None => Ok(LabelSelector::default()),
        Some(s) => LabelSelector::parse(s).map_err(|e| bad(format!("{what} {s:?}: {e}"))),
    };
    Ok(Spec {
        name: name.to_owned(),
        validating: reg.validating,
        mutating: reg.mutating,
        rules,
        namespace_selector: selector("namespace-selector", &reg.namespace_selector)?,
        object_selector: selector("object-selector", &reg.object_selector)?,
        fail_open: matches!(reg.failure_policy, wit::FailurePolicy::Ignore),
    })
}

fn registration_json(reg: &wit::Registration, spec: &Spec) -> Value {
    let mut v = json!({
        "validating": reg.validating,
        "mutating": reg.mutating,
        "rules": spec.rules,
        "failurePolicy": if spec.fail_open { "Ignore" } else { "Fail" },
        "permissions": reg.permissions.iter().map(|p| json!({
            "apiGroups": p.api_groups, "resources": p.resources, "verbs": p.verbs,
        })).collect::<Vec<_>>(),
    });
    if let Some(s) = &reg.namespace_selector {
        v["namespaceSelector"] = json!(s);
    }
    if let Some(s) = &reg.object_selector {
        v["objectSelector"] = json!(s);
    }
    if let Some(t) = reg.timeout_ms {
        v["timeoutMillis"] = json!(t);
    }
    v
}

#[derive(Debug, Clone, Default)]
struct StatusInfo {
    phase: String,
    file: String,
    sha256: String,
    compile_ms: f64,
    load_ms: f64,
    registration: Value,
}

/// A policy of the controllers folder.
pub struct PolicyHandle {
    pub name: String,
    host: Arc<Host>,
    ctx: Arc<HostCtx>,
    current: RwLock<Option<Arc<Version>>>,
    status: Mutex<StatusInfo>,
    stats: Arc<Stats>,
    counters: Arc<Counters>,
    /// Bumped each time the folder hands over new bytes; a retry stops once stale.
    requested: AtomicU64,
    load_lock: tokio::sync::Mutex<()>,
    /// Set (under `current`'s lock) once unloaded: a load finishing later puts nothing in force.
    unloaded: std::sync::atomic::AtomicBool,
    /// Held while the status object is written, and by `unload` while it removes it: a status
    /// write never lands after the removal.
    status_write: tokio::sync::Mutex<()>,
    /// At most this many calls at once (each holds an instance of up to the memory cap).
    calls: Arc<tokio::sync::Semaphore>,
}

impl PolicyHandle {
    pub fn new(name: &str, host: Arc<Host>, file: &str) -> Arc<Self> {
        let user = crate::auth::UserInfo {
            name: user_name(name),
            uid: String::new(),
            groups: vec![crate::auth::AUTHENTICATED.to_owned()],
            extra: Default::default(),
        };
        let ctx = Arc::new(HostCtx {
            name: name.to_owned(),
            identity: RwLock::new(super::Identity {
                user,
                // Policies make no API calls: their cache reads are authorized directly.
                token: String::new(),
                service_account: None,
            }),
            router: host.router.clone(),
            service: host.service.clone(),
            watches: RwLock::new(Vec::new()),
            authz: Arc::new(crate::auth::Authorizer::new(host.service.store.clone())),
            events: Default::default(),
            log: host.runtime.logs.buffer(name),
        });
        Arc::new(Self {
            name: name.to_owned(),
            host,
            ctx,
            current: RwLock::new(None),
            status: Mutex::new(StatusInfo {
                phase: "Loading".into(),
                file: file.to_owned(),
                ..Default::default()
            }),
            stats: Arc::default(),
            counters: Arc::default(),
            requested: AtomicU64::new(0),
            load_lock: tokio::sync::Mutex::new(()),
            unloaded: Default::default(),
            status_write: tokio::sync::Mutex::new(()),
            calls: Arc::new(tokio::sync::Semaphore::new(MAX_CALLS)),
        })
    }

    fn current(&self) -> Option<Arc<Version>> {
        self.current.read().ok().and_then(|c| c.clone())
    }

    fn set_status(&self, f: impl FnOnce(&mut StatusInfo)) {
        if let Ok(mut s) = self.status.lock() {
            f(&mut s);
        }
    }

    /// Load new bytes from the folder; a first load whose guest fails to start is retried with
    /// crash-loop backoff (1 s doubling to 60 s) until it starts or the file changes.
    /// `hold` (a policy found at start-up) is released after the first attempt, whatever its
    /// outcome: requests wait for it, not for retries.
    pub async fn load_from_folder(
        self: &Arc<Self>,
        bytes: Vec<u8>,
        mut hold: Option<crate::admission::StartupHold>,
    ) {
        let ticket = self.requested.fetch_add(1, Ordering::SeqCst) + 1;
        let mut delay = Duration::from_secs(1);
        loop {
            {
                let _one_at_a_time = self.load_lock.lock().await;
                if self.requested.load(Ordering::SeqCst) != ticket {
                    return;
                }
                let r = self.load(bytes.clone()).await;
                drop(hold.take());
                match r {
                    Ok(()) => return,
                    Err(RuntimeError::Compile(_)) | Err(RuntimeError::Registration(_)) => return,
                    Err(_) if self.current().is_some() => return,
                    Err(_) => {}
                }
            }
            self.publish_status().await;
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(60));
        }
    }

    /// Compile, instantiate and register `bytes`, then put them in force in one step.
    pub async fn load(self: &Arc<Self>, bytes: Vec<u8>) -> Result<(), RuntimeError> {
        let started = Instant::now();
        let first = self.current().is_none();
        let r = self.prepare(bytes).await;
        let (version, sha, compile_time) = match r {
            Ok(v) => v,
            Err(e) => {
                self.fail(&e, first);
                return Err(e);
            }
        };
        let registration = registration_json(&version.registration, &version.spec);
        let version = Arc::new(version);
        {
            let Ok(mut c) = self.current.write() else {
                return Ok(());
            };
            if self.unloaded.load(Ordering::SeqCst) {
                return Ok(());
            }
            *c = Some(version.clone());
            self.host
                .service
                .admission
                .wasm
                .insert(&self.name, version.clone());
        }
        let load_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.set_status(|s| {
            s.phase = "Running".into();
            s.sha256 = sha;
            s.compile_ms = compile_time.as_secs_f64() * 1000.0;
            s.load_ms = load_ms;
            s.registration = registration;
        });
        self.stats.clear_last_error();
        tracing::info!(policy = %self.name, load_ms, swapped = !first, "admission policy loaded");
        self.publish_status().await;
        if version.code.tier() == Tier::Baseline {
            // Once the optimized code is compiled, new calls get instances of it.
            let (code, artifact) = (Arc::downgrade(&version.code), version.artifact.clone());
            let this = Arc::downgrade(self);
            tokio::spawn(async move {
                if Code::tier_up(code, artifact).await.is_some() {
                    if let Some(this) = this.upgrade() {
                        tracing::info!(policy = %this.name, "admission policy runs optimized code");
                        this.publish_status().await;
                    }
                }
            });
        }
        Ok(())
    }

    async fn prepare(&self, bytes: Vec<u8>) -> Result<(Version, String, Duration), RuntimeError> {
        let (artifact, compiled) = self.host.runtime.compiler.compile(bytes).await?;
        let sha = artifact.sha256.clone();
        let deadline = self.host.runtime.options.call_deadline;
        let mut inst = self
            .host
            .runtime
            .instantiate_policy(&compiled.component, self.ctx.clone(), deadline)
            .await?;
        let registration = inst.register().await?;
        let spec = spec(&self.name, &registration)?;
        let deadline = registration
            .timeout_ms
            .map_or(deadline, |t| Duration::from_millis(u64::from(t.max(1))));
        // The registering instance serves the first call (a Python or JavaScript instance takes
        // milliseconds to make), with the policy's own budget.
        inst.limit_deadline(deadline);
        self.grant(&registration).await?;
        if self.unloaded.load(Ordering::SeqCst) {
            // Removed while it loaded: what `grant` just wrote goes too.
            remove_identity(&self.host.service, &self.name).await;
            return Err(RuntimeError::Registration("unloaded while loading".into()));
        }
        let compile_time = compiled.took;
        let code = Code::new(compiled);
        Ok((
            Version {
                spec,
                registration,
                idle: Mutex::new(vec![(code.version(), inst)]),
                code,
                artifact,
                deadline,
                host: self.host.clone(),
                ctx: self.ctx.clone(),
                stats: self.stats.clone(),
                counters: self.counters.clone(),
                calls: self.calls.clone(),
            },
            sha,
            compile_time,
        ))
    }

    /// The declared permissions as a host-managed ClusterRole and binding for
    /// `system:controller:NAME` (what its cache reads are authorized against).
    async fn grant(&self, reg: &wit::Registration) -> Result<(), RuntimeError> {
        let rules: Vec<Value> = reg
            .permissions
            .iter()
            .map(|p| json!({"apiGroups": p.api_groups, "resources": p.resources, "verbs": p.verbs}))
            .collect();
        super::controller::grant(&self.host.service, &self.name, rules).await
    }

    fn fail(&self, e: &RuntimeError, first_load: bool) {
        let msg = e.to_string();
        tracing::warn!(policy = %self.name, error = %msg, "admission policy load failed");
        if first_load {
            self.set_status(|s| {
                s.phase = match e {
                    RuntimeError::Compile(_)
                    | RuntimeError::Read { .. }
                    | RuntimeError::Registration(_) => "Failed".into(),
                    _ => "CrashLoop".into(),
                };
            });
        }
        let prefix = if first_load {
            ""
        } else {
            "reload failed, the previous version keeps running: "
        };
        self.stats.set_last_error(format!("{prefix}{msg}"));
    }

    /// The `Controller` object's status as of now.
    pub fn status_json(&self) -> Value {
        let s = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        let mut st = json!({
            "type": "AdmissionPolicy",
            "phase": s.phase,
            "file": s.file,
            "sha256": s.sha256,
            "wit": WIT,
            "admission": s.registration,
        });
        if let Some(m) = st.as_object_mut() {
            let calls = self.stats.reconciles.load(Ordering::Relaxed);
            m.insert("calls".into(), json!(calls));
            m.insert(
                "denied".into(),
                json!(self.counters.denied.load(Ordering::Relaxed)),
            );
            m.insert(
                "mutated".into(),
                json!(self.counters.mutated.load(Ordering::Relaxed)),
            );
            m.insert(
                "failures".into(),
                json!(self.stats.errors.load(Ordering::Relaxed)),
            );
            m.insert(
                "traps".into(),
                json!(self.stats.traps.load(Ordering::Relaxed)),
            );
            if let Some((msg, at)) = self.stats.last_error() {
                m.insert("lastError".into(), json!({"message": msg, "time": at}));
            }
            if let Some(v) = self.current() {
                m.insert("codeTier".into(), json!(v.code.tier().as_str()));
            }
            m.insert(
                "loadMillis".into(),
                json!((s.load_ms * 10.0).round() / 10.0),
            );
            m.insert(
                "compileMillis".into(),
                json!((s.compile_ms * 10.0).round() / 10.0),
            );
            m.insert(
                "instanceMemoryBytes".into(),
                json!(self.stats.instance_memory.load(Ordering::Relaxed)),
            );
            m.insert("user".into(), json!(user_name(&self.name)));
        }
        st
    }

    pub async fn publish_status(&self) {
        let _writing = self.status_write.lock().await;
        if self.unloaded.load(Ordering::SeqCst) {
            return;
        }
        write_status(&self.host.service, &self.name, self.status_json()).await;
    }

    /// This policy as `/metrics` shows it (calls count as reconciles, failed calls as errors).
    pub fn metered(&self) -> Metered {
        Metered {
            name: self.name.clone(),
            stats: self.stats.clone(),
            queue_depth: 0,
        }
    }

    /// Take the policy out of the chain and remove its objects and identity.
    pub async fn unload(&self) {
        self.requested.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut c) = self.current.write() {
            self.unloaded.store(true, Ordering::SeqCst);
            self.host.service.admission.wasm.remove(&self.name);
            *c = None;
        }
        let _writing = self.status_write.lock().await;
        remove_identity(&self.host.service, &self.name).await;
        self.host.runtime.logs.remove(&self.name);
        tracing::info!(policy = %self.name, "admission policy unloaded");
    }
}

/// The `turtles:admission/host` imports.
impl super::bindings_admission::turtles::admission::host::Host for GuestState {
    fn cache_get(
        &mut self,
        group: String,
        version: String,
        resource: String,
        namespace: String,
        name: String,
    ) -> Option<Vec<u8>> {
        let svc = &self.ctx.service;
        let ri = svc.registry.lookup(&group, &version, &resource)?;
        if !self.ctx.may_read("get", &ri, &namespace, &name) {
            return None;
        }
        let obj = svc.get(&ri, &namespace, &name).ok()?;
        Some(Service::present(&ri, obj).lean_json().to_vec())
    }

    fn cache_list(
        &mut self,
        group: String,
        version: String,
        resource: String,
        namespace: Option<String>,
    ) -> Vec<u8> {
        let svc = &self.ctx.service;
        let Some(ri) = svc.registry.lookup(&group, &version, &resource) else {
            return b"[]".to_vec();
        };
        if !self
            .ctx
            .may_read("list", &ri, namespace.as_deref().unwrap_or(""), "")
        {
            return b"[]".to_vec();
        }
        super::list_json(svc, &ri, namespace.as_deref(), |_| true)
    }

    fn log(&mut self, level: wit::LogLevel, message: String, fields: Vec<(String, String)>) {
        let level = match level {
            wit::LogLevel::Trace => super::wit::LogLevel::Trace,
            wit::LogLevel::Debug => super::wit::LogLevel::Debug,
            wit::LogLevel::Info => super::wit::LogLevel::Info,
            wit::LogLevel::Warn => super::wit::LogLevel::Warn,
            wit::LogLevel::Error => super::wit::LogLevel::Error,
        };
        super::bindings::turtles::controller::host::Host::log(self, level, message, fields);
    }
}

impl super::bindings_admission::turtles::admission::types::Host for GuestState {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_is_not_a_policy_and_a_truncated_file_is_neither() {
        let wasm = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests");
        if let Ok(labeler) = std::fs::read(wasm.join("labeler.wasm")) {
            assert_eq!(exports(&labeler), Exports::Controller);
            assert_eq!(exports(&labeler[..labeler.len() / 2]), Exports::Unknown);
        }
        if let Ok(policy) = std::fs::read(wasm.join("registry-policy.wasm")) {
            assert_eq!(exports(&policy), Exports::Policy);
        }
        assert_eq!(exports(b"not wasm at all"), Exports::Unknown);
        assert_eq!(exports(&[]), Exports::Unknown);
    }
}
