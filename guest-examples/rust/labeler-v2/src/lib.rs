//! `labeler-v2`: every ConfigMap labelled `turtles.dev/greet=true` gets the annotation
//! `turtles.dev/greeting: "hello again, <name>"`, written with a merge patch.
//! The same controller as `labeler` with another greeting: swapping one for the other in the
//! controllers folder shows the hot swap.

use turtles_controller::{
    api, export, info, json, meta, Controller, Gvr, ObjectKey, Outcome, Permission, Registration,
    Value, Watch,
};

const ANNOTATION: &str = "turtles.dev/greeting";

struct Labeler;

impl Controller for Labeler {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/greet=true"))
            .permission(Permission::core(
                &["configmaps"],
                &["get", "list", "watch", "patch"],
            ))
    }

    fn reconcile(key: ObjectKey, object: Option<Value>) -> Outcome {
        let Some(object) = object else {
            return Outcome::Done; // gone: nothing to do
        };
        let greeting = format!("hello again, {}", key.name);
        if meta::annotation(&object, ANNOTATION) == Some(greeting.as_str()) {
            return Outcome::Done;
        }
        let patch = json!({ "metadata": { "annotations": { ANNOTATION: greeting } } });
        match api::patch_merge(
            &Gvr::CONFIGMAPS.object_path(&key.namespace, &key.name),
            &patch,
        ) {
            Ok(_) => {
                info!("greeted {}", key.display());
                Outcome::Done
            }
            Err(e) if e.is_not_found() => Outcome::Done, // deleted meanwhile
            Err(e) => e.into(),
        }
    }
}

export!(Labeler);
