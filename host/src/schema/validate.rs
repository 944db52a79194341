//! OpenAPI value validation, a port of `k8s.io/kube-openapi/pkg/validation/validate` as driven by
//! `apiextensions-apiserver/pkg/apiserver/validation` (including its error-to-field-error mapping),
//! plus `x-kubernetes-list-type` uniqueness (`schema/listtype`).

use serde_json::{Number, Value};

use super::field::{self, go_format_float, go_format_float_f, go_json, go_quote, Bad};
use super::format;
use super::node::{AdditionalProperties, Node};
use super::Violation;

const IN: &str = "body";

/// A number as Go's unstructured decoder types it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

pub(crate) fn num(n: &Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::Int(i),
        None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    fn bad(self) -> Bad {
        match self {
            Num::Int(i) => Bad::Int(i),
            Num::Float(f) => Bad::Float(f),
        }
    }
}

/// go-openapi `swag.IsFloat64AJSONInteger`.
pub(crate) fn is_float64_json_integer(f: f64) -> bool {
    const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_991.0; // 1<<53 - 1
    if !f.is_finite() || !(-MAX_JSON_FLOAT..=MAX_JSON_FLOAT).contains(&f) {
        return false;
    }
    if f == f.trunc() {
        return true;
    }
    if f < 0.0 {
        return false;
    }
    let g = f.floor();
    if g == 0.0 {
        return false;
    }
    (f - g) / (f + g) < 1e-9
}

/// The kube-openapi validator rooted at a field path (`fldPath` in kube; empty = nil root).
pub(crate) struct Validator<'a> {
    pub base: &'a str,
}

impl Validator<'_> {
    /// `kubeOpenAPIResultToFieldErrors`: a kube-openapi error name becomes a child of the base path.
    fn err_path(&self, name: &str) -> String {
        if !name.is_empty() && name != "." {
            field::child(self.base, name.strip_prefix('.').unwrap_or(name))
        } else {
            self.base.to_string()
        }
    }

    /// A non-`*errors.Validation` error (composite or plain) lands on the base path.
    fn plain(&self, msg: String) -> Violation {
        Violation::invalid(self.base, Bad::str(""), &msg)
    }

    /// Validates `data` against `node`; `path` is kube-openapi's path ("" at the root).
    pub(crate) fn validate(&self, node: &Node, path: &str, data: &Value, out: &mut Vec<Violation>) {
        self.validate_at(node, path, data, None, out);
    }

    /// [`Validator::validate`] of an update, ratcheted as kube's `RatchetingSchemaValidator`
    /// does it: the violations within a value equal to the old value it correlates with (through
    /// object properties, map keys and `x-kubernetes-list-type: map` keys; other lists do not
    /// correlate) are dropped, so an object stored before its CRD got stricter stays writable as
    /// long as the invalid part is left alone.
    pub(crate) fn validate_update(
        &self,
        node: &Node,
        path: &str,
        data: &Value,
        old: &Value,
        out: &mut Vec<Violation>,
    ) {
        self.validate_at(node, path, data, Some(old), out);
    }

    fn validate_at(
        &self,
        node: &Node,
        path: &str,
        data: &Value,
        old: Option<&Value>,
        out: &mut Vec<Violation>,
    ) {
        if old.is_some_and(|o| o == data) {
            return;
        }
        let fmt = format::effective_format(&node.ty, node.int_or_string, &node.format);
        let types: Vec<&str> = if node.int_or_string {
            vec!["integer", "string"]
        } else if node.ty.is_empty() {
            vec![]
        } else {
            vec![node.ty.as_str()]
        };

        if data.is_null() {
            if !types.is_empty() && !types.contains(&"null") && !node.nullable {
                out.push(self.invalid_type(path, &types.join(","), "null"));
            }
            self.validate_enum(node, path, data, out);
            return;
        }

        if !types.is_empty() || !fmt.is_empty() {
            self.validate_type(&types, &fmt, path, data, out);
        }
        self.validate_schema_props(node, path, data, old, out);
        if let Value::String(s) = data {
            self.validate_string(node, path, s, out);
            if !fmt.is_empty()
                && format::is_string_format(&fmt)
                && !format::validate_string_format(&fmt, s)
            {
                out.push(Violation::type_invalid(
                    &self.err_path(path),
                    Bad::str(s),
                    &format!("{path} in {IN} must be of type {fmt}: {}", go_quote(s)),
                ));
            }
        }
        if let Value::Number(n) = data {
            self.validate_number(node, &types, &fmt, path, num(n), out);
        }
        if let Value::Array(a) = data {
            self.validate_slice(node, path, a, old, out);
        }
        self.validate_enum(node, path, data, out);
        if let Value::Object(m) = data {
            self.validate_object(node, path, m, old, out);
        }
    }

    fn invalid_type(&self, path: &str, type_name: &str, value: &str) -> Violation {
        Violation::type_invalid(
            &self.err_path(path),
            Bad::str(value),
            &format!(
                "{path} in {IN} must be of type {type_name}: {}",
                go_quote(value)
            ),
        )
    }

    fn validate_type(
        &self,
        types: &[&str],
        fmt: &str,
        path: &str,
        data: &Value,
        out: &mut Vec<Violation>,
    ) {
        let (sch_type, data_format) = match data {
            Value::Bool(_) => ("boolean", ""),
            Value::String(_) => ("string", ""),
            Value::Number(n) => match num(n) {
                Num::Int(_) => ("integer", "int64"),
                Num::Float(_) => ("number", "float64"),
            },
            Value::Array(_) => ("array", ""),
            Value::Object(_) => ("object", ""),
            Value::Null => return,
        };
        let string_or_slice = matches!(data, Value::String(_) | Value::Array(_));
        let has = |t: &str| types.contains(&t);
        let is_float_int = match data {
            Value::Number(n) => {
                sch_type == "number" && is_float64_json_integer(num(n).as_f64()) && has("integer")
            }
            _ => false,
        };
        let is_int_float = sch_type == "integer" && has("number");
        let type_matches = has(sch_type) || is_float_int || is_int_float;
        // a non-string value whose type does not match, but whose format would (kube checks the
        // format first)
        let format_mismatch =
            !(string_or_slice || fmt.is_empty() || type_matches || data_format == fmt);
        if format_mismatch {
            out.push(self.invalid_type(path, fmt, data_format));
            return;
        }
        let numeric = has("number") || has("integer");
        if string_or_slice && !fmt.is_empty() && !numeric {
            return;
        }
        if !(has(sch_type) || is_float_int || is_int_float) {
            out.push(self.invalid_type(path, &types.join(","), sch_type));
        }
    }

    fn validate_schema_props(
        &self,
        node: &Node,
        path: &str,
        data: &Value,
        old: Option<&Value>,
        out: &mut Vec<Violation>,
    ) {
        if !node.any_of.is_empty() {
            let mut best: Option<Vec<Violation>> = None;
            let mut succeeded = false;
            for s in &node.any_of {
                let mut r = Vec::new();
                self.validate_at(s, path, data, old, &mut r);
                if r.is_empty() {
                    succeeded = true;
                    best = None;
                    break;
                }
                if best.as_ref().is_none_or(|b| r.len() < b.len()) {
                    best = Some(r);
                }
            }
            if !succeeded {
                out.push(self.plain(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(path)
                )));
            }
            if let Some(b) = best {
                out.extend(b);
            }
        }
        if !node.one_of.is_empty() {
            let mut best: Option<Vec<Violation>> = None;
            let mut validated = 0usize;
            for s in &node.one_of {
                let mut r = Vec::new();
                self.validate_at(s, path, data, old, &mut r);
                if r.is_empty() {
                    validated += 1;
                    best = None;
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|b| r.len() < b.len()) {
                    best = Some(r);
                }
            }
            if validated != 1 {
                let additional = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                out.push(self.plain(format!(
                    "{} must validate one and only one schema (oneOf). {additional}",
                    go_quote(path)
                )));
                if let Some(b) = best {
                    out.extend(b);
                }
            }
        }
        if !node.all_of.is_empty() {
            let mut validated = 0usize;
            for s in &node.all_of {
                let mut r = Vec::new();
                self.validate_at(s, path, data, old, &mut r);
                if r.is_empty() {
                    validated += 1;
                }
                out.extend(r);
            }
            if validated != node.all_of.len() {
                let additional = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                out.push(self.plain(format!(
                    "{} must validate all the schemas (allOf){additional}",
                    go_quote(path)
                )));
            }
        }
        if let Some(not) = &node.not {
            let mut r = Vec::new();
            self.validate_at(not, path, data, old, &mut r);
            if r.is_empty() {
                out.push(self.plain(format!(
                    "{} must not validate the schema (not)",
                    go_quote(path)
                )));
            }
        }
    }

    fn validate_string(&self, node: &Node, path: &str, s: &str, out: &mut Vec<Violation>) {
        let len = s.chars().count() as i64;
        if let Some(max) = node.max_length {
            if len > max {
                out.push(Violation::too_long(&self.err_path(path), max));
                return;
            }
        }
        if let Some(min) = node.min_length {
            if len < min {
                out.push(Violation::invalid(
                    &self.err_path(path),
                    Bad::str(s),
                    &format!("{path} in {IN} should be at least {min} chars long"),
                ));
                return;
            }
        }
        if !node.pattern.is_empty() {
            let msg = match (&node.pattern_re, &node.pattern_err) {
                (Some(re), _) => {
                    if re.is_match(s) {
                        return;
                    }
                    format!("{path} in {IN} should match '{}'", node.pattern)
                }
                (None, err) => format!(
                    "{path} in {IN} should match '{}, but pattern is invalid: {}'",
                    node.pattern,
                    err.as_deref().unwrap_or("invalid pattern")
                ),
            };
            out.push(Violation::invalid(&self.err_path(path), Bad::str(s), &msg));
        }
    }

    fn validate_number(
        &self,
        node: &Node,
        types: &[&str],
        fmt: &str,
        path: &str,
        v: Num,
        out: &mut Vec<Violation>,
    ) {
        let (ty, nfmt) = if types.len() == 1 && !node.int_or_string {
            match types[0] {
                "integer" => (
                    "integer",
                    if fmt == "int32" || fmt == "int64" {
                        fmt
                    } else {
                        ""
                    },
                ),
                "number" => (
                    "number",
                    if fmt == "float" || fmt == "double" {
                        fmt
                    } else {
                        ""
                    },
                ),
                _ => ("", ""),
            }
        } else {
            ("", "")
        };
        let data = v.as_f64();

        if let Err(e) = value_valid_against_range(v, ty, nfmt, "Checked", path) {
            out.push(self.plain(e));
        }

        let mut res_multiple = Vec::new();
        if let Some(factor) = node.multiple_of {
            match value_valid_against_range(Num::Float(factor), ty, nfmt, "MultipleOf", path) {
                Ok(()) => match v {
                    Num::Int(i) => {
                        let f = factor as i64;
                        if f <= 0 {
                            res_multiple.push(Violation::invalid(
                                &self.err_path(path),
                                Bad::Int(f),
                                &format!(
                                    "factor MultipleOf declared for {path} must be positive: {f}"
                                ),
                            ));
                        } else if (i / f) * f != i {
                            res_multiple.push(Violation::invalid(
                                &self.err_path(path),
                                Bad::Int(i),
                                &format!("{path} in {IN} should be a multiple of {f}"),
                            ));
                        }
                    }
                    Num::Float(_) => self.multiple_of_float(path, data, factor, &mut res_multiple),
                },
                Err(e) => {
                    res_multiple.push(self.plain(e));
                    self.multiple_of_float(path, data, factor, &mut res_multiple);
                }
            }
        }

        let mut res_minimum = Vec::new();
        if let Some(min) = node.minimum {
            let excl = node.exclusive_minimum;
            let native =
                value_valid_against_range(Num::Float(min), ty, nfmt, "Minimum boundary", path);
            if let Err(e) = &native {
                res_minimum.push(self.plain(e.clone()));
            }
            match (native.is_ok(), v) {
                (true, Num::Int(i)) => {
                    let m = min as i64;
                    if (!excl && i < m) || (excl && i <= m) {
                        res_minimum.push(self.bound_err(path, v, false, excl, &m.to_string()));
                    }
                }
                _ => {
                    if (!excl && data < min) || (excl && data <= min) {
                        res_minimum.push(self.bound_err(
                            path,
                            v,
                            false,
                            excl,
                            &go_format_float(min),
                        ));
                    }
                }
            }
        }

        let mut res_maximum = Vec::new();
        if let Some(max) = node.maximum {
            let excl = node.exclusive_maximum;
            let native =
                value_valid_against_range(Num::Float(max), ty, nfmt, "Maximum boundary", path);
            if let Err(e) = &native {
                res_maximum.push(self.plain(e.clone()));
            }
            match (native.is_ok(), v) {
                (true, Num::Int(i)) => {
                    let m = max as i64;
                    if (!excl && i > m) || (excl && i >= m) {
                        res_maximum.push(self.bound_err(path, v, true, excl, &m.to_string()));
                    }
                }
                _ => {
                    if (!excl && data > max) || (excl && data >= max) {
                        res_maximum.push(self.bound_err(
                            path,
                            v,
                            true,
                            excl,
                            &go_format_float(max),
                        ));
                    }
                }
            }
        }
        out.extend(res_multiple);
        out.extend(res_minimum);
        out.extend(res_maximum);
    }

    fn multiple_of_float(&self, path: &str, data: f64, factor: f64, out: &mut Vec<Violation>) {
        if factor <= 0.0 {
            out.push(Violation::invalid(
                &self.err_path(path),
                Bad::Float(factor),
                &format!(
                    "factor MultipleOf declared for {path} must be positive: {}",
                    go_format_float(factor)
                ),
            ));
            return;
        }
        let mult = if factor < 1.0 {
            1.0 / factor * data
        } else {
            data / factor
        };
        if !is_float64_json_integer(mult) {
            out.push(Violation::invalid(
                &self.err_path(path),
                Bad::Float(data),
                &format!(
                    "{path} in {IN} should be a multiple of {}",
                    go_format_float(factor)
                ),
            ));
        }
    }

    fn bound_err(&self, path: &str, v: Num, is_max: bool, excl: bool, bound: &str) -> Violation {
        let rel = match (is_max, excl) {
            (true, false) => "less than or equal to",
            (true, true) => "less than",
            (false, false) => "greater than or equal to",
            (false, true) => "greater than",
        };
        Violation::invalid(
            &self.err_path(path),
            v.bad(),
            &format!("{path} in {IN} should be {rel} {bound}"),
        )
    }

    fn validate_slice(
        &self,
        node: &Node,
        path: &str,
        a: &[Value],
        old: Option<&Value>,
        out: &mut Vec<Violation>,
    ) {
        if let Some(items) = &node.items {
            let olds = super::cel::correlate_list(node, old);
            for (i, x) in a.iter().enumerate() {
                let old = olds
                    .as_ref()
                    .and_then(|o| o.get(&super::cel::map_key(node, x)).copied());
                self.validate_at(items, &format!("{path}[{i}]"), x, old, out);
            }
        }
        if let Some(schemas) = &node.items_array {
            for (i, (s, x)) in schemas.iter().zip(a.iter()).enumerate() {
                self.validate(s, &format!("{path}[{i}]"), x, out);
            }
        }
        let size = a.len() as i64;
        if let Some(min) = node.min_items {
            if size < min {
                out.push(Violation::invalid(
                    &self.err_path(path),
                    Bad::Int(size),
                    &format!("{path} in {IN} should have at least {min} items"),
                ));
            }
        }
        if let Some(max) = node.max_items {
            if size > max {
                out.push(Violation::too_many(&self.err_path(path), size, max));
            }
        }
        if node.unique_items {
            let dup = a
                .iter()
                .enumerate()
                .any(|(i, x)| a[..i].iter().any(|y| y == x));
            if dup {
                out.push(Violation::invalid(
                    &self.err_path(path),
                    Bad::str(""),
                    &format!("{path} in {IN} shouldn't contain duplicates"),
                ));
            }
        }
    }

    fn validate_enum(&self, node: &Node, path: &str, data: &Value, out: &mut Vec<Violation>) {
        let Some(values) = &node.enum_values else {
            return;
        };
        if values.is_empty() {
            return;
        }
        if !data.is_null() && values.iter().any(|e| go_enum_eq(data, e)) {
            return;
        }
        let supported: Vec<String> = values
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => go_json(other),
            })
            .collect();
        let bad = if data.is_null() {
            Bad::Json(Value::Null)
        } else {
            Bad::of(data)
        };
        out.push(Violation::not_supported(
            &self.err_path(path),
            bad,
            &supported,
        ));
    }

    fn validate_object(
        &self,
        node: &Node,
        path: &str,
        m: &serde_json::Map<String, Value>,
        old: Option<&Value>,
        out: &mut Vec<Violation>,
    ) {
        let old_of = |k: &str| old.and_then(|o| o.get(k));
        let n = m.len() as i64;
        if let Some(min) = node.min_properties {
            if n < min {
                out.push(Violation::invalid(
                    &self.err_path(path),
                    Bad::Int(n),
                    &format!("{path} in {IN} should have at least {min} properties"),
                ));
            }
        }
        if let Some(max) = node.max_properties {
            if n > max {
                out.push(Violation::too_many(&self.err_path(path), n, max));
            }
        }
        match &node.additional_properties {
            Some(AdditionalProperties::Bool(false)) => {
                for k in m.keys() {
                    if node.prop(k).is_none() {
                        out.push(Violation::invalid(
                            &self.err_path(path),
                            Bad::str(k),
                            &format!("{path}.{k} in {IN} is a forbidden property"),
                        ));
                    }
                }
            }
            Some(AdditionalProperties::Schema(s)) => {
                for (k, v) in m {
                    if node.prop(k).is_none() {
                        self.validate_at(s, &format!("{path}.{k}"), v, old_of(k), out);
                    }
                }
            }
            _ => {}
        }
        for (k, s) in &node.properties {
            if let Some(v) = m.get(k) {
                let name = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                self.validate_at(s, &name, v, old_of(k), out);
            }
        }
        for k in &node.required {
            if !m.contains_key(k) {
                out.push(Violation::required(
                    &self.err_path(&format!("{path}.{k}")),
                    "",
                ));
            }
        }
    }
}

/// kube-openapi `IsValueValidAgainstRange`.
fn value_valid_against_range(
    v: Num,
    ty: &str,
    fmt: &str,
    prefix: &str,
    path: &str,
) -> Result<(), String> {
    let rep = match v {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => go_format_float_f(f),
    };
    let ok = match ty {
        "integer" => match fmt {
            "int32" => rep.parse::<i32>().is_ok(),
            _ => rep.parse::<i64>().is_ok(),
        },
        _ => match fmt {
            "float" => rep
                .parse::<f64>()
                .map(|f| f.is_finite() && !(f as f32).is_infinite())
                .unwrap_or(false),
            _ => true,
        },
    };
    if ok {
        Ok(())
    } else if !fmt.is_empty() {
        Err(format!(
            "{prefix} value must be of type {ty} with format {fmt} in {path}"
        ))
    } else {
        Err(format!(
            "{prefix} value must be of type {ty} (default format) in {path}"
        ))
    }
}

/// Go's enum check: `reflect.DeepEqual`, or equality after `reflect.Value.Convert` to the enum
/// value's type (which truncates floats to integers and turns integers into runes).
fn go_enum_eq(data: &Value, e: &Value) -> bool {
    if data == e {
        return true;
    }
    match (data, e) {
        (Value::Number(d), Value::Number(ev)) => match (num(d), num(ev)) {
            (Num::Int(a), Num::Float(b)) => (a as f64) == b,
            (Num::Float(a), Num::Int(b)) => a.is_finite() && (a as i64) == b,
            (Num::Float(a), Num::Float(b)) => a == b,
            (Num::Int(a), Num::Int(b)) => a == b,
        },
        (Value::Number(d), Value::String(es)) => match num(d) {
            Num::Int(i) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                es.chars().eq(std::iter::once(c))
            }
            Num::Float(_) => false,
        },
        _ => false,
    }
}

/// A key that is equal for two values iff Go would consider them the same set element
/// (scalars compare by Go type and value, compound values by their JSON encoding).
fn set_key(v: &Value) -> String {
    match v {
        Value::Object(_) | Value::Array(_) => format!("c:{}", go_json(v)),
        Value::Number(n) => match num(n) {
            Num::Int(i) => format!("i:{i}"),
            Num::Float(f) => format!("f:{}", go_format_float(f)),
        },
        other => format!("s:{}", go_json(other)),
    }
}

/// Indices of the first repeated appearance of each non-unique key.
fn non_unique(keys: &[String]) -> Vec<usize> {
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let c = seen.entry(k.as_str()).or_insert(0);
        *c += 1;
        if *c == 2 {
            out.push(i);
        }
    }
    out
}

/// `listtype.ValidateListSetsAndMaps`, starting at an object.
pub(crate) fn validate_list_types(path: &str, node: &Node, data: &Value, out: &mut Vec<Violation>) {
    let Value::Object(m) = data else {
        return;
    };
    if let Some(s) = node.additional_schema() {
        for (k, v) in m {
            list_types_value(&field::key(path, k), s, v, out);
        }
    }
    for (k, v) in m {
        if let Some(s) = node.prop(k) {
            list_types_value(&field::child(path, k), s, v, out);
        }
    }
}

fn list_types_value(path: &str, node: &Node, data: &Value, out: &mut Vec<Violation>) {
    match data {
        Value::Array(a) => list_types_array(path, node, a, out),
        Value::Object(_) => validate_list_types(path, node, data, out),
        _ => {}
    }
}

fn list_types_array(path: &str, node: &Node, a: &[Value], out: &mut Vec<Violation>) {
    match node.list_type.as_deref() {
        Some("set") => {
            let keys: Vec<String> = a.iter().map(set_key).collect();
            for i in non_unique(&keys) {
                out.push(Violation::duplicate(&field::index(path, i), Bad::of(&a[i])));
            }
        }
        Some("map") => list_map(path, node, a, out),
        _ => {}
    }
    if let Some(items) = &node.items {
        for (i, x) in a.iter().enumerate() {
            list_types_value(&field::index(path, i), items, x, out);
        }
    }
}

fn list_map(path: &str, node: &Node, a: &[Value], out: &mut Vec<Violation>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(Violation::invalid(
                &field::index(path, i),
                Bad::of(x),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let key_of = |x: &Value| -> serde_json::Map<String, Value> {
        let mut key = serde_json::Map::new();
        if let Value::Object(m) = x {
            for k in &node.list_map_keys {
                if let Some(v) = m.get(k) {
                    key.insert(k.clone(), v.clone());
                }
            }
        }
        key
    };
    let keys: Vec<serde_json::Map<String, Value>> = a.iter().map(key_of).collect();
    let strs: Vec<String> = if node.list_map_keys.len() == 1 {
        // kube compares single keys as scalars (an absent key is its own value)
        keys.iter()
            .map(|k| match k.values().next() {
                Some(v) => set_key(v),
                None => "unspecified".to_string(),
            })
            .collect()
    } else {
        keys.iter()
            .map(|k| set_key(&Value::Object(k.clone())))
            .collect()
    };
    for i in non_unique(&strs) {
        out.push(Violation::duplicate(
            &field::index(path, i),
            Bad::Json(Value::Object(keys[i].clone())),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(v: Value) -> Node {
        let mut errs = vec![];
        let n = Node::parse(&v, "", &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        n
    }

    fn run(schema: Value, data: Value) -> Vec<Violation> {
        let n = node(schema);
        let mut out = vec![];
        Validator { base: "" }.validate(&n, "", &data, &mut out);
        out
    }

    fn spec(prop: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": prop}}}})
    }

    fn one(prop: Value, x: Value) -> Vec<Violation> {
        run(spec(prop), json!({"spec": {"x": x}}))
    }

    fn msgs(v: &[Violation]) -> Vec<String> {
        v.iter()
            .map(|v| format!("{}|{}|{}", v.reason, v.field, v.message))
            .collect()
    }

    #[test]
    fn float_ints() {
        assert!(is_float64_json_integer(3.0));
        assert!(is_float64_json_integer(-3.0));
        assert!(!is_float64_json_integer(3.5));
        assert!(!is_float64_json_integer(f64::NAN));
        assert!(!is_float64_json_integer(1e300));
    }

    #[test]
    fn types() {
        assert!(one(json!({"type": "integer"}), json!(3)).is_empty());
        assert!(one(json!({"type": "integer"}), json!(3.0)).is_empty());
        assert_eq!(
            msgs(&one(json!({"type": "integer"}), json!("3"))),
            vec![
                "FieldValueTypeInvalid|spec.x|Invalid value: \"string\": spec.x in body must be of type integer: \"string\""
            ]
        );
        assert!(one(json!({"type": "number"}), json!(3)).is_empty());
        assert!(one(json!({"type": "boolean"}), json!(true)).is_empty());
        assert_eq!(one(json!({"type": "boolean"}), json!(1)).len(), 1);
        assert!(one(
            json!({"type": "array", "items": {"type": "string"}}),
            json!(["a"])
        )
        .is_empty());
        assert_eq!(
            msgs(&one(json!({"type": "array", "items": {"type": "string"}}), json!(["a", 1]))),
            vec!["FieldValueTypeInvalid|spec.x[1]|Invalid value: \"integer\": spec.x[1] in body must be of type string: \"integer\""]
        );
        assert_eq!(one(json!({"type": "object"}), json!([])).len(), 1);
        assert_eq!(
            msgs(&one(json!({"type": "string"}), json!(null))),
            vec!["FieldValueTypeInvalid|spec.x|Invalid value: \"null\": spec.x in body must be of type string: \"null\""]
        );
        assert!(one(json!({"type": "string", "nullable": true}), json!(null)).is_empty());
        let ios = json!({"x-kubernetes-int-or-string": true});
        assert!(one(ios.clone(), json!(1)).is_empty());
        assert!(one(ios.clone(), json!("1")).is_empty());
        assert_eq!(
            msgs(&one(ios, json!(true))),
            vec!["FieldValueTypeInvalid|spec.x|Invalid value: \"boolean\": spec.x in body must be of type integer,string: \"boolean\""]
        );
    }

    #[test]
    fn strings() {
        let s = json!({"type": "string", "maxLength": 3, "minLength": 2, "pattern": "^[a-z]+$"});
        assert!(one(s.clone(), json!("abc")).is_empty());
        let len = json!({"type": "string", "maxLength": 2});
        assert!(
            one(len, json!("äö")).is_empty(),
            "length counts unicode chars"
        );
        assert_eq!(
            msgs(&one(s.clone(), json!("abcd"))),
            vec!["FieldValueTooLong|spec.x|Too long: may not be more than 3 bytes"]
        );
        assert_eq!(
            msgs(&one(s.clone(), json!("a"))),
            vec!["FieldValueInvalid|spec.x|Invalid value: \"a\": spec.x in body should be at least 2 chars long"]
        );
        assert_eq!(
            msgs(&one(s, json!("A1"))),
            vec!["FieldValueInvalid|spec.x|Invalid value: \"A1\": spec.x in body should match '^[a-z]+$'"]
        );
    }

    #[test]
    fn formats() {
        let s = json!({"type": "string", "format": "date-time"});
        assert!(one(s.clone(), json!("2024-01-01T00:00:00Z")).is_empty());
        assert_eq!(
            msgs(&one(s, json!("yesterday"))),
            vec!["FieldValueTypeInvalid|spec.x|Invalid value: \"yesterday\": spec.x in body must be of type date-time: \"yesterday\""]
        );
        assert!(one(json!({"type": "string", "format": "no-such"}), json!("x")).is_empty());
        assert!(one(json!({"type": "string", "format": "byte"}), json!("aGk=")).is_empty());
        assert_eq!(
            one(json!({"type": "string", "format": "byte"}), json!("!!")).len(),
            1
        );
        let i32s = json!({"type": "integer", "format": "int32"});
        assert!(one(i32s.clone(), json!(5)).is_empty());
        assert_eq!(
            msgs(&one(i32s, json!(5_000_000_000i64))),
            vec!["FieldValueInvalid|<nil>|Invalid value: \"\": Checked value must be of type integer with format int32 in spec.x"]
        );
        assert!(one(json!({"type": "number", "format": "float"}), json!(1.5)).is_empty());
        assert_eq!(
            one(json!({"type": "number", "format": "float"}), json!(1e300)).len(),
            1
        );
    }

    #[test]
    fn numbers() {
        let s = json!({"type": "integer", "minimum": 1, "maximum": 10});
        assert!(one(s.clone(), json!(10)).is_empty());
        assert_eq!(
            msgs(&one(s.clone(), json!(11))),
            vec!["FieldValueInvalid|spec.x|Invalid value: 11: spec.x in body should be less than or equal to 10"]
        );
        assert_eq!(
            msgs(&one(s, json!(0))),
            vec!["FieldValueInvalid|spec.x|Invalid value: 0: spec.x in body should be greater than or equal to 1"]
        );
        let e = json!({"type": "number", "minimum": 1.5, "exclusiveMinimum": true, "maximum": 2.5, "exclusiveMaximum": true});
        assert!(one(e.clone(), json!(2.0)).is_empty());
        // kube truncates float bounds for integer data (int64(2.5) == 2), so 2 fails "< 2.5"
        assert_eq!(one(e.clone(), json!(2)).len(), 1);
        assert_eq!(
            msgs(&one(e.clone(), json!(2.5))),
            vec!["FieldValueInvalid|spec.x|Invalid value: 2.5: spec.x in body should be less than 2.5"]
        );
        assert_eq!(
            msgs(&one(e, json!(1.5))),
            vec!["FieldValueInvalid|spec.x|Invalid value: 1.5: spec.x in body should be greater than 1.5"]
        );
        let m = json!({"type": "integer", "multipleOf": 5});
        assert!(one(m.clone(), json!(15)).is_empty());
        assert_eq!(
            msgs(&one(m, json!(7))),
            vec!["FieldValueInvalid|spec.x|Invalid value: 7: spec.x in body should be a multiple of 5"]
        );
        let mf = json!({"type": "number", "multipleOf": 0.5});
        assert!(one(mf.clone(), json!(1.5)).is_empty());
        assert_eq!(one(mf, json!(1.25)).len(), 1);
    }

    #[test]
    fn arrays() {
        let s = json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2, "uniqueItems": true});
        assert!(one(s.clone(), json!([1, 2])).is_empty());
        assert_eq!(
            msgs(&one(s.clone(), json!([]))),
            vec!["FieldValueInvalid|spec.x|Invalid value: 0: spec.x in body should have at least 1 items"]
        );
        assert_eq!(
            msgs(&one(s.clone(), json!([1, 2, 3]))),
            vec!["FieldValueTooMany|spec.x|Too many: 3: must have at most 2 items"]
        );
        assert_eq!(
            msgs(&one(s, json!([1, 1]))),
            vec!["FieldValueInvalid|spec.x|Invalid value: \"\": spec.x in body shouldn't contain duplicates"]
        );
    }

    #[test]
    fn objects() {
        let s = json!({"type": "object", "minProperties": 1, "maxProperties": 2,
            "additionalProperties": {"type": "string"}});
        assert!(one(s.clone(), json!({"a": "b"})).is_empty());
        assert_eq!(
            msgs(&one(s.clone(), json!({}))),
            vec!["FieldValueInvalid|spec.x|Invalid value: 0: spec.x in body should have at least 1 properties"]
        );
        assert_eq!(
            msgs(&one(s.clone(), json!({"a": "1", "b": "2", "c": "3"}))),
            vec!["FieldValueTooMany|spec.x|Too many: 3: must have at most 2 items"]
        );
        assert_eq!(
            msgs(&one(s, json!({"a": 1}))),
            vec!["FieldValueTypeInvalid|spec.x.a|Invalid value: \"integer\": spec.x.a in body must be of type string: \"integer\""]
        );
        let f = json!({"type": "object", "additionalProperties": false});
        assert!(one(f.clone(), json!({})).is_empty());
        assert_eq!(
            msgs(&one(f, json!({"a": 1}))),
            vec!["FieldValueInvalid|spec.x|Invalid value: \"a\": spec.x.a in body is a forbidden property"]
        );
        let r = json!({"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
        assert!(one(r.clone(), json!({"a": "", "b": ""})).is_empty());
        assert_eq!(
            msgs(&one(r, json!({}))),
            vec![
                "FieldValueRequired|spec.x.a|Required value",
                "FieldValueRequired|spec.x.b|Required value"
            ]
        );
        // root-level required
        let out = run(
            json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}),
            json!({}),
        );
        assert_eq!(msgs(&out), vec!["FieldValueRequired|spec|Required value"]);
    }

    #[test]
    fn enums() {
        let s = json!({"type": "string", "enum": ["a", "b"]});
        assert!(one(s.clone(), json!("a")).is_empty());
        assert_eq!(
            msgs(&one(s, json!("c"))),
            vec!["FieldValueNotSupported|spec.x|Unsupported value: \"c\": supported values: \"a\", \"b\""]
        );
        let n = json!({"type": "integer", "enum": [1, 2]});
        assert!(one(n.clone(), json!(2)).is_empty());
        assert_eq!(
            msgs(&one(n, json!(3))),
            vec!["FieldValueNotSupported|spec.x|Unsupported value: 3: supported values: \"1\", \"2\""]
        );
    }

    #[test]
    fn junctors() {
        let any = json!({"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]});
        assert!(one(any.clone(), json!(11)).is_empty());
        assert_eq!(
            msgs(&one(any, json!(5))),
            vec![
                "FieldValueInvalid|<nil>|Invalid value: \"\": \"spec.x\" must validate at least one schema (anyOf)",
                "FieldValueInvalid|spec.x|Invalid value: 5: spec.x in body should be greater than or equal to 10"
            ]
        );
        let one_of = json!({"type": "integer", "oneOf": [{"minimum": 10}, {"minimum": 20}]});
        assert!(one(one_of.clone(), json!(15)).is_empty());
        assert_eq!(
            msgs(&one(one_of, json!(25))),
            vec!["FieldValueInvalid|<nil>|Invalid value: \"\": \"spec.x\" must validate one and only one schema (oneOf). Found 2 valid alternatives"]
        );
        let all = json!({"type": "integer", "allOf": [{"minimum": 10}, {"maximum": 20}]});
        assert!(one(all.clone(), json!(15)).is_empty());
        assert_eq!(
            msgs(&one(all, json!(25))),
            vec![
                "FieldValueInvalid|spec.x|Invalid value: 25: spec.x in body should be less than or equal to 20",
                "FieldValueInvalid|<nil>|Invalid value: \"\": \"spec.x\" must validate all the schemas (allOf)"
            ]
        );
        let not = json!({"type": "string", "not": {"enum": ["x"]}});
        assert!(one(not.clone(), json!("y")).is_empty());
        assert_eq!(
            msgs(&one(not, json!("x"))),
            vec!["FieldValueInvalid|<nil>|Invalid value: \"\": \"spec.x\" must not validate the schema (not)"]
        );
    }

    #[test]
    fn misc_keywords() {
        // x-kubernetes-preserve-unknown-fields without a type accepts anything
        let free = json!({"x-kubernetes-preserve-unknown-fields": true});
        assert!(one(free.clone(), json!({"a": [1, {"b": null}]})).is_empty());
        assert!(one(free, json!(3)).is_empty());
        // additionalProperties: true
        let any = json!({"type": "object", "additionalProperties": true});
        assert!(one(any.clone(), json!({"a": 1})).is_empty());
        assert_eq!(one(any, json!("x")).len(), 1);
        // int64 / double formats
        let i64s = json!({"type": "integer", "format": "int64"});
        assert!(one(i64s.clone(), json!(9_000_000_000i64)).is_empty());
        assert_eq!(
            msgs(&one(i64s, json!(1e20))),
            vec![
                "FieldValueTypeInvalid|spec.x|Invalid value: \"float64\": spec.x in body must be of type int64: \"float64\"",
                "FieldValueInvalid|<nil>|Invalid value: \"\": Checked value must be of type integer with format int64 in spec.x"
            ]
        );
        assert!(one(json!({"type": "number", "format": "double"}), json!(1e300)).is_empty());
        assert_eq!(
            one(json!({"type": "number", "format": "double"}), json!("1")).len(),
            1
        );
        // nested properties
        let nested = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "boolean"}}}}});
        assert!(one(nested.clone(), json!({"a": {"b": true}})).is_empty());
        assert_eq!(
            msgs(&one(nested, json!({"a": {"b": "yes"}}))),
            vec!["FieldValueTypeInvalid|spec.x.a.b|Invalid value: \"string\": spec.x.a.b in body must be of type boolean: \"string\""]
        );
        // every violation is collected
        let multi = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 1}}, "required": ["c"]});
        assert_eq!(one(multi, json!({"a": "x", "b": "yy"})).len(), 3);
    }

    fn lists(schema: Value, data: Value) -> Vec<String> {
        let n = node(spec(schema));
        let mut out = vec![];
        validate_list_types("", &n, &json!({"spec": {"x": data}}), &mut out);
        msgs(&out)
    }

    #[test]
    fn list_atomic() {
        let s = json!({"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}});
        assert!(lists(s, json!(["a", "a"])).is_empty());
    }

    #[test]
    fn list_sets() {
        let s =
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
        assert!(lists(s.clone(), json!(["a", "b"])).is_empty());
        assert_eq!(
            lists(s, json!(["a", "b", "a", "a"])),
            vec!["FieldValueDuplicate|spec.x[2]|Duplicate value: \"a\""]
        );
        let n =
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}});
        assert!(lists(n, json!([1, 1.5])).is_empty());
    }

    #[test]
    fn list_maps() {
        let s = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}});
        assert!(lists(s.clone(), json!([{"name": "a"}, {"name": "b"}])).is_empty());
        assert_eq!(
            lists(
                s.clone(),
                json!([{"name": "a", "v": 1}, {"name": "a", "v": 2}])
            ),
            vec!["FieldValueDuplicate|spec.x[1]|Duplicate value: {\"name\":\"a\"}"]
        );
        assert_eq!(
            lists(s, json!([{"name": "a"}, "x"])),
            vec!["FieldValueInvalid|spec.x[1]|Invalid value: \"x\": must be an object for an array of list-type map"]
        );
        let multi = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}});
        assert!(lists(
            multi.clone(),
            json!([{"name": "a", "port": 1}, {"name": "a", "port": 2}])
        )
        .is_empty());
        assert_eq!(
            lists(
                multi,
                json!([{"port": 1, "name": "a"}, {"name": "a", "port": 1}])
            ),
            vec!["FieldValueDuplicate|spec.x[1]|Duplicate value: {\"name\":\"a\",\"port\":1}"]
        );
    }
}
