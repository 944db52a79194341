//! Events expire, as kube-apiserver's `--event-ttl` makes them (1 h by default): kube stores
//! each Event with an etcd lease of that length, renewed by every write, so an Event goes an
//! hour after it was last written. Here the collector follows Events and remembers when each
//! was last written (or, for those already stored when the host starts, when it started: the
//! hour starts over at a restart), sweeps every so often, and deletes the Events not written
//! for the TTL, conditional on the version it saw (one written meanwhile stays).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Follower, Observed, Reconciled};
use crate::model::{meta, ResourceInfo};
use crate::service::{DeleteOptions, Service};

pub const IDENTITY: super::Identity = super::Identity {
    name: "event-ttl",
    description: "Deletes Events not written for --event-ttl (kube-apiserver's event TTL, 1 h).",
    workers: 2,
};
const EVENTS: &str = "events";
/// The longest wait between sweeps.
const MAX_SWEEP: Duration = Duration::from_secs(30);

/// Keys: `(namespace, name)` of an Event past its TTL.
pub struct EventTtl {
    base: super::Base<(String, String)>,
    ttl: Duration,
    /// Every stored Event: when it was last written, and its resourceVersion then.
    written: Mutex<HashMap<(String, String), (Instant, u64)>>,
}

impl EventTtl {
    pub fn new(service: Arc<Service>, ttl: Duration) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            ttl,
            written: Mutex::default(),
        })
    }

    fn written(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), (Instant, u64)>> {
        self.written.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        // The sweeper: queues the Events past their TTL, every half TTL (at most 30 s).
        let this = Arc::downgrade(self);
        let period = (self.ttl / 2).clamp(Duration::from_millis(100), MAX_SWEEP);
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(period) => {}
                    _ = stop.changed() => return,
                }
                let Some(this) = this.upgrade() else { return };
                let due: Vec<(String, String)> = this
                    .written()
                    .iter()
                    .filter(|(_, (at, _))| at.elapsed() >= this.ttl)
                    .map(|(k, _)| k.clone())
                    .collect();
                for key in due {
                    this.base.queue.add(key);
                }
            }
        });
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    async fn reconcile(&self, ns: &str, name: &str) -> Reconciled {
        let key = (ns.to_owned(), name.to_owned());
        let Some((at, rv)) = self.written().get(&key).copied() else {
            return Ok(None);
        };
        if at.elapsed() < self.ttl {
            return Ok(None);
        }
        let Some(events) = self.base.service.registry.lookup("", "v1", EVENTS) else {
            return Ok(None);
        };
        let opts = DeleteOptions {
            precondition_rv: Some(rv.to_string()),
            ..Default::default()
        };
        match self.base.service.delete(&events, ns, name, &opts).await {
            // Gone (its delete event forgets it), or written since (its event renewed it).
            Ok(_) => Ok(None),
            Err(e) if e.code == 404 || e.code == 409 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl super::Reconcile<(String, String)> for EventTtl {
    fn reconcile_key(
        &self,
        key: &(String, String),
    ) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(&key.0, &key.1)
    }
}

impl Follower for EventTtl {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        if !ri.group.is_empty() || ri.resource != EVENTS {
            return;
        }
        let v = obj.head();
        let key = (meta::namespace(v).to_owned(), meta::name(v).to_owned());
        match how {
            Observed::Deleted => {
                self.written().remove(&key);
            }
            // A relist brings the same versions again: their clocks keep running.
            Observed::Listed | Observed::Added | Observed::Modified => {
                let mut w = self.written();
                if w.get(&key).is_none_or(|(_, rv)| *rv != obj.rv) {
                    w.insert(key, (Instant::now(), obj.rv));
                }
            }
        }
    }
}
