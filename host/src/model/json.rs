//! Request bodies read as kube reads JSON (sigs.k8s.io/json, its fork of Go's `encoding/json`),
//! where serde_json reads them otherwise:
//!
//! - a key repeated in one object: both keep the last value, but kube's strict decoding
//!   (`fieldValidation=Strict` or `Warn`) reports each as `duplicate field "metadata.name"`,
//!   with the same path format as its unknown fields. [`from_slice`] builds the `Value` as
//!   serde_json does and notes the repeated keys on the way (the map it builds is the set of
//!   keys seen: no second pass, nothing kept beyond the paths it reports);
//! - `-0`: Go's integer fields take it (`strconv.ParseInt("-0")` is 0) and its untyped values
//!   keep it as the integer 0; serde_json reads it as the float `-0.0`, which no integer field
//!   takes. [`negative_zero_as_zero`] makes it `0` before parsing (`-0.0` stays a float, which
//!   integer fields refuse in kube too).

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::hash::Hasher;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// kube's strict decoder keeps at most so many errors (`saveStrictError`).
const MAX_DUPLICATES: usize = 100;

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    Key(String),
    Index(usize),
}

/// A key an object of the body has more than once (reported once, however many times).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateField {
    /// kube's path: keys joined by `.`, list indices in brackets (`spec.containers[0].name`).
    pub path: String,
    /// The same path step by step (a key may hold a `.`); the last step is the repeated key.
    pub segments: Vec<PathSegment>,
}

/// Parse a JSON document as `serde_json::from_slice` parses it into a `Value` (same errors, the
/// last of repeated keys kept), with the keys it repeats in document order: each where kube's
/// decoder finds it, when it reads the key again (before its value). As kube, at most 100,
/// each path once; and at most as many bytes of paths as the body has (a hostile body of long
/// keys cannot make the report outgrow it).
pub fn from_slice(body: &[u8]) -> Result<(Value, Vec<DuplicateField>), serde_json::Error> {
    let mut state = State {
        text: String::new(),
        marks: Vec::new(),
        found: Vec::new(),
        seen: HashSet::new(),
        budget: body.len(),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = ValueSeed {
        state: &mut state,
        seg: Seg::Root,
        parent: 0,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, state.found))
}

/// The body with each `-0` that is a whole number (not `-0.0`, `-0e1`, nor inside a string)
/// written ` 0`, the same length, so serde_json reads the integer 0 as Go does. A body without
/// `-0` is returned as it is after one scan.
pub fn negative_zero_as_zero(body: &[u8]) -> Cow<'_, [u8]> {
    if !body.windows(2).any(|w| w[0] == b'-' && w[1] == b'0') {
        return Cow::Borrowed(body);
    }
    let mut out: Option<Vec<u8>> = None;
    let mut in_string = false;
    let mut escaped = false;
    // The last byte outside strings and whitespace: a value starts after `:`, `,` or `[`.
    let mut prev: Option<u8> = None;
    for (i, &b) in body.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => continue,
            b'"' => in_string = true,
            b'-' if matches!(prev, None | Some(b':' | b',' | b'['))
                && body.get(i + 1) == Some(&b'0')
                && !matches!(body.get(i + 2), Some(b'0'..=b'9' | b'.' | b'e' | b'E')) =>
            {
                out.get_or_insert_with(|| body.to_vec())[i] = b' ';
            }
            _ => {}
        }
        prev = Some(b);
    }
    match out {
        Some(v) => Cow::Owned(v),
        None => Cow::Borrowed(body),
    }
}

/// Where the value being read sits in its parent.
enum Seg<'k> {
    Root,
    Key(&'k str),
    Index(usize),
}

impl Seg<'_> {
    /// The hash of the path to this value, from its parent's: computed once per object or list
    /// entered, and per repeated key (never from the whole path, which would make a deep body
    /// of repeated keys quadratic).
    fn hash(&self, parent: u64) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write_u64(parent);
        match self {
            Seg::Root => h.write_u8(0),
            Seg::Key(k) => {
                h.write_u8(1);
                h.write(k.as_bytes());
            }
            Seg::Index(i) => {
                h.write_u8(2);
                h.write_usize(*i);
            }
        }
        h.finish()
    }
}

/// Where a step of the current path is: a key's text in `State::text`, or an index.
enum Mark {
    Key { at: usize, len: usize },
    Index(usize),
}

struct State {
    /// The path of the object or list being read, in kube's format.
    text: String,
    /// Its steps.
    marks: Vec<Mark>,
    found: Vec<DuplicateField>,
    /// The hashes of the paths reported.
    seen: HashSet<u64>,
    /// Bytes of paths that may still be reported.
    budget: usize,
}

impl State {
    /// Step into an object or a list; returns its path's hash and where `text` was.
    fn enter(&mut self, seg: &Seg, parent: u64) -> (u64, usize) {
        let base = self.text.len();
        match seg {
            Seg::Root => {}
            Seg::Key(k) => {
                if !self.marks.is_empty() {
                    self.text.push('.');
                }
                let at = self.text.len();
                self.text.push_str(k);
                self.marks.push(Mark::Key { at, len: k.len() });
            }
            Seg::Index(i) => {
                use std::fmt::Write;
                let _ = write!(self.text, "[{i}]");
                self.marks.push(Mark::Index(*i));
            }
        }
        (seg.hash(parent), base)
    }

    fn leave(&mut self, seg: &Seg, base: usize) {
        self.text.truncate(base);
        if !matches!(seg, Seg::Root) {
            self.marks.pop();
        }
    }

    /// `key` is in the object being read (whose path hash is `object`) once more.
    fn duplicate(&mut self, object: u64, key: &str) {
        if self.found.len() >= MAX_DUPLICATES || self.budget == 0 {
            return;
        }
        if !self.seen.insert(Seg::Key(key).hash(object)) {
            return;
        }
        let len = self.text.len() + 1 + key.len();
        if len > self.budget {
            self.budget = 0;
            return;
        }
        self.budget -= len;
        let mut path = self.text.clone();
        if !self.marks.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        let mut segments: Vec<PathSegment> = self
            .marks
            .iter()
            .map(|m| match m {
                Mark::Key { at, len } => {
                    PathSegment::Key(self.text.get(*at..at + len).unwrap_or("").to_owned())
                }
                Mark::Index(i) => PathSegment::Index(*i),
            })
            .collect();
        segments.push(PathSegment::Key(key.to_owned()));
        self.found.push(DuplicateField { path, segments });
    }
}

/// Reads one value, as serde_json's own `Value` visitor does.
struct ValueSeed<'s, 'k> {
    state: &'s mut State,
    seg: Seg<'k>,
    /// The hash of the parent's path.
    parent: u64,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn deserialize<D>(self, deserializer: D) -> Result<Value, D::Error>
    where
        D: Deserializer<'de>,
    {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E>
    where
        E: de::Error,
    {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E>
    where
        E: de::Error,
    {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E>
    where
        E: de::Error,
    {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E>
    where
        E: de::Error,
    {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E>
    where
        E: de::Error,
    {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E>
    where
        E: de::Error,
    {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E>
    where
        E: de::Error,
    {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E>
    where
        E: de::Error,
    {
        Ok(Value::Null)
    }

    fn visit_some<D>(self, deserializer: D) -> Result<Value, D::Error>
    where
        D: Deserializer<'de>,
    {
        DeserializeSeed::deserialize(self, deserializer)
    }

    fn visit_seq<A>(self, mut seq: A) -> Result<Value, A::Error>
    where
        A: SeqAccess<'de>,
    {
        let (hash, base) = self.state.enter(&self.seg, self.parent);
        let mut items = Vec::new();
        loop {
            let seed = ValueSeed {
                state: &mut *self.state,
                seg: Seg::Index(items.len()),
                parent: hash,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => items.push(v),
                None => break,
            }
        }
        self.state.leave(&self.seg, base);
        Ok(Value::Array(items))
    }

    fn visit_map<A>(self, mut map: A) -> Result<Value, A::Error>
    where
        A: MapAccess<'de>,
    {
        let (hash, base) = self.state.enter(&self.seg, self.parent);
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                self.state.duplicate(hash, &key);
            }
            let value = map.next_value_seed(ValueSeed {
                state: &mut *self.state,
                seg: Seg::Key(&key),
                parent: hash,
            })?;
            out.insert(key, value);
        }
        self.state.leave(&self.seg, base);
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(body: &str) -> Vec<String> {
        let (_, found) = from_slice(body.as_bytes()).expect("JSON");
        found.into_iter().map(|d| d.path).collect()
    }

    #[test]
    fn repeated_keys_are_reported_with_kubes_paths_and_the_last_value_kept() {
        let body = r#"{"metadata": {"name": "a", "name": "b", "labels": {"x": "1", "x": "2"}},
            "spec": {"containers": [{"name": "c"}, {"name": "c", "image": "i", "name": "d"}]},
            "kind": "Pod", "kind": "Pod"}"#;
        let (v, found) = from_slice(body.as_bytes()).expect("JSON");
        let got: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            got,
            [
                "metadata.name",
                "metadata.labels.x",
                "spec.containers[1].name",
                "kind"
            ]
        );
        assert_eq!(v, serde_json::from_str::<Value>(body).expect("JSON"));
        assert_eq!(v["metadata"]["name"], "b");
        assert_eq!(
            found[2].segments,
            vec![
                PathSegment::Key("spec".into()),
                PathSegment::Key("containers".into()),
                PathSegment::Index(1),
                PathSegment::Key("name".into()),
            ]
        );
        // A key with a dot is one step.
        let (_, found) = from_slice(br#"{"a.b": {"c": 1, "c": 2}}"#).expect("JSON");
        assert_eq!(found[0].path, "a.b.c");
        assert_eq!(
            found[0].segments,
            vec![PathSegment::Key("a.b".into()), PathSegment::Key("c".into())]
        );
    }

    #[test]
    fn each_path_is_reported_once_where_kube_finds_it() {
        // Three times: once.
        assert_eq!(paths(r#"{"a": 1, "a": 2, "a": 3}"#), ["a"]);
        // The repeated key is found when read again, before its value.
        assert_eq!(
            paths(r#"{"a": {"x": 1}, "a": {"y": 1, "y": 2}}"#),
            ["a", "a.y"]
        );
        // The same path in both values of a repeated key: once.
        assert_eq!(
            paths(r#"{"a": {"x": 1, "x": 1}, "a": {"x": 1, "x": 1}}"#),
            ["a.x", "a"]
        );
        // An empty key is a step (kube joins the steps, then `.`).
        assert_eq!(paths(r#"{"": {"a": 1, "a": 2}}"#), [".a"]);
        assert_eq!(
            paths(r#"{"a": [1, 2], "b": {"c": null}}"#),
            Vec::<String>::new()
        );
    }

    #[test]
    fn reports_are_bounded() {
        let body = format!(
            "{{{}}}",
            (0..150)
                .map(|i| format!("\"k{i}\": 1, \"k{i}\": 2"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert_eq!(paths(&body).len(), MAX_DUPLICATES);
        // Long paths: no more bytes of them than the body has.
        let long = "x".repeat(10_000);
        let inner = (0..50)
            .map(|i| format!("\"{i}\": 1, \"{i}\": 1"))
            .collect::<Vec<_>>()
            .join(", ");
        let body = format!("{{\"{long}\": {{{inner}}}}}");
        let found = paths(&body);
        let bytes: usize = found.iter().map(String::len).sum();
        assert!(!found.is_empty() && bytes <= body.len(), "{bytes}");
    }

    #[test]
    fn errors_are_serde_jsons() {
        for body in [
            "{\"a\": }",
            "{\"a\": 1,}",
            "[1, 2",
            "{} x",
            "",
            "{\"a\": 1e999}",
        ] {
            let want = serde_json::from_slice::<Value>(body.as_bytes())
                .map(|_| ())
                .map_err(|e| e.to_string());
            let got = from_slice(body.as_bytes())
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert_eq!(got, want, "{body}");
        }
    }

    #[test]
    fn negative_zero_is_an_integer_where_go_reads_one() {
        let body = br#"{"a": -0, "b": [-0,-0.0, -0e1, "-0", "x\"-0"], "c":-0}"#;
        let fixed = negative_zero_as_zero(body);
        assert_eq!(fixed.len(), body.len());
        let v: Value = serde_json::from_slice(&fixed).expect("JSON");
        assert_eq!(v["a"].as_i64(), Some(0));
        assert_eq!(v["c"].as_i64(), Some(0));
        assert_eq!(v["b"][0].as_i64(), Some(0));
        assert_eq!(v["b"][1].as_i64(), None, "-0.0 stays a float");
        assert_eq!(v["b"][2].as_i64(), None, "-0e1 stays a float");
        assert_eq!(v["b"][3], json!("-0"));
        assert_eq!(v["b"][4], json!("x\"-0"));
        // `-01` is not JSON, before and after.
        assert!(serde_json::from_slice::<Value>(&negative_zero_as_zero(b"[-01]")).is_err());
        assert!(matches!(
            negative_zero_as_zero(br#"{"a": 1}"#),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            negative_zero_as_zero(br#"{"a": "-0"}"#),
            Cow::Borrowed(_)
        ));
    }
}
