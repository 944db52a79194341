//! `noop`: reconciles ConfigMaps labelled `turtles.dev/test=noop` by doing nothing. It measures
//! what a reconcile costs the host and the runtime around the guest's own work
//! (`BENCH_ONLY=dispatch` in `cargo xtask bench`): the object is handed over but never looked
//! at, so the SDK never parses it.

use turtles_controller::{
    export, Controller, Gvr, Object, ObjectKey, Outcome, Registration, Watch,
};

struct Noop;

impl Controller for Noop {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/test=noop"))
    }

    fn reconcile(_key: ObjectKey, _object: Option<Object>) -> Outcome {
        Outcome::Done
    }
}

export!(Noop);
