//! `label-policy`: a mutating admission policy. A ConfigMap created with the label
//! `turtles.dev/mutate=yes` gets the label `turtles.dev/mutated-by: label-policy` (a JSON patch)
//! and the client the warning `label-policy: labelled`. See `label.rs`.

/// The value of the added label, and the warning's prefix.
const VALUE: &str = "label-policy";

mod label;

turtles_controller::export_policy!(label::LabelPolicy);
