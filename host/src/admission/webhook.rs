//! Validating and mutating admission webhooks (kube's `admission/plugin/webhook`):
//! Validating/MutatingWebhookConfiguration, each webhook called over HTTPS (`clientConfig.url`,
//! or a `service` reference resolved to its cluster IP) with an AdmissionReview v1, trusting
//! `caBundle`; `rules`, `namespaceSelector`, `objectSelector`, `matchConditions`,
//! `timeoutSeconds`, `failurePolicy`, `sideEffects` with dry runs, JSONPatch responses, warnings.
//!
//! Mutating webhooks run one after another in configuration-name order; validating webhooks run
//! concurrently. Clients are kept per CA bundle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use super::hook_client::HookClientError;
use super::matching::{self, Matched};
use super::{AdmissionError, Context, Request};
use crate::model::ApiError;
use crate::schema::expr::{self, CelData, Expression};

const VALIDATING: &str = "validatingwebhookconfigurations";
const MUTATING: &str = "mutatingwebhookconfigurations";
/// Largest AdmissionReview response read from a webhook (kube reads at most 3 MiB bodies too).
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;
/// kube's default and maximum `timeoutSeconds`.
const DEFAULT_TIMEOUT: u64 = 10;
const MAX_TIMEOUT: u64 = 30;
/// Most warnings taken from one response, and the longest kept.
const MAX_WARNINGS: usize = 100;
const MAX_WARNING_BYTES: usize = 4096;

#[derive(Debug, Default)]
pub(crate) struct Webhooks {
    client: super::hook_client::HookClient,
    /// Compiled matchConditions by expression text.
    conditions: Mutex<HashMap<String, Arc<Result<Expression, String>>>>,
}

/// One webhook of a configuration.
struct Hook {
    name: String,
    spec: Value,
}

impl Hook {
    fn fail(&self) -> bool {
        self.spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore")
    }

    /// A configuration or condition error under the hook's `failurePolicy`: the request's
    /// error (`Fail`), or the hook skipped (`Ignore`: `None`).
    fn under_policy<T>(&self, r: Result<T, String>) -> Result<Option<T>, ApiError> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e) if self.fail() => Err(call_failed(&self.name, &e)),
            Err(_) => Ok(None),
        }
    }
}

impl Webhooks {
    fn hooks(ctx: &Context<'_>, resource: &str) -> Vec<Hook> {
        let mut out = Vec::new();
        for cfg in ctx.configs(resource) {
            for w in cfg
                .value()
                .get("webhooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(Hook {
                    name: w
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    spec: w.clone(),
                });
            }
        }
        out
    }

    /// Whether the hook's rules (with its `matchPolicy`) and selectors take the request, and as
    /// what resource; `Err`: a configuration error, subject to the hook's failurePolicy.
    fn matches(
        ctx: &Context<'_>,
        hook: &Hook,
        req: &Request<'_>,
        object: Option<&Value>,
    ) -> Result<Option<Matched>, String> {
        let rules = hook
            .spec
            .get("rules")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let Some(matched) = matching::rules_match(ctx, rules, hook.spec.get("matchPolicy"), req)
        else {
            return Ok(None);
        };
        if !matching::namespace_matches(ctx, hook.spec.get("namespaceSelector"), req, object)? {
            return Ok(None);
        }
        if !matching::object_matches(hook.spec.get("objectSelector"), req, object)? {
            return Ok(None);
        }
        Ok(Some(matched))
    }

    /// Whether the hook's `matchConditions` hold for the write as the hook sees it (in the
    /// version it matched, as kube evaluates them); `Err`: a condition error, subject to the
    /// hook's failurePolicy.
    fn conditions_hold(
        &self,
        ctx: &Context<'_>,
        hook: &Hook,
        req: &Request<'_>,
        object: Option<&Value>,
    ) -> Result<bool, String> {
        let conds = hook
            .spec
            .get("matchConditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if conds.is_empty() {
            return Ok(true);
        }
        let compiled: Vec<(String, Arc<Result<Expression, String>>)> = conds
            .iter()
            .map(|c| {
                let src = c.get("expression").and_then(Value::as_str).unwrap_or("");
                (src.to_owned(), self.condition(src))
            })
            .collect();
        // Only the variables the conditions name are built and converted.
        let uses = |name: &str| {
            compiled
                .iter()
                .any(|(_, c)| c.as_ref().as_ref().is_ok_and(|e| e.references(name)))
        };
        let cel = |name: &str, v: Option<&Value>| match v {
            Some(v) if uses(name) => expr::json_to_cel(v),
            _ => CelData::Null,
        };
        let request = uses("request").then(|| req.to_json(""));
        let authorizer = ctx.authorizer_vars(req, uses);
        let shallow = compiled
            .iter()
            .all(|(_, c)| c.as_ref().as_ref().map_or(true, Expression::shallow));
        let loops = compiled
            .iter()
            .any(|(_, c)| c.as_ref().as_ref().is_ok_and(Expression::loops));
        let run = || -> Result<bool, String> {
            let object_v = cel("object", object);
            let old_v = cel("oldObject", req.old_object);
            let request_v = cel("request", request.as_ref());
            let max = [object, req.old_object]
                .into_iter()
                .flatten()
                .map(expr::largest_collection)
                .max()
                .unwrap_or(0);
            for (src, c) in &compiled {
                let e = c.as_ref().as_ref().map_err(Clone::clone)?;
                if e.cost(max) > crate::schema::PER_CALL_LIMIT {
                    return Err(format!(
                        "expression '{src}' resulted in error: operation cancelled: actual cost limit exceeded"
                    ));
                }
                match e.eval(&[
                    ("object", &object_v),
                    ("oldObject", &old_v),
                    ("request", &request_v),
                    ("authorizer", &authorizer[0]),
                    (crate::schema::cel_authz::REQUEST_RESOURCE, &authorizer[1]),
                ]) {
                    Ok(CelData::Bool(true)) => {}
                    Ok(CelData::Bool(false)) => return Ok(false),
                    Ok(_) => {
                        return Err(format!(
                            "expression '{src}' resulted in error: no such overload"
                        ))
                    }
                    Err(err) => return Err(format!("expression '{src}' resulted in error: {err}")),
                }
            }
            Ok(true)
        };
        // Shallow conditions run here (off the async workers if they loop); deep ones on a
        // thread with a big stack.
        if shallow && !loops {
            return run();
        }
        if shallow {
            return expr::off_the_workers(run);
        }
        expr::run_on_big_stack(run)?
    }

    fn condition(&self, src: &str) -> Arc<Result<Expression, String>> {
        if let Ok(map) = self.conditions.lock() {
            if let Some(c) = map.get(src) {
                return c.clone();
            }
        }
        let owned = src.to_owned();
        let compiled = Arc::new(
            expr::run_on_big_stack(move || Expression::compile(&owned))
                .and_then(|r| r)
                .map_err(|e| format!("compilation failed: {e}")),
        );
        if let Ok(mut map) = self.conditions.lock() {
            if map.len() > 1024 {
                map.clear();
            }
            map.insert(src.to_owned(), compiled.clone());
        }
        compiled
    }

    /// Mutating webhooks in order; then, as kube's `reinvocationPolicy: IfNeeded`, those that
    /// ask for it are called once more if a later webhook changed the object after them.
    pub(crate) async fn mutate(
        &self,
        ctx: &Context<'_>,
        req: &Request<'_>,
        object: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        let hooks = Self::hooks(ctx, MUTATING);
        let mut warnings = Vec::new();
        // (hook index, the object as that hook left it) of the IfNeeded hooks called.
        let mut reinvocable: Vec<(usize, Value)> = Vec::new();
        for (i, hook) in hooks.iter().enumerate() {
            if self
                .mutate_one(ctx, hook, req, object, &mut warnings)
                .await?
            {
                let if_needed =
                    hook.spec.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded");
                if if_needed {
                    reinvocable.push((i, object.clone()));
                }
            }
        }
        for (i, seen) in reinvocable {
            if *object != seen {
                self.mutate_one(ctx, &hooks[i], req, object, &mut warnings)
                    .await?;
            }
        }
        Ok(warnings)
    }

    /// Call one mutating webhook if it applies and apply its patch; whether it was called.
    async fn mutate_one(
        &self,
        ctx: &Context<'_>,
        hook: &Hook,
        req: &Request<'_>,
        object: &mut Value,
        warnings: &mut Vec<String>,
    ) -> Result<bool, ApiError> {
        let Some(matched) = hook
            .under_policy(Self::matches(ctx, hook, req, Some(object)))?
            .flatten()
        else {
            return Ok(false);
        };
        // A hook that matched an equivalent resource sees, and patches, the object in the
        // version it matched; the result is converted back (kube's versioned attributes).
        let Some(versioned) = ctx.versioned(req, &matched, Some(object)).await? else {
            return self.call_mutating(ctx, hook, req, object, warnings).await;
        };
        let mut seen = versioned.object.clone().unwrap_or(Value::Null);
        let called = self
            .call_mutating(ctx, hook, &versioned.request(req), &mut seen, warnings)
            .await?;
        if Some(&seen) != versioned.object.as_ref() {
            *object = ctx.convert(&versioned.ri, req.ri, &seen).await?;
        }
        Ok(called)
    }

    /// [`Self::mutate_one`] once the hook matched: its conditions, the call, the patch.
    async fn call_mutating(
        &self,
        ctx: &Context<'_>,
        hook: &Hook,
        req: &Request<'_>,
        object: &mut Value,
        warnings: &mut Vec<String>,
    ) -> Result<bool, ApiError> {
        if hook.under_policy(self.conditions_hold(ctx, hook, req, Some(object)))? != Some(true) {
            return Ok(false);
        }
        check_dry_run(hook, req)?;
        let resp = match self.call(ctx, hook, req, Some(object)).await {
            Ok(r) => r,
            Err(e) if hook.fail() => return Err(call_failed(&hook.name, &e.to_string())),
            Err(_) => return Ok(true),
        };
        warnings.extend(response_warnings(&resp));
        if !allowed(&resp) {
            return Err(denied(&hook.name, resp.get("status")));
        }
        if let Some(p) = resp.get("patch").and_then(Value::as_str) {
            hook.under_policy(apply_patch(req, object, p, resp.get("patchType")))?;
        }
        Ok(true)
    }

    pub(crate) async fn validate(
        &self,
        ctx: &Context<'_>,
        req: &Request<'_>,
        object: Option<&Value>,
    ) -> Result<Vec<String>, ApiError> {
        let hooks = Self::hooks(ctx, VALIDATING);
        let mut calls = Vec::new();
        for hook in &hooks {
            let Some(matched) = hook
                .under_policy(Self::matches(ctx, hook, req, object))?
                .flatten()
            else {
                continue;
            };
            // In the version the hook matched (kube's versioned attributes).
            let versioned = ctx.versioned(req, &matched, object).await?;
            let holds = match &versioned {
                Some(v) => self.conditions_hold(ctx, hook, &v.request(req), v.object.as_ref()),
                None => self.conditions_hold(ctx, hook, req, object),
            };
            if hook.under_policy(holds)? != Some(true) {
                continue;
            }
            check_dry_run(hook, req)?;
            calls.push(async move {
                let answer = match &versioned {
                    Some(v) => {
                        self.call(ctx, hook, &v.request(req), v.object.as_ref())
                            .await
                    }
                    None => self.call(ctx, hook, req, object).await,
                };
                (hook, answer)
            });
        }
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let mut warnings = Vec::new();
        let mut first_error = None;
        for (hook, result) in futures::future::join_all(calls).await {
            match result {
                Ok(resp) => {
                    warnings.extend(response_warnings(&resp));
                    if !allowed(&resp) && first_error.is_none() {
                        first_error = Some(denied(&hook.name, resp.get("status")));
                    }
                }
                Err(e) if hook.fail() => {
                    if first_error.is_none() {
                        first_error = Some(call_failed(&hook.name, &e.to_string()));
                    }
                }
                Err(_) => {}
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(warnings),
        }
    }

    /// POST the AdmissionReview; the `response` of the answer.
    async fn call(
        &self,
        ctx: &Context<'_>,
        hook: &Hook,
        req: &Request<'_>,
        object: Option<&Value>,
    ) -> Result<Value, AdmissionError> {
        let cc = hook
            .spec
            .get("clientConfig")
            .cloned()
            .unwrap_or(Value::Null);
        let ca = cc.get("caBundle").and_then(Value::as_str).unwrap_or("");
        let (url, resolve) = match cc.get("url").and_then(Value::as_str) {
            Some(u) => (u.to_owned(), None),
            None => {
                let (url, _host, addr) = service_target(ctx.store, &cc)?;
                (url, Some(addr))
            }
        };
        let timeout = hook
            .spec
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT)
            .clamp(1, MAX_TIMEOUT);
        let uid = uuid::Uuid::new_v4().to_string();
        let mut request = req.to_json(&uid);
        request["object"] = object.cloned().unwrap_or(Value::Null);
        request["oldObject"] = req.old_object.cloned().unwrap_or(Value::Null);
        let review = json!({
            "kind": "AdmissionReview",
            "apiVersion": "admission.k8s.io/v1",
            "request": request,
        });
        let body = serde_json::to_vec(&review)
            .map_err(|e| AdmissionError::Call(format!("failed to call webhook: {e}")))?;
        let answer = tokio::time::timeout(
            Duration::from_secs(timeout),
            self.client
                .post(ca, &url, resolve, body, MAX_RESPONSE_BYTES),
        )
        .await
        .map_err(|_| {
            AdmissionError::Call(format!(
                "failed to call webhook: Post \"{url}\": context deadline exceeded"
            ))
        })?
        .map_err(|e| match e {
            HookClientError::Config(m) => AdmissionError::Config(m),
            e => AdmissionError::Call(format!("failed to call webhook: {e}")),
        })?;
        if !(200..300).contains(&answer.status) {
            return Err(AdmissionError::Call(format!(
                "failed to call webhook: the server responded with the status code {}",
                answer.status
            )));
        }
        let body = answer.body;
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|e| AdmissionError::Call(format!("received invalid webhook response: {e}")))?;
        let response = answer.get("response").cloned().ok_or_else(|| {
            AdmissionError::Call("received invalid webhook response: response is empty".into())
        })?;
        if response.get("uid").and_then(Value::as_str) != Some(uid.as_str()) {
            return Err(AdmissionError::Call(format!(
                "expected response.uid=\"{uid}\", got \"{}\"",
                response.get("uid").and_then(Value::as_str).unwrap_or("")
            )));
        }
        Ok(response)
    }
}

/// A `service` reference, resolved as kube's service resolver does without a proxy: the URL
/// `https://NAME.NAMESPACE.svc:PORT/PATH` (the name the serving certificate must hold), and the
/// address of a ready endpoint from the Service's EndpointSlices (the port mapped by name).
pub(crate) fn service_target(
    store: &dyn crate::store::Store,
    cc: &Value,
) -> Result<(String, String, std::net::SocketAddr), AdmissionError> {
    let svc = cc
        .get("service")
        .ok_or_else(|| AdmissionError::Config("clientConfig has neither url nor service".into()))?;
    let ns = svc.get("namespace").and_then(Value::as_str).unwrap_or("");
    let name = svc.get("name").and_then(Value::as_str).unwrap_or("");
    let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
    let path = svc.get("path").and_then(Value::as_str).unwrap_or("");
    let host = format!("{name}.{ns}.svc");
    let url = format!("https://{host}:{port}{path}");
    let not_found = || {
        AdmissionError::Call(format!(
            "failed to call webhook: service \"{ns}/{name}\" not found"
        ))
    };
    let stored = store
        .get(&crate::model::ObjectKey::new("services", ns, name))
        .ok_or_else(not_found)?;
    let port_name = stored
        .value()
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(port))
        .map(|p| {
            p.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .ok_or_else(|| {
            AdmissionError::Call(format!(
                "failed to call webhook: service \"{ns}/{name}\" has no port {port}"
            ))
        })?;
    let ready =
        crate::aggregator::proxy::ready_endpoints(store, ns, name, &port_name).unwrap_or_default();
    if let Some(addr) = ready.first() {
        return Ok((url, host, *addr));
    }
    Err(AdmissionError::Call(format!(
        "failed to call webhook: service \"{ns}/{name}\" has no ready endpoints"
    )))
}

/// kube refuses a dry run to webhooks that may have side effects.
fn check_dry_run(hook: &Hook, req: &Request<'_>) -> Result<(), ApiError> {
    if !req.dry_run {
        return Ok(());
    }
    match hook.spec.get("sideEffects").and_then(Value::as_str) {
        Some("None" | "NoneOnDryRun") => Ok(()),
        _ => Err(ApiError::bad_request(format!(
            "admission webhook \"{}\" does not support dry run",
            hook.name
        ))),
    }
}

fn allowed(resp: &Value) -> bool {
    resp.get("allowed").and_then(Value::as_bool) == Some(true)
}

fn response_warnings(resp: &Value) -> Vec<String> {
    cap_warnings(
        resp.get("warnings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned),
    )
}

/// At most [`MAX_WARNINGS`] warnings, each cut to [`MAX_WARNING_BYTES`] (kube's limits on what
/// one admission plugin may add).
pub(crate) fn cap_warnings(warnings: impl IntoIterator<Item = String>) -> Vec<String> {
    warnings
        .into_iter()
        .take(MAX_WARNINGS)
        .map(|mut w| {
            if w.len() > MAX_WARNING_BYTES {
                let mut end = MAX_WARNING_BYTES;
                while !w.is_char_boundary(end) {
                    end -= 1;
                }
                w.truncate(end);
            }
            w
        })
        .collect()
}

/// kube's `webhookerrors.ToStatusErr`.
fn denied(name: &str, status: Option<&Value>) -> ApiError {
    let by = format!("admission webhook \"{name}\" denied the request");
    let text = |f: &str| {
        status
            .and_then(|s| s.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let message = text("message");
    let reason = text("reason");
    let message = if !message.is_empty() {
        format!("{by}: {message}")
    } else if !reason.is_empty() {
        format!("{by}: {reason}")
    } else {
        format!("{by} without explanation")
    };
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400) as u16;
    ApiError::new(code, static_reason(&reason), message)
}

/// The `StatusReason`s kube defines (others are reported without a reason).
pub(crate) fn static_reason(r: &str) -> &'static str {
    const REASONS: &[&str] = &[
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    REASONS.iter().find(|x| **x == r).copied().unwrap_or("")
}

/// kube: a webhook that could not be called (or answered nonsense) under `failurePolicy: Fail`.
fn call_failed(name: &str, err: &str) -> ApiError {
    ApiError::internal(format!(
        "Internal error occurred: failed calling webhook \"{name}\": {err}"
    ))
}

/// Apply a mutating webhook's base64 JSONPatch to `object`.
pub(crate) fn apply_patch(
    req: &Request<'_>,
    object: &mut Value,
    patch_b64: &str,
    patch_type: Option<&Value>,
) -> Result<(), String> {
    if patch_type.and_then(Value::as_str) != Some("JSONPatch") {
        return Err("unsupported patch type".into());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch_b64)
        .map_err(|e| format!("failed to decode the patch: {e}"))?;
    let patch =
        crate::patch::parse(crate::patch::PatchType::Json, &bytes).map_err(|e| e.message)?;
    let patched = crate::patch::apply(crate::patch::PatchType::Json, object, &patch, req.ri)
        .map_err(|e| e.message)?;
    if !patched.is_object() {
        return Err("the patched object is not an object".into());
    }
    *object = patched;
    Ok(())
}
