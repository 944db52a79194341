//! `labeler-v2`: every ConfigMap labelled `turtles.dev/greet=true` gets the annotation
//! `turtles.dev/greeting: "hello again, <name>"`, written with a merge patch.
//! The same controller as `labeler` (the same source file) with another greeting: swapping one
//! for the other in the controllers folder shows the hot swap.

/// The greeting written before the object's name.
const GREETING: &str = "hello again";

#[path = "../../labeler/src/labeler.rs"]
mod labeler;

use labeler::Labeler;
use turtles_controller::export;

export!(Labeler);
