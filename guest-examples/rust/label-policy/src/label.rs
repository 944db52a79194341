//! The label policy, shared by `label-policy` and `label-policy-v2` (which differ only in
//! `VALUE`, defined by the including crate).
//!
//! Mutates creates of core v1 ConfigMaps labelled `turtles.dev/mutate=yes`: adds the label
//! `turtles.dev/mutated-by: VALUE` with a JSON patch and warns `VALUE: labelled`.

use turtles_controller::admission::{
    patch, Mutation, Operation, Policy, Registration, Request, Rule,
};

/// The label the policy selects on (value `yes`).
const SELECT: &str = "turtles.dev/mutate";
/// The label it adds.
const LABEL: &str = "turtles.dev/mutated-by";

pub struct LabelPolicy;

impl Policy for LabelPolicy {
    fn register() -> Registration {
        Registration::mutating(Rule::core(&["configmaps"]).operations(&[Operation::Create]))
            .object_selector(&format!("{SELECT}=yes"))
    }

    fn mutate(request: &Request) -> Mutation {
        let Some(object) = &request.object else {
            return Mutation::allow();
        };
        if request.label(SELECT) != Some("yes") {
            return Mutation::allow(); // the object selector already keeps these away
        }
        Mutation::json_patch(&patch::set_label(object, LABEL, super::VALUE))
            .warn(format!("{}: labelled", super::VALUE))
    }
}
