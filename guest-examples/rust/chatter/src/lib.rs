//! `chatter`: every reconcile prints a 4 KiB line to stdout and another to stderr, then returns.
//! The host logs what a guest prints after each call and keeps only a bounded amount per call:
//! a guest that prints on every call must go on working however long it runs.

use turtles_controller::{
    export, Controller, Gvr, Object, ObjectKey, Outcome, Registration, Watch,
};

struct Chatter;

impl Controller for Chatter {
    fn register() -> Registration {
        Registration::new(Watch::of(Gvr::CONFIGMAPS).label_selector("turtles.dev/test=chatter"))
    }

    fn reconcile(key: ObjectKey, _object: Option<Object>) -> Outcome {
        let filler = "x".repeat(4096);
        println!("chatter reconciles {}: {filler}", key.display());
        eprintln!("chatter on stderr: {filler}");
        Outcome::Done
    }
}

export!(Chatter);
