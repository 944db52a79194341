//! CustomResourceDefinition schema machinery, modelled on kube-apiserver's
//! `k8s.io/apiextensions-apiserver` (`pkg/apis/apiextensions/validation`,
//! `pkg/apiserver/schema/{pruning,defaulting,objectmeta,listtype,cel}`, `pkg/apiserver/validation`)
//! and `k8s.io/kube-openapi/pkg/validation`.
//!
//! A [`Schema`] is built from a CRD version's `openAPIV3Schema` with [`Schema::from_crd_schema`],
//! which performs every static check kube performs on that schema (structural-schema rules,
//! defaults, list/map types, `x-kubernetes-validations` compilation) and reports them as
//! [`Violation`]s. The resulting schema then handles custom resources the way kube does:
//!
//! 1. [`Schema::prune`] drops unknown fields (returning their paths for `fieldValidation`),
//! 2. [`Schema::apply_defaults`] fills in defaults,
//! 3. [`Schema::validate`] runs OpenAPI validation, embedded-resource checks and list-type uniqueness,
//! 4. [`Schema::validate_cel`] evaluates the `x-kubernetes-validations` rules
//!    (kube skips this step when step 3 reported a blocking error, see [`blocking_violation`]).
//!
//! Violations carry kube's cause type (`reason`), field path and message (`field.Error.ErrorBody()`),
//! e.g. `Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
//! Errors on the root of a custom resource use kube's `<nil>` field ([`ROOT_FIELD`]).
//!
//! # Known differences from kube
//!
//! * CEL runs on the `cel` crate (0.13, with kube-cel 0.8's Kubernetes libraries), which has no
//!   type checker: compilation catches syntax errors, undeclared identifiers and functions,
//!   selections of fields the schema does not declare and obviously mistyped results; other type
//!   errors surface at evaluation. cel-go features the crate lacks (two-variable comprehensions,
//!   `optMap`, `type()`, ...) are rejected when the CRD is validated. `1 == 1.0` is false, and list
//!   equality is order-sensitive even for `set`/`map` lists.
//! * CEL cost is estimated from the AST before a rule runs (collection sizes from the schema at CRD
//!   time, from the data at runtime) instead of being metered; string functions are not charged by
//!   length and the CRD-wide total cost limit is not checked.
//! * Failing rules are reported with the schema type as the value (`Invalid value: "object": ...`);
//!   kube >= 1.35 omits it for objects/arrays and prints the value for scalars.
//! * [`Schema::validate`] does no ratcheting on update; [`Schema::validate_cel`] ratchets rule
//!   failures of unchanged values like kube.
//! * ObjectMeta validation of embedded resources covers name, generateName, namespace, labels and
//!   annotations; the root's metadata is left to the caller. The `status`-subresource restrictions
//!   on the root schema are not checked here.
//! * `uri` and `email` formats approximate Go's `net/url` / `net/mail`; `pattern` uses the `regex`
//!   crate with Go's ASCII `\d`, `\w`, `\s`, `\b`.
//! * `anyOf`/`oneOf` failures report the branch with the fewest errors (kube-openapi picks the one
//!   with the most successful checks).
//!
//! Rule compilation and evaluation run on a short-lived thread with a large (virtual) stack, as the
//! `cel` crate's parser and interpreter recurse deeply.

pub(crate) mod cel;
pub(crate) mod cel_authz;
mod cel_charged;
pub(crate) mod cel_regex;
mod default;
pub(crate) mod field;
mod format;
mod node;
pub(crate) mod objectmeta;
mod prune;
mod structural;
mod validate;

use std::fmt;

use serde_json::Value;

pub use self::cel::{PER_CALL_LIMIT, RUNTIME_COST_BUDGET, STATIC_ESTIMATED_COST_LIMIT};
/// CEL expressions outside schemas (admission policies).
pub mod expr {
    pub use super::cel::{
        as_string, cel_to_json, json_to_cel, largest_collection, off_the_workers, run_on_big_stack,
        source_offsets, type_name, CelData, Expression, LazyVar, Var,
    };
}
pub use self::field::ROOT_FIELD;
// Go's `%v` of a float64 and `json.Marshal` of an unstructured value (how kube shows a patch
// or a patched object in its errors: `patch`, `service`).
pub(crate) use self::field::{go_format_float, go_json, go_json_in_order};
use self::node::Node;

/// One validation problem, shaped like a Kubernetes `StatusCause`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Violation {
    /// kube's cause type: `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`,
    /// `FieldValueTypeInvalid`, `FieldValueTooLong`, `FieldValueTooMany`, `FieldValueDuplicate`,
    /// `FieldValueForbidden` (or `InternalError`).
    pub reason: String,
    /// Field path, e.g. `spec.items[2].name`; [`ROOT_FIELD`] (`<nil>`) for the object itself.
    pub field: String,
    /// kube's detail text, e.g. `Required value` or
    /// `Unsupported value: "x": supported values: "a", "b"`.
    pub message: String,
}

impl fmt::Display for Violation {
    /// kube's `field.Error.Error()`: `<field>: <message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// kube's `hasBlockingErr`: type, required, enum, maxLength, maxItems and maxProperties violations
/// prevent CEL rules from running. Returns the violation to report instead of running them.
pub fn blocking_violation(violations: &[Violation]) -> Option<Violation> {
    const BLOCKING: &[&str] = &[
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    ];
    violations
        .iter()
        .any(|v| BLOCKING.contains(&v.reason.as_str()))
        .then(|| {
            Violation::invalid(
                "",
                field::Bad::Json(Value::Null),
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            )
        })
}

/// A parsed, validated `openAPIV3Schema` (JSONSchemaProps) with its rules compiled.
#[derive(Debug, Clone)]
pub struct Schema {
    raw: Value,
    root: Node,
}

impl Schema {
    /// Parses a CRD version's `openAPIV3Schema` and runs kube's CRD-time checks on it: it must be
    /// structural, defaults must validate and be pruned, list/map types must be consistent, and
    /// every `x-kubernetes-validations` rule must compile (within the static cost limit).
    ///
    /// `field_path` is the path of the schema itself, e.g.
    /// `spec.versions[0].schema.openAPIV3Schema`; violations are reported below it (e.g.
    /// `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`).
    ///
    /// Not checked here (the caller knows them): the restrictions on the root schema when the status
    /// subresource is enabled, and the total rule cost of the whole CRD.
    pub fn from_crd_schema(v: &Value, field_path: &str) -> Result<Schema, Vec<Violation>> {
        let mut decode = Vec::new();
        let mut root = Node::parse(v, field_path, &mut decode);
        if !decode.is_empty() {
            return Err(decode);
        }
        let errs = structural::validate_crd_schema(&mut root, field_path);
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(Schema {
            raw: v.clone(),
            root,
        })
    }

    /// The schema as given.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Removes fields the schema does not know (kube's pruning with `isResourceRoot`): unknown
    /// fields are kept under `x-kubernetes-preserve-unknown-fields` (pruning resumes below nested
    /// `properties`/`additionalProperties`), the root's and embedded resources' `apiVersion`, `kind`
    /// and `metadata` are never pruned, and unknown ObjectMeta fields inside embedded resources'
    /// `metadata` are dropped. In both `metadata`s a `null` label, annotation or finalizer becomes
    /// `""`, as kube's round trip through the typed ObjectMeta leaves it (not reported). Returns
    /// the sorted paths of the removed fields, e.g. `spec.foo` (for
    /// `fieldValidation=Strict|Warn`: `unknown field "spec.foo"`).
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune(&self.root, obj)
    }

    /// Applies defaults like kube: non-nullable `null`s without a default are dropped first, then
    /// defaults are filled in top-down for missing properties (also in array items and
    /// `additionalProperties` values); a `null` in a non-nullable field with a default is replaced
    /// by the default, a `null` in a nullable field is kept.
    pub fn apply_defaults(&self, obj: &mut Value) {
        default::prune_non_nullable_nulls(obj, Some(&self.root));
        default::default(obj, Some(&self.root));
    }

    /// kube's `unstructuredSchemaCoercer` on an object converted to this schema's version
    /// (`schemaCoercingConverter`): pruned, and non-nullable `null`s without a default dropped
    /// (`PruneNonNullableNullsWithoutDefaults`); not defaulted.
    pub fn coerce(&self, obj: &mut Value) {
        prune::prune(&self.root, obj);
        default::prune_non_nullable_nulls(obj, Some(&self.root));
    }

    /// Validates an object: OpenAPI keywords (type, properties, required, enum, pattern, bounds,
    /// lengths, sizes, formats, nullable, additionalProperties, allOf/anyOf/oneOf/not,
    /// int-or-string, …), `x-kubernetes-embedded-resource` TypeMeta/ObjectMeta checks and
    /// `x-kubernetes-list-type` set/map uniqueness. Every violation is returned.
    ///
    /// Not included: validation of the root's `metadata` (the host validates ObjectMeta).
    pub fn validate(&self, obj: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        validate::Validator { base: "" }.validate(&self.root, "", obj, &mut out);
        objectmeta::validate("", &self.root, obj, &mut out);
        validate::validate_list_types("", &self.root, obj, &mut out);
        out
    }

    /// Validates an update as kube does with `CRDValidationRatcheting` (on by default since
    /// 1.30): [`Schema::validate`], but the violations within values equal to the old values
    /// they correlate with are dropped, and list-set/map uniqueness counts only when `old` had no
    /// such violation. An object stored before its CRD got stricter stays writable as long as
    /// the invalid part is left alone.
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        validate::Validator { base: "" }.validate_update(&self.root, "", obj, old, &mut out);
        objectmeta::validate("", &self.root, obj, &mut out);
        self.list_types_ratcheted(obj, old, &mut out);
        out
    }

    /// Validates a `/status` write as kube's `ValidateStatusUpdate`: only `status`, against
    /// its own schema (field paths under `status`, messages relative to it), ratcheted as an
    /// update; list-set/map uniqueness as in [`Schema::validate_update`].
    pub fn validate_status(&self, obj: &Value, old: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        if let (Some(status), Some(node)) = (obj.get("status"), self.root.prop("status")) {
            let v = validate::Validator { base: "status" };
            match old.get("status") {
                Some(o) => v.validate_update(node, "", status, o, &mut out),
                None => v.validate(node, "", status, &mut out),
            }
        }
        self.list_types_ratcheted(obj, old, &mut out);
        out
    }

    fn list_types_ratcheted(&self, obj: &Value, old: &Value, out: &mut Vec<Violation>) {
        let mut lists = Vec::new();
        validate::validate_list_types("", &self.root, obj, &mut lists);
        if !lists.is_empty() {
            let mut old_lists = Vec::new();
            validate::validate_list_types("", &self.root, old, &mut old_lists);
            if old_lists.is_empty() {
                out.extend(lists);
            }
        }
    }

    /// Evaluates every `x-kubernetes-validations` rule with `self` bound to its node and, on
    /// update, `oldSelf` bound to the correlated old node (through object properties, map keys and
    /// `x-kubernetes-list-type: map` keys). Rules using `oldSelf` are skipped when there is no old
    /// value unless `optionalOldSelf` is set (then `oldSelf` is an optional). On update, failures of
    /// rules that do not use `oldSelf` are dropped for values that did not change (kube's
    /// validation ratcheting).
    ///
    /// A failing rule yields kube's message shape, e.g. `Invalid value: "object": <message>` (or
    /// `failed rule: <rule>`); `reason` and `fieldPath` are honoured and `messageExpression` is used
    /// when it evaluates to a usable string. Costs are bounded per rule and per call (see
    /// [`PER_CALL_LIMIT`], [`RUNTIME_COST_BUDGET`]).
    /// Whether the schema has any `x-kubernetes-validations` rule (kube has a CEL validator for
    /// the version only then).
    pub fn has_rules(&self) -> bool {
        self.root.has_rules
    }

    pub fn validate_cel(&self, obj: &Value, old: Option<&Value>) -> Vec<Violation> {
        if !self.root.has_rules {
            return Vec::new();
        }
        let root = &self.root;
        cel::on_big_stack(|| {
            let mut out = Vec::new();
            let mut ev = cel::Evaluation::new(&mut out, obj, old);
            cel::validate_node(&mut ev, root, "", obj, old, true);
            out
        })
        .unwrap_or_else(|e| vec![Violation::internal("", &e)])
    }

    /// The raw sub-schema at a JSON path such as `.spec.replicas`, `.status.conditions[0].type`,
    /// `.metadata.labels['app']` (array subscripts descend into `items`, quoted subscripts and
    /// unknown names into `additionalProperties`). Used for scale subresource paths and printer
    /// columns.
    pub fn at_path(&self, path: &str) -> Option<&Value> {
        let mut cur = &self.raw;
        let chars: Vec<char> = path.trim().chars().collect();
        let mut i = 0;
        fn step_prop<'a>(cur: &'a Value, name: &str) -> Option<&'a Value> {
            if let Some(p) = cur.get("properties").and_then(|p| p.get(name)) {
                return Some(p);
            }
            cur.get("additionalProperties").filter(|a| a.is_object())
        }
        while i < chars.len() {
            match chars[i] {
                '.' => i += 1,
                '[' => {
                    let mut j = i + 1;
                    let mut quote: Option<char> = None;
                    while j < chars.len() {
                        match (quote, chars[j]) {
                            (None, '\'' | '"') => quote = Some(chars[j]),
                            (Some(q), c) if c == q => quote = None,
                            (None, ']') => break,
                            _ => {}
                        }
                        j += 1;
                    }
                    let inner: String = chars[i + 1..j.min(chars.len())].iter().collect();
                    let inner = inner.trim();
                    let quoted = inner.len() >= 2
                        && ((inner.starts_with('\'') && inner.ends_with('\''))
                            || (inner.starts_with('"') && inner.ends_with('"')));
                    cur = if quoted {
                        step_prop(cur, &inner[1..inner.len() - 1])?
                    } else {
                        cur.get("items").filter(|x| x.is_object())?
                    };
                    i = j + 1;
                }
                _ => {
                    let mut j = i;
                    while j < chars.len() && chars[j] != '.' && chars[j] != '[' {
                        j += 1;
                    }
                    let name: String = chars[i..j].iter().collect();
                    cur = step_prop(cur, &name)?;
                    i = j;
                }
            }
        }
        Some(cur)
    }
}

#[cfg(test)]
mod tests;
