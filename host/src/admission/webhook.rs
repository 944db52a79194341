//! Validating and mutating admission webhooks (kube's `admission/plugin/webhook`):
//! Validating/MutatingWebhookConfiguration, each webhook called over HTTPS (`clientConfig.url`,
//! or a `service` reference resolved to a ready endpoint) with an AdmissionReview v1, trusting
//! `caBundle`; `rules`, `namespaceSelector`, `objectSelector`, `matchConditions`,
//! `timeoutSeconds` (cut to what is left of the API request's deadline), `failurePolicy`,
//! `sideEffects` with dry runs, JSONPatch responses, warnings.
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
            Err(AdmissionError::RequestTimeout) => return Err(ApiError::deadline_passed()),
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
        let mut timed_out = false;
        for (hook, result) in futures::future::join_all(calls).await {
            match result {
                // kube waits for every call: past the request's deadline its timeout filter
                // has answered, whatever the others said.
                Err(AdmissionError::RequestTimeout) => timed_out = true,
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
        if timed_out {
            return Err(ApiError::deadline_passed());
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
        let (configured, service) = client_target(&cc)?;
        let hook_timeout = Duration::from_secs(
            hook.spec
                .get("timeoutSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_TIMEOUT)
                .clamp(1, MAX_TIMEOUT),
        );
        let budget = Budget::of(hook_timeout, req.deadline, tokio::time::Instant::now())
            .ok_or(AdmissionError::RequestTimeout)?;
        // As client-go's request names it: with the call's timeout in its query.
        let url = call_url(&configured, budget.url_seconds());
        // kube's service resolver runs as the call dials: its error is the call's.
        let resolve = match service {
            Some(svc) => Some(svc.resolve(ctx.store).map_err(|e| {
                AdmissionError::Call(format!("failed to call webhook: Post \"{url}\": {e}"))
            })?),
            None => None,
        };
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
        let answer = match tokio::time::timeout(
            budget.limit,
            self.client
                .post(ca, &url, resolve, body, MAX_RESPONSE_BYTES),
        )
        .await
        {
            Ok(answer) => answer,
            // The request's own deadline: kube's timeout filter answers the request then.
            Err(_) if budget.by_request => return Err(AdmissionError::RequestTimeout),
            Err(_) => {
                return Err(AdmissionError::Call(format!(
                    "failed to call webhook: Post \"{url}\": context deadline exceeded"
                )))
            }
        }
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

/// How long one webhook call may take: kube calls a webhook under the API request's context
/// (whose deadline is the request's `?timeout=`, at most `--request-timeout`) with the
/// webhook's `timeoutSeconds` on top, so the sooner of the two ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Budget {
    limit: Duration,
    /// Whether the request's deadline is what ends it (not the webhook's own timeout).
    by_request: bool,
}

impl Budget {
    /// The call's budget at `now`; `None` when the request's deadline has already passed.
    fn of(
        hook_timeout: Duration,
        request_deadline: Option<tokio::time::Instant>,
        now: tokio::time::Instant,
    ) -> Option<Self> {
        let Some(deadline) = request_deadline else {
            return Some(Self {
                limit: hook_timeout,
                by_request: false,
            });
        };
        let left = deadline.saturating_duration_since(now);
        if left.is_zero() {
            return None;
        }
        Some(if left <= hook_timeout {
            Self {
                limit: left,
                by_request: true,
            }
        } else {
            Self {
                limit: hook_timeout,
                by_request: false,
            }
        })
    }

    /// The `?timeout=` the call names: what is left, rounded up to whole seconds (kube's
    /// dispatchers set the request's `Timeout` from the context's deadline so).
    fn url_seconds(&self) -> u64 {
        self.limit.as_secs() + u64::from(self.limit.subsec_nanos() > 0)
    }
}

/// A webhook's `clientConfig`: the URL it is configured with (`url`, or for a `service`
/// reference `https://NAME.NAMESPACE.svc:PORT/PATH`, the name the serving certificate must
/// hold, as kube's client config builds it), and the Service to find the address in (`None`:
/// the URL's own host).
pub(crate) fn client_target(cc: &Value) -> Result<(String, Option<ServiceTarget>), AdmissionError> {
    if let Some(url) = cc.get("url").and_then(Value::as_str) {
        return Ok((url.to_owned(), None));
    }
    let svc = cc.get("service").ok_or_else(|| {
        AdmissionError::Config("webhook configuration must have either service or URL".into())
    })?;
    let namespace = svc.get("namespace").and_then(Value::as_str).unwrap_or("");
    let name = svc.get("name").and_then(Value::as_str).unwrap_or("");
    let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
    let path = svc.get("path").and_then(Value::as_str).unwrap_or("");
    let url = format!("https://{name}.{namespace}.svc:{port}{path}");
    let target = ServiceTarget {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        port,
    };
    Ok((url, Some(target)))
}

/// A `service` reference of a webhook's `clientConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceTarget {
    namespace: String,
    name: String,
    port: u64,
}

impl ServiceTarget {
    /// The address to call, as kube's endpoint service resolver (`proxy.ResolveEndpoint`,
    /// kube-apiserver's with `--enable-aggregator-routing`; its default dials the cluster IP,
    /// which needs a service proxy) finds it: the Service (a `ClusterIP`, `NodePort` or
    /// `LoadBalancer` one), its port, then a ready endpoint of its EndpointSlices for that port's
    /// name. `Err`: the resolver's error text, which the call's error carries after
    /// `Post "URL": `.
    pub(crate) fn resolve(
        &self,
        store: &dyn crate::store::Store,
    ) -> Result<std::net::SocketAddr, String> {
        use crate::auth::rbac::go_quote;
        let (ns, name, port) = (&self.namespace, &self.name, self.port);
        let stored = store
            .get(&crate::model::ObjectKey::new("services", ns, name))
            .ok_or_else(|| format!("service {} not found", go_quote(name)))?;
        let spec = stored.pick("spec", &["type", "ports"]);
        // kube stores every Service with its type; one without is ClusterIP.
        let kind = spec
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        if !matches!(kind, "ClusterIP" | "NodePort" | "LoadBalancer") {
            return Err(format!("unsupported service type {}", go_quote(kind)));
        }
        let port_name = spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("port").and_then(Value::as_u64) == Some(port))
            .map(|p| p.get("name").and_then(Value::as_str).unwrap_or(""))
            .ok_or_else(|| {
                format!(
                    "no service port {port} found for service {}",
                    go_quote(name)
                )
            })?;
        crate::aggregator::proxy::ready_endpoints(store, ns, name, port_name)
            .and_then(|ready| ready.first().copied())
            .ok_or_else(|| format!("no endpoints available for service {}", go_quote(name)))
    }
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

/// kube's `webhookerrors.ToStatusErr` (1.34), which hands the webhook's `status` on whole: its
/// message prefixed with the webhook's name (its reason instead when it has no message), a code
/// under 400 (or none) made 400, an empty or `Success` status made `Failure`; `reason` (any
/// text), `details` (causes included) and `metadata` as the webhook gave them, and a code of
/// 400 or more as it is (kube writes 600-999 as the HTTP status too; a longer one makes Go's
/// `WriteHeader` panic, which kube answers with a plain 500: `api/error.rs`). A
/// `details.retryAfterSeconds` also sets `Retry-After`, as kube's error writer does.
pub(crate) fn denied(name: &str, status: Option<&Value>) -> ApiError {
    let by = format!("admission webhook \"{name}\" denied the request");
    let status = status.and_then(Value::as_object);
    let text = |f: &str| {
        status
            .and_then(|s| s.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let (message, reason) = (text("message"), text("reason"));
    let message = if !message.is_empty() {
        format!("{by}: {message}")
    } else if !reason.is_empty() {
        format!("{by}: {reason}")
    } else {
        format!("{by} without explanation")
    };
    // An int32 in kube's `Status`.
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok())
        .map_or(0, i64::from)
        .max(400);
    let state = match text("status") {
        "" | "Success" => "Failure",
        other => other,
    };
    let details = status
        .and_then(|s| s.get("details"))
        .and_then(status_details);
    let http = u16::try_from(code)
        .ok()
        .filter(|c| *c <= 999)
        .unwrap_or(500);
    let mut e = ApiError::new(http, static_reason(reason), message);
    e.retry_after = details
        .as_ref()
        .and_then(|d| d.get("retryAfterSeconds"))
        .and_then(Value::as_u64)
        .and_then(|s| u32::try_from(s).ok())
        .filter(|s| *s > 0);
    e.passed = Some(Box::new(crate::model::status::PassedStatus {
        metadata: list_meta(status.and_then(|s| s.get("metadata"))),
        status: state.to_owned(),
        reason: reason.to_owned(),
        details,
        code,
    }));
    e
}

/// The `ListMeta` fields of a webhook's `status.metadata`, as Go decodes and writes them back
/// (empty strings left out; `remainingItemCount` kept when given, zero included).
fn list_meta(meta: Option<&Value>) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    let Some(meta) = meta.and_then(Value::as_object) else {
        return out;
    };
    for field in ["selfLink", "resourceVersion", "continue"] {
        if let Some(v) = meta
            .get(field)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
        {
            out.insert(field.into(), v.into());
        }
    }
    if let Some(n) = meta.get("remainingItemCount").and_then(Value::as_i64) {
        out.insert("remainingItemCount".into(), n.into());
    }
    out
}

/// A webhook's `status.details` as Go decodes it into a `StatusDetails` and writes it back: its
/// fields in the struct's order, empty ones left out, unknown ones dropped (`None`: no details,
/// `null` included).
fn status_details(details: &Value) -> Option<Value> {
    let details = details.as_object()?;
    let mut out = serde_json::Map::new();
    let strings = |from: &serde_json::Map<String, Value>,
                   fields: &[&str],
                   out: &mut serde_json::Map<String, Value>| {
        for field in fields {
            if let Some(v) = from
                .get(*field)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
            {
                out.insert((*field).into(), v.into());
            }
        }
    };
    strings(details, &["name", "group", "kind", "uid"], &mut out);
    let causes: Vec<Value> = details
        .get("causes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|c| {
            let mut cause = serde_json::Map::new();
            strings(c, &["reason", "message", "field"], &mut cause);
            Value::Object(cause)
        })
        .collect();
    if !causes.is_empty() {
        out.insert("causes".into(), causes.into());
    }
    if let Some(n) = details
        .get("retryAfterSeconds")
        .and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
        .filter(|n| *n != 0)
    {
        out.insert("retryAfterSeconds".into(), n.into());
    }
    Some(Value::Object(out))
}

/// The URL kube's webhook client posts to (client-go's `Request.URL`): the configured URL's
/// scheme and host, its path as `path.Join("/", path)` cleans it (escaped again as Go's
/// `URL.EscapedPath` escapes a path), and `?timeout=` with the call's timeout, which client-go
/// adds from the call's deadline (the webhook's `timeoutSeconds`) for the webhook to honour. The
/// same URL is the one its errors name (`Post "https://host/path?timeout=10s": ...`).
pub(crate) fn call_url(url: &str, timeout_secs: u64) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // Not a URL: left for the client to refuse as configured.
        return url.to_owned();
    };
    let is_end = |c: char| matches!(c, '/' | '?' | '#');
    let (host, tail) = rest.split_at(rest.find(is_end).unwrap_or(rest.len()));
    let path = &tail[..tail.find(['?', '#']).unwrap_or(tail.len())];
    format!(
        "{}://{host}{}?timeout={timeout_secs}s",
        scheme.to_ascii_lowercase(),
        go_escape_path(&go_clean_path(&go_unescape(path)))
    )
}

/// A URL path's `%XX` escapes decoded (a `%` that starts none is kept as it is).
fn go_unescape(path: &str) -> Vec<u8> {
    let b = path.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Go's `path.Clean` of a rooted path: no empty or `.` segments, `..` taking the one before it
/// (none above the root), no trailing slash; `/` when nothing is left.
fn go_clean_path(path: &[u8]) -> Vec<u8> {
    let mut segments: Vec<&[u8]> = Vec::new();
    for seg in path.split(|c| *c == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = Vec::with_capacity(path.len() + 1);
    for seg in segments {
        out.push(b'/');
        out.extend_from_slice(seg);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// Go's `url.escape(path, encodePath)`: letters, digits, `-_.~` and `$&+,/:;=@` as they are,
/// every other byte as `%XX` (upper-case hex).
fn go_escape_path(path: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(path.len());
    for &c in path {
        if c.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&c) {
            out.push(c as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(c >> 4)] as char);
            out.push(HEX[usize::from(c & 15)] as char);
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The Status a denial answers, as the client reads it.
    fn answered(status: Value) -> (ApiError, Value) {
        let e = denied("check.example.com", Some(&status));
        let s = e.to_status();
        (e, s)
    }

    /// kube 1.34's `ToStatusErr` hands the webhook's status on whole: details and causes,
    /// reason and code as given, the message prefixed.
    #[test]
    fn a_denial_keeps_the_webhooks_status() {
        let (e, s) = answered(
            json!({"code": 422, "reason": "Invalid", "message": "bad thing",
            "details": {"causes": [{"field": "data.a", "message": "nope"}]}}),
        );
        assert_eq!(e.code, 422);
        assert_eq!(e.reason, "Invalid");
        assert_eq!(
            s.to_string(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "admission webhook \"check.example.com\" denied the request: bad thing",
                "reason": "Invalid",
                "details": {"causes": [{"message": "nope", "field": "data.a"}]},
                "code": 422})
            .to_string()
        );
        // Every StatusDetails field, in Go's order, unknown ones dropped, empty ones left out;
        // a reason of the webhook's own; metadata's ListMeta fields.
        let (e, s) = answered(json!({"code": 409, "reason": "PolicyViolation",
            "message": "m", "status": "Failure", "metadata": {"resourceVersion": "5", "bogus": 1},
            "details": {"retryAfterSeconds": 3, "causes": [{"reason": "R", "bogus": true}, {}],
                        "uid": "u", "kind": "configmaps", "group": "", "name": "x", "extra": 1}}));
        assert_eq!(e.code, 409);
        assert_eq!(e.reason, "", "not one of kube's reasons");
        assert_eq!(e.retry_after, Some(3));
        assert_eq!(
            s.to_string(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {"resourceVersion": "5"},
                "status": "Failure",
                "message": "admission webhook \"check.example.com\" denied the request: m",
                "reason": "PolicyViolation",
                "details": {"name": "x", "kind": "configmaps", "uid": "u",
                            "causes": [{"reason": "R"}, {}], "retryAfterSeconds": 3},
                "code": 409})
            .to_string()
        );
    }

    /// Codes under 400 (none included) become 400; codes of 400 and more are kept, 600-999 as
    /// the HTTP status too, longer ones answered 500 (Go's `WriteHeader` panics on them).
    #[test]
    fn a_denials_code_is_at_least_400_and_otherwise_kept() {
        for (given, http, body) in [
            (json!(null), 400, 400),
            (json!(0), 400, 400),
            (json!(200), 400, 400),
            (json!(-5), 400, 400),
            (json!(403), 403, 403),
            (json!(599), 599, 599),
            (json!(600), 600, 600),
            (json!(999), 999, 999),
            (json!(1000), 500, 1000),
        ] {
            let (e, s) = answered(json!({"code": given, "message": "m"}));
            assert_eq!(e.code, http, "{given}");
            assert_eq!(s["code"], body, "{given}");
        }
    }

    /// Without a message the reason says why; without either, kube's "without explanation". An
    /// empty or `Success` status is a `Failure`; another is kept.
    #[test]
    fn a_denial_without_a_message() {
        let (e, s) = answered(json!({"reason": "Forbidden", "code": 403}));
        assert_eq!(
            e.message,
            "admission webhook \"check.example.com\" denied the request: Forbidden"
        );
        assert_eq!(s["reason"], "Forbidden");
        let (e, s) = answered(json!({}));
        assert_eq!(
            e.message,
            "admission webhook \"check.example.com\" denied the request without explanation"
        );
        assert_eq!(
            s.to_string(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "admission webhook \"check.example.com\" denied the request without explanation",
                "code": 400})
            .to_string()
        );
        let e = denied("check.example.com", None);
        assert_eq!(e.to_status()["message"], s["message"]);
        assert_eq!(e.to_status()["code"], 400);
        let (_, s) = answered(json!({"status": "Success"}));
        assert_eq!(s["status"], "Failure");
        let (_, s) = answered(json!({"status": "Odd"}));
        assert_eq!(s["status"], "Odd");
        // `details: null` is no details.
        let (_, s) = answered(json!({"details": null}));
        assert!(s.get("details").is_none(), "{s}");
        let (_, s) = answered(json!({"details": {}}));
        assert_eq!(s["details"], json!({}));
    }

    /// client-go's request URL: the call's timeout in the query, the path cleaned and escaped
    /// as Go's `path.Join` and `URL.EscapedPath` leave it.
    #[test]
    fn webhooks_are_called_with_the_timeout_in_the_url() {
        for (configured, called) in [
            (
                "https://127.0.0.1:8443/validate",
                "https://127.0.0.1:8443/validate?timeout=10s",
            ),
            (
                "https://hooks.example.com",
                "https://hooks.example.com/?timeout=10s",
            ),
            (
                "https://svc.ns.svc:443/a//b/./c/../d/",
                "https://svc.ns.svc:443/a/b/d?timeout=10s",
            ),
            ("https://h/p?", "https://h/p?timeout=10s"),
            (
                "https://h/a%20b/x!(y)",
                "https://h/a%20b/x%21%28y%29?timeout=10s",
            ),
            (
                "https://h/$&+,:;=@-_.~",
                "https://h/$&+,:;=@-_.~?timeout=10s",
            ),
            ("HTTPS://[::1]:9/v", "https://[::1]:9/v?timeout=10s"),
        ] {
            assert_eq!(call_url(configured, 10), called, "{configured}");
        }
        assert_eq!(call_url("https://h/v", 30), "https://h/v?timeout=30s");
        assert_eq!(call_url("nonsense", 10), "nonsense");
    }

    /// kube calls a webhook under the request's context with `timeoutSeconds` on top: the
    /// sooner deadline ends the call, and `?timeout=` is what is left, rounded up to seconds.
    #[test]
    fn a_call_gets_no_more_than_what_is_left_of_the_request() {
        let now = tokio::time::Instant::now();
        let (ms, secs) = (Duration::from_millis, Duration::from_secs);
        // No request deadline (the host's own writes): the webhook's timeout.
        let b = Budget::of(secs(10), None, now).unwrap();
        assert_eq!(
            (b.limit, b.by_request, b.url_seconds()),
            (secs(10), false, 10)
        );
        // A request with a minute left: the webhook's timeout.
        let b = Budget::of(secs(10), Some(now + secs(60)), now).unwrap();
        assert_eq!(
            (b.limit, b.by_request, b.url_seconds()),
            (secs(10), false, 10)
        );
        // `?timeout=2s`: two seconds, and the webhook is told so.
        let b = Budget::of(secs(10), Some(now + secs(2)), now).unwrap();
        assert_eq!((b.limit, b.by_request, b.url_seconds()), (secs(2), true, 2));
        // Part of a second left over is a whole one in the URL (Go rounds up).
        let b = Budget::of(secs(10), Some(now + ms(1_500)), now).unwrap();
        assert_eq!(
            (b.limit, b.by_request, b.url_seconds()),
            (ms(1_500), true, 2)
        );
        let b = Budget::of(secs(10), Some(now + ms(1)), now).unwrap();
        assert_eq!(b.url_seconds(), 1);
        // Both end together: the request's deadline is what the client sees.
        let b = Budget::of(secs(10), Some(now + secs(10)), now).unwrap();
        assert!(b.by_request);
        // Nothing left: no call.
        assert_eq!(Budget::of(secs(10), Some(now), now), None);
        assert_eq!(Budget::of(secs(10), Some(now), now + secs(1)), None);
    }

    /// A `service` reference is called at `https://NAME.NAMESPACE.svc:PORT/PATH`; resolving it
    /// fails with kube's endpoint resolver's words.
    #[tokio::test]
    async fn service_references_resolve_as_kubes_endpoint_resolver() {
        use crate::model::ObjectKey;
        let (store, dir) = crate::store::sled_store::temp_store("webhook-service");
        let cc = json!({"service": {"namespace": "hooks", "name": "checker", "port": 8443,
                                    "path": "/validate"}});
        let (url, target) = client_target(&cc).unwrap();
        assert_eq!(url, "https://checker.hooks.svc:8443/validate");
        let target = target.unwrap();
        let (url, none) = client_target(&json!({"url": "https://h/v"})).unwrap();
        assert_eq!((url.as_str(), none), ("https://h/v", None));
        let (url, _) = client_target(&json!({"service": {"namespace": "n", "name": "s"}})).unwrap();
        assert_eq!(call_url(&url, 10), "https://s.n.svc:443/?timeout=10s");
        assert_eq!(
            client_target(&json!({})).unwrap_err().to_string(),
            "webhook configuration must have either service or URL"
        );

        assert_eq!(
            target.resolve(&*store).unwrap_err(),
            "service \"checker\" not found"
        );
        let put = |key: ObjectKey, value: Value| {
            let store = store.clone();
            async move {
                if store.get(&key).is_some() {
                    store
                        .write(crate::store::WriteOp::Put {
                            key,
                            value,
                            precondition: crate::store::Precondition::Exists,
                        })
                        .await
                        .unwrap();
                } else {
                    store.create(key, value).await.map_err(|(e, _)| e).unwrap();
                }
            }
        };
        let service = |kind: &str, port: u64| {
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "checker", "namespace": "hooks"},
                   "spec": {"type": kind, "ports": [{"name": "https", "port": port}]}})
        };
        let svc_key = || ObjectKey::new("services", "hooks", "checker");
        put(svc_key(), service("ExternalName", 8443)).await;
        assert_eq!(
            target.resolve(&*store).unwrap_err(),
            "unsupported service type \"ExternalName\""
        );
        put(svc_key(), service("ClusterIP", 443)).await;
        assert_eq!(
            target.resolve(&*store).unwrap_err(),
            "no service port 8443 found for service \"checker\""
        );
        put(svc_key(), service("NodePort", 8443)).await;
        assert_eq!(
            target.resolve(&*store).unwrap_err(),
            "no endpoints available for service \"checker\""
        );
        let slice = |ready: bool| {
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "checker-abc", "namespace": "hooks",
                                "labels": {"kubernetes.io/service-name": "checker"}},
                   "addressType": "IPv4",
                   "ports": [{"name": "https", "port": 9443}],
                   "endpoints": [{"addresses": ["10.0.0.7"], "conditions": {"ready": ready}}]})
        };
        let slice_key =
            || ObjectKey::new("endpointslices.discovery.k8s.io", "hooks", "checker-abc");
        put(slice_key(), slice(false)).await;
        assert_eq!(
            target.resolve(&*store).unwrap_err(),
            "no endpoints available for service \"checker\""
        );
        put(slice_key(), slice(true)).await;
        assert_eq!(
            target.resolve(&*store).unwrap(),
            "10.0.0.7:9443".parse::<std::net::SocketAddr>().unwrap()
        );
        drop(store);
        let _ = std::fs::remove_dir_all(dir);
    }
}
