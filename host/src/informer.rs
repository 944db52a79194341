//! The one list/watch loop every controller runs, in the style of kube-runtime.
//!
//! - A [`Watcher`] follows one resource of the store (and a filter): it lists, then watches from
//!   the list's revision, resumes after a lag from the last revision it saw, and relists when
//!   that revision has left the history (the store's 410). It yields [`Event`]s: `Init`, one
//!   `InitApply` per listed object, `InitDone`, then `Apply` and `Delete`; a relist yields
//!   `Init ... InitDone` again. An object that stops matching the filter is a `Delete`, as kube's
//!   watch with a label selector reports it.
//! - A [`Reflector`] applies those events to a cache (one writer, many [`Reader`]s). A list is
//!   buffered and swapped in atomically at `InitDone`, so objects deleted between two lists are
//!   forgotten then; readers never see a half-listed cache; `synced` turns true at the first
//!   `InitDone`. Applying an event returns the [`Change`]s a controller acts on: nothing during a
//!   list, then every listed object (with the version cached before) and every forgotten one.
//!
//! The watcher reads its events from a [`Source`]: the store in the host, scripted in-memory
//! streams in the tests.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use tokio::sync::broadcast::{self, error::RecvError};

use crate::model::{meta, EventType};
use crate::service::Filter;
use crate::store::{Store, StoreError, StoredObject, WatchFrom, WatchStart};

#[derive(Debug, thiserror::Error)]
pub enum InformerError {
    #[error("starting the watch of {resource}: {source}")]
    Watch {
        resource: String,
        source: StoreError,
    },
}

pub type Obj = Arc<StoredObject>;

/// What a watcher yields.
#[derive(Debug, Clone)]
pub enum Event {
    /// A list starts: what follows up to `InitDone` is the whole state.
    Init,
    InitApply(Obj),
    /// The list is complete.
    InitDone,
    /// Created (or now matching the filter).
    Added(Obj),
    /// Changed.
    Apply(Obj),
    /// Deleted (or no longer matching the filter): its last state.
    Delete(Obj),
}

/// Where a watcher gets its list and events: one resource of the store.
pub trait Source: Send {
    fn watch(&mut self, from: WatchFrom) -> Result<WatchStart, StoreError>;
    /// What it follows, for logs.
    fn resource(&self) -> &str;
}

/// One resource of the store (its storage key, `group_resource`), or one namespace of it.
pub struct StoreSource {
    pub store: Arc<dyn Store>,
    pub resource: String,
    /// Only this namespace's events on the live feed (the filter must be confined to it too).
    pub namespace: Option<String>,
}

impl Source for StoreSource {
    fn watch(&mut self, from: WatchFrom) -> Result<WatchStart, StoreError> {
        self.store
            .watch_in(&self.resource, self.namespace.as_deref(), from)
    }

    fn resource(&self) -> &str {
        &self.resource
    }
}

enum State {
    /// Needs a (re)list.
    Empty,
    /// Lagged behind the live feed: resume after this revision.
    Resume(u64),
    Watching {
        live: broadcast::Receiver<Arc<crate::store::Event>>,
        last: u64,
    },
    /// The store closed or failed: nothing more.
    Done,
}

/// What a watcher does when what it missed has left the history (the store's 410).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// List again (`Init ... InitDone`): informers.
    Relist,
    /// End (`next` gives `None`, [`Watcher::expired`] says why): HTTP watches, whose client
    /// relists itself.
    End,
}

/// An entry of [`Watcher::pending`].
enum Pending {
    /// Yielded as it is.
    Ready(Event),
    /// An object of the initial list: an `InitApply` if the filter takes it.
    Listed(Arc<crate::store::StoredObject>),
    /// A change from the history: as the filter translates it ([`Watcher::translate`]).
    Change(Arc<crate::store::Event>),
}

/// A list + watch of one resource as a stream of [`Event`]s (see the module docs).
pub struct Watcher<S> {
    source: S,
    filter: Option<Filter>,
    state: State,
    /// Events to yield, each with the revision the stream is at once it is yielded; a listed
    /// object or a missed change is judged by the filter only when its turn comes, in
    /// [`Watcher::next`], which paces the judging (`crate::pace`).
    pending: VecDeque<(u64, Pending)>,
    /// The revision of the last event yielded from `pending`.
    yielded: u64,
    expiry: Expiry,
    expired: Option<StoreError>,
    /// With [`Expiry::End`]: the stream ended because it fell behind the live feed.
    lagged: bool,
    /// The store's counter of the revision last published for this resource (from the first
    /// start on; the store keeps one per resource).
    published: Option<Arc<AtomicU64>>,
    /// A reflector's `applied` counter (see [`run`]), moved on when the filter skips a live
    /// event: its cache then still has every change up to it.
    skipped: Option<Arc<AtomicU64>>,
}

impl<S: Source> Watcher<S> {
    pub fn new(source: S, filter: Option<Filter>) -> Self {
        Self {
            source,
            filter,
            state: State::Empty,
            pending: VecDeque::new(),
            yielded: 0,
            expiry: Expiry::Relist,
            expired: None,
            lagged: false,
            published: None,
            skipped: None,
        }
    }

    /// A watcher that continues after revision `rv` (of a list the caller made and seeded its
    /// reflector with, [`Reflector::seed`], or that an HTTP client names) instead of listing
    /// first.
    pub fn resume(source: S, filter: Option<Filter>, rv: u64) -> Self {
        Self {
            state: State::Resume(rv),
            yielded: rv,
            ..Self::new(source, filter)
        }
    }

    /// What to do when the history no longer has what the watcher missed.
    pub fn on_expiry(mut self, expiry: Expiry) -> Self {
        self.expiry = expiry;
        self
    }

    /// Make the first list or watch now rather than at the first [`Watcher::next`]: a resume
    /// from a revision the history no longer has fails here (with [`StoreError::TooOld`]).
    pub fn start(&mut self) -> Result<(), StoreError> {
        match self.state {
            State::Empty => {
                let start = self.source.watch(WatchFrom::Now)?;
                self.started(start, None);
            }
            State::Resume(last) => {
                let start = self.source.watch(WatchFrom::After(last))?;
                self.started(start, Some(last));
            }
            State::Watching { .. } | State::Done => {}
        }
        Ok(())
    }

    /// Why the stream ended, if it ended because the history had lost what it missed
    /// ([`Expiry::End`]).
    pub fn expired(&self) -> Option<&StoreError> {
        self.expired.as_ref()
    }

    /// With [`Expiry::End`]: whether the stream ended because the watcher fell behind (the live
    /// feed overflowed, or the history lost what it missed).
    pub fn fell_behind(&self) -> bool {
        self.lagged || self.expired.is_some()
    }

    /// The revision up to which every event has been yielded (or filtered out): what a bookmark
    /// may claim.
    pub fn revision(&self) -> u64 {
        if !self.pending.is_empty() {
            return self.yielded;
        }
        match &self.state {
            State::Watching { last, .. } | State::Resume(last) => *last,
            State::Empty | State::Done => self.yielded,
        }
    }

    /// What a bookmark may claim, given the store's revision `store_rv` read just before: the
    /// store's own when nothing is pending and this resource published nothing past what was
    /// yielded (kube's cacher moves its bookmarks on with etcd's progress notifications), so
    /// the watchers of a quiet resource resume within the history however busy the others are.
    pub fn bookmark_revision(&self, store_rv: u64) -> u64 {
        let own = self.revision();
        if !self.pending.is_empty() {
            return own;
        }
        match (&self.state, &self.published) {
            (State::Watching { last, .. }, Some(p))
                if p.load(std::sync::atomic::Ordering::Acquire) <= *last =>
            {
                own.max(store_rv)
            }
            _ => own,
        }
    }

    /// The store's revision of the latest event published for this resource, once started:
    /// with [`Watcher::revision`] at or past it, every change the store has was yielded.
    pub fn published(&self) -> Option<&Arc<AtomicU64>> {
        self.published.as_ref()
    }

    fn matches(&self, obj: &StoredObject) -> bool {
        self.filter.as_ref().is_none_or(|f| f.matches(obj))
    }

    /// A store event as the filter sees it: an object that starts matching is added, one that
    /// stops matching is deleted.
    fn translate(&self, ev: &crate::store::Event) -> Option<Event> {
        let now = ev.kind != EventType::Deleted && self.matches(&ev.object);
        let before = ev.prev.as_deref().is_some_and(|p| self.matches(p));
        match (ev.kind, before, now) {
            (EventType::Deleted, true, _) => Some(Event::Delete(ev.object.clone())),
            (EventType::Deleted, false, _) => {
                // No previous state recorded: judge by the final one.
                (ev.prev.is_none() && self.matches(&ev.object))
                    .then(|| Event::Delete(ev.object.clone()))
            }
            (_, false, true) => Some(Event::Added(ev.object.clone())),
            (_, true, true) => Some(Event::Apply(ev.object.clone())),
            // Out of the filter: kube's watch cache sends the previous state, which the client
            // selected (and may have indexed by the labels it had), at the event's revision.
            (_, true, false) => Some(Event::Delete(
                ev.prev
                    .as_deref()
                    .and_then(|p| at_revision(p, ev.object.rv))
                    .unwrap_or_else(|| ev.object.clone()),
            )),
            (_, false, false) => None,
        }
    }

    /// Queue a started watch's list, or the backlog after `resumed`, and keep its live feed.
    /// A resume from a revision the store has not reached yet skips what comes before it.
    fn started(&mut self, start: WatchStart, resumed: Option<u64>) {
        self.published = Some(start.published);
        let relist = resumed.is_none();
        let mut last = start.rv.max(resumed.unwrap_or(0));
        if relist {
            self.pending
                .push_back((self.yielded, Pending::Ready(Event::Init)));
            // A namespaced filter reads its namespace's range of the index, not the cluster.
            let prefix = self
                .filter
                .as_ref()
                .and_then(|f| f.namespace())
                .map(|ns| crate::model::item_key(ns, ""));
            let items: Box<dyn Iterator<Item = &Arc<crate::store::StoredObject>>> =
                match (&start.snapshot, &prefix) {
                    (Some(snap), Some(p)) => Box::new(
                        snap.items
                            .range(p.clone()..)
                            .take_while(move |(k, _)| k.starts_with(p.as_str()))
                            .map(|(_, v)| v),
                    ),
                    (Some(snap), None) => Box::new(snap.items.values()),
                    (None, _) => Box::new(std::iter::empty()),
                };
            let at = self.yielded;
            self.pending
                .extend(items.map(|obj| (at, Pending::Listed(obj.clone()))));
            self.pending
                .push_back((start.rv, Pending::Ready(Event::InitDone)));
        }
        for ev in start.backlog {
            last = last.max(ev.rv);
            self.pending.push_back((ev.rv, Pending::Change(ev)));
        }
        self.state = State::Watching {
            live: start.live,
            last,
        };
    }

    /// The next event, or `None` once the store closed (or failed: logged), or with
    /// [`Expiry::End`] once the history lost what the watcher missed. Cancel-safe.
    pub async fn next(&mut self) -> Option<Event> {
        let mut pacer = crate::pace::Pacer::new();
        loop {
            if let Some((rv, p)) = self.pending.pop_front() {
                let e = match p {
                    Pending::Ready(e) => Some(e),
                    Pending::Listed(obj) => self.matches(&obj).then_some(Event::InitApply(obj)),
                    Pending::Change(ev) => self.translate(&ev),
                };
                if let Some(e) = e {
                    self.yielded = rv;
                    return Some(e);
                }
                // Judged and left out: the next one, giving the worker back now and then.
                pacer.tick().await;
                continue;
            }
            match &mut self.state {
                State::Done => return None,
                State::Empty => match self.source.watch(WatchFrom::Now) {
                    Ok(start) => self.started(start, None),
                    Err(e) => return self.fail(e),
                },
                State::Resume(last) => {
                    // A held watcher stays held even if a cancelled `next` left it here.
                    let last = *last;
                    hold::released().await;
                    match self.source.watch(WatchFrom::After(last)) {
                        Ok(start) => self.started(start, Some(last)),
                        // What it missed is no longer in the history: list again (or end).
                        Err(e @ StoreError::TooOld { .. }) => {
                            if self.expiry == Expiry::End {
                                self.state = State::Done;
                                self.expired = Some(e);
                                return None;
                            }
                            tracing::info!(resource = %self.source.resource(), error = %e, "watch expired (410): relisting");
                            self.state = State::Empty;
                        }
                        Err(e) => return self.fail(e),
                    }
                }
                State::Watching { live, last } => {
                    let received = match hold::held() {
                        // The test knob: a held watcher stops reading its feed, as if it lagged.
                        Some(mut held) => tokio::select! {
                            biased;
                            _ = held.wait_for(|h| *h) => None,
                            r = live.recv() => Some(r),
                        },
                        None => Some(live.recv().await),
                    };
                    match received {
                        Some(Ok(ev)) => {
                            if ev.rv > *last {
                                *last = ev.rv;
                                if let Some(e) = self.translate(&ev) {
                                    self.yielded = ev.rv;
                                    return Some(e);
                                }
                                // Nothing pending (it is drained before the feed is read), and
                                // what was yielded is applied before the next call: the cache
                                // has everything up to this event.
                                if let Some(s) = &self.skipped {
                                    s.store(ev.rv, Ordering::Release);
                                }
                                pacer.tick().await;
                            }
                        }
                        // Fell behind the live feed. An HTTP watch ends (its client resumes from
                        // the last revision it read, as kube's cacher closes a watcher that cannot
                        // keep up): carrying on from the history would pin that backlog per
                        // watcher, outside the watch buffer's byte budget. An informer goes on
                        // from the history.
                        Some(Err(RecvError::Lagged(_))) if self.expiry == Expiry::End => {
                            self.state = State::Done;
                            self.lagged = true;
                            return None;
                        }
                        Some(Err(RecvError::Lagged(_))) => {
                            self.yielded = *last;
                            self.state = State::Resume(*last);
                        }
                        Some(Err(RecvError::Closed)) if self.expiry == Expiry::End => {
                            self.state = State::Done
                        }
                        // The store started its index over (the etcd backend, after etcd
                        // compacted revisions it still needed): resume, which gets 410 and
                        // relists.
                        Some(Err(RecvError::Closed)) => {
                            self.yielded = *last;
                            self.state = State::Resume(*last);
                        }
                        None => {
                            let last = *last;
                            self.yielded = last;
                            self.state = State::Resume(last);
                            tracing::info!(resource = %self.source.resource(), after = last, "watcher held (test knob)");
                            hold::released().await;
                        }
                    }
                }
            }
        }
    }

    fn fail(&mut self, source: StoreError) -> Option<Event> {
        if !matches!(source, StoreError::Closed) {
            let e = InformerError::Watch {
                resource: self.source.resource().to_owned(),
                source,
            };
            tracing::error!(error = %e, "watcher stopped");
        }
        self.state = State::Done;
        None
    }
}

/// A test-only knob (`turtles serve --test-hold-watchers-on-signal`): SIGUSR1 holds every
/// in-process watcher, SIGUSR2 releases them. A held watcher stops reading its live feed and
/// drops it, exactly as one that fell behind does; released, it resumes from the last revision
/// it saw, and relists if that has left the history (the store's 410). With a small
/// `--watch-history` and writes while held, that is the real relist path, made deterministic
/// for the end-to-end tests. Without the flag nothing is installed and watchers never check.
pub mod hold {
    use std::sync::OnceLock;
    use tokio::sync::watch;

    static HOLD: OnceLock<watch::Sender<bool>> = OnceLock::new();

    /// The hold flag, if the knob is installed.
    pub(super) fn held() -> Option<watch::Receiver<bool>> {
        HOLD.get().map(watch::Sender::subscribe)
    }

    /// Resolves once the watchers are released (at once if the knob is not installed).
    pub(super) async fn released() {
        if let Some(mut rx) = held() {
            let _ = rx.wait_for(|h| !*h).await;
        }
    }

    /// Hold (`true`) or release (`false`) every watcher; installs the knob on first use.
    pub(crate) fn set(on: bool) {
        HOLD.get_or_init(|| watch::Sender::new(false))
            .send_replace(on);
    }

    /// Install the knob and follow SIGUSR1 (hold) and SIGUSR2 (release) until the process ends.
    pub fn install_signals() -> std::io::Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hold = signal(SignalKind::user_defined1())?;
        let mut release = signal(SignalKind::user_defined2())?;
        set(false);
        tokio::spawn(async move {
            loop {
                let on = tokio::select! {
                    Some(()) = hold.recv() => true,
                    Some(()) = release.recv() => false,
                    else => return,
                };
                set(on);
                tracing::warn!(
                    held = on,
                    "test knob: in-process watchers {}",
                    if on { "held" } else { "released" }
                );
            }
        });
        Ok(())
    }
}

/// What a controller acts on, from [`Reflector::apply`].
#[derive(Debug, Clone)]
pub enum Change {
    /// In a (re)list, with the version cached before (none: new to the cache).
    Listed { object: Obj, prev: Option<Obj> },
    /// Created or changed, with the version cached before.
    Applied { object: Obj, prev: Option<Obj> },
    /// Deleted, no longer matching, or missing from a relist (forgotten): its last known state,
    /// and the cached version (none when the cache did not have it).
    Deleted { object: Obj, prev: Option<Obj> },
}

impl Change {
    /// The object the change is about.
    pub fn object(&self) -> &Obj {
        match self {
            Change::Listed { object, .. }
            | Change::Applied { object, .. }
            | Change::Deleted { object, .. } => object,
        }
    }
}

/// Objects by namespace and name, found through the objects' own heads: the cache holds no key
/// strings of its own (an informer over a large kind would otherwise add two allocations per
/// object to what the store already holds; one pointer per object is what it costs now).
#[derive(Default)]
struct Cache {
    table: hashbrown::HashTable<Obj>,
    hasher: std::hash::RandomState,
}

fn key(obj: &StoredObject) -> (&str, &str) {
    (meta::namespace(obj.head()), meta::name(obj.head()))
}

impl Cache {
    fn hash(hasher: &std::hash::RandomState, k: (&str, &str)) -> u64 {
        use std::hash::BuildHasher;
        hasher.hash_one(k)
    }

    fn get(&self, k: (&str, &str)) -> Option<&Obj> {
        self.table
            .find(Self::hash(&self.hasher, k), |o| key(o) == k)
    }

    fn contains(&self, k: (&str, &str)) -> bool {
        self.get(k).is_some()
    }

    /// Insert or replace; returns the object it replaced.
    fn insert(&mut self, obj: Obj) -> Option<Obj> {
        let Cache { table, hasher } = self;
        let h = Self::hash(hasher, key(&obj));
        if let Some(slot) = table.find_mut(h, |o| key(o) == key(&obj)) {
            return Some(std::mem::replace(slot, obj));
        }
        table.insert_unique(h, obj, |o| Self::hash(hasher, key(o)));
        None
    }

    fn remove(&mut self, k: (&str, &str)) -> Option<Obj> {
        let h = Self::hash(&self.hasher, k);
        match self.table.find_entry(h, |o| key(o) == k) {
            Ok(e) => Some(e.remove().0),
            Err(_) => None,
        }
    }

    fn values(&self) -> impl Iterator<Item = &Obj> {
        self.table.iter()
    }
}

impl FromIterator<Obj> for Cache {
    fn from_iter<I: IntoIterator<Item = Obj>>(iter: I) -> Self {
        let mut c = Cache::default();
        for o in iter {
            c.insert(o);
        }
        c
    }
}

/// The cache a watcher's events build (the writer side; see [`Reader`]).
pub struct Reflector {
    cache: Arc<RwLock<Cache>>,
    /// The list in progress, in list order.
    buffer: Option<Vec<Obj>>,
    synced: tokio::sync::watch::Sender<bool>,
    current: Arc<Current>,
}

/// How far a reflector's cache has come, against how far the store has: see
/// [`Reader::is_current`].
#[derive(Default)]
struct Current {
    /// Every event up to this revision is in the cache.
    applied: Arc<AtomicU64>,
    /// The store's counter for the resource (see [`Watcher::published`]).
    published: OnceLock<Arc<AtomicU64>>,
}

impl Default for Reflector {
    fn default() -> Self {
        Self::new()
    }
}

impl Reflector {
    pub fn new() -> Self {
        Self {
            cache: Arc::default(),
            buffer: None,
            synced: tokio::sync::watch::Sender::new(false),
            current: Arc::default(),
        }
    }

    /// Fill the cache with a list the caller made (see [`Watcher::resume`]): synced.
    pub fn seed(&mut self, objects: impl IntoIterator<Item = Obj>) {
        let _ = self.apply(Event::Init);
        for o in objects {
            let _ = self.apply(Event::InitApply(o));
        }
        let _ = self.apply(Event::InitDone);
    }

    pub fn reader(&self) -> Reader {
        Reader {
            cache: self.cache.clone(),
            synced: self.synced.subscribe(),
            current: self.current.clone(),
        }
    }

    /// Every event of the watcher up to `revision` is applied (its [`Watcher::revision`] after
    /// the last [`Reflector::apply`]); `published` is the watcher's [`Watcher::published`].
    pub fn applied(&self, revision: u64, published: Option<&Arc<AtomicU64>>) {
        if let Some(p) = published {
            let _ = self.current.published.set(p.clone());
        }
        self.current.applied.store(revision, Ordering::Release);
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Cache> {
        self.cache.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Apply one event; returns what changed for the controller (nothing during a list).
    pub fn apply(&mut self, event: Event) -> Vec<Change> {
        match event {
            Event::Init => {
                self.buffer = Some(Vec::new());
                Vec::new()
            }
            Event::InitApply(obj) => {
                self.buffer.get_or_insert_with(Vec::new).push(obj);
                Vec::new()
            }
            Event::InitDone => {
                let listed = self.buffer.take().unwrap_or_default();
                let fresh: Cache = listed.iter().cloned().collect();
                let old = std::mem::replace(&mut *self.write(), fresh);
                let mut changes: Vec<Change> = listed
                    .into_iter()
                    .map(|object| Change::Listed {
                        prev: old.get(key(&object)).cloned(),
                        object,
                    })
                    .collect();
                let cache = self.cache.read().unwrap_or_else(|p| p.into_inner());
                for object in old.values() {
                    if !cache.contains(key(object)) {
                        changes.push(Change::Deleted {
                            object: object.clone(),
                            prev: None,
                        });
                    }
                }
                drop(cache);
                self.synced.send_replace(true);
                changes
            }
            Event::Added(object) | Event::Apply(object) => {
                let prev = self.write().insert(object.clone());
                vec![Change::Applied { object, prev }]
            }
            Event::Delete(object) => {
                let prev = self.write().remove(key(&object));
                vec![Change::Deleted { object, prev }]
            }
        }
    }
}

/// A read handle on a reflector's cache.
#[derive(Clone)]
pub struct Reader {
    cache: Arc<RwLock<Cache>>,
    synced: tokio::sync::watch::Receiver<bool>,
    current: Arc<Current>,
}

impl Reader {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.cache.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<Obj> {
        self.read().get((namespace, name)).cloned()
    }

    pub fn list(&self) -> Vec<Obj> {
        self.read().values().cloned().collect()
    }

    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Whether the cache has every change the store has published for its resource right now
    /// (as [`run`] keeps it): then a read of it is as good as a read of the store. A cache
    /// behind the store (an event on its way, one its filter will skip included, a relist, a
    /// lag) is not.
    pub fn is_current(&self) -> bool {
        let Some(published) = self.current.published.get() else {
            return false;
        };
        // The store's counter first: the cache then has at least that much.
        let published = published.load(Ordering::Acquire);
        self.is_synced() && self.current.applied.load(Ordering::Acquire) >= published
    }

    /// Resolves once the first list is in the cache (or the reflector is gone).
    pub async fn wait_synced(&mut self) {
        let _ = self.synced.wait_for(|s| *s).await;
    }
}

/// Follow a watcher into a reflector, handing each change to `on_change`, until the store
/// closes.
pub async fn run<S: Source>(
    mut watcher: Watcher<S>,
    mut reflector: Reflector,
    mut on_change: impl FnMut(Change),
) {
    watcher.skipped = Some(reflector.current.applied.clone());
    while let Some(event) = watcher.next().await {
        let changes = reflector.apply(event);
        // Before the changes are handed on: a reconcile they cause finds the cache current.
        reflector.applied(watcher.revision(), watcher.published());
        for change in changes {
            on_change(change);
        }
    }
}

/// `obj` as it was, labelled with revision `rv` (what a watch sends for an object that left
/// its filter).
fn at_revision(
    obj: &crate::store::StoredObject,
    rv: u64,
) -> Option<Arc<crate::store::StoredObject>> {
    let mut v = obj.parse().into_owned();
    v.pointer_mut("/metadata")?.as_object_mut()?.insert(
        "resourceVersion".into(),
        serde_json::Value::String(rv.to_string()),
    );
    let mut o = crate::store::StoredObject::unstored(v).ok()?;
    o.rv = rv;
    Some(Arc::new(o))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectKey;
    use crate::store::Snapshot;
    use serde_json::json;

    fn obj(name: &str, rv: u64, labels: serde_json::Value) -> Obj {
        Arc::new(
            StoredObject::new(
                rv,
                json!({"metadata": {"name": name, "namespace": "ns", "labels": labels}}),
            )
            .unwrap(),
        )
    }

    fn event(kind: EventType, object: Obj, prev: Option<Obj>) -> Arc<crate::store::Event> {
        Arc::new(crate::store::Event {
            rv: object.rv,
            kind,
            key: ObjectKey::new("things", "ns", crate::model::meta::name(object.head())),
            object,
            prev,
        })
    }

    /// A scripted store: each `watch` call answers with the next scripted reply; the live feeds
    /// are in-memory broadcast channels the test writes to.
    struct Script {
        replies: VecDeque<Result<WatchStart, StoreError>>,
        calls: Arc<std::sync::Mutex<Vec<WatchFrom>>>,
    }

    impl Script {
        /// One reply: this start.
        fn once(start: WatchStart) -> Self {
            Self {
                replies: [Ok(start)].into(),
                calls: Arc::default(),
            }
        }
    }

    impl Source for Script {
        fn watch(&mut self, from: WatchFrom) -> Result<WatchStart, StoreError> {
            self.calls.lock().unwrap().push(from);
            self.replies.pop_front().unwrap_or(Err(StoreError::Closed))
        }
        fn resource(&self) -> &str {
            "things"
        }
    }

    type Feed = broadcast::Sender<Arc<crate::store::Event>>;

    fn listed(rv: u64, items: &[Obj], capacity: usize) -> (WatchStart, Feed) {
        let (tx, live) = broadcast::channel(capacity);
        let items = items
            .iter()
            .map(|o| (crate::model::meta::name(o.head()).to_owned(), o.clone()))
            .collect();
        let start = WatchStart {
            rv,
            snapshot: Some(Snapshot { rv, items }),
            backlog: Vec::new(),
            live,
            published: Default::default(),
        };
        (start, tx)
    }

    fn names(changes: &[Change]) -> Vec<String> {
        changes
            .iter()
            .map(|c| {
                let tag = match c {
                    Change::Listed { .. } => "listed",
                    Change::Applied { .. } => "applied",
                    Change::Deleted { .. } => "deleted",
                };
                format!("{tag} {}", crate::model::meta::name(c.object().value()))
            })
            .collect()
    }

    async fn next<S: Source>(w: &mut Watcher<S>) -> Option<Event> {
        tokio::time::timeout(std::time::Duration::from_secs(5), w.next())
            .await
            .expect("the watcher is stuck (likely deadlocked)")
    }

    /// A resume from a revision the store has not reached (an HTTP watch from a future
    /// resourceVersion) yields nothing at or before it.
    #[tokio::test]
    async fn a_resume_from_the_future_skips_what_comes_before_it() {
        let (mut start, feed) = listed(2, &[], 16);
        start.snapshot = None;
        let mut w = Watcher::resume(Script::once(start), None, 5);
        w.start().expect("starts");
        for rv in [3, 5, 6] {
            feed.send(event(
                EventType::Added,
                obj(&format!("o{rv}"), rv, json!({})),
                None,
            ))
            .unwrap();
        }
        match next(&mut w).await {
            Some(Event::Added(o)) => assert_eq!(o.rv, 6),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn nothing_is_dispatched_before_the_initial_list_is_done() {
        let (start, feed) = listed(2, &[obj("a", 1, json!({})), obj("b", 2, json!({}))], 16);
        let calls = Arc::default();
        let mut w = Watcher::new(
            Script {
                replies: [Ok(start)].into(),
                calls,
            },
            None,
        );
        let mut r = Reflector::new();
        let reader = r.reader();
        for want in ["Init", "InitApply", "InitApply"] {
            let e = next(&mut w).await.unwrap();
            assert!(format!("{e:?}").starts_with(want), "{e:?}");
            assert!(r.apply(e).is_empty(), "a change before InitDone");
            assert!(!reader.is_synced());
            assert!(reader.list().is_empty(), "a half-listed cache is visible");
        }
        let done = next(&mut w).await.unwrap();
        assert!(matches!(done, Event::InitDone));
        assert_eq!(names(&r.apply(done)), ["listed a", "listed b"]);
        assert!(reader.is_synced());
        assert_eq!(reader.list().len(), 2);
        // Then live events, with the version cached before.
        let a1 = obj("a", 1, json!({}));
        let a3 = obj("a", 3, json!({"x": "y"}));
        feed.send(event(EventType::Modified, a3.clone(), Some(a1)))
            .unwrap();
        let changes = r.apply(next(&mut w).await.unwrap());
        match &changes[..] {
            [Change::Applied {
                object,
                prev: Some(p),
            }] => assert_eq!((object.rv, p.rv), (3, 1)),
            other => panic!("{}", names(other).join(", ")),
        }
        assert_eq!(reader.get("ns", "a").map(|o| o.rv), Some(3));
        drop(feed);
        assert!(next(&mut w).await.is_none(), "the store closed");
    }

    /// A cache is as good as the store only while it has every event the store published for
    /// its resource: not before its list is in, not while an event is on its way (one its
    /// filter skips included, until the watcher has read it).
    #[tokio::test]
    async fn a_cache_is_current_only_with_every_event_the_store_published() {
        let (mut start, feed) = listed(2, &[obj("a", 1, json!({"app": "web"}))], 16);
        let published = Arc::new(AtomicU64::new(2));
        start.published = published.clone();
        let filter = Filter::new(None, Some("app=web"), None).unwrap();
        let mut w = Watcher::new(Script::once(start), Some(filter));
        let mut r = Reflector::new();
        let reader = r.reader();
        // As `run` does it.
        async fn step<S: Source>(w: &mut Watcher<S>, r: &mut Reflector) {
            let e = next(w).await.unwrap();
            r.apply(e);
            r.applied(w.revision(), w.published());
        }
        assert!(!reader.is_current(), "nothing listed yet");
        for _ in 0..2 {
            step(&mut w, &mut r).await; // Init, InitApply
            assert!(!reader.is_current(), "a list half in");
        }
        step(&mut w, &mut r).await; // InitDone
        assert!(reader.is_current());
        // As the store's index does it: the counter first, then the feed.
        let publish = |kind, object: Obj, prev| {
            published.store(object.rv, Ordering::Release);
            feed.send(event(kind, object, prev)).unwrap();
        };
        // The store publishes rv 3: until the watcher has yielded it, the cache is behind.
        publish(
            EventType::Modified,
            obj("a", 3, json!({"app": "web"})),
            Some(obj("a", 1, json!({"app": "web"}))),
        );
        assert!(!reader.is_current(), "an event on its way");
        step(&mut w, &mut r).await;
        assert!(reader.is_current());
        // An object the filter skips: behind until the watcher has read it (then the cache
        // has everything up to it).
        publish(EventType::Added, obj("b", 4, json!({"app": "db"})), None);
        assert!(!reader.is_current());
        w.skipped = Some(r.current.applied.clone()); // as `run` does
        let idle = tokio::time::timeout(std::time::Duration::from_millis(50), w.next()).await;
        assert!(idle.is_err(), "the skipped event was yielded");
        assert!(reader.is_current(), "a skipped event read");
        publish(EventType::Added, obj("c", 5, json!({"app": "web"})), None);
        assert!(!reader.is_current());
        step(&mut w, &mut r).await;
        assert!(reader.is_current());
        assert_eq!(reader.list().len(), 2, "a and c");
    }

    #[tokio::test]
    async fn an_informer_whose_feed_closes_resumes_and_relists() {
        // The etcd backend starts its index over after a compaction: the old feeds close.
        let (a, b) = (obj("a", 1, json!({})), obj("b", 2, json!({})));
        let (first, feed) = listed(2, &[a.clone(), b.clone()], 16);
        let (second, _feed2) = listed(9, std::slice::from_ref(&a), 16);
        let calls: Arc<std::sync::Mutex<Vec<WatchFrom>>> = Arc::default();
        let script = Script {
            replies: [
                Ok(first),
                Err(StoreError::TooOld {
                    requested: 2,
                    oldest: 9,
                }),
                Ok(second),
            ]
            .into(),
            calls: calls.clone(),
        };
        let mut w = Watcher::new(script, None);
        let mut r = Reflector::new();
        for _ in 0..4 {
            r.apply(next(&mut w).await.unwrap());
        }
        drop(feed);
        let mut changes = Vec::new();
        loop {
            let e = next(&mut w).await.expect("the informer goes on");
            let done = matches!(e, Event::InitDone);
            changes.extend(r.apply(e));
            if done {
                break;
            }
        }
        assert_eq!(
            *calls.lock().unwrap(),
            [WatchFrom::Now, WatchFrom::After(2), WatchFrom::Now]
        );
        let mut got = names(&changes);
        got.sort();
        assert_eq!(got, ["deleted b", "listed a"]);
    }

    #[tokio::test]
    async fn a_relist_after_410_forgets_objects_deleted_in_between() {
        let (a, b, c) = (
            obj("a", 1, json!({})),
            obj("b", 2, json!({})),
            obj("c", 3, json!({})),
        );
        // A feed of one slot: two events make the watcher lag.
        let (first, feed) = listed(2, &[a.clone(), b.clone()], 1);
        // Resuming after rv 2 is too old (history compacted); the relist has a and c, not b.
        let (second, _feed2) = listed(9, &[a.clone(), c.clone()], 16);
        let calls: Arc<std::sync::Mutex<Vec<WatchFrom>>> = Arc::default();
        let script = Script {
            replies: [
                Ok(first),
                Err(StoreError::TooOld {
                    requested: 2,
                    oldest: 5,
                }),
                Ok(second),
            ]
            .into(),
            calls: calls.clone(),
        };
        let mut w = Watcher::new(script, None);
        let mut r = Reflector::new();
        let reader = r.reader();
        let mut changes = Vec::new();
        for _ in 0..4 {
            changes.extend(r.apply(next(&mut w).await.unwrap()));
        }
        assert_eq!(names(&changes), ["listed a", "listed b"]);
        // b is deleted and c created while the watcher is not reading: it lags.
        feed.send(event(EventType::Deleted, obj("b", 4, json!({})), Some(b)))
            .unwrap();
        feed.send(event(EventType::Added, obj("x", 5, json!({})), None))
            .unwrap();
        let mut seen = Vec::new();
        let mut changes = Vec::new();
        loop {
            let e = next(&mut w).await.unwrap();
            seen.push(format!("{e:?}").split('(').next().unwrap_or("").to_owned());
            let done = matches!(e, Event::InitDone);
            changes.extend(r.apply(e));
            if done {
                break;
            }
        }
        assert_eq!(seen, ["Init", "InitApply", "InitApply", "InitDone"]);
        assert_eq!(
            *calls.lock().unwrap(),
            [WatchFrom::Now, WatchFrom::After(2), WatchFrom::Now]
        );
        // b went while nobody watched: forgotten at InitDone, and said so.
        let mut got = names(&changes);
        got.sort();
        assert_eq!(got, ["deleted b", "listed a", "listed c"]);
        let mut cached: Vec<String> = reader
            .list()
            .iter()
            .map(|o| crate::model::meta::name(o.head()).to_owned())
            .collect();
        cached.sort();
        assert_eq!(cached, ["a", "c"]);
    }

    /// The CRD controller's way: its own start-up list seeds the reflector, the watcher goes on
    /// after that list's revision; if that is too old already, the relist forgets what went.
    #[tokio::test]
    async fn a_seeded_reflector_resumes_and_a_relist_forgets() {
        let (relist, _feed) = listed(7, &[obj("a", 1, json!({}))], 16);
        let calls: Arc<std::sync::Mutex<Vec<WatchFrom>>> = Arc::default();
        let script = Script {
            replies: [
                Err(StoreError::TooOld {
                    requested: 2,
                    oldest: 5,
                }),
                Ok(relist),
            ]
            .into(),
            calls: calls.clone(),
        };
        let mut w = Watcher::resume(script, None, 2);
        let mut r = Reflector::new();
        r.seed([obj("a", 1, json!({})), obj("b", 2, json!({}))]);
        assert!(r.reader().is_synced());
        let mut changes = Vec::new();
        for _ in 0..3 {
            changes.extend(r.apply(next(&mut w).await.unwrap()));
        }
        assert_eq!(names(&changes), ["listed a", "deleted b"]);
        assert_eq!(
            *calls.lock().unwrap(),
            [WatchFrom::After(2), WatchFrom::Now]
        );
    }

    #[tokio::test]
    async fn a_lag_resumes_from_history_without_a_relist() {
        let (first, feed) = listed(1, &[obj("a", 1, json!({}))], 1);
        let (tx2, live2) = broadcast::channel(16);
        let resumed = WatchStart {
            rv: 3,
            snapshot: None,
            backlog: vec![
                event(EventType::Added, obj("b", 2, json!({})), None),
                event(EventType::Added, obj("c", 3, json!({})), None),
            ],
            live: live2,
            published: Default::default(),
        };
        let calls: Arc<std::sync::Mutex<Vec<WatchFrom>>> = Arc::default();
        let mut w = Watcher::new(
            Script {
                replies: [Ok(first), Ok(resumed)].into(),
                calls: calls.clone(),
            },
            None,
        );
        let mut r = Reflector::new();
        for _ in 0..3 {
            r.apply(next(&mut w).await.unwrap());
        }
        feed.send(event(EventType::Added, obj("b", 2, json!({})), None))
            .unwrap();
        feed.send(event(EventType::Added, obj("c", 3, json!({})), None))
            .unwrap();
        let mut changes = r.apply(next(&mut w).await.unwrap());
        assert_eq!(
            w.revision(),
            2,
            "a bookmark never claims less than what was yielded"
        );
        changes.extend(r.apply(next(&mut w).await.unwrap()));
        assert_eq!(w.revision(), 3);
        assert_eq!(names(&changes), ["applied b", "applied c"]);
        assert_eq!(
            *calls.lock().unwrap(),
            [WatchFrom::Now, WatchFrom::After(1)]
        );
        drop(tx2);
    }

    /// HTTP watch serving's way: resume after a client's revision, added told from changed,
    /// the revision a bookmark may claim, the end after a lag (no resume, no relist), and the
    /// end at the start when the history lost its place.
    #[tokio::test]
    async fn an_http_watcher_resumes_tells_kinds_and_ends_on_expiry() {
        let (tx, live) = broadcast::channel(1);
        let resumed = WatchStart {
            rv: 3,
            snapshot: None,
            backlog: vec![
                event(EventType::Added, obj("b", 2, json!({})), None),
                event(
                    EventType::Modified,
                    obj("a", 3, json!({})),
                    Some(obj("a", 1, json!({}))),
                ),
            ],
            live,
            published: Default::default(),
        };
        let calls: Arc<std::sync::Mutex<Vec<WatchFrom>>> = Arc::default();
        let script = Script {
            replies: [Ok(resumed)].into(),
            calls: calls.clone(),
        };
        let mut w = Watcher::resume(script, None, 1).on_expiry(Expiry::End);
        w.start().unwrap();
        assert_eq!(w.revision(), 1, "nothing yielded yet");
        assert!(matches!(next(&mut w).await, Some(Event::Added(_))));
        assert_eq!(w.revision(), 2);
        assert!(matches!(next(&mut w).await, Some(Event::Apply(_))));
        assert_eq!(w.revision(), 3);
        // Two events into a feed of one: it lags, and an HTTP watcher ends there (its client
        // resumes from 3) rather than pinning a backlog from the history.
        tx.send(event(EventType::Added, obj("c", 4, json!({})), None))
            .unwrap();
        tx.send(event(EventType::Added, obj("d", 5, json!({})), None))
            .unwrap();
        assert!(
            next(&mut w).await.is_none(),
            "an HTTP watcher never carries on after a lag"
        );
        assert!(w.fell_behind() && w.expired().is_none());
        assert_eq!(w.revision(), 3);
        assert_eq!(*calls.lock().unwrap(), [WatchFrom::After(1)]);
        // Too old already at the start: `start` says so.
        let mut w = Watcher::resume(
            Script {
                replies: [Err(StoreError::TooOld {
                    requested: 1,
                    oldest: 9,
                })]
                .into(),
                calls: Arc::default(),
            },
            None,
            1,
        )
        .on_expiry(Expiry::End);
        assert!(matches!(w.start(), Err(StoreError::TooOld { .. })));
    }

    #[tokio::test]
    async fn objects_leaving_the_filter_are_deleted_and_others_never_seen() {
        let filter = Filter::new(None, Some("app=x"), None).unwrap();
        let (start, feed) = listed(
            2,
            &[obj("in", 1, json!({"app": "x"})), obj("out", 2, json!({}))],
            16,
        );
        let mut w = Watcher::new(Script::once(start), Some(filter));
        let mut r = Reflector::new();
        let mut changes = Vec::new();
        for _ in 0..3 {
            changes.extend(r.apply(next(&mut w).await.unwrap()));
        }
        assert_eq!(names(&changes), ["listed in"]);
        feed.send(event(
            EventType::Modified,
            obj("out", 3, json!({"other": "y"})),
            Some(obj("out", 2, json!({}))),
        ))
        .unwrap();
        feed.send(event(
            EventType::Modified,
            obj("in", 4, json!({})),
            Some(obj("in", 1, json!({"app": "x"}))),
        ))
        .unwrap();
        let changes = r.apply(next(&mut w).await.unwrap());
        match &changes[..] {
            [Change::Deleted {
                object,
                prev: Some(p),
            }] => {
                assert_eq!((object.rv, p.rv), (4, 1));
                // The state the filter selected, at the event's revision, as kube sends it.
                let v = object.parse();
                assert_eq!(v["metadata"]["labels"], json!({"app": "x"}));
                assert_eq!(v["metadata"]["resourceVersion"], "4");
            }
            other => panic!("{}", names(other).join(", ")),
        }
        assert!(r.reader().list().is_empty());
    }
}
