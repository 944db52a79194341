//! Events of the built-in controllers, as client-go's recorder writes them for
//! kube-controller-manager's (`kubectl describe` lists them): the same shape and name as the Wasm
//! controllers' ([`crate::runtime::events`]), written through the [`Service`] as the host, and a
//! repeat bumps the existing Event's `count` and `lastTimestamp`. Best effort: a failure is
//! logged.

use serde_json::{json, Value};

use crate::runtime::events::{cut, limited_object, new_event, placement, Limiter, MAX_NOTE};
use crate::runtime::wit;
use crate::service::{Service, Subresource, WriteOptions};

/// Attempts at bumping the count when another writer got there first.
const BUMP_ATTEMPTS: usize = 3;

/// Each built-in controller's Event limits (the Wasm controllers' [`Limiter`]: per object, per
/// namespace and per controller), so a tenant whose objects make a controller complain cannot have the host
/// write Events without end.
fn limiter(component: &str) -> std::sync::Arc<Limiter> {
    static LIMITERS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<Limiter>>>,
    > = std::sync::OnceLock::new();
    let mut all = LIMITERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    all.entry(component.to_owned()).or_default().clone()
}

/// Record an Event about `regarding` (an object's JSON) from `component`.
pub async fn record(
    service: &Service,
    component: &str,
    regarding: &Value,
    warning: bool,
    reason: &str,
    note: &str,
) {
    let s = |p: &str| {
        regarding
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let event = wit::Event {
        regarding: wit::ObjectReference {
            api_version: s("/apiVersion"),
            kind: s("/kind"),
            namespace: s("/metadata/namespace"),
            name: s("/metadata/name"),
            uid: s("/metadata/uid"),
        },
        type_: if warning {
            wit::EventType::Warning
        } else {
            wit::EventType::Normal
        },
        reason: reason.to_owned(),
        action: String::new(),
        note: note.to_owned(),
    };
    if let Err(why) = limiter(component).take(
        &event.regarding.namespace,
        &limited_object(&event.regarding),
    ) {
        tracing::debug!(component, reason, why, "event dropped");
        return;
    }
    if let Err(e) = write(service, component, &event).await {
        tracing::debug!(component, reason, error = %e, "event not recorded");
    }
}

async fn write(service: &Service, component: &str, event: &wit::Event) -> Result<(), String> {
    let note = cut(&event.note, MAX_NOTE);
    let (ns, name) = placement(component, event, note);
    let now = crate::model::meta::now_rfc3339();
    let Some(ri) = service.registry.lookup("", "v1", "events") else {
        return Ok(());
    };
    let body = new_event(component, event, &ns, &name, note, &now);
    match service
        .create(&ri, &ns, body, &WriteOptions::default())
        .await
    {
        Ok(_) => return Ok(()),
        Err(e) if e.code == 409 => {}
        Err(e) => return Err(e.message),
    }
    // A repeat: the count of the stored one, one more (conditional on what was read).
    for _ in 0..BUMP_ATTEMPTS {
        let current = service.get(&ri, &ns, &name).map_err(|e| e.message)?;
        let mut v = current.parse().into_owned();
        let count = v.get("count").and_then(Value::as_i64).unwrap_or(1);
        v["count"] = json!(count.saturating_add(1));
        v["lastTimestamp"] = json!(now);
        match service
            .update(
                &ri,
                &ns,
                &name,
                v,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if e.code == 409 => continue,
            Err(e) => return Err(e.message),
        }
    }
    Err(format!(
        "event {ns}/{name} kept changing while its count was bumped"
    ))
}
