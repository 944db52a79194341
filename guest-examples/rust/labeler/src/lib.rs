//! `labeler`: every ConfigMap labelled `turtles.dev/greet=true` gets the annotation
//! `turtles.dev/greeting: "hello, <name>"`, written with a merge patch.

/// The greeting written before the object's name.
const GREETING: &str = "hello";

mod labeler;

use labeler::Labeler;
use turtles_controller::export;

export!(Labeler);
