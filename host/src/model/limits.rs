//! Limits on what may be stored, whatever path a write takes. Pure functions, no I/O.
//!
//! A request body is bounded when it is read (3 MiB) and parsed (serde_json refuses nesting deeper
//! than [`MAX_DEPTH`]), but a patch can build an object bigger or deeper than any body: these
//! bounds are checked on the *resulting* object, before anything recursive walks it and before
//! it is stored. See `docs/security.md`.

use serde_json::Value;

/// The deepest nesting of arrays and objects a stored object may have: exactly what the JSON
/// parser accepts (serde_json's recursion limit), so every stored object can be read back at
/// start-up, and no recursive walk (clone, drop, serialize, schema, patch) can overflow a stack.
pub const MAX_DEPTH: usize = 127;

/// Default largest stored object, in bytes of its JSON: etcd's default `--max-request-bytes`
/// (1.5 MiB), the limit kube-apiserver's objects live under.
pub const DEFAULT_MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// kube's `JSONPatchMaxCopyBytes`: the bytes a JSON patch's `copy` operations may add up to.
pub const JSON_PATCH_MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// kube's `maxJSONPatchOperations`.
pub const JSON_PATCH_MAX_OPERATIONS: usize = 10_000;

/// The nesting depth of `v` (0 for a scalar, 1 for a flat array or object), or `None` once it
/// exceeds `max`. Iterative: safe on a value of any depth.
pub fn depth(v: &Value, max: usize) -> Option<usize> {
    let mut deepest = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        let d = d + 1;
        if d > max {
            return None;
        }
        deepest = deepest.max(d);
        stack.extend(children.map(|c| (c, d)));
    }
    Some(deepest)
}

/// Whether `v` nests no deeper than [`MAX_DEPTH`].
pub fn within_depth(v: &Value) -> bool {
    depth(v, MAX_DEPTH).is_some()
}

/// The message of a refusal for nesting: kube has no such limit below its decoder's 10,000.
pub fn too_deep_message() -> String {
    format!("the object is nested deeper than the limit of {MAX_DEPTH} levels")
}

/// Drop a value of any depth without recursion (serde_json's own drop recurses).
pub fn dispose(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// The length of `v` serialized as JSON, without allocating it.
pub fn json_len(v: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Counter(0);
    // Writing into a counter cannot fail; values here are within MAX_DEPTH.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..levels {
            v = Value::Array(vec![v]);
        }
        v
    }

    #[test]
    fn depth_counts_containers() {
        assert_eq!(depth(&json!(1), 10), Some(0));
        assert_eq!(depth(&json!({}), 10), Some(1));
        assert_eq!(depth(&json!({"a": [1, {"b": 2}]}), 10), Some(3));
        assert_eq!(depth(&nested(11), 10), None);
        assert_eq!(depth(&nested(10), 10), Some(10));
    }

    #[test]
    fn max_depth_is_exactly_what_the_parser_reads_back() {
        let ok = serde_json::to_vec(&nested(MAX_DEPTH)).unwrap();
        assert!(serde_json::from_slice::<Value>(&ok).is_ok());
        let deeper = serde_json::to_vec(&nested(MAX_DEPTH + 1)).unwrap();
        assert!(serde_json::from_slice::<Value>(&deeper).is_err());
    }

    #[test]
    fn depth_of_a_very_deep_value_does_not_recurse() {
        // Built and torn down iteratively: a recursive drop of this would overflow the stack.
        let mut v = json!(null);
        for _ in 0..200_000 {
            v = Value::Array(vec![v]);
        }
        assert_eq!(depth(&v, MAX_DEPTH), None);
        assert!(!within_depth(&v));
        dispose(v);
    }

    #[test]
    fn json_len_matches_serialization() {
        let v = json!({"a": "x\"y", "b": [1, 2.5, null, true], "c": {"d": "é"}});
        assert_eq!(json_len(&v), serde_json::to_vec(&v).unwrap().len());
    }
}
