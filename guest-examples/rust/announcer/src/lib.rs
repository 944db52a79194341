//! `announcer`: what `turtles:controller@0.2.0` added, in one small controller.
//!
//! - It acts as the ServiceAccount `default/announcer`: what it may do is what that account's
//!   RoleBindings and ClusterRoleBindings grant (the host grants it nothing), so an operator
//!   written for a cluster keeps its RBAC model.
//! - At start (initial key `default/announcer-ready`, no watched change needed) it applies the
//!   ConfigMap `announcer-ready` with server-side apply.
//! - Every ConfigMap labelled `turtles.dev/announce=true` gets the annotation
//!   `turtles.dev/announced: "true"` (server-side apply, field manager `announcer`), and an
//!   `Announced` Event that `kubectl describe configmap` shows.

use turtles_controller::{
    api, events, info, json, meta, Controller, Gvr, Object, ObjectKey, Outcome, Permission,
    Registration, Watch,
};

const MANAGER: &str = "announcer";
const READY: &str = "announcer-ready";

struct Announcer;

impl Controller for Announcer {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/announce=true"))
            .service_account("default", "announcer")
            .initial_key("default", READY)
            // Documentation only when acting as a ServiceAccount: its bindings decide.
            .permission(Permission::core(
                &["configmaps"],
                &["list", "watch", "patch"],
            ))
            .permission(Permission::core(&["events"], &["create", "patch"]))
    }

    fn reconcile(key: ObjectKey, object: Option<Object>) -> Outcome {
        let path = Gvr::CONFIGMAPS.object_path(&key.namespace, &key.name);
        if key.name == READY {
            let ready = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": READY, "namespace": key.namespace},
                "data": {"ready": "true"},
            });
            return match api::apply(&path, &ready, MANAGER, true) {
                Ok(_) => Outcome::Done,
                Err(e) => e.into(),
            };
        }
        let Some(object) = object else {
            return Outcome::Done;
        };
        if meta::annotation(&object, "turtles.dev/announced") == Some("true") {
            return Outcome::Done;
        }
        let mine = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": key.name, "namespace": key.namespace,
                         "annotations": {"turtles.dev/announced": "true"}},
        });
        match api::apply(&path, &mine, MANAGER, true) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => return Outcome::Done,
            Err(e) => return e.into(),
        }
        let note = format!("announced {}", key.display());
        if let Err(e) = events::normal(&object, "Announced", &note) {
            return Outcome::TransientError(format!("recording the event: {e}"));
        }
        info!("{note}");
        Outcome::Done
    }
}

turtles_controller::export!(Announcer);
