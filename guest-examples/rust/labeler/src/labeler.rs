//! The labeler controller, shared by `labeler` and `labeler-v2` (which differ only in
//! `GREETING`, defined by the including crate).

use turtles_controller::{
    api, info, json, meta, Controller, Gvr, Object, ObjectKey, Outcome, Permission, Registration,
    Watch,
};

const ANNOTATION: &str = "turtles.dev/greeting";

pub struct Labeler;

impl Controller for Labeler {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/greet=true"))
            .permission(Permission::core(
                &["configmaps"],
                &["get", "list", "watch", "patch"],
            ))
    }

    fn reconcile(key: ObjectKey, object: Option<Object>) -> Outcome {
        let Some(object) = object else {
            return Outcome::Done; // gone: nothing to do
        };
        let greeting = format!("{}, {}", super::GREETING, key.name);
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
