//! The in-memory read side of a store: every object's latest state per resource (persistent
//! ordered maps, so a snapshot is an O(1) clone), the bounded event history used for resuming
//! watches and reading past revisions, and the per-resource live feeds.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::broadcast;

use super::{Event, Result, Snapshot, StoreError, StoredObject, WatchFrom, WatchStart};
use crate::model::{EventType, ObjectKey};

/// Events a watcher may fall behind by before it is cut off (it can then resume).
pub const LIVE_BUFFER: usize = 4096;
/// The same for a watcher of one namespace (its feed has only that namespace's events; tokio
/// allocates a feed's ring up front, so there may be many of these small ones).
pub const NAMESPACE_LIVE_BUFFER: usize = 512;
/// Namespace feeds subscribed to between two sweeps of the idle ones.
const SWEEP_EVERY: u32 = 64;

/// Bytes charged to every event besides the objects it keeps alive: the `Event` itself and its
/// key's strings (an estimate; it keeps many tiny events from being free).
const EVENT_OVERHEAD: usize = 128;

/// What the history costs for one event: the bytes it alone keeps alive. An event's object is the
/// resource's current state (held by the live map anyway) until a later change replaces it, and
/// that later event holds it as its `prev` (consecutive events of one object share the same
/// `Arc`). So the old versions history holds are exactly the events' `prev`s, plus the final
/// state stamped with the deletion's revision that a delete event carries. Counted as serialized
/// JSON; the small parsed head kept beside it is not counted (nor a whole tree, kept only for an
/// object a request or an internal controller has read whole: see `StoredObject::value`).
fn cost(ev: &Event) -> usize {
    let prev = ev.prev.as_ref().map_or(0, |p| p.json.len());
    let own = match ev.kind {
        EventType::Deleted => ev.object.json.len(),
        EventType::Added | EventType::Modified => 0,
    };
    EVENT_OVERHEAD + ev.key.resource.len() + ev.key.namespace.len() + ev.key.name.len() + prev + own
}

/// How much change history the index keeps: the oldest events are dropped when there are more than
/// `events` of them or they cost more than `bytes` (see [`cost`]), whichever comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimit {
    pub events: usize,
    pub bytes: usize,
}

#[derive(Debug)]
pub struct Index {
    /// Latest committed revision.
    pub rv: u64,
    /// Every revision `>= floor` can be reconstructed from `history`.
    floor: u64,
    limit: HistoryLimit,
    /// Every resource's events, oldest first: what the limits drop from.
    history: VecDeque<Arc<Event>>,
    /// The same events per resource (the same `Arc`s): what a read at a past revision or a
    /// watch's resume walks, so its cost is its own resource's changes, not the cluster's (as
    /// kube's watch cache keeps a history per resource).
    by_resource: HashMap<String, VecDeque<Arc<Event>>>,
    /// Sum of [`cost`] over `history`.
    history_bytes: usize,
    objects: HashMap<String, imbl::OrdMap<String, Arc<StoredObject>>>,
    feeds: HashMap<String, Feed>,
    /// Feeds of one namespace of a resource, for the watchers confined to it: a write in one
    /// namespace wakes that namespace's watchers and the cluster-wide ones, not every watcher
    /// of the kind (kube's cacher indexes its watchers by namespace the same way). Each has its
    /// own counter, so a namespace's watchers know when they have all of its events.
    /// By resource, then namespace (looked up by `&str`: no key is built on a write).
    namespace_feeds: HashMap<String, HashMap<String, Feed>>,
    /// Namespace subscriptions since the last sweep of idle namespace feeds.
    since_sweep: u32,
}

/// A watched resource's live feed, and the revision of its latest event published to it (or,
/// before any, the revision when it was first watched): how a watcher's cache tells it has
/// every change the store has (see [`WatchStart::published`]). Let go once nobody listens and
/// no watcher or cache holds the counter.
#[derive(Debug)]
struct Feed {
    tx: broadcast::Sender<Arc<Event>>,
    published: Arc<AtomicU64>,
}

impl Feed {
    fn new(rv: u64) -> Self {
        Self::with_capacity(rv, LIVE_BUFFER)
    }

    fn with_capacity(rv: u64, capacity: usize) -> Self {
        Self {
            tx: broadcast::channel(capacity).0,
            published: Arc::new(AtomicU64::new(rv)),
        }
    }

    /// Whether anyone listens, or follows its counter.
    fn in_use(&self) -> bool {
        self.tx.receiver_count() > 0 || Arc::strong_count(&self.published) > 1
    }
}

impl Index {
    pub fn new(rv: u64, limit: HistoryLimit) -> Self {
        Self {
            rv,
            floor: rv,
            limit: HistoryLimit {
                events: limit.events.max(1),
                bytes: limit.bytes,
            },
            history: VecDeque::new(),
            by_resource: HashMap::new(),
            history_bytes: 0,
            objects: HashMap::new(),
            feeds: HashMap::new(),
            namespace_feeds: HashMap::new(),
            since_sweep: 0,
        }
    }

    /// Start over from `old`'s replacement (a backend that read everything again): keep `old`'s
    /// per-resource counters, raised to this index's revision, so a watcher's reader that kept
    /// one sees at once that its cache is behind, and the watchers that subscribe again get the
    /// same counters. The feeds are new: `old`'s close, and its watchers resume (and get 410).
    pub fn carry_counters(&mut self, old: &mut Index) {
        for (resource, feed) in old.feeds.drain() {
            feed.published.fetch_max(self.rv, Ordering::Release);
            self.feeds.insert(
                resource,
                Feed {
                    published: feed.published,
                    ..Feed::new(self.rv)
                },
            );
        }
        for (resource, per_ns) in old.namespace_feeds.drain() {
            for (ns, feed) in per_ns {
                if !feed.in_use() {
                    continue;
                }
                feed.published.fetch_max(self.rv, Ordering::Release);
                self.namespace_feeds
                    .entry(resource.clone())
                    .or_default()
                    .insert(
                        ns,
                        Feed {
                            published: feed.published,
                            ..Feed::with_capacity(self.rv, NAMESPACE_LIVE_BUFFER)
                        },
                    );
            }
        }
    }

    /// Load one object at start-up (no event).
    pub fn load(&mut self, key: &ObjectKey, obj: Arc<StoredObject>) {
        self.objects
            .entry(key.resource.clone())
            .or_default()
            .insert(key.item_key(), obj);
    }

    /// Every object now, per resource: O(1) clones of the persistent maps (a snapshot a disk
    /// engine writes out while writes go on).
    pub fn all_objects(&self) -> Vec<(String, imbl::OrdMap<String, Arc<StoredObject>>)> {
        self.objects
            .iter()
            .map(|(resource, items)| (resource.clone(), items.clone()))
            .collect()
    }

    pub fn get(&self, key: &ObjectKey) -> Option<Arc<StoredObject>> {
        self.objects
            .get(&key.resource)?
            .get(&key.item_key())
            .cloned()
    }

    /// Apply one committed event: update the map, record history, publish to live watchers.
    pub fn apply(&mut self, event: Event) {
        let map = self.objects.entry(event.key.resource.clone()).or_default();
        match event.kind {
            EventType::Deleted => {
                map.remove(&event.key.item_key());
            }
            EventType::Added | EventType::Modified => {
                map.insert(event.key.item_key(), event.object.clone());
            }
        }
        // Never backwards: a backend that learned a later revision without an event (an etcd
        // progress notification) keeps it.
        self.rv = self.rv.max(event.rv);
        let event = Arc::new(event);
        if let Some(feed) = self.feeds.get(&event.key.resource) {
            // Before the send: a reader that sees its watcher at this revision has the event.
            feed.published.store(event.rv, Ordering::Release);
            // An error only means nobody listens right now. Once nobody follows the counter
            // either, the feed goes (a later watch starts one at the then current revision).
            if feed.tx.send(event.clone()).is_err() && Arc::strong_count(&feed.published) == 1 {
                self.feeds.remove(&event.key.resource);
            }
        }
        if !event.key.namespace.is_empty() {
            if let Some(per_ns) = self.namespace_feeds.get_mut(&event.key.resource) {
                if let Some(feed) = per_ns.get(&event.key.namespace) {
                    feed.published.store(event.rv, Ordering::Release);
                    if feed.tx.send(event.clone()).is_err()
                        && Arc::strong_count(&feed.published) == 1
                    {
                        per_ns.remove(&event.key.namespace);
                        if per_ns.is_empty() {
                            self.namespace_feeds.remove(&event.key.resource);
                        }
                    }
                }
            }
        }
        self.history_bytes += cost(&event);
        match self.by_resource.get_mut(&event.key.resource) {
            Some(q) => q.push_back(event.clone()),
            None => {
                self.by_resource
                    .insert(event.key.resource.clone(), VecDeque::from([event.clone()]));
            }
        }
        self.history.push_back(event);
        // The newest event always stays, even alone over the byte budget: a watch from the
        // revision just before it must still resume.
        while self.history.len() > self.limit.events
            || (self.history_bytes > self.limit.bytes && self.history.len() > 1)
        {
            let Some(old) = self.history.pop_front() else {
                break;
            };
            // The oldest of all is the oldest of its resource.
            if let Some(q) = self.by_resource.get_mut(&old.key.resource) {
                q.pop_front();
                if q.is_empty() {
                    self.by_resource.remove(&old.key.resource);
                }
            }
            self.history_bytes -= cost(&old);
            self.floor = old.rv;
        }
    }

    /// Events held in history and what they cost (see [`cost`]).
    #[cfg(test)]
    pub fn history_usage(&self) -> (usize, usize) {
        (self.history.len(), self.history_bytes)
    }

    fn check_floor(&self, rv: u64) -> Result<()> {
        if rv < self.floor {
            return Err(StoreError::TooOld {
                requested: rv,
                oldest: self.floor + 1,
            });
        }
        Ok(())
    }

    pub fn snapshot(&self, resource: &str, at: Option<u64>) -> Result<Snapshot> {
        let mut items = self.objects.get(resource).cloned().unwrap_or_default();
        let Some(at) = at.filter(|at| *at < self.rv) else {
            return Ok(Snapshot { rv: self.rv, items });
        };
        self.check_floor(at)?;
        // Undo, newest first, every change to this resource made after `at`.
        let events = self.by_resource.get(resource).into_iter().flatten();
        for ev in events.rev().take_while(|e| e.rv > at) {
            match &ev.prev {
                Some(prev) => {
                    items.insert(ev.key.item_key(), prev.clone());
                }
                None => {
                    items.remove(&ev.key.item_key());
                }
            }
        }
        Ok(Snapshot { rv: at, items })
    }

    pub fn watch(&mut self, resource: &str, from: WatchFrom) -> Result<WatchStart> {
        self.watch_in(resource, None, from)
    }

    /// [`Index::watch`] of one namespace of `resource` (its live feed carries that namespace's
    /// events only; the counter is the resource's).
    pub fn watch_in(
        &mut self,
        resource: &str,
        namespace: Option<&str>,
        from: WatchFrom,
    ) -> Result<WatchStart> {
        let rv = self.rv;
        let feed = match namespace.filter(|ns| !ns.is_empty()) {
            None => self
                .feeds
                .entry(resource.to_owned())
                .or_insert_with(|| Feed::new(rv)),
            Some(ns) => {
                // Feeds nobody follows any more go now and then (one whose namespace has no
                // further event would otherwise stay).
                self.since_sweep += 1;
                if self.since_sweep >= SWEEP_EVERY {
                    self.since_sweep = 0;
                    self.namespace_feeds.retain(|_, per_ns| {
                        per_ns.retain(|_, f| f.in_use());
                        !per_ns.is_empty()
                    });
                }
                self.namespace_feeds
                    .entry(resource.to_owned())
                    .or_default()
                    .entry(ns.to_owned())
                    .or_insert_with(|| Feed::with_capacity(rv, NAMESPACE_LIVE_BUFFER))
            }
        };
        let (live, published) = (feed.tx.subscribe(), feed.published.clone());
        match from {
            WatchFrom::Now => Ok(WatchStart {
                rv: self.rv,
                snapshot: Some(self.snapshot(resource, None)?),
                backlog: Vec::new(),
                live,
                published,
            }),
            WatchFrom::After(after) => {
                if after >= self.rv {
                    return Ok(WatchStart {
                        rv: self.rv,
                        snapshot: None,
                        backlog: Vec::new(),
                        live,
                        published,
                    });
                }
                self.check_floor(after)?;
                let backlog = match self.by_resource.get(resource) {
                    Some(q) => {
                        let start = q.partition_point(|e| e.rv <= after);
                        q.range(start..).cloned().collect()
                    }
                    None => Vec::new(),
                };
                Ok(WatchStart {
                    rv: self.rv,
                    snapshot: None,
                    backlog,
                    live,
                    published,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(rv: u64, v: &str) -> Arc<StoredObject> {
        Arc::new(StoredObject::new(rv, json!({"metadata": {"name": "a"}, "data": v})).unwrap())
    }

    fn ev(rv: u64, kind: EventType, name: &str, prev: Option<Arc<StoredObject>>) -> Event {
        Event {
            rv,
            kind,
            key: ObjectKey::new("configmaps", "ns", name),
            object: obj(rv, &rv.to_string()),
            prev,
        }
    }

    /// A backend that starts its index over keeps the resources' counters, raised to the new
    /// revision: a cache that followed the old index is behind until it relists.
    #[test]
    fn an_index_started_over_keeps_the_counters_raised() {
        let limit = HistoryLimit {
            events: 16,
            bytes: usize::MAX,
        };
        let mut old = Index::new(0, limit);
        let counter = old.watch("configmaps", WatchFrom::Now).unwrap().published;
        old.apply(ev(1, EventType::Added, "a", None));
        assert_eq!(counter.load(Ordering::Acquire), 1);
        let mut fresh = Index::new(9, limit);
        fresh.carry_counters(&mut old);
        assert_eq!(counter.load(Ordering::Acquire), 9);
        let again = fresh.watch("configmaps", WatchFrom::Now).unwrap().published;
        assert!(Arc::ptr_eq(&counter, &again));
        fresh.apply(ev(10, EventType::Added, "b", None));
        assert_eq!(counter.load(Ordering::Acquire), 10);
        // Held by a cache: kept while the feed has no receiver; then let go with the feed.
        drop(again);
        fresh.apply(ev(11, EventType::Added, "c", None));
        assert!(fresh.feeds.contains_key("configmaps"));
        drop(counter);
        fresh.watch("configmaps", WatchFrom::Now).unwrap();
        fresh.apply(ev(12, EventType::Added, "d", None));
        assert!(!fresh.feeds.contains_key("configmaps"));
    }

    /// A watcher of one namespace is woken by that namespace's events only, and its counter
    /// moves with them; a cluster-wide watcher has every event.
    #[test]
    fn a_namespace_has_a_feed_of_its_own() {
        let mut idx = Index::new(
            0,
            HistoryLimit {
                events: 16,
                bytes: usize::MAX,
            },
        );
        let in_ns = |rv: u64, ns: &str| Event {
            key: ObjectKey::new("configmaps", ns, &format!("c{rv}")),
            ..ev(rv, EventType::Added, "x", None)
        };
        let mut mine = idx
            .watch_in("configmaps", Some("a"), WatchFrom::Now)
            .unwrap();
        let mut all = idx.watch("configmaps", WatchFrom::Now).unwrap();
        idx.apply(in_ns(1, "b"));
        idx.apply(in_ns(2, "a"));
        idx.apply(in_ns(3, "b"));
        assert_eq!(mine.live.try_recv().map(|e| e.rv).ok(), Some(2));
        assert!(mine.live.try_recv().is_err(), "only namespace a's events");
        assert_eq!(mine.published.load(Ordering::Acquire), 2);
        let rvs: Vec<u64> = std::iter::from_fn(|| all.live.try_recv().ok().map(|e| e.rv)).collect();
        assert_eq!(rvs, [1, 2, 3]);
        assert_eq!(all.published.load(Ordering::Acquire), 3);
        // Nobody left on it: the namespace's feed goes with its next event.
        drop(mine);
        idx.apply(in_ns(4, "a"));
        assert!(idx.namespace_feeds.is_empty());
        // Or, with no further event there, with a sweep on later subscriptions.
        drop(
            idx.watch_in("configmaps", Some("quiet"), WatchFrom::Now)
                .unwrap(),
        );
        let kept = idx
            .watch_in("configmaps", Some("kept"), WatchFrom::Now)
            .unwrap();
        for i in 0..SWEEP_EVERY {
            drop(
                idx.watch_in("secrets", Some(&format!("n{i}")), WatchFrom::Now)
                    .unwrap(),
            );
        }
        let has = |idx: &Index, ns: &str| {
            idx.namespace_feeds
                .get("configmaps")
                .is_some_and(|m| m.contains_key(ns))
        };
        assert!(!has(&idx, "quiet"));
        assert!(has(&idx, "kept"), "still followed");
        drop(kept);
    }

    /// A past read and a resume walk their own resource's history, which the limits trim with
    /// the rest.
    #[test]
    fn each_resource_keeps_its_own_history() {
        let mut idx = Index::new(
            0,
            HistoryLimit {
                events: 4,
                bytes: usize::MAX,
            },
        );
        let other = |rv: u64| Event {
            key: ObjectKey::new("secrets", "ns", &format!("s{rv}")),
            ..ev(rv, EventType::Added, "x", None)
        };
        idx.apply(ev(1, EventType::Added, "a", None));
        idx.apply(other(2));
        idx.apply(ev(3, EventType::Added, "b", None));
        idx.apply(other(4));
        idx.apply(other(5));
        // Revision 1 is gone from every history; the secrets' own is 2..=5 less 3.
        assert_eq!(idx.by_resource["configmaps"].len(), 1);
        assert_eq!(idx.by_resource["secrets"].len(), 3);
        let s = idx.snapshot("configmaps", Some(2)).unwrap();
        assert_eq!(s.items.keys().collect::<Vec<_>>(), ["ns/a"]);
        let w = idx.watch("configmaps", WatchFrom::After(1)).unwrap();
        let rvs: Vec<u64> = w.backlog.iter().map(|e| e.rv).collect();
        assert_eq!(rvs, [3]);
        idx.apply(other(6));
        idx.apply(other(7));
        assert!(
            !idx.by_resource.contains_key("configmaps"),
            "trimmed with the rest"
        );
    }

    #[test]
    fn past_snapshots_undo_history_and_expire() {
        let mut idx = Index::new(
            0,
            HistoryLimit {
                events: 3,
                bytes: usize::MAX,
            },
        );
        idx.apply(ev(1, EventType::Added, "a", None));
        let a1 = idx.get(&ObjectKey::new("configmaps", "ns", "a"));
        idx.apply(ev(2, EventType::Added, "b", None));
        idx.apply(ev(3, EventType::Modified, "a", a1.clone()));
        let s = idx.snapshot("configmaps", Some(1)).unwrap();
        assert_eq!(s.items.len(), 1);
        assert_eq!(s.items.get("ns/a").map(|o| o.rv), Some(1));
        let s = idx.snapshot("configmaps", Some(2)).unwrap();
        assert_eq!(s.items.len(), 2);
        idx.apply(ev(4, EventType::Deleted, "b", None));
        // history now holds revisions 2..=4: revision 1 is still reconstructable, 0 is not.
        assert!(idx.snapshot("configmaps", Some(1)).is_ok());
        assert!(matches!(
            idx.snapshot("configmaps", Some(0)),
            Err(StoreError::TooOld {
                requested: 0,
                oldest: 2
            })
        ));
        let w = idx.watch("configmaps", WatchFrom::After(2)).unwrap();
        assert_eq!(
            w.backlog.iter().map(|e| e.rv).collect::<Vec<_>>(),
            vec![3, 4]
        );
        assert!(idx.watch("configmaps", WatchFrom::After(0)).is_err());
    }

    fn big(rv: u64, size: usize) -> Arc<StoredObject> {
        Arc::new(
            StoredObject::new(
                rv,
                json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(size)}}),
            )
            .unwrap(),
        )
    }

    /// Patches of one big object: each event keeps one old version alive (its `prev`), so the
    /// byte budget bounds how many are kept; past revisions inside the window still reconstruct,
    /// older ones are Expired, and watches resume only from inside the window.
    #[test]
    fn byte_budget_drops_oldest_versions() {
        const SIZE: usize = 100_000;
        let mut idx = Index::new(
            0,
            HistoryLimit {
                events: 1_000,
                bytes: 5 * SIZE + SIZE / 2,
            },
        );
        let key = ObjectKey::new("configmaps", "ns", "big");
        let mut prev: Option<Arc<StoredObject>> = None;
        for rv in 1..=20 {
            let object = big(rv, SIZE);
            idx.apply(Event {
                rv,
                kind: if prev.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                },
                key: key.clone(),
                object: object.clone(),
                prev: prev.take(),
            });
            prev = Some(object);
            let (events, bytes) = idx.history_usage();
            assert!(bytes <= 5 * SIZE + SIZE / 2, "rv {rv}: {bytes} bytes");
            assert!(events >= 1);
        }
        // Each modification costs one ~100 kB old version: five fit in the budget (the ADDED
        // event, which costs nearly nothing, left long ago).
        let (events, bytes) = idx.history_usage();
        assert_eq!(events, 5, "{bytes} bytes");
        // Revisions 15..=20 reconstruct; 14 is gone.
        assert_eq!(
            idx.snapshot("configmaps", Some(15))
                .unwrap()
                .items
                .get("ns/big")
                .map(|o| o.rv),
            Some(15)
        );
        assert!(matches!(
            idx.snapshot("configmaps", Some(14)),
            Err(StoreError::TooOld {
                requested: 14,
                oldest: 16
            })
        ));
        let w = idx.watch("configmaps", WatchFrom::After(15)).unwrap();
        assert_eq!(
            w.backlog.iter().map(|e| e.rv).collect::<Vec<_>>(),
            vec![16, 17, 18, 19, 20]
        );
        assert!(idx.watch("configmaps", WatchFrom::After(14)).is_err());
        // Dropped versions are freed: only history (five prevs) and the live map hold objects.
        let held: usize = idx
            .history
            .iter()
            .filter_map(|e| e.prev.as_ref())
            .filter(|p| Arc::strong_count(p) == 2)
            .count();
        assert_eq!(
            held, 4,
            "each prev but the oldest is also the previous event's object"
        );
    }

    /// Creates cost only their fixed overhead (the object is the live state); a delete costs the
    /// final state it carries and its prev.
    #[test]
    fn cost_counts_what_history_alone_keeps() {
        let a = big(1, 1000);
        let added = Event {
            rv: 1,
            kind: EventType::Added,
            key: ObjectKey::new("configmaps", "ns", "big"),
            object: a.clone(),
            prev: None,
        };
        assert!(cost(&added) < 200);
        let deleted = Event {
            rv: 2,
            kind: EventType::Deleted,
            key: ObjectKey::new("configmaps", "ns", "big"),
            object: big(2, 1000),
            prev: Some(a),
        };
        assert!(cost(&deleted) > 2000 && cost(&deleted) < 2400);
    }

    /// One event bigger than the whole budget is still kept (alone), so a watch from the
    /// revision before it resumes.
    #[test]
    fn the_newest_event_stays_even_over_budget() {
        let mut idx = Index::new(
            0,
            HistoryLimit {
                events: 100,
                bytes: 10,
            },
        );
        idx.apply(ev(1, EventType::Added, "a", None));
        let a1 = idx.get(&ObjectKey::new("configmaps", "ns", "a"));
        idx.apply(ev(2, EventType::Modified, "a", a1));
        assert_eq!(idx.history_usage().0, 1);
        let w = idx.watch("configmaps", WatchFrom::After(1)).unwrap();
        assert_eq!(w.backlog.len(), 1);
        assert!(idx.watch("configmaps", WatchFrom::After(0)).is_err());
    }
}
