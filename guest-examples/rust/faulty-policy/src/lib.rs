//! `faulty-policy`: a validating admission policy that fails on demand, for the host's tests.
//! On a create of a ConfigMap labelled `turtles.dev/fault=trap` it traps, `=loop` it never
//! returns, `=memory` it allocates without bound; other values are allowed. Failure policy
//! `fail` (a failed call refuses the write), 300 ms per call. See `faulty.rs`.

use turtles_controller::admission::FailurePolicy;

/// The label the policy selects on and reads.
const LABEL: &str = "turtles.dev/fault";
/// What a failed call means.
const FAILURE_POLICY: FailurePolicy = FailurePolicy::Fail;

mod faulty;

turtles_controller::export_policy!(faulty::Faulty);
