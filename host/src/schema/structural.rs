//! Static validation of a CRD version's `openAPIV3Schema`: structural-schema invariants
//! (`apiserver/schema/validation.go`, `complete.go`, `convert.go`), defaults
//! (`schema/defaulting/validation.go`) and the generic checks of
//! `apis/apiextensions/validation.ValidateCustomResourceDefinitionOpenAPISchema`, including
//! `x-kubernetes-validations` compilation.

use serde_json::Value;

use super::cel::{self, Evaluation, RuleDiag, STATIC_ESTIMATED_COST_LIMIT};
use super::field::{self, child, index, key, Bad};
use super::node::{AdditionalProperties, Node, Rule};
use super::validate::Validator;
use super::{objectmeta, prune, Violation};

const OPENAPI_V3_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: &[&str] = &["metadata", "kind", "apiVersion"];
const SUPPORTED_REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Validates the parsed schema and compiles its rules. Returns every problem found.
pub(crate) fn validate_crd_schema(root: &mut Node, path: &str) -> Vec<Violation> {
    let mut errs = Vec::new();
    if root.nullable {
        errs.push(Violation::forbidden(
            &child(path, "nullable"),
            "nullable cannot be true at the root",
        ));
    }

    let mut init_errs = Vec::new();
    let mut cel_ok = false;
    match new_structural_error(root) {
        Some(msg) => init_errs.push(Violation::invalid(path, Bad::str(""), &msg)),
        None => {
            let mut s = Vec::new();
            invariants(root, Level::Root, path, &mut s);
            completeness_vv(root, Some(root), path, path, &mut s);
            s.sort_by_key(|v| format!("{}: {}", v.field, v.message));
            if !s.is_empty() {
                errs.extend(s);
            } else {
                match cel::compile_tree(root) {
                    Err(e) => errs.push(Violation::internal(path, &e)),
                    Ok(()) => {
                        let d = validate_defaults(root, path);
                        if d.is_empty() {
                            cel_ok = true;
                        } else {
                            errs.extend(d);
                        }
                    }
                }
            }
        }
    }

    let lists = openapi(root, path, &Ssv::default(), true, cel_ok);
    errs.extend(lists.schema);
    errs.extend(lists.cel);
    if errs.is_empty() {
        errs.extend(init_errs);
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// NewStructural
// ---------------------------------------------------------------------------------------------

fn unsupported(s: &Node) -> Option<String> {
    let checks = [
        (s.has_id, "id"),
        (s.has_schema, "schema"),
        (s.has_ref, "$ref"),
        (s.has_pattern_properties, "patternProperties"),
        (s.has_dependencies, "dependencies"),
        (s.has_additional_items, "additionalItems"),
        (s.has_definitions, "definitions"),
    ];
    checks
        .iter()
        .find(|(b, _)| *b)
        .map(|(_, n)| format!("OpenAPIV3Schema '{n}' is not supported"))
}

/// The first error `NewStructural` would return.
fn new_structural_error(s: &Node) -> Option<String> {
    if let Some(e) = unsupported(s) {
        return Some(e);
    }
    let nested = s
        .not
        .iter()
        .map(|b| b.as_ref())
        .chain(s.all_of.iter())
        .chain(s.any_of.iter())
        .chain(s.one_of.iter());
    for n in nested {
        if let Some(e) = new_structural_error(n) {
            return Some(e);
        }
    }
    if s.preserve_unknown_fields == Some(false) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .to_string(),
        );
    }
    if s.items_array.is_some() {
        return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".to_string());
    }
    if let Some(i) = &s.items {
        if let Some(e) = new_structural_error(i) {
            return Some(e);
        }
    }
    for (_, p) in &s.properties {
        if let Some(e) = new_structural_error(p) {
            return Some(e);
        }
    }
    if let Some(ap) = s.additional_schema() {
        if let Some(e) = new_structural_error(ap) {
            return Some(e);
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// ValidateStructural
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

fn props_path(path: &str, k: &str) -> String {
    key(&child(path, "properties"), k)
}

/// A node that only sets `type` (kube compares anyOf entries with `reflect.DeepEqual`).
fn only_type(n: &Node, t: &str) -> bool {
    let mut bare = n.clone();
    bare.ty.clear();
    n.ty == t && is_empty_node(&bare)
}

fn is_empty_node(n: &Node) -> bool {
    n.ty.is_empty()
        && n.format.is_empty()
        && n.title.is_empty()
        && n.description.is_empty()
        && !n.nullable
        && n.default.is_none()
        && n.maximum.is_none()
        && !n.exclusive_maximum
        && n.minimum.is_none()
        && !n.exclusive_minimum
        && n.max_length.is_none()
        && n.min_length.is_none()
        && n.pattern.is_empty()
        && n.max_items.is_none()
        && n.min_items.is_none()
        && !n.unique_items
        && n.multiple_of.is_none()
        && n.enum_values.is_none()
        && n.max_properties.is_none()
        && n.min_properties.is_none()
        && n.required.is_empty()
        && n.items.is_none()
        && n.items_array.is_none()
        && n.all_of.is_empty()
        && n.one_of.is_empty()
        && n.any_of.is_empty()
        && n.not.is_none()
        && n.properties.is_empty()
        && n.additional_properties.is_none()
        && n.preserve_unknown_fields.is_none()
        && !n.embedded_resource
        && !n.int_or_string
        && n.list_map_keys.is_empty()
        && n.list_type.is_none()
        && n.map_type.is_none()
        && n.validations.is_empty()
        && !n.has_example
        && !n.has_external_docs
}

fn is_int_or_string_any_of(any_of: &[Node]) -> bool {
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

fn invariants(s: &Node, lvl: Level, path: &str, out: &mut Vec<Violation>) {
    if s.ty == "array" && s.items.is_none() {
        out.push(Violation::required(
            &child(path, "items"),
            "must be specified",
        ));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &child(path, "items"), out);
    }
    for (k, p) in &s.properties {
        invariants(p, Level::Field, &props_path(path, k), out);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            out.push(Violation::forbidden(
                &child(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let AdditionalProperties::Schema(n) = ap {
            invariants(n, Level::Field, &child(path, "additionalProperties"), out);
        }
    }
    if s.int_or_string && s.preserves_unknown() {
        out.push(Violation::invalid(
            &child(path, "x-kubernetes-preserve-unknown-fields"),
            Bad::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.int_or_string && s.embedded_resource {
        out.push(Violation::invalid(
            &child(path, "x-kubernetes-embedded-resource"),
            Bad::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of = s
        .all_of
        .first()
        .is_some_and(|a| is_int_or_string_any_of(&a.any_of));
    value_validation(s, skip_any_of, skip_first_all_of, lvl, path, out);

    let check_metadata = lvl == Level::Root || s.embedded_resource;
    if s.embedded_resource && s.ty != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if s.ty.is_empty() {
            out.push(Violation::required(&child(path, "type"), msg));
        } else {
            out.push(Violation::invalid(
                &child(path, "type"),
                Bad::str(&s.ty),
                msg,
            ));
        }
    } else if s.ty.is_empty() && !s.int_or_string && !s.preserves_unknown() {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(Violation::required(&child(path, "type"), msg));
    }
    if s.embedded_resource && s.additional_properties.is_some() {
        out.push(Violation::forbidden(
            &child(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.ty.is_empty() && s.ty != "object" {
        out.push(Violation::invalid(
            &child(path, "type"),
            Bad::str(&s.ty),
            "must be object at the root",
        ));
    }
    for name in ["kind", "apiVersion"] {
        if let Some(p) = s.prop(name) {
            if check_metadata && p.ty != "string" {
                out.push(Violation::invalid(
                    &child(&props_path(path, name), "type"),
                    Bad::str(&p.ty),
                    "must be string",
                ));
            }
        }
    }
    if let Some(meta) = s.prop("metadata") {
        metadata_invariants(
            meta,
            check_metadata,
            lvl,
            &props_path(path, "metadata"),
            out,
        );
    }
    if s.embedded_resource && !s.preserves_unknown() && !s.has_properties() {
        out.push(Violation::required(
            &child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn metadata_invariants(s: &Node, check: bool, lvl: Level, path: &str, out: &mut Vec<Violation>) {
    if check && s.ty != "object" {
        out.push(Violation::invalid(
            &child(path, "type"),
            Bad::str(&s.ty),
            "must be object",
        ));
    }
    if lvl == Level::Root {
        let mut m = s.clone();
        let name = m.prop("name").is_some();
        let generate_name = m.prop("generateName").is_some();
        let n = m.properties.len();
        if (name && generate_name && n == 2) || ((name || generate_name) && n == 1) {
            m.set_properties(Vec::new());
        }
        m.ty.clear();
        m.default = None;
        if !is_empty_node(&m) {
            out.push(Violation::forbidden(
                path,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
}

fn value_validation(
    v: &Node,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    path: &str,
    out: &mut Vec<Violation>,
) {
    if !skip_any_of {
        for (i, a) in v.any_of.iter().enumerate() {
            nested(a, false, false, lvl, &index(&child(path, "anyOf"), i), out);
        }
    }
    for (i, a) in v.all_of.iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(a, skip, false, lvl, &index(&child(path, "allOf"), i), out);
    }
    for (i, a) in v.one_of.iter().enumerate() {
        nested(a, false, false, lvl, &index(&child(path, "oneOf"), i), out);
    }
    if let Some(n) = &v.not {
        nested(n, false, false, lvl, &child(path, "not"), out);
    }
    if let Some(e) = &v.pattern_err {
        out.push(Violation::invalid(
            &child(path, "pattern"),
            Bad::str(&v.pattern),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

fn nested(
    v: &Node,
    skip_any_of: bool,
    skip_all_of_any_of: bool,
    lvl: Level,
    path: &str,
    out: &mut Vec<Violation>,
) {
    value_validation(v, skip_any_of, skip_all_of_any_of, lvl, path, out);
    if let Some(items) = &v.items {
        nested(items, false, false, lvl, &child(path, "items"), out);
    }
    for (k, p) in &v.properties {
        nested(p, false, false, Level::Field, &props_path(path, k), out);
    }
    let c = |k: &str| child(path, k);
    if !v.ty.is_empty() {
        out.push(Violation::forbidden(
            &c("type"),
            "must be empty to be structural",
        ));
    }
    if matches!(
        v.additional_properties,
        Some(AdditionalProperties::Schema(_)) | Some(AdditionalProperties::Bool(true))
    ) {
        out.push(Violation::forbidden(
            &c("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if v.default.is_some() {
        out.push(Violation::forbidden(
            &c("default"),
            "must be undefined to be structural",
        ));
    }
    if !v.title.is_empty() {
        out.push(Violation::forbidden(
            &c("title"),
            "must be empty to be structural",
        ));
    }
    if !v.description.is_empty() {
        out.push(Violation::forbidden(
            &c("description"),
            "must be empty to be structural",
        ));
    }
    if v.nullable {
        out.push(Violation::forbidden(
            &c("nullable"),
            "must be false to be structural",
        ));
    }
    if v.preserves_unknown() {
        out.push(Violation::forbidden(
            &c("x-kubernetes-preserve-unknown-fields"),
            "must be false to be structural",
        ));
    }
    if v.embedded_resource {
        out.push(Violation::forbidden(
            &c("x-kubernetes-embedded-resource"),
            "must be false to be structural",
        ));
    }
    if v.int_or_string {
        out.push(Violation::forbidden(
            &c("x-kubernetes-int-or-string"),
            "must be false to be structural",
        ));
    }
    if !v.list_map_keys.is_empty() {
        out.push(Violation::forbidden(
            &c("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    if v.list_type.is_some() {
        out.push(Violation::forbidden(
            &c("x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if v.map_type.is_some() {
        out.push(Violation::forbidden(
            &c("x-kubernetes-map-type"),
            "must be undefined to be structural",
        ));
    }
    if !v.validations.is_empty() {
        out.push(Violation::forbidden(
            &c("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if v.prop("metadata").is_some() {
        out.push(Violation::forbidden(
            &props_path(path, "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

fn completeness_vv(
    v: &Node,
    s: Option<&Node>,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<Violation>,
) {
    let Some(s) = s else {
        out.push(Violation::required(
            s_path,
            &format!("because it is defined in {}", field::display(v_path)),
        ));
        return;
    };
    if let Some(n) = &v.not {
        completeness_nested(n, Some(s), s_path, &child(v_path, "not"), out);
    }
    for (name, list) in [
        ("allOf", &v.all_of),
        ("anyOf", &v.any_of),
        ("oneOf", &v.one_of),
    ] {
        for (i, n) in list.iter().enumerate() {
            completeness_nested(n, Some(s), s_path, &index(&child(v_path, name), i), out);
        }
    }
}

fn completeness_nested(
    v: &Node,
    s: Option<&Node>,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<Violation>,
) {
    let Some(s) = s else {
        out.push(Violation::required(
            s_path,
            &format!("because it is defined in {}", field::display(v_path)),
        ));
        return;
    };
    completeness_vv(v, Some(s), s_path, v_path, out);
    if let Some(items) = &v.items {
        completeness_nested(
            items,
            s.items.as_deref(),
            &child(s_path, "items"),
            &child(v_path, "items"),
            out,
        );
    }
    for (k, vf) in &v.properties {
        match s.prop(k) {
            None => out.push(Violation::required(
                &props_path(s_path, k),
                &format!("because it is defined in {}", props_path(v_path, k)),
            )),
            Some(sf) => completeness_nested(
                vf,
                Some(sf),
                &props_path(s_path, k),
                &props_path(v_path, k),
                out,
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ValidateDefaults
// ---------------------------------------------------------------------------------------------

fn validate_defaults(root: &Node, path: &str) -> Vec<Violation> {
    let mut out = Vec::new();
    defaults_walk(root, path, false, true, &mut out);
    out
}

fn defaults_walk(s: &Node, path: &str, inside_meta: bool, top: bool, out: &mut Vec<Violation>) {
    let embedded = top || s.embedded_resource;
    let inside_meta = inside_meta && !embedded;
    if let Some(d) = &s.default {
        let dpath = child(path, "default");
        if inside_meta {
            let errs = default_value_errors(s, d, &dpath, embedded);
            out.extend(errs);
        } else {
            let mut pruned = d.clone();
            prune::prune_node(s, &mut pruned, embedded);
            if pruned != *d {
                out.push(Violation::invalid(
                    &dpath,
                    Bad::of(d),
                    "must not have unknown fields",
                ));
            }
            if let Some(e) = coerce_error(d, &dpath, embedded) {
                out.push(e);
            } else {
                let mut om = Vec::new();
                objectmeta::validate(&dpath, s, d, &mut om);
                if !om.is_empty() {
                    out.extend(om);
                } else {
                    out.extend(default_value_errors(s, d, &dpath, embedded));
                }
            }
        }
    }
    if let Some(items) = &s.items {
        defaults_walk(items, &child(path, "items"), inside_meta, false, out);
    }
    for (k, p) in &s.properties {
        let sub_inside = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
        defaults_walk(p, &props_path(path, k), sub_inside, false, out);
    }
}

/// `objectmeta.Coerce` on a default of an embedded resource: the first type error, if any.
fn coerce_error(d: &Value, dpath: &str, embedded: bool) -> Option<Violation> {
    if !embedded {
        return None;
    }
    for (k, v) in d.as_object()? {
        match k.as_str() {
            "apiVersion" | "kind" if !v.is_string() => {
                return Some(Violation::invalid(
                    &child(dpath, k),
                    Bad::of(v),
                    "must be a string",
                ));
            }
            "metadata" => {
                if let Err(e) = objectmeta::get_object_meta(v) {
                    return Some(Violation::invalid(
                        &child(dpath, "metadata"),
                        Bad::of(v),
                        &e,
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

/// OpenAPI validation of a default, then its CEL rules (with `oldSelf` = the default, and again
/// without an old value).
fn default_value_errors(s: &Node, d: &Value, dpath: &str, resource: bool) -> Vec<Violation> {
    let mut out = Vec::new();
    Validator { base: dpath }.validate(s, "", d, &mut out);
    if !out.is_empty() || !s.has_rules {
        return out;
    }
    let run = |old: Option<&Value>| -> Vec<Violation> {
        let res = cel::on_big_stack(|| {
            let mut v = Vec::new();
            let mut ev = Evaluation::new(&mut v, d, old);
            ev.ratcheting = false;
            cel::validate_node(&mut ev, s, dpath, d, old, resource);
            v
        });
        res.unwrap_or_else(|e| vec![Violation::internal(dpath, &e)])
    };
    let mut errs = run(Some(d));
    if errs.is_empty() {
        errs = run(None);
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// ValidateCustomResourceDefinitionOpenAPISchema
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
    uncorrelatable: Option<String>,
}

impl Default for Ssv {
    fn default() -> Self {
        Ssv {
            allow_defaults: true,
            disallow_reason: String::new(),
            inside_meta: false,
            uncorrelatable: None,
        }
    }
}

impl Ssv {
    fn with_forbidden_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            disallow_reason: reason.to_string(),
            ..self.clone()
        }
    }

    fn with_inside_meta(&self) -> Ssv {
        Ssv {
            inside_meta: true,
            ..self.clone()
        }
    }

    fn with_forbid_old_self(&self, path: &str) -> Ssv {
        if self.uncorrelatable.is_some() {
            return self.clone();
        }
        Ssv {
            uncorrelatable: Some(path.to_string()),
            ..self.clone()
        }
    }

    fn validate(&self, s: &Node, path: &str, out: &mut Vec<Violation>) {
        let c = |k: &str| child(path, k);
        if !s.ty.is_empty() && !OPENAPI_V3_TYPES.contains(&s.ty.as_str()) {
            let valid: Vec<String> = OPENAPI_V3_TYPES.iter().map(|t| t.to_string()).collect();
            out.push(Violation::not_supported(
                &c("type"),
                Bad::str(&s.ty),
                &valid,
            ));
        }
        if s.default.is_some() && !self.allow_defaults {
            let mut detail = "must not be set".to_string();
            if !self.disallow_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&self.disallow_reason);
            }
            out.push(Violation::forbidden(&c("default"), &detail));
        }
        let forbidden = [
            (s.has_id, "id", "id is not supported"),
            (
                s.has_additional_items,
                "additionalItems",
                "additionalItems is not supported",
            ),
            (
                s.has_pattern_properties,
                "patternProperties",
                "patternProperties is not supported",
            ),
            (
                s.has_definitions,
                "definitions",
                "definitions is not supported",
            ),
            (
                s.has_dependencies,
                "dependencies",
                "dependencies is not supported",
            ),
            (s.has_ref, "$ref", "$ref is not supported"),
        ];
        for (present, k, msg) in forbidden {
            if present {
                out.push(Violation::forbidden(&c(k), msg));
            }
        }
        if s.ty == "null" {
            out.push(Violation::forbidden(
                &c("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if s.items_array.as_ref().is_some_and(|a| !a.is_empty()) {
            out.push(Violation::forbidden(
                &c("items"),
                "items must be a schema object and not an array",
            ));
        }
        if self.inside_meta && s.embedded_resource {
            out.push(Violation::forbidden(
                &c("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }
}

#[derive(Default)]
struct Lists {
    schema: Vec<Violation>,
    cel: Vec<Violation>,
}

impl Lists {
    fn append(&mut self, other: Lists) {
        self.schema.extend(other.schema);
        self.cel.extend(other.cel);
    }
}

fn map_is_correlatable(map_type: Option<&str>) -> bool {
    matches!(map_type, None | Some("granular") | Some("atomic"))
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

fn cost_error_message(name: &str, cost: u64, limit: u64) -> String {
    let f = cost as f64 / limit as f64;
    let factor = if f > 100.0 {
        "more than 100x".to_string()
    } else if f < 1.5 {
        format!("{f:.6}x")
    } else {
        format!("{f:.1}x")
    };
    format!("{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
}

fn openapi(s: &Node, path: &str, ssv: &Ssv, is_root: bool, cel_ctx: bool) -> Lists {
    let mut all = Lists::default();
    ssv.validate(s, path, &mut all.schema);
    let c = |k: &str| child(path, k);

    if s.unique_items {
        all.schema.push(Violation::forbidden(
            &c("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(ap) = &s.additional_properties {
        if s.has_properties()
            && matches!(
                ap,
                AdditionalProperties::Bool(false) | AdditionalProperties::Schema(_)
            )
        {
            all.schema.push(Violation::forbidden(
                &c("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_meta {
            ssv.with_forbidden_defaults("inside additionalProperties applying to object metadata")
        } else {
            ssv.clone()
        };
        if let AdditionalProperties::Schema(n) = ap {
            all.append(openapi(n, &c("additionalProperties"), &sub, false, cel_ctx));
        }
    }
    for (k, p) in &s.properties {
        let mut sub = ssv.clone();
        if !map_is_correlatable(s.map_type.as_deref()) {
            sub = sub.with_forbid_old_self(path);
        }
        if (is_root || s.embedded_resource) && META_FIELDS.contains(&k.as_str()) {
            sub = sub.with_inside_meta();
            if is_root {
                sub = sub.with_forbidden_defaults(&format!("in top-level {k}"));
            }
        }
        all.append(openapi(p, &props_path(path, k), &sub, false, cel_ctx));
    }
    if let Some(n) = &s.not {
        all.append(openapi(n, &c("not"), ssv, false, false));
    }
    for (name, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, n) in list.iter().enumerate() {
            all.append(openapi(n, &index(&c(name), i), ssv, false, false));
        }
    }
    if s.items.is_some() || s.items_array.is_some() {
        let mut sub = ssv.clone();
        if s.list_type.as_deref() != Some("map") {
            sub = sub.with_forbid_old_self(path);
        }
        if let Some(items) = &s.items {
            all.append(openapi(items, &c("items"), &sub, false, cel_ctx));
        }
        if let Some(arr) = &s.items_array {
            for (i, n) in arr.iter().enumerate() {
                all.append(openapi(n, &index(&c("items"), i), &sub, false, cel_ctx));
            }
        }
    }
    if s.preserve_unknown_fields == Some(false) {
        all.schema.push(Violation::invalid(
            &c("x-kubernetes-preserve-unknown-fields"),
            Bad::Bool(false),
            "must be true or undefined",
        ));
    }
    list_and_map_types(s, path, &mut all.schema);
    rules_schema_checks(s, path, &mut all.schema);

    if !s.validations.is_empty() && all.schema.is_empty() && cel_ctx {
        for (i, rule) in s.validations.iter().enumerate() {
            rule_cel_errors(
                rule,
                &rule.diag,
                &index(&c("x-kubernetes-validations"), i),
                ssv,
                &mut all.cel,
            );
        }
    }
    all
}

fn list_and_map_types(s: &Node, path: &str, out: &mut Vec<Violation>) {
    let c = |k: &str| child(path, k);
    if let Some(mt) = &s.map_type {
        if s.ty != "object" {
            let msg = "must be object if x-kubernetes-map-type is specified";
            if s.ty.is_empty() {
                out.push(Violation::required(&c("type"), msg));
            } else {
                out.push(Violation::invalid(&c("type"), Bad::str(&s.ty), msg));
            }
        }
        if mt != "atomic" && mt != "granular" {
            out.push(Violation::not_supported(
                &c("x-kubernetes-map-type"),
                Bad::str(mt),
                &["atomic".to_string(), "granular".to_string()],
            ));
        }
    }
    let items_path = c("items");
    if let Some(lt) = &s.list_type {
        if s.ty != "array" {
            let msg = "must be array if x-kubernetes-list-type is specified";
            if s.ty.is_empty() {
                out.push(Violation::required(&c("type"), msg));
            } else {
                out.push(Violation::invalid(&c("type"), Bad::str(&s.ty), msg));
            }
        } else if lt == "set" {
            if let Some(is) = &s.items {
                let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
                if is.ty == "array" {
                    if let Some(ilt) = is.list_type.as_deref().filter(|l| *l != "atomic") {
                        out.push(Violation::invalid(
                            &child(&items_path, "x-kubernetes-list-type"),
                            Bad::str(ilt),
                            msg,
                        ));
                    }
                } else if is.ty == "object" && is.map_type.as_deref() != Some("atomic") {
                    // kube reports the items' list type here (a nil pointer renders as null)
                    let bad = match &is.list_type {
                        Some(l) => Bad::str(l),
                        None => Bad::Json(Value::Null),
                    };
                    out.push(Violation::invalid(
                        &child(&items_path, "x-kubernetes-map-type"),
                        bad,
                        msg,
                    ));
                }
            }
        }
        if lt != "atomic" && lt != "set" && lt != "map" {
            out.push(Violation::not_supported(
                &c("x-kubernetes-list-type"),
                Bad::str(lt),
                &["atomic".to_string(), "set".to_string(), "map".to_string()],
            ));
        }
    }
    let keys_json = Value::Array(
        s.list_map_keys
            .iter()
            .map(|k| Value::String(k.clone()))
            .collect(),
    );
    if !s.list_map_keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match &s.list_type {
            None => out.push(Violation::required(&c("x-kubernetes-list-type"), msg)),
            Some(lt) if lt != "map" => out.push(Violation::invalid(
                &c("x-kubernetes-list-type"),
                Bad::str(lt),
                msg,
            )),
            _ => {}
        }
    }
    if s.list_type.as_deref() == Some("map") {
        if s.list_map_keys.is_empty() {
            out.push(Violation::required(
                &c("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        if s.items.is_none() && s.items_array.is_none() {
            out.push(Violation::required(
                &items_path,
                "must have a schema if x-kubernetes-list-type is map",
            ));
        }
        if s.items_array.is_some() {
            out.push(Violation::invalid(
                &items_path,
                Bad::Json(Value::Null),
                "must only have a single schema if x-kubernetes-list-type is map",
            ));
        }
        if let Some(is) = &s.items {
            if is.ty != "object" {
                out.push(Violation::invalid(
                    &child(&items_path, "type"),
                    Bad::str(&is.ty),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let mut seen = std::collections::HashSet::new();
                for k in &s.list_map_keys {
                    match is.prop(k) {
                        Some(p) => {
                            if p.ty == "array" || p.ty == "object" {
                                out.push(Violation::invalid(
                                    &child(&props_path(&items_path, k), "type"),
                                    Bad::str(&is.ty),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => out.push(Violation::invalid(
                            &c("x-kubernetes-list-map-keys"),
                            Bad::Json(keys_json.clone()),
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(k.as_str()) {
                        out.push(Violation::invalid(
                            &c("x-kubernetes-list-map-keys"),
                            Bad::Json(keys_json.clone()),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
    // validateMapListKeysMapSet
    if let (Some(is), Some(lt)) = (&s.items, &s.list_type) {
        if lt == "set" || lt == "map" {
            if is.nullable {
                out.push(Violation::forbidden(
                    &child(&items_path, "nullable"),
                    &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
                ));
            }
            if lt == "map" {
                for k in &s.list_map_keys {
                    let Some(p) = is.prop(k) else { continue };
                    let pp = props_path(&items_path, k);
                    if !is.required.contains(k) && p.default.is_none() {
                        out.push(Violation::required(
                            &child(&pp, "default"),
                            "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                        ));
                    }
                    if p.nullable {
                        out.push(Violation::forbidden(
                            &child(&pp, "nullable"),
                            "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                        ));
                    }
                }
            }
        }
    }
}

fn rules_schema_checks(s: &Node, path: &str, out: &mut Vec<Violation>) {
    let base = child(path, "x-kubernetes-validations");
    for (i, rule) in s.validations.iter().enumerate() {
        let rp = index(&base, i);
        let c = |k: &str| child(&rp, k);
        let trimmed_rule = rule.rule.trim();
        let trimmed_msg = rule.message.trim();
        if trimmed_rule.is_empty() {
            out.push(Violation::required(&c("rule"), "rule is not specified"));
        } else if !rule.message.is_empty() && trimmed_msg.is_empty() {
            out.push(Violation::invalid(
                &c("message"),
                Bad::str(&rule.message),
                "must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            out.push(Violation::invalid(
                &c("message"),
                Bad::str(&rule.message),
                "must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            out.push(Violation::required(
                &c("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
            out.push(Violation::required(
                &c("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(r) = &rule.reason {
            if !SUPPORTED_REASONS.contains(&r.as_str()) {
                let valid: Vec<String> = SUPPORTED_REASONS.iter().map(|s| s.to_string()).collect();
                out.push(Violation::not_supported(&c("reason"), Bad::str(r), &valid));
            }
        }
        if !rule.field_path.is_empty() && rule.field_path.trim().is_empty() {
            out.push(Violation::invalid(
                &c("fieldPath"),
                Bad::str(&rule.field_path),
                "must be non-empty if specified",
            ));
        }
        if has_newlines(&rule.field_path) {
            out.push(Violation::invalid(
                &c("fieldPath"),
                Bad::str(&rule.field_path),
                "must not contain line breaks",
            ));
        }
        if !rule.field_path.is_empty() && cel::valid_field_path(&rule.field_path, s).is_err() {
            out.push(Violation::invalid(
                &c("fieldPath"),
                Bad::str(&rule.field_path),
                "must be a valid path",
            ));
        }
    }
}

fn rule_cel_errors(rule: &Rule, diag: &RuleDiag, rp: &str, ssv: &Ssv, out: &mut Vec<Violation>) {
    let c = |k: &str| child(rp, k);
    if diag.estimated_cost > STATIC_ESTIMATED_COST_LIMIT {
        out.push(Violation::forbidden(
            &c("rule"),
            &cost_error_message(
                "estimated rule cost",
                diag.estimated_cost,
                STATIC_ESTIMATED_COST_LIMIT,
            ),
        ));
    }
    if let Some(e) = &diag.error {
        out.push(Violation::invalid(
            &c("rule"),
            Bad::Raw(rule.go_struct_json()),
            e,
        ));
    }
    if let Some(e) = &diag.message_expression_error {
        out.push(Violation::invalid(
            &c("messageExpression"),
            Bad::Raw(rule.go_struct_json()),
            e,
        ));
    } else if diag.message_expression_cost > STATIC_ESTIMATED_COST_LIMIT {
        out.push(Violation::forbidden(
            &c("messageExpression"),
            &cost_error_message(
                "estimated messageExpression cost",
                diag.message_expression_cost,
                STATIC_ESTIMATED_COST_LIMIT,
            ),
        ));
    }
    if diag.uses_old_self {
        if let Some(up) = &ssv.uncorrelatable {
            out.push(Violation::invalid(
                &c("rule"),
                Bad::str(&rule.rule),
                &format!(
                    "oldSelf cannot be used on the uncorrelatable portion of the schema within {}",
                    field::display(up)
                ),
            ));
        }
    } else if let Some(b) = rule.optional_old_self {
        out.push(Violation::invalid(
            &c("optionalOldSelf"),
            Bad::Bool(b),
            "may not be set if oldSelf is not used in rule",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: &str = "spec.versions[0].schema.openAPIV3Schema";

    fn check(v: Value) -> Vec<String> {
        let mut errs = vec![];
        let mut n = Node::parse(&v, P, &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        validate_crd_schema(&mut n, P)
            .iter()
            .map(|v| format!("{}|{}|{}", v.reason, v.field, v.message))
            .collect()
    }

    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    #[test]
    fn accepts_a_typical_schema() {
        let errs = check(obj(json!({
            "spec": {"type": "object", "required": ["replicas"], "properties": {
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "selector": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "x-kubernetes-validations": [{"rule": "self.replicas >= 0", "message": "m"}]},
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        })));
        assert!(errs.is_empty(), "{errs:#?}");
    }

    #[test]
    fn missing_types() {
        let errs = check(obj(
            json!({"spec": {"properties": {"a": {"type": "string"}}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueRequired|{P}.properties[spec].type|Required value: must not be empty for specified object fields")]
        );
        let errs = check(json!({"properties": {}}));
        assert_eq!(
            errs,
            vec![format!(
                "FieldValueRequired|{P}.type|Required value: must not be empty at the root"
            )]
        );
        let errs = check(obj(json!({"l": {"type": "array", "items": {}}})));
        assert_eq!(
            errs,
            vec![format!("FieldValueRequired|{P}.properties[l].items.type|Required value: must not be empty for specified array items")]
        );
        let errs = check(obj(json!({"l": {"type": "array"}})));
        assert_eq!(
            errs,
            vec![format!(
                "FieldValueRequired|{P}.properties[l].items|Required value: must be specified"
            )]
        );
    }

    #[test]
    fn junctor_restrictions() {
        let errs = check(obj(
            json!({"a": {"type": "string", "anyOf": [{"type": "string", "default": "x"}]}}),
        ));
        assert_eq!(
            errs,
            vec![
                format!("FieldValueForbidden|{P}.properties[a].anyOf[0].default|Forbidden: must be undefined to be structural"),
                format!("FieldValueForbidden|{P}.properties[a].anyOf[0].type|Forbidden: must be empty to be structural"),
            ]
        );
        // completeness is checked for the root's junctors (like kube)
        let errs = check(
            json!({"type": "object", "properties": {"a": {"type": "string"}},
            "allOf": [{"properties": {"x": {"type": "string"}}}]}),
        );
        assert_eq!(
            errs,
            vec![
                format!("FieldValueForbidden|{P}.allOf[0].properties[x].type|Forbidden: must be empty to be structural"),
                format!("FieldValueRequired|{P}.properties[x]|Required value: because it is defined in {P}.allOf[0].properties[x]"),
            ]
        );
    }

    #[test]
    fn properties_and_additional_properties() {
        let errs = check(obj(
            json!({"a": {"type": "object", "properties": {"x": {"type": "string"}},
            "additionalProperties": {"type": "string"}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueForbidden|{P}.properties[a].additionalProperties|Forbidden: additionalProperties and properties are mutual exclusive")]
        );
        let errs = check(json!({"type": "object", "additionalProperties": {"type": "string"}}));
        assert_eq!(
            errs,
            vec![format!("FieldValueForbidden|{P}.additionalProperties|Forbidden: must not be used at the root")]
        );
    }

    #[test]
    fn items_must_be_a_schema() {
        let errs = check(obj(
            json!({"a": {"type": "array", "items": [{"type": "string"}]}}),
        ));
        assert!(
            errs.contains(&format!("FieldValueForbidden|{P}.properties[a].items|Forbidden: items must be a schema object and not an array")),
            "{errs:?}"
        );
    }

    #[test]
    fn root_metadata_restrictions() {
        let errs = check(obj(
            json!({"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueForbidden|{P}.properties[metadata]|Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")]
        );
        let errs = check(obj(
            json!({"metadata": {"type": "object", "default": {"name": "x"}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueForbidden|{P}.properties[metadata].default|Forbidden: must not be set in top-level metadata")]
        );
    }

    #[test]
    fn defaults_must_validate_and_be_pruned() {
        let errs = check(obj(
            json!({"a": {"type": "integer", "maximum": 3, "default": 5}}),
        ));
        assert_eq!(
            errs,
            // kube-openapi names the default's root "", hence " in body"
            vec![format!("FieldValueInvalid|{P}.properties[a].default|Invalid value: 5:  in body should be less than or equal to 3")]
        );
        let errs = check(obj(
            json!({"a": {"type": "object", "properties": {"x": {"type": "string"}}, "default": {"x": "1", "y": 2}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueInvalid|{P}.properties[a].default|Invalid value: {{\"x\":\"1\",\"y\":2}}: must not have unknown fields")]
        );
        let errs = check(obj(json!({"a": {"type": "string", "default": "x",
            "x-kubernetes-validations": [{"rule": "self != 'x'", "message": "not x"}]}})));
        assert_eq!(
            errs,
            vec![format!(
                "FieldValueInvalid|{P}.properties[a].default|Invalid value: \"string\": not x"
            )]
        );
    }

    #[test]
    fn list_map_keys() {
        let errs = check(obj(
            json!({"l": {"type": "array", "x-kubernetes-list-type": "map",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueRequired|{P}.properties[l].x-kubernetes-list-map-keys|Required value: must not be empty if x-kubernetes-list-type is map")]
        );
        let errs = check(obj(
            json!({"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "nope"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
        ));
        assert_eq!(
            errs,
            vec![
                format!("FieldValueInvalid|{P}.properties[l].x-kubernetes-list-map-keys|Invalid value: [\"name\",\"nope\"]: entries must all be names of item properties"),
                format!("FieldValueRequired|{P}.properties[l].items.properties[name].default|Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
            ]
        );
        let errs = check(obj(
            json!({"l": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueNotSupported|{P}.properties[l].x-kubernetes-list-type|Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"")]
        );
        let errs = check(obj(
            json!({"l": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueInvalid|{P}.properties[l].items.x-kubernetes-map-type|Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set")]
        );
    }

    #[test]
    fn misc_generic_checks() {
        let errs = check(obj(json!({"a": {"type": "strin"}})));
        assert_eq!(
            errs,
            vec![format!("FieldValueNotSupported|{P}.properties[a].type|Unsupported value: \"strin\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"")]
        );
        let errs = check(obj(
            json!({"a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueForbidden|{P}.properties[a].uniqueItems|Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")]
        );
        let errs = check(obj(json!({"a": {"type": "string", "pattern": "("}})));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].contains("must be a valid regular expression, but isn't"),
            "{errs:?}"
        );
        let errs = check(obj(
            json!({"a": {"type": "string", "x-kubernetes-preserve-unknown-fields": false}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueInvalid|{P}.properties[a].x-kubernetes-preserve-unknown-fields|Invalid value: false: must be true or undefined")]
        );
        let errs = check(json!({"type": "object", "nullable": true}));
        assert_eq!(
            errs,
            vec![format!(
                "FieldValueForbidden|{P}.nullable|Forbidden: nullable cannot be true at the root"
            )]
        );
        let errs = check(obj(
            json!({"a": {"type": "object", "x-kubernetes-embedded-resource": true}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueRequired|{P}.properties[a].properties|Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields")]
        );
        let errs = check(obj(
            json!({"a": {"type": "object", "x-kubernetes-map-type": "sometimes"}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueNotSupported|{P}.properties[a].x-kubernetes-map-type|Unsupported value: \"sometimes\": supported values: \"atomic\", \"granular\"")]
        );
        let errs = check(obj(
            json!({"a": {"type": "string", "x-kubernetes-map-type": "atomic"}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueInvalid|{P}.properties[a].type|Invalid value: \"string\": must be object if x-kubernetes-map-type is specified")]
        );
        let errs = check(obj(json!({"a": {"type": "object", "$ref": "#/x"}})));
        assert_eq!(
            errs,
            vec![format!(
                "FieldValueForbidden|{P}.properties[a].$ref|Forbidden: $ref is not supported"
            )]
        );
    }

    #[test]
    fn rule_checks() {
        let errs = check(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.x ==", "message": "m"}]}),
        );
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with(&format!("FieldValueInvalid|{P}.x-kubernetes-validations[0].rule|Invalid value: {{\"Rule\":\"self.x ==\",\"Message\":\"m\",")),
            "{errs:?}"
        );
        assert!(
            errs[0].contains("compilation failed: ERROR: <input>:1:"),
            "{errs:?}"
        );
        let errs = check(json!({"type": "object", "x-kubernetes-validations": [{"rule": " "}]}));
        assert_eq!(
            errs,
            vec![format!("FieldValueRequired|{P}.x-kubernetes-validations[0].rule|Required value: rule is not specified")]
        );
        let errs = check(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "Nope"}]}),
        );
        assert_eq!(errs.len(), 1);
        assert!(errs[0].contains("supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""));
        let errs = check(
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": []}),
        );
        assert!(errs.is_empty());
        let errs = check(
            json!({"type": "object", "properties": {"a": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".b"}]}),
        );
        assert_eq!(
            errs,
            vec![format!("FieldValueInvalid|{P}.x-kubernetes-validations[0].fieldPath|Invalid value: \".b\": must be a valid path")]
        );
        let errs = check(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "optionalOldSelf": true}]}),
        );
        assert_eq!(
            errs,
            vec![format!("FieldValueInvalid|{P}.x-kubernetes-validations[0].optionalOldSelf|Invalid value: true: may not be set if oldSelf is not used in rule")]
        );
        let errs = check(obj(
            json!({"l": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}),
        ));
        assert_eq!(
            errs,
            vec![format!("FieldValueInvalid|{P}.properties[l].items.x-kubernetes-validations[0].rule|Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {P}.properties[l]")]
        );
        let errs = check(obj(
            json!({"l": {"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x != y || true))"}]}}),
        ));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("estimated rule cost exceeds budget by factor of more than 100x"),
            "{errs:?}"
        );
    }
}
