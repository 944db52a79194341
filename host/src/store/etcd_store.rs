//! The etcd backend (`turtles serve --store etcd`): objects in etcd v3 under
//! `<prefix><resource>/<namespace>/<name>`, with kube's model of it.
//!
//! - The resourceVersion is etcd's revision: a write is one transaction that compares the key's
//!   `create_revision` (a create) or `mod_revision` (an update or delete of one version) and
//!   commits at the revision etcd gives it.
//! - Reads are served from the same in-memory [`Index`] as the sled backend, kept from one etcd
//!   watch over the prefix (kube's watch cache): at start the prefix is read at one revision and
//!   the watch follows from the next. Every host on the same etcd keeps its own index, so a write
//!   through any of them reaches the watches of all.
//! - A write resolves once this host's index holds it, so whoever wrote reads it back. A failed
//!   precondition waits until the index holds what etcd compared against, so a read-modify-write
//!   retry reads the newer object instead of spinning on a stale one.
//! - A consistent read ([`Store::sync`]) asks etcd for its current revision and waits until the
//!   index has caught up with it, asking the watch for a progress notification (a revision
//!   reached by writes outside the prefix shows up only that way).
//! - Values are the object's JSON with `metadata.resourceVersion` empty; the revision goes in
//!   when an event is read, where the key already stands in the object.
//! - If etcd compacted the history the watch needs (this host fell behind), the index is read
//!   again from scratch at the current revision; watches of the old index end and resume with
//!   410 Expired, as kube's watch cache does.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType as EtcdEventType,
    GetOptions, KeyValue, SortOrder, SortTarget, TxnOp, TxnOpResponse, WatchOptions, WatchResponse,
};
use tokio::sync::{mpsc, watch};

use super::index::{HistoryLimit, Index};
use super::{
    BoxFuture, Event, Precondition, Prepared, Result, Snapshot, Store, StoreError, StoredObject,
    WatchFrom, WatchStart, WriteOp,
};
use crate::model::{EventType, ObjectKey};

/// Objects read per range request at start (etcd answers each in one message).
const PAGE: i64 = 500;
/// How long a write, a failed precondition or a consistent read waits for the index to catch up
/// with etcd before it gives up (kube waits 3 s for its watch cache on a consistent read).
const CATCH_UP: Duration = Duration::from_secs(3);
/// Largest reply accepted from etcd (tonic's default is 4 MiB: a page of big objects, or a watch
/// catching up on many, is larger). kube sets no limit either.
const MAX_REPLY_BYTES: usize = i32::MAX as usize;
/// etcd's default `--max-request-bytes`: a bigger write fails there whatever turtles allows.
const ETCD_MAX_REQUEST_BYTES: usize = 1536 * 1024;
/// How long start-up keeps trying to reach etcd.
const CONNECT_DEADLINE: Duration = Duration::from_secs(60);
/// Between attempts to re-establish the watch after etcd went away.
const RETRY: Duration = Duration::from_millis(200);

/// Client certificates for etcd (`--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`).
#[derive(Debug, Clone, Default)]
pub struct EtcdTls {
    pub ca: Option<std::path::PathBuf>,
    pub cert: Option<std::path::PathBuf>,
    pub key: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// `http://host:port` or `https://host:port`; the client balances over all of them.
    pub endpoints: Vec<String>,
    /// Every key starts with it (kube's `--etcd-prefix`, `/registry` by default).
    pub prefix: String,
    pub tls: EtcdTls,
    /// As in [`super::StoreOptions`].
    pub watch_history: usize,
    pub watch_history_bytes: usize,
    pub max_object_bytes: usize,
}

struct Shared {
    index: RwLock<Index>,
    /// The index's revision: that of the last event applied.
    rv_tx: watch::Sender<u64>,
    /// A revision up to which etcd has sent every change of the prefix: the index's, or later
    /// when a progress notification said nothing changed since. Only waits use it (a consistent
    /// read, an unknown revision); the index's own revision, which lists and watches report,
    /// moves only with events, so nothing is skipped even if a notification ran ahead of events
    /// (etcd-io/etcd#15220, etcd before 3.4.25).
    known_tx: watch::Sender<u64>,
    limit: HistoryLimit,
    /// The revision of the last event applied (or of the read at start). The index's revision
    /// can be ahead of it after a progress notification; the watch resumes after this one.
    applied: AtomicU64,
    /// Why etcd cannot be reached right now (`None` while the watch runs).
    unavailable: Mutex<Option<String>>,
}

impl Shared {
    fn read(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }
    fn write(&self) -> RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|p| p.into_inner())
    }
    fn set_unavailable(&self, why: Option<String>) {
        *self.unavailable.lock().unwrap_or_else(|p| p.into_inner()) = why;
    }
}

pub struct EtcdStore {
    shared: Arc<Shared>,
    members: Arc<Members>,
    prefix: Vec<u8>,
    max_object_bytes: usize,
    /// Asks the watch task for a progress notification.
    progress: mpsc::Sender<()>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// One client per etcd member. Requests go to the current member and move on to the next when it
/// cannot be reached: etcd-client's own balanced channel keeps sending some requests to a dead
/// member.
struct Members {
    clients: Vec<Client>,
    current: AtomicUsize,
}

/// The request never reached etcd's log (nothing was done): safe to send again elsewhere. A
/// member that cannot connect, or that has no leader (cut off from the others; with
/// require-leader it refuses before proposing anything).
fn unreachable(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::TransportError(_) => true,
        etcd_client::Error::GRpcStatus(s) => {
            s.code() == tonic::Code::Unavailable
                && (s.message().contains("connect") || s.message().contains("no leader"))
        }
        _ => false,
    }
}

/// The member answered but may be unhealthy (timed out, leader changes): later requests go to
/// the next one, this one is not sent again (it may have been done).
fn unhealthy(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(s)
        if matches!(s.code(), tonic::Code::Unavailable | tonic::Code::DeadlineExceeded))
}

impl Members {
    async fn connect(
        endpoints: &[String],
        opts: &ConnectOptions,
    ) -> std::result::Result<Self, etcd_client::Error> {
        let mut clients = Vec::with_capacity(endpoints.len());
        for e in endpoints {
            clients.push(Client::connect([e], Some(opts.clone())).await?);
        }
        if clients.is_empty() {
            return Err(etcd_client::Error::InvalidArgs(
                "no etcd endpoint given".to_owned(),
            ));
        }
        Ok(Self {
            clients,
            current: AtomicUsize::new(0),
        })
    }

    fn pick(&self) -> (usize, Client) {
        let i = self.current.load(Ordering::Relaxed) % self.clients.len();
        (i, self.clients[i].clone())
    }

    /// Member `i` failed: the next request goes to the next one (unless another caller has
    /// moved on already).
    fn failed(&self, i: usize) {
        let next = (i + 1) % self.clients.len();
        let _ = self
            .current
            .compare_exchange(i, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// One transaction (see [`Members::run`]).
    async fn txn(
        &self,
        txn: etcd_client::Txn,
    ) -> std::result::Result<etcd_client::TxnResponse, etcd_client::Error> {
        self.run(|c| {
            let txn = txn.clone();
            async move {
                c.kv_client()
                    .max_decoding_message_size(MAX_REPLY_BYTES)
                    .txn(txn)
                    .await
            }
        })
        .await
    }

    /// `op` on the current member, and on each other one in turn while they cannot be reached.
    async fn run<T, F, Fut>(&self, op: F) -> std::result::Result<T, etcd_client::Error>
    where
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        let mut attempt = 0;
        loop {
            let (i, client) = self.pick();
            match op(client).await {
                Err(e) if unreachable(&e) && attempt + 1 < self.clients.len() => {
                    tracing::warn!(error = %e, "etcd member unreachable: trying the next one");
                    self.failed(i);
                    attempt += 1;
                }
                Err(e) => {
                    if unhealthy(&e) || unreachable(&e) {
                        self.failed(i);
                    }
                    return Err(e);
                }
                r => return r,
            }
        }
    }
}

fn etcd_error(e: etcd_client::Error) -> StoreError {
    StoreError::Unavailable(format!("etcd: {e}"))
}

fn encode_key(prefix: &[u8], key: &ObjectKey) -> Vec<u8> {
    let mut k = Vec::with_capacity(
        prefix.len() + key.resource.len() + key.namespace.len() + key.name.len() + 2,
    );
    k.extend_from_slice(prefix);
    k.extend_from_slice(key.resource.as_bytes());
    k.push(b'/');
    k.extend_from_slice(key.namespace.as_bytes());
    k.push(b'/');
    k.extend_from_slice(key.name.as_bytes());
    k
}

/// Under the prefix but not objects: the files every host of the cluster shares
/// ([`EtcdStore::shared_file`]). No resource name starts with a dot.
const SHARED: &str = ".turtles/";

fn decode_key(prefix: &[u8], raw: &[u8]) -> Option<ObjectKey> {
    let rest = std::str::from_utf8(raw.strip_prefix(prefix)?).ok()?;
    if rest.starts_with('.') {
        return None;
    }
    let mut parts = rest.splitn(3, '/');
    let (resource, namespace, name) = (parts.next()?, parts.next()?, parts.next()?);
    (!resource.is_empty() && !name.is_empty()).then(|| ObjectKey::new(resource, namespace, name))
}

/// The end of the key range that holds every key starting with `prefix` (etcd's `prefix` option).
fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

fn revision_of(header: Option<&etcd_client::ResponseHeader>) -> u64 {
    header.map_or(0, |h| h.revision().max(0) as u64)
}

/// One stored value read back: the object at the revision it was last modified.
fn decode_object(kv: &KeyValue) -> std::result::Result<StoredObject, String> {
    let value: serde_json::Value =
        serde_json::from_slice(kv.value()).map_err(|e| format!("not JSON: {e}"))?;
    StoredObject::new(kv.mod_revision().max(0) as u64, value).map_err(|e| e.to_string())
}

/// Every object under the prefix at one revision (paged), and that revision.
async fn read_all(
    client: &Client,
    prefix: &[u8],
) -> std::result::Result<(u64, Vec<(ObjectKey, StoredObject)>), etcd_client::Error> {
    let mut kv = client
        .kv_client()
        .max_decoding_message_size(MAX_REPLY_BYTES);
    let end = range_end(prefix);
    let mut start = prefix.to_vec();
    let mut at = 0i64;
    let mut out = Vec::new();
    loop {
        let mut opts = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
        if at > 0 {
            opts = opts.with_revision(at);
        }
        let resp = kv.get(start.clone(), Some(opts)).await?;
        if at == 0 {
            at = resp.header().map_or(0, |h| h.revision());
        }
        let kvs = resp.kvs();
        for kv in kvs {
            let Some(key) = decode_key(prefix, kv.key()) else {
                if kv.key().starts_with(&[prefix, SHARED.as_bytes()].concat()) {
                    continue;
                }
                tracing::warn!(key = %String::from_utf8_lossy(kv.key()), "etcd key under the prefix is not an object key: ignored");
                continue;
            };
            match decode_object(kv) {
                Ok(obj) => out.push((key, obj)),
                Err(why) => {
                    tracing::error!(key = %String::from_utf8_lossy(kv.key()), error = why, "stored object cannot be read: not served")
                }
            }
        }
        match kvs.last() {
            Some(last) if resp.more() => {
                start = last.key().to_vec();
                start.push(0);
            }
            _ => break,
        }
    }
    Ok((at.max(0) as u64, out))
}

fn fresh_index(rv: u64, limit: HistoryLimit, objects: Vec<(ObjectKey, StoredObject)>) -> Index {
    let mut index = Index::new(rv, limit);
    for (key, obj) in objects {
        index.load(&key, Arc::new(obj));
    }
    index
}

impl EtcdStore {
    /// Connect, read every object under the prefix into memory at one revision and follow the
    /// prefix from the next one.
    pub async fn open(opts: EtcdOptions) -> Result<Self> {
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(30))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true)
            // A member cut off from the others answers "no leader" (and ends its watches)
            // instead of serving stale data.
            .with_require_leader(true);
        if let Some(tls) = client_tls(&opts.tls)? {
            connect = connect.with_tls(tls);
        }
        let started = std::time::Instant::now();
        let (members, rv, objects) = loop {
            let attempt = async {
                let members = Members::connect(&opts.endpoints, &connect).await?;
                let prefix = opts.prefix.as_bytes();
                let (rv, objects) = members
                    .run(|c| async move { read_all(&c, prefix).await })
                    .await?;
                Ok::<_, etcd_client::Error>((Arc::new(members), rv, objects))
            };
            match attempt.await {
                Ok(ok) => break ok,
                Err(e) if started.elapsed() < CONNECT_DEADLINE => {
                    tracing::warn!(error = %e, endpoints = ?opts.endpoints, "etcd not reachable yet; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => return Err(etcd_error(e)),
            }
        };
        let limit = HistoryLimit {
            events: opts.watch_history,
            bytes: opts.watch_history_bytes,
        };
        tracing::info!(
            revision = rv,
            objects = objects.len(),
            prefix = %opts.prefix,
            "etcd store loaded"
        );
        let (rv_tx, _) = watch::channel(rv);
        let (known_tx, _) = watch::channel(rv);
        let shared = Arc::new(Shared {
            index: RwLock::new(fresh_index(rv, limit, objects)),
            rv_tx,
            known_tx,
            limit,
            applied: AtomicU64::new(rv),
            unavailable: Mutex::new(None),
        });
        let (progress, progress_rx) = mpsc::channel(1);
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(follow(
            shared.clone(),
            members.clone(),
            opts.prefix.as_bytes().to_vec(),
            progress_rx,
            stop_rx,
        ));
        Ok(Self {
            shared,
            members,
            prefix: opts.prefix.into_bytes(),
            max_object_bytes: opts.max_object_bytes,
            progress,
            stop,
            task: Mutex::new(Some(task)),
        })
    }
}

impl EtcdStore {
    fn shared_key(&self, name: &str) -> Vec<u8> {
        [&self.prefix[..], SHARED.as_bytes(), name.as_bytes()].concat()
    }

    /// A file every host of this cluster shares (its CA, the service-account signing key, the
    /// admin token), as the first host that offered it made it; `None` before any did.
    pub async fn shared_file(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let key = self.shared_key(name);
        let resp = self
            .members
            .run(|c| {
                let key = key.clone();
                async move {
                    c.kv_client()
                        .max_decoding_message_size(MAX_REPLY_BYTES)
                        .get(key, None)
                        .await
                }
            })
            .await
            .map_err(etcd_error)?;
        Ok(resp.kvs().first().map(|kv| kv.value().to_vec()))
    }

    /// Offer this host's copy of a shared file: stored if no host stored one first. Returns what
    /// is stored now (this copy, or the one that was there).
    pub async fn offer_shared_file(&self, name: &str, contents: &[u8]) -> Result<Vec<u8>> {
        let key = self.shared_key(name);
        let txn = etcd_client::Txn::new()
            .when(vec![Compare::create_revision(
                key.clone(),
                CompareOp::Equal,
                0,
            )])
            .and_then(vec![TxnOp::put(key.clone(), contents.to_vec(), None)])
            .or_else(vec![TxnOp::get(key.clone(), None)]);
        let resp = self.members.txn(txn).await.map_err(etcd_error)?;
        if resp.succeeded() {
            return Ok(contents.to_vec());
        }
        Ok(resp
            .op_responses()
            .into_iter()
            .find_map(|r| match r {
                TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.value().to_vec()),
                _ => None,
            })
            .unwrap_or_default())
    }
}

fn client_tls(tls: &EtcdTls) -> Result<Option<etcd_client::TlsOptions>> {
    if tls.ca.is_none() && tls.cert.is_none() {
        return Ok(None);
    }
    let mut out = etcd_client::TlsOptions::new();
    if let Some(ca) = &tls.ca {
        out = out.ca_certificate(etcd_client::Certificate::from_pem(std::fs::read(ca)?));
    }
    if let (Some(cert), Some(key)) = (&tls.cert, &tls.key) {
        out = out.identity(etcd_client::Identity::from_pem(
            std::fs::read(cert)?,
            std::fs::read(key)?,
        ));
    }
    Ok(Some(out))
}

/// Wait until `revision` (the index's [`Shared::rv_tx`], or the known one [`Shared::known_tx`])
/// is at `rv` or later, asking the watch for a progress notification when it is behind; `false`
/// after `timeout`.
async fn catch_up(
    revision: &watch::Sender<u64>,
    progress: &mpsc::Sender<()>,
    rv: u64,
    timeout: Duration,
) -> bool {
    let mut rx = revision.subscribe();
    if *rx.borrow() >= rv {
        return true;
    }
    // A full channel means a request is already pending: its answer serves this one too.
    let _ = progress.try_send(());
    tokio::time::timeout(timeout, rx.wait_for(|cur| *cur >= rv))
        .await
        .is_ok_and(|r| r.is_ok())
}

fn raise(revision: &watch::Sender<u64>, rv: u64) {
    revision.send_if_modified(|cur| {
        let newer = rv > *cur;
        if newer {
            *cur = rv;
        }
        newer
    });
}

/// Follow the prefix for as long as the store is open: apply each event to the index in
/// revision order, re-establish the watch when etcd goes away, start over when it compacted.
async fn follow(
    shared: Arc<Shared>,
    members: Arc<Members>,
    prefix: Vec<u8>,
    mut progress: mpsc::Receiver<()>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let (member, client) = members.pick();
        let mut watcher = client
            .watch_client()
            .max_decoding_message_size(MAX_REPLY_BYTES);
        let from = shared.applied.load(Ordering::SeqCst) + 1;
        let opts = WatchOptions::new()
            .with_range(range_end(&prefix))
            .with_start_revision(from as i64)
            .with_progress_notify();
        let started = tokio::select! {
            r = watcher.watch(prefix.clone(), Some(opts)) => r,
            _ = stop.changed() => return,
        };
        let (mut requests, mut stream) = match started {
            Ok(s) => s.split(),
            Err(e) => {
                shared.set_unavailable(Some(format!("etcd watch: {e}")));
                tracing::warn!(error = %e, "etcd watch cannot start; retrying");
                members.failed(member);
                tokio::select! {
                    _ = tokio::time::sleep(RETRY) => continue,
                    _ = stop.changed() => return,
                }
            }
        };
        loop {
            tokio::select! {
                Some(()) = progress.recv() => {
                    if let Err(e) = requests.request_progress().await {
                        tracing::warn!(error = %e, "etcd watch progress request failed");
                    }
                }
                msg = stream.message() => match msg {
                    Ok(Some(resp)) => {
                        if resp.created() {
                            shared.set_unavailable(None);
                        }
                        if resp.canceled() {
                            if resp.compact_revision() > 0 {
                                tracing::warn!(
                                    compacted = resp.compact_revision(),
                                    at = shared.read().rv,
                                    "etcd compacted the revisions this host still needed: reading everything again"
                                );
                                relist(&shared, &members, &prefix).await;
                            } else {
                                // "no leader", say: this member is cut off.
                                tracing::warn!(reason = resp.cancel_reason(), "etcd canceled the watch; starting it again on the next member");
                                shared.set_unavailable(Some(format!(
                                    "etcd canceled the watch: {}",
                                    resp.cancel_reason()
                                )));
                                members.failed(member);
                                tokio::select! {
                                    _ = tokio::time::sleep(RETRY) => {}
                                    _ = stop.changed() => return,
                                }
                            }
                            break;
                        }
                        apply(&shared, &prefix, resp);
                    }
                    Ok(None) | Err(_) => {
                        let why = match msg {
                            Err(e) => e.to_string(),
                            _ => "stream ended".to_owned(),
                        };
                        tracing::warn!(error = %why, "etcd watch broke; resuming it");
                        members.failed(member);
                        shared.set_unavailable(Some(format!("etcd watch: {why}")));
                        tokio::select! {
                            _ = tokio::time::sleep(RETRY) => {}
                            _ = stop.changed() => return,
                        }
                        break;
                    }
                },
                _ = stop.changed() => return,
            }
        }
    }
}

/// Read everything again at the current revision into a new index; the old one's watchers end
/// (their feeds close) and resume from revisions the new index no longer has, so they get 410.
async fn relist(shared: &Shared, members: &Members, prefix: &[u8]) {
    loop {
        match members
            .run(|c| async move { read_all(&c, prefix).await })
            .await
        {
            Ok((rv, objects)) => {
                let rv = rv.max(shared.read().rv);
                let mut index = shared.write();
                let mut fresh = fresh_index(rv, shared.limit, objects);
                fresh.carry_counters(&mut index);
                *index = fresh;
                shared.applied.store(rv, Ordering::SeqCst);
                drop(index);
                raise(&shared.rv_tx, rv);
                raise(&shared.known_tx, rv);
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading etcd again failed; retrying");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// Apply one watch response: its events in order, or the revision of a progress notification.
fn apply(shared: &Shared, prefix: &[u8], resp: WatchResponse) {
    let header_rv = revision_of(resp.header());
    let progress_only = resp.events().is_empty() && !resp.created();
    // Parse outside the lock.
    let mut parsed = Vec::with_capacity(resp.events().len());
    for ev in resp.events() {
        let Some(kv) = ev.kv() else { continue };
        let rv = kv.mod_revision().max(0) as u64;
        let Some(key) = decode_key(prefix, kv.key()) else {
            continue;
        };
        let obj = match ev.event_type() {
            EtcdEventType::Put => match decode_object(kv) {
                Ok(o) => Some(Arc::new(o)),
                Err(why) => {
                    tracing::error!(key = %String::from_utf8_lossy(kv.key()), error = why, "stored object cannot be read: not served");
                    None
                }
            },
            EtcdEventType::Delete => None,
        };
        parsed.push((rv, key, obj, kv.create_revision() == kv.mod_revision()));
    }
    let mut index = shared.write();
    for (rv, key, obj, created) in parsed {
        // Compared with the last event, not with the index's revision: etcd before 3.4.25 can
        // send a progress notification ahead of events still to come (etcd-io/etcd#15220), and
        // those events must not be dropped for it.
        if rv <= shared.applied.load(Ordering::SeqCst) {
            continue;
        }
        shared.applied.store(rv, Ordering::SeqCst);
        let prev = index.get(&key);
        let event = match obj {
            Some(object) => Event {
                rv,
                kind: if prev.is_some() && !created {
                    EventType::Modified
                } else {
                    EventType::Added
                },
                key,
                object,
                prev,
            },
            None => {
                let Some(last) = prev else {
                    // Not in the index (it could not be read): nothing to remove.
                    index.rv = index.rv.max(rv);
                    continue;
                };
                let object = match StoredObject::new(rv, last.parse().into_owned()) {
                    Ok(o) => Arc::new(o),
                    Err(_) => last.clone(),
                };
                Event {
                    rv,
                    kind: EventType::Deleted,
                    key,
                    object,
                    prev: Some(last),
                }
            }
        };
        index.apply(event);
    }
    let rv = index.rv;
    drop(index);
    raise(&shared.rv_tx, rv);
    raise(&shared.known_tx, rv);
    if progress_only {
        raise(&shared.known_tx, header_rv);
    }
}

/// What a failed transaction found under the key: its `mod_revision`, if it exists.
fn found_revision(resp: &etcd_client::TxnResponse) -> Option<u64> {
    resp.op_responses().into_iter().find_map(|r| match r {
        TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.mod_revision().max(0) as u64),
        _ => None,
    })
}

impl Store for EtcdStore {
    fn revision(&self) -> u64 {
        self.shared.read().rv
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<StoredObject>> {
        self.shared.read().get(key)
    }

    fn list(&self, resource: &str, at: Option<u64>) -> Result<Snapshot> {
        self.shared.read().snapshot(resource, at)
    }

    fn write_prepared(
        &self,
        op: WriteOp,
        prepared: Option<Prepared>,
    ) -> BoxFuture<Result<Arc<StoredObject>>> {
        // The served JSON carries the revision's digits besides the stored bytes.
        if let Some(p) = &prepared {
            let size = p.len() + (self.revision() + 1).to_string().len();
            if size > self.max_object_bytes {
                return Box::pin(std::future::ready(Err(StoreError::TooLarge {
                    size,
                    limit: self.max_object_bytes,
                })));
            }
        }
        let members = self.members.clone();
        let key = encode_key(&self.prefix, op.key());
        let shared = self.shared.clone();
        let progress = self.progress.clone();
        let closed = *self.stop.borrow();
        Box::pin(async move {
            if closed {
                return Err(StoreError::Closed);
            }
            let precondition = match &op {
                WriteOp::Put { precondition, .. } | WriteOp::Delete { precondition, .. } => {
                    *precondition
                }
            };
            let then = match &prepared {
                Some(p) => TxnOp::put(key.clone(), p.unversioned_json().to_vec(), None),
                None => TxnOp::delete(key.clone(), Some(DeleteOptions::new().with_prev_key())),
            };
            let compare = match precondition {
                Precondition::MustNotExist => {
                    Compare::create_revision(key.clone(), CompareOp::Equal, 0)
                }
                Precondition::Exists => {
                    Compare::create_revision(key.clone(), CompareOp::Greater, 0)
                }
                Precondition::ResourceVersion(rv) => {
                    Compare::mod_revision(key.clone(), CompareOp::Equal, rv as i64)
                }
            };
            let txn = etcd_client::Txn::new()
                .when(vec![compare])
                .and_then(vec![then])
                .or_else(vec![TxnOp::get(key.clone(), None)]);
            let resp = members.txn(txn).await.map_err(|e| match &e {
                // etcd's own `--max-request-bytes` (1.5 MiB unless it was raised).
                etcd_client::Error::GRpcStatus(s) if s.message().contains("too large") => {
                    StoreError::TooLarge {
                        size: prepared.as_ref().map_or(0, Prepared::len),
                        limit: ETCD_MAX_REQUEST_BYTES,
                    }
                }
                _ => etcd_error(e),
            })?;
            let rv = revision_of(resp.header());
            if !resp.succeeded() {
                let found = found_revision(&resp);
                let err = match (precondition, found) {
                    (Precondition::MustNotExist, _) => StoreError::AlreadyExists,
                    (_, None) => StoreError::NotFound,
                    (_, Some(current)) => StoreError::Conflict { current },
                };
                // Let this host's view reach what etcd compared against, so that a retry reads
                // the object that won (or sees it gone).
                match found {
                    Some(current) => catch_up(&shared.rv_tx, &progress, current, CATCH_UP).await,
                    None => catch_up(&shared.known_tx, &progress, rv, CATCH_UP).await,
                };
                return Err(err);
            }
            let object = match prepared {
                Some(p) => Arc::new(p.stored(rv)?),
                None => {
                    let prev = resp.op_responses().into_iter().find_map(|r| match r {
                        TxnOpResponse::Delete(d) => d.prev_kvs().first().cloned(),
                        _ => None,
                    });
                    let value = prev
                        .as_ref()
                        .and_then(|kv| serde_json::from_slice(kv.value()).ok())
                        .unwrap_or(serde_json::Value::Null);
                    Arc::new(StoredObject::new(rv, value)?)
                }
            };
            if !catch_up(&shared.rv_tx, &progress, rv, CATCH_UP).await {
                tracing::warn!(
                    revision = rv,
                    "a write committed to etcd has not reached this host's view yet"
                );
            }
            // The index's copy when it is this version: one copy in memory.
            if let Some(cur) = shared.read().get(op.key()).filter(|c| c.rv == rv) {
                return Ok(cur);
            }
            Ok(object)
        })
    }

    fn watch(&self, resource: &str, from: WatchFrom) -> Result<WatchStart> {
        self.shared.write().watch(resource, from)
    }

    fn watch_in(
        &self,
        resource: &str,
        namespace: Option<&str>,
        from: WatchFrom,
    ) -> Result<WatchStart> {
        self.shared.write().watch_in(resource, namespace, from)
    }

    fn wait_for_revision(&self, rv: u64, timeout: Duration) -> BoxFuture<bool> {
        let shared = self.shared.clone();
        let progress = self.progress.clone();
        Box::pin(async move { catch_up(&shared.known_tx, &progress, rv, timeout).await })
    }

    fn sync(&self) -> BoxFuture<Result<()>> {
        let members = self.members.clone();
        let prefix = self.prefix.clone();
        let shared = self.shared.clone();
        let progress = self.progress.clone();
        Box::pin(async move {
            // A linearizable read of one key: its header has etcd's current revision.
            let resp = members
                .run(|c| {
                    let key = prefix.clone();
                    async move {
                        c.kv_client()
                            .get(key, Some(GetOptions::new().with_keys_only()))
                            .await
                    }
                })
                .await
                .map_err(etcd_error)?;
            let rv = revision_of(resp.header());
            let behind = |rv: u64| {
                StoreError::Unavailable(format!(
                    "this host's view of etcd has not caught up with revision {rv} (at {})",
                    shared.read().rv
                ))
            };
            if !catch_up(&shared.known_tx, &progress, rv, CATCH_UP).await {
                return Err(behind(rv));
            }
            // etcd before 3.4.25 can send a progress notification ahead of events still to
            // come (etcd-io/etcd#15220), so the known revision may be ahead of the index. Then
            // ask etcd for the prefix's newest change after what the index applied, up to
            // `rv`, and wait for the index to hold it. (A delete leaves no key to find: on
            // such an etcd it can still be seen a moment late.)
            let applied = shared.applied.load(Ordering::SeqCst);
            if applied >= rv {
                return Ok(());
            }
            let newest = members
                .run(|c| {
                    let key = prefix.clone();
                    let opts = GetOptions::new()
                        .with_range(range_end(&prefix))
                        .with_keys_only()
                        .with_revision(rv as i64)
                        .with_min_mod_revision(applied as i64 + 1)
                        .with_sort(SortTarget::Mod, SortOrder::Descend)
                        .with_limit(1);
                    async move { c.kv_client().get(key, Some(opts)).await }
                })
                .await
                .map_err(etcd_error)?
                .kvs()
                .first()
                .map(|kv| kv.mod_revision().max(0) as u64);
            match newest {
                Some(newest) if !catch_up(&shared.rv_tx, &progress, newest, CATCH_UP).await => {
                    Err(behind(newest))
                }
                _ => Ok(()),
            }
        })
    }

    fn shutdown(&self) -> Result<()> {
        // Every acknowledged write is already in etcd: stop following it.
        self.stop.send_replace(true);
        if let Some(task) = self.task.lock().ok().and_then(|mut t| t.take()) {
            task.abort();
        }
        Ok(())
    }

    fn health(&self) -> super::Health {
        super::Health {
            unavailable: self
                .shared
                .unavailable
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            quarantined: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::process::{Child, Command, Stdio};

    /// A one-member etcd on loopback ports in a temporary directory (the `etcd` binary of
    /// Debian's `etcd-server`, which `.ci/run` installs); killed and removed on drop.
    struct Etcd {
        child: Child,
        dir: std::path::PathBuf,
        url: String,
    }

    fn free_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    impl Etcd {
        fn start() -> Self {
            let dir = std::env::temp_dir().join(format!(
                "turtles-etcd-unit-{}-{}",
                std::process::id(),
                rand::random::<u64>()
            ));
            let (client, peer) = (free_port(), free_port());
            let url = format!("http://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let child = Command::new("etcd")
                .args(["--name", "m0", "--data-dir"])
                .arg(&dir)
                .args([
                    "--listen-client-urls",
                    &url,
                    "--advertise-client-urls",
                    &url,
                ])
                .args(["--listen-peer-urls", &peer_url])
                .args(["--initial-advertise-peer-urls", &peer_url])
                .args(["--initial-cluster", &format!("m0={peer_url}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("etcd runs (Debian package etcd-server)");
            Etcd { child, dir, url }
        }

        fn options(&self, prefix: &str) -> EtcdOptions {
            EtcdOptions {
                endpoints: vec![self.url.clone()],
                prefix: prefix.to_owned(),
                tls: EtcdTls::default(),
                watch_history: 1000,
                watch_history_bytes: 1 << 20,
                max_object_bytes: 4096,
            }
        }
    }

    impl Drop for Etcd {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn cm(name: &str, data: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "ns", "resourceVersion": "", "uid": "u"},
               "data": {"k": data}})
    }

    fn put(name: &str, data: &str, precondition: Precondition) -> WriteOp {
        WriteOp::Put {
            key: ObjectKey::new("configmaps", "ns", name),
            value: cm(name, data),
            precondition,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_views_of_one_etcd_agree_on_revisions_preconditions_and_events() {
        let etcd = Etcd::start();
        let a = EtcdStore::open(etcd.options("/t/")).await.unwrap();
        let b = EtcdStore::open(etcd.options("/t/")).await.unwrap();
        let mut feed = b.watch("configmaps", WatchFrom::Now).unwrap();
        let key = ObjectKey::new("configmaps", "ns", "a");

        // Create: the revision is etcd's, and the writer reads its own write at once.
        let created = a
            .write(put("a", "1", Precondition::MustNotExist))
            .await
            .unwrap();
        assert!(created.rv > 0);
        assert_eq!(a.get(&key).unwrap().rv, created.rv);
        assert_eq!(
            created.value()["metadata"]["resourceVersion"],
            created.rv.to_string()
        );
        // The object keeps its fields' order: resourceVersion where the writer had it.
        let text = std::str::from_utf8(&created.json).unwrap();
        assert!(text.find("resourceVersion").unwrap() < text.find("\"uid\"").unwrap());
        // The other view, after a consistent read, has it too, byte for byte.
        b.sync().await.unwrap();
        assert_eq!(b.get(&key).unwrap().json, created.json);

        assert!(matches!(
            b.write(put("a", "x", Precondition::MustNotExist)).await,
            Err(StoreError::AlreadyExists)
        ));
        let updated = b
            .write(put("a", "2", Precondition::ResourceVersion(created.rv)))
            .await
            .unwrap();
        assert!(updated.rv > created.rv);
        // A stale precondition through the other view: Conflict naming the current revision,
        // and by then that view holds the current object (a retry reads it).
        match a
            .write(put("a", "3", Precondition::ResourceVersion(created.rv)))
            .await
        {
            Err(StoreError::Conflict { current }) => assert_eq!(current, updated.rv),
            other => panic!("want a conflict, got {other:?}"),
        }
        assert_eq!(a.get(&key).unwrap().rv, updated.rv);
        assert!(matches!(
            a.write(put("missing", "1", Precondition::Exists)).await,
            Err(StoreError::NotFound)
        ));

        let deleted = a
            .write(WriteOp::Delete {
                key: key.clone(),
                precondition: Precondition::ResourceVersion(updated.rv),
            })
            .await
            .unwrap();
        assert!(deleted.rv > updated.rv);
        assert_eq!(deleted.value()["data"]["k"], "2", "the last state, stamped");
        assert_eq!(
            deleted.value()["metadata"]["resourceVersion"],
            deleted.rv.to_string()
        );
        assert!(a.get(&key).is_none());

        // b's watch saw all three, in order, with the revisions the writers got.
        let mut seen = Vec::new();
        while seen.len() < 3 {
            let ev = tokio::time::timeout(Duration::from_secs(10), feed.live.recv())
                .await
                .expect("event within 10 s")
                .unwrap();
            seen.push((ev.kind, ev.rv));
        }
        assert_eq!(
            seen,
            vec![
                (EventType::Added, created.rv),
                (EventType::Modified, updated.rv),
                (EventType::Deleted, deleted.rv)
            ]
        );
        // Past revisions are served from the history, as with sled.
        b.sync().await.unwrap();
        let past = b.list("configmaps", Some(created.rv)).unwrap();
        assert_eq!(
            past.items.values().next().unwrap().value()["data"]["k"],
            "1"
        );

        // A third view opened now loads what is there.
        a.write(put("b", "1", Precondition::MustNotExist))
            .await
            .unwrap();
        let c = EtcdStore::open(etcd.options("/t/")).await.unwrap();
        assert_eq!(c.list("configmaps", None).unwrap().items.len(), 1);
        // Another prefix is another cluster.
        let other = EtcdStore::open(etcd.options("/other/")).await.unwrap();
        assert!(other.list("configmaps", None).unwrap().items.is_empty());
        for s in [&a, &b, &c, &other] {
            s.shutdown().unwrap();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_consistent_read_catches_up_past_writes_outside_the_prefix() {
        let etcd = Etcd::start();
        let a = EtcdStore::open(etcd.options("/t/")).await.unwrap();
        a.write(put("a", "1", Precondition::MustNotExist))
            .await
            .unwrap();
        // etcd's revision moves on through keys turtles does not watch: only a progress
        // notification tells this view that it is still current.
        let mut raw = Client::connect([&etcd.url], None).await.unwrap();
        for i in 0..5 {
            raw.put(format!("/elsewhere/{i}"), "x", None).await.unwrap();
        }
        let etcd_rv = revision_of(raw.get("/elsewhere/0", None).await.unwrap().header());
        let before = a.revision();
        assert!(before < etcd_rv);
        a.sync().await.unwrap();
        // Known to be current up to etcd's revision; the index's own revision (what lists and
        // watches report) stays that of its last event.
        assert!(a.wait_for_revision(etcd_rv, Duration::from_secs(1)).await);
        assert_eq!(a.revision(), before);
        // The view still takes later events (none was skipped for the progress revision).
        let later = a
            .write(put("b", "1", Precondition::MustNotExist))
            .await
            .unwrap();
        assert!(later.rv > etcd_rv);
        assert_eq!(a.list("configmaps", None).unwrap().items.len(), 2);
        // Too big for this store: refused before etcd sees it.
        assert!(matches!(
            a.write(put("big", &"x".repeat(5000), Precondition::MustNotExist))
                .await,
            Err(StoreError::TooLarge { .. })
        ));
        a.shutdown().unwrap();
        assert!(matches!(
            a.write(put("c", "1", Precondition::MustNotExist)).await,
            Err(StoreError::Closed)
        ));
    }
}
