//! Finding `metadata.managedFields` in an object's JSON without parsing it: the byte range a
//! lean copy leaves out (see [`super::StoredObject::lean_json`]).
//!
//! A reconcile is handed its object without managed fields. Parsing the object into a tree and
//! serializing it again to drop them was over half of what a no-op reconcile cost the host; a
//! scan that only matches brackets and skips strings finds the entry in a fraction of that, and
//! the lean copy is the stored bytes with one range cut out, so every other byte stays as
//! stored.
//!
//! The scan trusts the bytes to be JSON (they were serialized by this process, or checked when
//! read from the backend), but never indexes out of bounds: on anything it does not expect it
//! answers [`Cut::Unsure`], and the caller parses.

use std::ops::Range;

/// Where `metadata.managedFields` is.
#[derive(Debug, PartialEq, Eq)]
pub enum Cut {
    /// The object has no `metadata.managedFields`: the JSON is lean as it is.
    None,
    /// Leaving out this range leaves out the entry and one comma next to it.
    Range(Range<usize>),
    /// Something the scan does not decide (an escaped key, a repeated key, bytes that are not
    /// an object): parse to be sure.
    Unsure,
}

/// Where `metadata.managedFields` is in `json`, a JSON object.
pub fn managed_fields(json: &[u8]) -> Cut {
    scan(json).unwrap_or(Cut::Unsure)
}

fn scan(json: &[u8]) -> Option<Cut> {
    let mut s = Scanner { b: json, i: 0 };
    s.ws();
    s.eat(b'{')?;
    let mut found = None;
    let mut seen_metadata = false;
    s.ws();
    if s.peek()? == b'}' {
        return Some(Cut::None);
    }
    loop {
        s.ws();
        let key = s.key()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        if key == b"metadata" {
            if seen_metadata {
                return None;
            }
            seen_metadata = true;
            if s.peek()? == b'{' {
                found = s.metadata()?;
            } else {
                s.value()?;
            }
        } else {
            s.value()?;
        }
        s.ws();
        match s.next()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    Some(found.map_or(Cut::None, Cut::Range))
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// A string at the cursor; its content's range, and whether it has escapes.
    fn string(&mut self) -> Option<(Range<usize>, bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            match self.next()? {
                b'"' => return Some((start..self.i - 1, escaped)),
                b'\\' => {
                    escaped = true;
                    self.next()?;
                }
                _ => {}
            }
        }
    }

    /// An object key: its raw bytes (`None` for one with escapes, which could spell either name).
    fn key(&mut self) -> Option<&'a [u8]> {
        let (range, escaped) = self.string()?;
        if escaped {
            return None;
        }
        self.b.get(range)
    }

    /// Skip one value of any type.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                        }
                        b'{' | b'[' => {
                            depth += 1;
                            self.i += 1;
                        }
                        b'}' | b']' => {
                            depth -= 1;
                            self.i += 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                        _ => self.i += 1,
                    }
                }
            }
            _ => {
                // A number, true, false or null: up to the next delimiter.
                let start = self.i;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }

    /// The `metadata` object at the cursor: the range of its `managedFields` entry with one
    /// adjacent comma (and the whitespace around it), if it has one.
    fn metadata(&mut self) -> Option<Option<Range<usize>>> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(None);
        }
        let mut found = None;
        // The end of the previous entry's value (where a cut that follows it begins).
        let mut prev_end = None;
        loop {
            self.ws();
            let start = self.i;
            let is_managed = self.key()? == b"managedFields";
            self.ws();
            self.eat(b':')?;
            self.ws();
            self.value()?;
            let end = self.i;
            self.ws();
            let last = match self.next()? {
                b',' => false,
                b'}' => true,
                _ => return None,
            };
            if is_managed {
                if found.is_some() {
                    return None;
                }
                found = Some(match prev_end {
                    // `,"managedFields":[...]` after another entry.
                    Some(p) => p..end,
                    // The first entry: it and the comma after it (and the space before the next
                    // key), or the only entry.
                    None if last => start..end,
                    None => {
                        self.ws();
                        start..self.i
                    }
                });
            }
            prev_end = Some(end);
            if last {
                return Some(found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// What the scan's cut leaves, parsed; `None` when it could not decide.
    fn lean(json: &[u8]) -> Option<Value> {
        match managed_fields(json) {
            Cut::None => Some(serde_json::from_slice(json).unwrap()),
            Cut::Range(r) => {
                let mut out = json[..r.start].to_vec();
                out.extend_from_slice(&json[r.end..]);
                Some(serde_json::from_slice(&out).expect("the cut leaves JSON"))
            }
            Cut::Unsure => None,
        }
    }

    fn without(v: &Value) -> Value {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        v
    }

    #[test]
    fn the_cut_leaves_out_the_entry_wherever_it_is() {
        let mf = json!([{"manager": "kubectl", "fieldsV1": {"f:data": {"f:x}]\"": {}}}}]);
        let cases = [
            json!({"metadata": {"managedFields": mf}}),
            json!({"metadata": {"managedFields": mf, "name": "a"}}),
            json!({"metadata": {"name": "a", "managedFields": mf}}),
            json!({"metadata": {"name": "a", "managedFields": mf, "uid": "u"}, "data": {"k": "v"}}),
            json!({"kind": "X", "metadata": {"name": "a", "managedFields": []}, "n": [1, -2.5e3, true, null]}),
            json!({"metadata": {"name": "a"}, "data": {"managedFields": "in data: kept"}}),
            json!({"data": {"metadata": {"managedFields": 1}}, "metadata": {"name": "\"q\\"}}),
            json!({"metadata": {}}),
            json!({"metadata": "not an object"}),
            json!({}),
            json!({"spec": {"managedFields": []}}),
        ];
        for v in cases {
            let compact = serde_json::to_vec(&v).unwrap();
            let pretty = serde_json::to_vec_pretty(&v).unwrap();
            for bytes in [compact, pretty] {
                assert_eq!(
                    lean(&bytes).as_ref(),
                    Some(&without(&v)),
                    "{}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }

    #[test]
    fn it_is_unsure_of_what_it_cannot_decide_and_never_panics() {
        for unsure in [
            &br#"{"metadata":{"managed\u0046ields":[]}}"#[..],
            br#"{"metadata":{"managedFields":[],"managedFields":[]}}"#,
            br#"{"metadata":{},"metadata":{"managedFields":[]}}"#,
            br#"[1,2]"#,
            br#"{"metadata":{"managedFields":[}"#,
            b"",
        ] {
            assert_eq!(managed_fields(unsure), Cut::Unsure);
        }
        // Every prefix of a real object: no panic, and a cut only inside the bytes.
        let full = serde_json::to_vec(
            &json!({"metadata": {"name": "a", "managedFields": [{"m": "x"}]}, "data": {"k": "v"}}),
        )
        .unwrap();
        for n in 0..full.len() {
            if let Cut::Range(r) = managed_fields(&full[..n]) {
                assert!(r.end <= n);
            }
        }
    }
}
