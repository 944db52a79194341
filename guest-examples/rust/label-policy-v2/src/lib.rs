//! `label-policy-v2`: `label-policy` with the label value (and warning prefix)
//! `label-policy-v2`: swapping one for the other in the controllers folder shows a policy's hot
//! swap. The same source as `label-policy`.

/// The value of the added label, and the warning's prefix.
const VALUE: &str = "label-policy-v2";

#[path = "../../label-policy/src/label.rs"]
mod label;

turtles_controller::export_policy!(label::LabelPolicy);
