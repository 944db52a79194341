//! Go's `encoding/json` `Unmarshal` into a `map[string]interface{}`, as far as its outcome: the
//! error Go gives for arbitrary bytes, word for word, or none. kube's validation calls it on
//! bytes it never decodes itself (a `kubernetes.io/dockercfg` or `dockerconfigjson` Secret's
//! data) and reports the error's text, so serde_json's wording would show through.
//!
//! `json.Unmarshal` first runs the scanner over the whole input (`checkValid`), so a syntax
//! error wins over anything else; it reports the first byte the scanner refuses, with the
//! scanner's context (`scanner.go`): `invalid character 'o' in literal null (expecting 'u')`,
//! `invalid character 'x' after top-level value`, `invalid character ' ' in numeric literal`
//! (the end of the input reads as a space), `unexpected end of JSON input`. The character is
//! quoted as the scanner's `quoteChar` quotes a byte: `'x'`, `'\''`, `'"'`, `'\n'`, `'\x01'`,
//! and a byte from 0x80 as the character of that code point (`'Ã'` for 0xC3, `'\u0080'`).
//!
//! A valid document is then decoded: `null` leaves the map nil (no error), an object fills it
//! (its values go into `interface{}`, where only a number beyond float64 fails: `json: cannot
//! unmarshal number 1e400 into Go value of type float64`), and an array, a string, a number or
//! a boolean is a type error: `json: cannot unmarshal array into Go value of type
//! map[string]interface {}`. Go keeps the first such error and goes on, so it is the first in
//! the document.

/// Go's `maxNestingDepth`: a document nested deeper is a syntax error.
const MAX_NESTING_DEPTH: usize = 10_000;

/// The Go type a document is unmarshalled into here.
const MAP_TYPE: &str = "map[string]interface {}";

/// Why Go's `json.Unmarshal` refuses a document; the `Display` is Go's `err.Error()`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnmarshalError {
    /// A `*json.SyntaxError`: the scanner's message, and the count of bytes read when it failed
    /// (Go's `Offset`).
    #[error("{message}")]
    Syntax { message: String, offset: usize },
    /// A `*json.UnmarshalTypeError` with no struct around it: the JSON kind found (`array`,
    /// `number 1e400`...) and the Go type it does not fit.
    #[error("json: cannot unmarshal {value} into Go value of type {go_type}")]
    Type {
        value: String,
        go_type: &'static str,
    },
}

/// `json.Unmarshal(data, &map[string]interface{}{})`: `Ok` when Go accepts the document.
pub fn unmarshal_into_map(data: &[u8]) -> Result<(), UnmarshalError> {
    let too_big = check_valid(data)?;
    let first = data
        .iter()
        .position(|b| !is_space(*b))
        .and_then(|i| data.get(i));
    let kind = match first {
        Some(b'{') => {
            // Every value lands in an `interface{}`; a number goes through
            // `strconv.ParseFloat`, which refuses one beyond float64's range.
            return match too_big {
                Some(n) => Err(UnmarshalError::Type {
                    value: format!("number {n}"),
                    go_type: "float64",
                }),
                None => Ok(()),
            };
        }
        Some(b'n') => return Ok(()),
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        _ => "number",
    };
    Err(UnmarshalError::Type {
        value: kind.to_owned(),
        go_type: MAP_TYPE,
    })
}

/// Go's `checkValid` alone, the syntax check every `json.Unmarshal` starts with: the first
/// syntax error of `data` (an [`UnmarshalError::Syntax`]), as kube words a body that is not
/// JSON (`couldn't get version/kind; json parse error: ...`).
pub fn check_syntax(data: &[u8]) -> Result<(), UnmarshalError> {
    check_valid(data).map(|_| ())
}

/// Whether `strconv.ParseFloat(n, 64)` takes the (syntactically valid) number: it refuses one
/// that rounds beyond the largest float64 (an underflow is 0, no error).
fn fits_float64(n: &str) -> bool {
    n.parse::<f64>().is_ok_and(f64::is_finite)
}

/// Go's `isSpace`: the four JSON white space bytes.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `checkValid`: the scanner over every byte, then the end of the input. On success, the
/// first number literal of the document that float64 cannot hold (for the decoding that
/// follows), if any.
fn check_valid(data: &[u8]) -> Result<Option<String>, UnmarshalError> {
    let mut scan = Scanner::default();
    for (i, &c) in data.iter().enumerate() {
        scan.bytes = i + 1;
        let before = scan.step;
        scan.feed(c)?;
        if is_number_state(scan.step) && !is_number_state(before) {
            scan.number_start = Some(i);
        } else if !is_number_state(scan.step) {
            scan.end_number(data.get(..i).unwrap_or_default());
        }
    }
    scan.eof()?;
    scan.end_number(data);
    Ok(scan.too_big)
}

/// The scanner's states (`scanner.go`: one function each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU,
    InStringEscU1,
    InStringEscU12,
    InStringEscU123,
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    T,
    Tr,
    Tru,
    F,
    Fa,
    Fal,
    Fals,
    N,
    Nu,
    Nul,
    Error,
}

fn is_number_state(s: State) -> bool {
    matches!(
        s,
        State::Neg
            | State::One
            | State::Zero
            | State::Dot
            | State::Dot0
            | State::E
            | State::ESign
            | State::E0
    )
}

/// What the scanner is inside of (Go's `parseObjectKey`, `parseObjectValue`,
/// `parseArrayValue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

#[derive(Debug, Default)]
struct Scanner {
    step: State,
    parse: Vec<Parse>,
    end_top: bool,
    err: Option<UnmarshalError>,
    /// Bytes read (Go's `bytes`, the offset a syntax error reports).
    bytes: usize,
    /// Where the number literal being read started.
    number_start: Option<usize>,
    /// The first number literal read that float64 cannot hold.
    too_big: Option<String>,
}

impl Scanner {
    /// The number literal being read ended at the end of `read` (the bytes read before the
    /// current one).
    fn end_number(&mut self, read: &[u8]) {
        if let Some(start) = self.number_start.take() {
            if self.too_big.is_none() {
                let n = String::from_utf8_lossy(read.get(start..).unwrap_or_default());
                if !fits_float64(&n) {
                    self.too_big = Some(n.into_owned());
                }
            }
        }
    }

    /// Go's `s.error`: the scanner stops at `c`.
    fn error(&mut self, c: u8, context: &str) -> Result<(), UnmarshalError> {
        self.step = State::Error;
        let err = UnmarshalError::Syntax {
            message: format!("invalid character {} {context}", quote_char(c)),
            offset: self.bytes,
        };
        self.err = Some(err.clone());
        Err(err)
    }

    fn push(&mut self, c: u8, p: Parse) -> Result<(), UnmarshalError> {
        self.parse.push(p);
        if self.parse.len() > MAX_NESTING_DEPTH {
            return self.error(c, "exceeded max depth");
        }
        Ok(())
    }

    fn pop(&mut self) {
        self.parse.pop();
        if self.parse.is_empty() {
            self.step = State::EndTop;
            self.end_top = true;
        } else {
            self.step = State::EndValue;
        }
    }

    /// One byte, in the current state.
    fn feed(&mut self, c: u8) -> Result<(), UnmarshalError> {
        match self.step {
            State::BeginValue => self.begin_value(c),
            State::BeginValueOrEmpty => {
                if is_space(c) {
                    Ok(())
                } else if c == b']' {
                    self.end_value(c)
                } else {
                    self.begin_value(c)
                }
            }
            State::BeginStringOrEmpty => {
                if is_space(c) {
                    Ok(())
                } else if c == b'}' {
                    if let Some(top) = self.parse.last_mut() {
                        *top = Parse::ObjectValue;
                    }
                    self.end_value(c)
                } else {
                    self.begin_string(c)
                }
            }
            State::BeginString => self.begin_string(c),
            State::EndValue => self.end_value(c),
            State::EndTop => self.after_top(c),
            State::InString => {
                match c {
                    b'"' => self.step = State::EndValue,
                    b'\\' => self.step = State::InStringEsc,
                    c if c < 0x20 => return self.error(c, "in string literal"),
                    _ => {}
                }
                Ok(())
            }
            State::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.step = State::InString;
                    Ok(())
                }
                b'u' => {
                    self.step = State::InStringEscU;
                    Ok(())
                }
                _ => self.error(c, "in string escape code"),
            },
            State::InStringEscU
            | State::InStringEscU1
            | State::InStringEscU12
            | State::InStringEscU123 => {
                if !c.is_ascii_hexdigit() {
                    return self.error(c, "in \\u hexadecimal character escape");
                }
                self.step = match self.step {
                    State::InStringEscU => State::InStringEscU1,
                    State::InStringEscU1 => State::InStringEscU12,
                    State::InStringEscU12 => State::InStringEscU123,
                    _ => State::InString,
                };
                Ok(())
            }
            State::Neg => match c {
                b'0' => {
                    self.step = State::Zero;
                    Ok(())
                }
                b'1'..=b'9' => {
                    self.step = State::One;
                    Ok(())
                }
                _ => self.error(c, "in numeric literal"),
            },
            State::One => {
                if c.is_ascii_digit() {
                    Ok(())
                } else {
                    self.zero(c)
                }
            }
            State::Zero => self.zero(c),
            State::Dot => {
                if c.is_ascii_digit() {
                    self.step = State::Dot0;
                    Ok(())
                } else {
                    self.error(c, "after decimal point in numeric literal")
                }
            }
            State::Dot0 => match c {
                b'0'..=b'9' => Ok(()),
                b'e' | b'E' => {
                    self.step = State::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::E => {
                if c == b'+' || c == b'-' {
                    self.step = State::ESign;
                    Ok(())
                } else {
                    self.e_sign(c)
                }
            }
            State::ESign => self.e_sign(c),
            State::E0 => {
                if c.is_ascii_digit() {
                    Ok(())
                } else {
                    self.end_value(c)
                }
            }
            State::T => self.literal(c, b'r', State::Tr, "in literal true (expecting 'r')"),
            State::Tr => self.literal(c, b'u', State::Tru, "in literal true (expecting 'u')"),
            State::Tru => self.literal(c, b'e', State::EndValue, "in literal true (expecting 'e')"),
            State::F => self.literal(c, b'a', State::Fa, "in literal false (expecting 'a')"),
            State::Fa => self.literal(c, b'l', State::Fal, "in literal false (expecting 'l')"),
            State::Fal => self.literal(c, b's', State::Fals, "in literal false (expecting 's')"),
            State::Fals => {
                self.literal(c, b'e', State::EndValue, "in literal false (expecting 'e')")
            }
            State::N => self.literal(c, b'u', State::Nu, "in literal null (expecting 'u')"),
            State::Nu => self.literal(c, b'l', State::Nul, "in literal null (expecting 'l')"),
            State::Nul => self.literal(c, b'l', State::EndValue, "in literal null (expecting 'l')"),
            // Go's `stateError`: the error already recorded stands.
            State::Error => Err(self.err.clone().unwrap_or(UnmarshalError::Syntax {
                message: String::new(),
                offset: self.bytes,
            })),
        }
    }

    /// One byte of a literal (`true`, `false`, `null`): `want`, or Go's complaint.
    fn literal(
        &mut self,
        c: u8,
        want: u8,
        next: State,
        context: &str,
    ) -> Result<(), UnmarshalError> {
        if c == want {
            self.step = next;
            Ok(())
        } else {
            self.error(c, context)
        }
    }

    /// Go's `stateBeginValue`.
    fn begin_value(&mut self, c: u8) -> Result<(), UnmarshalError> {
        if is_space(c) {
            return Ok(());
        }
        let next = match c {
            b'{' => {
                self.step = State::BeginStringOrEmpty;
                return self.push(c, Parse::ObjectKey);
            }
            b'[' => {
                self.step = State::BeginValueOrEmpty;
                return self.push(c, Parse::ArrayValue);
            }
            b'"' => State::InString,
            b'-' => State::Neg,
            b'0' => State::Zero,
            b't' => State::T,
            b'f' => State::F,
            b'n' => State::N,
            b'1'..=b'9' => State::One,
            _ => return self.error(c, "looking for beginning of value"),
        };
        self.step = next;
        Ok(())
    }

    /// Go's `stateBeginString`: an object's key.
    fn begin_string(&mut self, c: u8) -> Result<(), UnmarshalError> {
        if is_space(c) {
            return Ok(());
        }
        if c == b'"' {
            self.step = State::InString;
            return Ok(());
        }
        self.error(c, "looking for beginning of object key string")
    }

    /// Go's `stateEndValue`: after a value, what the enclosing object or array expects.
    fn end_value(&mut self, c: u8) -> Result<(), UnmarshalError> {
        let Some(&top) = self.parse.last() else {
            self.step = State::EndTop;
            self.end_top = true;
            return self.after_top(c);
        };
        if is_space(c) {
            self.step = State::EndValue;
            return Ok(());
        }
        match top {
            Parse::ObjectKey => {
                if c == b':' {
                    if let Some(p) = self.parse.last_mut() {
                        *p = Parse::ObjectValue;
                    }
                    self.step = State::BeginValue;
                    return Ok(());
                }
                self.error(c, "after object key")
            }
            Parse::ObjectValue => match c {
                b',' => {
                    if let Some(p) = self.parse.last_mut() {
                        *p = Parse::ObjectKey;
                    }
                    self.step = State::BeginString;
                    Ok(())
                }
                b'}' => {
                    self.pop();
                    Ok(())
                }
                _ => self.error(c, "after object key:value pair"),
            },
            Parse::ArrayValue => match c {
                b',' => {
                    self.step = State::BeginValue;
                    Ok(())
                }
                b']' => {
                    self.pop();
                    Ok(())
                }
                _ => self.error(c, "after array element"),
            },
        }
    }

    /// Go's `stateEndTop`: only space may follow the document. (Go records the error and
    /// reports it at the next byte or at the end; the message is the same.)
    fn after_top(&mut self, c: u8) -> Result<(), UnmarshalError> {
        if is_space(c) {
            Ok(())
        } else {
            self.error(c, "after top-level value")
        }
    }

    /// Go's `state0`: after `0` (or the digits of `state1`).
    fn zero(&mut self, c: u8) -> Result<(), UnmarshalError> {
        match c {
            b'.' => {
                self.step = State::Dot;
                Ok(())
            }
            b'e' | b'E' => {
                self.step = State::E;
                Ok(())
            }
            _ => self.end_value(c),
        }
    }

    /// Go's `stateESign`: the exponent's first digit.
    fn e_sign(&mut self, c: u8) -> Result<(), UnmarshalError> {
        if c.is_ascii_digit() {
            self.step = State::E0;
            Ok(())
        } else {
            self.error(c, "in exponent of numeric literal")
        }
    }

    /// Go's `eof`: the end of the input reads as a space; a document still open is
    /// `unexpected end of JSON input`.
    fn eof(&mut self) -> Result<(), UnmarshalError> {
        if let Some(err) = &self.err {
            return Err(err.clone());
        }
        if self.end_top {
            return Ok(());
        }
        self.feed(b' ')?;
        if self.end_top {
            return Ok(());
        }
        Err(UnmarshalError::Syntax {
            message: "unexpected end of JSON input".to_owned(),
            offset: self.bytes,
        })
    }
}

/// Go's `quoteChar`: the byte as the character of that code point, in single quotes, escaped
/// as `strconv.Quote` escapes it (`'` and `"` as themselves).
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        _ => {
            let quoted = crate::auth::rbac::go_quote(&char::from(c).to_string());
            let inner = quoted
                .strip_prefix('"')
                .and_then(|q| q.strip_suffix('"'))
                .unwrap_or(quoted.as_str());
            format!("'{inner}'")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(data: &str) -> String {
        match unmarshal_into_map(data.as_bytes()) {
            Ok(()) => "ok".to_owned(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn documents_go_takes() {
        for ok in [
            "{}",
            " {\"auths\": {\"r\": {\"auth\": \"eA==\"}}} \n",
            "null",
            " null\t",
            "{\"a\": [1, -0.5e-3, true, false, null, \"\\u00e9\\n\"], \"b\": {}}",
            // An underflow is 0 for ParseFloat, no error.
            "{\"a\": 1e-400}",
            "{\"a\": \"\u{ff}\"}",
        ] {
            assert_eq!(err(ok), "ok", "{ok:?}");
        }
        // Invalid UTF-8 inside a string is taken (Go replaces it).
        assert_eq!(unmarshal_into_map(b"{\"a\":\"\xff\"}"), Ok(()));
    }

    #[test]
    fn syntax_errors_are_the_scanners() {
        for (data, want) in [
            (
                "notjson",
                "invalid character 'o' in literal null (expecting 'u')",
            ),
            ("{\"a\":1}x", "invalid character 'x' after top-level value"),
            ("{\"a\":1} x", "invalid character 'x' after top-level value"),
            ("1x", "invalid character 'x' after top-level value"),
            ("", "unexpected end of JSON input"),
            ("   ", "unexpected end of JSON input"),
            ("{", "unexpected end of JSON input"),
            ("{\"a\"", "unexpected end of JSON input"),
            ("{\"a\":", "unexpected end of JSON input"),
            ("[1,", "unexpected end of JSON input"),
            ("\"abc", "unexpected end of JSON input"),
            ("x", "invalid character 'x' looking for beginning of value"),
            (
                "{a:1}",
                "invalid character 'a' looking for beginning of object key string",
            ),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\":1 \"b\"}",
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            (
                "{\"a\":1,}",
                "invalid character '}' looking for beginning of object key string",
            ),
            (
                "[1,]",
                "invalid character ']' looking for beginning of value",
            ),
            ("\"a\nb\"", "invalid character '\\n' in string literal"),
            ("\"\u{1}\"", "invalid character '\\x01' in string literal"),
            ("\"\\x\"", "invalid character 'x' in string escape code"),
            (
                "\"\\u12g4\"",
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            (
                "tru",
                "invalid character ' ' in literal true (expecting 'e')",
            ),
            ("t", "invalid character ' ' in literal true (expecting 'r')"),
            (
                "trUe",
                "invalid character 'U' in literal true (expecting 'u')",
            ),
            (
                "fals",
                "invalid character ' ' in literal false (expecting 'e')",
            ),
            (
                "nul",
                "invalid character ' ' in literal null (expecting 'l')",
            ),
            ("-", "invalid character ' ' in numeric literal"),
            ("-a", "invalid character 'a' in numeric literal"),
            (
                "1.",
                "invalid character ' ' after decimal point in numeric literal",
            ),
            (
                "1.e5",
                "invalid character 'e' after decimal point in numeric literal",
            ),
            ("1e", "invalid character ' ' in exponent of numeric literal"),
            (
                "1e+",
                "invalid character ' ' in exponent of numeric literal",
            ),
            ("01", "invalid character '1' after top-level value"),
            (
                "'a'",
                "invalid character '\\'' looking for beginning of value",
            ),
            (
                "\\",
                "invalid character '\\\\' looking for beginning of value",
            ),
            (
                "\u{7f}",
                "invalid character '\\x7f' looking for beginning of value",
            ),
            // A byte from 0x80 is quoted as the character of that code point.
            ("é", "invalid character 'Ã' looking for beginning of value"),
            (
                "\u{80}",
                "invalid character 'Â' looking for beginning of value",
            ),
            (
                "\u{feff}{}",
                "invalid character 'ï' looking for beginning of value",
            ),
        ] {
            assert_eq!(err(data), want, "{data:?}");
        }
        assert_eq!(
            unmarshal_into_map(b"\x80"),
            Err(UnmarshalError::Syntax {
                message: "invalid character '\\u0080' looking for beginning of value".to_owned(),
                offset: 1
            })
        );
        // The first refused byte wins, even before a type error.
        assert_eq!(
            err("[1, }"),
            "invalid character '}' looking for beginning of value"
        );
    }

    #[test]
    fn nesting_beyond_go_s_limit_is_refused() {
        let deep = "[".repeat(MAX_NESTING_DEPTH + 1);
        assert_eq!(err(&deep), "invalid character '[' exceeded max depth");
        let ok = format!(
            "{}{}",
            "[".repeat(MAX_NESTING_DEPTH),
            "]".repeat(MAX_NESTING_DEPTH)
        );
        assert_eq!(
            err(&ok),
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
    }

    #[test]
    fn type_errors_are_the_decoders() {
        for (data, want) in [
            (
                "[]",
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                " [1e400]",
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                "\"x\"",
                "json: cannot unmarshal string into Go value of type map[string]interface {}",
            ),
            (
                "12",
                "json: cannot unmarshal number into Go value of type map[string]interface {}",
            ),
            (
                "-0.5",
                "json: cannot unmarshal number into Go value of type map[string]interface {}",
            ),
            (
                "true",
                "json: cannot unmarshal bool into Go value of type map[string]interface {}",
            ),
            (
                "false",
                "json: cannot unmarshal bool into Go value of type map[string]interface {}",
            ),
            (
                "{\"a\": 1e400}",
                "json: cannot unmarshal number 1e400 into Go value of type float64",
            ),
            (
                "{\"a\": [2, {\"b\": -1.5E+999}], \"c\": 1e999}",
                "json: cannot unmarshal number -1.5E+999 into Go value of type float64",
            ),
        ] {
            assert_eq!(err(data), want, "{data:?}");
        }
    }
}

#[cfg(test)]
mod syntax_tests {
    use super::*;

    fn err(data: &str) -> String {
        check_syntax(data.as_bytes()).expect_err(data).to_string()
    }

    #[test]
    fn valid_documents_pass() {
        for ok in [
            "{}",
            " {\"a\": [1, -0, 2.5e+3, 1E2, true, false, null, \"x\\u00e9\\n\"]} \n",
            "[]",
            "[ ]",
            "0",
            "-12.5",
            "\"s\"",
            "null",
            "{\"a\":{\"b\":[[],{}]}}",
        ] {
            assert_eq!(check_syntax(ok.as_bytes()), Ok(()), "{ok}");
        }
    }

    /// The messages Go 1.24's `json.Unmarshal` gives for these documents.
    #[test]
    fn errors_are_gos() {
        for (doc, msg) in [
            ("", "unexpected end of JSON input"),
            ("   ", "unexpected end of JSON input"),
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","#,
                "unexpected end of JSON input",
            ),
            (r#"{"a""#, "unexpected end of JSON input"),
            (r#""abc"#, "unexpected end of JSON input"),
            ("[1,", "unexpected end of JSON input"),
            ("x", "invalid character 'x' looking for beginning of value"),
            (
                "{x",
                "invalid character 'x' looking for beginning of object key string",
            ),
            (r#"{"a" 1}"#, "invalid character '1' after object key"),
            (
                r#"{"a":1 "b"}"#,
                "invalid character '\"' after object key:value pair",
            ),
            (
                r#"{"a":1,}"#,
                "invalid character '}' looking for beginning of object key string",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            (
                "[1,]",
                "invalid character ']' looking for beginning of value",
            ),
            ("{} x", "invalid character 'x' after top-level value"),
            ("{}{}", "invalid character '{' after top-level value"),
            ("\"a\tb\"", "invalid character '\\t' in string literal"),
            ("\"\\x\"", "invalid character 'x' in string escape code"),
            (
                "\"\\u12g4\"",
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            ("-x", "invalid character 'x' in numeric literal"),
            ("-", "invalid character ' ' in numeric literal"),
            (
                "1.x",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            (
                "1.",
                "invalid character ' ' after decimal point in numeric literal",
            ),
            ("1e", "invalid character ' ' in exponent of numeric literal"),
            (
                "1e+x",
                "invalid character 'x' in exponent of numeric literal",
            ),
            ("01", "invalid character '1' after top-level value"),
            (
                "tru",
                "invalid character ' ' in literal true (expecting 'e')",
            ),
            (
                "trUe",
                "invalid character 'U' in literal true (expecting 'u')",
            ),
            (
                "fals",
                "invalid character ' ' in literal false (expecting 'e')",
            ),
            (
                "nul",
                "invalid character ' ' in literal null (expecting 'l')",
            ),
            (
                "nx",
                "invalid character 'x' in literal null (expecting 'u')",
            ),
            (
                "'a'",
                r"invalid character '\'' looking for beginning of value",
            ),
            (
                "\u{1}",
                r"invalid character '\x01' looking for beginning of value",
            ),
            (
                "\n\n}",
                "invalid character '}' looking for beginning of value",
            ),
        ] {
            assert_eq!(err(doc), msg, "{doc:?}");
        }
        // A byte of 0x80 and up is named as the rune of that number.
        assert_eq!(quote_char(0x7f), r"'\x7f'");
        assert_eq!(quote_char(0xa0), r"'\u00a0'");
        assert_eq!(quote_char(b'\\'), r"'\\'");
        assert_eq!(
            check_syntax(b"\xc3").unwrap_err().to_string(),
            "invalid character '\u{c3}' looking for beginning of value"
        );
        assert_eq!(
            check_syntax(b"\x85").unwrap_err().to_string(),
            r"invalid character '\u0085' looking for beginning of value"
        );
        // Invalid UTF-8 inside a string is no syntax error to Go.
        assert_eq!(check_syntax(b"\"\xff\""), Ok(()));
    }

    #[test]
    fn nesting_is_bounded_as_gos() {
        let deep = "[".repeat(MAX_NESTING_DEPTH) + &"]".repeat(MAX_NESTING_DEPTH);
        assert_eq!(check_syntax(deep.as_bytes()), Ok(()));
        let deeper = "[".repeat(MAX_NESTING_DEPTH + 1);
        assert_eq!(err(&deeper), "invalid character '[' exceeded max depth");
    }
}
