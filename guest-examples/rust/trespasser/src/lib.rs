//! `trespasser`: for a ConfigMap labelled `turtles.dev/test=trespasser`, tries to create a Secret
//! it has no permission for, then records the HTTP status it got (expected: 403) as the
//! annotation `turtles.dev/attempt` on the ConfigMap; and tries a watch request (`watch=yes`),
//! recording its status (expected: 400) as `turtles.dev/watch-attempt`.

use turtles_controller::{
    api, export, json, warn, Controller, Gvr, Object, ObjectKey, Outcome, Permission, Registration,
    Watch,
};

struct Trespasser;

impl Controller for Trespasser {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/test=trespasser"))
            // No permission on secrets at all.
            .permission(Permission::core(
                &["configmaps"],
                &["get", "list", "watch", "patch"],
            ))
    }

    fn reconcile(key: ObjectKey, object: Option<Object>) -> Outcome {
        if object.is_none() {
            return Outcome::Done;
        }
        let secret = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": { "name": format!("{}-stolen", key.name), "namespace": key.namespace },
            "stringData": { "loot": "yes" },
        });
        let status = match api::create(&Gvr::SECRETS.path(&key.namespace), &secret) {
            Ok(_) => 201,
            Err(e) => {
                warn!("creating a secret was refused: {e}");
                e.code
            }
        };
        // A watch however spelled (here `watch=yes`, which the API reads as true) would hold the
        // call past the reconcile's deadline: the host refuses it (expected: 400).
        let watched = match api::get(&format!(
            "{}?watch=yes",
            Gvr::CONFIGMAPS.path(&key.namespace)
        )) {
            Ok(_) => 200,
            Err(e) => e.code,
        };
        let patch = json!({ "metadata": { "annotations": {
            "turtles.dev/attempt": status.to_string(),
            "turtles.dev/watch-attempt": watched.to_string(),
        } } });
        match api::patch_merge(
            &Gvr::CONFIGMAPS.object_path(&key.namespace, &key.name),
            &patch,
        ) {
            Ok(_) => Outcome::Done,
            Err(e) if e.is_not_found() => Outcome::Done,
            Err(e) => e.into(),
        }
    }
}

export!(Trespasser);
