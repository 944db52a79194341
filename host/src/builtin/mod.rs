//! The built-in Kubernetes API: which resources kube-apiserver serves (the table below, the one
//! place a built-in resource is declared), the published type definitions of every kind
//! (`definitions.json`, kube's own OpenAPI definitions, imported with `cargo xtask
//! import-openapi`, with kube's enums from [`enums`]), decoding as kube decodes ([`decode`]), and
//! the zero-valued fields kube's Go types always write ([`zero`]).

pub mod conversion;
pub mod csr;
pub mod decode;
pub mod defaults;
pub mod definitions;
pub mod disruption;
pub mod enums;
pub mod flowcontrol_bootstrap;
pub mod graceful;
pub mod kubernetes_service;
pub mod omitempty;
pub mod protobuf;
pub mod quantity;
pub mod time;
pub mod validation;
pub mod zero;

/// A served built-in resource. Singular names are the lower-cased kind, as in kube.
pub struct Builtin {
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Has a `/status` subresource.
    pub status: bool,
    /// Has a `/scale` subresource over `.spec.replicas`/`.status.replicas`/`.spec.selector`.
    pub scale: bool,
    /// A virtual, create-only resource (reviews): nothing is stored.
    pub create_only: bool,
    /// Read only and computed when read (ComponentStatuses): nothing is stored.
    pub computed: bool,
    /// kube keeps `metadata.generation` for it (its strategy sets and bumps it).
    pub generation: bool,
    /// A DELETE that removes it at once answers with the object, not a `Status` (kube's
    /// `ReturnDeletedObject`).
    pub delete_returns_object: bool,
    /// Stored as another group-version's resource (`events.k8s.io/v1` Events are core Events).
    pub conversion: Option<&'static conversion::Conversion>,
    /// An update must name the `resourceVersion` it replaces (kube's strategy answers false to
    /// `AllowUnconditionalUpdate`).
    pub conditional_update: bool,
    /// A PUT to a name that does not exist creates the object (kube's `AllowCreateOnUpdate`).
    pub create_on_update: bool,
}

const NS: bool = true;
const CLUSTER: bool = false;

const fn r(
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        resource,
        kind,
        namespaced,
        short: &[],
        categories: &[],
        status: false,
        scale: false,
        create_only: false,
        computed: false,
        generation: false,
        delete_returns_object: false,
        conversion: None,
        conditional_update: false,
        create_on_update: false,
    }
}

impl Builtin {
    const fn short(mut self, short: &'static [&'static str]) -> Self {
        self.short = short;
        self
    }
    /// In kube's `all` category (`kubectl get all`).
    const fn all(mut self) -> Self {
        self.categories = &["all"];
        self
    }
    const fn status(mut self) -> Self {
        self.status = true;
        self
    }
    const fn scale(mut self) -> Self {
        self.scale = true;
        self
    }
    const fn generation(mut self) -> Self {
        self.generation = true;
        self
    }
    const fn delete_returns_object(mut self) -> Self {
        self.delete_returns_object = true;
        self
    }
    const fn stored_as(mut self, conversion: &'static conversion::Conversion) -> Self {
        self.conversion = Some(conversion);
        self
    }
    const fn categories(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }
    const fn create_only(mut self) -> Self {
        self.create_only = true;
        self
    }
    const fn computed(mut self) -> Self {
        self.computed = true;
        self
    }
    const fn conditional_update(mut self) -> Self {
        self.conditional_update = true;
        self
    }
    const fn create_on_update(mut self) -> Self {
        self.create_on_update = true;
        self
    }
}

/// The served built-in resource `group`/`resource`, if any.
pub fn find(group: &str, resource: &str) -> Option<&'static Builtin> {
    RESOURCES
        .iter()
        .find(|b| b.group == group && b.resource == resource)
}

/// The metadata a `/status` write of built-in `group`/`resource` takes from the request, as its
/// kube 1.34 status strategy's `PrepareForUpdate` decides: `Some(fields)`, the request's
/// metadata but for `fields`, which stay as stored (besides what no update changes: `uid`,
/// `creationTimestamp`, `deletionTimestamp`, `generation`, ...); `None`, the stored metadata,
/// all of it. A CertificateSigningRequest's `/approval` is as its `/status`.
///
/// `None` are the strategies that call `metav1.ResetObjectMetaForStatus(new, old)` (its
/// labels, annotations, finalizers and ownerReferences, the rest being what no update changes)
/// or copy the whole old `ObjectMeta`: VolumeAttachments
/// (`pkg/registry/storage/volumeattachment/strategy.go`), ValidatingAdmissionPolicies
/// (`pkg/registry/admissionregistration/validatingadmissionpolicy/strategy.go`), ResourceClaims
/// (`pkg/registry/resource/resourceclaim/strategy.go`), FlowSchemas and
/// PriorityLevelConfigurations (`pkg/registry/flowcontrol/*/strategy.go`: the old
/// `ObjectMeta`), APIServices (`staging/src/k8s.io/kube-aggregator/pkg/registry/apiservice/
/// strategy.go`: labels, annotations, finalizers, ownerReferences), custom resources
/// (`staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/
/// status_strategy.go`: the whole old object but `status`; not asked here), and turtles' own
/// Controllers.
pub fn status_metadata(group: &str, resource: &str) -> Option<&'static [&'static str]> {
    const OWNER_REFERENCES: &[&str] = &["ownerReferences"];
    const LABELS: &[&str] = &["labels"];
    const NONE: &[&str] = &[];
    match (group, resource) {
        // `podStatusStrategy` (pkg/registry/core/pod/strategy.go): `spec`, and the
        // `deletionTimestamp` and `ownerReferences` of the old Pod.
        ("", "pods") => Some(OWNER_REFERENCES),
        // `deploymentStatusStrategy` (pkg/registry/apps/deployment/strategy.go): `spec` and
        // the old labels.
        ("apps", "deployments") => Some(LABELS),
        // `spec` only (each kind's `pkg/registry/<group>/<kind>/strategy.go`). A CRD's status
        // strategy (`staging/src/k8s.io/apiextensions-apiserver/pkg/registry/
        // customresourcedefinition/strategy.go`) calls `ResetObjectMetaForStatus(&newObj
        // .ObjectMeta, &newObj.ObjectMeta)`, the new metadata against itself: no reset.
        (
            "",
            "nodes"
            | "services"
            | "namespaces"
            | "persistentvolumeclaims"
            | "persistentvolumes"
            | "replicationcontrollers"
            | "resourcequotas",
        )
        | ("apps", "replicasets" | "statefulsets" | "daemonsets")
        | ("batch", "jobs" | "cronjobs")
        | ("autoscaling", "horizontalpodautoscalers")
        | ("policy", "poddisruptionbudgets")
        | ("networking.k8s.io", "ingresses" | "servicecidrs")
        | ("certificates.k8s.io", "certificatesigningrequests")
        | ("apiextensions.k8s.io", "customresourcedefinitions") => Some(NONE),
        _ => None,
    }
}

const CORE: &str = "";
const APPS: &str = "apps";
const BATCH: &str = "batch";
const NET: &str = "networking.k8s.io";
const STORAGE: &str = "storage.k8s.io";
const ADMISSION: &str = "admissionregistration.k8s.io";
const FLOW: &str = "flowcontrol.apiserver.k8s.io";
const RBAC: &str = "rbac.authorization.k8s.io";
const AUTHZ: &str = "authorization.k8s.io";
const DRA: &str = "resource.k8s.io";

/// Every built-in resource turtles serves: kube-apiserver 1.34's resources that are stored (and
/// its review kinds), at the versions it serves by default. Short names, categories,
/// subresources and which kinds keep `metadata.generation` are kube's.
pub const RESOURCES: &[Builtin] = &[
    // core/v1
    r(CORE, "v1", "namespaces", "Namespace", CLUSTER)
        .short(&["ns"])
        .status(),
    r(CORE, "v1", "configmaps", "ConfigMap", NS).short(&["cm"]),
    r(CORE, "v1", "secrets", "Secret", NS),
    r(CORE, "v1", "serviceaccounts", "ServiceAccount", NS)
        .short(&["sa"])
        .delete_returns_object(),
    r(CORE, "v1", "events", "Event", NS)
        .short(&["ev"])
        .create_on_update(),
    r(CORE, "v1", "pods", "Pod", NS)
        .short(&["po"])
        .all()
        .status()
        .generation()
        .delete_returns_object(),
    r(CORE, "v1", "nodes", "Node", CLUSTER)
        .short(&["no"])
        .status(),
    r(CORE, "v1", "services", "Service", NS)
        .short(&["svc"])
        .all()
        .status()
        .delete_returns_object()
        .create_on_update(),
    r(CORE, "v1", "endpoints", "Endpoints", NS)
        .short(&["ep"])
        .create_on_update(),
    r(CORE, "v1", "limitranges", "LimitRange", NS)
        .short(&["limits"])
        .create_on_update(),
    r(
        CORE,
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        NS,
    )
    .short(&["pvc"])
    .status(),
    r(CORE, "v1", "persistentvolumes", "PersistentVolume", CLUSTER)
        .short(&["pv"])
        .status(),
    r(CORE, "v1", "podtemplates", "PodTemplate", NS),
    // The health of the control plane's parts, probed when read (deprecated in kube 1.19, still
    // served).
    r(CORE, "v1", "componentstatuses", "ComponentStatus", CLUSTER)
        .short(&["cs"])
        .computed(),
    // The legacy way to bind a Pod (`POST bindings`, the Binding named as the Pod), as
    // `pods/binding`: create only, nothing stored.
    r(CORE, "v1", "bindings", "Binding", NS).create_only(),
    r(
        CORE,
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        NS,
    )
    .short(&["rc"])
    .all()
    .status()
    .scale()
    .generation(),
    r(CORE, "v1", "resourcequotas", "ResourceQuota", NS)
        .short(&["quota"])
        .status(),
    // apps/v1
    r(APPS, "v1", "deployments", "Deployment", NS)
        .short(&["deploy"])
        .all()
        .status()
        .scale()
        .generation(),
    r(APPS, "v1", "replicasets", "ReplicaSet", NS)
        .short(&["rs"])
        .all()
        .status()
        .scale()
        .generation(),
    r(APPS, "v1", "statefulsets", "StatefulSet", NS)
        .short(&["sts"])
        .all()
        .status()
        .scale()
        .generation(),
    r(APPS, "v1", "daemonsets", "DaemonSet", NS)
        .short(&["ds"])
        .all()
        .status()
        .generation(),
    r(APPS, "v1", "controllerrevisions", "ControllerRevision", NS),
    // batch/v1
    r(BATCH, "v1", "jobs", "Job", NS)
        .all()
        .status()
        .generation(),
    r(BATCH, "v1", "cronjobs", "CronJob", NS)
        .short(&["cj"])
        .all()
        .status()
        .generation(),
    // autoscaling/v2, the preferred version, and v1 (stored as v2)
    r(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        NS,
    )
    .short(&["hpa"])
    .all()
    .status(),
    r(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        NS,
    )
    .short(&["hpa"])
    .all()
    .status()
    .stored_as(&conversion::HPA_V1),
    // policy/v1
    r(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        NS,
    )
    .short(&["pdb"])
    .status()
    .generation()
    .conditional_update(),
    // networking.k8s.io/v1
    r(NET, "v1", "ingresses", "Ingress", NS)
        .short(&["ing"])
        .status()
        .generation(),
    r(NET, "v1", "ingressclasses", "IngressClass", CLUSTER),
    r(NET, "v1", "networkpolicies", "NetworkPolicy", NS)
        .short(&["netpol"])
        .generation(),
    r(NET, "v1", "ipaddresses", "IPAddress", CLUSTER).short(&["ip"]),
    r(NET, "v1", "servicecidrs", "ServiceCIDR", CLUSTER).status(),
    // events.k8s.io/v1: the core Events, in their newer shape
    r("events.k8s.io", "v1", "events", "Event", NS)
        .short(&["ev"])
        .stored_as(&conversion::EVENTS_V1)
        .create_on_update(),
    // discovery.k8s.io/v1
    r(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        NS,
    ),
    // storage.k8s.io/v1
    r(STORAGE, "v1", "storageclasses", "StorageClass", CLUSTER)
        .short(&["sc"])
        .delete_returns_object(),
    r(STORAGE, "v1", "csidrivers", "CSIDriver", CLUSTER).conditional_update(),
    r(STORAGE, "v1", "csinodes", "CSINode", CLUSTER).conditional_update(),
    r(
        STORAGE,
        "v1",
        "csistoragecapacities",
        "CSIStorageCapacity",
        NS,
    )
    .conditional_update(),
    r(
        STORAGE,
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        CLUSTER,
    )
    .status()
    .conditional_update(),
    r(
        STORAGE,
        "v1",
        "volumeattributesclasses",
        "VolumeAttributesClass",
        CLUSTER,
    )
    .short(&["vac"]),
    // scheduling.k8s.io/v1, node.k8s.io/v1
    r(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        CLUSTER,
    )
    .short(&["pc"]),
    r(
        "node.k8s.io",
        "v1",
        "runtimeclasses",
        "RuntimeClass",
        CLUSTER,
    )
    .conditional_update()
    .create_on_update(),
    // coordination.k8s.io/v1
    r("coordination.k8s.io", "v1", "leases", "Lease", NS)
        .conditional_update()
        .create_on_update(),
    // certificates.k8s.io/v1
    r(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        CLUSTER,
    )
    .short(&["csr"])
    .status(),
    // admissionregistration.k8s.io/v1 (category `api-extensions`, as kube's storage gives them)
    r(
        ADMISSION,
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        CLUSTER,
    )
    .generation()
    .conditional_update()
    .categories(&["api-extensions"]),
    r(
        ADMISSION,
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        CLUSTER,
    )
    .generation()
    .conditional_update()
    .categories(&["api-extensions"]),
    r(
        ADMISSION,
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        CLUSTER,
    )
    .status()
    .generation()
    .conditional_update()
    .categories(&["api-extensions"]),
    r(
        ADMISSION,
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        CLUSTER,
    )
    .generation()
    .conditional_update()
    .categories(&["api-extensions"]),
    // MutatingAdmissionPolicy: v1 (GA in kube 1.36, the only version a 1.36 cluster serves by
    // default; v1beta1 is off by default there).
    r(
        ADMISSION,
        "v1",
        "mutatingadmissionpolicies",
        "MutatingAdmissionPolicy",
        CLUSTER,
    )
    .generation()
    .conditional_update()
    .categories(&["api-extensions"]),
    r(
        ADMISSION,
        "v1",
        "mutatingadmissionpolicybindings",
        "MutatingAdmissionPolicyBinding",
        CLUSTER,
    )
    .generation()
    .conditional_update()
    .categories(&["api-extensions"]),
    // apiregistration.k8s.io/v1
    r(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        CLUSTER,
    )
    .status()
    .categories(&["api-extensions"]),
    // flowcontrol.apiserver.k8s.io/v1
    r(FLOW, "v1", "flowschemas", "FlowSchema", CLUSTER)
        .status()
        .generation(),
    r(
        FLOW,
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        CLUSTER,
    )
    .status()
    .generation(),
    // resource.k8s.io/v1 (dynamic resource allocation, GA in 1.34)
    r(DRA, "v1", "deviceclasses", "DeviceClass", CLUSTER).generation(),
    r(DRA, "v1", "resourceclaims", "ResourceClaim", NS).status(),
    r(
        DRA,
        "v1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        NS,
    ),
    r(DRA, "v1", "resourceslices", "ResourceSlice", CLUSTER),
    // apiextensions.k8s.io/v1
    r(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        CLUSTER,
    )
    .short(&["crd", "crds"])
    .status()
    .generation()
    .categories(&["api-extensions"]),
    // rbac.authorization.k8s.io/v1
    r(RBAC, "v1", "roles", "Role", NS).create_on_update(),
    r(RBAC, "v1", "rolebindings", "RoleBinding", NS).create_on_update(),
    r(RBAC, "v1", "clusterroles", "ClusterRole", CLUSTER).create_on_update(),
    r(
        RBAC,
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        CLUSTER,
    )
    .create_on_update(),
    // reviews: create-only, nothing stored
    r(
        AUTHZ,
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        CLUSTER,
    )
    .create_only(),
    r(
        AUTHZ,
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        CLUSTER,
    )
    .create_only(),
    r(
        AUTHZ,
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        NS,
    )
    .create_only(),
    r(
        AUTHZ,
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        CLUSTER,
    )
    .create_only(),
    r(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        CLUSTER,
    )
    .create_only(),
    r(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        CLUSTER,
    )
    .create_only(),
    // turtles' own: the loaded controllers
    r("turtles.dev", "v1", "controllers", "Controller", CLUSTER)
        .short(&["ctrl"])
        .status(),
];
