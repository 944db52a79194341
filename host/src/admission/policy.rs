//! ValidatingAdmissionPolicy + ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1),
//! as kube's `admission/plugin/policy/validating` evaluates them: the policy's
//! `matchConstraints`, each binding's `matchResources`, params (`paramKind` + `paramRef`),
//! `matchConditions`, `variables`, `validations` (message, messageExpression, reason) and the
//! binding's `validationActions` (Deny, Warn; Audit has no audit log to go to here).
//!
//! A policy's expressions are compiled once per (uid, generation) and kept until the policy
//! changes or goes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{matching, Context, Request};
use crate::model::meta;
use crate::model::ApiError;
use crate::schema::cel_authz;
use crate::schema::expr::{self, CelData, Expression, LazyVar, Var};
use crate::schema::{PER_CALL_LIMIT, RUNTIME_COST_BUDGET};

const POLICIES: &str = "validatingadmissionpolicies";
const BINDINGS: &str = "validatingadmissionpolicybindings";
/// Most objects a `paramRef.selector` may bring to one binding's evaluation.
const MAX_PARAMS: usize = 1_000;
/// kube's `celconfig.MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// One compiled expression (or why it does not compile).
#[derive(Debug)]
pub(super) struct Compiled {
    pub(super) source: String,
    pub(super) expr: Result<Expression, String>,
}

impl Compiled {
    pub(super) fn new(source: &str) -> Self {
        Self {
            source: source.to_owned(),
            expr: Expression::compile(source).map_err(|e| format!("compilation failed: {e}")),
        }
    }

    /// A `messageExpression`: compiled, as kube does, without the `authorizer` variable.
    fn message(source: &str) -> Self {
        let mut c = Self::new(source);
        if c.references("authorizer") || c.references(cel_authz::REQUEST_RESOURCE) {
            c.expr = Err("compilation failed: ERROR: <input>: undeclared reference to 'authorizer' (in container '')".to_owned());
        }
        c
    }

    /// An expression of a MutatingAdmissionPolicy's mutation (object and JSONPatch literals).
    pub(super) fn mutation(source: &str) -> Self {
        Self {
            source: source.to_owned(),
            expr: Expression::compile_mutation(source)
                .map_err(|e| format!("compilation failed: {e}")),
        }
    }

    /// Whether the expression names variable `name` (one that does not compile names none).
    pub(super) fn references(&self, name: &str) -> bool {
        self.expr.as_ref().is_ok_and(|e| e.references(name))
    }
}

#[derive(Debug)]
struct Validation {
    expr: Compiled,
    message: Option<String>,
    message_expr: Option<Compiled>,
    reason: Option<String>,
}

/// A policy with its expressions compiled.
#[derive(Debug)]
pub(crate) struct Policy {
    uid: String,
    generation: i64,
    name: String,
    spec: Value,
    fail: bool,
    match_conditions: Vec<(String, Compiled)>,
    variables: Vec<(String, Compiled)>,
    validations: Vec<Validation>,
    /// `auditAnnotations`: (key, valueExpression).
    audit_annotations: Vec<(String, Compiled)>,
}

impl Policy {
    fn compile(obj: &Value) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let items = |f: &str| {
            spec.get(f)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let text = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).map(str::to_owned);
        let match_conditions = items("matchConditions")
            .iter()
            .map(|c| {
                (
                    text(c, "name").unwrap_or_default(),
                    Compiled::new(&text(c, "expression").unwrap_or_default()),
                )
            })
            .collect();
        let variables = items("variables")
            .iter()
            .map(|c| {
                (
                    text(c, "name").unwrap_or_default(),
                    Compiled::new(&text(c, "expression").unwrap_or_default()),
                )
            })
            .collect();
        let validations = items("validations")
            .iter()
            .map(|v| Validation {
                expr: Compiled::new(&text(v, "expression").unwrap_or_default()),
                message: text(v, "message"),
                message_expr: text(v, "messageExpression").map(|m| Compiled::message(&m)),
                reason: text(v, "reason"),
            })
            .collect();
        let audit_annotations = items("auditAnnotations")
            .iter()
            .map(|a| {
                (
                    text(a, "key").unwrap_or_default(),
                    Compiled::new(&text(a, "valueExpression").unwrap_or_default()),
                )
            })
            .collect();
        Self {
            uid: meta::meta_str(obj, "uid").unwrap_or("").to_owned(),
            generation: obj
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            name: meta::name(obj).to_owned(),
            fail: spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
            spec,
            match_conditions,
            variables,
            validations,
            audit_annotations,
        }
    }
}

impl Policy {
    /// A policy that could not be compiled at all: every evaluation is an error.
    fn unusable(obj: &Value, err: String) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        Self {
            uid: String::new(),
            generation: -1,
            name: meta::name(obj).to_owned(),
            fail: spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
            spec,
            match_conditions: Vec::new(),
            variables: Vec::new(),
            validations: vec![Validation {
                expr: Compiled {
                    source: String::new(),
                    expr: Err(err),
                },
                message: None,
                message_expr: None,
                reason: None,
            }],
            audit_annotations: Vec::new(),
        }
    }

    /// Whether any expression names variable `name` (else its value is never converted).
    fn references(&self, name: &str) -> bool {
        self.match_conditions
            .iter()
            .any(|(_, c)| c.references(name))
            || self.variables.iter().any(|(_, c)| c.references(name))
            || self
                .audit_annotations
                .iter()
                .any(|(_, c)| c.references(name))
            || self.validations.iter().any(|v| {
                v.expr.references(name)
                    || v.message_expr.as_ref().is_some_and(|m| m.references(name))
            })
    }

    /// Whether any expression has a comprehension (only then can an evaluation take long).
    fn loops(&self) -> bool {
        let l = |c: &Compiled| c.expr.as_ref().is_ok_and(Expression::loops);
        self.match_conditions.iter().any(|(_, c)| l(c))
            || self.variables.iter().any(|(_, c)| l(c))
            || self.audit_annotations.iter().any(|(_, c)| l(c))
            || self
                .validations
                .iter()
                .any(|v| l(&v.expr) || v.message_expr.as_ref().is_some_and(l))
    }

    /// Whether every expression can be evaluated on the caller's stack.
    fn shallow(&self) -> bool {
        let ok = |c: &Compiled| c.expr.as_ref().map_or(true, Expression::shallow);
        self.match_conditions.iter().all(|(_, c)| ok(c))
            && self.variables.iter().all(|(_, c)| ok(c))
            && self.audit_annotations.iter().all(|(_, c)| ok(c))
            && self
                .validations
                .iter()
                .all(|v| ok(&v.expr) && v.message_expr.as_ref().is_none_or(ok))
    }
}

/// Compiled policies by name.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    compiled: Mutex<HashMap<String, Arc<Policy>>>,
}

impl Cache {
    /// The compiled form of a stored policy, compiling it if it is new or changed.
    fn get(&self, obj: &Value) -> Arc<Policy> {
        let name = meta::name(obj);
        let uid = meta::meta_str(obj, "uid").unwrap_or("");
        let generation = obj
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if let Ok(map) = self.compiled.lock() {
            if let Some(p) = map.get(name) {
                if p.uid == uid && p.generation == generation {
                    return p.clone();
                }
            }
        }
        // The parser recurses: compile on a big stack.
        let p = match expr::run_on_big_stack(|| Policy::compile(obj)) {
            Ok(p) => Arc::new(p),
            Err(e) => return Arc::new(Policy::unusable(obj, e)),
        };
        if let Ok(mut map) = self.compiled.lock() {
            map.insert(name.to_owned(), p.clone());
        }
        p
    }

    /// Forget compiled policies that are no longer stored.
    fn retain(&self, names: &[&str]) {
        if let Ok(mut map) = self.compiled.lock() {
            if map.len() > names.len() {
                map.retain(|k, _| names.contains(&k.as_str()));
            }
        }
    }
}

/// One decision that denies (or warns).
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

/// Run every matching policy and binding; `Err` is the first denial, as kube reports it.
pub(crate) async fn validate(
    ctx: &Context<'_>,
    cache: &Cache,
    req: &Request<'_>,
    object: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let bindings = ctx.configs(BINDINGS);
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    let policies = ctx.configs(POLICIES);
    let names: Vec<&str> = policies.iter().map(|p| meta::name(p.head())).collect();
    cache.retain(&names);
    if policies.is_empty() {
        return Ok(Vec::new());
    }
    let mut denied: Vec<Denial> = Vec::new();
    let mut warnings = Vec::new();
    // Audit annotations by key (`policy/key`), and the failures of `Audit` bindings.
    let mut annotations: Vec<(String, Vec<String>)> = Vec::new();
    let mut failures: Vec<Value> = Vec::new();
    for stored in &policies {
        let policy = cache.get(stored.value());
        let constraints = policy.spec.get("matchConstraints");
        let config_error = |denied: &mut Vec<Denial>, binding: Option<&str>, err: String| {
            if policy.fail {
                let message = match binding {
                    None => format!("failed to configure policy: {err}"),
                    Some(_) => format!("failed to configure binding: {err}"),
                };
                denied.push(Denial {
                    policy: policy.name.clone(),
                    binding: binding.map(str::to_owned),
                    message,
                    reason: String::new(),
                });
            }
        };
        let matched = match matching::resources_match(ctx, constraints, req, object) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => {
                config_error(&mut denied, None, e);
                continue;
            }
        };
        // A policy must name the resources it matches.
        if constraints
            .and_then(|c| c.get("resourceRules"))
            .and_then(Value::as_array)
            .is_none_or(|r| r.is_empty())
        {
            continue;
        }
        for b in &bindings {
            let bspec = b.value().get("spec").cloned().unwrap_or(Value::Null);
            if bspec.get("policyName").and_then(Value::as_str) != Some(policy.name.as_str()) {
                continue;
            }
            let bname = meta::name(b.head()).to_owned();
            match matching::resources_match(ctx, bspec.get("matchResources"), req, object) {
                Ok(Some(_)) => {}
                Ok(None) => continue,
                Err(e) => {
                    config_error(&mut denied, Some(&bname), e);
                    continue;
                }
            }
            let params = match collect_params(ctx, &policy.spec, &bspec, req) {
                Ok(p) => p,
                Err(e) => {
                    config_error(&mut denied, Some(&bname), e);
                    continue;
                }
            };
            let actions: Vec<&str> = bspec
                .get("validationActions")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            // The policy sees the write in the version its constraints matched (kube's
            // versioned attributes); a conversion that fails is the request's error.
            let versioned = ctx.versioned(req, &matched, object).await?;
            let outcome = match &versioned {
                Some(v) => evaluate(ctx, &policy, &v.request(req), v.object.as_ref(), &params),
                None => evaluate(ctx, &policy, req, object, &params),
            };
            for (key, value) in outcome.annotations {
                let key = format!("{}/{key}", policy.name);
                match annotations.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, values)) if !values.contains(&value) => values.push(value),
                    Some(_) => {}
                    None => annotations.push((key, vec![value])),
                }
            }
            for d in outcome.decisions {
                if d.always_deny {
                    denied.push(Denial {
                        policy: policy.name.clone(),
                        binding: Some(bname.clone()),
                        message: d.message,
                        reason: d.reason,
                    });
                    continue;
                }
                for action in &actions {
                    match *action {
                        "Deny" => denied.push(Denial {
                            policy: policy.name.clone(),
                            binding: Some(bname.clone()),
                            message: d.message.clone(),
                            reason: d.reason.clone(),
                        }),
                        "Warn" => warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                            policy.name, bname, d.message
                        )),
                        "Audit" => failures.push(serde_json::json!({
                            "message": d.message, "policy": policy.name,
                            "binding": bname, "expressionIndex": d.index,
                            "validationActions": actions,
                        })),
                        _ => {}
                    }
                }
            }
        }
    }
    audit(req, &annotations, &failures);
    if let Some(d) = denied.into_iter().next() {
        let message = match &d.binding {
            Some(b) => format!(
                "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
                d.policy, b, d.message
            ),
            None => format!(
                "ValidatingAdmissionPolicy '{}' denied request: {}",
                d.policy, d.message
            ),
        };
        return Err(req.forbidden(object, message, &d.reason));
    }
    Ok(warnings)
}

/// turtles has no audit log: what kube adds to the request's audit event (the audit annotations
/// under `policy/key`, and `validation.policy.admission.k8s.io/validation_failure` for the
/// failures of `Audit` bindings) goes to the host's log, target `turtles::audit`.
fn audit(req: &Request<'_>, annotations: &[(String, Vec<String>)], failures: &[Value]) {
    if annotations.is_empty() && failures.is_empty() {
        return;
    }
    let user = req.user.name.as_str();
    for (key, values) in annotations {
        tracing::info!(target: "turtles::audit", user, verb = req.operation.as_str(),
            resource = %req.ri.resource, namespace = req.namespace, name = req.name,
            annotation = %key, value = %values.join(", "), "audit annotation");
    }
    if !failures.is_empty() {
        tracing::info!(target: "turtles::audit", user, verb = req.operation.as_str(),
            resource = %req.ri.resource, namespace = req.namespace, name = req.name,
            annotation = "validation.policy.admission.k8s.io/validation_failure",
            value = %serde_json::Value::Array(failures.to_vec()), "audit annotation");
    }
}

/// The params a binding evaluates its policy with: `[None]` without a `paramKind`, else the
/// objects its `paramRef` names (possibly none).
pub(super) fn collect_params(
    ctx: &Context<'_>,
    spec: &Value,
    bspec: &Value,
    req: &Request<'_>,
) -> Result<Vec<Option<Value>>, String> {
    let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) else {
        return Ok(vec![None]);
    };
    let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind_name = kind.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let ri = ctx
        .registry
        .lookup_kind(group, version, kind_name)
        .filter(|r| r.version == version)
        .ok_or_else(|| {
            format!("failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind_name}'")
        })?;
    let Some(pref) = bspec.get("paramRef").filter(|p| !p.is_null()) else {
        return Err(format!(
            "paramKind kind `{api_version}, Kind={kind_name}` is defined but paramRef is not set"
        ));
    };
    let name = pref.get("name").and_then(Value::as_str).unwrap_or("");
    let mut namespace = pref
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if ri.namespaced() && namespace.is_empty() {
        if req.namespace.is_empty() {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .into(),
            );
        }
        namespace = req.namespace.to_owned();
    }
    if !ri.namespaced() {
        namespace.clear();
    }
    let mut found: Vec<Option<Value>> = Vec::new();
    if !name.is_empty() {
        let key = crate::model::ObjectKey::new(&ri.group_resource(), &namespace, name);
        if let Some(o) = ctx.store.get(&key) {
            found.push(Some(o.value().clone()));
        }
    } else {
        let sel = matching::selector(pref.get("selector"))?;
        let snap = ctx
            .store
            .list(&ri.group_resource(), None)
            .map_err(|e| e.to_string())?;
        for o in snap.items.values() {
            if meta::namespace(o.head()) == namespace
                && sel.matches(|k| meta::Meta::label(o.head(), k))
            {
                if found.len() >= MAX_PARAMS {
                    return Err(format!("more than {MAX_PARAMS} params match paramRef"));
                }
                found.push(Some(o.parse().into_owned()));
            }
        }
    }
    if found.is_empty() {
        return match pref.get("parameterNotFoundAction").and_then(Value::as_str) {
            Some("Deny") => {
                Err("no params found for policy binding with `Deny` parameterNotFoundAction".into())
            }
            _ => Ok(Vec::new()),
        };
    }
    Ok(found)
}

/// A failed validation.
struct Decision {
    message: String,
    reason: String,
    /// An audit annotation that failed: kube denies whatever the binding's actions are.
    always_deny: bool,
    /// The validation's index (for an `Audit` binding's failure record).
    index: usize,
}

/// kube's `maxAuditAnnotationValueLength`.
const MAX_AUDIT_VALUE_BYTES: usize = 10 * 1024;

/// What one policy evaluation found.
#[derive(Default)]
struct Outcome {
    decisions: Vec<Decision>,
    /// Audit annotations to publish: (key, value).
    annotations: Vec<(String, String)>,
}

/// Evaluate the policy once per param; the denials (failed validations, and errors under
/// `failurePolicy: Fail`).
fn evaluate(
    ctx: &Context<'_>,
    policy: &Policy,
    req: &Request<'_>,
    object: Option<&Value>,
    params: &[Option<Value>],
) -> Outcome {
    if params.is_empty() {
        return Outcome::default();
    }
    // Only what the policy's expressions name is built and converted for them.
    let ns_obj = if !policy.references("namespaceObject")
        || req.namespace.is_empty()
        || (req.ri.group.is_empty() && req.ri.resource == "namespaces")
    {
        None
    } else {
        ctx.namespace(req.namespace)
            .map(|n| namespace_object(n.value()))
    };
    let request = if policy.references("request") {
        req.to_json("")
    } else {
        Value::Null
    };
    let authorizer = ctx.authorizer_vars(req, |name| policy.references(name));
    let run = || {
        let mut out = Outcome::default();
        for p in params {
            evaluate_one(
                policy,
                req,
                object,
                p.as_ref(),
                ns_obj.as_ref(),
                &request,
                &authorizer,
                &mut out,
            );
        }
        out
    };
    // Shallow expressions run here; deep ones on a thread with a big stack.
    // Shallow and loop-free (the usual policy): here, at once; one that may take long, off
    // the async workers.
    if policy.shallow() && !policy.loops() {
        return run();
    }
    if policy.shallow() {
        return expr::off_the_workers(run);
    }
    expr::run_on_big_stack(run).unwrap_or_else(|e| Outcome {
        decisions: policy
            .fail
            .then(|| Decision {
                message: e,
                reason: String::new(),
                always_deny: false,
                index: 0,
            })
            .into_iter()
            .collect(),
        annotations: Vec::new(),
    })
}

/// kube's `CreateNamespaceObject`: the namespace's metadata (without managed fields), spec and
/// status.
pub(super) fn namespace_object(ns: &Value) -> Value {
    let mut n = ns.clone();
    if let Some(m) = n.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    n
}

#[allow(clippy::too_many_arguments)]
fn evaluate_one(
    policy: &Policy,
    req: &Request<'_>,
    object: Option<&Value>,
    param: Option<&Value>,
    ns_obj: Option<&Value>,
    request: &Value,
    authorizer: &[CelData; 2],
    out: &mut Outcome,
) {
    // Converted for the interpreter only as far as the expressions use them.
    let object_v = LazyVar::new(object);
    let old_v = LazyVar::new(req.old_object);
    let params_v = LazyVar::new(param);
    let ns_v = LazyVar::new(ns_obj);
    let request_v = LazyVar::new(Some(request));
    let max_coll = [object, req.old_object, param]
        .into_iter()
        .flatten()
        .map(expr::largest_collection)
        .max()
        .unwrap_or(0);
    let mut budget = RUNTIME_COST_BUDGET;
    let mut variables: HashMap<String, CelData> = HashMap::new();
    let fail = |out: &mut Outcome, message: String| {
        if policy.fail {
            out.decisions.push(Decision {
                message,
                reason: String::new(),
                always_deny: false,
                index: 0,
            });
        }
    };
    // Evaluate one compiled expression within the budget.
    let mut eval = |c: &Compiled,
                    variables: &HashMap<String, CelData>|
     -> Result<CelData, String> {
        let e = c.expr.as_ref().map_err(Clone::clone)?;
        let cost = e.cost(max_coll);
        if cost > PER_CALL_LIMIT {
            return Err(format!(
                "expression '{}' resulted in error: operation cancelled: actual cost limit exceeded",
                c.source
            ));
        }
        if cost > budget {
            return Err("validation failed due to running out of cost budget, no further validation rules will be run".into());
        }
        budget -= cost;
        let vars_v = if e.references("variables") {
            variables_value(variables)
        } else {
            CelData::Null
        };
        e.eval_lazy(&[
            ("object", object_v.var()),
            ("oldObject", old_v.var()),
            ("params", params_v.var()),
            ("namespaceObject", ns_v.var()),
            ("request", request_v.var()),
            ("variables", Var::Cel(&vars_v)),
            ("authorizer", Var::Cel(&authorizer[0])),
            (cel_authz::REQUEST_RESOURCE, Var::Cel(&authorizer[1])),
        ])
        .map_err(|err| format!("expression '{}' resulted in error: {err}", c.source))
    };
    for (_, c) in &policy.match_conditions {
        match eval(c, &variables) {
            Ok(CelData::Bool(true)) => {}
            Ok(CelData::Bool(false)) => return,
            Ok(_) => {
                return fail(
                    out,
                    format!(
                        "expression '{}' resulted in error: no such overload",
                        c.source
                    ),
                )
            }
            Err(e) => return fail(out, e),
        }
    }
    for (name, c) in &policy.variables {
        // A variable that fails is left out: a validation that uses it fails with its error.
        if let Ok(v) = eval(c, &variables) {
            variables.insert(name.clone(), v);
        }
    }
    for (index, v) in policy.validations.iter().enumerate() {
        match eval(&v.expr, &variables) {
            Ok(CelData::Bool(true)) => {}
            Ok(_) => {
                let mut message = String::new();
                if let Some(m) = &v.message_expr {
                    if let Ok(r) = eval(m, &variables) {
                        if let Some(s) = expr::as_string(&r) {
                            let s = s.trim();
                            if s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n') {
                                message = s.to_owned();
                            }
                        }
                    }
                }
                if message.is_empty() {
                    if let Some(m) = v
                        .message
                        .as_deref()
                        .map(str::trim)
                        .filter(|m| !m.is_empty())
                    {
                        message = m.to_owned();
                    }
                }
                if message.is_empty() {
                    message = format!("failed expression: {}", v.expr.source.trim());
                }
                out.decisions.push(Decision {
                    message,
                    reason: v.reason.clone().unwrap_or_default(),
                    always_deny: false,
                    index,
                });
            }
            Err(e) => fail(out, e),
        }
    }
    // kube's audit annotations: a string (trimmed, not empty) is published, null is not; an
    // error denies under `failurePolicy: Fail`, a result of another type always.
    for (key, c) in &policy.audit_annotations {
        let error = match eval(c, &variables) {
            Ok(CelData::Null) => continue,
            Ok(v) => match expr::as_string(&v) {
                Some(s) => {
                    let s = s.trim();
                    if !s.is_empty() {
                        let mut end = s.len().min(MAX_AUDIT_VALUE_BYTES);
                        while !s.is_char_boundary(end) {
                            end -= 1;
                        }
                        out.annotations.push((key.clone(), s[..end].to_owned()));
                    }
                    continue;
                }
                None => format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    c.source,
                    expr::type_name(&v)
                ),
            },
            Err(e) if policy.fail => e,
            Err(_) => continue,
        };
        out.decisions.push(Decision {
            message: error,
            reason: String::new(),
            always_deny: true,
            index: 0,
        });
    }
    let _ = req;
}

pub(super) fn variables_value(vars: &HashMap<String, CelData>) -> CelData {
    let m: serde_json::Map<String, Value> = serde_json::Map::new();
    let mut base = expr::json_to_cel(&Value::Object(m));
    if let CelData::Map(map) = &mut base {
        let inner = Arc::make_mut(&mut map.map);
        for (k, v) in vars {
            inner.insert(
                kube_cel::cel::objects::Key::String(Arc::new(k.clone())),
                v.clone(),
            );
        }
    }
    base
}

#[cfg(test)]
mod tests;
