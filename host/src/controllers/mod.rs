//! Built-in controllers: the garbage collector ([`gc`]), the namespace controller
//! ([`namespace`]), the service account controller ([`serviceaccount`]), the token
//! controller ([`tokens`]), the ValidatingAdmissionPolicy status controller
//! ([`policystatus`]), the CertificateSigningRequest signer ([`csrsigning`]), the
//! `kube-root-ca.crt` publisher ([`rootca`]), the PodDisruptionBudget status controller
//! ([`disruption`]), the ResourceQuota status controller ([`resourcequota`]), the Pod
//! garbage collector ([`podgc`]), the ephemeral volume controller ([`ephemeral`]), the claim
//! and volume protection controllers ([`volumeprotection`]), the node lifecycle and taint
//! eviction controllers ([`nodelifecycle`]), the FlowSchemas' `Dangling` condition
//! ([`apfstatus`], kube-apiserver's), and the aggregation layer's APIService
//! registration and availability controllers (`crate::aggregator`). Like
//! kube-controller-manager's, they are ordinary controllers — informers feeding a work queue,
//! reconciles that write through the [`Service`] — and they show up as `Controller` objects
//! (`kubectl get controllers`) next to the WebAssembly ones.
//!
//! They keep no state that is not rebuilt from the store: at start-up every informer lists its
//! kind and the work is found again (terminating namespaces, objects with owner references,
//! owners waiting on dependents), so deletions in progress resume after a restart.

pub mod apfstatus;
pub mod clusterroleaggregation;
pub mod csrsigning;
pub mod disruption;
pub mod ephemeral;
pub mod events;
pub mod eventttl;
pub mod gc;
pub mod namespace;
pub mod nodelifecycle;
pub mod podgc;
pub mod policystatus;
pub mod resourcequota;
pub mod rootca;
pub mod serviceaccount;
pub mod tokens;
pub mod volumeprotection;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::informer::Change;
use crate::model::{meta, ApiError, ResourceInfo};
use crate::runtime::driver::{self, Outcome, Reconciler, Stats};
use crate::runtime::queue::{Action, WorkQueue};
use crate::service::{Service, Subresource, WriteOptions};
use crate::store::{StoreError, StoredObject};

/// Names of the built-in controllers (a controller file of that name is ignored).
pub const BUILT_IN: &[&str] = &[
    apfstatus::IDENTITY.name,
    clusterroleaggregation::IDENTITY.name,
    csrsigning::IDENTITY.name,
    disruption::IDENTITY.name,
    ephemeral::IDENTITY.name,
    eventttl::IDENTITY.name,
    gc::IDENTITY.name,
    namespace::IDENTITY.name,
    nodelifecycle::IDENTITY.name,
    nodelifecycle::EVICTION_IDENTITY.name,
    podgc::IDENTITY.name,
    policystatus::IDENTITY.name,
    resourcequota::IDENTITY.name,
    rootca::IDENTITY.name,
    serviceaccount::IDENTITY.name,
    tokens::IDENTITY.name,
    volumeprotection::PVC_IDENTITY.name,
    volumeprotection::PV_IDENTITY.name,
    crate::aggregator::registration::IDENTITY.name,
    crate::aggregator::availability::IDENTITY.name,
];

/// Why a built-in reconcile failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("owner reference to {0} cannot be resolved: no such kind is served")]
    UnknownKind(String),
    /// The CSR signer's: a request it cannot read or a certificate it cannot issue.
    #[error("{0}")]
    Signing(String),
    /// The disruption controller's: a budget whose status cannot be computed (kube's message,
    /// which its `SyncFailed` condition carries).
    #[error("{0}")]
    Disruption(String),
    /// The ephemeral volume controller's: a claim of the Pod's name that is not the Pod's.
    #[error("{0}")]
    NotOwner(String),
}

/// What a reconcile asks for next: nothing (`None`) or another look after a delay.
pub type Reconciled = Result<Option<Duration>, ControllerError>;

/// How a follower learns about one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// Part of an initial (or re-) list.
    Listed,
    Added,
    Modified,
    Deleted,
}

/// A built-in controller fed by the informers over every stored kind.
pub trait Follower: Send + Sync + 'static {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &StoredObject,
        prev: Option<&StoredObject>,
        how: Observed,
    );
}

/// A built-in reconcile as the [`driver`] runs it: an error is retried with backoff.
#[derive(Clone)]
struct Keyed<F>(F);

impl<K, F, Fut> Reconciler<K> for Keyed<F>
where
    K: Clone + Send + Sync,
    F: Fn(K) -> Fut + Send + Sync,
    Fut: Future<Output = Reconciled> + Send,
{
    async fn reconcile(&mut self, key: &K) -> Outcome {
        match (self.0)(key.clone()).await {
            Ok(None) => Outcome::done(),
            Ok(Some(after)) => Action::RequeueAfter(after).into(),
            Err(e) => Outcome::failed(Action::Retry, e.to_string(), false),
        }
    }
}

/// The user a kube-controller-manager controller acts as: its service account in `kube-system`
/// (`generic-garbage-collector`, `namespace-controller`), so admission sees its writes as
/// kube's does.
pub fn service_account_user(name: &str) -> crate::auth::rbac::UserInfo {
    crate::auth::rbac::UserInfo {
        name: format!("system:serviceaccount:kube-system:{name}"),
        uid: String::new(),
        groups: vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:kube-system".into(),
            "system:authenticated".into(),
        ],
        extra: Default::default(),
    }
}

/// What a built-in controller is called, says of itself, and how many keys it reconciles at once.
pub struct Identity {
    pub name: &'static str,
    pub description: &'static str,
    pub workers: usize,
}

/// Start a built-in controller: its workers running `reconcile` over `queue`, its `Controller`
/// object, and the queue's shutdown with the host. Returns its metrics for `/metrics`.
pub fn spawn<K, F, Fut>(
    service: Arc<Service>,
    id: &Identity,
    queue: Arc<WorkQueue<K>>,
    stats: Arc<Stats>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    reconcile: F,
) -> driver::MetricsSource
where
    K: Clone + Eq + std::hash::Hash + Send + Sync + std::fmt::Debug + driver::KeyText + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Reconciled> + Send + 'static,
{
    for _ in 0..id.workers {
        tokio::spawn(driver::worker(
            queue.clone(),
            stats.clone(),
            id.name,
            service.leadership.receiver(),
            Keyed(reconcile.clone()),
        ));
    }
    let q = queue.clone();
    let description = id.description;
    let metered = {
        let (stats, queue, name) = (stats.clone(), queue.clone(), id.name);
        Arc::new(move || driver::Metered {
            name: name.to_owned(),
            stats: stats.clone(),
            queue_depth: queue.len(),
        })
    };
    tokio::spawn(driver::publish_every(
        service,
        id.name,
        move || {
            let mut status = json!({
                "phase": "Running",
                "builtIn": true,
                "description": description,
            });
            if let Some(m) = status.as_object_mut() {
                m.extend(stats.status_fields(q.len()));
                m.insert("user".into(), json!("system:controller-manager"));
            }
            status
        },
        shutdown.clone(),
    ));
    let mut stop = shutdown;
    tokio::spawn(async move {
        let _ = stop.changed().await;
        queue.shutdown();
    });
    metered
}

/// What every keyed built-in controller has: the service it writes through, its work queue and
/// its counters.
pub struct Base<K> {
    pub service: Arc<Service>,
    pub queue: Arc<WorkQueue<K>>,
    pub stats: Arc<Stats>,
}

impl<K> Base<K>
where
    K: Clone + Eq + std::hash::Hash + Send + Sync + std::fmt::Debug + driver::KeyText + 'static,
{
    pub fn new(service: Arc<Service>) -> Self {
        Self {
            service,
            queue: WorkQueue::new(),
            stats: Arc::default(),
        }
    }

    /// [`spawn`] the controller `this`, each key reconciled by [`Reconcile::reconcile_key`].
    pub fn start<T: Reconcile<K>>(
        &self,
        id: &Identity,
        this: Arc<T>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> driver::MetricsSource {
        spawn(
            self.service.clone(),
            id,
            self.queue.clone(),
            self.stats.clone(),
            shutdown,
            move |key: K| {
                let this = this.clone();
                async move { this.reconcile_key(&key).await }
            },
        )
    }
}

/// A keyed built-in controller's reconcile of one key.
pub trait Reconcile<K>: Send + Sync + 'static {
    fn reconcile_key(&self, key: &K) -> impl Future<Output = Reconciled> + Send;
}

/// Follow every stored kind (and kinds CRDs add later), feeding each change to `followers`.
/// Returns once the kinds served now have been listed (so reconciles start from a full view).
pub async fn follow_all(
    service: Arc<Service>,
    followers: Vec<Arc<dyn Follower>>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let followers: Arc<[Arc<dyn Follower>]> = followers.into();
    let mut running: HashMap<String, ()> = HashMap::new();
    let mut synced = Vec::new();
    for ri in service.registry.stored_resources() {
        running.insert(ri.group_resource(), ());
        let (tx, rx) = tokio::sync::oneshot::channel();
        synced.push(rx);
        tokio::spawn(informer(
            service.clone(),
            ri,
            followers.clone(),
            Some(tx),
            shutdown.clone(),
        ));
    }
    for rx in synced {
        let _ = rx.await;
    }
    let mut changes = service.registry.changes();
    let mut stop = shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                r = changes.changed() => if r.is_err() { return },
                _ = stop.changed() => return,
            }
            for ri in service.registry.stored_resources() {
                if running.insert(ri.group_resource(), ()).is_none() {
                    tokio::spawn(informer(
                        service.clone(),
                        ri,
                        followers.clone(),
                        None,
                        shutdown.clone(),
                    ));
                }
            }
        }
    });
}

/// Follow one stored kind ([`crate::informer`]: list, watch, resume after a lag, relist after
/// a 410) into its reflector, handing each change to every follower; `synced` fires once the
/// first list is in (objects deleted between two lists reach the followers as `Deleted`).
async fn informer(
    service: Arc<Service>,
    ri: Arc<ResourceInfo>,
    followers: Arc<[Arc<dyn Follower>]>,
    synced: Option<tokio::sync::oneshot::Sender<()>>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let watcher = crate::informer::Watcher::new(
        crate::informer::StoreSource {
            store: service.store.clone(),
            resource: ri.group_resource(),
            namespace: None,
        },
        None,
    );
    let reflector = crate::informer::Reflector::new();
    let mut reader = reflector.reader();
    let run = crate::informer::run(watcher, reflector, |c| deliver(&ri, &followers, &c));
    let signal = async {
        reader.wait_synced().await;
        if let Some(tx) = synced {
            let _ = tx.send(());
        }
        std::future::pending::<()>().await
    };
    tokio::select! {
        () = run => {}
        () = signal => {}
        _ = shutdown.changed() => {}
    }
}

/// Hand one change of a reflector to every follower.
fn deliver(ri: &ResourceInfo, followers: &[Arc<dyn Follower>], change: &Change) {
    let (obj, prev, how) = match change {
        Change::Listed { object, prev } => (object, prev, Observed::Listed),
        Change::Applied { object, prev } if prev.is_some() => (object, prev, Observed::Modified),
        Change::Applied { object, prev } => (object, prev, Observed::Added),
        Change::Deleted { object, prev } => (object, prev, Observed::Deleted),
    };
    for f in followers {
        f.observe(ri, obj, prev.as_deref(), how);
    }
}

/// The built-in controllers' settings from `turtles serve`'s flags (kube-controller-manager's).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// `--orphaned-pod-quarantine`: how long a Node may be missing before its Pods go.
    pub orphan_quarantine: Duration,
    /// `--terminated-pod-gc-threshold`: how many finished Pods are kept (0: all).
    pub terminated_threshold: usize,
    /// `--node-monitor-grace-period`: how long a Node may go without a heartbeat.
    pub node_monitor_grace: Duration,
    /// `--event-ttl`: how long an Event is kept after its last write (zero: for ever).
    pub event_ttl: Duration,
}

/// Start the built-in controllers: informers over every kind, then the workers. The token
/// controller signs with `issuer` and hands out `root_ca` (PEM; none without TLS); the CSR
/// signer runs with `authority` (the CA client certificates are verified with, when the host
/// holds its key). Returns their metrics for `/metrics`.
pub async fn start(
    service: Arc<Service>,
    issuer: Arc<crate::auth::serviceaccount::TokenIssuer>,
    root_ca: Option<Arc<str>>,
    authority: Option<Arc<crate::auth::signer::Authority>>,
    aggregator: Arc<crate::aggregator::Aggregator>,
    settings: Settings,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Vec<driver::MetricsSource> {
    let gc = gc::GarbageCollector::new(service.clone());
    let ns = namespace::NamespaceController::new(service.clone());
    let sa = serviceaccount::ServiceAccountController::new(service.clone());
    let publisher = root_ca
        .clone()
        .map(|ca| rootca::RootCaPublisher::new(service.clone(), ca));
    let tokens = tokens::TokenController::new(service.clone(), issuer, root_ca);
    let vap = policystatus::PolicyStatusController::new(service.clone());
    let apf = apfstatus::ApfStatusController::new(service.clone());
    let aggregation = clusterroleaggregation::ClusterRoleAggregation::new(service.clone());
    let signer = authority.map(|a| csrsigning::CsrSigningController::new(service.clone(), a));
    let disruption = disruption::DisruptionController::new(service.clone());
    let quotas = resourcequota::ResourceQuotaController::new(service.clone());
    let podgc = podgc::PodGarbageCollector::new(
        service.clone(),
        settings.orphan_quarantine,
        settings.terminated_threshold,
    );
    let ephemeral = ephemeral::EphemeralVolumeController::new(service.clone());
    let event_ttl = (!settings.event_ttl.is_zero())
        .then(|| eventttl::EventTtl::new(service.clone(), settings.event_ttl));
    let lifecycle =
        nodelifecycle::NodeLifecycleController::new(service.clone(), settings.node_monitor_grace);
    let eviction = nodelifecycle::TaintEvictionController::new(service.clone());
    let pvc_protection = volumeprotection::ClaimProtection::new(service.clone());
    let pv_protection = volumeprotection::VolumeProtection::new(service.clone());
    let registration = crate::aggregator::registration::Registration::new(service.clone());
    let availability =
        crate::aggregator::availability::Availability::new(service.clone(), aggregator);
    let mut followers = vec![
        registration.clone() as Arc<dyn Follower>,
        availability.clone() as Arc<dyn Follower>,
        gc.clone() as Arc<dyn Follower>,
        disruption.clone() as Arc<dyn Follower>,
        quotas.clone() as Arc<dyn Follower>,
        podgc.clone() as Arc<dyn Follower>,
        ephemeral.clone() as Arc<dyn Follower>,
        lifecycle.clone() as Arc<dyn Follower>,
        eviction.clone() as Arc<dyn Follower>,
        pvc_protection.clone() as Arc<dyn Follower>,
        pv_protection.clone() as Arc<dyn Follower>,
        ns.clone() as Arc<dyn Follower>,
        sa.clone() as Arc<dyn Follower>,
        tokens.clone() as Arc<dyn Follower>,
        vap.clone() as Arc<dyn Follower>,
        apf.clone() as Arc<dyn Follower>,
        aggregation.clone() as Arc<dyn Follower>,
    ];
    if let Some(s) = &signer {
        followers.push(s.clone() as Arc<dyn Follower>);
    }
    if let Some(p) = &publisher {
        followers.push(p.clone() as Arc<dyn Follower>);
    }
    if let Some(t) = &event_ttl {
        followers.push(t.clone() as Arc<dyn Follower>);
    }
    follow_all(service.clone(), followers, shutdown.clone()).await;
    let mut started = vec![
        gc.start(shutdown.clone()),
        ns.start(shutdown.clone()),
        sa.start(shutdown.clone()),
        tokens.start(shutdown.clone()),
        disruption.start(shutdown.clone()),
        quotas.start(shutdown.clone()),
        podgc.start(shutdown.clone()),
        ephemeral.start(shutdown.clone()),
        lifecycle.start(shutdown.clone()),
        eviction.start(shutdown.clone()),
        pvc_protection.start(shutdown.clone()),
        pv_protection.start(shutdown.clone()),
        registration.start(shutdown.clone()),
        availability.start(shutdown.clone()),
        aggregation.start(shutdown.clone()),
        apf.start(shutdown.clone()),
    ];
    if let Some(s) = &signer {
        started.push(s.start(shutdown.clone()));
    }
    if let Some(p) = &publisher {
        started.push(p.start(shutdown.clone()));
    }
    if let Some(t) = &event_ttl {
        started.push(t.start(shutdown.clone()));
    }
    started.push(vap.start(shutdown));
    started
}

/// Update an object (or its status) to `v`, read from the store with its resourceVersion: a
/// concurrent change is a 409, retried by the queue. Gone meanwhile is fine.
async fn write_back(
    service: &Service,
    ri: &ResourceInfo,
    namespace: &str,
    name: &str,
    v: Value,
    sub: Subresource,
) -> Result<(), ControllerError> {
    match service
        .update(ri, namespace, name, v, sub, &WriteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The stored kind whose storage key is `group_resource`.
fn stored_resource(service: &Service, group_resource: &str) -> Option<Arc<ResourceInfo>> {
    service
        .registry
        .stored_resources()
        .into_iter()
        .find(|r| r.group_resource() == group_resource)
}

/// Whether namespace `ns` exists and is not being deleted.
fn namespace_active(service: &Service, ns: &str) -> bool {
    service
        .store
        .get(&crate::model::ObjectKey::new(
            crate::service::NAMESPACES,
            "",
            ns,
        ))
        .is_some_and(|n| !terminating(n.head()))
}

fn terminating(obj: &impl meta::Meta) -> bool {
    meta::meta_str(obj, "deletionTimestamp").is_some()
}

fn uid(obj: &impl meta::Meta) -> &str {
    meta::meta_str(obj, "uid").unwrap_or("")
}
