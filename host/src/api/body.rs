//! A create's or update's JSON body as kube's handlers read it before anything else
//! (`create.go`, `update.go`): the serializer's `Decode` into the endpoint's type, whose errors
//! `transformDecodeError` words.
//!
//! 1. Go's syntax check of the body ([`crate::model::gojson`]) and the serializer's first look
//!    at it (`SimpleMetaFactory.Interpret`: `apiVersion` and `kind` decoded by Go's
//!    `encoding/json` into a struct, so matched case-insensitively, and the group/version
//!    parsed). Any error there is `the object provided is unrecognized (must be of type
//!    ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input
//!    ({"apiVersion":"v1","kind":"Con ...)`, with `summarizeData`'s excerpt: the first 30 bytes
//!    of a body starting with `{` and ` ...` when there is more, the hex of those of any other,
//!    `<empty>`.
//! 2. For a built-in kind, the type the scheme makes of the body's group, version and kind,
//!    its missing parts defaulted from the endpoint's: a kind the scheme does not have for that
//!    version is `ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind
//!    "ConfigMap" is registered for version "v2" in scheme "pkg/api/legacyscheme/scheme.go:30"`;
//!    one it has is decoded as that type and converted to the endpoint's internal type, which
//!    only the same kind of the same internal group can be (`Secret in version "v1" cannot be
//!    handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`).
//!    The same kind in another registered version converts, and the handler then refuses its
//!    version (`the API version in the data (autoscaling/v1) does not match the expected API
//!    version (autoscaling/v2)`, the service's [`crate::service::Service`] check).
//! 3. For a custom resource, decoded as unstructured: a body without a `kind` is `Widget in
//!    version "v1" cannot be handled as a Widget: Object 'Kind' is missing in '{...}'`, one whose
//!    own `apiVersion` is not the endpoint's (missing included) `the API version in the data ()
//!    does not match the expected API version (example.com/v1)`. Another kind passes: kube's
//!    strategy refuses it when it validates (a 422, the service's).
//!
//! The schemes are kube-apiserver's: the legacy scheme of every built-in group (the kinds each
//! version registers in 1.34, [`LEGACY`]), apiextensions-apiserver's for CRDs and
//! kube-aggregator's for APIServices, each named as Go names it (`GetNameFromCallsite` of a
//! `-trimpath` build).

use serde_json::Value;

use crate::model::gojson;
use crate::model::{ApiError, ResourceInfo};

/// `summarizeData`'s length.
const SUMMARY_BYTES: usize = 30;
/// The version of internal types.
const INTERNAL: &str = "__internal";
/// Kinds every scheme has in any group and version (`AddUnversionedTypes`), as `v1.KIND`.
const UNVERSIONED: [&str; 5] = [
    "Status",
    "APIVersions",
    "APIGroupList",
    "APIGroup",
    "APIResourceList",
];
/// What `metav1.AddToGroupVersion` registers in every group version, as `v1.KIND`.
const META_KINDS: [&str; 7] = [
    "WatchEvent",
    "ListOptions",
    "GetOptions",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
];
/// The type `Interpret` decodes into, as Go's `reflect` prints it.
const FIND_KIND: &str = r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;

/// The kinds each group version of kube-apiserver's legacy scheme registers (k8s.io/api 0.34's
/// `addKnownTypes`, every version its `pkg/apis/*/install` adds), besides [`META_KINDS`].
const LEGACY: &[(&str, &str, &str)] = &[
    ("", "v1", "Pod PodList PodStatusResult PodTemplate PodTemplateList ReplicationController ReplicationControllerList Service ServiceProxyOptions ServiceList Endpoints EndpointsList Node NodeList NodeProxyOptions Binding Event EventList List LimitRange LimitRangeList ResourceQuota ResourceQuotaList Namespace NamespaceList Secret SecretList ServiceAccount ServiceAccountList PersistentVolume PersistentVolumeList PersistentVolumeClaim PersistentVolumeClaimList PodAttachOptions PodLogOptions PodExecOptions PodPortForwardOptions PodProxyOptions ComponentStatus ComponentStatusList SerializedReference RangeAllocation ConfigMap ConfigMapList"),
    ("admission.k8s.io", "v1", "AdmissionReview"),
    ("admission.k8s.io", "v1beta1", "AdmissionReview"),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration ValidatingWebhookConfigurationList MutatingWebhookConfiguration MutatingWebhookConfigurationList ValidatingAdmissionPolicy ValidatingAdmissionPolicyList ValidatingAdmissionPolicyBinding ValidatingAdmissionPolicyBindingList"),
    ("admissionregistration.k8s.io", "v1alpha1", "ValidatingAdmissionPolicy ValidatingAdmissionPolicyList ValidatingAdmissionPolicyBinding ValidatingAdmissionPolicyBindingList MutatingAdmissionPolicy MutatingAdmissionPolicyList MutatingAdmissionPolicyBinding MutatingAdmissionPolicyBindingList"),
    ("admissionregistration.k8s.io", "v1beta1", "ValidatingWebhookConfiguration ValidatingWebhookConfigurationList MutatingWebhookConfiguration MutatingWebhookConfigurationList ValidatingAdmissionPolicy ValidatingAdmissionPolicyList ValidatingAdmissionPolicyBinding ValidatingAdmissionPolicyBindingList MutatingAdmissionPolicy MutatingAdmissionPolicyList MutatingAdmissionPolicyBinding MutatingAdmissionPolicyBindingList"),
    ("internal.apiserver.k8s.io", "v1alpha1", "StorageVersion StorageVersionList"),
    ("apps", "v1", "Deployment DeploymentList StatefulSet StatefulSetList DaemonSet DaemonSetList ReplicaSet ReplicaSetList ControllerRevision ControllerRevisionList"),
    ("apps", "v1beta1", "Deployment DeploymentList DeploymentRollback Scale StatefulSet StatefulSetList ControllerRevision ControllerRevisionList"),
    ("apps", "v1beta2", "Deployment DeploymentList Scale StatefulSet StatefulSetList DaemonSet DaemonSetList ReplicaSet ReplicaSetList ControllerRevision ControllerRevisionList"),
    ("authentication.k8s.io", "v1", "TokenReview TokenRequest SelfSubjectReview"),
    ("authentication.k8s.io", "v1alpha1", "SelfSubjectReview"),
    ("authentication.k8s.io", "v1beta1", "SelfSubjectReview TokenReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview SelfSubjectAccessReview SubjectAccessReview LocalSubjectAccessReview"),
    ("authorization.k8s.io", "v1beta1", "SelfSubjectRulesReview SelfSubjectAccessReview SubjectAccessReview LocalSubjectAccessReview"),
    ("autoscaling", "v1", "HorizontalPodAutoscaler HorizontalPodAutoscalerList Scale"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler HorizontalPodAutoscalerList"),
    ("autoscaling", "v2beta1", "HorizontalPodAutoscaler HorizontalPodAutoscalerList"),
    ("autoscaling", "v2beta2", "HorizontalPodAutoscaler HorizontalPodAutoscalerList"),
    ("batch", "v1", "Job JobList CronJob CronJobList"),
    ("batch", "v1beta1", "CronJob CronJobList"),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest CertificateSigningRequestList"),
    ("certificates.k8s.io", "v1alpha1", "ClusterTrustBundle ClusterTrustBundleList PodCertificateRequest PodCertificateRequestList"),
    ("certificates.k8s.io", "v1beta1", "CertificateSigningRequest CertificateSigningRequestList ClusterTrustBundle ClusterTrustBundleList"),
    ("coordination.k8s.io", "v1", "Lease LeaseList"),
    ("coordination.k8s.io", "v1alpha2", "LeaseCandidate LeaseCandidateList"),
    ("coordination.k8s.io", "v1beta1", "Lease LeaseList LeaseCandidate LeaseCandidateList"),
    ("discovery.k8s.io", "v1", "EndpointSlice EndpointSliceList"),
    ("discovery.k8s.io", "v1beta1", "EndpointSlice EndpointSliceList"),
    ("events.k8s.io", "v1", "Event EventList"),
    ("events.k8s.io", "v1beta1", "Event EventList"),
    ("extensions", "v1beta1", "Deployment DeploymentList DeploymentRollback Scale DaemonSetList DaemonSet Ingress IngressList ReplicaSet ReplicaSetList NetworkPolicy NetworkPolicyList"),
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList"),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList"),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList"),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList"),
    ("imagepolicy.k8s.io", "v1alpha1", "ImageReview"),
    ("networking.k8s.io", "v1", "Ingress IngressList IngressClass IngressClassList NetworkPolicy NetworkPolicyList IPAddress IPAddressList ServiceCIDR ServiceCIDRList"),
    ("networking.k8s.io", "v1beta1", "Ingress IngressList IngressClass IngressClassList IPAddress IPAddressList ServiceCIDR ServiceCIDRList"),
    ("node.k8s.io", "v1", "RuntimeClass RuntimeClassList"),
    ("node.k8s.io", "v1alpha1", "RuntimeClass RuntimeClassList"),
    ("node.k8s.io", "v1beta1", "RuntimeClass RuntimeClassList"),
    ("policy", "v1", "PodDisruptionBudget PodDisruptionBudgetList Eviction"),
    ("policy", "v1beta1", "PodDisruptionBudget PodDisruptionBudgetList Eviction"),
    ("rbac.authorization.k8s.io", "v1", "Role RoleBinding RoleBindingList RoleList ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList"),
    ("rbac.authorization.k8s.io", "v1alpha1", "Role RoleBinding RoleBindingList RoleList ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList"),
    ("rbac.authorization.k8s.io", "v1beta1", "Role RoleBinding RoleBindingList RoleList ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList"),
    ("resource.k8s.io", "v1", "DeviceClass DeviceClassList ResourceClaim ResourceClaimList ResourceClaimTemplate ResourceClaimTemplateList ResourceSlice ResourceSliceList"),
    ("resource.k8s.io", "v1alpha3", "DeviceTaintRule DeviceTaintRuleList"),
    ("resource.k8s.io", "v1beta1", "DeviceClass DeviceClassList ResourceClaim ResourceClaimList ResourceClaimTemplate ResourceClaimTemplateList ResourceSlice ResourceSliceList"),
    ("resource.k8s.io", "v1beta2", "DeviceClass DeviceClassList ResourceClaim ResourceClaimList ResourceClaimTemplate ResourceClaimTemplateList ResourceSlice ResourceSliceList"),
    ("scheduling.k8s.io", "v1", "PriorityClass PriorityClassList"),
    ("scheduling.k8s.io", "v1alpha1", "PriorityClass PriorityClassList"),
    ("scheduling.k8s.io", "v1beta1", "PriorityClass PriorityClassList"),
    ("storage.k8s.io", "v1", "StorageClass StorageClassList VolumeAttachment VolumeAttachmentList CSINode CSINodeList CSIDriver CSIDriverList CSIStorageCapacity CSIStorageCapacityList VolumeAttributesClass VolumeAttributesClassList"),
    ("storage.k8s.io", "v1alpha1", "VolumeAttachment VolumeAttachmentList CSIStorageCapacity CSIStorageCapacityList VolumeAttributesClass VolumeAttributesClassList"),
    ("storage.k8s.io", "v1beta1", "StorageClass StorageClassList VolumeAttachment VolumeAttachmentList CSIDriver CSIDriverList CSINode CSINodeList CSIStorageCapacity CSIStorageCapacityList VolumeAttributesClass VolumeAttributesClassList"),
    ("storagemigration.k8s.io", "v1alpha1", "StorageVersionMigration StorageVersionMigrationList"),
];

/// apiextensions-apiserver's scheme (CRDs), its `metav1` kinds in `v1` of the core group too.
const APIEXTENSIONS: &[(&str, &str, &str)] = &[
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition CustomResourceDefinitionList ConversionReview",
    ),
    (
        "apiextensions.k8s.io",
        "v1beta1",
        "CustomResourceDefinition CustomResourceDefinitionList ConversionReview",
    ),
    ("", "v1", ""),
];

/// kube-aggregator's scheme (APIServices).
const AGGREGATOR: &[(&str, &str, &str)] = &[
    ("apiregistration.k8s.io", "v1", "APIService APIServiceList"),
    (
        "apiregistration.k8s.io",
        "v1beta1",
        "APIService APIServiceList",
    ),
];

/// A scheme: the kinds of each group version, and its name.
struct Scheme {
    kinds: &'static [(&'static str, &'static str, &'static str)],
    name: &'static str,
}

/// The scheme that decodes bodies for an endpoint of `group`.
fn scheme_of(group: &str) -> Scheme {
    match group {
        "apiextensions.k8s.io" => Scheme {
            kinds: APIEXTENSIONS,
            name: "pkg/apiserver/apiserver.go:55",
        },
        "apiregistration.k8s.io" => Scheme {
            kinds: AGGREGATOR,
            name: "pkg/apiserver/scheme/scheme.go:28",
        },
        _ => Scheme {
            kinds: LEGACY,
            name: "pkg/api/legacyscheme/scheme.go:30",
        },
    }
}

/// The package name of a group's internal types (`core.ConfigMap`, `apps.Deployment`).
fn internal_package(group: &str) -> &str {
    match group {
        "" | "events.k8s.io" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        "rbac.authorization.k8s.io" => "rbac",
        g => g.split('.').next().unwrap_or(g),
    }
}

/// A group, version and kind (Go's `schema.GroupVersionKind`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Gvk {
    group: String,
    version: String,
    kind: String,
}

impl Gvk {
    /// `GroupVersion.String()`: `group/version`, or the version alone in the core group.
    fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `gvkWithDefaults`: the missing kind, and the missing version of the same (or no) group,
    /// from `d`.
    fn defaulted(mut self, d: &Gvk) -> Gvk {
        if self.kind.is_empty() {
            self.kind = d.kind.clone();
        }
        if self.version.is_empty() && self.group.is_empty() {
            self.group = d.group.clone();
            self.version = d.version.clone();
        }
        if self.version.is_empty() && self.group == d.group {
            self.version = d.version.clone();
        }
        self
    }
}

/// A JSON text with each lone surrogate escape (`\ud800` not followed by a low surrogate's
/// escape, or a low one alone) written `\ufffd`, as Go's `encoding/json` (`unquote`) decodes
/// them to U+FFFD where serde_json refuses them; `None` when there is none. Backslashes appear
/// only inside strings in a JSON text, so the escapes are found without tracking the strings.
pub(crate) fn lone_surrogates_replaced(body: &[u8]) -> Option<Vec<u8>> {
    let hex = |at: usize| -> Option<u16> {
        let digits = body.get(at..at + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        u16::from_str_radix(text, 16).ok()
    };
    let escape = |at: usize| -> Option<u16> {
        (body.get(at) == Some(&b'\\') && body.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < body.len() {
        if body[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = escape(i) else {
            i += 2; // another escape (or a malformed one, for the parser to refuse)
            continue;
        };
        let lone = match unit {
            0xD800..=0xDBFF => match escape(i + 6) {
                Some(0xDC00..=0xDFFF) => {
                    i += 12; // a pair
                    continue;
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            let o = out.get_or_insert_with(|| Vec::with_capacity(body.len()));
            o.extend_from_slice(&body[copied..i]);
            o.extend_from_slice(b"\\ufffd");
            copied = i + 6;
        }
        i += 6;
    }
    let mut o = out?;
    o.extend_from_slice(&body[copied..]);
    Some(o)
}

/// Go's `string(bytes)` as `encoding/json` writes it: each byte of invalid UTF-8 a U+FFFD.
pub(crate) fn go_string(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push(char::REPLACEMENT_CHARACTER);
                bytes = rest.get(1..).unwrap_or_default();
            }
        }
    }
}

/// `summarizeData(body, 30)`.
fn summarize(body: &[u8]) -> String {
    let head = &body[..body.len().min(SUMMARY_BYTES)];
    let more = if body.len() > SUMMARY_BYTES {
        " ..."
    } else {
        ""
    };
    match body.first() {
        None => "<empty>".to_owned(),
        Some(b'{') => format!("{}{more}", go_string(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// `transformDecodeError` without a kind: `the object provided is unrecognized (must be of type
/// KIND): ERROR (SUMMARY)`.
fn unrecognized(kind: &str, error: impl std::fmt::Display, body: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): {error} ({})",
        summarize(body)
    ))
}

/// `transformDecodeError` with the body's kind: `KIND in version "VERSION" cannot be handled as
/// a TARGET: ERROR`.
fn cannot_handle(gvk: &Gvk, target: &str, error: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "{} in version \"{}\" cannot be handled as a {target}: {error}",
        gvk.kind, gvk.version
    ))
}

/// `schema.ParseGroupVersion`.
fn parse_group_version(gv: &str) -> Result<(String, String), String> {
    if gv.is_empty() || gv == "/" {
        return Ok(Default::default());
    }
    match gv.matches('/').count() {
        0 => Ok((String::new(), gv.to_owned())),
        1 => {
            let (g, v) = gv.split_once('/').unwrap_or_default();
            Ok((g.to_owned(), v.to_owned()))
        }
        _ => Err(format!("unexpected GroupVersion string: {gv}")),
    }
}

/// The body's syntax, as Go's `json.Unmarshal` checks it first; `kind` is the endpoint's.
pub(crate) fn check_syntax(kind: &str, body: &[u8]) -> Result<(), ApiError> {
    gojson::check_syntax(body).map_err(|e| {
        unrecognized(
            kind,
            format!("couldn't get version/kind; json parse error: {e}"),
            body,
        )
    })
}

/// `SimpleMetaFactory.Interpret` of a body that is JSON: its `apiVersion` and `kind` as Go's
/// `encoding/json` decodes them into a struct (keys matched without regard to case, the last
/// one of several kept, `null` leaving a field empty, another type the first error).
fn interpret(kind: &str, v: &Value, body: &[u8]) -> Result<Gvk, ApiError> {
    let parse_error = |e: String| {
        unrecognized(
            kind,
            format!("couldn't get version/kind; json parse error: {e}"),
            body,
        )
    };
    let (mut api_version, mut found_kind) = (String::new(), String::new());
    match v {
        Value::Null => {}
        Value::Object(m) => {
            let mut first_error = None;
            for (k, x) in m {
                let (field, slot) = if k.eq_ignore_ascii_case("apiVersion") {
                    ("apiVersion", &mut api_version)
                } else if k.eq_ignore_ascii_case("kind") {
                    ("kind", &mut found_kind)
                } else {
                    continue;
                };
                match x {
                    Value::String(s) => *slot = s.clone(),
                    Value::Null => {}
                    other if first_error.is_none() => {
                        first_error = Some(format!(
                            "json: cannot unmarshal {} into Go struct field .{field} of type string",
                            crate::schema::objectmeta::go_type_name(other)
                        ));
                    }
                    _ => {}
                }
            }
            if let Some(e) = first_error {
                return Err(parse_error(e));
            }
        }
        other => {
            return Err(parse_error(format!(
                "json: cannot unmarshal {} into Go value of type {FIND_KIND}",
                crate::schema::objectmeta::go_type_name(other)
            )))
        }
    }
    let (group, version) =
        parse_group_version(&api_version).map_err(|e| unrecognized(kind, e, body))?;
    Ok(Gvk {
        group,
        version,
        kind: found_kind,
    })
}

/// The Go type a scheme makes of `gvk` (`v1.Secret`), if it has one.
fn registered(scheme: &Scheme, gvk: &Gvk) -> Option<String> {
    if UNVERSIONED.contains(&gvk.kind.as_str()) {
        return Some(format!("v1.{}", gvk.kind));
    }
    if gvk.version == INTERNAL {
        let known = scheme
            .kinds
            .iter()
            .any(|(g, _, kinds)| *g == gvk.group && kinds.split(' ').any(|k| k == gvk.kind));
        return known.then(|| format!("{}.{}", internal_package(&gvk.group), gvk.kind));
    }
    let (_, _, kinds) = scheme
        .kinds
        .iter()
        .find(|(g, v, _)| *g == gvk.group && *v == gvk.version)?;
    if kinds.split(' ').any(|k| k == gvk.kind) {
        return Some(format!("{}.{}", gvk.version, gvk.kind));
    }
    META_KINDS
        .contains(&gvk.kind.as_str())
        .then(|| format!("v1.{}", gvk.kind))
}

/// A built-in kind's body for the endpoint of `target`, its apiVersion and kind interpreted
/// (`actual`): what the scheme makes of them, decoded and converted to the endpoint's internal
/// type.
fn check_builtin(target: &Gvk, actual: Gvk, v: &Value, body: &[u8]) -> Result<(), ApiError> {
    let internal = Gvk {
        version: INTERNAL.to_owned(),
        ..target.clone()
    };
    let actual = actual.defaulted(target).defaulted(&internal);
    if actual.version.is_empty() {
        return Err(cannot_handle(
            &actual,
            &target.kind,
            format!("Object 'apiVersion' is missing in '{}'", go_string(body)),
        ));
    }
    // The endpoint's own kind in its version, or its internal type itself.
    if actual == *target || actual == internal {
        return Ok(());
    }
    let scheme = scheme_of(&target.group);
    let Some(go_type) = registered(&scheme, &actual) else {
        let q = crate::auth::rbac::go_quote;
        let error = if actual.version == INTERNAL {
            format!(
                "no kind {} is registered for the internal version of group {} in scheme {}",
                q(&actual.kind),
                q(&actual.group),
                q(scheme.name)
            )
        } else {
            format!(
                "no kind {} is registered for version {} in scheme {}",
                q(&actual.kind),
                q(&actual.group_version()),
                q(scheme.name)
            )
        };
        return Err(cannot_handle(&actual, &target.kind, error));
    };
    // Decoded as its own type first (its errors before the conversion's).
    if actual.version != INTERNAL {
        let mut copy = v.clone();
        if let Err(e) =
            crate::builtin::decode::decode(&actual.group, &actual.version, &actual.kind, &mut copy)
        {
            return Err(cannot_handle(&actual, &target.kind, e));
        }
    }
    // The same kind of the same internal group converts; the version is refused after.
    let meta =
        UNVERSIONED.contains(&actual.kind.as_str()) || META_KINDS.contains(&actual.kind.as_str());
    if !meta
        && actual.kind == target.kind
        && internal_package(&actual.group) == internal_package(&target.group)
    {
        return Ok(());
    }
    Err(cannot_handle(
        &actual,
        &target.kind,
        format!(
            "converting ({go_type}) to ({}.{}): unknown conversion",
            internal_package(&target.group),
            target.kind
        ),
    ))
}

/// Go's JSON whitespace.
fn trim_go_space(body: &[u8]) -> &[u8] {
    let space = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let start = body.iter().position(|c| !space(c)).unwrap_or(body.len());
    let end = body
        .iter()
        .rposition(|c| !space(c))
        .map_or(start, |e| e + 1);
    &body[start..end.max(start)]
}

/// A custom resource's body, decoded as unstructured: a `kind` it must have, the endpoint's
/// `apiVersion` (its own, not defaulted).
fn check_custom(ri: &ResourceInfo, actual: Gvk, v: &Value, body: &[u8]) -> Result<(), ApiError> {
    let endpoint = endpoint(ri);
    let exact = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    if exact("kind").is_empty() {
        // The unstructured decoder is handed the body without the whitespace around it.
        return Err(cannot_handle(
            &actual.defaulted(&endpoint),
            &ri.kind,
            format!(
                "Object 'Kind' is missing in '{}'",
                go_string(trim_go_space(body))
            ),
        ));
    }
    let own = parse_group_version(exact("apiVersion")).unwrap_or_default();
    let own = Gvk {
        group: own.0,
        version: own.1,
        kind: String::new(),
    };
    let want = endpoint.group_version();
    if own.group_version() != want {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({want})",
            own.group_version()
        )));
    }
    Ok(())
}

fn endpoint(ri: &ResourceInfo) -> Gvk {
    Gvk {
        group: ri.group.clone(),
        version: ri.version.clone(),
        kind: ri.kind.clone(),
    }
}

/// kube's reading of a create's or update's JSON body `v` (parsed from `body`) for the
/// endpoint `ri`, after [`check_syntax`]: the errors `transformDecodeError` words, or the
/// handler's refusal of a custom resource's own `apiVersion`. A body it passes goes on as it
/// is (the service fills a missing `apiVersion` or `kind` of a built-in kind).
pub(crate) fn check(ri: &ResourceInfo, v: &Value, body: &[u8]) -> Result<(), ApiError> {
    let actual = interpret(&ri.kind, v, body)?;
    if ri.is_custom() {
        return check_custom(ri, actual, v, body);
    }
    // Kinds kube does not have (turtles' own) are the service's to check.
    let defs = crate::builtin::definitions::get();
    if defs.name_of(&ri.group, &ri.version, &ri.kind).is_none() {
        return Ok(());
    }
    check_builtin(&endpoint(ri), actual, v, body)
}

/// [`check`] of the body of an update of a `scale` subresource: an autoscaling/v1 `Scale`
/// (after [`check_syntax`] with the kind `Scale`).
pub(crate) fn check_scale(v: &Value, body: &[u8]) -> Result<(), ApiError> {
    let scale = Gvk {
        group: "autoscaling".to_owned(),
        version: "v1".to_owned(),
        kind: "Scale".to_owned(),
    };
    let actual = interpret(&scale.kind, v, body)?;
    check_builtin(&scale, actual, v, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_become_the_replacement_character() {
        let fix =
            |s: &str| lone_surrogates_replaced(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(
            fix(r#"{"a":"\ud800"}"#).as_deref(),
            Some(r#"{"a":"\ufffd"}"#)
        );
        assert_eq!(
            fix(r#"{"a":"x\udc00y"}"#).as_deref(),
            Some(r#"{"a":"x\ufffdy"}"#)
        );
        assert_eq!(
            fix(r#"{"a":"\ud800\u0041"}"#).as_deref(),
            Some(r#"{"a":"\ufffd\u0041"}"#)
        );
        // A pair, escaped backslashes and other escapes are left as they are.
        assert_eq!(fix(r#"{"a":"\ud83d\ude00 \\ud800 \n\u00e9"}"#), None);
        let v: serde_json::Value =
            serde_json::from_slice(&lone_surrogates_replaced(br#"["\ud800"]"#).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!(["\u{fffd}"]));
    }
    use serde_json::json;

    fn served(group: &str, version: &str, resource: &str) -> ResourceInfo {
        crate::model::Registry::with_builtins()
            .lookup(group, version, resource)
            .expect("a built-in resource")
            .as_ref()
            .clone()
    }

    /// What kube answers a create of `body` on `ri` (its message), or `None` for a body
    /// it decodes.
    fn refusal(ri: &ResourceInfo, body: &str) -> Option<String> {
        let b = body.as_bytes();
        if let Err(e) = check_syntax(&ri.kind, b) {
            assert_eq!(e.code, 400);
            return Some(e.message);
        }
        let v: Value = serde_json::from_slice(b).expect("JSON");
        check(ri, &v, b).err().map(|e| {
            assert_eq!((e.code, e.reason), (400, "BadRequest"));
            e.message
        })
    }

    #[test]
    fn bodies_that_are_not_json_are_described_as_kube_describes_them() {
        let cms = served("", "v1", "configmaps");
        for (body, msg) in [
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","#,
                r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)"#,
            ),
            (
                "",
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)",
            ),
            (
                "  ",
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (2020)",
            ),
            (
                "{\"a\": 1,}",
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '}' looking for beginning of object key string ({\"a\": 1,})",
            ),
            (
                "hello",
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'h' looking for beginning of value (68656c6c6f)",
            ),
            (
                "[1]",
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b315d)",
            ),
            (
                r#"{"kind": 5, "apiVersion": true}"#,
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string ({\"kind\": 5, \"apiVersion\": true ...)",
            ),
            (
                r#"{"apiVersion": "a/b/c"}"#,
                "the object provided is unrecognized (must be of type ConfigMap): unexpected GroupVersion string: a/b/c ({\"apiVersion\": \"a/b/c\"})",
            ),
        ] {
            assert_eq!(refusal(&cms, body).as_deref(), Some(msg), "{body:?}");
        }
    }

    #[test]
    fn other_kinds_and_versions_are_what_the_scheme_makes_of_them() {
        let cms = served("", "v1", "configmaps");
        let body = |v: &str, k: &str| {
            format!(r#"{{"apiVersion": "{v}", "kind": "{k}", "metadata": {{"name": "x"}}}}"#)
        };
        for (v, k, msg) in [
            (
                "v1",
                "Secret",
                r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#,
            ),
            (
                "v2",
                "ConfigMap",
                r#"ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2" in scheme "pkg/api/legacyscheme/scheme.go:30""#,
            ),
            (
                "apps/v1",
                "ConfigMap",
                r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30""#,
            ),
            (
                "apps/v1",
                "Deployment",
                r#"Deployment in version "v1" cannot be handled as a ConfigMap: converting (v1.Deployment) to (core.ConfigMap): unknown conversion"#,
            ),
            (
                "batch/v1beta1",
                "CronJob",
                r#"CronJob in version "v1beta1" cannot be handled as a ConfigMap: converting (v1beta1.CronJob) to (core.ConfigMap): unknown conversion"#,
            ),
            (
                "v9",
                "Status",
                r#"Status in version "v9" cannot be handled as a ConfigMap: converting (v1.Status) to (core.ConfigMap): unknown conversion"#,
            ),
            (
                "v1",
                "DeleteOptions",
                r#"DeleteOptions in version "v1" cannot be handled as a ConfigMap: converting (v1.DeleteOptions) to (core.ConfigMap): unknown conversion"#,
            ),
            (
                "apps/",
                "",
                r#"ConfigMap in version "" cannot be handled as a ConfigMap: Object 'apiVersion' is missing in '{"apiVersion": "apps/", "kind": "", "metadata": {"name": "x"}}'"#,
            ),
        ] {
            assert_eq!(refusal(&cms, &body(v, k)).as_deref(), Some(msg), "{v} {k}");
        }
        // The kind decoded as its own type first: its errors come before the conversion's.
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": 1}});
        let decoded = crate::builtin::decode::decode("", "v1", "Secret", &mut secret.clone())
            .expect_err("a number is no base64 data");
        assert_eq!(
            refusal(&cms, &secret.to_string()),
            Some(format!(
                "Secret in version \"v1\" cannot be handled as a ConfigMap: {decoded}"
            ))
        );
        // What decodes: the endpoint's kind, defaulted parts, `null`, keys in any case, and
        // the same kind in another version (refused by the version check after).
        for ok in [
            body("v1", "ConfigMap"),
            r#"{"metadata": {"name": "x"}}"#.to_owned(),
            r#"{"apiVersion": "/", "kind": null}"#.to_owned(),
            "null".to_owned(),
            r#"{"KIND": "ConfigMap", "ApiVersion": "v1"}"#.to_owned(),
            body("__internal", "ConfigMap"),
        ] {
            assert_eq!(refusal(&cms, &ok), None, "{ok}");
        }
        assert_eq!(
            refusal(&cms, r#"{"Kind": "Secret"}"#).as_deref(),
            Some(
                r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#
            )
        );
        let hpas = served("autoscaling", "v2", "horizontalpodautoscalers");
        assert_eq!(
            refusal(&hpas, &body("autoscaling/v1", "HorizontalPodAutoscaler")),
            None
        );
        let events = served("events.k8s.io", "v1", "events");
        assert_eq!(refusal(&events, &body("v1", "Event")), None);
        assert_eq!(
            refusal(&events, &body("v1", "Pod")).as_deref(),
            Some(
                r#"Pod in version "v1" cannot be handled as a Event: converting (v1.Pod) to (core.Event): unknown conversion"#
            )
        );
        // CRDs have apiextensions-apiserver's scheme.
        let crds = served("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        assert_eq!(
            refusal(&crds, &body("v1", "Secret")).as_deref(),
            Some(
                r#"Secret in version "v1" cannot be handled as a CustomResourceDefinition: no kind "Secret" is registered for version "v1" in scheme "pkg/apiserver/apiserver.go:55""#
            )
        );
        assert_eq!(
            refusal(
                &crds,
                &body("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition")
            ),
            None
        );
    }

    #[test]
    fn summaries_are_kubes() {
        assert_eq!(summarize(b""), "<empty>");
        assert_eq!(summarize(b"{\"a\":1}"), "{\"a\":1}");
        assert_eq!(summarize(&[b'{'; 31]), format!("{} ...", "{".repeat(30)));
        assert_eq!(summarize(b"[1,2]"), "5b312c325d");
        // Cut inside a character: each byte left of it a U+FFFD, as Go writes it.
        let mut cut = vec![b'{'; 28];
        cut.extend("é€".as_bytes());
        assert_eq!(summarize(&cut), format!("{}\u{e9} ...", "{".repeat(28)));
        let mut cut = vec![b'{'; 29];
        cut.extend("€".as_bytes());
        assert_eq!(summarize(&cut), format!("{}\u{fffd} ...", "{".repeat(29)));
        assert_eq!(go_string(b"a\xe2\x82b"), "a\u{fffd}\u{fffd}b");
    }
}
