//! WebAssembly controllers: the wasmtime engine, the WIT bindings, the host side of the
//! `turtles:controller/host` imports, and (in submodules) each controller's informers, work queue
//! and workers, and the controllers folder with hot reload.
//!
//! Every guest runs sandboxed: WASI is linked with nothing granted (no files, no sockets, no
//! environment; stdout/stderr go to the controller's log), each call has an epoch deadline, each
//! instance a memory cap. A trap, a deadline or a memory bomb fails that reconcile; the instance
//! is thrown away and a fresh one serves the next call.

pub mod compile;
pub mod controller;
pub mod driver;
pub mod folder;
pub mod logs;
mod output;
pub mod policy;
pub mod queue;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::auth::{Authenticator, UserInfo};
use crate::model::ResourceInfo;
use crate::service::Service;
use output::GuestOutput;

/// Generated from `wit/controller.wit` (`turtles:controller@0.2.0`; in its own module: the WIT
/// package is also named `turtles`).
mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "controller",
        additional_derives: [PartialEq],
        // Guests run on the async workers (on a fiber, yielding at every epoch tick); the imports
        // that wait, the in-process API call and recording an Event, are async, the others
        // answer at once.
        imports: {
            "turtles:controller/host.api-call": async,
            "turtles:controller/host.record-event": async,
        },
        exports: { default: async },
    });
}

/// Generated from `wit/0.1.0/controller.wit`: components built against 0.1.0 keep loading
/// unchanged; their calls are converted to and from the 0.2.0 types at the boundary.
mod bindings_v01 {
    wasmtime::component::bindgen!({
        path: "../wit/0.1.0",
        world: "controller",
        imports: { "turtles:controller/host.api-call": async },
        exports: { default: async },
    });
}

/// Generated from `wit/admission/admission.wit` (`turtles:admission@0.1.0`): admission policies.
mod bindings_admission {
    wasmtime::component::bindgen!({
        path: "../wit/admission",
        world: "policy",
        exports: { default: async },
    });
}

pub mod events;
mod v01;

pub use bindings::turtles::controller::types as wit;
pub use bindings_admission::turtles::admission::types as wit_admission;

/// The world a component was built against, picked by its exports' types when it is
/// instantiated (a 0.1.0 registration is a different record than a 0.2.0 one).
enum Bindings {
    V02(bindings::Controller),
    V01(bindings_v01::Controller),
}

/// Epoch ticks per second (the deadline's granularity).
const TICK: Duration = Duration::from_millis(10);
/// Stack of the fiber a guest call runs on (wasm's own stack is capped at wasmtime's default
/// 512 KiB; the rest is for host functions, the API call's handler included).
const ASYNC_STACK: usize = 4 << 20;
/// Bytes of guest stdout/stderr kept per call (the rest is counted and dropped).
const OUTPUT_CAP: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("configuring wasmtime: {0}")]
    Engine(String),
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("compiling the component: {0}")]
    Compile(String),
    #[error("instantiating the component: {0}")]
    Instantiate(String),
    #[error("the guest failed: {0}")]
    Guest(String),
    #[error("the registration is invalid: {0}")]
    Registration(String),
    #[error("setting up the controller's identity: {0}")]
    Identity(crate::model::ApiError),
    #[error("{0}")]
    ServiceAccount(String),
}

pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// Limits and knobs for every controller.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Wall-clock budget of one guest call (register or reconcile).
    pub call_deadline: Duration,
    /// Linear memory an instance may grow to.
    pub memory_limit: usize,
    /// Where compiled artifacts are cached by content hash.
    pub cache_dir: PathBuf,
    /// Run new components on baseline (Winch) code while their optimized code compiles.
    pub baseline: bool,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            call_deadline: Duration::from_secs(2),
            memory_limit: 128 << 20,
            cache_dir: PathBuf::from("turtles-data/cache"),
            baseline: true,
        }
    }
}

/// What the host imports need: the API to call (in-process, as the controller's identity) and
/// the store to read the informer cache from.
pub struct HostCtx {
    pub name: String,
    /// Who the controller acts as: `system:controller:NAME`, or the ServiceAccount its
    /// registration names (set at each load, before the workers run).
    pub identity: std::sync::RwLock<Identity>,
    pub router: axum::Router,
    pub service: Arc<Service>,
    /// What the controller registered: the informer cache serves only these kinds, filtered as
    /// the watches are (anything else goes through `api-call` and RBAC).
    pub watches: std::sync::RwLock<Vec<wit::Watch>>,
    /// The RBAC authorizer the cache reads are checked with, as the API calls are.
    pub authz: Arc<crate::auth::Authorizer>,
    /// `record-event`'s rate limit.
    pub events: events::Limiter,
    /// The controller's recent log lines (`controllers/NAME/log`).
    pub log: Arc<logs::LogBuffer>,
}

/// A controller's user and the in-memory token its API calls carry.
#[derive(Clone)]
pub struct Identity {
    pub user: UserInfo,
    pub token: String,
    /// The ServiceAccount (namespace, name) the controller acts as, if it does.
    pub service_account: Option<(String, String)>,
}

impl HostCtx {
    pub fn user(&self) -> UserInfo {
        self.identity
            .read()
            .map(|i| i.user.clone())
            .unwrap_or_else(|p| p.into_inner().user.clone())
    }

    pub fn identity(&self) -> Identity {
        self.identity
            .read()
            .map(|i| i.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Whether the identity is usable: always for `system:controller:NAME`; for a
    /// ServiceAccount, while the account exists (kube refuses a deleted account's tokens).
    pub fn account_exists(&self) -> bool {
        let id = self.identity();
        match id.service_account {
            None => true,
            // The same account: one deleted and re-created has another uid.
            Some((ns, name)) => service_account(&self.service, &ns, &name).is_some_and(|a| {
                crate::model::meta::meta_str(a.head(), "uid").unwrap_or("") == id.user.uid
            }),
        }
    }

    /// Whether the controller's identity may read from the cache what `verb` names: `get` of
    /// one object (holding `list` on the kind there is enough too: a list shows every object,
    /// as client-go's listers read their informer's list) or `list` of a namespace (`""`: all).
    pub fn may_read(&self, verb: &str, ri: &ResourceInfo, namespace: &str, name: &str) -> bool {
        let attrs = |verb: &str, name: &str| {
            crate::auth::Attributes::resource(verb, &ri.group, &ri.resource, namespace, name)
        };
        let user = self.user();
        if !self.account_exists() {
            return false;
        }
        let allowed = |a: crate::auth::Attributes| self.authz.authorize(&user, &a).is_allowed();
        let ok = match verb {
            "get" => allowed(attrs("get", name)) || allowed(attrs("list", "")),
            _ => allowed(attrs("list", "")),
        };
        if !ok {
            tracing::warn!(
                controller = %self.name,
                "{}",
                crate::auth::rbac::forbidden_message(&user, &attrs(verb, name))
            );
        }
        ok
    }

    /// The watch that makes `obj` of this kind visible in the cache, if any.
    fn cached(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        obj: &crate::store::StoredObject,
    ) -> bool {
        let Ok(watches) = self.watches.read() else {
            return false;
        };
        watches.iter().any(|w| {
            w.group == group
                && w.version == version
                && w.resource == resource
                && crate::service::Filter::new(
                    w.namespace.as_deref(),
                    w.label_selector.as_deref(),
                    None,
                )
                .is_ok_and(|f| f.matches(obj))
        })
    }

    fn watches_kind(&self, group: &str, version: &str, resource: &str) -> bool {
        self.watches.read().is_ok_and(|ws| {
            ws.iter()
                .any(|w| w.group == group && w.version == version && w.resource == resource)
        })
    }
}

/// A store's data: WASI with nothing granted, the memory limit, and the host context.
/// The store's resource limiter: the memory cap (wasmtime's `StoreLimits`), and a count of the
/// linear memory the instance holds, reported in the controller's status.
struct Limiter {
    inner: StoreLimits,
    memory_bytes: usize,
    /// The cap on `memory_bytes`: all of the instance's memories together, not each one.
    memory_limit: usize,
    /// Elements of all the instance's tables together, capped at [`TABLE_ELEMENTS`].
    table_elements: usize,
}

/// Table elements an instance's tables may hold together (8 bytes or so each; interpreters'
/// function tables hold tens of thousands).
const TABLE_ELEMENTS: usize = 4_000_000;

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.inner.memory_growing(current, desired, maximum)?;
        if !allowed {
            return Ok(false);
        }
        let total = self
            .memory_bytes
            .saturating_add(desired.saturating_sub(current));
        if total > self.memory_limit {
            // Several memories of the instance under the cap each are still over it together.
            return Err(wasmtime::Error::msg(format!(
                "forcing trap when growing memory to {desired} bytes: the instance's memories would hold {total} bytes, more than the {} allowed",
                self.memory_limit
            )));
        }
        self.memory_bytes = total;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if !self.inner.table_growing(current, desired, maximum)? {
            return Ok(false);
        }
        let total = self
            .table_elements
            .saturating_add(desired.saturating_sub(current));
        if total > TABLE_ELEMENTS {
            return Err(wasmtime::Error::msg(format!(
                "forcing trap when growing table to {desired} elements: the instance's tables would hold {total} elements, more than the {TABLE_ELEMENTS} allowed"
            )));
        }
        self.table_elements = total;
        Ok(true)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

pub struct GuestState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: Limiter,
    ctx: Arc<HostCtx>,
    output: GuestOutput,
    /// Bytes of output logged over the instance's life.
    printed: u64,
    /// When the current call began, and how long it may run.
    call_started: std::time::Instant,
    call_deadline: Duration,
    /// Bytes the `log` import took in the current call ([`OUTPUT_CAP`] at most, as printing).
    logged: usize,
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wit::Host for GuestState {}

/// The shared engines and their linkers.
pub struct Runtime {
    /// The optimizing engine (Cranelift).
    pub engine: Engine,
    linker: Linker<GuestState>,
    /// The baseline engine (Winch) and its linker: new components run on it until their
    /// optimized code is compiled (`compile`).
    baseline: Option<(Engine, Linker<GuestState>)>,
    pub options: RuntimeOptions,
    /// Background compiles (lanes by size, identical bytes compiled once, two tiers).
    pub compiler: compile::Compiler,
    /// Every controller's recent log lines.
    pub logs: logs::Logs,
}

/// A linker with WASI (nothing granted) and every world's host imports.
fn new_linker(engine: &Engine) -> Result<Linker<GuestState>> {
    let e = |e: wasmtime::Error| RuntimeError::Engine(e.to_string());
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(e)?;
    bindings::Controller::add_to_linker::<GuestState, HasSelf<GuestState>>(&mut linker, |s| s)
        .map_err(e)?;
    bindings_v01::Controller::add_to_linker::<GuestState, HasSelf<GuestState>>(&mut linker, |s| s)
        .map_err(e)?;
    bindings_admission::Policy::add_to_linker::<GuestState, HasSelf<GuestState>>(
        &mut linker,
        |s| s,
    )
    .map_err(e)?;
    Ok(linker)
}

impl Runtime {
    pub fn new(options: RuntimeOptions) -> Result<Arc<Self>> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        // Host code runs on the guest's fiber too (the API call's handler): room for both.
        config.async_stack_size(ASYNC_STACK);
        std::fs::create_dir_all(&options.cache_dir).map_err(|source| RuntimeError::Read {
            path: options.cache_dir.clone(),
            source,
        })?;
        let mut cache_config = wasmtime::CacheConfig::new();
        cache_config.with_directory(options.cache_dir.join("wasmtime"));
        let cache =
            wasmtime::Cache::new(cache_config).map_err(|e| RuntimeError::Engine(e.to_string()))?;
        config.cache(Some(cache));
        let engine = Engine::new(&config).map_err(|e| RuntimeError::Engine(e.to_string()))?;
        let linker = new_linker(&engine)?;
        let baseline = if options.baseline {
            // Winch: the same limits, epochs and cache; no tail calls (Winch has none; a
            // component that uses them is compiled optimized at once).
            config.strategy(wasmtime::Strategy::Winch);
            config.wasm_tail_call(false);
            let engine = Engine::new(&config).map_err(|e| RuntimeError::Engine(e.to_string()))?;
            let linker = new_linker(&engine)?;
            Some((engine, linker))
        } else {
            None
        };
        // The epoch ticker: ends with the engines.
        let weak = [Some(engine.weak()), baseline.as_ref().map(|b| b.0.weak())];
        std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || loop {
                std::thread::sleep(TICK);
                let mut alive = false;
                for e in weak.iter().flatten().filter_map(|w| w.upgrade()) {
                    e.increment_epoch();
                    alive = true;
                }
                if !alive {
                    return;
                }
            })
            .map_err(|e| RuntimeError::Engine(e.to_string()))?;
        let engines = compile::Engines {
            optimizing: engine.clone(),
            baseline: baseline.as_ref().map(|b| b.0.clone()),
        };
        Ok(Arc::new(Self {
            compiler: compile::Compiler::new(engines, Some(options.cache_dir.join("optimized")))?,
            engine,
            linker,
            baseline,
            options,
            logs: Default::default(),
        }))
    }

    /// The linker of the engine that compiled `component`.
    fn linker_for(&self, component: &Component) -> &Linker<GuestState> {
        match &self.baseline {
            Some((engine, linker)) if Engine::same(component.engine(), engine) => linker,
            _ => &self.linker,
        }
    }

    /// A fresh instance with its own store (start functions run on a fiber, like calls).
    pub async fn instantiate(&self, component: &Component, ctx: Arc<HostCtx>) -> Result<Instance> {
        let mut store = self.store(component.engine(), ctx, self.options.call_deadline);
        let instantiate = |e: wasmtime::Error| RuntimeError::Instantiate(format!("{e:#}"));
        let pre = self
            .linker_for(component)
            .instantiate_pre(component)
            .map_err(instantiate)?;
        // 0.2.0 first; a component whose exports do not type-check against it is tried as 0.1.0
        // (if neither fits, the 0.2.0 error says why).
        let bindings = match bindings::ControllerPre::new(pre.clone()) {
            Ok(p) => Bindings::V02(p.instantiate_async(&mut store).await.map_err(instantiate)?),
            Err(e) => match bindings_v01::ControllerPre::new(pre) {
                Ok(p) => Bindings::V01(p.instantiate_async(&mut store).await.map_err(instantiate)?),
                Err(_) => return Err(instantiate(e)),
            },
        };
        Ok(Instance { store, bindings })
    }

    /// A fresh instance of an admission policy (`turtles:admission`), each call of which may
    /// run for `deadline` (never more than the runtime's call deadline).
    pub async fn instantiate_policy(
        &self,
        component: &Component,
        ctx: Arc<HostCtx>,
        deadline: Duration,
    ) -> Result<policy::PolicyInstance> {
        let mut store = self.store(
            component.engine(),
            ctx,
            deadline.min(self.options.call_deadline),
        );
        let instantiate = |e: wasmtime::Error| RuntimeError::Instantiate(format!("{e:#}"));
        let pre = self
            .linker_for(component)
            .instantiate_pre(component)
            .map_err(instantiate)?;
        let bindings = bindings_admission::PolicyPre::new(pre)
            .map_err(instantiate)?
            .instantiate_async(&mut store)
            .await
            .map_err(instantiate)?;
        Ok(policy::PolicyInstance::new(store, bindings))
    }

    /// A guest's store: WASI with nothing granted, the memory cap, the epoch deadline.
    fn store(
        &self,
        engine: &Engine,
        ctx: Arc<HostCtx>,
        call_deadline: Duration,
    ) -> Store<GuestState> {
        let output = GuestOutput::new(OUTPUT_CAP);
        let mut builder = WasiCtx::builder();
        builder.stdout(output.clone()).stderr(output.clone());
        let state = GuestState {
            wasi: builder.build(),
            table: ResourceTable::new(),
            limits: Limiter {
                inner: StoreLimitsBuilder::new()
                    .memory_size(self.options.memory_limit)
                    .table_elements(TABLE_ELEMENTS)
                    // Far above what components' core instances, tables and memories number
                    // (wasmtime's defaults are 10,000 each).
                    .instances(1_000)
                    .tables(1_000)
                    .memories(100)
                    .trap_on_grow_failure(true)
                    .build(),
                memory_bytes: 0,
                memory_limit: self.options.memory_limit,
                table_elements: 0,
            },
            ctx,
            output,
            printed: 0,
            call_started: std::time::Instant::now(),
            call_deadline,
            logged: 0,
        };
        let mut store = Store::new(engine, state);
        store.limiter(|s| &mut s.limits);
        // At every epoch tick the guest yields to the executor (so it holds an async worker
        // for one tick at most), until the call's wall-clock budget is spent: then it traps.
        store.epoch_deadline_callback(|store| {
            let s = store.data();
            if s.call_started.elapsed() >= s.call_deadline {
                Ok(wasmtime::UpdateDeadline::Interrupt)
            } else {
                Ok(wasmtime::UpdateDeadline::YieldCustom(
                    1,
                    Box::pin(tokio::task::yield_now()),
                ))
            }
        });
        store.set_epoch_deadline(1);
        store
    }
}

/// One live guest instance.
pub struct Instance {
    store: Store<GuestState>,
    bindings: Bindings,
}

impl Instance {
    /// Bytes of linear memory this instance holds (all its core memories).
    pub fn memory_bytes(&self) -> usize {
        self.store.data().limits.memory_bytes
    }

    /// Start a call's clock (the epoch callback interrupts it once the budget is spent).
    fn arm(&mut self) {
        arm(&mut self.store);
    }

    /// Flush what the guest printed to the controller's log; the panic it printed, if any.
    fn drain_output(&mut self) -> Option<String> {
        drain_output(&mut self.store)
    }

    /// The WIT package version the component was built against.
    pub fn wit_version(&self) -> &'static str {
        match self.bindings {
            Bindings::V02(_) => "0.2.0",
            Bindings::V01(_) => "0.1.0",
        }
    }

    pub async fn register(&mut self) -> Result<wit::Registration> {
        self.arm();
        let r = match &self.bindings {
            Bindings::V02(b) => b.call_register(&mut self.store).await,
            Bindings::V01(b) => b.call_register(&mut self.store).await.map(Into::into),
        };
        let panic = self.drain_output();
        r.map_err(|e| RuntimeError::Guest(describe_failure(&e, panic)))
    }

    pub async fn reconcile(
        &mut self,
        key: &wit::ObjectKey,
        object: Option<&[u8]>,
    ) -> Result<wit::Outcome> {
        self.arm();
        let r = match &self.bindings {
            Bindings::V02(b) => b.call_reconcile(&mut self.store, key, object).await,
            Bindings::V01(b) => b
                .call_reconcile(&mut self.store, &key.clone().into(), object)
                .await
                .map(Into::into),
        };
        let panic = self.drain_output();
        r.map_err(|e| RuntimeError::Guest(describe_failure(&e, panic)))
    }
}

/// Start a call's clock (the epoch callback interrupts it once the budget is spent).
fn arm(store: &mut Store<GuestState>) {
    store.data_mut().call_started = std::time::Instant::now();
    store.data_mut().logged = 0;
    store.set_epoch_deadline(1);
}

/// Flush what the guest printed to the controller's log; the panic it printed, if any (Rust's
/// `panicked at FILE:LINE:COL:` and the message's first line after it), for the call's error.
fn drain_output(store: &mut Store<GuestState>) -> Option<String> {
    let printed = store.data().output.take();
    if printed.bytes.is_empty() && printed.dropped == 0 {
        return None;
    }
    store.data_mut().printed += printed.bytes.len() as u64;
    let ctx = &store.data().ctx;
    let name = &ctx.name;
    let text = String::from_utf8_lossy(&printed.bytes);
    for line in text.lines() {
        tracing::info!(controller = %name, "guest: {line}");
        ctx.log.push(format!("OUTPUT {line}"));
    }
    if printed.dropped > 0 {
        ctx.log.push(format!(
            "WARN printed more than {OUTPUT_CAP} bytes in one call; {} bytes not logged",
            printed.dropped
        ));
        tracing::warn!(
            controller = %name,
            dropped = printed.dropped,
            "guest printed more than {OUTPUT_CAP} bytes in one call; the rest is not logged"
        );
    }
    panic_of(&text)
}

/// The last panic in a call's printed output: `panicked at FILE:LINE:COL: MESSAGE` (Rust prints
/// the message on the line after the location), at most 512 bytes.
fn panic_of(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().rposition(|l| l.contains("panicked at "))?;
    let from = lines[at].find("panicked at ")?;
    let mut out = lines[at][from..].trim_end().to_owned();
    if let Some(message) = lines.get(at + 1).filter(|m| !m.trim().is_empty()) {
        out.push(' ');
        out.push_str(message.trim());
    }
    if out.len() > 512 {
        let mut end = 512;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    Some(out)
}

/// A call's failure as the controller's status and log show it: what happened on its first
/// line (with the guest's panic message, if it printed one), a trap's Wasm backtrace after it.
fn describe_failure(e: &wasmtime::Error, panic: Option<String>) -> String {
    let text = describe_trap(e);
    let Some(panic) = panic else {
        return text;
    };
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first} ({panic})\n{rest}"),
        None => format!("{text} ({panic})"),
    }
}

fn describe_trap(e: &wasmtime::Error) -> String {
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        return match trap {
            wasmtime::Trap::Interrupt => {
                "deadline exceeded (the call ran too long and was interrupted)".into()
            }
            // Its Wasm backtrace, as for any other failure (function names where the
            // component kept its name section).
            other => match e.downcast_ref::<wasmtime::WasmBacktrace>() {
                Some(bt) => format!("trap: {other}\n{bt}"),
                None => format!("trap: {other}"),
            },
        };
    }
    let text = format!("{e:#}");
    if text.contains("memory") && (text.contains("limit") || text.contains("grow")) {
        return format!("memory limit exceeded: {text}");
    }
    text
}

/// The ServiceAccount `namespace/name`, if it exists.
pub fn service_account(
    service: &Service,
    namespace: &str,
    name: &str,
) -> Option<Arc<crate::store::StoredObject>> {
    let ri = service.registry.lookup("", "v1", "serviceaccounts")?;
    service.get(&ri, namespace, name).ok()
}

/// sha256 of a file's bytes, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The controller's name: its file's stem.
pub fn controller_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    Some(stem.to_owned())
}

impl GuestState {
    /// What is left of the current call's wall-clock budget: a host import the guest waits on
    /// may not outlast it (the epoch deadline only interrupts guest code).
    pub(crate) fn remaining(&self) -> Duration {
        self.call_deadline
            .saturating_sub(self.call_started.elapsed())
            .max(Duration::from_millis(1))
    }
}

/// The answer to an API call cut short by the call's deadline (kube's 504 shape).
pub(crate) fn timed_out_call() -> wit::HttpResponse {
    wit::HttpResponse {
        status: 504,
        headers: vec![("content-type".into(), "application/json".into())],
        body: crate::model::ApiError::new(
            504,
            "Timeout",
            "the API call did not finish within the reconcile's deadline",
        )
        .to_status()
        .to_string()
        .into_bytes(),
    }
}

/// One in-process API call as the controller's identity: the same router, authentication and
/// authorization as any client.
pub(crate) async fn call_api(ctx: &HostCtx, request: wit::HttpRequest) -> wit::HttpResponse {
    let fail = |status: u16, message: &str| wit::HttpResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: crate::model::ApiError::new(
            status,
            match status {
                400 => "BadRequest",
                401 => "Unauthorized",
                _ => "InternalError",
            },
            message,
        )
        .to_status()
        .to_string()
        .into_bytes(),
    };
    // Anything kube counts as long-running (a watch however its parameter is spelled, a
    // followed log, exec, attach, port-forward, a proxy) would hold the guest's call past its
    // deadline: controllers get changes through their registration's watches.
    let long_running = match (
        axum::http::Method::from_bytes(request.method.as_bytes()),
        request.path.parse::<axum::http::Uri>(),
    ) {
        (Ok(m), Ok(u)) => {
            // kube's long-running check counts a `log` subresource, followed or not. A path
            // that does not decode is refused by the router.
            crate::api::request_info::RequestInfo::parse(&m, &u)
                .is_ok_and(|info| info.is_long_running())
        }
        _ => false,
    };
    if long_running {
        return fail(
            400,
            "controllers receive changes through their registration's watches, not watch requests, logs or streams",
        );
    }
    let identity = ctx.identity();
    if !ctx.account_exists() {
        // What kube answers a token whose ServiceAccount is gone.
        return fail(401, "Unauthorized");
    }
    let mut builder = axum::http::Request::builder()
        .method(request.method.as_str())
        .uri(request.path.as_str());
    for (k, v) in &request.headers {
        if !k.eq_ignore_ascii_case("authorization")
            && !k.to_ascii_lowercase().starts_with("impersonate-")
        {
            builder = builder.header(k.as_str(), v.as_str());
        }
    }
    builder = builder.header("authorization", format!("Bearer {}", identity.token));
    // A client names itself in its user agent, which kube makes the manager of the fields a
    // write sets when it gives no `fieldManager` (`managerOrUserAgent`): a guest that sends
    // none is named after its controller (`deployment/turtles`, manager `deployment`), as
    // kube-controller-manager's clients are after it.
    if !request
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
    {
        if let Ok(agent) = axum::http::HeaderValue::from_str(&format!("{}/turtles", ctx.name)) {
            builder = builder.header(axum::http::header::USER_AGENT, agent);
        }
    }
    // Its share of the in-flight limits is the controller's own, whatever it acts as (a
    // ServiceAccount's calls would otherwise share the account's namespace's).
    builder = builder.extension(crate::api::inflight::ControllerCall(ctx.name.clone()));
    let req = match builder.body(axum::body::Body::from(request.body)) {
        Ok(r) => r,
        Err(e) => return fail(400, &format!("malformed request: {e}")),
    };
    let router = ctx.router.clone();
    let result = async move {
        use tower::ServiceExt;
        let resp = router.oneshot(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let headers: Vec<(String, String)> = resp
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_owned())))
            .collect();
        let body = axum::body::to_bytes(resp.into_body(), 64 << 20)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(wit::HttpResponse {
            status,
            headers,
            body: body.to_vec(),
        })
    }
    .await;
    result.unwrap_or_else(|e| fail(500, &e))
}

/// The host imports of 0.2.0 (0.1.0's, in `v01`, are these without `record-event`).
impl bindings::turtles::controller::host::Host for GuestState {
    async fn api_call(&mut self, request: wit::HttpRequest) -> wit::HttpResponse {
        let ctx = self.ctx.clone();
        match tokio::time::timeout(self.remaining(), call_api(&ctx, request)).await {
            Ok(resp) => resp,
            Err(_) => timed_out_call(),
        }
    }

    async fn record_event(&mut self, event: wit::Event) -> std::result::Result<(), String> {
        let ctx = self.ctx.clone();
        match tokio::time::timeout(self.remaining(), events::record(&ctx, event)).await {
            Ok(r) => r,
            Err(_) => Err("event not recorded: the call's deadline passed".to_owned()),
        }
    }

    fn cache_get(
        &mut self,
        group: String,
        version: String,
        resource: String,
        namespace: String,
        name: String,
    ) -> Option<Vec<u8>> {
        if !self.ctx.watches_kind(&group, &version, &resource) {
            return None;
        }
        let ri = self
            .ctx
            .service
            .registry
            .lookup(&group, &version, &resource)?;
        if !self.ctx.may_read("get", &ri, &namespace, &name) {
            return None;
        }
        let obj = self.ctx.service.get(&ri, &namespace, &name).ok()?;
        if !self.ctx.cached(&group, &version, &resource, &obj) {
            return None;
        }
        Some(Service::present(&ri, obj).lean_json().to_vec())
    }

    fn cache_list(
        &mut self,
        group: String,
        version: String,
        resource: String,
        namespace: Option<String>,
    ) -> Vec<u8> {
        if !self.ctx.watches_kind(&group, &version, &resource) {
            return b"[]".to_vec();
        }
        let Some(ri) = self
            .ctx
            .service
            .registry
            .lookup(&group, &version, &resource)
        else {
            return b"[]".to_vec();
        };
        if !self
            .ctx
            .may_read("list", &ri, namespace.as_deref().unwrap_or(""), "")
        {
            return b"[]".to_vec();
        }
        list_json(&self.ctx.service, &ri, namespace.as_deref(), |obj| {
            self.ctx.cached(&group, &version, &resource, obj)
        })
    }

    fn log(&mut self, level: wit::LogLevel, message: String, fields: Vec<(String, String)>) {
        let name = &self.ctx.name;
        // One line, cut before anything copies it: a guest's message may be huge.
        let mut line = message;
        for (k, v) in &fields {
            if line.len() > logs::MAX_LINE {
                break;
            }
            line.push_str(&format!(" {k}={v}"));
        }
        logs::cut(&mut line);
        // As printing: at most OUTPUT_CAP bytes a call, then one warning and nothing more.
        if self.logged >= OUTPUT_CAP {
            return;
        }
        self.logged += line.len();
        if self.logged > OUTPUT_CAP {
            let warning = format!(
                "WARN logged more than {OUTPUT_CAP} bytes in one call; the rest of this call's log is dropped"
            );
            tracing::warn!(controller = %name, "{warning}");
            self.ctx.log.push(warning);
            return;
        }
        let tag = match level {
            wit::LogLevel::Trace => {
                tracing::trace!(controller = %name, "{line}");
                "TRACE"
            }
            wit::LogLevel::Debug => {
                tracing::debug!(controller = %name, "{line}");
                "DEBUG"
            }
            wit::LogLevel::Info => {
                tracing::info!(controller = %name, "{line}");
                "INFO"
            }
            wit::LogLevel::Warn => {
                tracing::warn!(controller = %name, "{line}");
                "WARN"
            }
            wit::LogLevel::Error => {
                tracing::error!(controller = %name, "{line}");
                "ERROR"
            }
        };
        self.ctx.log.push(format!("{tag} {line}"));
    }
}

/// The stored objects of `ri` (in `namespace`, or all) that `keep` keeps, as a JSON array of
/// their lean JSON (what `cache-list` answers controllers and admission policies).
pub(crate) fn list_json(
    service: &Service,
    ri: &ResourceInfo,
    namespace: Option<&str>,
    keep: impl Fn(&crate::store::StoredObject) -> bool,
) -> Vec<u8> {
    let Ok(snap) = service.store.list(&ri.group_resource(), None) else {
        return b"[]".to_vec();
    };
    // One namespace is one range of the ordered index: a controller reading its own namespace
    // does not walk every other namespace's objects.
    let prefix = namespace.map(|ns| crate::model::item_key(ns, ""));
    let items: Box<dyn Iterator<Item = &Arc<crate::store::StoredObject>>> = match &prefix {
        Some(p) => Box::new(
            snap.items
                .range(p.clone()..)
                .take_while(move |(k, _)| k.starts_with(p.as_str()))
                .map(|(_, v)| v),
        ),
        None => Box::new(snap.items.values()),
    };
    let mut out = Vec::with_capacity(1024);
    out.push(b'[');
    let mut first = true;
    for obj in items {
        if !keep(obj) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(Service::present(ri, obj.clone()).lean_json());
    }
    out.push(b']');
    out
}

/// Shared by every controller: the runtime, the service, the router to call, and the
/// authenticator that issues controller identities.
pub struct Host {
    pub runtime: Arc<Runtime>,
    pub service: Arc<Service>,
    pub router: axum::Router,
    pub authn: Arc<Authenticator>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::ResourceLimiter;

    #[test]
    fn a_printed_panic_is_the_failures_first_line() {
        let printed = "starting\nthread '<unnamed>' (1) panicked at src/lib.rs:77:30:\nchaos: asked to panic for default/boom\nnote: run with `RUST_BACKTRACE=1`\n";
        let panic = panic_of(printed);
        assert_eq!(
            panic.as_deref(),
            Some("panicked at src/lib.rs:77:30: chaos: asked to panic for default/boom")
        );
        assert_eq!(panic_of("just output\n"), None);
        let long = format!("panicked at a.rs:1:1:\n{}", "é".repeat(400));
        let cut = panic_of(&long).unwrap();
        assert!(cut.len() <= 512 && cut.starts_with("panicked at a.rs:1:1: é"));
        // The panic joins the failure's first line; a backtrace stays after it.
        let e = wasmtime::Error::msg("trap: unreachable\nwasm backtrace:\n  0: f");
        assert_eq!(
            describe_failure(&e, panic),
            "trap: unreachable (panicked at src/lib.rs:77:30: chaos: asked to panic for default/boom)\nwasm backtrace:\n  0: f"
        );
        assert_eq!(
            describe_failure(&wasmtime::Error::msg("boom"), None),
            "boom"
        );
    }

    /// The memory cap holds for the instance's memories together (each under it is not enough),
    /// and its tables' elements are bounded together too.
    #[test]
    fn the_caps_hold_for_all_memories_and_tables_together() {
        let cap = 128 << 20;
        let mut l = Limiter {
            inner: StoreLimitsBuilder::new()
                .memory_size(cap)
                .table_elements(TABLE_ELEMENTS)
                .trap_on_grow_failure(true)
                .build(),
            memory_bytes: 0,
            memory_limit: cap,
            table_elements: 0,
        };
        assert!(l.memory_growing(0, 100 << 20, None).unwrap());
        // A second memory of 100 MiB is under the cap alone, over it with the first.
        assert!(l.memory_growing(0, 100 << 20, None).is_err());
        assert!(l.memory_growing(0, 20 << 20, None).unwrap());
        assert_eq!(l.memory_bytes, 120 << 20);
        assert!(l.table_growing(0, TABLE_ELEMENTS / 2, None).unwrap());
        assert!(l.table_growing(0, TABLE_ELEMENTS / 2 + 1, None).is_err());
    }

    /// A warm guest called on the async worker: the Rust labeler's no-op reconcile (the object
    /// is already greeted; it parses ~400 B of JSON and returns) costs a few microseconds, and
    /// a runaway guest still traps at its deadline without holding the worker.
    /// (One executor thread: the ticker runs only if the looping guest yields.)
    #[tokio::test]
    async fn a_warm_call_runs_inline_and_a_loop_still_meets_its_deadline() {
        let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests");
        let (Ok(labeler), Ok(looper)) = (
            std::fs::read(wasm.join("labeler.wasm")),
            std::fs::read(wasm.join("looper.wasm")),
        ) else {
            eprintln!("guests not built (cargo xtask guests): skipped");
            return;
        };
        let (rt, ctx, dir) = test_runtime("dispatch");
        // The baseline code first (a new component runs on it at once), then the optimized.
        let (_, baseline) = rt.compiler.compile(labeler.clone()).await.unwrap();
        assert_eq!(baseline.tier, compile::Tier::Baseline);
        let (_, optimized) = rt.compiler.compile_optimized(labeler).await.unwrap();
        assert_eq!(optimized.tier, compile::Tier::Optimized);
        let key = wit::ObjectKey {
            namespace: "default".into(),
            name: "a".into(),
        };
        let object = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default", "uid": "6b9e1b8c-8f4e-4a3e-9d5e-1c2b3a4d5e6f",
                "resourceVersion": "12345", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"turtles.dev/greet": "true"},
                "annotations": {"turtles.dev/greeting": "hello, a"}},
            "data": {"k": "v", "other": "some value of a few dozen bytes, like real ones"},
        })
        .to_string()
        .into_bytes();
        let n = 2_000u32;
        for code in [&baseline, &optimized] {
            let mut inst = rt.instantiate(&code.component, ctx.clone()).await.unwrap();
            inst.register().await.unwrap();
            // With the object (the guest parses it), and without (a deleted key: the dispatch
            // alone).
            let mut best = [Duration::MAX; 2];
            for (i, obj) in [Some(object.as_slice()), None].into_iter().enumerate() {
                for _ in 0..3 {
                    let started = std::time::Instant::now();
                    for _ in 0..n {
                        let r = inst.reconcile(&key, obj).await.unwrap();
                        assert_eq!(r, wit::Outcome::Done);
                    }
                    best[i] = best[i].min(started.elapsed() / n);
                }
            }
            let [best, bare] = best;
            let tier = code.tier.as_str();
            eprintln!("no-op reconcile of the Rust labeler, warm, inline, {tier}: {best:?}");
            eprintln!("the same call without an object, {tier}: {bare:?}");
            // (A sanity bound only: the machine is shared; `cargo xtask bench` measures it.)
            assert!(best < Duration::from_millis(1), "{best:?}");
        }

        // A guest that never returns traps at its deadline, on either tier's code; meanwhile
        // the runtime serves others.
        let (_, baseline) = rt.compiler.compile(looper.clone()).await.unwrap();
        let (_, optimized) = rt.compiler.compile_optimized(looper).await.unwrap();
        for code in [baseline, optimized] {
            looping_guest_meets_its_deadline(&rt, &ctx, &code.component, &key).await;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    async fn looping_guest_meets_its_deadline(
        rt: &Runtime,
        ctx: &Arc<HostCtx>,
        component: &Component,
        key: &wit::ObjectKey,
    ) {
        let mut inst = rt.instantiate(component, ctx.clone()).await.unwrap();
        let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let t = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(2)).await;
                t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        tokio::task::yield_now().await; // the ticker is running
        let started = std::time::Instant::now();
        let registered = inst.register().await;
        let e = match registered {
            Ok(_) => inst.reconcile(key, None).await.map(|_| ()).unwrap_err(),
            Err(e) => e,
        };
        let during = ticks.load(std::sync::atomic::Ordering::Relaxed);
        ticker.abort();
        assert!(e.to_string().contains("deadline exceeded"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(
            during >= 5,
            "the other task ran only {during} times while the guest looped for 300 ms"
        );
    }

    /// The interpreters' own entry cost (`cargo xtask bench` runs it; `cargo test --release -p
    /// turtles --lib entry_cost -- --ignored --nocapture` alone): a warm instance of each
    /// greeter, on its optimized code, called in a tight loop on the async worker with no object
    /// (the reconcile returns at once: what entering the guest's language and returning costs)
    /// and with an already greeted ~400 B object (the no-op the host's dispatch figures time).
    /// Ignored in `cargo test`: the Python and JavaScript optimized compiles take minutes of CPU.
    #[tokio::test]
    #[ignore]
    async fn entry_cost() {
        let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests");
        let (rt, ctx, dir) = test_runtime("entry-cost");
        let key = wit::ObjectKey {
            namespace: "default".into(),
            name: "a".into(),
        };
        for (lang, guest, greeting, calls) in [
            ("Rust", "noop", "", 2_000u32),
            ("Rust", "labeler", "hello", 2_000),
            ("Python", "py-greeter", "hello from python", 500),
            ("JavaScript", "js-greeter", "hello from javascript", 500),
        ] {
            let bytes = std::fs::read(wasm.join(format!("{guest}.wasm")))
                .expect("cargo xtask guests builds the example guests");
            let (_, code) = rt.compiler.compile_optimized(bytes).await.unwrap();
            let mut inst = rt.instantiate(&code.component, ctx.clone()).await.unwrap();
            inst.register().await.unwrap();
            let object = serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "default", "uid": "6b9e1b8c-8f4e-4a3e-9d5e-1c2b3a4d5e6f",
                    "resourceVersion": "12345", "creationTimestamp": "2026-01-01T00:00:00Z",
                    "labels": {"turtles.dev/greet": "true"},
                    "annotations": {"turtles.dev/greeting": format!("{greeting}, a")}},
                "data": {"k": "v", "other": "some value of a few dozen bytes, like real ones"},
            })
            .to_string()
            .into_bytes();
            let mut best = [Duration::MAX; 2];
            for (i, obj) in [None, Some(object.as_slice())].into_iter().enumerate() {
                for _ in 0..3 {
                    let started = std::time::Instant::now();
                    for _ in 0..calls {
                        let r = inst.reconcile(&key, obj).await.unwrap();
                        assert_eq!(r, wit::Outcome::Done);
                    }
                    best[i] = best[i].min(started.elapsed() / calls);
                }
            }
            eprintln!(
                "entry cost, {lang} `{guest}`, warm, inline, best mean of 3x{calls}: no object {:?}, greeted object {:?}",
                best[0], best[1]
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A no-op reconcile of the Rust `noop` guest with the core's caches cold, as they are when
    /// a reconcile runs between API requests: before each call a 16 MiB sweep evicts L1 and L2
    /// (and the TLB), then the call is timed. `cargo test --release -p turtles --lib
    /// cold_entry_cost -- --ignored --nocapture` (after `cargo xtask guests --lang rust`).
    /// `COLD_HUGE_TEXT=1`: first move this binary's code onto huge pages, as `turtles serve`
    /// does; `COLD_PAGES=1`: afterwards, list the pages one call touches, per mapping.
    #[tokio::test]
    #[ignore]
    async fn cold_entry_cost() {
        if std::env::var("COLD_HUGE_TEXT").is_ok() {
            match crate::hugetext::remap() {
                Ok(r) => eprintln!("huge text: {r}"),
                Err(e) => eprintln!("huge text: {e}"),
            }
        }
        let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests/noop.wasm");
        let bytes = std::fs::read(&wasm).expect("cargo xtask guests builds noop.wasm");
        let (rt, ctx, dir) = test_runtime("cold-entry-cost");
        let (_, code) = rt.compiler.compile_optimized(bytes).await.unwrap();
        let mut inst = rt.instantiate(&code.component, ctx.clone()).await.unwrap();
        inst.register().await.unwrap();
        let key = wit::ObjectKey {
            namespace: "default".into(),
            name: "d-17".into(),
        };
        let object = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "d-17", "namespace": "default", "uid": "6b9e1b8c-8f4e-4a3e-9d5e-1c2b3a4d5e6f",
                "resourceVersion": "12345", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"turtles.dev/test": "noop"},
                "annotations": {"turtles.dev/greeting": "hello, d-17"}},
            "data": {"k": "v12"},
        })
        .to_string()
        .into_bytes();
        let calls: usize = std::env::var("COLD_CALLS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2000);
        let sweep_bytes: usize = std::env::var("COLD_SWEEP_MIB")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(16)
            << 20;
        // `COLD_SWEEP=tlb`: touch one line in each 4 KiB page of `COLD_SWEEP_MIB` (the TLB
        // forgets the call's pages, the caches keep most of its lines); `COLD_SWEEP=cache`:
        // every line of a buffer on huge pages (the caches forget, the TLB keeps its entries).
        let mode = std::env::var("COLD_SWEEP").unwrap_or_default();
        let step = if mode == "tlb" { 4096 } else { 64 };
        let mut sweep: &mut [u8] = if mode == "cache" {
            let len = sweep_bytes + (2 << 20);
            // SAFETY: a fresh private anonymous mapping, never unmapped (the test ends).
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            let aligned = ((p as usize + (2 << 20) - 1) & !((2 << 20) - 1)) as *mut u8;
            // SAFETY: inside the mapping.
            unsafe {
                libc::madvise(aligned.cast(), sweep_bytes, libc::MADV_HUGEPAGE);
                std::slice::from_raw_parts_mut(aligned, sweep_bytes)
            }
        } else {
            Vec::leak(vec![0u8; sweep_bytes.max(64)])
        };
        sweep.fill(1);
        // Read once, outside the timed calls (`getenv` walks the environment).
        let obj = std::env::var("COLD_NO_OBJECT")
            .is_err()
            .then_some(object.as_slice());
        for (label, cold) in [("warm", false), ("cold", true)] {
            let mut times = Vec::with_capacity(calls);
            for _ in 0..calls {
                if cold {
                    for j in (0..sweep.len()).step_by(step) {
                        sweep[j] = sweep[j].wrapping_add(1);
                    }
                    std::hint::black_box(&mut sweep);
                }
                let started = std::time::Instant::now();
                let r = inst.reconcile(&key, obj).await.unwrap();
                times.push(started.elapsed());
                assert_eq!(r, wit::Outcome::Done);
            }
            times.sort();
            let mean = times.iter().sum::<Duration>() / calls as u32;
            eprintln!(
                "noop {label}: median {:?}, mean {mean:?}, p90 {:?} over {calls} calls",
                times[calls / 2],
                times[calls * 9 / 10]
            );
        }
        if std::env::var("COLD_PAGES").is_ok() {
            // Which pages one warm call touches: clear the accessed bits, call, read them back
            // (the same without a call, as the control).
            fn referenced() -> Vec<(String, u64)> {
                let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
                let mut out: Vec<(String, u64)> = Vec::new();
                for line in smaps.lines() {
                    if let Some(v) = line.strip_prefix("Referenced:") {
                        let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap();
                        if let Some(last) = out.last_mut() {
                            last.1 = kb;
                        }
                    } else if line.split_whitespace().next().is_some_and(|r| {
                        r.contains('-') && r.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
                    }) {
                        out.push((line.to_string(), 0));
                    }
                }
                out
            }
            let clear = || std::fs::write("/proc/self/clear_refs", "1").unwrap();
            for round in 0..3 {
                clear();
                let control = referenced();
                clear();
                let r = inst.reconcile(&key, obj).await.unwrap();
                let after = referenced();
                assert_eq!(r, wit::Outcome::Done);
                let mut total = 0;
                for ((name, c), (_, a)) in control.iter().zip(after.iter()) {
                    if *a > 0 {
                        eprintln!("round {round}: {a:>6} kB (control {c:>6}) {name}");
                        total += a;
                    }
                }
                eprintln!("round {round}: total {total} kB");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A runtime (300 ms call deadline) and a controller context over a fresh store.
    fn test_runtime(name: &str) -> (Arc<Runtime>, Arc<HostCtx>, PathBuf) {
        let (store, dir) = crate::store::sled_store::temp_store(name);
        let registry = Arc::new(crate::model::Registry::with_builtins());
        let service = Arc::new(Service::new(store.clone(), registry));
        let rt = Runtime::new(RuntimeOptions {
            call_deadline: Duration::from_millis(300),
            cache_dir: dir.join("cache"),
            ..Default::default()
        })
        .unwrap();
        let ctx = Arc::new(HostCtx {
            name: "t".into(),
            identity: std::sync::RwLock::new(Identity {
                user: crate::auth::UserInfo {
                    name: "t".into(),
                    uid: String::new(),
                    groups: Vec::new(),
                    extra: Default::default(),
                },
                token: String::new(),
                service_account: None,
            }),
            router: axum::Router::new(),
            service,
            watches: std::sync::RwLock::new(Vec::new()),
            authz: Arc::new(crate::auth::Authorizer::new(store)),
            events: Default::default(),
            log: Default::default(),
        });
        (rt, ctx, dir)
    }

    /// A guest that prints 8 KiB on every call goes on working long past the per-call bound,
    /// and each call's output is handed over once (the buffer is emptied after every call).
    #[tokio::test]
    async fn a_guest_that_prints_on_every_call_keeps_working() {
        let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests/chatter.wasm");
        let chatter = std::fs::read(&wasm).expect("cargo xtask guests builds chatter.wasm");
        let (rt, ctx, dir) = test_runtime("chatter");
        let (_, code) = rt.compiler.compile(chatter).await.unwrap();
        let mut inst = rt.instantiate(&code.component, ctx).await.unwrap();
        inst.register().await.unwrap();
        let key = wit::ObjectKey {
            namespace: "default".into(),
            name: "a".into(),
        };
        // 8 KiB a call: 64 calls print 8 times the per-call bound in all.
        for i in 0..64 {
            let r = inst.reconcile(&key, None).await;
            assert_eq!(r.unwrap(), wit::Outcome::Done, "call {i}");
            assert!(
                inst.store.data().output.take().bytes.is_empty(),
                "call {i}: the output was not handed over"
            );
        }
        let printed = inst.store.data().printed;
        assert!(printed > 64 * 8192, "only {printed} bytes were logged");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
