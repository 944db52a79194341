//! `?watch=true`: a chunked stream of newline-delimited JSON events.
//!
//! Each watch is one task that owns a bounded channel to the HTTP body. It reads the store's live
//! feed (a bounded broadcast); when the client is too slow to drain its channel, the feed lags and
//! the watch is ended, so a slow watcher never holds up writers or other watchers. The client
//! resumes from the last resourceVersion it saw.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::error::json_response;
use super::handlers::{Query, Representation, Target};
use super::AppState;
use crate::model::{ApiError, EventType, ResourceInfo};
use crate::service::{Filter, Service};
use crate::store::{Event, StoreError, StoredObject, WatchFrom};

/// Lines buffered between the watch task and the socket.
const CHANNEL: usize = 256;
/// How long a watch for a future resourceVersion waits for it.
const TOO_NEW_WAIT: Duration = Duration::from_secs(3);

fn line(kind: &str, obj: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(obj.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(kind.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(obj);
    b.put_slice(b"}\n");
    b.freeze()
}

fn bookmark(ri: &ResourceInfo, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": ri.kind, "apiVersion": ri.api_version(), "metadata": meta});
    line("BOOKMARK", obj.to_string().as_bytes())
}

fn error_line(e: &ApiError) -> Bytes {
    line("ERROR", e.to_status().to_string().as_bytes())
}

fn parse_bool(q: &Query, key: &str) -> Option<bool> {
    q.get(key).map(|v| v == "true" || v == "1")
}

/// How event objects are written: as stored, or as kubectl asked for them in `Accept`
/// (`as=Table`: a one-row Table per event, column definitions only in the first, as kube does).
struct Encoder {
    repr: Representation,
    query: Query,
    first: bool,
}

impl Encoder {
    fn event(&mut self, ri: &ResourceInfo, kind: &str, obj: Arc<StoredObject>) -> Bytes {
        let obj = Service::present(ri, obj);
        match self.repr {
            Representation::Full => line(kind, &obj.json),
            Representation::PartialMetadata => line(
                kind,
                json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj.value.get("metadata").cloned().unwrap_or_else(|| json!({})),
                })
                .to_string()
                .as_bytes(),
            ),
            Representation::Table => {
                let rv = obj.rv.to_string();
                let mut t =
                    super::table::render(ri, std::slice::from_ref(&obj), &rv, None, &self.query);
                if !std::mem::take(&mut self.first) {
                    t["columnDefinitions"] = json!([]);
                }
                line(kind, t.to_string().as_bytes())
            }
        }
    }
}

/// The event to send for one store event, if any, applying filter transitions: an object that
/// starts matching is ADDED, one that stops matching is DELETED.
fn translate(filter: &Filter, ev: &Event) -> Option<(&'static str, Arc<StoredObject>)> {
    let now = ev.kind != EventType::Deleted && filter.matches(&ev.object.value);
    let before = ev.prev.as_ref().is_some_and(|p| filter.matches(&p.value));
    match (ev.kind, before, now) {
        (EventType::Deleted, true, _) => Some(("DELETED", ev.object.clone())),
        (EventType::Deleted, false, _) => None,
        (_, false, true) => Some(("ADDED", ev.object.clone())),
        (_, true, true) => Some(("MODIFIED", ev.object.clone())),
        (_, true, false) => Some(("DELETED", ev.object.clone())),
        (_, false, false) => None,
    }
}

pub async fn serve(
    state: Arc<AppState>,
    target: &Target,
    q: &Query,
    repr: Representation,
) -> Result<Response, ApiError> {
    let ri = target.ri.clone();
    let mut enc = Encoder {
        repr,
        query: q.clone(),
        first: true,
    };
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
    let rv_match = q
        .get("resourceVersionMatch")
        .map(String::as_str)
        .filter(|s| !s.is_empty());
    if send_initial.is_some() {
        if rv_match != Some("NotOlderThan") {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![crate::model::Cause::new(
                    "FieldValueForbidden",
                    "sendInitialEvents",
                    "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
                )],
            ));
        }
        if send_initial == Some(true) && !bookmarks {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![crate::model::Cause::new(
                    "FieldValueForbidden",
                    "allowWatchBookmarks",
                    "Forbidden: allowWatchBookmarks must be set to true when sendInitialEvents is set",
                )],
            ));
        }
    } else if rv_match.is_some() {
        return Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    let requested = match rv_param {
        None | Some("0") => None,
        Some(s) => Some(s.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!(
                "resourceVersion: Invalid value: \"{s}\": must be a decimal integer"
            ))
        })?),
    };
    let store = state.service.store.clone();
    // Where the stream starts, and whether it opens with the current state.
    let (from, initial_end) = match (send_initial, requested) {
        (Some(true), _) => (WatchFrom::Now, true),
        (Some(false), None) => (WatchFrom::After(store.revision()), false),
        (Some(false), Some(n)) | (None, Some(n)) => (WatchFrom::After(n), false),
        (None, None) => (WatchFrom::Now, false),
    };
    if let Some(n) = requested {
        if n > store.revision() && !store.wait_for_revision(n, TOO_NEW_WAIT).await {
            return Err(ApiError::timeout(format!(
                "Too large resource version: {n}, current: {}",
                store.revision()
            )));
        }
    }
    let timeout = match q.get("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()) {
        Some(t) if t > 0 => Duration::from_secs(t),
        _ => Duration::from_secs(1800 + rand::random::<u64>() % 1800),
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(CHANNEL);
    let start = match store.watch(&ri.group_resource(), from) {
        Ok(s) => s,
        Err(StoreError::TooOld { requested, oldest }) => {
            // kube answers 200 and one ERROR event; clients relist on exactly this.
            let e = ApiError::expired(format!("too old resource version: {requested} ({oldest})"));
            return Ok(json_response(StatusCode::OK, error_line(&e)));
        }
        Err(e) => return Err(ApiError::internal(format!("watch failed: {e}"))),
    };
    let mut shutdown = state.shutdown.clone();
    let interval = state.options.bookmark_interval;
    tokio::spawn(async move {
        let mut last_rv = start.rv;
        // Initial state, then the backlog.
        if let Some(snap) = &start.snapshot {
            for obj in snap.items.values() {
                if filter.matches(&obj.value)
                    && tx
                        .send(Ok(enc.event(&ri, "ADDED", obj.clone())))
                        .await
                        .is_err()
                {
                    return;
                }
            }
        }
        if initial_end && tx.send(Ok(bookmark(&ri, start.rv, true))).await.is_err() {
            return;
        }
        for ev in &start.backlog {
            if let Some((kind, obj)) = translate(&filter, ev) {
                if tx.send(Ok(enc.event(&ri, kind, obj))).await.is_err() {
                    return;
                }
            }
            last_rv = last_rv.max(ev.rv);
        }
        let mut live = start.live;
        let stopped = async move {
            let _ = shutdown.wait_for(|s| *s).await.is_ok();
        };
        tokio::pin!(stopped);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                ev = live.recv() => match ev {
                    Ok(ev) => {
                        if ev.rv <= last_rv {
                            continue;
                        }
                        last_rv = ev.rv;
                        if let Some((kind, obj)) = translate(&filter, &ev) {
                            if tx.send(Ok(enc.event(&ri, kind, obj))).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::info!(resource = %ri.resource, behind = n, "watcher too slow; ending its stream so it resumes");
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = ticker.tick(), if bookmarks => {
                    if tx.send(Ok(bookmark(&ri, last_rv, false))).await.is_err() {
                        return;
                    }
                }
                _ = &mut deadline => {
                    if bookmarks {
                        let _ = tx.send(Ok(bookmark(&ri, last_rv, false))).await;
                    }
                    return;
                }
                _ = &mut stopped => return,
                _ = tx.closed() => return,
            }
        }
    });
    let mut resp = Response::new(Body::from_stream(ReceiverStream::new(rx)));
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-cache, private"),
    );
    Ok(resp)
}
