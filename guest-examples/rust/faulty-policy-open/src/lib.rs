//! `faulty-policy-open`: `faulty-policy` failing open. On a create of a ConfigMap labelled
//! `turtles.dev/fault-open=trap` it traps, `=loop` it never returns, `=memory` it allocates
//! without bound; other values are allowed. Failure policy `ignore` (a failed call lets the write
//! through), 300 ms per call. The same source as `faulty-policy`.

use turtles_controller::admission::FailurePolicy;

/// The label the policy selects on and reads.
const LABEL: &str = "turtles.dev/fault-open";
/// What a failed call means.
const FAILURE_POLICY: FailurePolicy = FailurePolicy::Ignore;

#[path = "../../faulty-policy/src/faulty.rs"]
mod faulty;

turtles_controller::export_policy!(faulty::Faulty);
