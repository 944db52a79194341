//! The admission chain (kube's `k8s.io/apiserver/pkg/admission`): every write an API client sends
//! passes mutating admission, then the kind's own validation, then validating admission, with the
//! old and new object, the user, the operation and its options.
//!
//! * `policy.rs`: ValidatingAdmissionPolicy + Binding (CEL), compiled once per policy generation.
//! * `mutating_policy.rs`: MutatingAdmissionPolicy + Binding (CEL `ApplyConfiguration` and
//!   `JSONPatch` mutations), sharing the policy machinery (matching, params).
//! * `matching.rs`: `matchConstraints` / `matchResources` (rules, selectors, exclusions).
//! * `webhook.rs`: Validating/MutatingWebhookConfiguration over HTTPS, AdmissionReview v1.
//! * `wasm.rs`: Wasm admission policies (`turtles:admission`), loaded by `runtime::policy`.
//! * `typecheck.rs`: a ValidatingAdmissionPolicy's `status.typeChecking` (written by the
//!   built-in `controllers::policystatus`).
//!
//! Policies and configurations are read from the store's in-memory index (the same state every
//! informer follows), so a change applies to the next request.

pub(crate) mod hook_client;
mod matching;
mod mutating_policy;
mod policy;
mod typecheck;
mod wasm;
pub(crate) mod webhook;

use std::sync::Arc;

use serde_json::{json, Value};

use crate::auth::rbac::UserInfo;
use crate::model::{ApiError, Cause, Registry, ResourceInfo};
use crate::schema::cel_authz::{self, AccessCheck};
use crate::schema::expr::CelData;
use crate::store::Store;

pub(crate) use typecheck::status as type_checking_status;
pub use wasm::{
    Answer, CallFuture, Denial, Patch, Phase, PolicyVersion, Spec, StartupHold, WasmPolicies,
};

/// Errors of the admission module's own machinery (configurations that cannot be used); a
/// denial is an [`ApiError`] with kube's wording.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Call(String),
    /// The API request's deadline passed during a webhook call: kube's timeout filter answers
    /// the request ([`ApiError::deadline_passed`]), whatever the webhook's `failurePolicy`.
    #[error("request did not complete within the allotted timeout")]
    RequestTimeout,
}

/// kube's admission operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }

    /// The kind of the request's options object.
    fn options_kind(self) -> &'static str {
        match self {
            Self::Create => "CreateOptions",
            Self::Update => "UpdateOptions",
            Self::Delete => "DeleteOptions",
        }
    }
}

/// One write as admission sees it (kube's `admission.Attributes`).
#[derive(Debug)]
pub struct Request<'a> {
    pub ri: &'a ResourceInfo,
    pub operation: Operation,
    pub namespace: &'a str,
    /// The object's name (on a create with `generateName`: empty in mutating admission, the
    /// generated name in validating admission, as in kube).
    pub name: &'a str,
    /// `""` or `status`.
    pub subresource: &'a str,
    pub user: &'a UserInfo,
    pub dry_run: bool,
    /// The stored object being replaced or deleted (`None` on create).
    pub old_object: Option<&'a Value>,
    /// The object's group, version and kind when they are not the resource's (a
    /// subresource's: `pods/eviction` takes a `policy/v1` Eviction).
    pub kind: Option<[&'a str; 3]>,
    /// Set on an invocation that matched an equivalent resource (`matchPolicy: Equivalent`,
    /// where `ri` is the matched one): the resource the client wrote, which an AdmissionReview's
    /// `requestResource` and `requestKind` name.
    pub requested: Option<&'a ResourceInfo>,
    /// A DELETE's options as the client gave them (`gracePeriodSeconds`, `preconditions`,
    /// `propagationPolicy`, in kube's field order), for the request's `options`.
    pub delete_options: Option<&'a serde_json::Map<String, Value>>,
    /// When the API request must be answered (kube's request context deadline: its
    /// `?timeout=`, at most `--request-timeout`); a webhook's call gets no more than what is
    /// left of it. `None` for the host's own writes.
    pub deadline: Option<tokio::time::Instant>,
}

impl Request<'_> {
    /// The object's group, version and kind.
    pub fn kind(&self) -> [&str; 3] {
        self.kind
            .unwrap_or([&self.ri.group, &self.ri.version, &self.ri.kind])
    }

    /// The `request` variable of CEL and the body of an AdmissionReview's `request` (without
    /// `object`/`oldObject`).
    fn to_json(&self, uid: &str) -> Value {
        let ri = self.ri;
        let [group, version, kind] = self.kind();
        let kind = json!({"group": group, "version": version, "kind": kind});
        let resource = json!({"group": ri.group, "version": ri.version, "resource": ri.resource});
        let (request_kind, request_resource) = match self.requested {
            None => (kind.clone(), resource.clone()),
            Some(r) => {
                let [group, version, k] = self.kind.unwrap_or([&r.group, &r.version, &r.kind]);
                (
                    json!({"group": group, "version": version, "kind": k}),
                    json!({"group": r.group, "version": r.version, "resource": r.resource}),
                )
            }
        };
        let mut options =
            json!({"kind": self.operation.options_kind(), "apiVersion": "meta.k8s.io/v1"});
        if let (Some(extra), Some(o)) = (self.delete_options, options.as_object_mut()) {
            o.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if self.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        let mut r = json!({
            "uid": uid,
            "kind": kind,
            "resource": resource,
            "requestKind": request_kind,
            "requestResource": request_resource,
            "name": self.name,
            "namespace": self.namespace,
            "operation": self.operation.as_str(),
            "userInfo": self.user.to_json(),
            "dryRun": self.dry_run,
            "options": options,
        });
        if !self.subresource.is_empty() {
            r["subResource"] = json!(self.subresource);
            r["requestSubResource"] = json!(self.subresource);
        }
        r
    }

    /// The group-resource and name kube's `admission.NewForbidden` puts in a denial.
    fn forbidden(&self, object: Option<&Value>, message: String, reason: &str) -> ApiError {
        let mut name = self.name.to_owned();
        if name.is_empty() {
            if let Some(o) = object {
                name = crate::model::meta::meta_str(o, "generateName")
                    .unwrap_or("")
                    .to_owned();
            }
        }
        // kube names the resource the client wrote (`admission.NewForbidden` of the request's
        // own attributes), whatever version a policy matched.
        let ri = self.requested.unwrap_or(self.ri);
        let gr = if ri.group.is_empty() {
            ri.resource.clone()
        } else {
            format!("{}.{}", ri.resource, ri.group)
        };
        let text = if name.is_empty() {
            format!("{gr} is forbidden: {message}")
        } else {
            format!("{gr} \"{name}\" is forbidden: {message}")
        };
        let (reason, code) = reason_code(reason);
        ApiError::new(code, reason, text)
            .with_details(&ri.group, &ri.resource, &name)
            .with_causes(vec![Cause::new("", "", message)])
    }
}

/// kube's `reasonToCode` for the reasons a validation may name.
fn reason_code(reason: &str) -> (&'static str, u16) {
    match reason {
        "Unauthorized" => ("Unauthorized", 401),
        "Forbidden" => ("Forbidden", 403),
        "RequestEntityTooLarge" => ("RequestEntityTooLarge", 413),
        _ => ("Invalid", 422),
    }
}

/// The chain: policies and webhooks, read from the store.
pub struct Admission {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    policies: policy::Cache,
    mutating_policies: mutating_policy::Cache,
    webhooks: webhook::Webhooks,
    /// The Wasm policies the controllers folder loaded.
    pub wasm: Arc<WasmPolicies>,
    /// What CEL's `authorizer` asks: RBAC over the same store.
    authz: Arc<dyn AccessCheck>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission").finish_non_exhaustive()
    }
}

impl Admission {
    pub fn new(store: Arc<dyn Store>, registry: Arc<Registry>) -> Self {
        Self {
            authz: Arc::new(crate::auth::Authorizer::new(store.clone())),
            store,
            registry,
            policies: policy::Cache::default(),
            mutating_policies: mutating_policy::Cache::default(),
            webhooks: webhook::Webhooks::default(),
            wasm: Arc::default(),
        }
    }

    /// Mutating admission: MutatingAdmissionPolicies, then Wasm policies, then mutating
    /// webhooks, in name order;
    /// then, if the object changed, the policies with `reinvocationPolicy: IfNeeded` that a
    /// later mutation changed the object after are run once more (kube's reinvocation).
    /// Changes `object` in place; returns warnings.
    pub async fn mutate(
        &self,
        req: &Request<'_>,
        object: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        if exempt(req) {
            return Ok(Vec::new());
        }
        let ctx = self.context();
        let mut round = mutating_policy::Round::default();
        mutating_policy::mutate(
            &ctx,
            &self.mutating_policies,
            req,
            object,
            &mut round,
            false,
        )
        .await?;
        // Only `IfNeeded` invocations are ever reinvoked: without one, nothing to remember.
        let before_webhooks = round.reinvocable().then(|| object.clone());
        let mut warnings = self.wasm.mutate(&ctx, req, object).await?;
        warnings.extend(self.webhooks.mutate(&ctx, req, object).await?);
        // kube reinvokes the chain when any mutating plugin changed the object.
        if before_webhooks.is_some_and(|b| round.changed || b != *object) {
            mutating_policy::mutate(&ctx, &self.mutating_policies, req, object, &mut round, true)
                .await?;
        }
        Ok(warnings)
    }

    /// Validating admission: ValidatingAdmissionPolicies, then Wasm policies, then validating
    /// webhooks. `object` is
    /// the object to be stored (`None` on delete). Returns warnings.
    pub async fn validate(
        &self,
        req: &Request<'_>,
        object: Option<&Value>,
    ) -> Result<Vec<String>, ApiError> {
        if exempt(req) {
            return Ok(Vec::new());
        }
        let ctx = self.context();
        let mut warnings = policy::validate(&ctx, &self.policies, req, object).await?;
        warnings.extend(self.wasm.validate(&ctx, req, object).await?);
        warnings.extend(self.webhooks.validate(&ctx, req, object).await?);
        Ok(warnings)
    }

    /// Whether any mutating admission is configured: a mutating webhook configuration, a
    /// mutating policy binding or a mutating Wasm policy (not whether one matches a request).
    pub fn may_mutate(&self) -> bool {
        let ctx = self.context();
        self.wasm.mutates()
            || !ctx.configs("mutatingwebhookconfigurations").is_empty()
            || !ctx.configs("mutatingadmissionpolicybindings").is_empty()
    }

    fn context(&self) -> Context<'_> {
        Context {
            store: self.store.as_ref(),
            registry: &self.registry,
            authz: &self.authz,
        }
    }
}

const ADMISSION_GROUP: &str = "admissionregistration.k8s.io";

/// kube's `IsExemptAdmissionConfigurationResource`: webhooks are never called, and policies
/// never evaluated, for writes of webhook configurations, policies and bindings (a broken
/// webhook or policy could otherwise never be removed).
fn exempt(req: &Request<'_>) -> bool {
    req.ri.group == ADMISSION_GROUP
        && matches!(
            req.ri.resource.as_str(),
            "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

/// An invocation's view of a write whose rules matched an equivalent resource (kube's
/// `VersionedAttributes`): the matched resource, and the objects converted to its version.
pub(crate) struct Versioned {
    ri: Arc<ResourceInfo>,
    object: Option<Value>,
    old: Option<Value>,
}

impl Versioned {
    /// The request as the invocation sees it: the matched resource and kind, the requested
    /// ones in `requestResource`/`requestKind`.
    fn request<'b>(&'b self, req: &Request<'b>) -> Request<'b> {
        Request {
            ri: &self.ri,
            old_object: self.old.as_ref(),
            requested: Some(req.requested.unwrap_or(req.ri)),
            ..*req
        }
    }
}

/// What the mechanisms read: the store's index and the served resources.
pub(crate) struct Context<'a> {
    store: &'a dyn Store,
    registry: &'a Registry,
    /// What CEL's `authorizer` asks.
    authz: &'a Arc<dyn AccessCheck>,
}

impl Context<'_> {
    /// The write as an invocation that matched `matched` sees it: `None` for the request's own
    /// resource; else its object and old object converted to the matched version (not an
    /// object of another kind than the resource's, a Scale, which every version shares).
    async fn versioned(
        &self,
        req: &Request<'_>,
        matched: &matching::Matched,
        object: Option<&Value>,
    ) -> Result<Option<Versioned>, ApiError> {
        let matching::Matched::Equivalent(eq) = matched else {
            return Ok(None);
        };
        let convert = req.kind.is_none();
        let mut v = Versioned {
            ri: eq.clone(),
            object: None,
            old: None,
        };
        for (from, to) in [(object, &mut v.object), (req.old_object, &mut v.old)] {
            if let Some(o) = from {
                *to = Some(if convert {
                    self.convert(req.ri, eq, o).await?
                } else {
                    o.clone()
                });
            }
        }
        Ok(Some(v))
    }

    /// `obj`, an object as `from` serves it, as `to` serves it (the same stored object at
    /// another version: a CRD's conversion webhook, or the built-in conversions through the
    /// stored shape). An error is kube's internal error, as its dispatchers answer a failed
    /// conversion.
    async fn convert(
        &self,
        from: &ResourceInfo,
        to: &ResourceInfo,
        obj: &Value,
    ) -> Result<Value, ApiError> {
        let want = to.api_version();
        if let Some(hook) = from.custom.as_ref().and_then(|c| c.webhook.clone()) {
            let converted = crate::crd::conversion::convert(
                self.store,
                &hook,
                &want,
                &from.kind,
                vec![obj.clone()],
            )
            .await
            .map_err(|e| ApiError::internal(format!("Internal error occurred: {}", e.message)))?;
            return converted
                .into_iter()
                .next()
                .ok_or_else(|| ApiError::internal("conversion returned no object"));
        }
        let mut v = obj.clone();
        if let Some(m) = v.as_object_mut() {
            if let Some(c) = from.conversion {
                (c.to_storage)(m);
            }
            if let Some(c) = to.conversion {
                (c.from_storage)(m);
            }
            m.insert("apiVersion".into(), Value::String(want));
        }
        Ok(v)
    }

    /// Every stored object of one built-in admissionregistration resource, in name order.
    fn configs(&self, resource: &str) -> Vec<Arc<crate::store::StoredObject>> {
        let key = format!("{resource}.admissionregistration.k8s.io");
        match self.store.list(&key, None) {
            Ok(s) => s.items.values().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The stored namespace `name`.
    fn namespace(&self, name: &str) -> Option<Arc<crate::store::StoredObject>> {
        self.store
            .get(&crate::model::ObjectKey::new("namespaces", "", name))
    }

    /// CEL's `authorizer` and `authorizer.requestResource` for `req`, as its user (built only
    /// when `uses` says an expression names one of them).
    fn authorizer_vars(&self, req: &Request<'_>, uses: impl Fn(&str) -> bool) -> [CelData; 2] {
        if !uses("authorizer") && !uses(cel_authz::REQUEST_RESOURCE) {
            return [CelData::Null, CelData::Null];
        }
        let rr = cel_authz::RequestResource {
            group: &req.ri.group,
            resource: &req.ri.resource,
            subresource: req.subresource,
            namespace: req.namespace,
            name: req.name,
        };
        [
            cel_authz::authorizer(req.user, self.authz.clone()),
            cel_authz::request_resource(req.user, self.authz.clone(), &rr),
        ]
    }
}
