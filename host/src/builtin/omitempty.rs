//! The `omitempty` scalar fields of kube's Go types that are not pointers: kube's
//! `encoding/json` leaves them out at their zero value (`false`, `0`, `""`), so neither its
//! stored objects nor its managed fields ever have them there. Generated from the json tags of
//! kube 1.34's types (`k8s.io/api` v0.34.0, apimachinery's `meta/v1`, apiextensions' and
//! kube-aggregator's `v1`) by `cargo xtask import-gotypes`: definition name -> JSON field names.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

const OMITEMPTY: &str = include_str!("omitempty.json");

fn table() -> &'static HashMap<String, HashSet<String>> {
    static TABLE: OnceLock<HashMap<String, HashSet<String>>> = OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(OMITEMPTY).unwrap_or_default())
}

/// Whether field `field` of the type `definition` (`io.k8s.api.core.v1.PodSpec`) is a
/// non-pointer `omitempty` scalar.
pub fn omits(definition: &str, field: &str) -> bool {
    table().get(definition).is_some_and(|f| f.contains(field))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_tells_pointers_from_values() {
        assert!(table().len() > 200, "{}", table().len());
        assert!(omits("io.k8s.api.core.v1.PodSpec", "hostNetwork"));
        assert!(omits(
            "io.k8s.api.core.v1.ServiceSpec",
            "publishNotReadyAddresses"
        ));
        assert!(omits("io.k8s.api.core.v1.ContainerPort", "hostPort"));
        // Pointers keep their zero: `*bool`, `*int32`, `*PreemptionPolicy`.
        assert!(!omits(
            "io.k8s.api.core.v1.PodSpec",
            "shareProcessNamespace"
        ));
        assert!(!omits("io.k8s.api.apps.v1.DeploymentSpec", "replicas"));
        assert!(!omits(
            "io.k8s.api.scheduling.v1.PriorityClass",
            "preemptionPolicy"
        ));
        // Without `omitempty`: written at zero.
        assert!(!omits("io.k8s.api.core.v1.ContainerPort", "containerPort"));
        assert!(omits(
            "io.k8s.api.scheduling.v1.PriorityClass",
            "globalDefault"
        ));
    }
}
