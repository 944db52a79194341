//! `labeler-v01`: the labeler built against `turtles:controller@0.1.0` (`wit/0.1.0`) with
//! wit-bindgen directly, no SDK: it shows (and the tests check) that components built against
//! 0.1.0 keep loading next to 0.2.0 ones. Every ConfigMap labelled `turtles.dev/greet-v01=true`
//! gets the annotation `turtles.dev/greeting: "hello, <name>"`, written with a merge patch.

wit_bindgen::generate!({
    path: "../../../wit/0.1.0",
    world: "controller",
});

use serde_json::{json, Value};
use turtles::controller::host;
use turtles::controller::types::{HttpRequest, KeyMapping, LogLevel, Permission, Watch};

const ANNOTATION: &str = "turtles.dev/greeting";

struct LabelerV01;

impl Guest for LabelerV01 {
    fn register() -> Registration {
        Registration {
            watches: vec![Watch {
                group: String::new(),
                version: "v1".into(),
                resource: "configmaps".into(),
                namespace: None,
                label_selector: Some("turtles.dev/greet-v01=true".into()),
                mapping: KeyMapping::SelfKey,
            }],
            max_concurrent_reconciles: 1,
            resync_seconds: None,
            permissions: vec![Permission {
                api_groups: vec![String::new()],
                resources: vec!["configmaps".into()],
                verbs: vec!["patch".into()],
            }],
        }
    }

    fn reconcile(key: ObjectKey, object: Option<Vec<u8>>) -> Outcome {
        let Some(object) = object.and_then(|o| serde_json::from_slice::<Value>(&o).ok()) else {
            return Outcome::Done;
        };
        let greeting = format!("hello, {}", key.name);
        if object.pointer("/metadata/annotations/turtles.dev~1greeting") == Some(&json!(greeting)) {
            return Outcome::Done;
        }
        let patch = json!({ "metadata": { "annotations": { ANNOTATION: greeting } } });
        let resp = host::api_call(&HttpRequest {
            method: "PATCH".into(),
            path: format!(
                "/api/v1/namespaces/{}/configmaps/{}",
                key.namespace, key.name
            ),
            headers: vec![("content-type".into(), "application/merge-patch+json".into())],
            body: patch.to_string().into_bytes(),
        });
        match resp.status {
            200..=299 => {
                host::log(LogLevel::Info, &format!("greeted {}", key.name), &[]);
                Outcome::Done
            }
            404 => Outcome::Done,
            s => Outcome::TransientError(format!("{s}: {}", String::from_utf8_lossy(&resp.body))),
        }
    }
}

export!(LabelerV01);
