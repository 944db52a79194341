//! Built-in kinds served in one group-version and stored in another, as kube stores
//! `events.k8s.io/v1` Events as the core `v1` Events they are: both APIs see the same objects.
//! A [`Conversion`] names the stored resource and converts each way; the service applies it on
//! every write (`to_storage`) and read (`from_storage`), watches included.

use serde_json::{Map, Value};

/// How a served version maps to the stored one.
#[derive(Debug)]
pub struct Conversion {
    /// The stored resource's key prefix (`events`: core Events).
    pub stored_group_resource: &'static str,
    /// The stored objects' `apiVersion`.
    pub stored_api_version: &'static str,
    /// Served shape -> stored shape (`apiVersion` is set by the caller).
    pub to_storage: fn(&mut Map<String, Value>),
    /// Stored shape -> served shape (`apiVersion` is set by the caller).
    pub from_storage: fn(&mut Map<String, Value>),
}

/// `events.k8s.io/v1` Event fields and the core `v1` Event fields they are stored as (kube's
/// `Convert_v1_Event_To_core_Event`); the rest (`metadata`, `reason`, `type`, `action`,
/// `related`, `reportingInstance`, `eventTime`, `series`) have the same names.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &mut Map<String, Value>, pairs: impl Iterator<Item = (&'static str, &'static str)>) {
    for (from, to) in pairs {
        if let Some(v) = obj.remove(from) {
            obj.insert(to.to_owned(), v);
        }
    }
}

pub static EVENTS_V1: Conversion = Conversion {
    stored_group_resource: "events",
    stored_api_version: "v1",
    to_storage: |o| rename(o, EVENT_FIELDS.iter().copied()),
    from_storage: |o| rename(o, EVENT_FIELDS.iter().map(|(a, b)| (*b, *a))),
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_convert_both_ways() {
        let served = json!({"regarding": {"kind": "Pod", "name": "p"}, "note": "hi",
            "reason": "Started", "reportingController": "c", "deprecatedCount": 2});
        let Value::Object(mut m) = served.clone() else {
            unreachable!()
        };
        (EVENTS_V1.to_storage)(&mut m);
        assert_eq!(
            Value::Object(m.clone()),
            json!({"reason": "Started", "involvedObject": {"kind": "Pod", "name": "p"},
                "message": "hi", "reportingComponent": "c", "count": 2})
        );
        (EVENTS_V1.from_storage)(&mut m);
        let Value::Object(want) = served else {
            unreachable!()
        };
        assert_eq!(m.len(), want.len());
        for (k, v) in &want {
            assert_eq!(m.get(k), Some(v), "{k}");
        }
    }
}
