//! Go's `encoding/json` syntax check (`checkValid`, the scanner every `json.Unmarshal` runs
//! before decoding), for kube's wording of a body that is not JSON: the first error in the
//! document as Go's `SyntaxError` says it (`invalid character 'x' looking for beginning of
//! value`, `unexpected end of JSON input`, ...). Go's scanner takes what serde_json refuses in
//! some places (invalid UTF-8 and lone surrogates inside strings) and refuses nothing
//! serde_json takes, so a body that passes here and not serde_json is one of those.

/// Go's `maxNestingDepth`: deeper documents are refused (`exceeded max depth`).
const MAX_NESTING_DEPTH: usize = 10_000;

/// A Go `*json.SyntaxError`, as its `Error()` prints it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    #[error("unexpected end of JSON input")]
    UnexpectedEnd,
    #[error("invalid character {} {context}", quote_ref(.found))]
    InvalidCharacter { found: u8, context: &'static str },
}

/// Go's `quoteChar`: a byte as the scanner names it (`'x'`, `'"'`, `'\''`, `'\n'`, `'\x01'`; a
/// byte of 0x80 and up as the rune of that number, `'Ã'`, `'\u0085'`).
pub fn quote_char(c: u8) -> String {
    let inner = match c {
        b'\'' => return r"'\''".to_owned(),
        b'"' => return "'\"'".to_owned(),
        0x07 => r"\a".to_owned(),
        0x08 => r"\b".to_owned(),
        0x0c => r"\f".to_owned(),
        b'\n' => r"\n".to_owned(),
        b'\r' => r"\r".to_owned(),
        b'\t' => r"\t".to_owned(),
        0x0b => r"\v".to_owned(),
        b'\\' => r"\\".to_owned(),
        // strconv.Quote's printable runes below U+0100: ASCII graphics and space, Latin-1's
        // graphics but the soft hyphen.
        0x20..=0x7e | 0xa1..=0xac | 0xae..=0xff => char::from(c).to_string(),
        0x00..=0x1f | 0x7f => format!("\\x{c:02x}"),
        _ => format!("\\u{:04x}", u32::from(c)),
    };
    format!("'{inner}'")
}

fn quote_ref(c: &u8) -> String {
    quote_char(*c)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Frame {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValueOrEmpty,
    BeginValue,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`: how many hex digits were read.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside a literal (`true`, `false`, `null`): the literal and how many bytes were read.
    Literal(&'static [u8], usize),
}

struct Scanner {
    state: State,
    stack: Vec<Frame>,
    end_top: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn invalid(found: u8, context: &'static str) -> SyntaxError {
    SyntaxError::InvalidCharacter { found, context }
}

impl Scanner {
    fn push(&mut self, c: u8, frame: Frame, next: State) -> Result<(), SyntaxError> {
        self.stack.push(frame);
        if self.stack.len() > MAX_NESTING_DEPTH {
            return Err(invalid(c, "exceeded max depth"));
        }
        self.state = next;
        Ok(())
    }

    fn replace_top(&mut self, frame: Frame) {
        if let Some(top) = self.stack.last_mut() {
            *top = frame;
        }
    }

    fn pop(&mut self) {
        self.stack.pop();
        self.state = if self.stack.is_empty() {
            self.end_top = true;
            State::EndTop
        } else {
            State::EndValue
        };
    }

    fn begin_value(&mut self, c: u8) -> Result<(), SyntaxError> {
        self.state = match c {
            c if is_space(c) => return Ok(()),
            b'{' => return self.push(c, Frame::ObjectKey, State::BeginStringOrEmpty),
            b'[' => return self.push(c, Frame::ArrayValue, State::BeginValueOrEmpty),
            b'"' => State::InString,
            b'-' => State::Neg,
            b'0' => State::Zero,
            b't' => State::Literal(b"true", 1),
            b'f' => State::Literal(b"false", 1),
            b'n' => State::Literal(b"null", 1),
            b'1'..=b'9' => State::One,
            _ => return Err(invalid(c, "looking for beginning of value")),
        };
        Ok(())
    }

    fn end_value(&mut self, c: u8) -> Result<(), SyntaxError> {
        let Some(&top) = self.stack.last() else {
            self.end_top = true;
            self.state = State::EndTop;
            return self.end_top_byte(c);
        };
        if is_space(c) {
            self.state = State::EndValue;
            return Ok(());
        }
        match (top, c) {
            (Frame::ObjectKey, b':') => {
                self.replace_top(Frame::ObjectValue);
                self.state = State::BeginValue;
            }
            (Frame::ObjectKey, _) => return Err(invalid(c, "after object key")),
            (Frame::ObjectValue, b',') => {
                self.replace_top(Frame::ObjectKey);
                self.state = State::BeginString;
            }
            (Frame::ObjectValue, b'}') => self.pop(),
            (Frame::ObjectValue, _) => return Err(invalid(c, "after object key:value pair")),
            (Frame::ArrayValue, b',') => self.state = State::BeginValue,
            (Frame::ArrayValue, b']') => self.pop(),
            (Frame::ArrayValue, _) => return Err(invalid(c, "after array element")),
        }
        Ok(())
    }

    fn end_top_byte(&mut self, c: u8) -> Result<(), SyntaxError> {
        if is_space(c) {
            Ok(())
        } else {
            Err(invalid(c, "after top-level value"))
        }
    }

    fn step(&mut self, c: u8) -> Result<(), SyntaxError> {
        match self.state {
            State::BeginValueOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b']' {
                    return self.end_value(c);
                }
                self.begin_value(c)
            }
            State::BeginValue => self.begin_value(c),
            State::BeginStringOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b'}' {
                    self.replace_top(Frame::ObjectValue);
                    return self.end_value(c);
                }
                self.begin_string(c)
            }
            State::BeginString => self.begin_string(c),
            State::EndValue => self.end_value(c),
            State::EndTop => self.end_top_byte(c),
            State::InString => {
                match c {
                    b'"' => self.state = State::EndValue,
                    b'\\' => self.state = State::InStringEsc,
                    c if c < 0x20 => return Err(invalid(c, "in string literal")),
                    _ => {}
                }
                Ok(())
            }
            State::InStringEsc => {
                self.state = match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                    b'u' => State::InStringEscU(0),
                    _ => return Err(invalid(c, "in string escape code")),
                };
                Ok(())
            }
            State::InStringEscU(n) => {
                if !c.is_ascii_hexdigit() {
                    return Err(invalid(c, "in \\u hexadecimal character escape"));
                }
                self.state = if n == 3 {
                    State::InString
                } else {
                    State::InStringEscU(n + 1)
                };
                Ok(())
            }
            State::Neg => {
                self.state = match c {
                    b'0' => State::Zero,
                    b'1'..=b'9' => State::One,
                    _ => return Err(invalid(c, "in numeric literal")),
                };
                Ok(())
            }
            State::One => {
                if c.is_ascii_digit() {
                    return Ok(());
                }
                self.zero(c)
            }
            State::Zero => self.zero(c),
            State::Dot => {
                if !c.is_ascii_digit() {
                    return Err(invalid(c, "after decimal point in numeric literal"));
                }
                self.state = State::Dot0;
                Ok(())
            }
            State::Dot0 => match c {
                c if c.is_ascii_digit() => Ok(()),
                b'e' | b'E' => {
                    self.state = State::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::E => {
                if matches!(c, b'+' | b'-') {
                    self.state = State::ESign;
                    return Ok(());
                }
                self.e_sign(c)
            }
            State::ESign => self.e_sign(c),
            State::E0 => {
                if c.is_ascii_digit() {
                    return Ok(());
                }
                self.end_value(c)
            }
            State::Literal(word, read) => {
                if c != word[read] {
                    return Err(invalid(c, literal_context(word, read)));
                }
                self.state = if read + 1 == word.len() {
                    State::EndValue
                } else {
                    State::Literal(word, read + 1)
                };
                Ok(())
            }
        }
    }

    fn begin_string(&mut self, c: u8) -> Result<(), SyntaxError> {
        if is_space(c) {
            return Ok(());
        }
        if c == b'"' {
            self.state = State::InString;
            return Ok(());
        }
        Err(invalid(c, "looking for beginning of object key string"))
    }

    fn zero(&mut self, c: u8) -> Result<(), SyntaxError> {
        match c {
            b'.' => {
                self.state = State::Dot;
                Ok(())
            }
            b'e' | b'E' => {
                self.state = State::E;
                Ok(())
            }
            _ => self.end_value(c),
        }
    }

    fn e_sign(&mut self, c: u8) -> Result<(), SyntaxError> {
        if !c.is_ascii_digit() {
            return Err(invalid(c, "in exponent of numeric literal"));
        }
        self.state = State::E0;
        Ok(())
    }
}

/// Go's wording of a literal gone wrong: `in literal true (expecting 'r')`.
fn literal_context(word: &[u8], read: usize) -> &'static str {
    match (word, read) {
        (b"true", 1) => "in literal true (expecting 'r')",
        (b"true", 2) => "in literal true (expecting 'u')",
        (b"true", _) => "in literal true (expecting 'e')",
        (b"false", 1) => "in literal false (expecting 'a')",
        (b"false", 2) => "in literal false (expecting 'l')",
        (b"false", 3) => "in literal false (expecting 's')",
        (b"false", _) => "in literal false (expecting 'e')",
        (_, 1) => "in literal null (expecting 'u')",
        _ => "in literal null (expecting 'l')",
    }
}

/// Go's `checkValid`: the first syntax error of `data`, as Go's scanner finds it. At the end of
/// the input the scanner takes one more space, so a cut literal or number names that space
/// (`invalid character ' ' in literal true (expecting 'e')`), anything else cut short is
/// `unexpected end of JSON input`.
pub fn check_valid(data: &[u8]) -> Result<(), SyntaxError> {
    let mut s = Scanner {
        state: State::BeginValue,
        stack: Vec::new(),
        end_top: false,
    };
    for &c in data {
        s.step(c)?;
    }
    if s.end_top {
        return Ok(());
    }
    s.step(b' ')?;
    if s.end_top {
        Ok(())
    } else {
        Err(SyntaxError::UnexpectedEnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(data: &str) -> String {
        check_valid(data.as_bytes()).expect_err(data).to_string()
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
            assert_eq!(check_valid(ok.as_bytes()), Ok(()), "{ok}");
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
            check_valid(b"\xc3").unwrap_err().to_string(),
            "invalid character '\u{c3}' looking for beginning of value"
        );
        assert_eq!(
            check_valid(b"\x85").unwrap_err().to_string(),
            r"invalid character '\u0085' looking for beginning of value"
        );
        // Invalid UTF-8 inside a string is no syntax error to Go.
        assert_eq!(check_valid(b"\"\xff\""), Ok(()));
    }

    #[test]
    fn nesting_is_bounded_as_gos() {
        let deep = "[".repeat(MAX_NESTING_DEPTH) + &"]".repeat(MAX_NESTING_DEPTH);
        assert_eq!(check_valid(deep.as_bytes()), Ok(()));
        let deeper = "[".repeat(MAX_NESTING_DEPTH + 1);
        assert_eq!(err(&deeper), "invalid character '[' exceeded max depth");
    }
}
