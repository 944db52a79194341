//! The work queue every controller gets: deduplicated keys, never two reconciles of one key at
//! once, per-key exponential backoff (a failure counts only when its retry was due), a global
//! rate limit on retries, and delayed requeues (one pending per key, the earliest wins, as
//! client-go's delaying queue keeps them).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use tokio::sync::Notify;

/// First retry delay; doubles per counted failure.
pub const BACKOFF_BASE: Duration = Duration::from_millis(50);
/// Longest retry delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// Retries admitted per second across all keys (and burst), like client-go's default limiter.
const BUCKET_QPS: f64 = 10.0;
const BUCKET_BURST: f64 = 100.0;
/// The bucket's debt is bounded: a storm of failures delays retries by at most
/// [`BACKOFF_MAX`], and is forgotten as soon as that long has passed.
const BUCKET_FLOOR: f64 = -(BACKOFF_MAX.as_secs() as f64) * BUCKET_QPS;

/// What a finished reconcile asks of the queue for its key (kube-runtime's `Action` and error
/// policy in one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Reconciled: nothing until the next change.
    Done,
    /// Reconciled; look again after this long.
    RequeueAfter(Duration),
    /// Failed: retry with the key's backoff (and the global rate limit).
    Retry,
    /// Failed for good: not retried until the object changes.
    GiveUp,
}

struct State<K> {
    queue: VecDeque<K>,
    /// Keys waiting to be processed (in `queue`, or to be re-queued when their reconcile ends).
    dirty: HashSet<K>,
    /// Keys being reconciled right now.
    active: HashSet<K>,
    failures: HashMap<K, (u32, Instant)>,
    /// Keys with a delayed add pending, and when it is due.
    waiting: HashMap<K, Instant>,
    tokens: f64,
    refilled: Instant,
    shut: bool,
}

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                active: HashSet::new(),
                failures: HashMap::new(),
                waiting: HashMap::new(),
                tokens: BUCKET_BURST,
                refilled: Instant::now(),
                shut: false,
            }),
            ready: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue a key now (a no-op if it is already waiting).
    pub fn add(&self, key: K) {
        let mut s = self.lock();
        if s.shut || !s.dirty.insert(key.clone()) {
            return;
        }
        if !s.active.contains(&key) {
            s.queue.push_back(key);
            drop(s);
            self.ready.notify_one();
        }
    }

    /// Queue a key after `delay`. One delayed add is pending per key: a later one than the
    /// pending one is dropped, an earlier one replaces it.
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let at = Instant::now() + delay;
        {
            let mut s = self.lock();
            if s.shut || s.waiting.get(&key).is_some_and(|&due| due <= at) {
                return;
            }
            s.waiting.insert(key.clone(), at);
        }
        let q = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            let Some(q) = q.upgrade() else { return };
            // Replaced by an earlier one (which fired or will): nothing to do.
            let current = {
                let mut s = q.lock();
                let current = s.waiting.get(&key) == Some(&at);
                if current {
                    s.waiting.remove(&key);
                }
                current
            };
            if current {
                q.add(key);
            }
        });
    }

    /// A reconcile of `key` failed: retry with backoff. Returns the delay chosen.
    pub fn add_rate_limited(self: &Arc<Self>, key: K) -> Duration {
        let now = Instant::now();
        let delay = {
            let mut s = self.lock();
            let (count, due) = s.failures.get(&key).copied().unwrap_or((0, now));
            // Only a failure of a reconcile that ran when its retry was due raises the backoff
            // (an earlier, event-driven reconcile that fails again does not).
            let count = if now >= due { count + 1 } else { count.max(1) };
            let per_key = BACKOFF_BASE
                .saturating_mul(1u32 << (count - 1).min(20))
                .min(BACKOFF_MAX);
            // Global token bucket.
            let elapsed = now.duration_since(s.refilled).as_secs_f64();
            s.tokens = (s.tokens + elapsed * BUCKET_QPS).min(BUCKET_BURST);
            s.refilled = now;
            s.tokens = (s.tokens - 1.0).max(BUCKET_FLOOR);
            let bucket = if s.tokens >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-s.tokens / BUCKET_QPS)
            };
            let delay = per_key.max(bucket).min(BACKOFF_MAX);
            s.failures.insert(key.clone(), (count, now + delay));
            delay
        };
        self.add_after(key, delay);
        delay
    }

    /// The key reconciled fine: forget its failures.
    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    pub fn failures(&self, key: &K) -> u32 {
        self.lock().failures.get(key).map(|f| f.0).unwrap_or(0)
    }

    /// The next key to reconcile (marked active), or `None` once shut down.
    pub async fn next(&self) -> Option<K> {
        loop {
            let notified = self.ready.notified();
            {
                let mut s = self.lock();
                if s.shut {
                    return None;
                }
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.active.insert(key.clone());
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// The reconcile of `key` ended with `action` (the queue discipline every controller
    /// follows, built-in or Wasm): its failures are forgotten or counted, a requeue or a retry
    /// with backoff is scheduled, and the key is `done`.
    pub fn finish(self: &Arc<Self>, key: &K, action: Action) {
        match action {
            Action::Done | Action::GiveUp => self.forget(key),
            Action::RequeueAfter(after) => {
                self.forget(key);
                self.add_after(key.clone(), after);
            }
            Action::Retry => {
                self.add_rate_limited(key.clone());
            }
        }
        self.done(key);
    }

    /// The reconcile of `key` ended; if it changed meanwhile, it is queued again.
    pub fn done(&self, key: &K) {
        let mut s = self.lock();
        s.active.remove(key);
        if s.dirty.contains(key) {
            s.queue.push_back(key.clone());
            drop(s);
            self.ready.notify_one();
        }
    }

    /// Keys waiting.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn shutdown(&self) {
        self.lock().shut = true;
        self.ready.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dedups_and_never_runs_a_key_twice_at_once() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let a = q.next().await.unwrap();
        assert_eq!(a, "a");
        q.add("a"); // changed while active: waits for done
        assert_eq!(q.next().await.unwrap(), "b");
        assert!(q.is_empty());
        q.done(&"a");
        assert_eq!(q.next().await.unwrap(), "a");
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_grows_only_when_retries_were_due() {
        let q = WorkQueue::new();
        let d1 = q.add_rate_limited("k");
        assert_eq!(d1, BACKOFF_BASE);
        // Failing again before the retry was due does not raise the backoff.
        let d2 = q.add_rate_limited("k");
        assert_eq!(d2, BACKOFF_BASE);
        tokio::time::advance(Duration::from_millis(60)).await;
        let d3 = q.add_rate_limited("k");
        assert_eq!(d3, BACKOFF_BASE * 2);
        q.forget(&"k");
        assert_eq!(q.failures(&"k"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_adds_are_one_per_key_and_retries_stay_bounded() {
        let q = WorkQueue::new();
        q.add_after("k", Duration::from_secs(10));
        q.add_after("k", Duration::from_secs(20));
        q.add_after("k", Duration::from_secs(5));
        assert_eq!(q.lock().waiting.len(), 1);
        tokio::time::advance(Duration::from_secs(6)).await;
        tokio::task::yield_now().await;
        assert_eq!(q.next().await, Some("k"));
        q.done(&"k");
        // The replaced adds fire as no-ops.
        tokio::time::advance(Duration::from_secs(30)).await;
        tokio::task::yield_now().await;
        assert!(q.is_empty());
        assert!(q.lock().waiting.is_empty());
        // A storm of failures: the delay never passes BACKOFF_MAX, and the debt is bounded.
        let keys = ["a", "b", "c", "d", "e", "f", "g"];
        for i in 0..100_000usize {
            let d = q.add_rate_limited(keys[i % keys.len()]);
            assert!(d <= BACKOFF_MAX);
        }
        assert!(q.lock().tokens >= BUCKET_FLOOR);
        assert!(q.lock().waiting.len() <= 7);
    }

    #[tokio::test(start_paused = true)]
    async fn finish_applies_the_action() {
        let q = WorkQueue::new();
        q.add("k");
        let k = q.next().await.unwrap();
        q.finish(&k, Action::Retry);
        assert_eq!(q.failures(&"k"), 1);
        let k = tokio::time::timeout(Duration::from_secs(1), q.next())
            .await
            .expect("the retry comes after the backoff");
        q.finish(&k.unwrap(), Action::RequeueAfter(Duration::from_secs(10)));
        assert_eq!(q.failures(&"k"), 0, "a success forgets the failures");
        assert!(q.is_empty());
        tokio::time::advance(Duration::from_secs(11)).await;
        let k = q.next().await.unwrap();
        q.finish(&k, Action::GiveUp);
        q.finish(&"other", Action::Done);
        assert!(q.is_empty());
    }
}
