//! One loaded controller: its module (swappable in place), its informers (one per watch, fed by
//! the store's event stream, mapping events to primary keys), its work queue, its workers (each
//! owning a guest instance, replaced after any fault), its resync timer, its identity and RBAC,
//! and its `Controller` status object.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::compile::{Code, Tier};
use super::driver::{self, Outcome, Reconciler, Stats};
use super::queue::{Action, WorkQueue};
use super::{wit, Host, HostCtx, Instance, RuntimeError};
use crate::auth::UserInfo;
use crate::informer::{Change, Reflector, StoreSource, Watcher};
use crate::model::{meta, ResourceInfo};
use crate::service::{Filter, Subresource, WriteOptions};

pub type Key = (String, String);

pub const GROUP: &str = "turtles.dev";
pub const RESOURCE: &str = "controllers";
/// Most initial keys a registration may name.
const MAX_INITIAL_KEYS: usize = 1000;

#[derive(Debug, Clone, Default)]
pub struct StatusInfo {
    pub phase: String,
    pub file: String,
    pub sha256: String,
    pub load_ms: f64,
    pub compile_ms: f64,
    pub watches: Vec<Value>,
    pub permissions: Vec<Value>,
    /// Watched kinds not served (yet, or any more), with why: `group/version/resource` -> message.
    pub waiting: std::collections::BTreeMap<String, String>,
    /// Who the controller acts as (empty: not decided yet, `system:controller:NAME`).
    pub user: String,
    /// The ServiceAccount the registration names: (namespace, name, why it is not usable).
    pub service_account: Option<(String, String, Option<String>)>,
    /// The WIT package the component was built against, e.g. `turtles:controller@0.2.0`.
    pub wit: String,
}

/// A compiled module and what it registered.
pub struct Module {
    /// Baseline code at first for a new component, swapped to the optimized code in place.
    pub code: Arc<Code>,
    /// Keeps the compiled artifact shared with other controllers of identical bytes.
    pub artifact: Arc<super::compile::Artifact>,
    pub registration: wit::Registration,
    pub sha256: String,
    pub generation: u64,
    /// Open once every informer this version's watches need has its initial list in: the
    /// version's workers dispatch nothing before (its initial keys included). Shared with the
    /// previous version when the watches did not change (its informers go on).
    gate: Arc<SyncGate>,
}

/// Workers dispatch only once every informer has its initial list in (or waits for its kind to
/// be served): the number of informers not there yet, per start of the informers.
struct SyncGate(tokio::sync::watch::Sender<usize>);

impl SyncGate {
    fn new(informers: usize) -> Arc<Self> {
        Arc::new(Self(tokio::sync::watch::Sender::new(informers)))
    }

    /// One informer is there (once: `done` remembers).
    fn ready(&self, done: &mut bool) {
        if !std::mem::replace(done, true) {
            self.0.send_modify(|n| *n = n.saturating_sub(1));
        }
    }

    async fn wait(&self) {
        if *self.0.borrow() == 0 {
            return;
        }
        let _ = self.0.subscribe().wait_for(|n| *n == 0).await;
    }
}

pub struct ControllerHandle {
    pub name: String,
    host: Arc<Host>,
    pub queue: Arc<WorkQueue<Key>>,
    module: RwLock<Option<Arc<Module>>>,
    ctx: RwLock<Option<Arc<HostCtx>>>,
    informers: Mutex<Vec<JoinHandle<()>>>,
    /// The cache of the running informers' primary watch, which reconciles read their object
    /// from, as kube-runtime's reconcilers read theirs from the reflector's store (not the
    /// store itself, whose index the API's writes lock). `None` while the primary kind is not
    /// served. Tagged with the informers' start (see [`PrimaryCache`]).
    primary_cache: RwLock<PrimaryCache>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    pub stats: Arc<Stats>,
    pub status: Mutex<StatusInfo>,
    generation: AtomicU64,
    /// Bumped each time the folder hands over new bytes; a crash-loop retry stops once stale.
    requested: AtomicU64,
    /// One load at a time, so a file replaced twice quickly ends with its last bytes.
    load_lock: tokio::sync::Mutex<()>,
    /// Its file went: no load may set it up again, and no status is written for it.
    unloaded: std::sync::atomic::AtomicBool,
    /// The newest bytes handed over and not yet taken by a load.
    latest: Mutex<Option<Arc<Vec<u8>>>>,
    /// When a failed reconcile's whole error (a trap's Wasm backtrace, ~20 lines) was last
    /// logged: at most once a minute, other failures by their first line (a tenant whose objects
    /// make the guest trap on every reconcile made the log grow 5 KB a second).
    traced: Mutex<Option<std::time::Instant>>,
    /// Keys whose object the primary watch stopped showing (deleted, or out of its namespace or
    /// selector now), until they are reconciled: their reconcile gets no object. A key whose
    /// object exists but the primary watch never showed it (an owner outside the selector that a
    /// secondary watch maps to) is not reconciled at all, as kube-runtime calls no reconciler for
    /// an object its reflector does not have.
    departed: Mutex<std::collections::HashSet<Key>>,
}

/// How often a controller's failed reconcile is logged with its whole error.
const TRACE_EVERY: Duration = Duration::from_secs(60);

/// The primary watch's cache, and which start of the informers it belongs to: a start bumps
/// `started` and empties the slot, and an informer fills it only while its start is the latest,
/// so an informer aborted by a reload can never leave its frozen cache behind.
#[derive(Default)]
struct PrimaryCache {
    started: u64,
    /// The cache, and the watch it follows.
    reader: Option<(wit::Watch, crate::informer::Reader)>,
}

pub fn user_name(controller: &str) -> String {
    format!("system:controller:{controller}")
}

fn watch_json(w: &wit::Watch) -> Value {
    let mut v = json!({"group": w.group, "version": w.version, "resource": w.resource});
    if let Some(ns) = &w.namespace {
        v["namespace"] = json!(ns);
    }
    if let Some(l) = &w.label_selector {
        v["labelSelector"] = json!(l);
    }
    if let wit::KeyMapping::Owner(o) = &w.mapping {
        v["owner"] = json!({"group": o.group, "kind": o.kind});
    }
    v
}

fn permission_json(p: &wit::Permission) -> Value {
    json!({"apiGroups": p.api_groups, "resources": p.resources, "verbs": p.verbs})
}

impl ControllerHandle {
    pub fn new(name: &str, host: Arc<Host>, file: &str) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            host,
            queue: WorkQueue::new(),
            module: RwLock::new(None),
            ctx: RwLock::new(None),
            informers: Mutex::new(Vec::new()),
            primary_cache: RwLock::new(PrimaryCache::default()),
            workers: Mutex::new(Vec::new()),
            stats: Arc::default(),
            status: Mutex::new(StatusInfo {
                phase: "Loading".into(),
                file: file.to_owned(),
                ..Default::default()
            }),
            generation: AtomicU64::new(0),
            requested: AtomicU64::new(0),
            load_lock: tokio::sync::Mutex::new(()),
            unloaded: std::sync::atomic::AtomicBool::new(false),
            latest: Mutex::new(None),
            traced: Mutex::new(None),
            departed: Mutex::new(std::collections::HashSet::new()),
        })
    }

    /// Load new bytes from the folder; a first load whose guest fails to start (instantiate or
    /// register) is retried with crash-loop backoff (1 s doubling to 60 s) until it starts or the
    /// file changes.
    pub async fn load_from_folder(self: &Arc<Self>, bytes: Vec<u8>) {
        // Only the newest bytes wait for their turn: a file rewritten many times while a slow
        // compile runs holds one copy, not one per version. The ticket is taken with the slot
        // held, so the newest ticket always goes with the newest bytes.
        let ticket = {
            let mut slot = match self.latest.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            *slot = Some(Arc::new(bytes));
            self.requested.fetch_add(1, Ordering::SeqCst) + 1
        };
        let mut mine: Option<Arc<Vec<u8>>> = None;
        let mut delay = Duration::from_secs(1);
        loop {
            {
                // One load at a time (not held while backing off).
                let _one_at_a_time = self.load_lock.lock().await;
                if self.requested.load(Ordering::SeqCst) != ticket {
                    // Newer bytes arrived meanwhile: they win.
                    return;
                }
                if self.unloaded.load(Ordering::SeqCst) {
                    return;
                }
                if mine.is_none() {
                    mine = self.latest.lock().ok().and_then(|mut s| s.take());
                }
                let Some(bytes) = mine.clone() else {
                    return;
                };
                let loaded = self.load(bytes.as_ref().clone()).await;
                if self.unloaded.load(Ordering::SeqCst) {
                    // Its file went while it loaded: undo what the load set up (identity,
                    // informers, workers), which the unload could not see yet.
                    self.teardown().await;
                    return;
                }
                match loaded {
                    Ok(()) => return,
                    Err(RuntimeError::Compile(_)) | Err(RuntimeError::Read { .. }) => return,
                    Err(_) if self.module().is_some() => return,
                    Err(_) => {}
                }
            }
            self.publish_status().await;
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(60));
        }
    }

    fn set_status(&self, f: impl FnOnce(&mut StatusInfo)) {
        if let Ok(mut s) = self.status.lock() {
            f(&mut s);
        }
    }

    pub fn module(&self) -> Option<Arc<Module>> {
        self.module.read().ok().and_then(|m| m.clone())
    }

    fn host_ctx(&self) -> Option<Arc<HostCtx>> {
        self.ctx.read().ok().and_then(|c| c.clone())
    }

    /// Compile and register `bytes`, then serve them: the first load, or a hot swap that keeps
    /// the queue (and backoff state) and, when the watches are unchanged, the informers.
    pub async fn load(self: &Arc<Self>, bytes: Vec<u8>) -> Result<(), RuntimeError> {
        let started = Instant::now();
        let (artifact, compiled) = match self.host.runtime.compiler.compile(bytes).await {
            Ok(c) => c,
            Err(e) => {
                self.fail(&e, self.module().is_none());
                return Err(e);
            }
        };
        let sha = artifact.sha256.clone();
        // Identity first: register() may not call the API, but reconcile will.
        let ctx = self.ensure_ctx();
        let rt = self.host.runtime.clone();
        let registered = match rt.instantiate(&compiled.component, ctx.clone()).await {
            Ok(mut inst) => inst.register().await.map(|r| (r, inst.wit_version())),
            Err(e) => Err(e),
        };
        let (registration, wit_version) =
            match registered.and_then(|(r, v)| validate(r).map(|r| (r, v))) {
                Ok(r) => r,
                Err(e) => {
                    self.fail(&e, self.module().is_none());
                    return Err(e);
                }
            };
        self.set_status(|s| s.wit = format!("turtles:controller@{wit_version}"));
        if let Err(e) = self.set_identity(&ctx, &registration).await {
            self.fail(&e, self.module().is_none());
            return Err(e);
        }
        if let Err(e) = check_watches(&ctx, &registration) {
            // The previous version keeps running: as whom it ran before.
            if let Some(old) = self.module() {
                if let Err(e) = self.set_identity(&ctx, &old.registration).await {
                    tracing::warn!(controller = %self.name, error = %e, "restoring the running version's identity");
                }
            }
            self.fail(&e, self.module().is_none());
            return Err(e);
        }
        if let Ok(mut w) = ctx.watches.write() {
            *w = registration.watches.clone();
        }
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let old = self.module();
        let watches_changed = old
            .as_ref()
            .is_none_or(|m| m.registration.watches != registration.watches);
        let workers_changed = old.as_ref().is_none_or(|m| {
            m.registration.max_concurrent_reconciles != registration.max_concurrent_reconciles
        });
        // The resync timer runs with the informers: a new period restarts them too.
        let informers_changed = watches_changed
            || old
                .as_ref()
                .is_some_and(|m| m.registration.resync_seconds != registration.resync_seconds);
        let gate = match old.as_ref().filter(|_| !informers_changed) {
            Some(m) => m.gate.clone(),
            None => SyncGate::new(registration.watches.len()),
        };
        let compile_time = compiled.took;
        let baseline = compiled.tier == Tier::Baseline;
        let module = Arc::new(Module {
            code: Code::new(compiled),
            artifact,
            registration,
            sha256: sha.clone(),
            generation,
            gate,
        });
        if let Ok(mut m) = self.module.write() {
            *m = Some(module.clone());
        }
        if informers_changed {
            self.start_informers(&module);
        } else {
            // The same informers go on, but new code reconciles every object again, as a
            // restarted controller does after its relist (the queue drops duplicates).
            for w in &module.registration.watches {
                self.enqueue_all(w);
            }
        }
        // Initial keys: queued now, dispatched once this version's informers have their initial
        // lists in (a worker waits for the gate of the version it calls), at every load.
        for k in &module.registration.initial_keys {
            self.queue.add((k.namespace.clone(), k.name.clone()));
        }
        if workers_changed {
            self.start_workers(&module, ctx);
        }
        let load_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.set_status(|s| {
            s.phase = "Running".into();
            s.sha256 = sha;
            s.compile_ms = compile_time.as_secs_f64() * 1000.0;
            s.load_ms = load_ms;
            s.watches = module.registration.watches.iter().map(watch_json).collect();
            s.permissions = module
                .registration
                .permissions
                .iter()
                .map(permission_json)
                .collect();
        });
        if old.is_some() {
            self.stats.clear_last_error();
        }
        tracing::info!(controller = %self.name, generation, load_ms, swapped = old.is_some(), "controller loaded");
        self.publish_status().await;
        if baseline {
            self.tier_up(&module);
        }
        Ok(())
    }

    /// Once the optimized code of `module` is compiled, its workers swap to it (each makes a
    /// new instance at its next call) and the status says so.
    fn tier_up(self: &Arc<Self>, module: &Arc<Module>) {
        let (code, artifact) = (Arc::downgrade(&module.code), module.artifact.clone());
        let this = Arc::downgrade(self);
        let requested = self.requested.load(Ordering::SeqCst);
        tokio::spawn(async move {
            let Some(took) = Code::tier_up(code, artifact).await else {
                return;
            };
            let Some(this) = this.upgrade() else {
                return;
            };
            if this.requested.load(Ordering::SeqCst) != requested {
                return; // unloaded or replaced meanwhile: its status is another load's
            }
            tracing::info!(controller = %this.name, optimize_ms = took.as_millis() as u64, "controller runs optimized code");
            this.publish_status().await;
        });
    }

    fn fail(&self, e: &RuntimeError, first_load: bool) {
        let msg = e.to_string();
        tracing::warn!(controller = %self.name, error = %msg, "controller load failed");
        self.set_status(|s| {
            if first_load {
                s.phase = match e {
                    RuntimeError::Compile(_) | RuntimeError::Read { .. } => "Failed".into(),
                    _ => "CrashLoop".into(),
                };
            }
        });
        let prefix = if first_load {
            ""
        } else {
            "reload failed, the previous version keeps running: "
        };
        self.stats.set_last_error(format!("{prefix}{msg}"));
    }

    fn ensure_ctx(&self) -> Arc<HostCtx> {
        if let Some(c) = self.host_ctx() {
            return c;
        }
        let user = controller_user(&self.name);
        let token = self
            .host
            .authn
            .issue_internal(&user_name(&self.name), user.clone());
        let ctx = Arc::new(HostCtx {
            name: self.name.clone(),
            identity: RwLock::new(super::Identity {
                user,
                token,
                service_account: None,
            }),
            router: self.host.router.clone(),
            service: self.host.service.clone(),
            watches: RwLock::new(Vec::new()),
            authz: Arc::new(crate::auth::Authorizer::new(
                self.host.service.store.clone(),
            )),
            events: Default::default(),
            log: self.host.runtime.logs.buffer(&self.name),
        });
        if let Ok(mut c) = self.ctx.write() {
            *c = Some(ctx.clone());
        }
        ctx
    }

    /// Who the controller acts as, from its registration: its own `system:controller:NAME`
    /// (granted the declared permissions through a host-managed ClusterRole and binding), or the
    /// ServiceAccount it names, which must exist and is granted nothing by the host (the
    /// controller ClusterRole and binding of an earlier version are removed).
    async fn set_identity(
        &self,
        ctx: &HostCtx,
        reg: &wit::Registration,
    ) -> Result<(), RuntimeError> {
        let owner = user_name(&self.name);
        let Some(sa) = &reg.service_account else {
            if ctx.identity().service_account.is_some() {
                let user = controller_user(&self.name);
                let token = self.host.authn.issue_internal(&owner, user.clone());
                if let Ok(mut i) = ctx.identity.write() {
                    *i = super::Identity {
                        user,
                        token,
                        service_account: None,
                    };
                }
            }
            self.set_status(|s| {
                s.user = owner.clone();
                s.service_account = None;
            });
            return self.ensure_rbac(reg).await;
        };
        let (ns, name) = (sa.namespace.clone(), sa.name.clone());
        let Some(account) = super::service_account(&self.host.service, &ns, &name) else {
            let why = format!(
                "serviceaccount \"{name}\" not found in namespace \"{ns}\": the controller cannot act as it until it is created"
            );
            self.set_status(|s| {
                s.service_account = Some((ns.clone(), name.clone(), Some(why.clone())))
            });
            return Err(RuntimeError::ServiceAccount(why));
        };
        let user = UserInfo {
            name: format!("system:serviceaccount:{ns}:{name}"),
            uid: meta::meta_str(account.head(), "uid")
                .unwrap_or_default()
                .to_owned(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
                crate::auth::AUTHENTICATED.into(),
            ],
            extra: Default::default(),
        };
        let same = {
            let cur = ctx.identity();
            cur.user.name == user.name && cur.user.uid == user.uid
        };
        if !same {
            let token = self.host.authn.issue_internal(&owner, user.clone());
            if let Ok(mut i) = ctx.identity.write() {
                *i = super::Identity {
                    user: user.clone(),
                    token,
                    service_account: Some((ns.clone(), name.clone())),
                };
            }
        }
        self.set_status(|s| {
            s.user = user.name.clone();
            s.service_account = Some((ns, name, None));
        });
        remove_rbac(&self.host.service, &self.name).await;
        Ok(())
    }

    /// The declared permissions as a host-managed ClusterRole and binding.
    async fn ensure_rbac(&self, reg: &wit::Registration) -> Result<(), RuntimeError> {
        grant(&self.host.service, &self.name, role_rules(reg)).await
    }

    fn resource(&self, w: &wit::Watch) -> Option<Arc<ResourceInfo>> {
        self.host
            .service
            .registry
            .lookup(&w.group, &w.version, &w.resource)
    }

    fn start_informers(self: &Arc<Self>, module: &Arc<Module>) {
        let mut tasks = match self.informers.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        let started = {
            let mut slot = self.primary_cache_mut();
            slot.started += 1;
            slot.reader = None;
            slot.started
        };
        for t in tasks.drain(..) {
            t.abort();
        }
        for (i, w) in module.registration.watches.iter().cloned().enumerate() {
            let this = self.clone();
            let gate = module.gate.clone();
            let primary = (i == 0).then_some(started);
            tasks.push(tokio::spawn(async move {
                this.informer(w, &gate, primary).await
            }));
        }
        if let Some(secs) = module.registration.resync_seconds.filter(|s| *s > 0) {
            let this = self.clone();
            let primary = module.registration.watches[0].clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(u64::from(secs)));
                tick.tick().await;
                loop {
                    tick.tick().await;
                    this.enqueue_all(&primary);
                }
            }));
        }
    }

    fn filter(w: &wit::Watch) -> Option<Filter> {
        Filter::new(w.namespace.as_deref(), w.label_selector.as_deref(), None).ok()
    }

    /// Enqueue every cached object of a watch (start-up, relist and resync).
    fn enqueue_all(&self, w: &wit::Watch) {
        let (Some(ri), Some(filter)) = (self.resource(w), Self::filter(w)) else {
            return;
        };
        if let Ok(snap) = self.host.service.store.list(&ri.group_resource(), None) {
            for obj in snap.items.values() {
                if filter.matches(obj) {
                    self.enqueue_for(w, obj.head());
                }
            }
        }
    }

    /// Whether the primary kind (which owner mappings name) is cluster-scoped, as served now.
    fn primary_cluster_scoped(&self) -> bool {
        self.module()
            .and_then(|m| {
                m.registration
                    .watches
                    .first()
                    .and_then(|w| self.resource(w))
            })
            .is_some_and(|ri| !ri.namespaced())
    }

    fn enqueue_for(&self, w: &wit::Watch, obj: &impl meta::Meta) {
        match &w.mapping {
            wit::KeyMapping::SelfKey => self
                .queue
                .add((meta::namespace(obj).to_owned(), meta::name(obj).to_owned())),
            wit::KeyMapping::Owner(owner) => {
                // A cluster-scoped owner's key has no namespace (its dependent's is not its own),
                // as controller-runtime's `EnqueueRequestForOwner` clears it: one key per owner.
                let namespace = if self.primary_cluster_scoped() {
                    ""
                } else {
                    meta::namespace(obj)
                };
                for r in obj.owner_references() {
                    let group = r.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
                    if r.kind == owner.kind && group == owner.group && !r.name.is_empty() {
                        self.queue.add((namespace.to_owned(), r.name.to_owned()));
                    }
                }
            }
        }
    }

    /// `group/version/resource` of a watch, as the status names it.
    fn watch_name(w: &wit::Watch) -> String {
        if w.group.is_empty() {
            format!("{}/{}", w.version, w.resource)
        } else {
            format!("{}/{}/{}", w.group, w.version, w.resource)
        }
    }

    /// Record (or clear) why a watched kind is not being watched, and publish it at once.
    async fn set_waiting(&self, w: &wit::Watch, why: Option<String>) {
        let name = Self::watch_name(w);
        let mut changed = false;
        self.set_status(|s| {
            changed = match &why {
                Some(m) => s.waiting.insert(name, m.clone()).as_ref() != Some(m),
                None => s.waiting.remove(&name).is_some(),
            };
        });
        if changed {
            tracing::info!(controller = %self.name, resource = %w.resource, waiting = ?why, "informer");
            self.publish_status().await;
        }
    }

    fn primary_cache_mut(&self) -> std::sync::RwLockWriteGuard<'_, PrimaryCache> {
        self.primary_cache
            .write()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Put (or take away) the primary watch's cache, if the informers of start `started` are
    /// still the latest.
    fn set_primary_cache(
        &self,
        started: Option<u64>,
        reader: Option<(wit::Watch, crate::informer::Reader)>,
    ) {
        let Some(started) = started else {
            return;
        };
        let mut slot = self.primary_cache_mut();
        if slot.started == started {
            slot.reader = reader;
        }
    }

    /// The primary object `key` as the cache of `watch` (the calling version's primary watch,
    /// of resource `ri`) has it (`Some(None)`: not there); `None` when there is no such cache
    /// with every change the store has (a reload that changed the primary watch races this
    /// call, the informer is still listing, or an event is on its way to it): then the store is
    /// asked. The guest's own reads (`cache-get`, `cache-list`, `api-call`) see the store as it
    /// is, so its primary object must never be older than they are: a ReplicaSet the garbage
    /// collector just deleted, still in a lagging cache, next to its Pods already gone, would
    /// have its controller create new Pods.
    fn primary_cached(
        &self,
        watch: &wit::Watch,
        ri: &ResourceInfo,
        key: &Key,
    ) -> Option<Option<crate::informer::Obj>> {
        let slot = self.primary_cache.read().ok()?;
        let (w, reader) = slot.reader.as_ref()?;
        if w != watch || !reader.is_current() {
            return None;
        }
        // A cluster-scoped object's key has no namespace (an owner's key may carry its
        // dependent's), as the store's lookup ignores it.
        let namespace = if ri.namespaced() { key.0.as_str() } else { "" };
        Some(reader.get(namespace, &key.1))
    }

    /// One kind for as long as the controller runs: wait until it is served (a CRD may come
    /// after the controller), list + watch it, and when it stops being served (its CRD deleted)
    /// wait again; the status says what it waits for. The gate opens for this informer once its
    /// first list is queued, or when it starts waiting for its kind. The primary watch's
    /// informer (`primary`: the start it belongs to) also hands its cache to the reconciles.
    async fn informer(self: Arc<Self>, w: wit::Watch, gate: &SyncGate, primary: Option<u64>) {
        let Some(filter) = Self::filter(&w) else {
            tracing::warn!(controller = %self.name, resource = %w.resource, "invalid watch");
            gate.ready(&mut false);
            return;
        };
        let mut ready = false;
        let mut changes = self.host.service.registry.changes();
        let mut why = format!(
            "waiting for {} to be served ({})",
            Self::watch_name(&w),
            if w.group.is_empty() {
                "the core group has no such resource"
            } else {
                "is its CustomResourceDefinition applied?"
            }
        );
        loop {
            let ri = loop {
                if let Some(ri) = self.resource(&w) {
                    break ri;
                }
                self.set_waiting(&w, Some(why.clone())).await;
                gate.ready(&mut ready);
                if changes.changed().await.is_err() {
                    return;
                }
            };
            self.set_waiting(&w, None).await;
            let gone = async {
                loop {
                    if changes.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                    if self.resource(&w).is_none() {
                        return;
                    }
                }
            };
            let watcher = Watcher::new(
                StoreSource {
                    store: self.host.service.store.clone(),
                    resource: ri.group_resource(),
                    // A watch of one namespace follows that namespace's feed.
                    namespace: w.namespace.clone().filter(|_| ri.namespaced()),
                },
                Some(filter.clone()),
            );
            let reflector = Reflector::new();
            let mut reader = reflector.reader();
            self.set_primary_cache(primary, Some((w.clone(), reader.clone())));
            // The primary watch's objects are made ready for the guest as they enter the cache,
            // as client-go's informers transform what they cache (controller-runtime strips
            // managedFields there): the copy without managedFields that a reconcile hands the
            // guest is cut here, once per version, and the reconcile that follows finds it.
            let prepare = primary.is_some();
            let run = crate::informer::run(watcher, reflector, |c| {
                if prepare {
                    Self::prepare_for_guest(&ri, &c);
                }
                self.on_change(&w, &c)
            });
            let synced = async {
                reader.wait_synced().await;
                gate.ready(&mut ready);
                std::future::pending::<()>().await
            };
            tokio::select! {
                () = run => return,
                () = synced => {}
                () = gone => {
                    self.set_primary_cache(primary, None);
                    why = format!(
                        "{} is no longer served (its CustomResourceDefinition was deleted); waiting for it to be served again",
                        Self::watch_name(&w)
                    );
                }
            }
        }
    }

    /// Cut the copy of a listed or changed object that a reconcile will hand the guest (its
    /// JSON without `managedFields`, kept with that version of the object), when the guest is
    /// handed the object as stored ([`Service::presents_as_stored`]); a converted one is made
    /// at the reconcile.
    fn prepare_for_guest(ri: &ResourceInfo, change: &Change) {
        if let Change::Listed { object, .. } | Change::Applied { object, .. } = change {
            if crate::service::Service::presents_as_stored(ri, object) {
                object.lean_json();
            }
        }
    }

    /// A change of a watched kind (the filter applied): enqueue the primary keys it maps to.
    /// Objects listed, changed, deleted, or forgotten by a relist (deleted while the watch was
    /// cut) all enqueue; a change of owner enqueues the previous owner too.
    fn on_change(&self, w: &wit::Watch, change: &Change) {
        match change {
            Change::Listed { object, .. } => self.enqueue_for(w, object.head()),
            Change::Deleted { object, .. } => {
                if matches!(w.mapping, wit::KeyMapping::SelfKey) {
                    let key = (
                        meta::namespace(object.head()).to_owned(),
                        meta::name(object.head()).to_owned(),
                    );
                    self.departed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(key);
                }
                self.enqueue_for(w, object.head())
            }
            Change::Applied { object, prev } => {
                self.enqueue_for(w, object.head());
                if let (wit::KeyMapping::Owner(_), Some(p)) = (&w.mapping, prev) {
                    self.enqueue_for(w, p.head());
                }
            }
        }
    }

    fn start_workers(self: &Arc<Self>, module: &Arc<Module>, ctx: Arc<HostCtx>) {
        let mut tasks = match self.workers.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        for t in tasks.drain(..) {
            t.abort();
        }
        let n = module
            .registration
            .max_concurrent_reconciles
            .clamp(1, MAX_WORKERS);
        for _ in 0..n {
            let this = self.clone();
            let ctx = ctx.clone();
            tasks.push(tokio::spawn(async move { this.worker(ctx).await }));
        }
    }

    async fn worker(self: Arc<Self>, ctx: Arc<HostCtx>) {
        let (queue, stats) = (self.queue.clone(), self.stats.clone());
        let name = self.name.clone();
        let leading = self.host.service.leadership.receiver();
        let worker = WasmWorker {
            handle: self,
            ctx,
            instance: None,
            primary: None,
            key: wit::ObjectKey {
                namespace: String::new(),
                name: String::new(),
            },
        };
        driver::worker(queue, stats, &name, leading, worker).await;
    }

    /// The `Controller` object's status as of now.
    pub fn status_json(&self) -> Value {
        let s = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        let mut st = json!({
            "phase": s.phase,
            "file": s.file,
            "sha256": s.sha256,
            "watches": s.watches,
            "permissions": s.permissions,
        });
        if let Some(m) = st.as_object_mut() {
            m.extend(self.stats.status_fields(self.queue.len()));
            m.insert(
                "loadMillis".into(),
                json!((s.load_ms * 10.0).round() / 10.0),
            );
            m.insert(
                "compileMillis".into(),
                json!((s.compile_ms * 10.0).round() / 10.0),
            );
            if let Some(module) = self.module() {
                m.insert("codeTier".into(), json!(module.code.tier().as_str()));
            }
            m.insert(
                "instanceMemoryBytes".into(),
                json!(self.stats.instance_memory.load(Ordering::Relaxed)),
            );
            let user = if s.user.is_empty() {
                user_name(&self.name)
            } else {
                s.user.clone()
            };
            m.insert("user".into(), json!(user));
            if !s.wit.is_empty() {
                m.insert("wit".into(), json!(s.wit));
            }
            if let Some((ns, name, _)) = &s.service_account {
                m.insert(
                    "serviceAccount".into(),
                    json!({"namespace": ns, "name": name}),
                );
            }
        }
        // Whether every watched kind is being watched, as a condition kubectl can wait for.
        let watching = if s.waiting.is_empty() {
            json!({"type": "Watching", "status": "True", "reason": "AllWatchesServed",
                   "message": "every watched kind is served and watched"})
        } else {
            let msg: Vec<&str> = s.waiting.values().map(String::as_str).collect();
            json!({"type": "Watching", "status": "False", "reason": "ResourceNotServed",
                   "message": msg.join("; ")})
        };
        let mut conditions = vec![watching];
        if let Some((ns, name, why)) = &s.service_account {
            // Still there? (it may have been deleted since the load: its calls are refused then)
            let why = why.clone().or_else(|| {
                super::service_account(&self.host.service, ns, name).is_none().then(|| {
                    format!("serviceaccount \"{name}\" not found in namespace \"{ns}\": the controller's calls are refused until it is created")
                })
            });
            conditions.push(match why {
                None => json!({"type": "ServiceAccount", "status": "True", "reason": "Found",
                               "message": format!("acting as system:serviceaccount:{ns}:{name}")}),
                Some(m) => json!({"type": "ServiceAccount", "status": "False",
                                  "reason": "NotFound", "message": m}),
            });
        }
        st["conditions"] = json!(conditions);
        st
    }

    /// Write the status to the `Controller` object (created on first use).
    pub async fn publish_status(&self) {
        if self.unloaded.load(Ordering::SeqCst) {
            return;
        }
        write_status(&self.host.service, &self.name, self.status_json()).await;
    }

    /// This controller as `/metrics` shows it.
    pub fn metered(&self) -> driver::Metered {
        driver::Metered {
            name: self.name.clone(),
            stats: self.stats.clone(),
            queue_depth: self.queue.len(),
        }
    }

    /// Stop everything and remove the controller's objects and identity.
    pub async fn unload(&self) {
        self.unloaded.store(true, Ordering::SeqCst);
        self.requested.fetch_add(1, Ordering::SeqCst);
        self.teardown().await;
        tracing::info!(controller = %self.name, "controller unloaded");
    }

    /// Stop everything the controller runs and remove its identity.
    async fn teardown(&self) {
        for set in [&self.informers, &self.workers] {
            if let Ok(mut t) = set.lock() {
                for h in t.drain(..) {
                    h.abort();
                }
            }
        }
        {
            let mut slot = self.primary_cache_mut();
            slot.started += 1;
            slot.reader = None;
        }
        self.queue.shutdown();
        self.host.authn.revoke_internal(&user_name(&self.name));
        remove_identity(&self.host.service, &self.name).await;
        self.host.runtime.logs.remove(&self.name);
    }
}

/// One worker of a Wasm controller: its warm guest instance (of the module generation it was
/// made from; replaced after any fault or swap).
struct WasmWorker {
    handle: Arc<ControllerHandle>,
    ctx: Arc<HostCtx>,
    /// The instance, made from which module generation and code version.
    instance: Option<((u64, u64), Instance)>,
    primary: Option<Arc<Primary>>,
    /// The key handed to the guest: its strings keep their capacity from call to call.
    key: wit::ObjectKey,
}

/// The primary watch of one module version, resolved once: its served resource and its parsed
/// selector (not looked up and parsed again on every call).
struct Primary {
    generation: u64,
    registry_revision: u64,
    ri: Option<Arc<ResourceInfo>>,
    namespace: Option<String>,
    /// `None`: every object; `Some(Err)`: a selector that does not parse shows nothing.
    selector: Option<Result<crate::service::Filter, ()>>,
}

impl Primary {
    /// Would the primary watch show this object?
    fn shows(&self, obj: &crate::store::StoredObject) -> bool {
        if let Some(ns) = self.namespace.as_deref() {
            if meta::namespace(obj.head()) != ns {
                return false;
            }
        }
        match &self.selector {
            None => true,
            Some(Ok(f)) => f.matches(obj),
            Some(Err(())) => false,
        }
    }
}

impl WasmWorker {
    /// The primary watch of `module`, resolved again only when the module version or the set of
    /// served resources changed.
    fn primary(&mut self, module: &Module) -> Arc<Primary> {
        let revision = self.handle.host.service.registry.revision();
        if let Some(p) = self
            .primary
            .as_ref()
            .filter(|p| p.generation == module.generation && p.registry_revision == revision)
        {
            return p.clone();
        }
        let w = &module.registration.watches[0];
        let p = Arc::new(Primary {
            generation: module.generation,
            registry_revision: revision,
            ri: self.handle.resource(w),
            namespace: w.namespace.clone(),
            selector: match w.label_selector.as_deref() {
                None | Some("") => None,
                Some(sel) => {
                    Some(crate::service::Filter::new(None, Some(sel), None).map_err(|_| ()))
                }
            },
        });
        self.primary = Some(p.clone());
        p
    }
}

impl Reconciler<Key> for WasmWorker {
    async fn reconcile(&mut self, key: &Key) -> Outcome {
        let Some(module) = self.handle.module() else {
            return Outcome::done();
        };
        // No dispatch before every informer of this version has its initial list in (open at
        // once in the steady state; closed after a load that changed the watches, until the
        // new informers have listed).
        module.gate.wait().await;
        // Only what the primary watch would have shown: a key can come from the guest's
        // initial keys, and those must not reach objects outside the watch's namespace or
        // selector (which the controller's identity was checked to list and watch at load).
        let primary = self.primary(&module);
        let this = &self.handle;
        let departed = this
            .departed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        let mut hidden = false;
        let object = primary.ri.as_ref().and_then(|ri| {
            // The informer's cache holds what the primary watch shows (its filter is the
            // watch's); without one, the store, filtered here.
            let stored = match this.primary_cached(&module.registration.watches[0], ri, key) {
                Some(cached) => cached,
                None => this
                    .host
                    .service
                    .get(ri, &key.0, &key.1)
                    .ok()
                    .filter(|o| primary.shows(o)),
            };
            if stored.is_none() {
                // Not shown: gone, or there but outside the watch.
                hidden = this
                    .host
                    .service
                    .get(ri, &key.0, &key.1)
                    .is_ok_and(|o| !primary.shows(&o));
            }
            stored.map(|o| crate::service::Service::present(ri, o).lean_json().clone())
        });
        // An object the primary watch does not show, and never stopped showing (a secondary
        // watch's owner outside the selector), is not the controller's: no reconcile. (An
        // initial key is reconciled whatever it names.)
        let initial = module
            .registration
            .initial_keys
            .iter()
            .any(|k| k.namespace == key.0 && k.name == key.1);
        if hidden && !departed && !initial {
            return Outcome::done();
        }
        self.key.namespace.clone_from(&key.0);
        self.key.name.clone_from(&key.1);
        // The call runs right here, on this async worker (on a fiber that yields at every
        // epoch tick): no hop to another thread.
        // An instance of this version's current code (a new one once the optimized code is in).
        let version = (module.generation, module.code.version());
        let inst = match self.instance.take().filter(|(v, _)| *v == version) {
            Some(kept) => Ok(kept),
            None => {
                let (code_version, component) = module.code.get();
                this.host
                    .runtime
                    .instantiate(&component, self.ctx.clone())
                    .await
                    .map(|i| ((module.generation, code_version), i))
            }
        };
        let result = match inst {
            Ok((version, mut i)) => {
                let called = std::time::Instant::now();
                let r = i.reconcile(&self.key, object.as_deref()).await;
                this.stats.guest_call.observe(called.elapsed());
                let memory = i.memory_bytes() as u64;
                if memory > 0 {
                    this.stats.instance_memory.store(memory, Ordering::Relaxed);
                }
                // After a fault the instance cannot be re-entered: drop it.
                if r.is_ok() {
                    self.instance = Some((version, i));
                }
                r
            }
            Err(e) => Err(e),
        };
        // A guest's message is cut before it is kept or logged: it ends up in the Controller's
        // status, which must stay a storable object.
        let cut = |mut m: String| {
            super::logs::cut(&mut m);
            m
        };
        let outcome = match result {
            Ok(wit::Outcome::Done) => Outcome::done(),
            Ok(wit::Outcome::RequeueAfter(ms)) => {
                Action::RequeueAfter(Duration::from_millis(u64::from(ms))).into()
            }
            Ok(wit::Outcome::TransientError(msg)) => {
                Outcome::failed(Action::Retry, cut(msg), false)
            }
            Ok(wit::Outcome::TerminalError(msg)) => {
                Outcome::failed(Action::GiveUp, format!("terminal: {}", cut(msg)), false)
            }
            Err(e) => Outcome::failed(Action::Retry, cut(e.to_string()), true),
        };
        if let Some(e) = &outcome.error {
            let first = e.lines().next().unwrap_or_default();
            let whole = first.len() < e.len() && {
                let mut last = this.traced.lock().unwrap_or_else(|p| p.into_inner());
                let due = last.is_none_or(|t| t.elapsed() >= TRACE_EVERY);
                if due {
                    *last = Some(std::time::Instant::now());
                }
                due
            };
            let error = if whole { e.as_str() } else { first };
            tracing::warn!(controller = %this.name, namespace = %key.0, name = %key.1, error = %error, "reconcile failed");
            // And in the controller's own log (`turtles logs`, `controllers/NAME/log`), as
            // controller-runtime logs "Reconciler error": every failure, its first line.
            let at = if key.0.is_empty() {
                key.1.clone()
            } else {
                format!("{}/{}", key.0, key.1)
            };
            self.ctx
                .log
                .push(format!("ERROR reconcile {at} failed: {first}"));
        }
        outcome
    }
}

/// Write `status` to the `Controller` object `name` (created on first use; nothing is written
/// when it is unchanged). Every controller's status goes through here, built-in or Wasm.
pub async fn write_status(svc: &crate::service::Service, name: &str, mut status: Value) {
    // The host that runs the controllers reports on them; a standby host writes nothing.
    if !svc.leadership.is_leading() {
        return;
    }
    if !svc.leadership.identity().is_empty() {
        if let Some(s) = status.as_object_mut() {
            s.insert(
                "holderIdentity".into(),
                Value::String(svc.leadership.identity().to_owned()),
            );
        }
    }
    let Some(ri) = svc.registry.lookup(GROUP, "v1", RESOURCE) else {
        return;
    };
    let current = svc.get(&ri, "", name).ok();
    if current.as_ref().and_then(|c| c.value().get("status")) == Some(&status) {
        return;
    }
    let obj = json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Controller",
        "metadata": {"name": name},
        "status": status,
    });
    let opts = WriteOptions::default();
    let r = match current {
        None => svc.create(&ri, "", obj, &opts).await.map(|_| ()),
        Some(_) => svc
            .update(&ri, "", name, obj, Subresource::Status, &opts)
            .await
            .map(|_| ()),
    };
    if let Err(e) = r {
        tracing::debug!(controller = %name, error = %e, "status not written");
    }
}

/// `rules` as the host-managed ClusterRole `system:controller:NAME` and its binding to that
/// user (created, or updated in place).
pub(crate) async fn grant(
    svc: &crate::service::Service,
    name: &str,
    rules: Vec<Value>,
) -> Result<(), RuntimeError> {
    let user = user_name(name);
    let labels = json!({"turtles.dev/managed-by": "turtles", "turtles.dev/controller": name});
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": user, "labels": labels},
        "rules": rules,
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": user, "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
    });
    upsert(svc, "clusterroles", role).await?;
    upsert(svc, "clusterrolebindings", binding).await
}

async fn upsert(
    svc: &crate::service::Service,
    resource: &str,
    obj: Value,
) -> Result<(), RuntimeError> {
    let ri = svc
        .registry
        .lookup("rbac.authorization.k8s.io", "v1", resource)
        .ok_or_else(|| {
            RuntimeError::Identity(crate::model::ApiError::internal("RBAC is not served"))
        })?;
    let name = meta::name(&obj).to_owned();
    let opts = WriteOptions::default();
    match svc.create(&ri, "", obj.clone(), &opts).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => svc
            .update(&ri, "", &name, obj, Subresource::Main, &opts)
            .await
            .map(|_| ())
            .map_err(RuntimeError::Identity),
        Err(e) => Err(RuntimeError::Identity(e)),
    }
}

/// `system:controller:NAME`, as its API calls authenticate.
fn controller_user(name: &str) -> UserInfo {
    UserInfo {
        name: user_name(name),
        uid: String::new(),
        groups: vec![crate::auth::AUTHENTICATED.to_owned()],
        extra: Default::default(),
    }
}

/// Delete the ClusterRoleBinding and ClusterRole the host made for `system:controller:NAME`.
async fn remove_rbac(svc: &crate::service::Service, name: &str) {
    let user = user_name(name);
    for resource in ["clusterrolebindings", "clusterroles"] {
        if let Some(ri) = svc
            .registry
            .lookup("rbac.authorization.k8s.io", "v1", resource)
        {
            if svc.get(&ri, "", &user).is_ok() {
                let _ = svc.delete(&ri, "", &user, &Default::default()).await;
            }
        }
    }
}

/// Delete what the host created for a controller: its ClusterRoleBinding and ClusterRole
/// (`system:controller:NAME`) and its `Controller` object.
pub async fn remove_identity(svc: &crate::service::Service, name: &str) {
    // Only the host that runs the controllers cleans up after one (a standby host's folder may
    // simply lack a file the leader has).
    if !svc.leadership.is_leading() {
        return;
    }
    remove_rbac(svc, name).await;
    for (group, resource, n) in [(GROUP, RESOURCE, name)] {
        if let Some(ri) = svc.registry.lookup(group, "v1", resource) {
            let _ = svc.delete(&ri, "", n, &Default::default()).await;
        }
    }
}

/// The rules of a controller's ClusterRole: its declared permissions, then `list` and `watch` on
/// each watched kind — what an informer needs in kube, and what a watch declares: the host lists
/// and watches the kind for the controller, and `cache-get`/`cache-list` read that list. So RBAC
/// shows, and decides, every read a controller makes.
pub fn role_rules(reg: &wit::Registration) -> Vec<Value> {
    let mut rules: Vec<Value> = reg.permissions.iter().map(permission_json).collect();
    for w in &reg.watches {
        let read = json!({"apiGroups": [w.group], "resources": [w.resource],
                          "verbs": ["list", "watch"]});
        if !rules.contains(&read) {
            rules.push(read);
        }
    }
    rules
}

/// Every watch needs `list` and `watch` on its kind (in its namespace, if it has one), as an
/// informer does in kube: checked with the controller's identity once its role is written, so
/// a watch RBAC does not allow fails the load (the status's `lastError` names it) instead of
/// feeding the controller what it may not read.
fn check_watches(ctx: &HostCtx, reg: &wit::Registration) -> Result<(), RuntimeError> {
    let user = ctx.user();
    for w in &reg.watches {
        let ns = w.namespace.as_deref().unwrap_or("");
        for verb in ["list", "watch"] {
            let attrs = crate::auth::Attributes::resource(verb, &w.group, &w.resource, ns, "");
            if !ctx.authz.authorize(&user, &attrs).is_allowed() {
                return Err(RuntimeError::Registration(format!(
                    "watching {} needs list and watch: {}",
                    if w.group.is_empty() {
                        w.resource.clone()
                    } else {
                        format!("{}.{}", w.resource, w.group)
                    },
                    crate::auth::rbac::forbidden_message(&user, &attrs)
                )));
            }
        }
    }
    Ok(())
}

/// Most watches a registration may declare.
const MAX_WATCHES: usize = 64;
/// Most workers (`max-concurrent-reconciles`) a controller may ask for.
const MAX_WORKERS: u32 = 64;
/// Most permission rules, and entries of each rule's lists.
const MAX_PERMISSIONS: usize = 256;
const MAX_PERMISSION_ITEMS: usize = 256;

fn validate(reg: wit::Registration) -> Result<wit::Registration, RuntimeError> {
    if reg.watches.is_empty() {
        return Err(RuntimeError::Registration(
            "at least one watch (the primary kind) is required".into(),
        ));
    }
    // Each watch is an informer and a line of the controller's status, each rule a line of
    // its ClusterRole: bounded, so a registration cannot make the host build thousands.
    if reg.watches.len() > MAX_WATCHES {
        return Err(RuntimeError::Registration(format!(
            "at most {MAX_WATCHES} watches (got {})",
            reg.watches.len()
        )));
    }
    if reg.permissions.len() > MAX_PERMISSIONS {
        return Err(RuntimeError::Registration(format!(
            "at most {MAX_PERMISSIONS} permissions (got {})",
            reg.permissions.len()
        )));
    }
    if let Some(p) = reg.permissions.iter().find(|p| {
        p.api_groups.len() > MAX_PERMISSION_ITEMS
            || p.resources.len() > MAX_PERMISSION_ITEMS
            || p.verbs.len() > MAX_PERMISSION_ITEMS
    }) {
        return Err(RuntimeError::Registration(format!(
            "a permission names at most {MAX_PERMISSION_ITEMS} API groups, resources and verbs each (got {}, {} and {})",
            p.api_groups.len(),
            p.resources.len(),
            p.verbs.len()
        )));
    }
    // Each worker keeps an instance (up to its memory cap) and a blocking thread busy.
    if reg.max_concurrent_reconciles > MAX_WORKERS {
        return Err(RuntimeError::Registration(format!(
            "max-concurrent-reconciles is at most {MAX_WORKERS} (got {})",
            reg.max_concurrent_reconciles
        )));
    }
    if !matches!(reg.watches[0].mapping, wit::KeyMapping::SelfKey) {
        return Err(RuntimeError::Registration(
            "the first watch is the primary kind: its mapping must be self-key".into(),
        ));
    }
    // A label selector the API would refuse (400) is the registration's error, not a watch
    // that shows nothing.
    for w in &reg.watches {
        if let Some(sel) = w.label_selector.as_deref() {
            if let Err(e) = crate::selector::LabelSelector::parse(sel) {
                return Err(RuntimeError::Registration(format!(
                    "the watch of {} has an invalid label selector {sel:?}: {e}",
                    ControllerHandle::watch_name(w)
                )));
            }
        }
    }
    if reg.initial_keys.len() > MAX_INITIAL_KEYS {
        return Err(RuntimeError::Registration(format!(
            "at most {MAX_INITIAL_KEYS} initial keys (got {})",
            reg.initial_keys.len()
        )));
    }
    let primary = &reg.watches[0];
    for k in &reg.initial_keys {
        if k.name.is_empty() || k.name.len() > 253 || k.namespace.len() > 63 {
            return Err(RuntimeError::Registration(format!(
                "initial key {}/{} is not a valid object key",
                k.namespace, k.name
            )));
        }
        if let Some(ns) = primary.namespace.as_deref() {
            if k.namespace != ns {
                return Err(RuntimeError::Registration(format!(
                    "initial key {}/{} is outside the primary watch's namespace {ns:?}",
                    k.namespace, k.name
                )));
            }
        }
    }
    if let Some(sa) = &reg.service_account {
        if !meta::is_dns_label(&sa.namespace) {
            return Err(RuntimeError::Registration(format!(
                "service-account namespace {:?} is not a valid namespace name",
                sa.namespace
            )));
        }
        if !meta::is_dns_subdomain(&sa.name) {
            return Err(RuntimeError::Registration(format!(
                "service-account name {:?} is not a valid name",
                sa.name
            )));
        }
    }
    Ok(reg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(group: &str, resource: &str, namespace: Option<&str>) -> wit::Watch {
        wit::Watch {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            namespace: namespace.map(str::to_owned),
            label_selector: None,
            mapping: wit::KeyMapping::SelfKey,
        }
    }

    fn registration(
        watches: Vec<wit::Watch>,
        permissions: Vec<wit::Permission>,
    ) -> wit::Registration {
        wit::Registration {
            watches,
            max_concurrent_reconciles: 1,
            resync_seconds: None,
            permissions,
            initial_keys: Vec::new(),
            service_account: None,
        }
    }

    /// Workers wait until every informer has its initial list queued (or waits for its kind).
    #[tokio::test]
    async fn the_gate_opens_when_every_informer_is_there() {
        let gate = SyncGate::new(2);
        let closed = || async {
            tokio::time::timeout(Duration::from_millis(20), gate.wait())
                .await
                .is_err()
        };
        assert!(closed().await);
        let (mut a, mut b) = (false, false);
        gate.ready(&mut a);
        gate.ready(&mut a); // once per informer
        assert!(closed().await, "one informer of two is not enough");
        gate.ready(&mut b);
        tokio::time::timeout(Duration::from_secs(5), gate.wait())
            .await
            .expect("the gate stays closed (likely deadlocked)");
    }

    #[test]
    fn too_many_workers_are_refused_not_clamped() {
        let mut reg = registration(vec![watch("", "configmaps", None)], Vec::new());
        reg.max_concurrent_reconciles = MAX_WORKERS;
        assert!(validate(reg.clone()).is_ok());
        reg.max_concurrent_reconciles = MAX_WORKERS + 1;
        let err = validate(reg).expect_err("65 workers");
        assert!(
            err.to_string()
                .contains("max-concurrent-reconciles is at most 64 (got 65)"),
            "{err}"
        );
    }

    #[test]
    fn a_watch_with_an_invalid_label_selector_is_refused() {
        let mut primary = watch("", "configmaps", None);
        primary.label_selector = Some("app in (a,b".into());
        let err =
            validate(registration(vec![primary.clone()], Vec::new())).expect_err("an unclosed set");
        assert!(
            err.to_string()
                .contains("the watch of v1/configmaps has an invalid label selector"),
            "{err}"
        );
        primary.label_selector = Some("app in (a,b)".into());
        assert!(validate(registration(vec![primary], Vec::new())).is_ok());
    }

    #[test]
    fn watches_add_list_and_watch_to_the_declared_permissions() {
        let reg = registration(
            vec![
                watch("", "configmaps", None),
                watch("", "configmaps", Some("a")),
                watch("apps", "deployments", None),
            ],
            vec![wit::Permission {
                api_groups: vec!["".into()],
                resources: vec!["configmaps".into()],
                verbs: vec!["patch".into()],
            }],
        );
        assert_eq!(
            role_rules(&reg),
            vec![
                json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}),
                json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}),
                json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "watch"]}),
            ]
        );
    }

    /// The authorization behind `cache-get`/`cache-list` and the watches' check at load.
    #[tokio::test]
    async fn cache_reads_and_watches_are_authorized_with_the_controllers_identity() {
        let (store, dir) = crate::store::sled_store::temp_store("cache-authz");
        let registry = Arc::new(crate::model::Registry::with_builtins());
        let service = Arc::new(crate::service::Service::new(
            store.clone(),
            registry.clone(),
        ));
        service.bootstrap().await.unwrap();
        assert_eq!(
            service
                .reconcile_bootstrap_policy(crate::auth::rbac::bootstrap_objects())
                .await,
            0
        );
        let user = UserInfo {
            name: user_name("t"),
            uid: String::new(),
            groups: vec![crate::auth::AUTHENTICATED.to_owned()],
            extra: Default::default(),
        };
        let ctx = HostCtx {
            name: "t".into(),
            identity: RwLock::new(super::super::Identity {
                user,
                token: String::new(),
                service_account: None,
            }),
            router: axum::Router::new(),
            service: service.clone(),
            watches: RwLock::new(Vec::new()),
            authz: Arc::new(crate::auth::Authorizer::new(store)),
            events: Default::default(),
            log: Default::default(),
        };
        let cms = registry.lookup("", "v1", "configmaps").unwrap();
        let rbac = |r: &str| {
            registry
                .lookup("rbac.authorization.k8s.io", "v1", r)
                .unwrap()
        };
        let put = |resource: &str, ns: &str, obj: Value| {
            let ri = rbac(resource);
            let svc = service.clone();
            let ns = ns.to_owned();
            async move {
                svc.create(&ri, &ns, obj, &WriteOptions::default())
                    .await
                    .unwrap()
            }
        };
        let reg = registration(vec![watch("", "configmaps", None)], Vec::new());

        // Nothing granted: no reads, and a watch fails the load.
        assert!(!ctx.may_read("get", &cms, "default", "a"));
        assert!(!ctx.may_read("list", &cms, "", ""));
        let e = check_watches(&ctx, &reg).unwrap_err().to_string();
        assert!(
            e.contains("watching configmaps needs list and watch")
                && e.contains("User \"system:controller:t\" cannot list resource \"configmaps\""),
            "{e}"
        );

        // get in one namespace: that object only, no list.
        put(
            "roles",
            "default",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "g", "namespace": "default"},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
        )
        .await;
        put(
            "rolebindings",
            "default",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "g", "namespace": "default"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "g"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "system:controller:t"}]}),
        )
        .await;
        assert!(ctx.may_read("get", &cms, "default", "a"));
        assert!(!ctx.may_read("get", &cms, "other", "a"));
        assert!(!ctx.may_read("list", &cms, "default", ""));

        // The role the host writes for the registration: list + watch everywhere, which also
        // serves cache-get (a list shows every object).
        put(
            "clusterroles",
            "",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "system:controller:t"}, "rules": role_rules(&reg)}),
        )
        .await;
        put(
            "clusterrolebindings",
            "",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "system:controller:t"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:controller:t"},
                   "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "system:controller:t"}]}),
        )
        .await;
        assert!(ctx.may_read("list", &cms, "", ""));
        assert!(ctx.may_read("get", &cms, "other", "a"));
        check_watches(&ctx, &reg).unwrap();
        // Still nothing on kinds it does not watch.
        let secrets = registry.lookup("", "v1", "secrets").unwrap();
        assert!(!ctx.may_read("get", &secrets, "default", "s"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
