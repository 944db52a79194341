//! Wasm admission policies (`wit/admission/admission.wit`, `turtles:admission@0.1.0`): components
//! in the controllers folder that validate and/or mutate the writes they match, called
//! in-process. The runtime (`runtime::policy`) loads them and puts each loaded version here under
//! its name; a hot swap replaces the entry (calls in flight finish on the version they started
//! with), an unload removes it. Mutating policies run after the MutatingAdmissionPolicies and
//! before the mutating webhooks, validating ones after the ValidatingAdmissionPolicies and before
//! the validating webhooks, each phase in name order.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::{matching, webhook, Context, Request};
use crate::model::ApiError;
use crate::selector::LabelSelector;

/// What a loaded policy version registered, in the form the chain matches with.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub validating: bool,
    pub mutating: bool,
    /// kube `RuleWithOperations` objects (JSON), any of which matches.
    pub rules: Vec<Value>,
    pub namespace_selector: LabelSelector,
    pub object_selector: LabelSelector,
    /// `failure-policy: ignore`: a failed call lets the request through.
    pub fail_open: bool,
}

impl Spec {
    fn matches(&self, ctx: &Context<'_>, req: &Request<'_>, object: Option<&Value>) -> bool {
        self.rules.iter().any(|r| matching::rule_matches(r, req))
            && matching::object_matches_with(&self.object_selector, req, object)
            && matching::namespace_matches_with(ctx, &self.namespace_selector, req, object)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Validate,
    Mutate,
}

/// A policy's refusal.
#[derive(Debug, Clone)]
pub struct Denial {
    /// 400-599; 0 means 403.
    pub code: u16,
    pub reason: String,
    pub message: String,
}

/// A mutation's change to the object.
#[derive(Debug, Clone)]
pub enum Patch {
    /// The object as it is to be stored (JSON).
    Object(Vec<u8>),
    /// An RFC 6902 JSON Patch (JSON).
    JsonPatch(Vec<u8>),
}

/// What one call answered.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub denied: Option<Denial>,
    pub warnings: Vec<String>,
    pub patch: Option<Patch>,
}

pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<Answer, String>> + Send + 'a>>;

/// One loaded version of a policy (the runtime's side).
pub trait PolicyVersion: Send + Sync {
    fn spec(&self) -> &Spec;
    /// Call `validate` or `mutate`; `Err` is a failed call (trap, deadline, memory cap, a guest
    /// that could not be instantiated), which the policy's failure policy decides about.
    fn call<'a>(
        &'a self,
        phase: Phase,
        req: &'a Request<'a>,
        object: Option<&'a Value>,
    ) -> CallFuture<'a>;
}

/// How long a request waits for the policies found at start-up to load before it is refused
/// (kube's webhook and policy plugins wait 10 s for their informers, then refuse).
const READY_WAIT: Duration = Duration::from_secs(10);

/// The loaded policies by name.
pub struct WasmPolicies {
    set: RwLock<BTreeMap<String, Arc<dyn PolicyVersion>>>,
    /// Start-up loads not done yet ([`StartupHold`]s alive): the controllers folder's first scan
    /// and the first load of each policy file it found. Until they are done, which policies are
    /// in force is not known, and writes subject to admission wait, then are refused.
    starting: tokio::sync::watch::Sender<usize>,
}

impl Default for WasmPolicies {
    fn default() -> Self {
        Self {
            set: RwLock::default(),
            starting: tokio::sync::watch::Sender::new(0),
        }
    }
}

/// One start-up load not done yet; dropping it marks it done.
pub struct StartupHold(Arc<WasmPolicies>);

impl Drop for StartupHold {
    fn drop(&mut self) {
        self.0.starting.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl std::fmt::Debug for WasmPolicies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmPolicies").finish_non_exhaustive()
    }
}

impl WasmPolicies {
    /// Put `version` in force as policy `name` (replacing the version before it, if any).
    pub fn insert(&self, name: &str, version: Arc<dyn PolicyVersion>) {
        if let Ok(mut s) = self.set.write() {
            s.insert(name.to_owned(), version);
        }
    }

    /// Take policy `name` out of the chain.
    pub fn remove(&self, name: &str) {
        if let Ok(mut s) = self.set.write() {
            s.remove(name);
        }
    }

    /// A start-up load that requests must wait for until the hold is dropped.
    pub fn hold(self: &Arc<Self>) -> StartupHold {
        self.starting.send_modify(|n| *n += 1);
        StartupHold(self.clone())
    }

    /// Whether every start-up load is done.
    pub fn synced(&self) -> bool {
        *self.starting.borrow() == 0
    }

    /// Wait (up to [`READY_WAIT`]) for the start-up loads; kube's "not yet ready to handle
    /// request" if they are not done by then.
    async fn ready(&self, req: &Request<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        if self.synced() {
            return Ok(());
        }
        let mut rx = self.starting.subscribe();
        let synced = tokio::time::timeout(READY_WAIT, rx.wait_for(|n| *n == 0))
            .await
            .is_ok_and(|r| r.is_ok());
        match synced {
            true => Ok(()),
            false => Err(req.forbidden(
                object,
                "not yet ready to handle request".to_owned(),
                "Forbidden",
            )),
        }
    }

    /// Whether any loaded policy mutates.
    pub(crate) fn mutates(&self) -> bool {
        self.set
            .read()
            .is_ok_and(|s| s.values().any(|p| p.spec().mutating))
    }

    fn in_force(&self, phase: Phase) -> Vec<Arc<dyn PolicyVersion>> {
        let Ok(s) = self.set.read() else {
            return Vec::new();
        };
        s.values()
            .filter(|p| match phase {
                Phase::Validate => p.spec().validating,
                Phase::Mutate => p.spec().mutating,
            })
            .cloned()
            .collect()
    }

    /// Validating admission: every matching validating policy, in name order; the first
    /// denial refuses the request. Returns warnings.
    pub(crate) async fn validate(
        &self,
        ctx: &Context<'_>,
        req: &Request<'_>,
        object: Option<&Value>,
    ) -> Result<Vec<String>, ApiError> {
        self.ready(req, object).await?;
        let mut warnings = Vec::new();
        for p in self.in_force(Phase::Validate) {
            let spec = p.spec();
            if !spec.matches(ctx, req, object) {
                continue;
            }
            match p.call(Phase::Validate, req, object).await {
                Ok(a) => {
                    warnings.extend(webhook::cap_warnings(a.warnings));
                    if let Some(d) = a.denied {
                        return Err(denied(&spec.name, &d, req, object));
                    }
                }
                Err(e) => failed(spec, &e)?,
            }
        }
        Ok(warnings)
    }

    /// Mutating admission: every matching mutating policy, in name order, each seeing the
    /// object as the ones before left it. Returns warnings.
    pub(crate) async fn mutate(
        &self,
        ctx: &Context<'_>,
        req: &Request<'_>,
        object: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        self.ready(req, Some(object)).await?;
        let mut warnings = Vec::new();
        for p in self.in_force(Phase::Mutate) {
            let spec = p.spec();
            if !spec.matches(ctx, req, Some(object)) {
                continue;
            }
            let answer = p.call(Phase::Mutate, req, Some(object)).await;
            // A denial is a denial: its patch (if any) is never applied.
            if let Ok(Answer {
                denied: Some(d), ..
            }) = &answer
            {
                return Err(denied(&spec.name, d, req, Some(object)));
            }
            let applied = answer.and_then(|a| {
                if let Some(patch) = &a.patch {
                    apply(req, object, patch)?;
                }
                Ok(a)
            });
            match applied {
                Ok(a) => warnings.extend(webhook::cap_warnings(a.warnings)),
                Err(e) => failed(spec, &e)?,
            }
        }
        Ok(warnings)
    }
}

/// A failed call: refused under `fail`, logged and let through under `ignore`.
fn failed(spec: &Spec, err: &str) -> Result<(), ApiError> {
    if spec.fail_open {
        tracing::warn!(policy = %spec.name, error = %err, "admission policy failed: ignored (failure-policy ignore)");
        return Ok(());
    }
    Err(ApiError::internal(format!(
        "Internal error occurred: failed calling admission policy \"{}\": {err}",
        spec.name
    )))
}

/// A policy's denial as the client sees it: 403 (or no code) in kube's admission `Forbidden`
/// form (`configmaps "x" is forbidden: ...`), any other code with its reason, as a webhook's.
fn denied(name: &str, d: &Denial, req: &Request<'_>, object: Option<&Value>) -> ApiError {
    let by = format!("admission policy \"{name}\" denied the request");
    // A guest's message may be as large as its memory: cut as a warning is.
    let text = webhook::cap_warnings([d.message.clone()])
        .pop()
        .unwrap_or_default();
    let message = if text.is_empty() {
        format!("{by} without explanation")
    } else {
        format!("{by}: {text}")
    };
    let named = webhook::static_reason(&d.reason);
    let code = if (400..600).contains(&d.code) {
        d.code
    } else if !named.is_empty() {
        // No code but a reason: the code kube pairs with it.
        code_of(named)
    } else {
        403
    };
    let reason = match named {
        "" => reason_of(code),
        r => r,
    };
    if code == 403 && reason == "Forbidden" {
        return req.forbidden(object, message, "Forbidden");
    }
    ApiError::new(code, reason, message)
}

/// The code kube pairs with a `StatusReason`.
fn code_of(reason: &str) -> u16 {
    (400..600)
        .find(|c| reason_of(*c) == reason)
        .unwrap_or(match reason {
            "Expired" => 410,
            "StoreReadError" => 500,
            _ => 403,
        })
}

/// The `StatusReason` kube pairs with a code.
fn reason_of(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        500..=599 => "InternalError",
        _ => "",
    }
}

/// Apply a mutation to `object`: the result must be an object of the same kind.
fn apply(req: &Request<'_>, object: &mut Value, patch: &Patch) -> Result<(), String> {
    let patched = match patch {
        Patch::Object(bytes) => serde_json::from_slice::<Value>(bytes)
            .map_err(|e| format!("the mutated object is not JSON: {e}"))?,
        Patch::JsonPatch(bytes) => {
            let ops = crate::patch::parse(crate::patch::PatchType::Json, bytes)
                .map_err(|e| format!("the JSON patch is invalid: {}", e.message))?;
            crate::patch::apply(crate::patch::PatchType::Json, object, &ops, req.ri)
                .map_err(|e| format!("the JSON patch does not apply: {}", e.message))?
        }
    };
    if !patched.is_object() {
        return Err("the mutated object is not a JSON object".into());
    }
    for field in ["apiVersion", "kind"] {
        if patched.get(field) != object.get(field) {
            return Err(format!("a mutation may not change {field}"));
        }
    }
    // The object's key: its namespace, and its name once it has one (a `generateName` create
    // gets its name after mutating admission).
    let meta = |o: &Value, f: &str| o.pointer(&format!("/metadata/{f}")).cloned();
    if meta(&patched, "namespace") != meta(object, "namespace") {
        return Err("a mutation may not change metadata.namespace".into());
    }
    if !req.name.is_empty() && meta(&patched, "name") != meta(object, "name") {
        return Err("a mutation may not change metadata.name".into());
    }
    *object = patched;
    Ok(())
}
