//! Request bodies read as kube reads JSON (sigs.k8s.io/json, its fork of Go's `encoding/json`),
//! where serde_json reads them otherwise:
//!
//! - a key repeated in one object: kube's strict decoding (`fieldValidation=Strict` or `Warn`)
//!   reports each as `duplicate field "metadata.name"`, with the same path format as its unknown
//!   fields. [`from_slice`] builds the `Value` as serde_json does and notes the repeated keys on
//!   the way (the map it builds is the set of keys seen: no second pass, nothing kept beyond the
//!   paths it reports). The value kept is the last one, as serde_json and kube's unstructured
//!   decoder (custom resources, patches, applied configurations) keep it. kube's typed decoder
//!   (built-in kinds) does not: it decodes a repeated struct field or map into the value it
//!   already has (`{"data": {"a": "1"}, "data": {"b": "2"}}` gives both keys; a repeated list
//!   is decoded element by element into the first one, then cut to the new length) and replaces
//!   only scalars. turtles keeps the last value for every kind, a deliberate difference: such
//!   bodies are reported (or refused with `Strict`), and kubectl never sends one;
//! - the same body as go-yaml's strict decoder sees it ([`yaml_strict`]): server-side apply
//!   decodes a JSON configuration again with sigs.k8s.io/yaml's `UnmarshalStrict`, which reports
//!   every repeat with the line of its value (`line 3: key "a" already set in map`);
//! - a JSON patch as kube decodes it into its operations (`[]jsonPatchOp`, [`json_patch_strict`]):
//!   `op`, `path`, `from` and `value` repeated, keys repeated inside a `value`, and keys an
//!   operation does not have, with kube's `json patch ` prefix;
//! - `-0`: Go's integer fields take it (`strconv.ParseInt("-0")` is 0) and its untyped values
//!   keep it as the integer 0; serde_json reads it as the float `-0.0`, which no integer field
//!   takes. [`negative_zero_as_zero`] makes it `0` before parsing (`-0.0` stays a float, which
//!   integer fields refuse in kube too).

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::hash::Hasher;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// kube's strict decoder keeps at most so many errors (`saveStrictError`); go-yaml's reports
/// are cut at as many here.
const MAX_DUPLICATES: usize = 100;

/// The fields of kube's `jsonPatchOp` (`endpoints/handlers/patch.go`).
const JSON_PATCH_FIELDS: [&str; 4] = ["op", "path", "from", "value"];

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
    let (value, state) = parse(body, Mode::Kube)?;
    Ok((value, state.found.into_iter().map(|(_, d)| d).collect()))
}

/// A JSON patch as kube's patcher decodes it when `fieldValidation` is `Strict` or `Warn`
/// (`kjson.UnmarshalStrict` into `[]jsonPatchOp{Op, Path, From string; Value interface{}}`):
/// the value as [`from_slice`] reads it, and kube's strict errors in document order, each with
/// the patcher's prefix: `json patch duplicate field "[1].path"` (an operation's field
/// repeated, or a key repeated inside its `value`), `json patch unknown field "[0].foo"` (a
/// key an operation does not have; nothing inside it is looked at, nor inside `op`, `path` and
/// `from`, which are strings). At most 100, each once, as [`from_slice`].
pub fn json_patch_strict(body: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let (value, state) = parse(body, Mode::JsonPatch)?;
    let errors = state
        .found
        .into_iter()
        .map(|(unknown, d)| {
            let what = if unknown { "unknown" } else { "duplicate" };
            format!(
                "json patch {what} field {}",
                crate::auth::rbac::go_quote(&d.path)
            )
        })
        .collect();
    Ok((value, errors))
}

/// A JSON document as go-yaml v2's strict decoder sees it (sigs.k8s.io/yaml's
/// `UnmarshalStrict`, which server-side apply runs on its configuration, JSON or not): the value
/// as [`from_slice`] reads it (its errors are serde_json's, not necessarily at the same place),
/// and go-yaml's report of each key read again in an object, every time: `line 3: key "a"
/// already set in map`, with the line (from 1) where the key's value starts, listed as go-yaml
/// lists them, once that value is read (a repeat inside it first). go-yaml lists them all;
/// here at most 100, with at most as many bytes of keys as the body has.
pub fn yaml_strict(body: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let (value, state) = parse(body, Mode::Yaml)?;
    Ok((value, state.repeats))
}

/// What a parse reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// sigs.k8s.io/json's strict decoder into maps ([`from_slice`]).
    Kube,
    /// sigs.k8s.io/json's strict decoder into JSON patch operations ([`json_patch_strict`]).
    JsonPatch,
    /// go-yaml's strict decoder ([`yaml_strict`]).
    Yaml,
}

fn parse(body: &[u8], mode: Mode) -> Result<(Value, State<'_>), serde_json::Error> {
    let mut state = State {
        mode,
        body,
        text: String::new(),
        marks: Vec::new(),
        found: Vec::new(),
        seen: HashSet::new(),
        budget: body.len(),
        muted: 0,
        repeats: Vec::new(),
        line: 1,
        line_at: 0,
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = ValueSeed {
        state: &mut state,
        seg: Seg::Root,
        parent: 0,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, state))
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

struct State<'b> {
    mode: Mode,
    /// The body (for the lines of [`Mode::Yaml`]).
    body: &'b [u8],
    /// The path of the object or list being read, in kube's format.
    text: String,
    /// Its steps.
    marks: Vec<Mark>,
    /// What sigs.k8s.io/json reports, in document order (`true`: a key a JSON patch operation
    /// does not have; otherwise a repeated key).
    found: Vec<(bool, DuplicateField)>,
    /// The hashes of the paths reported (of each kind).
    seen: HashSet<u64>,
    /// Bytes of paths (or of [`Mode::Yaml`]'s keys) that may still be reported.
    budget: usize,
    /// Above 0 inside a value kube's decoder does not look into (a JSON patch operation's key
    /// it does not have; its `op`, `path` and `from`, which are strings).
    muted: usize,
    /// What go-yaml reports ([`Mode::Yaml`]).
    repeats: Vec<String>,
    /// The line (from 1) at byte `line_at` of the body.
    line: usize,
    line_at: usize,
}

impl State<'_> {
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

    /// `key` is in the object being read (whose path hash is `object`) once more, or
    /// (`unknown`) is a key a JSON patch operation does not have.
    fn report(&mut self, object: u64, key: &str, unknown: bool) {
        if self.muted > 0 || self.found.len() >= MAX_DUPLICATES || self.budget == 0 {
            return;
        }
        let mut hash = Seg::Key(key).hash(object);
        if unknown {
            // kube reports each (kind, path) once.
            hash = Seg::Index(0).hash(hash);
        }
        if !self.seen.insert(hash) {
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
        self.found
            .push((unknown, DuplicateField { path, segments }));
    }

    /// The line where the value after a key ending at byte `key_end` starts: go-yaml's line of
    /// the value's node. Asked in document order, so the body's lines are counted once.
    fn value_line(&mut self, key_end: Option<usize>) -> usize {
        let Some(mut at) = key_end else {
            return self.line;
        };
        // Past the blanks and the colon (the body was read that far as JSON).
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | b':') = self.body.get(at) {
            at += 1;
        }
        if at > self.line_at {
            self.line += line_breaks(self.body.get(self.line_at..at).unwrap_or_default());
            self.line_at = at;
        }
        self.line
    }

    /// go-yaml's report of `key` read again, at `line`.
    fn repeat(&mut self, line: usize, key: &str) {
        if self.repeats.len() >= MAX_DUPLICATES || self.budget == 0 {
            return;
        }
        // `%#v` of a string key: Go's quoting.
        let key = crate::auth::rbac::go_quote(key);
        if key.len() > self.budget {
            self.budget = 0;
            return;
        }
        self.budget -= key.len();
        self.repeats
            .push(format!("line {line}: key {key} already set in map"));
    }
}

/// Line breaks as YAML counts them: LF, CR (CR LF is one), NEL, LS and PS.
fn line_breaks(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| match b {
            b'\n' => true,
            b'\r' => bytes.get(i + 1) != Some(&b'\n'),
            0xC2 => bytes.get(i + 1) == Some(&0x85),
            0xE2 => {
                bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9))
            }
            _ => false,
        })
        .count()
}

/// A key read for [`Mode::Yaml`]: its text, and the byte after it in the body. Read as a raw
/// value, which serde_json lends from the body, so where it ends is known.
struct RawKey<'b> {
    body: &'b [u8],
}

impl<'de> DeserializeSeed<'de> for RawKey<'_> {
    type Value = (String, Option<usize>);

    fn deserialize<D>(self, deserializer: D) -> Result<Self::Value, D::Error>
    where
        D: Deserializer<'de>,
    {
        let raw: &'de RawValue = serde::Deserialize::deserialize(deserializer)?;
        let text = raw.get();
        let start = (text.as_ptr() as usize).wrapping_sub(self.body.as_ptr() as usize);
        let end = start
            .checked_add(text.len())
            .filter(|&end| end <= self.body.len());
        // The raw text is the key's string token, quotes included.
        let key = match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            Some(inner) if !inner.contains('\\') => inner.to_owned(),
            _ => serde_json::from_str::<String>(text).map_err(<D::Error as de::Error>::custom)?,
        };
        Ok((key, end))
    }
}

/// Reads one value, as serde_json's own `Value` visitor does.
struct ValueSeed<'s, 'k, 'b> {
    state: &'s mut State<'b>,
    seg: Seg<'k>,
    /// The hash of the parent's path.
    parent: u64,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_, '_> {
    type Value = Value;

    fn deserialize<D>(self, deserializer: D) -> Result<Value, D::Error>
    where
        D: Deserializer<'de>,
    {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_, '_> {
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
        let mode = self.state.mode;
        // An operation of a JSON patch: an object right inside the top-level list.
        let op = mode == Mode::JsonPatch && matches!(self.state.marks.as_slice(), [Mark::Index(_)]);
        let body = self.state.body;
        let mut out = Map::new();
        loop {
            let (key, key_end) = if mode == Mode::Yaml {
                match map.next_key_seed(RawKey { body })? {
                    Some(k) => k,
                    None => break,
                }
            } else {
                match map.next_key::<String>()? {
                    Some(k) => (k, None),
                    None => break,
                }
            };
            let repeated = out.contains_key(&key);
            let mut muted = false;
            let mut line = None;
            match mode {
                Mode::Yaml => {
                    if repeated {
                        line = Some(self.state.value_line(key_end));
                    }
                }
                // kube's decoder skips a key the operation does not have (reported once as
                // unknown, never as repeated) and reads `op`, `path` and `from` as strings.
                Mode::JsonPatch if op && !JSON_PATCH_FIELDS.contains(&key.as_str()) => {
                    self.state.report(hash, &key, true);
                    muted = true;
                }
                _ => {
                    if repeated {
                        self.state.report(hash, &key, false);
                    }
                    muted = op && key != "value";
                }
            }
            if muted {
                self.state.muted += 1;
            }
            let value = map.next_value_seed(ValueSeed {
                state: &mut *self.state,
                seg: Seg::Key(&key),
                parent: hash,
            })?;
            if muted {
                self.state.muted -= 1;
            }
            // go-yaml reports a repeat once its value is read.
            if let Some(line) = line {
                self.state.repeat(line, &key);
            }
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
            let got = json_patch_strict(body.as_bytes())
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert_eq!(got, want, "{body}");
        }
    }

    /// go-yaml's strict report of a JSON body (server-side apply): every repeat, with the line
    /// its value starts on, a repeat inside a value before the key holding it.
    #[test]
    fn yaml_reports_each_repeat_with_the_line_of_its_value() {
        // kube's own test body (test/integration/apiserver/field_validation_test.go,
        // `applyInvalidBody`) and the warnings kube answers it with.
        let body = "{\n\t\t\"apiVersion\": \"apps/v1\",\n\t\t\"kind\": \"Deployment\",\n\t\t\"metadata\": {\n\t\t\t\"name\": \"d\",\n\t\t\t\"labels\": {\"app\": \"nginx\"}\n\t\t},\n\t\t\"spec\": {\n\t\t\t\"paused\": false,\n\t\t\t\"paused\": true,\n\t\t\t\"selector\": {\n\t\t\t\t\"matchLabels\": {\n\t\t\t\t\t\"app\": \"nginx\"\n\t\t\t\t}\n\t\t\t},\n\t\t\t\"template\": {\n\t\t\t\t\"metadata\": {\n\t\t\t\t\t\"labels\": {\n\t\t\t\t\t\t\"app\": \"nginx\"\n\t\t\t\t\t}\n\t\t\t\t},\n\t\t\t\t\"spec\": {\n\t\t\t\t\t\"containers\": [{\n\t\t\t\t\t\t\"name\":  \"nginx\",\n\t\t\t\t\t\t\"image\": \"nginx:latest\",\n\t\t\t\t\t\t\"imagePullPolicy\": \"Never\",\n\t\t\t\t\t\t\"imagePullPolicy\": \"Always\"\n\t\t\t\t\t}]\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}";
        let (v, repeats) = yaml_strict(body.as_bytes()).expect("JSON");
        assert_eq!(
            repeats,
            [
                "line 10: key \"paused\" already set in map",
                "line 27: key \"imagePullPolicy\" already set in map"
            ]
        );
        assert_eq!(v, serde_json::from_str::<Value>(body).expect("JSON"));
        // The value's line, not the key's; every repeat; inside a value first.
        let body = "{\"a\": 1,\n \"a\":\n   2,\n \"b\": {\"c\": 1,\n       \"c\": {\"d\": 1, \"d\": 2}}, \"a\": 3}";
        assert_eq!(
            yaml_strict(body.as_bytes()).expect("JSON").1,
            [
                "line 3: key \"a\" already set in map",
                "line 5: key \"d\" already set in map",
                "line 5: key \"c\" already set in map",
                "line 5: key \"a\" already set in map"
            ]
        );
        // YAML's line breaks (CR LF once, a lone CR too); an escaped key; Go's quoting.
        for (body, want) in [
            (
                "{\"a\": 1,\r\n\"a\": 2}",
                "line 2: key \"a\" already set in map",
            ),
            (
                "{\"a\": 1,\r\"a\": 2}",
                "line 2: key \"a\" already set in map",
            ),
            (
                "{\"\\u0061\": 1,\n\"a\": 2}",
                "line 2: key \"a\" already set in map",
            ),
            (
                "{\"x\": \"\u{2028}\", \"a\\nb\": 1, \"a\\nb\": 2}",
                "line 2: key \"a\\nb\" already set in map",
            ),
        ] {
            assert_eq!(
                yaml_strict(body.as_bytes()).expect("JSON").1,
                [want],
                "{body}"
            );
        }
        assert!(yaml_strict(br#"{"a": {"b": [1, {"c": 2}]}}"#)
            .expect("JSON")
            .1
            .is_empty());
        // Bounded as the other reports.
        let body = format!(
            "{{{}}}",
            (0..300).map(|_| "\"k\": 1").collect::<Vec<_>>().join(", ")
        );
        assert_eq!(
            yaml_strict(body.as_bytes()).expect("JSON").1.len(),
            MAX_DUPLICATES
        );
    }

    /// A JSON patch as kube decodes it into its operations: their fields repeated, keys
    /// repeated in a `value`, keys an operation does not have (once; nothing inside them).
    #[test]
    fn json_patch_operations_are_checked_as_kube_checks_them() {
        // kube's own test body (`jsonPatchBody`) and its strict errors.
        let body = r#"[
            {"op": "add", "path": "/spec/unknown1", "value": "val1", "foo":"bar"},
            {"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val1"},
            {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe"},
            {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe2"}
        ]"#;
        let (v, errors) = json_patch_strict(body.as_bytes()).expect("JSON");
        assert_eq!(
            errors,
            [
                "json patch unknown field \"[0].foo\"",
                "json patch duplicate field \"[1].path\""
            ]
        );
        assert_eq!(v, serde_json::from_str::<Value>(body).expect("JSON"));
        let body = r#"[{"op": "add", "path": "/a", "value": {"x": 1, "x": 2, "l": [{"y": 1, "y": 1}]},
                        "foo": {"z": 1, "z": 2}, "foo": 3, "op": "add"},
                       {"op": "add", "path": {"p": 1, "p": 2}, "value": 1, "value": 2}]"#;
        assert_eq!(
            json_patch_strict(body.as_bytes()).expect("JSON").1,
            [
                "json patch duplicate field \"[0].value.x\"",
                "json patch duplicate field \"[0].value.l[0].y\"",
                "json patch unknown field \"[0].foo\"",
                "json patch duplicate field \"[0].op\"",
                "json patch duplicate field \"[1].value\""
            ]
        );
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
