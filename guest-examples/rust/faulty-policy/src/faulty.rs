//! The faulty policy, shared by `faulty-policy` and `faulty-policy-open` (which differ only in
//! `LABEL` and `FAILURE_POLICY`, defined by the including crate).
//!
//! Validates creates of core v1 ConfigMaps that carry the label `LABEL` (the object selector is
//! `LABEL`, so it sees no others): the label's value `trap` traps, `loop` never returns, `memory`
//! allocates without bound (the memory cap must stop it); any other value is allowed. Each call
//! has a 300 ms budget.

use turtles_controller::admission::{Operation, Policy, Registration, Request, Rule, Verdict};

pub struct Faulty;

impl Policy for Faulty {
    fn register() -> Registration {
        Registration::validating(Rule::core(&["configmaps"]).operations(&[Operation::Create]))
            .object_selector(super::LABEL)
            .failure_policy(super::FAILURE_POLICY)
            .timeout_ms(300)
    }

    fn validate(request: &Request) -> Verdict {
        match request.label(super::LABEL) {
            Some("trap") => unreachable!("faulty policy traps on purpose for {}", request.name),
            Some("loop") => loop {
                std::hint::black_box(());
            },
            Some("memory") => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    // Filled with ones, so every page is touched.
                    hoard.push(std::hint::black_box(vec![1u8; 1 << 20]));
                    std::hint::black_box(&hoard);
                }
            }
            _ => Verdict::allow(),
        }
    }
}
