//! `keeper`: ConfigMaps labelled `turtles.dev/test=keeper` (primary) and the Secrets a ConfigMap
//! owns (a secondary watch mapped to the owner), as an operator that keeps a Secret per
//! ConfigMap watches them. Each reconcile logs whether it got its object (`sees NS/NAME`) or
//! none (`gone NS/NAME`): a Secret owned by a ConfigMap outside the selector must not look like
//! that ConfigMap's deletion.

use turtles_controller::{
    export, info, Controller, Gvr, Object, ObjectKey, Outcome, Permission, Registration, Watch,
};

struct Keeper;

impl Controller for Keeper {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/test=keeper"))
            .watch(Watch::of(Gvr::SECRETS).owned_by("", "ConfigMap"))
            .permission(Permission::core(
                &["configmaps", "secrets"],
                &["list", "watch"],
            ))
    }

    fn reconcile(key: ObjectKey, object: Option<Object>) -> Outcome {
        match object {
            Some(_) => info!("sees {}", key.display()),
            None => info!("gone {}", key.display()),
        }
        Outcome::Done
    }
}

export!(Keeper);
