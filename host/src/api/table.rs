//! `meta.k8s.io/v1` Table responses for `kubectl get`: the built-in kinds' columns as kube's
//! printers print them ([`super::printers`]), a CRD's `additionalPrinterColumns`, and each row's `object` as PartialObjectMetadata (or the full object
//! with `includeObject=Object`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::handlers::Query;
use crate::model::registry::PrinterColumn;
use crate::model::ResourceInfo;
use crate::store::StoredObject;

/// kube's `duration.HumanDuration` of the time since `ts`.
pub fn age(ts: Option<&str>) -> String {
    let Some(t) = ts.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()) else {
        return "<unknown>".into();
    };
    let secs = (chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds();
    human_duration(secs)
}

pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let secs = secs.max(0);
    let (m, h) = (secs / 60, secs / 3600);
    let d = h / 24;
    let y = d / 365;
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        if secs % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", secs % 60)
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else if h < 24 * 365 * 8 {
        if d % 365 == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{}d", d % 365)
        }
    } else {
        format!("{y}y")
    }
}

pub fn render(
    ri: &ResourceInfo,
    items: &[Arc<StoredObject>],
    rv: &str,
    continue_token: Option<&str>,
    query: &Query,
) -> Value {
    if let Some(custom) = &ri.custom {
        return render_custom(&custom.printer_columns, items, rv, continue_token, query);
    }
    // A version converted on the way in and out (events.k8s.io Events, autoscaling/v1 HPAs) is
    // printed as kube prints it: by the stored kind's printer, from the stored shape (kube's
    // printers work on the internal type); the row's object stays in the version asked for.
    let (group, resource, to_storage) = match ri.conversion {
        Some(c) => {
            let (r, g) = c
                .stored_group_resource
                .split_once('.')
                .unwrap_or((c.stored_group_resource, ""));
            (g, r, Some(c.to_storage))
        }
        None => (ri.group.as_str(), ri.resource.as_str(), None),
    };
    let cols = super::printers::columns(group, resource);
    render_with(cols, items, rv, continue_token, query, to_storage)
}

/// A Table of `items` with these columns (a kind without a resource of its own: a Scale).
pub fn render_columns(
    cols: &[super::printers::Column],
    items: &[Arc<StoredObject>],
    rv: &str,
    query: &Query,
) -> Value {
    render_with(cols, items, rv, None, query, None)
}

/// The Table: `cols` read from each item (from its stored shape when `to_storage` gives it),
/// each row carrying the item as `includeObject` asks.
fn render_with(
    cols: &[super::printers::Column],
    items: &[Arc<StoredObject>],
    rv: &str,
    continue_token: Option<&str>,
    query: &Query,
    to_storage: Option<fn(&mut serde_json::Map<String, Value>)>,
) -> Value {
    let include = query
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    let defs: Vec<Value> = cols
        .iter()
        .map(|c| json!({"name": c.name, "type": c.kind, "format": c.format, "description": c.description, "priority": c.priority}))
        .collect();
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let whole = o.parse();
            let stored = to_storage.map(|f| {
                let mut v = whole.clone().into_owned();
                if let Some(m) = v.as_object_mut() {
                    f(m);
                }
                v
            });
            let shown = stored.as_ref().unwrap_or(&whole);
            let cells: Vec<Value> = cols.iter().map(|c| (c.cell)(shown)).collect();
            row(cells, o, include)
        })
        .collect();
    table(defs, rows, rv, continue_token)
}

fn row(cells: Vec<Value>, o: &StoredObject, include: &str) -> Value {
    let mut row = json!({"cells": cells});
    match include {
        "None" => {}
        "Object" => row["object"] = o.parse().into_owned(),
        _ => {
            row["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": o.parse().get("metadata").cloned().unwrap_or_else(|| json!({})),
            })
        }
    }
    row
}

fn table(defs: Vec<Value>, rows: Vec<Value>, rv: &str, continue_token: Option<&str>) -> Value {
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = continue_token {
        meta["continue"] = json!(c);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": defs, "rows": rows})
}

/// A custom resource's Table: Name, then its `additionalPrinterColumns` (Age when it has none).
fn render_custom(
    printer: &[PrinterColumn],
    items: &[Arc<StoredObject>],
    rv: &str,
    continue_token: Option<&str>,
    query: &Query,
) -> Value {
    let include = query
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    let age = PrinterColumn {
        name: "Age".into(),
        kind: "date".into(),
        format: String::new(),
        description: super::printers::AGE.description.into(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    };
    let cols: Vec<&PrinterColumn> = if printer.is_empty() {
        vec![&age]
    } else {
        printer.iter().collect()
    };
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": super::printers::NAME.description, "priority": 0}),
    ];
    defs.extend(cols.iter().map(|c| {
        json!({"name": c.name, "type": c.kind, "format": c.format, "description": c.description, "priority": c.priority})
    }));
    let rows = items
        .iter()
        .map(|o| {
            let mut cells = vec![json!(crate::model::meta::name(o.head()))];
            let whole = o.parse();
            cells.extend(cols.iter().map(|c| custom_cell(c, &whole)));
            row(cells, o, include)
        })
        .collect();
    table(defs, rows, rv, continue_token)
}

fn custom_cell(c: &PrinterColumn, obj: &Value) -> Value {
    let Some(v) = crate::crd::eval_json_path(obj, &c.json_path) else {
        return Value::Null;
    };
    match (c.kind.as_str(), &v) {
        ("date", Value::String(ts)) => json!(age(Some(ts))),
        ("integer" | "number" | "boolean", _) => v,
        (_, Value::String(_)) => v,
        (_, Value::Array(a)) => json!(a
            .iter()
            .map(|e| match e {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")),
        (_, other) => json!(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400), "3d");
        assert_eq!(human_duration(-5), "<invalid>");
    }
}
