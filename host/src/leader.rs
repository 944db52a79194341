//! Leader election for the controllers, as kube-controller-manager does it (client-go's
//! `leaderelection` with a `coordination.k8s.io/v1` Lease), for hosts that share one store
//! (`--store etcd`, `docs/scale-out.md`).
//!
//! Every host runs its informers and fills its work queues (a warm standby); only the host that
//! holds the Lease `kube-system/turtles-controllers` takes keys off them and writes controller
//! status. The holder renews the Lease every retry period; another host takes it over only once
//! it has seen the same record unchanged for a whole lease duration (by its own clock, so clocks
//! need not agree). A holder that could not renew within the renew deadline, which is shorter
//! than the lease duration, stops taking keys before anyone else may start. With sled there is
//! one host and it always leads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::watch;

use crate::model::{meta, ResourceInfo};
use crate::service::{Service, WriteOptions};

pub const LEASE_NAMESPACE: &str = "kube-system";
pub const LEASE_NAME: &str = "turtles-controllers";

/// kube's `--leader-elect-*` flags, with kube's defaults.
#[derive(Debug, Clone)]
pub struct LeaderOptions {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    /// This host's holder identity (kube: `hostname_uuid`).
    pub identity: String,
}

impl Default for LeaderOptions {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            identity: default_identity(),
        }
    }
}

/// `hostname_uuid`, as kube-controller-manager names itself.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "turtles".to_owned());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// Whether this host leads the controllers now; cheap to clone and to ask.
#[derive(Debug, Clone)]
pub struct Leadership {
    rx: watch::Receiver<bool>,
    identity: Arc<str>,
    /// For [`Leadership::always`]: the sender nobody uses, kept so the value stays.
    _always: Option<Arc<watch::Sender<bool>>>,
}

impl Leadership {
    /// The only host: it always leads.
    pub fn always() -> Self {
        let (tx, rx) = watch::channel(true);
        Self {
            rx,
            identity: Arc::from(""),
            _always: Some(Arc::new(tx)),
        }
    }

    pub fn is_leading(&self) -> bool {
        *self.rx.borrow()
    }

    /// The holder identity this host campaigns as (empty when it always leads).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// A receiver to wait on (`wait_for(|l| *l)`).
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.rx.clone()
    }
}

/// A Leadership that [`campaign`] drives; not leading until it wins.
pub fn elected(opts: &LeaderOptions) -> (Leadership, watch::Sender<bool>) {
    let (tx, rx) = watch::channel(false);
    (
        Leadership {
            rx,
            identity: Arc::from(opts.identity.as_str()),
            _always: None,
        },
        tx,
    )
}

fn lease_ri(svc: &Service) -> Option<Arc<ResourceInfo>> {
    svc.registry.lookup("coordination.k8s.io", "v1", "leases")
}

/// `metav1.MicroTime`, as client-go writes it.
fn now_micro() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// What this host last saw of the Lease and when (its own clock): another holder's record must
/// stay unchanged for a whole lease duration before it is taken over.
struct Observed {
    spec: Value,
    at: Instant,
}

/// How a round of [`try_acquire_or_renew`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// This host holds the Lease.
    Held,
    /// Another host holds it and its lease has not run out.
    Other,
    /// The Lease could not be read or written.
    Failed,
}

/// The lease duration as the Lease records it: whole seconds, rounded up, so that other hosts
/// never wait less than this host's own deadlines assume.
fn lease_seconds(d: Duration) -> u64 {
    (d.as_secs_f64().ceil() as u64).max(1)
}

/// One round of client-go's `tryAcquireOrRenew`.
async fn try_acquire_or_renew(
    svc: &Service,
    opts: &LeaderOptions,
    observed: &mut Option<Observed>,
) -> Round {
    let Some(ri) = lease_ri(svc) else {
        return Round::Failed;
    };
    // The Lease as etcd has it now, not as this host's view last saw it: a holder must not step
    // down for a stale copy of the record it renewed itself.
    if svc.store.sync().await.is_err() {
        return Round::Failed;
    }
    let now = now_micro();
    let duration = lease_seconds(opts.lease_duration);
    let current = svc.get(&ri, LEASE_NAMESPACE, LEASE_NAME).ok();
    let Some(current) = current else {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": LEASE_NAME, "namespace": LEASE_NAMESPACE},
            "spec": {"holderIdentity": opts.identity, "leaseDurationSeconds": duration,
                     "acquireTime": now, "renewTime": now, "leaseTransitions": 0},
        });
        return match svc
            .create(&ri, LEASE_NAMESPACE, lease, &WriteOptions::default())
            .await
        {
            Ok(_) => Round::Held,
            Err(_) => Round::Failed,
        };
    };
    let spec = current.value().get("spec").cloned().unwrap_or(json!({}));
    if observed.as_ref().map(|o| &o.spec) != Some(&spec) {
        *observed = Some(Observed {
            spec: spec.clone(),
            at: Instant::now(),
        });
    }
    let holder = spec
        .get("holderIdentity")
        .and_then(Value::as_str)
        .unwrap_or("");
    let held_for = spec
        .get("leaseDurationSeconds")
        .and_then(Value::as_u64)
        .map_or(opts.lease_duration, Duration::from_secs);
    let ours = holder == opts.identity;
    let expired = observed.as_ref().is_none_or(|o| o.at.elapsed() >= held_for);
    if !holder.is_empty() && !ours && !expired {
        return Round::Other;
    }
    let mut next = current.value().clone();
    let transitions = spec
        .get("leaseTransitions")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    next["spec"]["holderIdentity"] = json!(opts.identity);
    next["spec"]["leaseDurationSeconds"] = json!(duration);
    next["spec"]["renewTime"] = json!(now);
    if !ours {
        next["spec"]["acquireTime"] = json!(now);
        next["spec"]["leaseTransitions"] = json!(transitions + 1);
    }
    match write_at(svc, &ri, next, current.rv).await {
        Ok(w) => {
            *observed = Some(Observed {
                spec: w.object.value().get("spec").cloned().unwrap_or(json!({})),
                at: Instant::now(),
            });
            Round::Held
        }
        Err(_) => Round::Failed,
    }
}

/// Give the Lease up at shutdown so another host need not wait out the lease duration
/// (client-go's `ReleaseOnCancel`).
async fn release(svc: &Service, opts: &LeaderOptions) {
    let Some(ri) = lease_ri(svc) else { return };
    let Ok(current) = svc.get(&ri, LEASE_NAMESPACE, LEASE_NAME) else {
        return;
    };
    if meta::name(current.head()).is_empty()
        || current
            .value()
            .pointer("/spec/holderIdentity")
            .and_then(Value::as_str)
            != Some(opts.identity.as_str())
    {
        return;
    }
    let mut next = current.value().clone();
    next["spec"]["holderIdentity"] = json!("");
    next["spec"]["leaseDurationSeconds"] = json!(1);
    next["spec"]["renewTime"] = json!(now_micro());
    let _ = write_at(svc, &ri, next, current.rv).await;
}

/// Update the Lease only if it is still at revision `rv`: if another host wrote in between, this
/// round is lost (409).
async fn write_at(
    svc: &Service,
    ri: &ResourceInfo,
    mut next: Value,
    rv: u64,
) -> Result<crate::service::Written, crate::model::ApiError> {
    next["metadata"]["resourceVersion"] = json!(rv.to_string());
    svc.update(
        ri,
        LEASE_NAMESPACE,
        LEASE_NAME,
        next,
        crate::service::Subresource::Main,
        &WriteOptions::default(),
    )
    .await
}

/// Campaign for the Lease until `shutdown`, leading while it is held: acquire (retrying every
/// retry period), renew every retry period, and stop leading once no renewal succeeded within the
/// renew deadline; then campaign again.
pub async fn campaign(
    svc: Arc<Service>,
    opts: LeaderOptions,
    leading: watch::Sender<bool>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut observed = None;
    // When the last successful round started: a renewal counts from before it was sent.
    let mut last_renew: Option<Instant> = None;
    loop {
        let started = Instant::now();
        // A round gets what is left of the renew deadline, so a hung write cannot keep this host
        // leading past it.
        let budget = last_renew.map_or(opts.renew_deadline, |at| {
            (at + opts.renew_deadline).saturating_duration_since(started)
        });
        let round = tokio::time::timeout(budget, try_acquire_or_renew(&svc, &opts, &mut observed))
            .await
            .unwrap_or(Round::Failed);
        match (round, last_renew) {
            (Round::Held, _) => {
                if last_renew.is_none() {
                    tracing::info!(identity = %opts.identity, lease = %format!("{LEASE_NAMESPACE}/{LEASE_NAME}"), "leading the controllers");
                }
                last_renew = Some(started);
                leading.send_if_modified(|l| !std::mem::replace(l, true));
            }
            // Someone else holds it (the Lease was deleted and taken, say): stop at once.
            (Round::Other, Some(_)) => {
                tracing::error!(identity = %opts.identity, "leader election lost: another host holds the Lease; the controllers stop here");
                leading.send_replace(false);
                last_renew = None;
            }
            (_, Some(at)) if at.elapsed() >= opts.renew_deadline => {
                tracing::error!(identity = %opts.identity, "leader election lost: no renewal within the renew deadline; the controllers stop here");
                leading.send_replace(false);
                last_renew = None;
            }
            _ => {}
        }
        // While leading, wake no later than the renew deadline, so a host that cannot renew
        // steps down on time, not a retry period late.
        let pause = last_renew.map_or(opts.retry_period, |at| {
            opts.retry_period
                .min((at + opts.renew_deadline).saturating_duration_since(Instant::now()))
        });
        let stop = tokio::select! {
            _ = tokio::time::sleep(pause) => false,
            // Set, or its sender gone: the host is shutting down.
            _ = shutdown.wait_for(|s| *s) => true,
        };
        if stop {
            if leading.send_replace(false) {
                release(&svc, &opts).await;
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts' services on one store, each campaigning with short (real-time) durations.
    fn host(store: &Arc<dyn crate::store::Store>, id: &str) -> (Arc<Service>, LeaderOptions) {
        let opts = LeaderOptions {
            lease_duration: Duration::from_millis(600),
            renew_deadline: Duration::from_millis(400),
            retry_period: Duration::from_millis(50),
            identity: id.to_owned(),
        };
        let mut svc = Service::new(
            store.clone(),
            Arc::new(crate::model::Registry::with_builtins()),
        );
        let (leadership, _) = elected(&opts);
        svc.leadership = leadership;
        (Arc::new(svc), opts)
    }

    async fn until(what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn holder(svc: &Service) -> Option<String> {
        let ri = lease_ri(svc)?;
        let l = svc.get(&ri, LEASE_NAMESPACE, LEASE_NAME).ok()?;
        l.value()
            .pointer("/spec/holderIdentity")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_holder_at_a_time_takeover_after_the_lease_and_release_at_shutdown() {
        let (store, dir) = crate::store::sled_store::temp_store("leader");
        let (a, a_opts) = host(&store, "a");
        a.bootstrap().await.unwrap();
        let (b, b_opts) = host(&store, "b");
        let (a_lead, a_leading) = watch::channel(false);
        let (b_lead, b_leading) = watch::channel(false);
        let (a_stop, a_shutdown) = watch::channel(false);
        let (b_stop, b_shutdown) = watch::channel(false);
        let a_task = tokio::spawn(campaign(a.clone(), a_opts, a_lead, a_shutdown));
        until("a leads", || *a_leading.borrow()).await;
        tokio::spawn(campaign(b.clone(), b_opts.clone(), b_lead, b_shutdown));
        // b campaigns for longer than a lease duration while a renews: it never leads.
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(1500) {
            assert!(!*b_leading.borrow(), "two leaders");
            assert!(*a_leading.borrow(), "a lost a lease it renews");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(holder(&a).as_deref(), Some("a"));

        // a stops renewing without releasing (it died): b takes over once it has seen the
        // record unchanged for the lease duration, not before.
        a_task.abort();
        let died = Instant::now();
        until("b leads", || *b_leading.borrow()).await;
        assert!(
            died.elapsed() >= Duration::from_millis(400),
            "{:?}",
            died.elapsed()
        );
        assert_eq!(holder(&b).as_deref(), Some("b"));
        let ri = lease_ri(&b).unwrap();
        let lease = b.get(&ri, LEASE_NAMESPACE, LEASE_NAME).unwrap();
        assert_eq!(lease.value()["spec"]["leaseTransitions"], 1);
        drop(a_stop);

        // b shuts down: it releases the Lease, so a new campaigner need not wait it out.
        b_stop.send_replace(true);
        until("released", || holder(&b).as_deref() == Some("")).await;
        assert!(!*b_leading.borrow());
        let (c, c_opts) = host(&store, "c");
        let (c_lead, c_leading) = watch::channel(false);
        let (_c_stop, c_shutdown) = watch::channel(false);
        tokio::spawn(campaign(c.clone(), c_opts, c_lead, c_shutdown));
        let asked = Instant::now();
        // Released, it is taken in the first round; waiting out the (1 s) lease would take longer.
        until("c leads", || *c_leading.borrow()).await;
        assert!(
            asked.elapsed() < Duration::from_millis(900),
            "{:?}",
            asked.elapsed()
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
