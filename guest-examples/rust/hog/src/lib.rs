//! `hog`: reconciling a ConfigMap labelled `turtles.dev/test=hog` allocates and touches 1 GiB.
//! The host's memory cap must make it trap instead of taking the server's memory.

use turtles_controller::{
    export, Controller, Gvr, Object, ObjectKey, Outcome, Registration, Watch,
};

struct Hog;

impl Controller for Hog {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/test=hog"))
    }

    fn reconcile(_key: ObjectKey, _object: Option<Object>) -> Outcome {
        let mut hog = std::hint::black_box(vec![1u8; 1 << 30]);
        // Touch every page so nothing is left lazily unallocated.
        for i in (0..hog.len()).step_by(4096) {
            hog[i] = hog[i].wrapping_add(1);
        }
        let sum: u64 = hog.iter().step_by(4096).map(|&b| u64::from(b)).sum();
        std::hint::black_box(sum);
        Outcome::Done
    }
}

export!(Hog);
