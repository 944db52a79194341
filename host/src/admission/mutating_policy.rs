//! MutatingAdmissionPolicy + MutatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1),
//! as kube's `admission/plugin/policy/mutating` applies them: the policy's `matchConstraints`,
//! each binding's `matchResources`, params (`paramKind` + `paramRef`), `matchConditions`,
//! `variables`, then the `mutations` in order: `ApplyConfiguration` (a CEL object literal merged
//! into the object with server-side apply's merge rules, atomic fields refused) and `JSONPatch`
//! (a CEL list of `JSONPatch{op, path, from, value}`), with `reinvocationPolicy` and
//! `failurePolicy`.
//!
//! Matching and params are the ValidatingAdmissionPolicy machinery's (`policy.rs`); a policy's
//! expressions are compiled once per (uid, generation).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::policy::{self, Compiled};
use super::{matching, Context, Request};
use crate::model::{meta, ApiError, Cause};
use crate::schema::cel_authz;
use crate::schema::expr::{self, CelData, Var};
use crate::schema::{PER_CALL_LIMIT, RUNTIME_COST_BUDGET};

const POLICIES: &str = "mutatingadmissionpolicies";
const BINDINGS: &str = "mutatingadmissionpolicybindings";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchType {
    Apply,
    Json,
}

#[derive(Debug)]
struct Mutation {
    patch_type: Result<PatchType, String>,
    expr: Compiled,
}

/// A policy with its expressions compiled.
#[derive(Debug)]
pub(crate) struct Policy {
    uid: String,
    generation: i64,
    name: String,
    spec: Value,
    fail: bool,
    if_needed: bool,
    match_conditions: Vec<Compiled>,
    variables: Vec<(String, Compiled)>,
    mutations: Vec<Mutation>,
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
            .map(|c| Compiled::new(&text(c, "expression").unwrap_or_default()))
            .collect();
        let variables = items("variables")
            .iter()
            .map(|c| {
                (
                    text(c, "name").unwrap_or_default(),
                    Compiled::mutation(&text(c, "expression").unwrap_or_default()),
                )
            })
            .collect();
        let mutations = items("mutations")
            .iter()
            .map(|m| {
                let (patch_type, field) = match m.get("patchType").and_then(Value::as_str) {
                    Some("ApplyConfiguration") => (Ok(PatchType::Apply), "applyConfiguration"),
                    Some("JSONPatch") => (Ok(PatchType::Json), "jsonPatch"),
                    other => (
                        Err(format!("unsupported patch type: {}", other.unwrap_or(""))),
                        "",
                    ),
                };
                let src = m
                    .get(field)
                    .and_then(|f| f.get("expression"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                Mutation {
                    patch_type,
                    expr: Compiled::mutation(src),
                }
            })
            .collect();
        Self {
            uid: meta::meta_str(obj, "uid").unwrap_or("").to_owned(),
            generation: generation(obj),
            name: meta::name(obj).to_owned(),
            fail: spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
            if_needed: spec.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded"),
            spec,
            match_conditions,
            variables,
            mutations,
        }
    }

    /// A policy that could not be compiled at all: every evaluation is an error.
    fn unusable(obj: &Value, err: String) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        Self {
            uid: String::new(),
            generation: -1,
            name: meta::name(obj).to_owned(),
            fail: spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
            if_needed: false,
            spec,
            match_conditions: Vec::new(),
            variables: Vec::new(),
            mutations: vec![Mutation {
                patch_type: Err(err),
                expr: Compiled {
                    source: String::new(),
                    expr: Err(String::new()),
                },
            }],
        }
    }

    /// Whether any expression names variable `name` (else its value is never converted).
    fn references(&self, name: &str) -> bool {
        self.match_conditions.iter().any(|c| c.references(name))
            || self.variables.iter().any(|(_, c)| c.references(name))
            || self.mutations.iter().any(|m| m.expr.references(name))
    }

    /// Whether any expression has a comprehension (only then can an evaluation take long).
    fn loops(&self) -> bool {
        let l = |c: &Compiled| c.expr.as_ref().is_ok_and(expr::Expression::loops);
        self.match_conditions.iter().any(l)
            || self.variables.iter().any(|(_, c)| l(c))
            || self.mutations.iter().any(|m| l(&m.expr))
    }

    fn shallow(&self) -> bool {
        let ok = |c: &Compiled| c.expr.as_ref().map_or(true, expr::Expression::shallow);
        self.match_conditions.iter().all(ok)
            && self.variables.iter().all(|(_, c)| ok(c))
            && self.mutations.iter().all(|m| ok(&m.expr))
    }
}

fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Compiled policies by name.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    compiled: Mutex<HashMap<String, Arc<Policy>>>,
}

impl Cache {
    fn get(&self, obj: &Value) -> Arc<Policy> {
        let name = meta::name(obj);
        let uid = meta::meta_str(obj, "uid").unwrap_or("");
        if let Ok(map) = self.compiled.lock() {
            if let Some(p) = map.get(name) {
                if p.uid == uid && p.generation == generation(obj) {
                    return p.clone();
                }
            }
        }
        let p = match expr::run_on_big_stack(|| Policy::compile(obj)) {
            Ok(p) => Arc::new(p),
            Err(e) => return Arc::new(Policy::unusable(obj, e)),
        };
        if let Ok(mut map) = self.compiled.lock() {
            map.insert(name.to_owned(), p.clone());
        }
        p
    }

    fn retain(&self, names: &[&str]) {
        if let Ok(mut map) = self.compiled.lock() {
            if map.len() > names.len() {
                map.retain(|k, _| names.contains(&k.as_str()));
            }
        }
    }
}

/// An invocation: policy, binding and param (namespace/name), kube's reinvocation key.
type Key = (String, String, String);

/// What one request's mutating phase remembers between the first pass and the reinvocation
/// (kube's `policyReinvokeContext`).
#[derive(Debug, Default)]
pub(crate) struct Round {
    /// `IfNeeded` invocations made so far.
    previously: Vec<Key>,
    /// Invocations to call again in the reinvocation pass.
    requested: HashSet<Key>,
    /// The object as the last pass left it.
    last_output: Option<Value>,
    /// Whether a policy changed the object (the chain is then reinvoked).
    pub(crate) changed: bool,
}

impl Round {
    /// Whether an `IfNeeded` invocation ran (only those are reinvoked).
    pub(crate) fn reinvocable(&self) -> bool {
        !self.previously.is_empty()
    }
}

/// An error of one invocation (under `failurePolicy: Fail`).
struct PolicyError {
    policy: String,
    binding: Option<String>,
    message: String,
    /// `Invalid` for evaluation errors, empty for configuration errors (kube's reasons).
    reason: &'static str,
}

/// One pass over the matching policies, mutating `object`. `reinvoke`: the reinvocation pass
/// (only the `IfNeeded` invocations asked for run).
pub(crate) async fn mutate(
    ctx: &Context<'_>,
    cache: &Cache,
    req: &Request<'_>,
    object: &mut Value,
    round: &mut Round,
    reinvoke: bool,
) -> Result<(), ApiError> {
    let bindings = ctx.configs(BINDINGS);
    if bindings.is_empty() {
        return Ok(());
    }
    let policies = ctx.configs(POLICIES);
    let names: Vec<&str> = policies.iter().map(|p| meta::name(p.head())).collect();
    cache.retain(&names);
    if policies.is_empty() {
        return Ok(());
    }
    if reinvoke && round.last_output.as_ref() != Some(&*object) {
        // Changed since this plugin last ran (by webhooks): every IfNeeded invocation again.
        round.requested.extend(round.previously.iter().cloned());
    }
    let mut errors: Vec<PolicyError> = Vec::new();
    for stored in &policies {
        let policy = cache.get(stored.value());
        let constraints = policy.spec.get("matchConstraints");
        let config_error = |errors: &mut Vec<PolicyError>, binding: Option<&str>, err: String| {
            if policy.fail {
                errors.push(PolicyError {
                    policy: policy.name.clone(),
                    binding: binding.map(str::to_owned),
                    message: match binding {
                        None => format!("failed to configure policy: {err}"),
                        Some(_) => format!("failed to configure binding: {err}"),
                    },
                    reason: "",
                });
            }
        };
        let matched = match matching::resources_match(ctx, constraints, req, Some(&*object)) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => {
                config_error(&mut errors, None, e);
                continue;
            }
        };
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
            match matching::resources_match(ctx, bspec.get("matchResources"), req, Some(&*object)) {
                Ok(Some(_)) => {}
                Ok(None) => continue,
                Err(e) => {
                    config_error(&mut errors, Some(&bname), e);
                    continue;
                }
            }
            let params = match policy::collect_params(ctx, &policy.spec, &bspec, req) {
                Ok(p) => p,
                Err(e) => {
                    config_error(&mut errors, Some(&bname), e);
                    continue;
                }
            };
            for param in params {
                let key: Key = (
                    policy.name.clone(),
                    bname.clone(),
                    param
                        .as_ref()
                        .map(|p| format!("{}/{}", meta::namespace(p), meta::name(p)))
                        .unwrap_or_default(),
                );
                if reinvoke && !round.requested.contains(&key) {
                    continue;
                }
                let before = object.clone();
                // Mutated in the version the constraints matched, then converted back (kube's
                // versioned attributes).
                let result = match ctx.versioned(req, &matched, Some(&*object)).await? {
                    None => invoke(ctx, &policy, req, object, param.as_ref()),
                    Some(v) => {
                        let mut seen = v.object.clone().unwrap_or(Value::Null);
                        let result =
                            invoke(ctx, &policy, &v.request(req), &mut seen, param.as_ref());
                        if Some(&seen) != v.object.as_ref() {
                            *object = ctx.convert(&v.ri, req.ri, &seen).await?;
                        }
                        result
                    }
                };
                match result {
                    Ok(()) => {}
                    Err(message) => {
                        if policy.fail {
                            errors.push(PolicyError {
                                policy: policy.name.clone(),
                                binding: Some(bname.clone()),
                                message,
                                reason: "Invalid",
                            });
                        }
                    }
                }
                if *object != before {
                    round.requested.extend(round.previously.iter().cloned());
                    round.changed = true;
                }
                if policy.if_needed && !round.previously.contains(&key) {
                    round.previously.push(key);
                }
            }
        }
    }
    round.last_output = Some(object.clone());
    if errors.is_empty() {
        return Ok(());
    }
    Err(denial(req, object, errors))
}

/// kube's policy dispatcher error: `admission.NewForbidden` (403, the group/resource and
/// name), its message replaced by the first error, every error a cause.
fn denial(req: &Request<'_>, object: &Value, errors: Vec<PolicyError>) -> ApiError {
    let text = |e: &PolicyError| match &e.binding {
        Some(b) => format!(
            "policy '{}' with binding '{}' denied request: {}",
            e.policy, b, e.message
        ),
        None => format!("policy \"{}\" denied request: {}", e.policy, e.message),
    };
    let first = &errors[0];
    let reason = if first.reason.is_empty() {
        "Forbidden"
    } else {
        first.reason
    };
    let mut name = req.name.to_owned();
    if name.is_empty() {
        name = meta::meta_str(object, "generateName")
            .unwrap_or("")
            .to_owned();
    }
    let causes = errors.iter().map(|e| Cause::new("", "", text(e))).collect();
    ApiError::new(403, reason, text(first))
        .with_details(&req.ri.group, &req.ri.resource, &name)
        .with_causes(causes)
}

/// Run one invocation's mutations in order; the first error ends it.
fn invoke(
    ctx: &Context<'_>,
    policy: &Policy,
    req: &Request<'_>,
    object: &mut Value,
    param: Option<&Value>,
) -> Result<(), String> {
    // Only what the policy's expressions name is built and converted for them.
    let ns_obj = if !policy.references("namespaceObject")
        || req.namespace.is_empty()
        || (req.ri.group.is_empty() && req.ri.resource == "namespaces")
    {
        None
    } else {
        ctx.namespace(req.namespace)
            .map(|n| policy::namespace_object(n.value()))
    };
    let request = if policy.references("request") {
        req.to_json("")
    } else {
        Value::Null
    };
    let authorizer = ctx.authorizer_vars(req, |name| policy.references(name));
    let mut run = || -> Result<(), String> {
        let mut budget = RUNTIME_COST_BUDGET;
        let mut env = Env::new(policy, req, object, param, ns_obj.as_ref(), &request);
        env.authorizer = authorizer.clone();
        for c in &policy.match_conditions {
            match env.eval(c, &mut budget)? {
                CelData::Bool(true) => {}
                CelData::Bool(false) => return Ok(()),
                _ => {
                    return Err(format!(
                        "expression '{}' resulted in error: no such overload",
                        c.source
                    ))
                }
            }
        }
        for (name, c) in &policy.variables {
            // A variable that fails is left out: a mutation that uses it fails with its error.
            if let Ok(v) = env.eval(c, &mut budget) {
                env.variables.insert(name.clone(), v);
            }
        }
        for m in &policy.mutations {
            let patch_type = m.patch_type.clone()?;
            let result = env.eval(&m.expr, &mut budget)?;
            let current = env.object_json.clone();
            let patched = match patch_type {
                PatchType::Apply => apply_configuration(req, &current, &result)?,
                PatchType::Json => json_patch(&current, &result)?,
            };
            if patched != current {
                env.set_object(patched);
            }
        }
        *object = env.object_json;
        Ok(())
    };
    if policy.shallow() && !policy.loops() {
        return run();
    }
    if policy.shallow() {
        return expr::off_the_workers(run);
    }
    expr::run_on_big_stack(run).unwrap_or_else(Err)
}

/// The variables an invocation's expressions see; `object` follows the mutations.
struct Env<'a> {
    /// Whether the policy's expressions name `object` (else it is not converted).
    uses_object: bool,
    req: &'a Request<'a>,
    object_json: Value,
    /// `object_json` converted whole, if an expression needs it so.
    object: std::cell::OnceCell<CelData>,
    old: CelData,
    params: CelData,
    namespace: CelData,
    request: CelData,
    /// `authorizer` and `authorizer.requestResource` (null unless an expression names them).
    authorizer: [CelData; 2],
    max_coll: u64,
    variables: HashMap<String, CelData>,
}

impl<'a> Env<'a> {
    fn new(
        policy: &Policy,
        req: &'a Request<'a>,
        object: &Value,
        param: Option<&Value>,
        ns_obj: Option<&Value>,
        request: &Value,
    ) -> Self {
        let cel = |name: &str, v: Option<&Value>| match v {
            Some(v) if policy.references(name) => expr::json_to_cel(v),
            _ => CelData::Null,
        };
        let mut env = Self {
            uses_object: policy.references("object"),
            req,
            object_json: Value::Null,
            object: std::cell::OnceCell::new(),
            old: cel("oldObject", req.old_object),
            params: cel("params", param),
            namespace: cel("namespaceObject", ns_obj),
            request: cel("request", Some(request)),
            authorizer: [CelData::Null, CelData::Null],
            max_coll: 0,
            variables: HashMap::new(),
        };
        env.set_object(object.clone());
        env
    }

    fn set_object(&mut self, object: Value) {
        self.object = std::cell::OnceCell::new();
        self.max_coll = [Some(&object), self.req.old_object]
            .into_iter()
            .flatten()
            .map(expr::largest_collection)
            .max()
            .unwrap_or(0);
        self.object_json = object;
    }

    fn eval(&self, c: &Compiled, budget: &mut u64) -> Result<CelData, String> {
        let e = c.expr.as_ref().map_err(Clone::clone)?;
        let cost = e.cost(self.max_coll);
        if cost > PER_CALL_LIMIT {
            return Err(format!(
                "expression '{}' resulted in error: operation cancelled: actual cost limit exceeded",
                c.source
            ));
        }
        if cost > *budget {
            return Err("validation failed due to running out of cost budget, no further validation rules will be run".into());
        }
        *budget -= cost;
        let vars = if e.references("variables") {
            policy::variables_value(&self.variables)
        } else {
            CelData::Null
        };
        let object = self.uses_object.then_some(&self.object_json);
        e.eval_lazy(&[
            ("object", Var::Json(object, &self.object)),
            ("oldObject", Var::Cel(&self.old)),
            ("params", Var::Cel(&self.params)),
            ("namespaceObject", Var::Cel(&self.namespace)),
            ("request", Var::Cel(&self.request)),
            ("variables", Var::Cel(&vars)),
            ("authorizer", Var::Cel(&self.authorizer[0])),
            (cel_authz::REQUEST_RESOURCE, Var::Cel(&self.authorizer[1])),
        ])
        .map_err(|err| format!("expression '{}' resulted in error: {err}", c.source))
    }
}

/// kube's `ApplyConfiguration` patcher: the expression's object (`Object{...}`) merged into
/// the object by server-side apply's rules (no field ownership recorded), refusing atomic
/// maps, structs and lists in the configuration.
fn apply_configuration(
    req: &Request<'_>,
    current: &Value,
    result: &CelData,
) -> Result<Value, String> {
    let Some(Value::Object(mut patch)) = expr::cel_to_json(result, 0) else {
        return Err(format!(
            "unsupported return type from ApplyConfiguration expression: {}",
            type_name(result)
        ));
    };
    for f in ["apiVersion", "kind"] {
        if let Some(v) = current.get(f) {
            patch.insert(f.to_owned(), v.clone());
        }
    }
    let patch = Value::Object(patch);
    let typer = crate::apply::typer(req.ri);
    let atomics = typer.atomics(&patch);
    if !atomics.is_empty() {
        return Err(format!(
            "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            atomics.join(", ")
        ));
    }
    typer
        .merge(current, &patch)
        .map_err(|e| format!("error applying patch: failed to merge patch: {e}"))
}

/// kube's `JSONPatch` patcher: the expression's list of `JSONPatch{op, path, from, value}`
/// applied in order; a failed `test` leaves the object unchanged.
fn json_patch(current: &Value, result: &CelData) -> Result<Value, String> {
    let Some(Value::Array(items)) = expr::cel_to_json(result, 0) else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".to_owned());
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(m) = item else {
            return Err(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch"
                    .to_owned(),
            );
        };
        let s = |f: &str| m.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
        let mut op = json!({"op": s("op"), "path": s("path")});
        if !s("from").is_empty() {
            op["from"] = json!(s("from"));
        }
        if let Some(v) = m.get("value") {
            op["value"] = v.clone();
        }
        ops.push(op);
    }
    match crate::patch::apply_json_patch_tested(current, &Value::Array(ops)) {
        Ok(Some(v)) if v.is_object() => Ok(v),
        Ok(Some(_)) => Err("JSONPath: the patched object is not an object".into()),
        Ok(None) => Ok(current.clone()),
        Err(e) => Err(format!("JSONPath: {}", e.message)),
    }
}

fn type_name(v: &CelData) -> &'static str {
    match v {
        CelData::Null => "null_type",
        CelData::Bool(_) => "bool",
        CelData::Int(_) => "int",
        CelData::UInt(_) => "uint",
        CelData::Float(_) => "double",
        CelData::String(_) => "string",
        CelData::List(_) => "list",
        CelData::Map(_) => "map",
        _ => "dyn",
    }
}

#[cfg(test)]
mod tests;
