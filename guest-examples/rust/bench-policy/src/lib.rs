//! `bench-policy`: the validating policy of `cargo xtask bench`'s admission rows, the same check
//! as the bench's CEL ValidatingAdmissionPolicy (`object.metadata.labels.app == 'bench' &&
//! size(object.data) < 10`) for ConfigMap creates in namespaces labelled `policy=wasm`.

use turtles_controller::admission::{Operation, Policy, Registration, Request, Rule, Verdict};

pub struct BenchPolicy;

impl Policy for BenchPolicy {
    fn register() -> Registration {
        Registration::validating(Rule::core(&["configmaps"]).operations(&[Operation::Create]))
            .namespace_selector("policy=wasm")
    }

    fn validate(request: &Request) -> Verdict {
        let Some(object) = &request.object else {
            return Verdict::allow();
        };
        let bench = object["metadata"]["labels"]["app"] == "bench";
        let small = object["data"].as_object().map_or(0, |d| d.len()) < 10;
        if bench && small {
            Verdict::allow()
        } else {
            Verdict::deny("not a bench object")
        }
    }
}

turtles_controller::export_policy!(BenchPolicy);
