//! Field paths, Go-compatible value rendering and [`Violation`] constructors.
//!
//! Kubernetes renders validation errors with `k8s.io/apimachinery/pkg/util/validation/field`:
//! `Error.ErrorBody()` prints the error type, the bad value (Go `%q` for strings, `%v` for numbers and
//! booleans, `encoding/json` for everything else) and the detail. The helpers here reproduce that output
//! byte for byte where practical, so messages match what `kubectl` users see from a real apiserver.

use serde_json::Value;

use super::Violation;

/// The rendering kube uses for an error on the root of a custom resource (a nil `*field.Path`).
pub const ROOT_FIELD: &str = "<nil>";

/// `field.Path.Child(name)`: `a` + `b` -> `a.b`; an empty base is the (nil) root.
pub(crate) fn child(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else if name.is_empty() {
        base.to_string()
    } else {
        format!("{base}.{name}")
    }
}

/// `field.Path.Key(key)`: `a` + `k` -> `a[k]`.
pub(crate) fn key(base: &str, k: &str) -> String {
    format!("{base}[{k}]")
}

/// `field.Path.Index(i)`: `a` + 1 -> `a[1]`.
pub(crate) fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

/// Renders a path for a [`Violation`]: the empty path is kube's `<nil>`.
pub(crate) fn display(path: &str) -> String {
    if path.is_empty() {
        ROOT_FIELD.to_string()
    } else {
        path.to_string()
    }
}

/// A bad value as kube's `field.Error.BadValue` would hold it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bad {
    /// A Go string: rendered with `%q`.
    Str(String),
    /// A Go int64: rendered with `%v`.
    Int(i64),
    /// A Go float64: rendered with `%v`.
    Float(f64),
    /// A Go bool.
    Bool(bool),
    /// Anything else: rendered as Go `encoding/json` would.
    Json(Value),
    /// A value rendered by the caller (e.g. a Go struct's JSON).
    Raw(String),
    /// `field.OmitValueType{}`: no value is printed.
    Omit,
}

impl Bad {
    /// Converts an unstructured JSON value the way Go's unstructured decoder would type it
    /// (integers that fit int64 are int64, every other number is float64).
    pub(crate) fn of(v: &Value) -> Bad {
        match v {
            Value::String(s) => Bad::Str(s.clone()),
            Value::Bool(b) => Bad::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Bad::Int(i),
                None => Bad::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            other => Bad::Json(other.clone()),
        }
    }

    pub(crate) fn str(s: &str) -> Bad {
        Bad::Str(s.to_string())
    }

    fn render(&self) -> Option<String> {
        match self {
            Bad::Str(s) => Some(go_quote(s)),
            Bad::Int(i) => Some(i.to_string()),
            Bad::Float(f) => Some(go_format_float(*f)),
            Bad::Bool(b) => Some(b.to_string()),
            Bad::Json(v) => Some(go_json(v)),
            Bad::Raw(s) => Some(s.clone()),
            Bad::Omit => None,
        }
    }
}

fn with_detail(mut s: String, detail: &str) -> String {
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

fn valued(kind: &str, bad: &Bad, detail: &str) -> String {
    let head = match bad.render() {
        Some(v) => format!("{kind}: {v}"),
        None => kind.to_string(),
    };
    with_detail(head, detail)
}

impl Violation {
    fn make(reason: &str, field: &str, message: String) -> Violation {
        Violation {
            reason: reason.to_string(),
            field: display(field),
            message,
        }
    }

    /// `field.Required`.
    pub(crate) fn required(field: &str, detail: &str) -> Violation {
        Self::make(
            "FieldValueRequired",
            field,
            with_detail("Required value".into(), detail),
        )
    }

    /// `field.Forbidden`.
    pub(crate) fn forbidden(field: &str, detail: &str) -> Violation {
        Self::make(
            "FieldValueForbidden",
            field,
            with_detail("Forbidden".into(), detail),
        )
    }

    /// `field.Invalid`.
    pub(crate) fn invalid(field: &str, bad: Bad, detail: &str) -> Violation {
        Self::make(
            "FieldValueInvalid",
            field,
            valued("Invalid value", &bad, detail),
        )
    }

    /// `field.TypeInvalid` (rendered as "Invalid value" like kube does).
    pub(crate) fn type_invalid(field: &str, bad: Bad, detail: &str) -> Violation {
        Self::make(
            "FieldValueTypeInvalid",
            field,
            valued("Invalid value", &bad, detail),
        )
    }

    /// `field.NotSupported`.
    pub(crate) fn not_supported(field: &str, bad: Bad, valid: &[String]) -> Violation {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::make(
            "FieldValueNotSupported",
            field,
            valued("Unsupported value", &bad, &detail),
        )
    }

    /// `field.Duplicate`.
    pub(crate) fn duplicate(field: &str, bad: Bad) -> Violation {
        Self::make(
            "FieldValueDuplicate",
            field,
            valued("Duplicate value", &bad, ""),
        )
    }

    /// `field.TooLong` (kube >= 1.32 wording).
    pub(crate) fn too_long(field: &str, max: i64) -> Violation {
        let detail = if max >= 0 {
            format!(
                "may not be more than {max} {}",
                if max == 1 { "byte" } else { "bytes" }
            )
        } else {
            "value is too long".to_string()
        };
        Self::make(
            "FieldValueTooLong",
            field,
            with_detail("Too long".into(), &detail),
        )
    }

    /// `field.TooMany`.
    pub(crate) fn too_many(field: &str, actual: i64, max: i64) -> Violation {
        let detail = if max >= 0 {
            format!(
                "must have at most {max} {}",
                if max == 1 { "item" } else { "items" }
            )
        } else {
            "has too many items".to_string()
        };
        let bad = if actual >= 0 {
            Bad::Int(actual)
        } else {
            Bad::Omit
        };
        Self::make(
            "FieldValueTooMany",
            field,
            valued("Too many", &bad, &detail),
        )
    }

    /// `field.InternalError`.
    pub(crate) fn internal(field: &str, detail: &str) -> Violation {
        Self::make(
            "InternalError",
            field,
            with_detail("Internal error".into(), detail),
        )
    }
}

/// Go's `strconv.Quote` (what `%q` prints for a string).
pub(crate) fn go_quote(s: &str) -> String {
    crate::auth::rbac::go_quote(s)
}

/// Shortest round-trip decimal digits of a finite, non-zero `f` (without sign) and the exponent `e`
/// such that `|f| = d.ddd × 10^e`.
fn shortest_digits(f: f64) -> (String, i32) {
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    (digits, exp.parse().unwrap_or(0))
}

fn fmt_e(neg: bool, digits: &str, exp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
    out
}

fn fmt_f(neg: bool, digits: &str, exp: i32) -> String {
    // value = 0.digits × 10^(exp+1)
    let dp = exp + 1;
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if dp <= 0 {
        out.push_str("0.");
        for _ in 0..(-dp) {
            out.push('0');
        }
        out.push_str(digits);
    } else {
        let dp = dp as usize;
        if digits.len() <= dp {
            out.push_str(digits);
            for _ in digits.len()..dp {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..dp]);
            out.push('.');
            out.push_str(&digits[dp..]);
        }
    }
    out
}

fn special_float(f: f64) -> Option<String> {
    if f.is_nan() {
        Some("NaN".into())
    } else if f.is_infinite() {
        Some(if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        })
    } else if f == 0.0 {
        Some(if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        })
    } else {
        None
    }
}

/// Go's `fmt.Sprintf("%v", f)` for a float64: `strconv.FormatFloat(f, 'g', -1, 64)`, which switches
/// to the exponent form for exponents < -4 or >= 6 (e.g. `1e+06`).
pub(crate) fn go_format_float(f: f64) -> String {
    if let Some(s) = special_float(f) {
        return s;
    }
    let (digits, exp) = shortest_digits(f);
    if !(-4..6).contains(&exp) {
        fmt_e(f < 0.0, &digits, exp)
    } else {
        fmt_f(f < 0.0, &digits, exp)
    }
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`.
pub(crate) fn go_format_float_f(f: f64) -> String {
    if let Some(s) = special_float(f) {
        return s;
    }
    let (digits, exp) = shortest_digits(f);
    fmt_f(f < 0.0, &digits, exp)
}

/// Go's `encoding/json` rendering of a float64.
pub(crate) fn go_json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        let (digits, exp) = shortest_digits(f);
        let mut s = fmt_e(f < 0.0, &digits, exp);
        // Go cleans e-09 to e-9 (but keeps e+21 as is).
        if let Some(pos) = s.find("e-0") {
            s.remove(pos + 2);
        }
        s
    } else {
        go_format_float_f(f)
    }
}

fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // Go 1.22 and later write these two short as well.
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn go_json_into(v: &Value, sort: bool, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else {
                out.push_str(&go_json_float(n.as_f64().unwrap_or(f64::NAN)));
            }
        }
        Value::String(s) => go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_into(x, sort, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            if sort {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                go_json_into(x, sort, out);
            }
            out.push('}');
        }
    }
}

/// Go's `json.Marshal` of an unstructured value (sorted keys, HTML-escaped, Go float formatting).
pub(crate) fn go_json(v: &Value) -> String {
    let mut out = String::new();
    go_json_into(v, true, &mut out);
    out
}

/// [`go_json`] with each object's keys in the order the value has them: `json.Marshal` of a Go
/// struct whose fields the value lists in declaration order (not of a map, whose keys Go sorts).
pub(crate) fn go_json_in_order(v: &Value) -> String {
    let mut out = String::new();
    go_json_into(v, false, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        assert_eq!(child("", "spec"), "spec");
        assert_eq!(child("spec", "x"), "spec.x");
        assert_eq!(key("a.properties", "b"), "a.properties[b]");
        assert_eq!(index("spec.items", 2), "spec.items[2]");
        assert_eq!(display(""), "<nil>");
    }

    #[test]
    fn quote() {
        assert_eq!(go_quote("abc"), "\"abc\"");
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
        assert_eq!(go_quote("héllo"), "\"héllo\"");
    }

    #[test]
    fn floats_like_go() {
        assert_eq!(go_format_float(1.5), "1.5");
        assert_eq!(go_format_float(10.0), "10");
        assert_eq!(go_format_float(100000.0), "100000");
        assert_eq!(go_format_float(1000000.0), "1e+06");
        assert_eq!(go_format_float(123456789.0), "1.23456789e+08");
        assert_eq!(go_format_float(0.0001), "0.0001");
        assert_eq!(go_format_float(0.00001), "1e-05");
        assert_eq!(go_format_float(-2.25), "-2.25");
        assert_eq!(go_format_float_f(1e20), "100000000000000000000");
        assert_eq!(go_format_float_f(3.0), "3");
        assert_eq!(go_json_float(1e21), "1e+21");
        assert_eq!(go_json_float(1e-7), "1e-7");
        assert_eq!(go_json_float(2.5), "2.5");
    }

    #[test]
    fn json_like_go() {
        let v = json!({"b": 1, "a": [true, null, "x<y"], "c": 1.5});
        assert_eq!(go_json(&v), r#"{"a":[true,null,"x\u003cy"],"b":1,"c":1.5}"#);
        // Go 1.22+: `\b` and `\f` short, the other controls as `\u00XX`; `&`, U+2028 escaped;
        // DEL as it is.
        let s = json!("\u{8}\u{c}\u{1}\u{1f}&\u{2028}\u{7f}");
        assert_eq!(go_json(&s), "\"\\b\\f\\u0001\\u001f\\u0026\\u2028\u{7f}\"");
    }

    #[test]
    fn bodies() {
        assert_eq!(Violation::required("spec.x", "").message, "Required value");
        assert_eq!(
            Violation::not_supported("f", Bad::str("x"), &["a".into(), "b".into()]).message,
            "Unsupported value: \"x\": supported values: \"a\", \"b\""
        );
        assert_eq!(
            Violation::too_long("f", 1).message,
            "Too long: may not be more than 1 byte"
        );
        assert_eq!(
            Violation::too_many("f", 4, 3).message,
            "Too many: 4: must have at most 3 items"
        );
        assert_eq!(
            Violation::invalid("f", Bad::Omit, "boom").message,
            "Invalid value: boom"
        );
        assert_eq!(
            Violation::duplicate("f", Bad::Json(json!({"name": "a"}))).message,
            "Duplicate value: {\"name\":\"a\"}"
        );
        assert_eq!(Violation::forbidden("", "x").field, "<nil>");
    }
}
