//! Type checking of a ValidatingAdmissionPolicy's expressions against the schemas of the kinds it
//! matches (kube's `admission/plugin/policy/validating/typechecking.go`), for the policy's
//! `status.typeChecking`: each `spec.validations[i].expression` and `messageExpression` is
//! checked once per kind its `matchConstraints.resourceRules` name exactly (no wildcards, at
//! most 10 kinds), and what does not check becomes an `expressionWarning` worded as cel-go
//! words it (`apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'` and the
//! source line with a caret).
//!
//! What is checked (a subset of cel-go's checker; what it does not know it treats as `dyn`):
//! field selections (`.f`, `has(x.f)`, `x.?f`) through `object`, `oldObject`, `params` (typed by
//! `paramKind`), `namespaceObject`, `request` and `variables` (each variable typed by its own
//! expression), into lists' items (`[i]`, macros' iteration variables) and maps' values; and
//! references to identifiers that are not declared. Overloads and result types are not checked.

use std::collections::{BTreeSet, HashMap};

use kube_cel::cel::common::ast::{Expr, IdedExpr};
use serde_json::{json, Value};

use crate::model::{ObjectKey, Registry, ResourceInfo};
use crate::schema::cel;
use crate::schema::expr::Expression;
use crate::store::Store;

/// kube's `maxTypesToCheck`.
const MAX_KINDS: usize = 10;

/// A type as far as the checker knows it.
#[derive(Clone, Copy)]
enum Ty<'a> {
    /// Anything (no schema, or one the checker does not follow).
    Dyn,
    /// An OpenAPI schema node (`$ref`s into the built-in definitions resolved on use).
    Schema(&'a Value),
    /// The `variables` object: a field per variable.
    Variables,
    /// kube's AdmissionRequest type of the `request` variable.
    Request,
}

/// The fields of `request` (kube's `buildRequestType`).
const REQUEST_FIELDS: &[&str] = &[
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "dryRun",
    "options",
];

/// The schemas one check needs: the kind's, and the params kind's.
struct Env<'a> {
    object: Ty<'a>,
    params: Option<Ty<'a>>,
    namespace: Ty<'a>,
    variables: HashMap<&'a str, Ty<'a>>,
    /// Whether `authorizer` is declared (not in a `messageExpression`, as in kube).
    authorizer: bool,
}

/// One problem: its byte offset in the source and cel-go's message.
struct Issue {
    offset: usize,
    message: String,
}

/// `status` of `policy` as kube's status controller writes it: `observedGeneration` and
/// `typeChecking.expressionWarnings`.
pub(crate) fn status(policy: &Value, registry: &Registry, store: &dyn Store) -> Value {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let generation = policy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let kinds = kinds_to_check(spec, registry);
    let schemas: Vec<(String, Value)> = kinds
        .iter()
        .filter_map(|ri| Some((gvk_text(ri), kind_schema(ri, store)?)))
        .collect();
    let params_schema = spec
        .get("paramKind")
        .filter(|k| !k.is_null())
        .and_then(|k| {
            let api_version = k.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = k.get("kind").and_then(Value::as_str).unwrap_or("");
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let ri = registry.lookup_kind(group, version, kind)?;
            Some(kind_schema(&ri, store).unwrap_or(Value::Null))
        });
    let has_params = spec.get("paramKind").is_some_and(|k| !k.is_null());
    let namespace = crate::builtin::definitions::get()
        .get("io.k8s.api.core.v1.Namespace")
        .map_or(Ty::Dyn, Ty::Schema);
    let compiled = |src: &str| {
        crate::schema::expr::run_on_big_stack({
            let src = src.to_owned();
            move || Expression::compile(&src)
        })
        .ok()
        .and_then(Result::ok)
    };
    let variables: Vec<(String, Option<Expression>)> = spec
        .get("variables")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .map(|v| {
                    let name = v.get("name").and_then(Value::as_str).unwrap_or("");
                    let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
                    (name.to_owned(), compiled(expr))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut checked: Vec<(String, String, Option<Expression>)> = Vec::new();
    for (i, v) in spec
        .get("validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        for field in ["expression", "messageExpression"] {
            if let Some(src) = v.get(field).and_then(Value::as_str) {
                if field == "messageExpression" && src.is_empty() {
                    continue;
                }
                checked.push((
                    format!("spec.validations[{i}].{field}"),
                    src.to_owned(),
                    compiled(src),
                ));
            }
        }
    }
    let mut warnings = Vec::new();
    for (field_ref, src, expr) in &checked {
        // An expression that does not compile is reported by admission, not here.
        let Some(expr) = expr else { continue };
        let mut blocks = Vec::new();
        for (gvk, schema) in &schemas {
            let mut env = Env {
                object: Ty::Schema(schema),
                params: has_params.then(|| params_schema.as_ref().map_or(Ty::Dyn, Ty::Schema)),
                namespace,
                variables: HashMap::new(),
                authorizer: !field_ref.ends_with(".messageExpression"),
            };
            for (name, vexpr) in &variables {
                let ty = match vexpr {
                    Some(e) => {
                        let mut ignored = Vec::new();
                        Checker::new(&env, "", &mut ignored).ty(e.ast(), &mut Vec::new())
                    }
                    None => Ty::Dyn,
                };
                env.variables.insert(name.as_str(), ty);
            }
            let mut issues = Vec::new();
            Checker::new(&env, src, &mut issues).ty(expr.ast(), &mut Vec::new());
            if !issues.is_empty() {
                blocks.push(format!("{gvk}: {}\n", format_issues(src, issues)));
            }
        }
        if !blocks.is_empty() {
            warnings.push(json!({"fieldRef": field_ref, "warning": blocks.join("\n")}));
        }
    }
    let mut type_checking = json!({});
    if !warnings.is_empty() {
        type_checking["expressionWarnings"] = Value::Array(warnings);
    }
    json!({"observedGeneration": generation, "typeChecking": type_checking})
}

/// kube's `typesToCheck`: the kinds the resource rules name exactly, sorted, at most 10.
fn kinds_to_check(spec: &Value, registry: &Registry) -> Vec<std::sync::Arc<ResourceInfo>> {
    let strings = |v: &Value, f: &str| -> Vec<String> {
        v.get(f)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut found: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut out = Vec::new();
    let rules = spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    for rule in rules.into_iter().flatten() {
        let mut groups = strings(rule, "apiGroups");
        let mut versions = strings(rule, "apiVersions");
        let mut resources = strings(rule, "resources");
        if groups.iter().chain(&versions).any(|g| g.contains('*')) {
            continue;
        }
        resources.retain(|r| !r.contains(['*', '/']));
        groups.sort();
        versions.sort();
        resources.sort();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    if found.len() >= MAX_KINDS {
                        break;
                    }
                    if let Some(ri) = registry.lookup(g, v, r).filter(|ri| ri.version == *v) {
                        if found.insert((g.clone(), v.clone(), ri.kind.clone())) {
                            out.push(ri);
                        }
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| (&a.group, &a.version, &a.kind).cmp(&(&b.group, &b.version, &b.kind)));
    out
}

/// `apps/v1, Kind=Deployment` (`/v1, Kind=Pod` for the core group), as Go prints a GVK.
fn gvk_text(ri: &ResourceInfo) -> String {
    format!("{}/{}, Kind={}", ri.group, ri.version, ri.kind)
}

/// The schema of a kind: a built-in's definition, or a custom resource version's
/// `openAPIV3Schema` with `metadata` typed as ObjectMeta (as served in its OpenAPI).
fn kind_schema(ri: &ResourceInfo, store: &dyn Store) -> Option<Value> {
    let defs = crate::builtin::definitions::get();
    if let Some(custom) = &ri.custom {
        let crd = store.get(&ObjectKey::new(
            "customresourcedefinitions.apiextensions.k8s.io",
            "",
            &custom.crd_name,
        ))?;
        let mut schema = crd
            .value()
            .pointer("/spec/versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(ri.version.as_str()))?
            .pointer("/schema/openAPIV3Schema")?
            .clone();
        if let Some(props) = schema
            .as_object_mut()
            .map(|o| o.entry("properties").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
        {
            props.insert(
                "metadata".into(),
                json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}),
            );
            props.insert("apiVersion".into(), json!({"type": "string"}));
            props.insert("kind".into(), json!({"type": "string"}));
        }
        return Some(schema);
    }
    let name = defs.name_of(&ri.group, &ri.version, &ri.kind)?;
    defs.get(name).cloned()
}

/// Follow `$ref`s into the built-in definitions.
fn resolve(mut s: &Value) -> &Value {
    let defs = crate::builtin::definitions::get();
    for _ in 0..8 {
        match defs.resolve(s) {
            Some((_, d)) => s = d,
            None => break,
        }
    }
    s
}

/// The type of field `f` of `ty`: `Err` if `ty` is an object that has no such field.
fn field<'a>(ty: Ty<'a>, f: &str, env: &Env<'a>) -> Result<Ty<'a>, ()> {
    match ty {
        Ty::Dyn => Ok(Ty::Dyn),
        Ty::Request => {
            if REQUEST_FIELDS.contains(&f) {
                Ok(Ty::Dyn)
            } else {
                Err(())
            }
        }
        Ty::Variables => env.variables.get(f).copied().ok_or(()),
        Ty::Schema(s) => {
            let s = resolve(s);
            if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
                return Ok(Ty::Dyn);
            }
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                return match props.get(f) {
                    Some(p) => Ok(Ty::Schema(p)),
                    None => Err(()),
                };
            }
            match s.get("additionalProperties") {
                Some(a) if a.is_object() => Ok(Ty::Schema(a)),
                _ => Ok(Ty::Dyn),
            }
        }
    }
}

/// The type of the elements of a list (or the values of a map) `ty`.
fn element<'a>(ty: Ty<'a>) -> Ty<'a> {
    match ty {
        Ty::Schema(s) => {
            let s = resolve(s);
            match (s.get("items"), s.get("additionalProperties")) {
                (Some(i), _) if i.is_object() => Ty::Schema(i),
                (_, Some(a)) if a.is_object() => Ty::Schema(a),
                _ => Ty::Dyn,
            }
        }
        _ => Ty::Dyn,
    }
}

/// Whether `ty` is a map (its comprehension variable is a key, a string).
fn is_map(ty: Ty<'_>) -> bool {
    match ty {
        Ty::Schema(s) => {
            let s = resolve(s);
            s.get("items").is_none()
                && (s.get("additionalProperties").is_some() || s.get("properties").is_some())
        }
        Ty::Variables | Ty::Request => true,
        Ty::Dyn => false,
    }
}

struct Checker<'e, 'a> {
    env: &'e Env<'a>,
    src: &'e str,
    issues: &'e mut Vec<Issue>,
    /// How many selections of each field name were seen, in source order (to find them in the
    /// source: the parser keeps no positions once it succeeds).
    selects: HashMap<String, usize>,
    idents: HashMap<String, usize>,
}

impl<'e, 'a> Checker<'e, 'a> {
    fn new(env: &'e Env<'a>, src: &'e str, issues: &'e mut Vec<Issue>) -> Self {
        Self {
            env,
            src,
            issues,
            selects: HashMap::new(),
            idents: HashMap::new(),
        }
    }

    /// The type of `e`; `scope` holds the comprehension variables in scope.
    fn ty(&mut self, e: &IdedExpr, scope: &mut Vec<(String, Ty<'a>)>) -> Ty<'a> {
        match &e.expr {
            Expr::Ident(name) => {
                if let Some((_, t)) = scope.iter().rev().find(|(n, _)| n == name) {
                    return *t;
                }
                let n = self.idents.entry(name.clone()).or_insert(0);
                let k = *n;
                *n += 1;
                match name.as_str() {
                    "object" | "oldObject" => self.env.object,
                    "params" if self.env.params.is_some() => self.env.params.unwrap_or(Ty::Dyn),
                    "namespaceObject" => self.env.namespace,
                    "request" => Ty::Request,
                    "variables" => Ty::Variables,
                    "authorizer" | crate::schema::cel_authz::REQUEST_RESOURCE
                        if self.env.authorizer =>
                    {
                        Ty::Dyn
                    }
                    _ if name.starts_with('@') => Ty::Dyn,
                    _ if cel::TYPE_NAMES.contains(&name.as_str()) => Ty::Dyn,
                    _ => {
                        // `authorizer.requestResource` is one variable here, `authorizer` to kube.
                        let name = if name == crate::schema::cel_authz::REQUEST_RESOURCE {
                            "authorizer"
                        } else {
                            name.as_str()
                        };
                        let offset = find_ident(self.src, name, k);
                        self.issues.push(Issue {
                            offset,
                            message: format!("undeclared reference to '{name}' (in container '')"),
                        });
                        Ty::Dyn
                    }
                }
            }
            Expr::Select(s) => {
                let operand = self.ty(&s.operand, scope);
                self.select(operand, &s.field)
            }
            Expr::Call(c) => {
                // `math.greatest(...)` and the like: the target names a function namespace.
                let namespaced = c.target.as_ref().is_some_and(|t| {
                    matches!(&t.expr, Expr::Ident(n) if cel::NAMESPACES.contains(&n.as_str())
                        && !scope.iter().any(|(v, _)| v == n))
                });
                let target = c
                    .target
                    .as_ref()
                    .filter(|_| !namespaced)
                    .map(|t| self.ty(t, scope));
                let args: Vec<Ty<'a>> = c.args.iter().map(|a| self.ty(a, scope)).collect();
                match (c.func_name.as_str(), target, args.as_slice()) {
                    ("_[_]", None, [base, _]) => element(*base),
                    ("_?._", None, [base, _]) => match c.args.get(1).map(|a| &a.expr) {
                        Some(Expr::Literal(kube_cel::cel::common::ast::LiteralValue::String(
                            f,
                        ))) => self.select(*base, f.inner()),
                        _ => Ty::Dyn,
                    },
                    _ => Ty::Dyn,
                }
            }
            Expr::Comprehension(c) => {
                let range = self.ty(&c.iter_range, scope);
                let var_ty = if is_map(range) {
                    Ty::Dyn
                } else {
                    element(range)
                };
                let init = self.ty(&c.accu_init, scope);
                let _ = init;
                scope.push((c.accu_var.clone(), Ty::Dyn));
                scope.push((c.iter_var.clone(), var_ty));
                if let Some(v2) = &c.iter_var2 {
                    scope.push((v2.clone(), element(range)));
                }
                self.ty(&c.loop_cond, scope);
                self.ty(&c.loop_step, scope);
                scope.truncate(scope.len() - 1 - usize::from(c.iter_var2.is_some()));
                self.ty(&c.result, scope);
                scope.pop();
                Ty::Dyn
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.ty(x, scope);
                }
                Ty::Dyn
            }
            Expr::Map(m) => {
                for en in &m.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::MapEntry(me) = &en.expr {
                        self.ty(&me.key, scope);
                        self.ty(&me.value, scope);
                    }
                }
                Ty::Dyn
            }
            Expr::Struct(_) | Expr::Literal(_) | Expr::Unspecified => Ty::Dyn,
        }
    }

    fn select(&mut self, operand: Ty<'a>, f: &str) -> Ty<'a> {
        let n = self.selects.entry(f.to_owned()).or_insert(0);
        let k = *n;
        *n += 1;
        match field(operand, f, self.env) {
            Ok(t) => t,
            Err(()) => {
                let offset = find_select(self.src, f, k);
                self.issues.push(Issue {
                    offset,
                    message: format!("undefined field '{f}'"),
                });
                Ty::Dyn
            }
        }
    }
}

/// The byte offsets of the code of `src` outside string literals.
fn code_positions(src: &str) -> Vec<bool> {
    let b = src.as_bytes();
    let mut code = vec![true; b.len()];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' {
            let triple = b.len() >= i + 3 && b[i + 1] == c && b[i + 2] == c;
            let quote_len = if triple { 3 } else { 1 };
            let start = i;
            i += quote_len;
            while i < b.len() {
                if b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == c && (!triple || (b.len() >= i + 3 && b[i + 1] == c && b[i + 2] == c)) {
                    i += quote_len;
                    break;
                }
                i += 1;
            }
            for x in code.iter_mut().take(i.min(b.len())).skip(start) {
                *x = false;
            }
            continue;
        }
        i += 1;
    }
    code
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The offset of the `.` of the `k`-th selection of field `f` in `src` (a `.` or `.?` followed by
/// `f` and not by a call's parenthesis); 0 if not found.
fn find_select(src: &str, f: &str, k: usize) -> usize {
    let b = src.as_bytes();
    let code = code_positions(src);
    let mut seen = 0;
    for (i, _) in src.match_indices('.') {
        if !code[i] {
            continue;
        }
        let mut j = i + 1;
        if b.get(j) == Some(&b'?') {
            j += 1;
        }
        while b.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        let end = j + f.len();
        if src.get(j..end) != Some(f) || b.get(end).is_some_and(|c| is_ident_byte(*c)) {
            continue;
        }
        let mut after = end;
        while b.get(after).is_some_and(u8::is_ascii_whitespace) {
            after += 1;
        }
        if b.get(after) == Some(&b'(') {
            continue;
        }
        if seen == k {
            return i;
        }
        seen += 1;
    }
    0
}

/// The offset of the `k`-th reference to identifier `name` (not after a `.`); 0 if not found.
fn find_ident(src: &str, name: &str, k: usize) -> usize {
    let b = src.as_bytes();
    let code = code_positions(src);
    let mut seen = 0;
    for (i, _) in src.match_indices(name) {
        if !code[i]
            || b.get(i + name.len()).is_some_and(|c| is_ident_byte(*c))
            || (i > 0 && (is_ident_byte(b[i - 1]) || b[i - 1] == b'.'))
        {
            continue;
        }
        if seen == k {
            return i;
        }
        seen += 1;
    }
    0
}

/// cel-go's `Errors.ToDisplayString`: sorted by position, each `ERROR: <input>:L:C: message`
/// with the source line and a caret under the column.
fn format_issues(src: &str, mut issues: Vec<Issue>) -> String {
    issues.sort_by_key(|i| i.offset);
    let mut out = Vec::new();
    for issue in issues {
        let before = &src[..issue.offset.min(src.len())];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |p| p + 1);
        let col = src[line_start..issue.offset.min(src.len())].chars().count();
        let text = src[line_start..].split('\n').next().unwrap_or("");
        let dots: String = src[line_start..issue.offset.min(src.len())]
            .chars()
            .map(|c| if c.len_utf8() > 1 { '\u{ff0e}' } else { '.' })
            .collect();
        out.push(format!(
            "ERROR: <input>:{line}:{}: {}\n | {}\n | {dots}^",
            col + 1,
            issue.message,
            text.replace('\t', " ")
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(expr: &str, kind: (&str, &str, &str)) -> String {
        check_with(expr, kind, true)
    }

    fn check_with(expr: &str, kind: (&str, &str, &str), authorizer: bool) -> String {
        let defs = crate::builtin::definitions::get();
        let name = defs.name_of(kind.0, kind.1, kind.2).unwrap();
        let schema = defs.get(name).unwrap();
        let env = Env {
            object: Ty::Schema(schema),
            params: None,
            namespace: Ty::Dyn,
            variables: HashMap::new(),
            authorizer,
        };
        let e = Expression::compile(expr).unwrap();
        let mut issues = Vec::new();
        Checker::new(&env, expr, &mut issues).ty(e.ast(), &mut Vec::new());
        if issues.is_empty() {
            return String::new();
        }
        format_issues(expr, issues)
    }

    #[test]
    fn undefined_fields_in_kube_words() {
        let deploy = ("apps", "v1", "Deployment");
        assert_eq!(
            check("object.replicas > 1", deploy),
            "ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^"
        );
        assert_eq!(
            check("object.spec.replicaz > 1", deploy),
            "ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^"
        );
        assert_eq!(check("object.spec.replicas > 1", deploy), "");
        // Items of lists, macros' variables, maps' values, has(), optional selection.
        assert_eq!(
            check(
                "object.spec.template.spec.containers.all(c, c.image != '' && c.imagez == '')",
                deploy
            ),
            "ERROR: <input>:1:63: undefined field 'imagez'\n | object.spec.template.spec.containers.all(c, c.image != '' && c.imagez == '')\n | ..............................................................^"
        );
        assert_eq!(
            check(
                "object.metadata.labels.anything == 'x' && has(object.spec.paused) && object.spec.?selector.hasValue()",
                deploy
            ),
            ""
        );
        assert!(check("has(object.spec.pausd)", deploy).contains("undefined field 'pausd'"));
        assert!(
            check("object.spec.template.spec.containers[0].nam == 'x'", deploy)
                .contains("undefined field 'nam'")
        );
        // Strings are not code; method calls are not selections.
        assert_eq!(
            check(
                "'object.replicas'.size() > 0 && object.spec.replicas.size() >= 0",
                deploy
            ),
            ""
        );
        assert_eq!(
            check("obj.spec == 1", deploy),
            "ERROR: <input>:1:1: undeclared reference to 'obj' (in container '')\n | obj.spec == 1\n | ^"
        );
        assert!(
            check("request.usrInfo.username == ''", deploy).contains("undefined field 'usrInfo'")
        );
        // Function namespaces and type names are not identifiers to declare.
        assert_eq!(
            check(
                "math.greatest(1, 2) == 2 && sets.contains([1], [1]) && strings.quote('a') != ''",
                deploy
            ),
            ""
        );
        // kube's authorizer library: `authorizer` and `authorizer.requestResource` are declared.
        assert_eq!(
            check(
                "authorizer.group('apps').resource('deployments').check('get').allowed() && authorizer.requestResource.check('patch').reason() != ''",
                deploy
            ),
            ""
        );
        // Not in a messageExpression, as in kube.
        assert_eq!(
            check_with("authorizer.requestResource.check('get').reason()", deploy, false),
            "ERROR: <input>:1:1: undeclared reference to 'authorizer' (in container '')\n | authorizer.requestResource.check('get').reason()\n | ^"
        );
    }
}
