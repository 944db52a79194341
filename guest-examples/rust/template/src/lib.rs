//! `{{name}}`: a turtles controller. Every ConfigMap gets the annotation
//! `turtles.dev/{{name}}`, written with a merge patch when it is missing or differs.

use turtles_controller::{
    api, export, info, json, meta, Controller, Gvr, Object, ObjectKey, Outcome, Permission,
    Registration, Value, Watch,
};

/// The annotation this controller owns.
pub const ANNOTATION: &str = "turtles.dev/{{name}}";

/// The annotation's value.
pub fn greeting() -> &'static str {
    "hello from {{name}}"
}

/// The merge patch that gives `object` the annotation, or `None` when it has it already.
pub fn desired_patch(object: &Value) -> Option<Value> {
    if meta::annotation(object, ANNOTATION) == Some(greeting()) {
        return None;
    }
    Some(json!({ "metadata": { "annotations": { ANNOTATION: greeting() } } }))
}

pub struct App;

impl Controller for App {
    /// What the host runs informers for, and the permissions the controller acts with.
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS)).permission(Permission::core(
            &["configmaps"],
            &["get", "list", "watch", "patch"],
        ))
    }

    /// Called with each changed ConfigMap's key and, from the informer cache, the object
    /// (`None` once it is gone; its JSON is parsed the first time it is looked at).
    fn reconcile(key: ObjectKey, object: Option<Object>) -> Outcome {
        let Some(object) = object else {
            return Outcome::Done;
        };
        let Some(patch) = desired_patch(&object) else {
            return Outcome::Done;
        };
        match api::patch_merge(
            &Gvr::CONFIGMAPS.object_path(&key.namespace, &key.name),
            &patch,
        ) {
            Ok(_) => {
                info!("annotated {}", key.display());
                Outcome::Done
            }
            Err(e) if e.is_not_found() => Outcome::Done, // deleted meanwhile
            Err(e) => e.into(),
        }
    }
}

export!(App);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotates_once() {
        let bare = json!({ "metadata": { "name": "c", "namespace": "default" } });
        let patch = desired_patch(&bare).expect("a ConfigMap without the annotation is patched");
        assert_eq!(patch["metadata"]["annotations"][ANNOTATION], greeting());
        let done = json!({ "metadata": { "annotations": { ANNOTATION: greeting() } } });
        assert_eq!(desired_patch(&done), None);
    }
}
