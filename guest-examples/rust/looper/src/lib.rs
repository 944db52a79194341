//! `looper`: reconciling a ConfigMap labelled `turtles.dev/test=looper` never returns. The host
//! must interrupt it (epoch deadline) and keep serving everything else.

use turtles_controller::{
    export, Controller, Gvr, Object, ObjectKey, Outcome, Registration, Watch,
};

struct Looper;

impl Controller for Looper {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/test=looper"))
    }

    fn reconcile(_key: ObjectKey, _object: Option<Object>) -> Outcome {
        let mut n: u64 = 0;
        loop {
            // black_box: the optimizer may not remove (or prove the end of) this loop.
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

export!(Looper);
