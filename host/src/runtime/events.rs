//! `record-event`: a controller's Event, written as client-go's recorder writes core v1 Events
//! (`kubectl describe` lists them), through the API as the controller's identity (so RBAC
//! decides: `create` and `patch` on `events`), and aggregated: the same event again (same
//! object, type, reason, action and note, from the same controller) bumps the existing Event's
//! `count` and `lastTimestamp` instead of adding one.
//!
//! Unlike client-go (which names Events `OBJECT.<unix nanos>` and finds repeats in an in-memory
//! cache), the name is `OBJECT.<hash of the event>`: a repeat is the same name, so aggregation
//! survives restarts and needs no cache; the Event's `count` is read back from the first patch.

use serde_json::{json, Value};

use super::{call_api, wit, HostCtx};

/// Longest reason and action (events.k8s.io's validation).
const MAX_REASON: usize = 128;
/// Where a note is cut (events.k8s.io's `note` limit).
pub(crate) const MAX_NOTE: usize = 1024;
/// Longest object name kept in the Event's name (a DNS subdomain: 253 with the suffix).
const MAX_NAME_PREFIX: usize = 253 - 17;
/// Attempts at bumping the count when another writer got there first.
const BUMP_ATTEMPTS: usize = 3;
/// Events a controller may record at once, and per second after that, about the objects of one
/// namespace (a token bucket per controller and namespace, on top of client-go's per-object spam
/// filter below): a guest that records an Event per reconcile with a changing note cannot flood
/// the store, and one tenant's objects cannot use up what the controller records elsewhere.
const NAMESPACE_BURST: f64 = 100.0;
const NAMESPACE_EVENTS_PER_SECOND: f64 = 10.0;
/// And across all namespaces: what one controller may write in all.
const EVENT_BURST: f64 = 1000.0;
const EVENTS_PER_SECOND: f64 = 100.0;

/// client-go's `EventSourceObjectSpamFilter`: per object, 25 Events at once, then one every
/// five minutes; at most this many objects (and namespaces) remembered (its LRU's size).
const OBJECT_BURST: f64 = 25.0;
const OBJECT_EVENTS_PER_SECOND: f64 = 1.0 / 300.0;
const OBJECTS_REMEMBERED: usize = 4096;

/// One token bucket: tokens and when they were counted.
type Bucket = (f64, std::time::Instant);

/// `b` refilled at `rate` up to `burst`, as of `now`.
fn refill(b: &mut Bucket, burst: f64, rate: f64, now: std::time::Instant) {
    *b = (
        (b.0 + now.duration_since(b.1).as_secs_f64() * rate).min(burst),
        now,
    );
}

/// A controller's token buckets of Events: one per object it records about (so one object's
/// Events, however many, do not use up what the others get, as client-go's spam filter keys
/// them by source and object), one per namespace (so one tenant's objects do not use up what
/// the others' get), and one for the controller.
pub struct Limiter(std::sync::Mutex<Buckets>);

struct Buckets {
    controller: Bucket,
    namespaces: std::collections::HashMap<String, Bucket>,
    objects: std::collections::HashMap<String, Bucket>,
}

impl Default for Limiter {
    fn default() -> Self {
        Self(std::sync::Mutex::new(Buckets {
            controller: (EVENT_BURST, std::time::Instant::now()),
            namespaces: std::collections::HashMap::new(),
            objects: std::collections::HashMap::new(),
        }))
    }
}

/// Room for `key` in a table of buckets bounded by [`OBJECTS_REMEMBERED`]: the buckets that are
/// full again are forgotten (as an LRU would drop them); if that is not enough, the half with
/// the most tokens left. The ones that used theirs up stay remembered, so flooding the table
/// does not give them their burst back.
fn make_room(
    table: &mut std::collections::HashMap<String, Bucket>,
    key: &str,
    burst: f64,
    rate: f64,
    now: std::time::Instant,
) {
    if table.len() < OBJECTS_REMEMBERED || table.contains_key(key) {
        return;
    }
    table.retain(|_, b| b.0 + now.duration_since(b.1).as_secs_f64() * rate < burst);
    if table.len() >= OBJECTS_REMEMBERED {
        let mut by_tokens: Vec<(String, f64)> =
            table.iter().map(|(k, b)| (k.clone(), b.0)).collect();
        by_tokens.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (k, _) in by_tokens.into_iter().take(OBJECTS_REMEMBERED / 2) {
            table.remove(&k);
        }
    }
}

impl Limiter {
    /// Take one token for an Event about `object` in `namespace` ("" for a cluster-scoped one),
    /// if its bucket, its namespace's and the controller's all have one. Err: which limit
    /// refused it.
    pub(crate) fn take(&self, namespace: &str, object: &str) -> Result<(), &'static str> {
        let mut g = match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let now = std::time::Instant::now();
        let Buckets {
            controller,
            namespaces,
            objects,
        } = &mut *g;
        make_room(objects, object, OBJECT_BURST, OBJECT_EVENTS_PER_SECOND, now);
        make_room(
            namespaces,
            namespace,
            NAMESPACE_BURST,
            NAMESPACE_EVENTS_PER_SECOND,
            now,
        );
        let bucket = objects
            .entry(object.to_owned())
            .or_insert((OBJECT_BURST, now));
        refill(bucket, OBJECT_BURST, OBJECT_EVENTS_PER_SECOND, now);
        let ns_bucket = namespaces
            .entry(namespace.to_owned())
            .or_insert((NAMESPACE_BURST, now));
        refill(ns_bucket, NAMESPACE_BURST, NAMESPACE_EVENTS_PER_SECOND, now);
        refill(controller, EVENT_BURST, EVENTS_PER_SECOND, now);
        if bucket.0 < 1.0 {
            return Err("more than 25 events about this object at once or one per 5 minutes");
        }
        if ns_bucket.0 < 1.0 {
            return Err(
                "more than 100 events at once or 10 per second from this controller in this namespace",
            );
        }
        if controller.0 < 1.0 {
            return Err("more than 1000 events at once or 100 per second from this controller");
        }
        bucket.0 -= 1.0;
        ns_bucket.0 -= 1.0;
        controller.0 -= 1.0;
        Ok(())
    }
}

/// The key an Event's object is limited by (see [`Limiter`]).
pub(crate) fn limited_object(r: &wit::ObjectReference) -> String {
    [&r.api_version, &r.kind, &r.namespace, &r.name, &r.uid]
        .map(|s| s.as_str())
        .join("\0")
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("invalid event: {0}")]
    Invalid(String),
    #[error("{0}")]
    Api(String),
}

/// The longest prefix of `s` of at most `max` bytes on a character boundary.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The Event's namespace (cluster-scoped objects' Events go to `default`, as client-go does)
/// and name.
pub(crate) fn placement(controller: &str, e: &wit::Event, note: &str) -> (String, String) {
    let r = &e.regarding;
    let ns = if r.namespace.is_empty() {
        "default".to_owned()
    } else {
        r.namespace.clone()
    };
    let ty = type_name(&e.type_);
    let key = [
        controller,
        &r.api_version,
        &r.kind,
        &r.namespace,
        &r.name,
        &r.uid,
        ty,
        &e.reason,
        &e.action,
        note,
    ]
    .join("\0");
    let hash = super::sha256_hex(key.as_bytes());
    (ns, format!("{}.{}", name_prefix(&r.name), &hash[..16]))
}

/// The object's name as the start of a DNS-subdomain Event name: cut, lowercased, any other
/// character (a ClusterRole's `:`) as `-`, no `.` or `-` at either end.
fn name_prefix(name: &str) -> String {
    let s: String = cut(name, MAX_NAME_PREFIX)
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '.' | '-') => c,
            _ => '-',
        })
        .collect();
    // Each dot-separated label starts and ends with a letter or digit.
    let labels: Vec<&str> = s
        .split('.')
        .map(|l| l.trim_matches('-'))
        .filter(|l| !l.is_empty())
        .collect();
    if labels.is_empty() {
        "event".to_owned()
    } else {
        labels.join(".")
    }
}

fn type_name(t: &wit::EventType) -> &'static str {
    match t {
        wit::EventType::Normal => "Normal",
        wit::EventType::Warning => "Warning",
    }
}

fn validate(e: &wit::Event) -> Result<(), EventError> {
    let r = &e.regarding;
    if r.name.is_empty() || r.kind.is_empty() || r.api_version.is_empty() {
        return Err(EventError::Invalid(
            "regarding needs apiVersion, kind and name".into(),
        ));
    }
    if !r.namespace.is_empty() && !crate::model::meta::is_dns_label(&r.namespace) {
        return Err(EventError::Invalid(format!(
            "regarding.namespace {:?} is not a valid namespace name",
            r.namespace
        )));
    }
    if r.name.len() > 253
        || r.kind.len() > 63
        || r.api_version.len() > 253
        || r.uid.len() > 128
        || r.name.contains('/')
    {
        return Err(EventError::Invalid(
            "regarding: name (at most 253 bytes, no '/'), kind (63), apiVersion (253) or uid (128) too long or invalid".into(),
        ));
    }
    if e.reason.is_empty() || e.reason.len() > MAX_REASON {
        return Err(EventError::Invalid(format!(
            "reason must be 1 to {MAX_REASON} bytes"
        )));
    }
    if e.action.len() > MAX_REASON {
        return Err(EventError::Invalid(format!(
            "action must be at most {MAX_REASON} bytes"
        )));
    }
    Ok(())
}

/// The Event as created the first time.
pub(crate) fn new_event(
    controller: &str,
    e: &wit::Event,
    ns: &str,
    name: &str,
    note: &str,
    now: &str,
) -> Value {
    let r = &e.regarding;
    let mut involved = json!({"kind": r.kind, "name": r.name, "apiVersion": r.api_version});
    if !r.namespace.is_empty() {
        involved["namespace"] = json!(r.namespace);
    }
    if !r.uid.is_empty() {
        involved["uid"] = json!(r.uid);
    }
    let mut ev = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": involved,
        "reason": e.reason,
        "message": note,
        "source": {"component": controller},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": type_name(&e.type_),
        "reportingComponent": controller,
        "reportingInstance": "",
    });
    if !e.action.is_empty() {
        ev["action"] = json!(e.action);
    }
    ev
}

async fn write(ctx: &HostCtx, method: &str, path: &str, ct: &str, body: &Value) -> (u16, Value) {
    let resp = call_api(
        ctx,
        wit::HttpRequest {
            method: method.into(),
            path: path.into(),
            headers: vec![
                ("content-type".into(), ct.into()),
                ("accept".into(), "application/json".into()),
            ],
            body: body.to_string().into_bytes(),
        },
    )
    .await;
    let v = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
    (resp.status, v)
}

fn api_error(status: u16, v: &Value) -> EventError {
    EventError::Api(
        v.get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("the API answered {status}")),
    )
}

/// Record `e` for the controller behind `ctx`.
pub async fn record(ctx: &HostCtx, e: wit::Event) -> Result<(), String> {
    record_inner(ctx, &e).await.map_err(|err| {
        tracing::debug!(controller = %ctx.name, error = %err, "event not recorded");
        err.to_string()
    })
}

async fn record_inner(ctx: &HostCtx, e: &wit::Event) -> Result<(), EventError> {
    validate(e)?;
    let r = &e.regarding;
    // Past the spam limits the event is dropped silently, as client-go's `EventCorrelator`
    // skips it: not the guest's failure to handle (a guest logging each one made a tenant's
    // 20,000 Pods write 20 KB of log a second).
    if let Err(why) = ctx.events.take(&r.namespace, &limited_object(r)) {
        tracing::debug!(controller = %ctx.name, reason = %e.reason, why, "event dropped");
        return Ok(());
    }
    let note = cut(&e.note, MAX_NOTE);
    let (ns, name) = placement(&ctx.name, e, note);
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let collection = format!("/api/v1/namespaces/{ns}/events");
    let body = new_event(&ctx.name, e, &ns, &name, note, &now);
    let (status, v) = write(ctx, "POST", &collection, "application/json", &body).await;
    match status {
        200..=299 => return Ok(()),
        409 => {}
        _ => return Err(api_error(status, &v)),
    }
    // A repeat: bump the count (the first patch reads it; the second is conditional on the
    // resourceVersion it read, so concurrent repeats are each counted).
    let path = format!("{collection}/{name}");
    const MERGE: &str = "application/merge-patch+json";
    for _ in 0..BUMP_ATTEMPTS {
        let (status, cur) = write(ctx, "PATCH", &path, MERGE, &json!({"lastTimestamp": now})).await;
        if status == 404 {
            // Deleted in between: start over with a fresh one.
            let (status, v) = write(ctx, "POST", &collection, "application/json", &body).await;
            return match status {
                200..=299 | 409 => Ok(()),
                _ => Err(api_error(status, &v)),
            };
        }
        if !(200..300).contains(&status) {
            return Err(api_error(status, &cur));
        }
        let count = cur.get("count").and_then(Value::as_i64).unwrap_or(1);
        let rv = cur
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap_or(Value::Null);
        let bump = json!({"metadata": {"resourceVersion": rv}, "count": count.saturating_add(1)});
        let (status, v) = write(ctx, "PATCH", &path, MERGE, &bump).await;
        match status {
            200..=299 => return Ok(()),
            409 => continue,
            _ => return Err(api_error(status, &v)),
        }
    }
    Err(EventError::Api(format!(
        "event {ns}/{name} kept changing while its count was bumped"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(note: &str) -> wit::Event {
        wit::Event {
            regarding: wit::ObjectReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                namespace: String::new(),
                name: "n1".into(),
                uid: "u".into(),
            },
            type_: wit::EventType::Normal,
            reason: "Registered".into(),
            action: String::new(),
            note: note.into(),
        }
    }

    #[test]
    fn the_same_event_gets_the_same_name_in_default_for_cluster_scoped_objects() {
        let (ns, a) = placement("c", &event("hi"), "hi");
        assert_eq!(ns, "default");
        assert!(a.starts_with("n1.") && a.len() == 3 + 16, "{a}");
        assert_eq!(placement("c", &event("hi"), "hi").1, a);
        assert_ne!(placement("c", &event("ho"), "ho").1, a);
        assert_ne!(placement("other", &event("hi"), "hi").1, a);
        let mut long = event("x");
        long.regarding.name = "a".repeat(253);
        assert_eq!(placement("c", &long, "x").1.len(), 253);
    }

    #[test]
    fn invalid_events_are_refused_and_notes_cut_on_a_char_boundary() {
        let mut e = event("x");
        e.reason = String::new();
        assert!(validate(&e).is_err());
        e.reason = "R".repeat(129);
        assert!(validate(&e).is_err());
        e.reason = "R".into();
        e.regarding.kind = String::new();
        assert!(validate(&e).is_err());
        assert!(validate(&event("x")).is_ok());
        let note = "é".repeat(600);
        let c = cut(&note, MAX_NOTE);
        assert_eq!(c.len(), 1024);
        assert_eq!(cut("ab", 1), "a");
        assert_eq!(cut("é", 1), "");
        let mut e = event("x");
        e.regarding.namespace = "../kube-system".into();
        assert!(validate(&e).is_err());
        let mut e = event("x");
        e.regarding.name = "a/b".into();
        assert!(validate(&e).is_err());
        let mut e = event("x");
        e.regarding.uid = "u".repeat(129);
        assert!(validate(&e).is_err());
    }

    #[test]
    fn event_names_are_dns_subdomains_for_any_object_name() {
        for (name, prefix) in [
            ("system:controller:gc", "system-controller-gc"),
            ("Web.-x-.", "web.x"),
            ("::", "event"),
            ("a..b", "a.b"),
        ] {
            let mut e = event("x");
            e.regarding.name = name.into();
            let (_, n) = placement("c", &e, "x");
            assert_eq!(n.rsplit_once('.').unwrap().0, prefix, "{name}");
            assert!(crate::model::meta::is_dns_subdomain(&n), "{n}");
        }
    }

    #[test]
    fn a_controller_records_a_burst_then_a_steady_rate() {
        let l = Limiter::default();
        // 25 about one object, then none more about it; the others still get theirs.
        let one = (0..1000).take_while(|_| l.take("a", "x").is_ok()).count();
        assert_eq!(one, OBJECT_BURST as usize);
        assert!(l.take("a", "x").is_err());
        let rest = (0..1000)
            .take_while(|i| l.take("a", &format!("o{i}")).is_ok())
            .count();
        assert_eq!(one + rest, NAMESPACE_BURST as usize);
        assert!(l.take("a", "fresh").is_err());
        // One namespace's flood leaves the others theirs, up to the controller's own limit.
        let mut others = 0;
        for n in 0..100 {
            others += (0..1000)
                .take_while(|i| l.take(&format!("ns{n}"), &format!("ns{n}/o{i}")).is_ok())
                .count();
        }
        assert_eq!(one + rest + others, EVENT_BURST as usize);
        assert!(l.take("b", "fresh").is_err());
    }

    #[test]
    fn the_objects_remembered_are_bounded() {
        let l = Limiter::default();
        let now = std::time::Instant::now();
        let mut g = l.0.lock().unwrap();
        for i in 0..OBJECTS_REMEMBERED {
            g.objects.insert(format!("o{i}"), (OBJECT_BURST, now));
            g.namespaces.insert(format!("n{i}"), (NAMESPACE_BURST, now));
        }
        drop(g);
        assert!(l.take("new", "new").is_ok());
        let g = l.0.lock().unwrap();
        assert!(g.objects.len() <= OBJECTS_REMEMBERED);
        assert!(g.namespaces.len() <= OBJECTS_REMEMBERED);
        drop(g);
        // A full table of objects, half of them drained: a new one makes room among the others,
        // so flooding the table does not give the drained ones their burst back.
        let l = Limiter::default();
        let mut g = l.0.lock().unwrap();
        for i in 0..OBJECTS_REMEMBERED {
            let tokens = if i % 2 == 0 { 0.0 } else { 10.0 };
            g.objects.insert(format!("o{i}"), (tokens, now));
        }
        drop(g);
        assert!(l.take("x", "new").is_ok());
        assert!(l.take("x", "o0").is_err(), "a drained object stays limited");
    }

    #[test]
    fn a_new_event_looks_like_client_gos() {
        let ev = new_event(
            "c",
            &event("hi"),
            "default",
            "n1.x",
            "hi",
            "2026-01-01T00:00:00Z",
        );
        assert_eq!(
            ev["involvedObject"],
            json!({"kind": "Node", "name": "n1", "apiVersion": "v1", "uid": "u"})
        );
        assert_eq!(ev["count"], 1);
        assert_eq!(ev["type"], "Normal");
        assert_eq!(ev["source"]["component"], "c");
        assert!(ev.get("action").is_none());
    }
}
