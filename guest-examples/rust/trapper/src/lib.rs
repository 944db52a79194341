//! `trapper`: reconciling a ConfigMap labelled `turtles.dev/test=trapper` traps (a Rust panic
//! is a Wasm `unreachable`). The host must count a failure, drop the instance and go on.

use turtles_controller::{
    export, Controller, Gvr, Object, ObjectKey, Outcome, Registration, Watch,
};

struct Trapper;

impl Controller for Trapper {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/test=trapper"))
    }

    fn reconcile(key: ObjectKey, _object: Option<Object>) -> Outcome {
        unreachable!(
            "trapper traps on purpose while reconciling {}",
            key.display()
        )
    }
}

export!(Trapper);
