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
//! expression), into lists' items (`[i]`, macros' iteration variables) and maps' values;
//! references to identifiers that are not declared; and the overloads of the operators, of
//! `size`, the conversions and the string functions, with the types of literals, of schema
//! fields (`string` with format `date-time` a timestamp, `duration` a duration, `byte` bytes;
//! int-or-string and quantities `dyn`) and of those functions' results. A missing overload is
//! reported only where every argument's type is known and printed as cel-go prints it (not an
//! object type: kube names those after the kind and a clock reading). Positions are the
//! parser's own (see [`crate::schema::expr::source_offsets`]).

use std::collections::{BTreeSet, HashMap};

use kube_cel::cel::common::ast::{Expr, IdedExpr, LiteralValue, SourceInfo};
use serde_json::{json, Value};

use crate::model::{ObjectKey, Registry, ResourceInfo};
use crate::schema::expr::Expression;
use crate::schema::{cel, cel_authz};
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
    /// A scalar.
    Prim(Prim),
    /// A list, of this scalar when known.
    List(Option<Prim>),
}

/// CEL's scalar types.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Prim {
    Int,
    Uint,
    Double,
    Bool,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
}

impl Prim {
    /// As cel-go prints it.
    fn name(self) -> &'static str {
        match self {
            Prim::Int => "int",
            Prim::Uint => "uint",
            Prim::Double => "double",
            Prim::Bool => "bool",
            Prim::String => "string",
            Prim::Bytes => "bytes",
            Prim::Null => "null_type",
            Prim::Duration => "google.protobuf.Duration",
            Prim::Timestamp => "google.protobuf.Timestamp",
        }
    }

    fn numeric(self) -> bool {
        matches!(self, Prim::Int | Prim::Uint | Prim::Double)
    }

    /// Has `<`, `<=`, `>`, `>=`.
    fn ordered(self) -> bool {
        !matches!(self, Prim::Null)
    }
}

/// What overload resolution needs to know of a type (`None` where it is used: `dyn`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    Prim(Prim),
    List(Option<Prim>),
    Map(Option<Prim>),
    /// An object type (a schema's object, `request`, `variables`).
    Object,
}

impl Shape {
    /// As cel-go prints it, where that is known.
    fn name(self) -> Option<String> {
        match self {
            Shape::Prim(p) => Some(p.name().to_owned()),
            Shape::List(Some(p)) => Some(format!("list({})", p.name())),
            Shape::Map(Some(p)) => Some(format!("map(string, {})", p.name())),
            Shape::List(None) | Shape::Map(None) | Shape::Object => None,
        }
    }
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
    type Checked = (Expression, Option<std::sync::Arc<SourceInfo>>);
    let with_positions = |src: &str| -> Option<Checked> {
        crate::schema::expr::run_on_big_stack({
            let src = src.to_owned();
            move || {
                let e = Expression::compile(&src).ok()?;
                let at = positions(&src, e.ast());
                Some((e, at))
            }
        })
        .ok()
        .flatten()
    };
    let mut checked: Vec<(String, String, Option<Checked>)> = Vec::new();
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
                    with_positions(src),
                ));
            }
        }
    }
    let mut warnings = Vec::new();
    for (field_ref, src, expr) in &checked {
        // An expression that does not compile is reported by admission, not here.
        let Some((expr, at)) = expr else { continue };
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
                        Checker::new(&env, "", &mut ignored, None).ty(e.ast(), &mut Vec::new())
                    }
                    None => Ty::Dyn,
                };
                env.variables.insert(name.as_str(), ty);
            }
            let mut issues = Vec::new();
            Checker::new(&env, src, &mut issues, at.as_deref()).ty(expr.ast(), &mut Vec::new());
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
        Ty::Dyn | Ty::Prim(_) | Ty::List(_) => Ok(Ty::Dyn),
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
        Ty::List(Some(p)) => Ty::Prim(p),
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
        Ty::Dyn | Ty::Prim(_) | Ty::List(_) => false,
    }
}

/// Whether `size` takes it.
fn sized(s: Option<Shape>) -> bool {
    matches!(
        s,
        None | Some(Shape::Prim(Prim::String | Prim::Bytes) | Shape::List(_) | Shape::Map(_))
    )
}

/// What overload resolution knows of `ty` (`None`: `dyn`).
fn shape(ty: Ty<'_>) -> Option<Shape> {
    match ty {
        Ty::Dyn => None,
        Ty::Prim(p) => Some(Shape::Prim(p)),
        Ty::List(e) => Some(Shape::List(e)),
        Ty::Variables | Ty::Request => Some(Shape::Object),
        Ty::Schema(s) => schema_shape(s),
    }
}

/// The CEL type kube gives a schema (`common.SchemaDeclType`), as far as overloads need it.
fn schema_shape(s: &Value) -> Option<Shape> {
    // Both are strings or numbers to kube's CEL.
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        if r.ends_with(".Quantity") || r.ends_with(".IntOrString") {
            return None;
        }
    }
    let s = resolve(s);
    let flag = |k: &str| s.get(k) == Some(&Value::Bool(true));
    if flag("x-kubernetes-int-or-string") {
        return None;
    }
    let has_properties = s
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    let prim = |v: &Value| match schema_shape(v) {
        Some(Shape::Prim(p)) => Some(p),
        _ => None,
    };
    match s.get("type").and_then(Value::as_str) {
        Some("string") => match s.get("format").and_then(Value::as_str) {
            Some("date-time" | "date") => Some(Shape::Prim(Prim::Timestamp)),
            Some("duration") => Some(Shape::Prim(Prim::Duration)),
            Some("byte") => Some(Shape::Prim(Prim::Bytes)),
            Some("int-or-string") => None,
            _ => Some(Shape::Prim(Prim::String)),
        },
        Some("integer") => Some(Shape::Prim(Prim::Int)),
        Some("number") => Some(Shape::Prim(Prim::Double)),
        Some("boolean") => Some(Shape::Prim(Prim::Bool)),
        Some("array") => Some(Shape::List(s.get("items").and_then(prim))),
        Some("object") | None if has_properties => Some(Shape::Object),
        Some("object") | None => match s.get("additionalProperties") {
            Some(a) if a.is_object() && !flag("x-kubernetes-preserve-unknown-fields") => {
                Some(Shape::Map(prim(a)))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The result of function `name` (cel-go's standard declarations, and kube's string library)
/// applied to these arguments (`target`: a receiver call's), or `Err` when no overload takes
/// them. Functions it does not know, and results it cannot tell, are `dyn`.
fn overload<'a>(
    name: &str,
    target: Option<Option<Shape>>,
    args: &[Option<Shape>],
) -> Result<Ty<'a>, ()> {
    use Prim::*;
    let p = |s: Option<Shape>| match s {
        Some(Shape::Prim(p)) => Some(p),
        _ => None,
    };
    // Every known argument passes `ok`.
    let all = |ok: &dyn Fn(Shape) -> bool| args.iter().flatten().all(|s| ok(*s));
    let is = |want: Prim| move |s: Shape| s == Shape::Prim(want);
    let bool_ = Ok(Ty::Prim(Bool));
    let check = |pass: bool, ty: Ty<'a>| if pass { Ok(ty) } else { Err(()) };
    match (name, target, args) {
        ("_&&_" | "_||_" | "!_", None, _) => check(all(&is(Bool)), Ty::Prim(Bool)),
        ("-_", None, [a]) => match a {
            None => Ok(Ty::Dyn),
            Some(Shape::Prim(x @ (Int | Double))) => Ok(Ty::Prim(*x)),
            Some(_) => Err(()),
        },
        ("_==_" | "_!=_", None, [Some(a), Some(b)]) => {
            let comparable = match (a, b) {
                (Shape::Prim(Null), _) | (_, Shape::Prim(Null)) => true,
                (Shape::Prim(x), Shape::Prim(y)) => x == y || (x.numeric() && y.numeric()),
                (Shape::List(_), Shape::List(_)) | (Shape::Map(_), Shape::Map(_)) => true,
                (Shape::Object, Shape::Object) => true,
                _ => false,
            };
            check(comparable, Ty::Prim(Bool))
        }
        ("_==_" | "_!=_", None, _) => bool_,
        ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
            let orderable = |s: &Option<Shape>| match s {
                None => true,
                Some(Shape::Prim(x)) => x.ordered(),
                Some(_) => false,
            };
            let together = match (p(*a), p(*b)) {
                (Some(x), Some(y)) => x == y || (x.numeric() && y.numeric()),
                _ => true,
            };
            check(orderable(a) && orderable(b) && together, Ty::Prim(Bool))
        }
        ("_+_", None, [Some(a), Some(b)]) => match (a, b) {
            (Shape::Prim(x), Shape::Prim(y))
                if x == y && matches!(x, Int | Uint | Double | String | Bytes | Duration) =>
            {
                Ok(Ty::Prim(*x))
            }
            (Shape::Prim(Timestamp), Shape::Prim(Duration))
            | (Shape::Prim(Duration), Shape::Prim(Timestamp)) => Ok(Ty::Prim(Timestamp)),
            (Shape::List(x), Shape::List(y)) => match (x, y) {
                (Some(x), Some(y)) if x != y => Err(()),
                _ if x == y => Ok(Ty::List(*x)),
                _ => Ok(Ty::List(None)),
            },
            _ => Err(()),
        },
        ("_-_", None, [Some(Shape::Prim(x)), Some(Shape::Prim(y))]) => match (x, y) {
            (x, y) if x == y && (x.numeric() || *x == Duration) => Ok(Ty::Prim(*x)),
            (Timestamp, Timestamp) => Ok(Ty::Prim(Duration)),
            (Timestamp, Duration) => Ok(Ty::Prim(Timestamp)),
            _ => Err(()),
        },
        ("_*_" | "_/_", None, [Some(Shape::Prim(x)), Some(Shape::Prim(y))]) => {
            check(x == y && x.numeric(), Ty::Prim(*x))
        }
        ("_%_", None, [Some(Shape::Prim(x)), Some(Shape::Prim(y))]) => {
            check(x == y && matches!(x, Int | Uint), Ty::Prim(*x))
        }
        ("_-_" | "_*_" | "_/_" | "_%_", None, [Some(_), Some(_)]) => Err(()),
        ("_?_:_", None, [c, a, b]) => {
            if c.is_some_and(|c| c != Shape::Prim(Bool)) {
                return Err(());
            }
            match (p(*a), p(*b)) {
                (Some(x), Some(y)) if x == y => Ok(Ty::Prim(x)),
                _ => Ok(Ty::Dyn),
            }
        }
        ("@in", None, [_, container]) => check(
            matches!(container, None | Some(Shape::List(_) | Shape::Map(_))),
            Ty::Prim(Bool),
        ),
        ("size", None, [x]) => check(sized(*x), Ty::Prim(Int)),
        ("size", Some(x), []) => check(sized(x), Ty::Prim(Int)),
        // Conversions.
        ("int", None, [x]) => check(
            p(*x).is_none_or(|x| matches!(x, Int | Uint | Double | String | Timestamp | Duration))
                && !matches!(x, Some(Shape::List(_) | Shape::Map(_) | Shape::Object)),
            Ty::Prim(Int),
        ),
        ("uint" | "double", None, [x]) => check(
            p(*x).is_none_or(|x| matches!(x, Int | Uint | Double | String))
                && !matches!(x, Some(Shape::List(_) | Shape::Map(_) | Shape::Object)),
            Ty::Prim(if name == "uint" { Uint } else { Double }),
        ),
        ("string", None, [x]) => check(
            p(*x).is_none_or(|x| x != Null)
                && !matches!(x, Some(Shape::List(_) | Shape::Map(_) | Shape::Object)),
            Ty::Prim(String),
        ),
        ("bool", None, [x]) => check(
            matches!(x, None | Some(Shape::Prim(Bool | String))),
            Ty::Prim(Bool),
        ),
        ("bytes", None, [x]) => check(
            matches!(x, None | Some(Shape::Prim(Bytes | String))),
            Ty::Prim(Bytes),
        ),
        ("duration", None, [x]) => check(
            matches!(x, None | Some(Shape::Prim(Duration | String))),
            Ty::Prim(Duration),
        ),
        ("timestamp", None, [x]) => check(
            matches!(x, None | Some(Shape::Prim(Timestamp | String | Int))),
            Ty::Prim(Timestamp),
        ),
        ("matches", None, [_, _]) => check(all(&is(String)), Ty::Prim(Bool)),
        // Strings' own functions (cel-go's and kube's string library).
        ("indexOf" | "lastIndexOf", Some(Some(Shape::List(_))), _) => Ok(Ty::Prim(Int)),
        ("join", Some(t), _) => check(matches!(t, None | Some(Shape::List(_))), Ty::Prim(String)),
        (
            "contains" | "startsWith" | "endsWith" | "matches" | "lowerAscii" | "upperAscii"
            | "trim" | "charAt" | "indexOf" | "lastIndexOf" | "replace" | "split" | "substring",
            Some(t),
            _,
        ) => {
            if t.is_some_and(|t| t != Shape::Prim(String)) {
                return Err(());
            }
            let (want, result): (&[Prim], Ty<'a>) = match name {
                "contains" | "startsWith" | "endsWith" | "matches" => (&[String], Ty::Prim(Bool)),
                "lowerAscii" | "upperAscii" | "trim" => (&[], Ty::Prim(String)),
                "charAt" => (&[Int], Ty::Prim(String)),
                "indexOf" | "lastIndexOf" => (&[String, Int], Ty::Prim(Int)),
                "replace" => (&[String, String, Int], Ty::Prim(String)),
                "split" => (&[String, Int], Ty::List(Some(String))),
                _ => (&[Int, Int], Ty::Prim(String)),
            };
            let fits = args.len() <= want.len()
                && args
                    .iter()
                    .zip(want)
                    .all(|(a, w)| a.is_none_or(|a| a == Shape::Prim(*w)));
            if fits {
                Ok(result)
            } else if args.len() > want.len() {
                // An arity this table does not know: leave it to the runtime.
                Ok(Ty::Dyn)
            } else {
                Err(())
            }
        }
        _ => Ok(Ty::Dyn),
    }
}

struct Checker<'e, 'a> {
    env: &'e Env<'a>,
    src: &'e str,
    issues: &'e mut Vec<Issue>,
    /// Where each expression starts, from the parser (see [`positions`]).
    offsets: Option<&'e SourceInfo>,
    /// How many selections of each field name were seen, in source order (to find them in the
    /// source when the parser's positions are not there).
    selects: HashMap<String, usize>,
    idents: HashMap<String, usize>,
}

/// The parser's positions for `src` (see [`crate::schema::expr::source_offsets`]), if they
/// belong to `ast`: every identifier's position shows its name. Call on a big stack.
fn positions(src: &str, ast: &IdedExpr) -> Option<std::sync::Arc<SourceInfo>> {
    let info = crate::schema::expr::source_offsets(src)?;
    let mut stack = vec![ast];
    while let Some(e) = stack.pop() {
        match &e.expr {
            Expr::Ident(name) if !name.starts_with('@') && name != cel_authz::REQUEST_RESOURCE => {
                let (start, _) = info.offset_for(e.id)?;
                if !src.get(start as usize..)?.starts_with(name.as_str()) {
                    return None;
                }
            }
            Expr::Select(x) => stack.push(&x.operand),
            Expr::Call(c) => {
                stack.extend(c.target.as_deref());
                stack.extend(&c.args);
            }
            Expr::Comprehension(c) => stack.extend([
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ]),
            Expr::List(l) => stack.extend(&l.elements),
            Expr::Map(m) => {
                for en in &m.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::MapEntry(me) = &en.expr {
                        stack.extend([&me.key, &me.value]);
                    }
                }
            }
            _ => {}
        }
    }
    Some(info)
}

impl<'e, 'a> Checker<'e, 'a> {
    fn new(
        env: &'e Env<'a>,
        src: &'e str,
        issues: &'e mut Vec<Issue>,
        offsets: Option<&'e SourceInfo>,
    ) -> Self {
        Self {
            env,
            src,
            issues,
            offsets,
            selects: HashMap::new(),
            idents: HashMap::new(),
        }
    }

    /// Where expression `id` starts in the source, as the parser saw it.
    fn at(&self, id: u64) -> Option<usize> {
        let (start, _) = self.offsets?.offset_for(id)?;
        Some(start as usize)
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
                    "authorizer" | cel_authz::REQUEST_RESOURCE if self.env.authorizer => Ty::Dyn,
                    _ if name.starts_with('@') => Ty::Dyn,
                    _ if cel::TYPE_NAMES.contains(&name.as_str()) => Ty::Dyn,
                    _ => {
                        // `authorizer.requestResource` is one variable here, `authorizer` to kube.
                        let (name, at) = if name == cel_authz::REQUEST_RESOURCE {
                            ("authorizer", None)
                        } else {
                            (name.as_str(), self.at(e.id))
                        };
                        let offset = at.unwrap_or_else(|| find_ident(self.src, name, k));
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
                let t = self.select(operand, &s.field, e.id);
                if s.test {
                    Ty::Prim(Prim::Bool)
                } else {
                    t
                }
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
                        Some(Expr::Literal(LiteralValue::String(f))) => {
                            self.select(*base, f.inner(), e.id)
                        }
                        _ => Ty::Dyn,
                    },
                    _ if namespaced => Ty::Dyn,
                    (name, target, args) => self.call(e.id, name, target, args),
                }
            }
            Expr::Comprehension(c) => {
                let range = self.ty(&c.iter_range, scope);
                let var_ty = if is_map(range) {
                    Ty::Dyn
                } else {
                    element(range)
                };
                // The accumulator: a bool for `all` and `exists`, an int for `exists_one`, a
                // list for `map` and `filter`.
                let accu = match self.ty(&c.accu_init, scope) {
                    Ty::List(_) => Ty::List(None),
                    t => t,
                };
                scope.push((c.accu_var.clone(), accu));
                scope.push((c.iter_var.clone(), var_ty));
                if let Some(v2) = &c.iter_var2 {
                    scope.push((v2.clone(), element(range)));
                }
                self.ty(&c.loop_cond, scope);
                self.ty(&c.loop_step, scope);
                scope.truncate(scope.len() - 1 - usize::from(c.iter_var2.is_some()));
                let result = self.ty(&c.result, scope);
                scope.pop();
                result
            }
            Expr::List(l) => {
                let elements: Vec<Ty<'a>> = l.elements.iter().map(|x| self.ty(x, scope)).collect();
                let mut prims = elements.iter().map(|t| match t {
                    Ty::Prim(p) => Some(*p),
                    _ => None,
                });
                let first = prims.next().flatten();
                if first.is_some() && prims.all(|p| p == first) {
                    Ty::List(first)
                } else {
                    Ty::List(None)
                }
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
            Expr::Literal(l) => Ty::Prim(match l {
                LiteralValue::Boolean(_) => Prim::Bool,
                LiteralValue::Bytes(_) => Prim::Bytes,
                LiteralValue::Double(_) => Prim::Double,
                LiteralValue::Int(_) => Prim::Int,
                LiteralValue::Null => Prim::Null,
                LiteralValue::String(_) => Prim::String,
                LiteralValue::UInt(_) => Prim::Uint,
            }),
            Expr::Struct(_) | Expr::Unspecified => Ty::Dyn,
        }
    }

    /// Function `name` applied to `target` (a receiver call) and `args`: its result, or an
    /// issue in cel-go's words when no overload takes them (reported only where every type is
    /// known and printable, and the parser's position is there).
    fn call(&mut self, id: u64, name: &str, target: Option<Ty<'a>>, args: &[Ty<'a>]) -> Ty<'a> {
        let t = target.map(shape);
        let a: Vec<Option<Shape>> = args.iter().map(|x| shape(*x)).collect();
        match overload(name, t, &a) {
            Ok(ty) => ty,
            Err(()) => {
                let names: Option<Vec<String>> = t
                    .into_iter()
                    .chain(a.iter().copied())
                    .map(|s| s.and_then(Shape::name))
                    .collect();
                if let (Some(names), Some(offset)) = (names, self.at(id)) {
                    let signature = match t {
                        Some(_) => format!("{}.({})", names[0], names[1..].join(", ")),
                        None => format!("({})", names.join(", ")),
                    };
                    self.issues.push(Issue {
                        offset,
                        message: format!(
                            "found no matching overload for '{name}' applied to '{signature}'"
                        ),
                    });
                }
                Ty::Dyn
            }
        }
    }

    fn select(&mut self, operand: Ty<'a>, f: &str, id: u64) -> Ty<'a> {
        let n = self.selects.entry(f.to_owned()).or_insert(0);
        let k = *n;
        *n += 1;
        match field(operand, f, self.env) {
            Ok(t) => t,
            Err(()) => {
                let offset = self.at(id).unwrap_or_else(|| find_select(self.src, f, k));
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
/// with the source line and a caret under the column; at most 100 (cel-go's reporting limit,
/// then `N more errors were truncated`), and lines too long to quote are not quoted (as the
/// parse errors' lines), so a hostile expression cannot make the status huge.
fn format_issues(src: &str, mut issues: Vec<Issue>) -> String {
    issues.sort_by_key(|i| i.offset);
    let total = issues.len();
    let limit = cel::MAX_REPORTED_PARSE_ERRORS;
    let mut out = Vec::new();
    for issue in issues.into_iter().take(limit) {
        let before = &src[..issue.offset.min(src.len())];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |p| p + 1);
        let col = src[line_start..issue.offset.min(src.len())].chars().count();
        let text = src[line_start..].split('\n').next().unwrap_or("");
        let mut e = format!("ERROR: <input>:{line}:{}: {}", col + 1, issue.message);
        e.push_str(&cel::error_snippet(text, col));
        out.push(e);
    }
    if total > limit {
        out.push(format!("{} more errors were truncated", total - limit));
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
        let at = positions(expr, e.ast());
        assert!(at.is_some(), "no parser positions for {expr}");
        let mut issues = Vec::new();
        Checker::new(&env, expr, &mut issues, at.as_deref()).ty(e.ast(), &mut Vec::new());
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
                "'object.replicas'.size() > 0 && object.metadata.name.size() >= 0",
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

    /// Operators and functions applied to types none of their overloads takes, in cel-go's
    /// words and at the parser's positions (the operator, or a call's parenthesis).
    #[test]
    fn overloads_in_kube_words() {
        let deploy = ("apps", "v1", "Deployment");
        let one = |expr: &str, col: usize, what: &str| {
            let caret = format!("{}^", ".".repeat(col - 1));
            assert_eq!(
                check(expr, deploy),
                format!("ERROR: <input>:1:{col}: found no matching overload for {what}\n | {expr}\n | {caret}"),
                "{expr}"
            );
        };
        one(
            "object.spec.replicas + 'a' > 1",
            22,
            "'_+_' applied to '(int, string)'",
        );
        one(
            "object.spec.replicas == 'three'",
            22,
            "'_==_' applied to '(int, string)'",
        );
        one(
            "object.spec.replicas && true",
            22,
            "'_&&_' applied to '(int, bool)'",
        );
        one(
            "size(object.spec.replicas) > 0",
            5,
            "'size' applied to '(int)'",
        );
        one(
            "object.metadata.name.startsWith(1)",
            32,
            "'startsWith' applied to 'string.(int)'",
        );
        one(
            "object.metadata.creationTimestamp < 5",
            35,
            "'_<_' applied to '(google.protobuf.Timestamp, int)'",
        );
        one("!object.spec.replicas", 1, "'!_' applied to '(int)'");
        one(
            "object.metadata.name in 'abc'",
            22,
            "'@in' applied to '(string, string)'",
        );
        one(
            "object.spec.replicas ? 1 : 2",
            22,
            "'_?_:_' applied to '(int, int, int)'",
        );
        one(
            "object.spec.template.spec.containers.all(c, c.name)",
            41,
            "'_&&_' applied to '(bool, string)'",
        );
        one(
            "size(object.metadata.name) + 'x' == ''",
            28,
            "'_+_' applied to '(int, string)'",
        );
        one(
            "object.metadata.labels.size() > 'a'",
            31,
            "'_>_' applied to '(int, string)'",
        );
        // Two problems, in source order; an error's result is not reported again.
        assert_eq!(
            check("object.spec.replicas + 'a' + 1 == size(true)", deploy),
            "ERROR: <input>:1:22: found no matching overload for '_+_' applied to '(int, string)'\n | object.spec.replicas + 'a' + 1 == size(true)\n | .....................^\nERROR: <input>:1:39: found no matching overload for 'size' applied to '(bool)'\n | object.spec.replicas + 'a' + 1 == size(true)\n | ......................................^"
        );
        // Comments and lines: positions are the parser's.
        assert_eq!(
            check("// why\nobject.spec.replicas + 'a' > 1 // so", deploy),
            "ERROR: <input>:2:22: found no matching overload for '_+_' applied to '(int, string)'\n | object.spec.replicas + 'a' > 1 // so\n | .....................^"
        );
        // At most 100 problems, as cel-go reports them.
        let many = vec!["object.spec.replicas + 'a'"; 150].join(" == ");
        let text = check(&many, deploy);
        assert_eq!(text.matches("found no matching overload").count(), 100);
        assert!(
            text.ends_with("\n50 more errors were truncated"),
            "{}",
            &text[text.len() - 80..]
        );
        // What checks.
        for ok in [
            "object.spec.replicas > 1.5 && object.spec.replicas % 2 == 0",
            "object.metadata.name + '-x' != 'a' && object.metadata.name.startsWith('web')",
            "size(object.metadata.labels) > 0 && 'app' in object.metadata.labels",
            "object.metadata.labels.all(k, k.startsWith('a') && object.metadata.labels[k] != '')",
            "object.spec.template.spec.containers.map(c, c.name).join(',') != ''",
            "object.spec.template.spec.containers.exists(c, c.image.endsWith(':latest'))",
            "(has(object.spec.paused) ? 1 : 2) == 1",
            "int(object.metadata.name) > 0 && string(object.spec.replicas) == '3'",
            "timestamp('2020-01-01T00:00:00Z') + duration('1s') > object.metadata.creationTimestamp",
            "object.metadata.name.split('-').size() == 2 && [1, 2] + [3] == [1, 2, 3]",
            "object.spec.strategy.rollingUpdate.maxSurge == 1 || object.spec.strategy.rollingUpdate.maxSurge == '25%'",
            "object.spec.template.spec.containers[0].resources.limits['cpu'] == '1'",
            "object.metadata.?labels.orValue({}).size() >= 0",
            "object.metadata.deletionTimestamp == null",
            "int(duration('1s')) == 1",
        ] {
            assert_eq!(check(ok, deploy), "", "{ok}");
        }
        // An object type is named after the kind by kube: not reported rather than misworded.
        assert_eq!(check("object.spec + 1 == 2", deploy), "");
    }
}
