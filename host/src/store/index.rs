//! The in-memory read side of a store: every object's latest state per resource (persistent
//! ordered maps, so a snapshot is an O(1) clone), the bounded event history used for resuming
//! watches and reading past revisions, and the per-resource live feeds.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::sync::broadcast;

use super::{Event, Result, Snapshot, StoreError, StoredObject, WatchFrom, WatchStart};
use crate::model::{EventType, ObjectKey};

/// Events a watcher may fall behind by before it is cut off (it can then resume).
pub const LIVE_BUFFER: usize = 4096;

#[derive(Debug)]
pub struct Index {
    /// Latest committed revision.
    pub rv: u64,
    /// Every revision `>= floor` can be reconstructed from `history`.
    floor: u64,
    history_limit: usize,
    history: VecDeque<Arc<Event>>,
    objects: HashMap<String, imbl::OrdMap<String, Arc<StoredObject>>>,
    feeds: HashMap<String, broadcast::Sender<Arc<Event>>>,
}

impl Index {
    pub fn new(rv: u64, history_limit: usize) -> Self {
        Self {
            rv,
            floor: rv,
            history_limit: history_limit.max(1),
            history: VecDeque::new(),
            objects: HashMap::new(),
            feeds: HashMap::new(),
        }
    }

    /// Load one object at start-up (no event).
    pub fn load(&mut self, key: &ObjectKey, obj: Arc<StoredObject>) {
        self.objects
            .entry(key.resource.clone())
            .or_default()
            .insert(key.item_key(), obj);
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
        self.rv = event.rv;
        let event = Arc::new(event);
        if let Some(tx) = self.feeds.get(&event.key.resource) {
            // An error only means nobody listens right now.
            if tx.send(event.clone()).is_err() {
                self.feeds.remove(&event.key.resource);
            }
        }
        self.history.push_back(event);
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.floor = old.rv;
            }
        }
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
        for ev in self.history.iter().rev().take_while(|e| e.rv > at) {
            if ev.key.resource != resource {
                continue;
            }
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
        let live = self
            .feeds
            .entry(resource.to_owned())
            .or_insert_with(|| broadcast::channel(LIVE_BUFFER).0)
            .subscribe();
        match from {
            WatchFrom::Now => Ok(WatchStart {
                rv: self.rv,
                snapshot: Some(self.snapshot(resource, None)?),
                backlog: Vec::new(),
                live,
            }),
            WatchFrom::After(after) => {
                if after >= self.rv {
                    return Ok(WatchStart {
                        rv: self.rv,
                        snapshot: None,
                        backlog: Vec::new(),
                        live,
                    });
                }
                self.check_floor(after)?;
                let start = self.history.partition_point(|e| e.rv <= after);
                let backlog = self
                    .history
                    .range(start..)
                    .filter(|e| e.key.resource == resource)
                    .cloned()
                    .collect();
                Ok(WatchStart {
                    rv: self.rv,
                    snapshot: None,
                    backlog,
                    live,
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

    #[test]
    fn past_snapshots_undo_history_and_expire() {
        let mut idx = Index::new(0, 3);
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
}
