//! Two facts about the scalar fields of kube's Go types, generated from the json tags and field
//! types of kube 1.34's types (`k8s.io/api` v0.34.0, apimachinery's `meta/v1`, apiextensions' and
//! kube-aggregator's `v1`) by `cargo xtask import-gotypes`, each a table of definition name ->
//! JSON field names:
//!
//! - `omitempty.json`, the `omitempty` scalar fields that are not pointers: kube's
//!   `encoding/json` leaves them out at their zero value (`false`, `0`, `""`), so neither its
//!   stored objects nor its managed fields ever have them there;
//! - `pointers.json`, the fields that are pointers to a scalar (`*string`, `*int32`, `*bool`,
//!   `*PersistentVolumeMode`): set, they are written even at their zero value, which means
//!   something (`storageClassName: ""`, `replicas: 0`, `readOnlyRootFilesystem: false`).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

const OMITEMPTY: &str = include_str!("omitempty.json");
const POINTERS: &str = include_str!("pointers.json");

type Table = HashMap<String, HashSet<String>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(OMITEMPTY).unwrap_or_default())
}

fn pointers() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(POINTERS).unwrap_or_default())
}

/// Whether field `field` of the type `definition` (`io.k8s.api.core.v1.PodSpec`) is a
/// non-pointer `omitempty` scalar.
pub fn omits(definition: &str, field: &str) -> bool {
    table().get(definition).is_some_and(|f| f.contains(field))
}

/// Whether field `field` of the type `definition` is a pointer to a scalar
/// (`io.k8s.api.core.v1.PersistentVolumeClaimSpec`'s `storageClassName`, a `*string`).
pub fn is_pointer(definition: &str, field: &str) -> bool {
    pointers()
        .get(definition)
        .is_some_and(|f| f.contains(field))
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

    #[test]
    fn the_pointer_table_parses_and_has_only_pointers() {
        assert!(pointers().len() > 150, "{}", pointers().len());
        for (definition, field) in [
            // `*string`, `*int32`, `*bool`, `*int64`, a named string type, across packages.
            (
                "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
                "storageClassName",
            ),
            ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeMode"),
            ("io.k8s.api.apps.v1.DeploymentSpec", "replicas"),
            ("io.k8s.api.core.v1.PodSpec", "shareProcessNamespace"),
            (
                "io.k8s.api.core.v1.SecurityContext",
                "readOnlyRootFilesystem",
            ),
            (
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                "deletionGracePeriodSeconds",
            ),
            ("io.k8s.api.core.v1.HostPathVolumeSource", "type"),
            ("io.k8s.api.scheduling.v1.PriorityClass", "preemptionPolicy"),
        ] {
            assert!(is_pointer(definition, field), "{definition}.{field}");
            assert!(!omits(definition, field), "{definition}.{field}");
        }
        // Values, not pointers; and pointers to structs are not scalars.
        assert!(!is_pointer(
            "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
            "volumeName"
        ));
        assert!(!is_pointer("io.k8s.api.core.v1.Container", "workingDir"));
        assert!(!is_pointer(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "generation"
        ));
        assert!(!is_pointer(
            "io.k8s.api.core.v1.Container",
            "securityContext"
        ));
        assert!(!is_pointer(
            "io.k8s.api.apps.v1.RollingUpdateDeployment",
            "maxSurge"
        ));
    }
}
