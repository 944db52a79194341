//! `?watch=true`: a chunked stream of newline-delimited JSON events.
//!
//! Each watch is one task that follows the one watcher of `informer.rs` (the same list/watch
//! loop the controllers' informers run: the initial list or the backlog after a
//! resourceVersion, then the store's live feed, with label/field selector transitions; on a lag
//! it goes on from the history) and queues the events for the HTTP body, which encodes them as
//! the connection takes them. The queue holds the stored objects themselves (shared with the
//! store, not copies) and is bounded by bytes (`--watch-buffer-bytes`, counted as the objects'
//! serialized size).
//!
//! The body writes an event of the plain JSON representation as three pieces: a static head
//! (`{"type":"MODIFIED","object":`), the object's JSON exactly as the store holds it (the same
//! reference-counted [`Bytes`], shared with the store and with every other watcher of that
//! version), and a static tail (`}\n`). So what the connection holds for a client that does not
//! read (hyper queues the pieces it has taken, uncopied, as the sockets under it write vectored)
//! is a reference to the one stored copy, not a copy per watcher (kube shares one encoding the
//! same way, `cachingObject`). Objects under [`SHARE_FROM`] bytes, and the representations made
//! per watch (Table rows, `PartialObjectMetadata`, bookmarks, errors), are one line each.
//!
//! A Table or `PartialObjectMetadata` event parses its object (some 15 ms for a ConfigMap of
//! 1.3 MB), and its output is small, so nothing paces it: with a hundred Table watches of one
//! dense ConfigMap, ten label patches of it kept an administrator's GETs waiting for 1.8 s.
//! So an event's object is rendered once and shared ([`SharedEvents`]: by the watches that show
//! it the same way, within the same second), and an object over
//! [`super::offload::HEAVY_BYTES`] is rendered on a blocking thread, in a turn off the workers
//! (`offload.rs`, the watch's sender's share), while the body waits for it (its later events
//! wait behind it, so they stay in order).
//!
//! A watch is closed, and its queue dropped, when:
//! - its client is over that bound and takes nothing for [`FULL_WAIT`] (kube's watch cache
//!   likewise closes a watcher whose buffer stays full after a short blocking timeout);
//! - events have waited and its client has taken nothing for the write stall timeout
//!   (`--write-stall-timeout`, 30 s: the same bound as a connection whose socket takes no bytes,
//!   `connections.rs`; this one also covers an HTTP/2 stream its client gives no window);
//! - it fell behind the store's live feed and the history no longer has what it missed (the
//!   watcher ends instead of relisting: the client resumes and gets its 410);
//! - `timeoutSeconds` (or the default 30-60 minutes) passes, whether the client reads or not;
//! - the server shuts down.
//!
//! Closing ends the response body cleanly the next time the connection asks for data; the client
//! resumes from the last resourceVersion it saw. A slow watcher never holds up writers or other
//! watchers: the store's broadcast never waits. The user's watch permit (at most
//! [`MAX_WATCHES_PER_USER`]) lives in the body, so it is given back only when the connection lets
//! go of the response (the body ended, or the connection closed: a client that stops reading
//! altogether is disconnected by the write stall timeout), not when the watch is cut while its
//! connection still holds what it had taken.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::error::json_response;
use super::handlers::{MetaVersion, Query, Representation, Target};
use super::offload::{Heavy, OffloadError, Turns, HEAVY_BYTES};
use super::AppState;
use crate::informer::{Event, Expiry, StoreSource, Watcher};
use crate::model::{ApiError, ResourceInfo};
use crate::service::{Filter, Service};
use crate::store::{StoreError, StoredObject};

/// Default `--watch-buffer-bytes`: how far (serialized bytes of queued events) one watch may
/// fall behind its client.
pub const DEFAULT_BUFFER_BYTES: usize = 16 << 20;
/// How long a watch over its buffer bound waits for its client to take something.
const FULL_WAIT: Duration = Duration::from_secs(1);
/// Objects whose JSON is at least this long are written as the stored bytes themselves, shared,
/// between a static head and tail ([`Frame::Shared`]); smaller ones are copied into one line (one
/// HTTP chunk or DATA frame per event, as before). What a stalled connection holds in copies is
/// then at most hyper's 16 queued chunks of under 4 KiB.
const SHARE_FROM: usize = 4096;
/// Bytes charged per queued event besides its object.
const LINE_OVERHEAD: usize = 64;
/// Watch streams one user (not `system:masters`) may have open at once: each holds a
/// connection's stream and a file descriptor's share, and 20,000 of them ran the host out of
/// descriptors. kube has no such bound (API Priority and Fairness charges a watch only its
/// start); no client opens this many.
pub const MAX_WATCHES_PER_USER: usize = 5_000;

/// How long a watch for a future resourceVersion waits for it.
const TOO_NEW_WAIT: Duration = Duration::from_secs(3);

/// The head of an event line of `kind`, up to its object: static, so a shared frame allocates
/// nothing per watcher.
fn head(kind: &str) -> Option<Bytes> {
    let head: &'static [u8] = match kind {
        "ADDED" => b"{\"type\":\"ADDED\",\"object\":",
        "MODIFIED" => b"{\"type\":\"MODIFIED\",\"object\":",
        "DELETED" => b"{\"type\":\"DELETED\",\"object\":",
        "BOOKMARK" => b"{\"type\":\"BOOKMARK\",\"object\":",
        "ERROR" => b"{\"type\":\"ERROR\",\"object\":",
        _ => return None,
    };
    Some(Bytes::from_static(head))
}

const TAIL: &[u8] = b"}\n";

/// One event as the body writes it.
enum Frame {
    /// The whole line, encoded for this watch.
    Line(Bytes),
    /// The line's head, the object's JSON as stored (shared, not copied) and the static tail.
    Shared(Bytes, Bytes),
}

/// The event line of `kind` around `obj`: shared when `obj` is large enough to be worth it.
fn frame(kind: &str, obj: &Bytes) -> Frame {
    match head(kind) {
        Some(h) if obj.len() >= SHARE_FROM => Frame::Shared(h, obj.clone()),
        _ => Frame::Line(line(kind, obj)),
    }
}

fn line(kind: &str, obj: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(obj.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(kind.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(obj);
    b.put_slice(TAIL);
    b.freeze()
}

/// A BOOKMARK's object at `rv`: an object of the watched kind that holds only its
/// resourceVersion (and kube's annotation on the one that ends the initial events; a zero
/// `creationTimestamp` is left out, as kube 1.34 omits it). The encoder shapes it as the
/// watch's events are shaped, as kube converts every event object: a `PartialObjectMetadata`
/// for a metadata-only watch (client-go's metadata informers cannot decode anything else), a
/// one-row Table for a Table watch.
fn bookmark_object(ri: &ResourceInfo, rv: u64, initial_end: bool) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": ri.kind, "apiVersion": ri.api_version(), "metadata": meta})
}

/// The ERROR event of a watch that cannot go on, and the stop that ends it.
async fn failed(feeder: &mut Feeder, e: &ApiError) -> Result<(), Stop> {
    feeder.send(Item::Line(error_line(e))).await?;
    Err(Stop::Failed)
}

fn error_line(e: &ApiError) -> Bytes {
    line("ERROR", e.to_status().to_string().as_bytes())
}

/// A boolean query parameter as kube's conversion reads one (`Convert_Slice_string_To_bool`):
/// anything but `0` or `false` (any case) is true, the empty value included.
fn parse_bool(q: &Query, key: &str) -> Option<bool> {
    q.get(key)
        .map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
}

/// How event objects are written: as stored, or as kubectl asked for them in `Accept`
/// (`as=Table`: a one-row Table per event, column definitions only in the first, as kube does).
struct Encoder {
    repr: Representation,
    query: Arc<Query>,
    first: bool,
    /// The events other watches rendered (and this one's, for them).
    shared: Arc<SharedEvents>,
    /// The turns off the workers an event of a large object takes to be rendered (`None`:
    /// rendered here).
    turns: Option<Turns>,
}

/// An event's frame being rendered off the workers.
type Rendering = futures::future::BoxFuture<'static, Result<Frame, OffloadError>>;

/// An event's frame: written now, or being rendered off the workers.
enum Encoded {
    Now(Frame),
    Later(Rendering),
}

impl Encoder {
    fn new(
        repr: Representation,
        query: Query,
        shared: Arc<SharedEvents>,
        turns: Option<Turns>,
    ) -> Self {
        Encoder {
            repr,
            query: Arc::new(query),
            first: true,
            shared,
            turns,
        }
    }

    /// How the next object is written. Only the stream's first Table, whatever its event's
    /// type, has the column definitions; kube's later ones have `null` (a nil slice).
    fn render(&mut self, keep_metadata: bool) -> Render {
        Render {
            repr: self.repr,
            query: self.query.clone(),
            first: std::mem::take(&mut self.first),
            keep_metadata,
        }
    }

    fn bookmark(&mut self, ri: &ResourceInfo, rv: u64, initial_end: bool) -> Frame {
        let obj = bookmark_object(ri, rv, initial_end);
        match StoredObject::unstored(obj.clone()) {
            Ok(mut o) => {
                o.rv = rv;
                let o = Arc::new(o);
                let json = self.render(initial_end).object(ri, &o);
                frame("BOOKMARK", &json.unwrap_or_else(|| o.json.clone()))
            }
            Err(_) => Frame::Line(line("BOOKMARK", obj.to_string().as_bytes())),
        }
    }

    /// An event's frame. The plain representation of an object shown as stored shares the
    /// stored JSON ([`frame`]); one `present` had to make for this watch (a conversion) is this
    /// watch's own, still not copied again. A Table or metadata of an object shown as stored
    /// is taken from [`SharedEvents`] when another watch has rendered it (else rendered and left
    /// there); of an object over [`HEAVY_BYTES`], rendered off the workers.
    fn event(
        &mut self,
        ri: &Arc<ResourceInfo>,
        kind: &'static str,
        obj: Arc<StoredObject>,
    ) -> Encoded {
        let render = self.render(false);
        let why = match self.repr {
            Representation::Table(_) => Heavy::WatchTable,
            Representation::PartialMetadata(_) => Heavy::WatchMetadata,
            // As stored, or as `present` converts it: nothing parsed here.
            Representation::Full | Representation::PartialMetadataList(_) => {
                return Encoded::Now(frame(kind, &Service::present(ri, obj).json));
            }
        };
        let heavy = u64::try_from(obj.json.len()).unwrap_or(u64::MAX) > HEAVY_BYTES;
        let turns = self.turns.clone().filter(|_| heavy);
        // The store's object, which every watch of it is handed, is shared (an object
        // `present` converts is made for this watch alone).
        let cell = (render.shares() && Service::presents_as_stored(ri, &obj))
            .then(|| self.shared.cell(ri, &obj, &render));
        if let Some(json) = cell.as_ref().and_then(|c| c.get()) {
            return Encoded::Now(frame(kind, json));
        }
        match (cell, turns) {
            (Some(cell), Some(turns)) => {
                let ri = ri.clone();
                Encoded::Later(Box::pin(async move {
                    // One watch renders it; the others showing it the same way wait for that
                    // (and render it themselves should that fail).
                    let json: Result<&Bytes, OffloadError> = cell
                        .get_or_try_init(|| async move {
                            turns.run(why, move || render.json(&ri, &obj)).await
                        })
                        .await;
                    json.map(|json| frame(kind, json))
                }))
            }
            (Some(cell), None) => {
                let json = render.json(ri, &obj);
                // Unless another watch's rendering got there first.
                let _ = cell.set(json.clone());
                Encoded::Now(frame(kind, &json))
            }
            (None, Some(turns)) => {
                let ri = ri.clone();
                Encoded::Later(Box::pin(async move {
                    turns
                        .run(why, move || {
                            let obj = Service::present(&ri, obj);
                            frame(kind, &render.json(&ri, &obj))
                        })
                        .await
                }))
            }
            (None, None) => {
                let obj = Service::present(ri, obj);
                Encoded::Now(frame(kind, &render.json(ri, &obj)))
            }
        }
    }
}

/// How one event's object is written as a Table or `PartialObjectMetadata`: owned, to be
/// written on a blocking thread.
struct Render {
    repr: Representation,
    query: Arc<Query>,
    /// The stream's first Table: with the column definitions.
    first: bool,
    /// The bookmark that ends the initial events keeps its row's `PartialObjectMetadata` even
    /// with `includeObject=None` (kube 1.34 does, for the annotation that marks it).
    keep_metadata: bool,
}

impl Render {
    /// Whether what it writes of an object is what any watch that shows it the same way
    /// writes: all but the stream's first Table (its column definitions) and a bookmark's.
    fn shares(&self) -> bool {
        match self.repr {
            Representation::Table(_) => !self.first && !self.keep_metadata,
            Representation::PartialMetadata(_) => !self.keep_metadata,
            Representation::Full | Representation::PartialMetadataList(_) => false,
        }
    }

    /// `includeObject`, as far as it tells one Table from another.
    fn include(&self) -> Option<&str> {
        match self.repr {
            Representation::Table(_) => self.query.get("includeObject").map(String::as_str),
            _ => None,
        }
    }

    /// The JSON of `obj` as an event's object: a one-row Table or a `PartialObjectMetadata`
    /// (`None`: the object as stored).
    fn object(&self, ri: &ResourceInfo, obj: &Arc<StoredObject>) -> Option<Bytes> {
        match self.repr {
            // kube's watch encoder cannot make a PartialObjectMetadataList of one object: it
            // logs that and writes the object as it is.
            Representation::Full | Representation::PartialMetadataList(_) => None,
            Representation::PartialMetadata(v) => {
                Some(Bytes::from(partial_metadata(obj, v).to_string()))
            }
            Representation::Table(v) => {
                let rv = obj.rv.to_string();
                let mut t =
                    super::table::render(ri, std::slice::from_ref(obj), &rv, None, &self.query);
                super::handlers::table_in(v, &mut t);
                if !self.first {
                    t["columnDefinitions"] = Value::Null;
                }
                if self.keep_metadata {
                    if let Some(row) = t.pointer_mut("/rows/0") {
                        if row.get("object").is_none() {
                            row["object"] = partial_metadata(obj, v);
                        }
                    }
                }
                Some(Bytes::from(t.to_string()))
            }
        }
    }

    /// [`Render::object`], or the stored JSON.
    fn json(&self, ri: &ResourceInfo, obj: &Arc<StoredObject>) -> Bytes {
        self.object(ri, obj).unwrap_or_else(|| obj.json.clone())
    }
}

/// How many rendered event objects [`SharedEvents`] keeps at most.
const SHARED_EVENTS: usize = 32;

/// Event objects (one-row Tables, `PartialObjectMetadata`) rendered by one watch and reused by
/// the others that show the same object the same way: rendering parses the object, and a
/// hundred Table watches of a resource would each parse every event's object (kube shares an
/// event's encodings among its watchers likewise, `cachingObject`). An entry is the object
/// itself (the `Arc` the store hands every watcher of it; held, so its address is not reused
/// while it is there), the resource's registration (a CRD's printer columns change with it), the
/// representation and `includeObject`; it serves only within the wall-clock second it was made
/// in, so an `AGE` column reads as it would had each watch rendered it (ages count whole seconds
/// from whole-second timestamps). The first to ask renders (off the workers when the object is
/// large) while the others wait for it. Entries of an earlier second go when the next is made.
#[derive(Default)]
pub struct SharedEvents {
    recent: Mutex<VecDeque<SharedEvent>>,
}

struct SharedEvent {
    obj: Arc<StoredObject>,
    ri: Arc<ResourceInfo>,
    repr: Representation,
    include: Option<String>,
    second: i64,
    json: Arc<tokio::sync::OnceCell<Bytes>>,
}

impl SharedEvents {
    /// The entry for `obj` rendered as `render` renders it, made (empty) if there is none.
    fn cell(
        &self,
        ri: &Arc<ResourceInfo>,
        obj: &Arc<StoredObject>,
        render: &Render,
    ) -> Arc<tokio::sync::OnceCell<Bytes>> {
        let second = chrono::Utc::now().timestamp();
        let include = render.include();
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = recent.iter().find(|e| {
            Arc::ptr_eq(&e.obj, obj)
                && Arc::ptr_eq(&e.ri, ri)
                && e.repr == render.repr
                && e.include.as_deref() == include
                && e.second == second
        }) {
            return e.json.clone();
        }
        // An earlier second's entries are not read again.
        let (kept, mut old): (VecDeque<SharedEvent>, VecDeque<SharedEvent>) =
            std::mem::take(&mut *recent)
                .into_iter()
                .partition(|e| e.second == second);
        *recent = kept;
        if recent.len() >= SHARED_EVENTS {
            old.extend(recent.pop_front());
        }
        let json = Arc::new(tokio::sync::OnceCell::new());
        recent.push_back(SharedEvent {
            obj: obj.clone(),
            ri: ri.clone(),
            repr: render.repr,
            include: include.map(str::to_owned),
            second,
            json: json.clone(),
        });
        drop(recent);
        // The objects let go (the last references to some, perhaps) are dropped outside the
        // lock.
        drop(old);
        json
    }
}

fn partial_metadata(obj: &StoredObject, version: MetaVersion) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": version.api_version(),
        "metadata": obj.parse().get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// One queued piece of the stream: an event or a bookmark (at a revision; whether it ends the
/// initial events), encoded when the connection takes it, or a line already encoded (errors).
enum Item {
    Event(&'static str, Arc<StoredObject>),
    Bookmark(u64, bool),
    Line(Bytes),
}

impl Item {
    fn cost(&self) -> usize {
        LINE_OVERHEAD
            + match self {
                Item::Event(_, obj) => obj.json.len(),
                Item::Bookmark(..) => 128,
                Item::Line(b) => b.len(),
            }
    }
}

/// Why a watch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The client went away (the response body was dropped).
    Gone,
    /// `timeoutSeconds` passed.
    Deadline,
    Shutdown,
    /// Over its buffer bound and the client took nothing for [`FULL_WAIT`].
    Behind,
    /// Events waited and the client took nothing for the write stall timeout.
    Stalled,
    /// Fell too far behind the store's live feed.
    Lagged,
    /// An object could not be shown in the watched version (its CRD's conversion webhook
    /// failed): the ERROR event that says so is the stream's last.
    Failed,
}

impl Stop {
    /// The label of `turtles_watch_closed_total` for a watch the server cut off.
    fn reason(self) -> Option<&'static str> {
        match self {
            Stop::Behind => Some("behind"),
            Stop::Stalled => Some("stalled"),
            Stop::Lagged => Some("lagged"),
            Stop::Deadline => Some("timeout"),
            Stop::Failed => Some("conversion"),
            Stop::Gone | Stop::Shutdown => None,
        }
    }
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<Item>,
    /// Sum of the items' [`Item::cost`].
    bytes: usize,
    /// Nothing more will be queued: the body ends once `items` is empty.
    closed: bool,
    /// The body was dropped.
    gone: bool,
    /// When the client last took an item, or the queue last became non-empty.
    progress: Option<Instant>,
    /// The body waiting for an item.
    waker: Option<Waker>,
}

/// Between one watch task and its response body.
struct Queue {
    state: Mutex<QueueState>,
    /// The body took an item or went away.
    taken: Notify,
    metrics: Arc<crate::metrics::WatchMetrics>,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn new(metrics: Arc<crate::metrics::WatchMetrics>) -> Self {
        Queue {
            state: Mutex::new(QueueState::default()),
            taken: Notify::new(),
            metrics,
        }
    }

    fn metrics(&self) -> &crate::metrics::WatchMetrics {
        &self.metrics
    }

    /// Queue `item` if it fits in `budget` (an item always fits an empty queue). `Err` gives the
    /// item back when the queue is full; `Ok(false)` when the client is gone.
    fn try_push(&self, item: Item, budget: usize) -> Result<bool, Item> {
        let cost = item.cost();
        let waker = {
            let mut st = self.lock();
            if st.gone {
                return Ok(false);
            }
            if !st.items.is_empty() && st.bytes + cost > budget {
                return Err(item);
            }
            if st.items.is_empty() {
                st.progress = Some(Instant::now());
            }
            st.bytes += cost;
            st.items.push_back(item);
            st.waker.take()
        };
        self.metrics().queued(cost as i64);
        if let Some(w) = waker {
            w.wake();
        }
        Ok(true)
    }

    /// Nothing more is queued; with `drop_queued`, what is queued is dropped too, so the body ends
    /// (and the memory is freed) even if the client never reads again.
    fn close(&self, drop_queued: bool) {
        let (freed, waker) = {
            let mut st = self.lock();
            st.closed = true;
            let freed = if drop_queued {
                st.items.clear();
                std::mem::take(&mut st.bytes)
            } else {
                0
            };
            (freed, st.waker.take())
        };
        self.metrics().queued(-(freed as i64));
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn is_empty(&self) -> bool {
        self.lock().items.is_empty()
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Events are waiting and the client has taken nothing for `stall`.
    fn stalled(&self, stall: Duration) -> bool {
        let st = self.lock();
        !st.items.is_empty() && st.progress.is_some_and(|p| p.elapsed() > stall)
    }

    fn gone(&self) -> bool {
        self.lock().gone
    }
}

/// The response body: takes queued items and encodes them.
struct WatchBody {
    queue: Arc<Queue>,
    ri: Arc<ResourceInfo>,
    enc: Encoder,
    /// What is left of the frame being written: the shared object, then the tail. A frame begun
    /// is finished even if the watch is closed meanwhile, so the stream stays whole lines.
    rest: [Option<Bytes>; 2],
    /// The user's share of [`MAX_WATCHES_PER_USER`], held for as long as the connection holds
    /// this body (not given back when the watch task ends while the body is still held).
    _permit: Option<super::pod_streams::FollowPermit>,
    /// An event being rendered off the workers: nothing else is taken until it is written, so
    /// the events stay in order.
    rendering: Option<Rendering>,
    /// An event could not be rendered (its thread failed): the ERROR event that says so was the
    /// stream's last.
    failed: bool,
}

impl WatchBody {
    fn new(
        queue: Arc<Queue>,
        ri: Arc<ResourceInfo>,
        enc: Encoder,
        permit: Option<super::pod_streams::FollowPermit>,
    ) -> Self {
        WatchBody {
            queue,
            ri,
            enc,
            rest: Default::default(),
            _permit: permit,
            rendering: None,
            failed: false,
        }
    }

    /// The first piece of `frame`; the rest of a shared frame is kept for the next calls.
    fn begin(&mut self, frame: Frame) -> Bytes {
        match frame {
            Frame::Line(b) => b,
            Frame::Shared(head, object) => {
                self.rest = [Some(object), Some(Bytes::from_static(TAIL))];
                head
            }
        }
    }
}

impl futures::Stream for WatchBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(b) = this.rest.iter_mut().find_map(Option::take) {
                return Poll::Ready(Some(Ok(b)));
            }
            if let Some(rendering) = this.rendering.as_mut() {
                let rendered = match rendering.as_mut().poll(cx) {
                    Poll::Ready(r) => r,
                    Poll::Pending => return Poll::Pending,
                };
                this.rendering = None;
                let frame = match rendered {
                    Ok(frame) => frame,
                    Err(e) => {
                        // The client resumes from the last event it read.
                        tracing::warn!(resource = %this.ri.resource, error = %e, "a watch event could not be rendered; ending the watch");
                        this.failed = true;
                        Frame::Line(error_line(&ApiError::from(e)))
                    }
                };
                return Poll::Ready(Some(Ok(this.begin(frame))));
            }
            if this.failed {
                return Poll::Ready(None);
            }
            let item = {
                let mut st = this.queue.lock();
                match st.items.pop_front() {
                    Some(item) => {
                        st.bytes -= item.cost();
                        st.progress = Some(Instant::now());
                        item
                    }
                    None if st.closed => return Poll::Ready(None),
                    None => {
                        st.waker = Some(cx.waker().clone());
                        return Poll::Pending;
                    }
                }
            };
            this.queue.metrics().queued(-(item.cost() as i64));
            this.queue.taken.notify_one();
            let frame = match item {
                Item::Event(kind, obj) => match this.enc.event(&this.ri, kind, obj) {
                    Encoded::Now(frame) => frame,
                    Encoded::Later(rendering) => {
                        // Polled at once (the loop), so its end wakes this body.
                        this.rendering = Some(rendering);
                        continue;
                    }
                },
                Item::Bookmark(rv, end) => this.enc.bookmark(&this.ri, rv, end),
                Item::Line(b) => Frame::Line(b),
            };
            return Poll::Ready(Some(Ok(this.begin(frame))));
        }
    }
}

impl Drop for WatchBody {
    fn drop(&mut self) {
        let freed = {
            let mut st = self.queue.lock();
            st.gone = true;
            st.closed = true;
            st.items.clear();
            std::mem::take(&mut st.bytes)
        };
        self.queue.metrics().queued(-(freed as i64));
        self.queue.taken.notify_one();
    }
}

/// The watch task's side: queues items, waiting (bounded) for a client that is behind, and
/// racing every wait against the deadline and shutdown.
struct Feeder {
    queue: Arc<Queue>,
    budget: usize,
    /// How long events may wait while the client takes nothing (the write stall timeout).
    stall: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
    stopped: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Feeder {
    async fn send(&mut self, mut item: Item) -> Result<(), Stop> {
        loop {
            match self.queue.try_push(item, self.budget) {
                Ok(true) => return Ok(()),
                Ok(false) => return Err(Stop::Gone),
                Err(back) => item = back,
            }
            tokio::select! {
                _ = self.queue.taken.notified() => {}
                _ = tokio::time::sleep(FULL_WAIT) => return Err(Stop::Behind),
                _ = &mut self.deadline => return Err(Stop::Deadline),
                _ = &mut self.stopped => return Err(Stop::Shutdown),
            }
        }
    }
}

/// A watch of `target`. `unstreamable` is kube's 406 for an `Accept` whose media type has no
/// stream serializer (YAML), answered where kube's watch handler negotiates its stream: once
/// the options have been read and checked.
pub async fn serve(
    state: Arc<AppState>,
    target: &Target,
    q: &Query,
    repr: Representation,
    unstreamable: Option<ApiError>,
    user: Option<&crate::auth::rbac::UserInfo>,
    turns: Turns,
) -> Result<Response, ApiError> {
    // Held by the response body: for as long as the connection holds the stream.
    let permit = match user {
        Some(u) if !u.groups.iter().any(|g| g == crate::auth::MASTERS) => {
            Some(state.watches.acquire(&u.name)?)
        }
        _ => None,
    };
    // kube converts the query into ListOptions first: a `timeoutSeconds` (or `limit`) that is
    // not an int64 is a 400.
    let (timeout_seconds, _) = super::handlers::list_integers(q)?;
    let ri = target.ri.clone();
    let enc = Encoder::new(repr, q.clone(), state.watch_events.clone(), Some(turns));
    let filter = Filter::for_resource(
        &ri,
        target.namespace.as_deref(),
        q.get("labelSelector").map(String::as_str),
        q.get("fieldSelector").map(String::as_str),
    )?;
    let bookmarks = parse_bool(q, "allowWatchBookmarks").unwrap_or(false);
    let send_initial = parse_bool(q, "sendInitialEvents");
    let rv_param = q
        .get("resourceVersion")
        .map(String::as_str)
        .filter(|s| !s.is_empty());
    super::handlers::validate_list_options(q, true)?;
    // kube's cacher reads it as a get's (`ParseResourceVersion`, "0" and "00" alike 0), and
    // returns a value it refuses as it is: a 500 without a reason.
    let requested = match rv_param {
        None => None,
        Some(s) => Some(crate::service::parse_get_rv(s)?).filter(|n| *n > 0),
    };
    if let Some(e) = unstreamable {
        return Err(e);
    }
    let Some(timeout) = watch_timeout(timeout_seconds) else {
        // Its deadline has passed: kube's stream is closed as soon as it is open (nothing is
        // waited for).
        return Ok(stream_response(Body::empty()));
    };
    let store = state.service.store.clone();
    if rv_param.is_none() {
        // Unset: the most recent state, read consistently (a store shared by several hosts may
        // lag behind the others' writes until it has caught up).
        store
            .sync()
            .await
            .map_err(|e| crate::service::store_error(&ri, "", e))?;
    }
    // A revision the store has not reached: with the initial events asked for, kube's cacher
    // waits a while for it and then answers (200) with one ERROR event; otherwise the watch
    // starts now and stays quiet until the store gets there.
    if let Some(n) = requested.filter(|n| *n > store.revision()) {
        if send_initial == Some(true) && !store.wait_for_revision(n, TOO_NEW_WAIT).await {
            let e = crate::service::too_large_rv(n, store.revision());
            return Ok(json_response(StatusCode::OK, error_line(&e)));
        }
    }
    // Where the stream starts, and whether it opens with the current state: the one watcher
    // (`informer.rs`), which ends rather than relists when the history has lost its place.
    // A watch of one namespace follows that namespace's feed only.
    let source = StoreSource {
        store: store.clone(),
        resource: ri.group_resource(),
        namespace: target.namespace.clone().filter(|_| ri.namespaced()),
    };
    let (mut watcher, initial_end) = match (send_initial, requested) {
        // The bookmark that ends the initial events only for a client that takes bookmarks.
        (Some(true), _) => (Watcher::new(source, Some(filter)), bookmarks),
        (Some(false), None) => (
            Watcher::resume(source, Some(filter), store.revision()),
            false,
        ),
        (Some(false), Some(n)) | (None, Some(n)) => {
            (Watcher::resume(source, Some(filter), n), false)
        }
        (None, None) => (Watcher::new(source, Some(filter)), false),
    };
    watcher = watcher.on_expiry(Expiry::End);
    match watcher.start() {
        Ok(()) => {}
        Err(StoreError::TooOld { requested, oldest }) => {
            // kube answers 200 and one ERROR event; clients relist on exactly this.
            let e = ApiError::expired(format!("too old resource version: {requested} ({oldest})"));
            return Ok(json_response(StatusCode::OK, error_line(&e)));
        }
        Err(e) => return Err(ApiError::internal(format!("watch failed: {e}"))),
    }
    let queue = Arc::new(Queue::new(state.metrics.watches.clone()));
    let body = WatchBody::new(queue.clone(), ri.clone(), enc, permit);
    let mut shutdown = state.shutdown.clone();
    let feeder = Feeder {
        queue,
        budget: state.options.watch_buffer_bytes.max(1),
        stall: state.options.write_stall_timeout,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        stopped: Box::pin(async move {
            let _ = shutdown.wait_for(|s| *s).await.is_ok();
        }),
    };
    let interval = state.options.bookmark_interval;
    let metrics_state = state.clone();
    metrics_state.metrics.watches.opened();
    tokio::spawn(async move {
        let queue = feeder.queue.clone();
        let resource = ri.resource.clone();
        let converter = ri
            .custom
            .as_ref()
            .is_some_and(|c| c.webhook.is_some())
            .then(|| metrics_state.service.clone());
        let stop = run(
            feeder,
            ri,
            metrics_state.service.store.clone(),
            watcher,
            bookmarks,
            initial_end,
            interval,
            converter,
        )
        .await;
        match stop {
            Stop::Gone => {}
            Stop::Failed => queue.close(false),
            // Unless `run` ended the stream gracefully, what is queued is dropped.
            Stop::Deadline | Stop::Shutdown => {
                if !queue.is_closed() {
                    queue.close(true);
                }
            }
            Stop::Behind | Stop::Stalled | Stop::Lagged => {
                tracing::info!(resource = %resource, why = ?stop, "closing a watch whose client is not keeping up; it resumes from its last resourceVersion");
                queue.close(true);
            }
        }
        metrics_state.metrics.watches.closed(stop.reason());
    });
    Ok(stream_response(Body::from_stream(body)))
}

/// A watch's 200 with its headers.
fn stream_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-cache, private"),
    );
    resp
}

/// How long a watch runs, as kube's `handleWatch` derives it from `timeoutSeconds`: the seconds
/// times `time.Second`, Go's int64 of nanoseconds (which wraps on overflow, as Go's
/// multiplication does); zero, or unset, is the default of 30 to 60 minutes
/// (`minRequestTimeout`, 1800 s, times 1 to 2). Below zero the deadline has already passed:
/// `None`, the watch ends at once (kube's context is done and its timer fires immediately).
fn watch_timeout(seconds: Option<i64>) -> Option<Duration> {
    match seconds.unwrap_or(0).wrapping_mul(1_000_000_000) {
        0 => Some(Duration::from_secs(1800 + rand::random::<u64>() % 1800)),
        n if n < 0 => None,
        n => Some(Duration::from_nanos(n.unsigned_abs())),
    }
}

/// The watch task: the watcher's events (the initial state or backlog, then live events) and
/// bookmarks until something ends it. Every wait races the deadline and shutdown, so
/// `timeoutSeconds` holds even when the client reads nothing.
#[allow(clippy::too_many_arguments)]
async fn run(
    mut feeder: Feeder,
    ri: Arc<ResourceInfo>,
    store: Arc<dyn crate::store::Store>,
    mut watcher: Watcher<StoreSource>,
    bookmarks: bool,
    initial_end: bool,
    interval: Duration,
    converter: Option<Arc<Service>>,
) -> Stop {
    // An event's object as the watched version shows it: through the CRD's conversion webhook
    // when it has one (else the encoder's `present` is enough).
    let convert = |obj: Arc<StoredObject>| {
        let converter = converter.clone();
        let ri = ri.clone();
        async move {
            match converter {
                Some(svc) => svc.served_one(&ri, obj).await,
                None => Ok(obj),
            }
        }
    };
    // Periodic bookmarks only once the initial state (if any) is out.
    let mut listing = false;
    let mut ticker = tokio::time::interval_at(Instant::now() + interval, interval);
    // A stall is noticed within a sixth of its timeout (every 5 s at most, as with the default),
    // and a huge timeout cannot overflow the interval's arithmetic.
    let watchdog_period =
        (feeder.stall / 6).clamp(Duration::from_millis(10), Duration::from_secs(5));
    let mut watchdog = tokio::time::interval(watchdog_period);
    watchdog.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let sent = tokio::select! {
            ev = watcher.next() => match ev {
                Some(Event::Init) => {
                    listing = true;
                    Ok(())
                }
                Some(Event::InitApply(obj) | Event::Added(obj)) => match convert(obj).await {
                    Ok(obj) => feeder.send(Item::Event("ADDED", obj)).await,
                    Err(e) => failed(&mut feeder, &e).await,
                },
                Some(Event::Apply(obj)) => match convert(obj).await {
                    Ok(obj) => feeder.send(Item::Event("MODIFIED", obj)).await,
                    Err(e) => failed(&mut feeder, &e).await,
                },
                Some(Event::Delete(obj)) => match convert(obj).await {
                    Ok(obj) => feeder.send(Item::Event("DELETED", obj)).await,
                    Err(e) => failed(&mut feeder, &e).await,
                },
                Some(Event::InitDone) => {
                    listing = false;
                    if initial_end {
                        feeder
                            .send(Item::Bookmark(watcher.revision(), true))
                            .await
                    } else {
                        Ok(())
                    }
                }
                // It fell behind the live feed (or the history lost what it missed): the client
                // resumes from the last revision it read (and gets its 410 then, if that is gone).
                None if watcher.fell_behind() => Err(Stop::Lagged),
                None => Err(Stop::Shutdown),
            },
            _ = ticker.tick(), if bookmarks && !listing => {
                let now = store.revision();
                // A watch from a revision the store has not reached yet stays quiet until it
                // has (kube's cacher drops bookmarks at or before the requested revision).
                if now < watcher.revision() {
                    Ok(())
                } else {
                    feeder.send(Item::Bookmark(watcher.bookmark_revision(now), false)).await
                }
            }
            _ = watchdog.tick() => {
                if feeder.queue.gone() {
                    Err(Stop::Gone)
                } else if feeder.queue.stalled(feeder.stall) {
                    Err(Stop::Stalled)
                } else {
                    Ok(())
                }
            }
            _ = feeder.queue.taken.notified() => {
                if feeder.queue.gone() { Err(Stop::Gone) } else { Ok(()) }
            }
            _ = &mut feeder.deadline => Err(Stop::Deadline),
            _ = &mut feeder.stopped => return Stop::Shutdown,
        };
        match sent {
            Ok(()) => {}
            Err(Stop::Deadline) => {
                // A client that has everything gets a last bookmark (kube sends one just before
                // the timeout); one that is behind loses what is queued and resumes from the
                // last event it saw.
                if bookmarks
                    && !listing
                    && feeder.queue.is_empty()
                    && store.revision() >= watcher.revision()
                {
                    let _ = feeder.queue.try_push(
                        Item::Bookmark(watcher.bookmark_revision(store.revision()), false),
                        usize::MAX,
                    );
                    feeder.queue.close(false);
                } else {
                    feeder.queue.close(!feeder.queue.is_empty());
                }
                return Stop::Deadline;
            }
            Err(stop) => return stop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use serde_json::json;

    fn configmaps() -> Arc<ResourceInfo> {
        crate::model::Registry::with_builtins()
            .lookup("", "v1", "configmaps")
            .expect("built-in")
    }

    fn obj(size: usize) -> Arc<StoredObject> {
        Arc::new(StoredObject::new(1, json!({"data": "x".repeat(size)})).unwrap())
    }

    fn feeder(budget: usize, timeout: Duration) -> (Feeder, Arc<crate::metrics::WatchMetrics>) {
        let metrics = Arc::new(crate::metrics::WatchMetrics::default());
        let feeder = Feeder {
            queue: Arc::new(Queue::new(metrics.clone())),
            budget,
            stall: super::super::connections::DEFAULT_WRITE_STALL,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            stopped: Box::pin(std::future::pending()),
        };
        (feeder, metrics)
    }

    /// The plain JSON body of a watch of ConfigMaps on `queue`, holding `permit`.
    fn body(
        queue: &Arc<Queue>,
        permit: Option<super::super::pod_streams::FollowPermit>,
    ) -> WatchBody {
        WatchBody::new(
            queue.clone(),
            configmaps(),
            Encoder::new(
                Representation::Full,
                Query::default(),
                Default::default(),
                None,
            ),
            permit,
        )
    }

    fn queued(m: &crate::metrics::WatchMetrics) -> String {
        let mut out = String::new();
        m.render(&mut out);
        out.lines()
            .find(|l| l.starts_with("turtles_watch_queued_bytes "))
            .unwrap_or("")
            .to_owned()
    }

    /// Over its byte budget a watch waits for its client; if the client takes nothing within
    /// FULL_WAIT it is closed, and closing drops the queue so the body ends at once.
    #[tokio::test(start_paused = true)]
    async fn a_watch_over_budget_whose_client_takes_nothing_is_closed() {
        let (mut f, metrics) = feeder(3000, Duration::from_secs(3600));
        // An item always fits an empty queue, even over the budget.
        f.send(Item::Event("ADDED", obj(5000))).await.unwrap();
        let started = Instant::now();
        assert_eq!(
            f.send(Item::Event("ADDED", obj(10))).await,
            Err(Stop::Behind)
        );
        assert_eq!(started.elapsed(), FULL_WAIT);
        assert_ne!(queued(&metrics), "turtles_watch_queued_bytes 0");
        f.queue.close(true);
        assert_eq!(queued(&metrics), "turtles_watch_queued_bytes 0");
        let mut body = body(&f.queue, None);
        assert!(body.next().await.is_none());
    }

    /// A client that takes something makes room: the send goes through.
    #[tokio::test(start_paused = true)]
    async fn taking_an_item_makes_room() {
        let (mut f, _) = feeder(3000, Duration::from_secs(3600));
        f.send(Item::Event("ADDED", obj(2000))).await.unwrap();
        let mut body = body(&f.queue, None);
        let take = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            body.next().await
        };
        let (sent, taken) = tokio::join!(f.send(Item::Event("MODIFIED", obj(2000))), take);
        assert_eq!(sent, Ok(()));
        let line = taken.unwrap().unwrap();
        assert!(line.starts_with(b"{\"type\":\"ADDED\""));
    }

    /// The deadline fires while the watch waits on a client that reads nothing.
    #[tokio::test(start_paused = true)]
    async fn the_deadline_fires_while_waiting_on_the_client() {
        let (mut f, _) = feeder(100, Duration::from_millis(300));
        f.send(Item::Event("ADDED", obj(500))).await.unwrap();
        assert_eq!(
            f.send(Item::Event("ADDED", obj(500))).await,
            Err(Stop::Deadline)
        );
    }

    /// Events that wait while the client takes nothing for the stall timeout mark the watch
    /// stalled; an empty queue never is, however long the client is idle.
    #[tokio::test(start_paused = true)]
    async fn waiting_events_and_no_progress_is_a_stall() {
        const STALL: Duration = super::super::connections::DEFAULT_WRITE_STALL;
        let (mut f, _) = feeder(1 << 20, Duration::from_secs(3600));
        tokio::time::sleep(STALL * 2).await;
        assert!(!f.queue.stalled(STALL));
        f.send(Item::Event("ADDED", obj(10))).await.unwrap();
        tokio::time::sleep(STALL / 2).await;
        assert!(!f.queue.stalled(STALL));
        tokio::time::sleep(STALL).await;
        assert!(f.queue.stalled(STALL));
    }

    /// A large object's event is written as the stored JSON itself, not a copy: the middle
    /// piece points into the stored bytes, and the three pieces make exactly the line a copy
    /// would have been. A small object's event is one line.
    #[tokio::test]
    async fn a_large_objects_event_shares_the_stored_json() {
        let (mut f, _) = feeder(64 << 20, Duration::from_secs(3600));
        let big = obj(1 << 20);
        let small = obj(100);
        f.send(Item::Event("MODIFIED", big.clone())).await.unwrap();
        f.send(Item::Event("ADDED", small.clone())).await.unwrap();
        let mut b = body(&f.queue, None);
        let head = b.next().await.unwrap().unwrap();
        let object = b.next().await.unwrap().unwrap();
        let tail = b.next().await.unwrap().unwrap();
        assert_eq!(
            object.as_ptr(),
            big.json.as_ptr(),
            "the stored bytes, not a copy"
        );
        assert_eq!(object.len(), big.json.len());
        let whole: Vec<u8> = [head, object, tail].concat();
        assert_eq!(whole, line("MODIFIED", &big.json));
        let ev: Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(ev["type"], "MODIFIED");
        assert_eq!(ev["object"]["data"].as_str().map(str::len), Some(1 << 20));
        // Small: one line, its own bytes.
        let one = b.next().await.unwrap().unwrap();
        assert_eq!(one, line("ADDED", &small.json));
    }

    /// A frame begun is finished even when the watch is closed meanwhile (its queue dropped):
    /// the client gets whole lines, then the end.
    #[tokio::test]
    async fn a_closed_watch_finishes_the_frame_it_began() {
        let (mut f, _) = feeder(64 << 20, Duration::from_secs(3600));
        let big = obj(10_000);
        f.send(Item::Event("ADDED", big.clone())).await.unwrap();
        f.send(Item::Event("MODIFIED", big.clone())).await.unwrap();
        let mut b = body(&f.queue, None);
        let head = b.next().await.unwrap().unwrap();
        f.queue.close(true);
        let rest: Vec<Bytes> = b.by_ref().map(|r| r.unwrap()).collect().await;
        let whole: Vec<u8> = std::iter::once(head).chain(rest).flatten().collect();
        assert_eq!(whole, line("ADDED", &big.json));
    }

    /// The user's watch permit is held by the body: cutting the watch (its queue closed, as a
    /// stall does) does not give it back while the connection still holds the body; dropping
    /// the body does.
    #[tokio::test]
    async fn the_watch_permit_lives_as_long_as_the_body() {
        let watches = Arc::new(super::super::pod_streams::Follows::with_limits(
            "watches",
            1,
            usize::MAX,
        ));
        let (f, _) = feeder(1 << 20, Duration::from_secs(3600));
        let b = body(&f.queue, Some(watches.acquire("tenant").unwrap()));
        assert!(watches.acquire("tenant").is_err(), "one per user");
        f.queue.close(true);
        drop(f);
        assert!(
            watches.acquire("tenant").is_err(),
            "the watch was cut but its body is still held"
        );
        drop(b);
        assert!(watches.acquire("tenant").is_ok());
    }

    /// A ConfigMap `name` with `size` bytes of data.
    fn configmap(name: &str, size: usize) -> Arc<StoredObject> {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
            "data": {"k": "x".repeat(size)}});
        Arc::new(StoredObject::new(1, v).unwrap())
    }

    /// The pieces of the body's next event line, up to its newline.
    async fn next_line(b: &mut WatchBody) -> Vec<Bytes> {
        let mut pieces = Vec::new();
        loop {
            let p = b.next().await.expect("an event").expect("bytes");
            let end = p.ends_with(b"\n");
            pieces.push(p);
            if end {
                return pieces;
            }
        }
    }

    /// A body of a watch of `ri` in `repr`, with `includeObject` as given.
    fn body_as(
        queue: &Arc<Queue>,
        ri: &Arc<ResourceInfo>,
        repr: Representation,
        include: Option<&str>,
        shared: &Arc<SharedEvents>,
        turns: Option<Turns>,
    ) -> WatchBody {
        let mut q = Query::default();
        if let Some(i) = include {
            q.insert("includeObject".into(), i.into());
        }
        WatchBody::new(
            queue.clone(),
            ri.clone(),
            Encoder::new(repr, q, shared.clone(), turns),
            None,
        )
    }

    /// Two Table watches of one object render an event's Table once: the second writes the
    /// first's bytes (the same allocation), and they are the line a watch of its own writes. The
    /// first event of each (with the column definitions) is its own.
    #[tokio::test]
    async fn table_watches_share_an_events_rendering() {
        let ri = configmaps();
        let obj = configmap("dense", 10_000);
        let table = Representation::Table(MetaVersion::V1);
        // A Table of the whole object (`includeObject=Object`) is over SHARE_FROM: shared bytes.
        // An event rendered across a second's end is rendered again: tried a few times.
        let mut shared_once = false;
        for _ in 0..3 {
            let shared = Arc::new(SharedEvents::default());
            let (mut f1, _) = feeder(64 << 20, Duration::from_secs(3600));
            let (mut f2, _) = feeder(64 << 20, Duration::from_secs(3600));
            let (mut f3, _) = feeder(64 << 20, Duration::from_secs(3600));
            let mut b1 = body_as(&f1.queue, &ri, table, Some("Object"), &shared, None);
            let mut b2 = body_as(&f2.queue, &ri, table, Some("Object"), &shared, None);
            let alone = Arc::new(SharedEvents::default());
            let mut b3 = body_as(&f3.queue, &ri, table, Some("Object"), &alone, None);
            for f in [&mut f1, &mut f2, &mut f3] {
                f.send(Item::Event("ADDED", obj.clone())).await.unwrap();
                f.send(Item::Event("MODIFIED", obj.clone())).await.unwrap();
            }
            let first1 = next_line(&mut b1).await.concat();
            let first2 = next_line(&mut b2).await.concat();
            let first3 = next_line(&mut b3).await.concat();
            assert_eq!(first1, first2);
            assert_eq!(first1, first3);
            let first: Value = serde_json::from_slice(&first1).unwrap();
            assert!(first["object"]["columnDefinitions"].is_array(), "{first}");
            let second = chrono::Utc::now().timestamp();
            let m1 = next_line(&mut b1).await;
            let m2 = next_line(&mut b2).await;
            let m3 = next_line(&mut b3).await;
            assert_eq!(m1.concat(), m3.concat(), "as a watch of its own writes it");
            assert_eq!(m1.concat(), m2.concat());
            let ev: Value = serde_json::from_slice(&m1.concat()).unwrap();
            assert_eq!(ev["type"], "MODIFIED");
            assert_eq!(ev["object"]["columnDefinitions"], Value::Null);
            assert_eq!(
                ev["object"]["rows"][0]["object"]["metadata"]["name"],
                "dense"
            );
            if chrono::Utc::now().timestamp() != second {
                continue;
            }
            assert_eq!(m1.len(), 3, "head, shared Table, tail");
            assert_eq!(m1[1].as_ptr(), m2[1].as_ptr(), "rendered once");
            assert_ne!(m1[1].as_ptr(), m3[1].as_ptr());
            shared_once = true;
            break;
        }
        assert!(shared_once, "three seconds' ends in a row");
    }

    /// An event of an object over HEAVY_BYTES, in a Table or metadata watch, is rendered off the
    /// workers (counted), and written as a watch that renders it here writes it; an event of a
    /// small object, or a plain watch's, takes no turn.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heavy_events_are_rendered_off_the_workers() {
        let ri = configmaps();
        let off = Arc::new(super::super::offload::Offload::new(4));
        let turns = Turns {
            offload: off.clone(),
            flow: Some(super::super::inflight::Flow::User("tenant".into())),
            deadline: None,
        };
        let big = configmap("big", 100_000);
        let big2 = configmap("big2", 100_000);
        let small = configmap("small", 100);
        for (repr, why) in [
            (Representation::Table(MetaVersion::V1), Heavy::WatchTable),
            (
                Representation::PartialMetadata(MetaVersion::V1beta1),
                Heavy::WatchMetadata,
            ),
        ] {
            let shared = Arc::new(SharedEvents::default());
            let (mut f, _) = feeder(64 << 20, Duration::from_secs(3600));
            let (mut g, _) = feeder(64 << 20, Duration::from_secs(3600));
            let mut off_workers = body_as(
                &f.queue,
                &ri,
                repr,
                Some("None"),
                &shared,
                Some(turns.clone()),
            );
            let mut here = body_as(&g.queue, &ri, repr, Some("None"), &Default::default(), None);
            for f in [&mut f, &mut g] {
                f.send(Item::Event("ADDED", big.clone())).await.unwrap();
                f.send(Item::Event("ADDED", small.clone())).await.unwrap();
                f.send(Item::Event("MODIFIED", big2.clone())).await.unwrap();
            }
            for _ in 0..3 {
                assert_eq!(
                    next_line(&mut off_workers).await.concat(),
                    next_line(&mut here).await.concat()
                );
            }
            assert_eq!(off.total(why), 2, "{repr:?}: the big objects' events");
        }
        let (mut f, _) = feeder(64 << 20, Duration::from_secs(3600));
        let mut plain = body_as(
            &f.queue,
            &ri,
            Representation::Full,
            None,
            &Default::default(),
            Some(turns),
        );
        f.send(Item::Event("ADDED", big.clone())).await.unwrap();
        assert_eq!(
            next_line(&mut plain).await.concat(),
            line("ADDED", &big.json)
        );
        let mut out = String::new();
        off.render(&mut out);
        assert!(
            out.contains("turtles_api_reads_off_workers_total{reason=\"watch_table\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("turtles_api_reads_off_workers_total{reason=\"watch_metadata\"} 2\n"),
            "{out}"
        );
    }

    /// `timeoutSeconds` as kube reads it: unset or zero the default, below zero at once, and
    /// seconds that overflow Go's int64 of nanoseconds wrapped as Go wraps them.
    #[test]
    fn the_timeout_is_kubes() {
        // 2^55 s and -2^63 s are whole multiples of 2^64 ns: zero once wrapped, as in Go.
        for default in [None, Some(0), Some(1 << 55), Some(i64::MIN)] {
            let t = watch_timeout(default).expect("a timeout");
            assert!((1800..3600).contains(&t.as_secs()), "{default:?}: {t:?}");
        }
        assert_eq!(watch_timeout(Some(5)), Some(Duration::from_secs(5)));
        assert_eq!(watch_timeout(Some(-1)), None);
        assert_eq!(watch_timeout(Some(-30)), None);
        // 10^10 s is past int64 nanoseconds: Go's product wraps below zero.
        assert_eq!(watch_timeout(Some(10_000_000_000)), None);
        assert_eq!(
            watch_timeout(Some(9_000_000_000)),
            Some(Duration::from_secs(9_000_000_000))
        );
    }

    /// Dropping the body (the client went away) frees the queue and ends the watch.
    #[tokio::test(start_paused = true)]
    async fn a_dropped_body_frees_the_queue() {
        let (mut f, metrics) = feeder(1 << 20, Duration::from_secs(3600));
        let body = body(&f.queue, None);
        f.send(Item::Event("ADDED", obj(500))).await.unwrap();
        drop(body);
        assert_eq!(queued(&metrics), "turtles_watch_queued_bytes 0");
        assert_eq!(
            f.send(Item::Event("ADDED", obj(500))).await,
            Err(Stop::Gone)
        );
    }
}
