//! Indented JSON for people: kube's `PrettySerializer`.
//!
//! kube answers a request in indented JSON (Go's `json.MarshalIndent(obj, "", "  ")`) when it
//! asks with `?pretty=true` (any value Go's `strconv.ParseBool` reads as true; a value it reads
//! as false, or cannot read, turns it off), with `pretty=1` in its `Accept` media type, or — with
//! no `pretty` parameter — when its `User-Agent` starts with `curl`, `Wget` or `Mozilla/5.0`
//! (`negotiation.isPrettyPrint`). That covers objects, lists, Tables, discovery and error
//! `Status`es, everything kube writes through its negotiated serializer; not watches (their
//! stream serializer is never pretty), not proxied extension servers' answers, not OpenAPI
//! documents. `/version` and the root paths kube always writes indented (`WriteRawJSON`).
//!
//! The answer is indented as it streams ([`Indent`]): the bytes of a compact JSON document are
//! laid out again as Go's `json.Indent` lays them out, without parsing them into values.

use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;

/// A response extension: the body goes out as it is (an extension server's answer).
#[derive(Clone, Copy, Debug)]
pub struct AsIs;

/// Go's `strconv.ParseBool`: `Some` for the words it reads, `None` for the others.
fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// kube's `isPrettyPrint`, and its media type's `pretty=1`: whether the request asks for
/// indented JSON.
pub fn wants_pretty(query: Option<&str>, user_agent: &str, accept: &str) -> bool {
    let accept_pretty = accept.split(',').any(|media| {
        media.split(';').skip(1).any(|p| {
            p.trim()
                .split_once('=')
                .is_some_and(|(k, v)| k.trim() == "pretty" && v.trim() == "1")
        })
    });
    if accept_pretty {
        return true;
    }
    if let Some(q) = query.filter(|q| q.contains("pretty")) {
        // `url.Values.Get`: the first `pretty`, decoded.
        let value = form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "pretty")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        if !value.is_empty() {
            return go_parse_bool(&value).unwrap_or(false);
        }
    }
    ["curl", "Wget", "Mozilla/5.0"]
        .iter()
        .any(|p| user_agent.starts_with(p))
}

/// Whether a request is a watch (kube's stream serializer is never pretty): `watch` set to
/// what Go's `ParseBool` reads as true, or the legacy `/watch/` paths.
fn is_watch(path: &str, query: Option<&str>) -> bool {
    let watch_param = query.is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes())
            .any(|(k, v)| k == "watch" && go_parse_bool(&v) == Some(true))
    });
    watch_param || path.contains("/watch/")
}

/// The middleware: a JSON answer to a request that [`wants_pretty`] goes out indented.
pub async fn pretty_print(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let always = path == "/" || path == "/version" || path == "/version/";
    let asked = always || {
        let header_str = |name| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
        };
        wants_pretty(
            req.uri().query(),
            header_str(header::USER_AGENT),
            header_str(header::ACCEPT),
        ) && !is_watch(&path, req.uri().query())
            && !path.starts_with("/openapi/")
    };
    let resp = next.run(req).await;
    if !asked || resp.extensions().get::<AsIs>().is_some() {
        return resp;
    }
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            let media = ct.split(';').next().unwrap_or("").trim();
            media.eq_ignore_ascii_case("application/json") && !ct.contains("stream=watch")
        });
    if !json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from_stream(indented(body)))
}

/// Most bytes of indented output made at once. Indentation can multiply a body (a stored
/// object may nest 127 deep: each `0,` there becomes a line of 256 bytes), so the output is
/// made a piece at a time, as the client takes it, never a whole chunk's worth at once.
const PIECE: usize = 64 << 10;

/// `body` laid out by [`Indent`], in pieces of about [`PIECE`] bytes.
fn indented(
    body: Body,
) -> impl futures::Stream<Item = Result<bytes::Bytes, axum::Error>> + Send + 'static {
    let state = (
        body.into_data_stream(),
        Indent::default(),
        bytes::Bytes::new(),
    );
    futures::stream::unfold(state, |(mut inner, mut indent, mut rest)| async move {
        loop {
            if !rest.is_empty() {
                let mut out = Vec::with_capacity(PIECE.min(rest.len() * 2) + 512);
                let used = indent.feed_until(&rest, &mut out, PIECE);
                rest = rest.slice(used..);
                if !out.is_empty() {
                    return Some((Ok(bytes::Bytes::from(out)), (inner, indent, rest)));
                }
                continue;
            }
            match inner.next().await? {
                Ok(chunk) => rest = chunk,
                Err(e) => return Some((Err(e), (inner, indent, rest))),
            }
        }
    })
}

/// Go's `json.Indent(dst, src, "", "  ")` over a stream of bytes of valid JSON: a newline and
/// two spaces a level after `{`, `[` and `,`, `": "` after a key, empty objects and arrays left
/// as `{}` and `[]`, whitespace outside strings dropped (a compact body's last newline with it),
/// everything inside strings as it is.
#[derive(Default)]
pub struct Indent {
    depth: usize,
    /// An opening bracket was written: its newline waits for what follows (none if it closes).
    need_indent: bool,
    in_string: bool,
    escaped: bool,
}

impl Indent {
    fn newline(&self, out: &mut Vec<u8>) {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', self.depth * 2));
    }

    /// Lay out the next bytes of the document.
    #[cfg(test)]
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.feed_until(input, out, usize::MAX);
    }

    /// Lay out the next bytes of the document until `out` holds `limit` bytes or more: how
    /// many of `input` were used.
    pub fn feed_until(&mut self, input: &[u8], out: &mut Vec<u8>, limit: usize) -> usize {
        for (i, &c) in input.iter().enumerate() {
            if out.len() >= limit {
                return i;
            }
            if self.in_string {
                out.push(c);
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                continue;
            }
            if self.need_indent && c != b'}' && c != b']' {
                self.need_indent = false;
                self.depth += 1;
                self.newline(out);
            }
            match c {
                b'{' | b'[' => {
                    self.need_indent = true;
                    out.push(c);
                }
                b',' => {
                    out.push(c);
                    self.newline(out);
                }
                b':' => out.extend_from_slice(b": "),
                b'}' | b']' => {
                    if self.need_indent {
                        self.need_indent = false;
                    } else {
                        self.depth = self.depth.saturating_sub(1);
                        self.newline(out);
                    }
                    out.push(c);
                }
                b'"' => {
                    self.in_string = true;
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
        input.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn indent_in_pieces(input: &[u8], piece: usize) -> String {
        let mut indent = Indent::default();
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            indent.feed(chunk, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    /// The layout is `json.MarshalIndent`'s (which serde's pretty printer shares), whatever
    /// the chunks the body arrives in.
    #[test]
    fn compact_json_is_laid_out_as_gos_marshal_indent() {
        let v = json!({
            "kind": "ConfigMapList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "12"},
            "items": [
                {"metadata": {"name": "a", "labels": {}}, "data": {"k": "v, {with} [brackets]: \"quoted\" \\"}},
                {"metadata": {"name": "b"}, "data": {"n": "é \u{2028}"}, "list": [], "nums": [1, -2.5e3, true, null]}
            ]
        });
        let compact = format!("{}\n", serde_json::to_string(&v).unwrap());
        let want = serde_json::to_string_pretty(&v).unwrap();
        for piece in [1, 2, 3, 7, 64, compact.len()] {
            assert_eq!(
                indent_in_pieces(compact.as_bytes(), piece),
                want,
                "pieces of {piece}"
            );
        }
        // Already indented input comes out the same.
        assert_eq!(indent_in_pieces(want.as_bytes(), 5), want);
        assert_eq!(indent_in_pieces(b"{}\n", 1), "{}");
        assert_eq!(indent_in_pieces(b"[[],{}]", 1), "[\n  [],\n  {}\n]");
    }

    /// A body that indentation multiplies goes out in pieces of about [`PIECE`] bytes, the same
    /// bytes as laid out at once.
    #[tokio::test]
    async fn a_deep_body_is_indented_a_piece_at_a_time() {
        let mut deep = "[".repeat(120);
        deep.push_str(&vec!["0"; 20_000].join(","));
        deep.push_str(&"]".repeat(120));
        let mut whole = Vec::new();
        Indent::default().feed(deep.as_bytes(), &mut whole);
        assert!(whole.len() > 100 * deep.len() / 2, "{}", whole.len());
        let pieces: Vec<bytes::Bytes> = indented(Body::from(deep))
            .map(|p| p.unwrap())
            .collect()
            .await;
        assert!(pieces.len() > whole.len() / PIECE, "{}", pieces.len());
        assert!(pieces.iter().all(|p| p.len() <= PIECE + 512));
        assert_eq!(pieces.concat(), whole);
    }

    #[test]
    fn pretty_is_asked_as_kube_reads_it() {
        let curl = "curl/8.5.0";
        let kubectl = "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07";
        assert!(wants_pretty(None, curl, "*/*"));
        assert!(wants_pretty(None, "Wget/1.21", ""));
        assert!(wants_pretty(None, "Mozilla/5.0 (X11)", ""));
        assert!(!wants_pretty(None, kubectl, "application/json"));
        assert!(wants_pretty(Some("pretty=true"), kubectl, ""));
        assert!(wants_pretty(Some("limit=1&pretty=1"), kubectl, ""));
        assert!(wants_pretty(Some("pretty=T"), kubectl, ""));
        // A value Go reads as false, or cannot read, turns it off, even for curl.
        assert!(!wants_pretty(Some("pretty=false"), curl, ""));
        assert!(!wants_pretty(Some("pretty=yes"), curl, ""));
        // An empty value is no value: the user agent decides.
        assert!(wants_pretty(Some("pretty="), curl, ""));
        assert!(!wants_pretty(Some("pretty="), kubectl, ""));
        // The media type's own parameter.
        assert!(wants_pretty(None, kubectl, "application/json;pretty=1"));
        assert!(!wants_pretty(None, kubectl, "application/json;pretty=true"));
        assert!(is_watch("/api/v1/pods", Some("watch=true")));
        assert!(is_watch("/api/v1/watch/pods", None));
        assert!(!is_watch("/api/v1/pods", Some("watch=false")));
    }
}
