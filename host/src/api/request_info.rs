//! One parse of each request, as kube's `RequestInfoFactory` does it: the verb (list, watch,
//! deletecollection...), API group and version, namespace, resource, name, subresource, and the
//! query. The access middleware builds it first and stores it in the request's extensions;
//! authentication, the in-flight limits, RBAC and the handlers all read that one value, so a
//! request is authorized as exactly what it is served as.

use std::borrow::Cow;
use std::collections::HashMap;

use axum::http::{Method, Uri};

use crate::auth::Attributes;
use crate::model::ApiError;

/// Query parameters, first value of each name (kube reads options with `url.Values.Get` and
/// `Convert_Slice_string_To_*`, which take the first value of a repeated parameter).
pub type Query = HashMap<String, String>;

/// The subresource verbs kube treats as long running (`BasicLongRunningRequestCheck`).
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "proxy", "log", "portforward"];

/// The namespace's own subresources: `namespaces/NS/status` is not a resource `status` in NS.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    pub path: String,
    /// kube's verb for resource requests (`get`, `list`, `watch`, `create`, `update`, `patch`,
    /// `delete`, `deletecollection`); the lower-case HTTP method otherwise.
    pub verb: String,
    pub resource_request: bool,
    /// `api` or `apis` (resource requests only).
    pub api_prefix: String,
    pub api_group: String,
    pub api_version: String,
    /// The namespace the path names (also the name of a `namespaces/NAME` request).
    pub namespace: String,
    /// Whether the path scopes a resource to a namespace (`.../namespaces/NS/RESOURCE...`).
    pub namespace_scoped: bool,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The path from the resource on: `RESOURCE[/NAME[/SUBRESOURCE[/...]]]`.
    pub parts: Vec<String>,
    pub query: Query,
    /// Every value of the `dryRun` parameter, in order (empty when absent): the write options'
    /// `dryRun` is a `[]string`, which kube's conversion from the query fills with all the values
    /// of a repeated parameter, where the other options take the first.
    pub dry_run: Vec<String>,
    /// A deprecated `/watch/` path (`/api/v1/watch/namespaces/NS/RESOURCE[/NAME]`), which kube
    /// still serves: verb `watch` whatever the method, and a watch whatever `watch=` says.
    pub legacy_watch: bool,
}

/// kube's reading of a boolean query parameter: absent is false; present, anything but
/// `false` or `0` (any case) is true, the empty string included.
fn query_bool(value: Option<&str>) -> bool {
    match value {
        None => false,
        Some(v) => !(v.eq_ignore_ascii_case("false") || v == "0"),
    }
}

/// apimachinery's `IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`.
fn valid_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains(['/', '%'])
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// A request's path as Go's `url.ParseRequestURI` decodes it into `URL.Path`, which is what
/// kube routes and parses (`unescape(path, encodePath)`): every `%XX` is the byte it encodes,
/// `%2F` a `/` like any other, and a `+` stays a `+`. The bytes need not be UTF-8 (Go does not
/// check). A `%` not followed by two hex digits fails with Go's `EscapeError` text (`invalid URL
/// escape "%zz"`, the `%` and at most two bytes after it); Go's server answers such a request
/// 400 before any handler runs.
pub fn unescape_path(raw: &str) -> Result<Cow<'_, [u8]>, ApiError> {
    let b = raw.as_bytes();
    if !b.contains(&b'%') {
        return Ok(Cow::Borrowed(b));
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let hi = b.get(i + 1).copied().and_then(hex_value);
        let lo = b.get(i + 2).copied().and_then(hex_value);
        match (hi, lo) {
            (Some(hi), Some(lo)) => {
                out.push((hi << 4) | lo);
                i += 3;
            }
            _ => {
                let end = (i + 3).min(b.len());
                let bad = String::from_utf8_lossy(&b[i..end]);
                return Err(ApiError::bad_request(format!(
                    "invalid URL escape {}",
                    crate::auth::rbac::go_quote(&bad)
                )));
            }
        }
    }
    Ok(Cow::Owned(out))
}

/// A decoded path written back as Go's `URL.EscapedPath` writes a `URL` whose `Path` alone is
/// set (`escape(path, encodePath)`): letters, digits, `-_.~` and `$&+,/:;=@` as they are, every
/// other byte (`?`, `%`, a space, non-ASCII) as `%XX` in upper-case hex. This is the path kube's
/// aggregator sends an extension server (`location.Path = req.URL.Path`).
pub fn escape_path(path: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(path.len());
    for &c in path {
        let keep = c.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&c);
        if keep {
            out.push(char::from(c));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(c >> 4)]));
            out.push(char::from(HEX[usize::from(c & 15)]));
        }
    }
    out
}

/// Parse a query string, keeping the first value of every name.
pub fn parse_query(q: Option<&str>) -> Query {
    let mut out = Query::new();
    for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
        out.entry(k.into_owned()).or_insert_with(|| v.into_owned());
    }
    out
}

/// Every value of the parameter `name` in a query string, in order.
pub fn query_values(q: Option<&str>, name: &str) -> Vec<String> {
    form_urlencoded::parse(q.unwrap_or("").as_bytes())
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .collect()
}

impl RequestInfo {
    /// The request as kube's `RequestInfoFactory` reads it, from the decoded path
    /// ([`unescape_path`]: `system%3Anode` names `system:node`); bytes that are not UTF-8 are
    /// read as U+FFFD, as kube's JSON shows them. A path Go cannot decode is a 400.
    pub fn parse(method: &Method, uri: &Uri) -> Result<Self, ApiError> {
        let path = match unescape_path(uri.path())? {
            Cow::Borrowed(b) => String::from_utf8_lossy(b).into_owned(),
            Cow::Owned(v) => match String::from_utf8(v) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            },
        };
        let query = parse_query(uri.query());
        let mut info = RequestInfo {
            path: path.clone(),
            verb: method.as_str().to_ascii_lowercase(),
            dry_run: query_values(uri.query(), "dryRun"),
            ..Default::default()
        };
        let segs: Vec<&str> = path
            .trim_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        let (prefix, group, rest): (&str, &str, &[&str]) = match segs.as_slice() {
            ["api", rest @ ..] if rest.len() >= 2 => ("api", "", rest),
            ["apis", g, rest @ ..] if rest.len() >= 2 => ("apis", *g, rest),
            _ => {
                info.query = query;
                return Ok(info);
            }
        };
        info.resource_request = true;
        info.api_prefix = prefix.to_owned();
        info.api_group = group.to_owned();
        info.api_version = rest[0].to_owned();
        let mut parts = &rest[1..];
        // kube's special verbs: `watch` (and `proxy`, not served) as the first segment.
        if parts[0] == "watch" && parts.len() >= 2 {
            info.verb = "watch".to_owned();
            info.legacy_watch = true;
            parts = &parts[1..];
        } else {
            info.verb = match *method {
                Method::POST => "create",
                Method::GET | Method::HEAD => "get",
                Method::PUT => "update",
                Method::PATCH => "patch",
                Method::DELETE => "delete",
                _ => "",
            }
            .to_owned();
        }
        if parts[0] == "namespaces" && parts.len() > 1 {
            info.namespace = parts[1].to_owned();
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
                info.namespace_scoped = true;
                parts = &parts[2..];
            }
        }
        info.parts = parts.iter().map(|s| (*s).to_owned()).collect();
        if let Some(r) = parts.first() {
            info.resource = (*r).to_owned();
        }
        if let Some(n) = parts.get(1) {
            info.name = (*n).to_owned();
        }
        if let Some(s) = parts.get(2) {
            info.subresource = (*s).to_owned();
        }
        if info.name.is_empty() && info.verb == "get" {
            info.verb = if query_bool(query.get("watch").map(String::as_str)) {
                "watch"
            } else {
                "list"
            }
            .to_owned();
            // kube's RequestInfoFactory: a list or watch of one name (`metadata.name=X`, what
            // `kubectl get cm x -w` and single-object informers send) is authorized as that
            // name, so RBAC `resourceNames` apply to it.
            if let Some(name) = query
                .get("fieldSelector")
                .and_then(|fs| crate::selector::FieldSelector::parse_any(fs).ok())
                .and_then(|sel| sel.exact("metadata.name").map(str::to_owned))
                .filter(|n| valid_path_segment_name(n))
            {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_owned();
        }
        info.query = query;
        Ok(info)
    }

    /// A watch: a GET of a collection whose first `watch` parameter is not false (or any
    /// request to a `/watch/` path).
    pub fn is_watch(&self) -> bool {
        self.resource_request && self.verb == "watch"
    }

    /// kube's `BasicLongRunningRequestCheck(watch, proxy; attach, exec, proxy, log,
    /// portforward)`: not counted by the in-flight limits.
    pub fn is_long_running(&self) -> bool {
        self.resource_request
            && (self.verb == "watch"
                || self.verb == "proxy"
                || LONG_RUNNING_SUBRESOURCES.contains(&self.subresource.as_str()))
    }

    /// Everything but get, list and watch counts against the mutating limit.
    pub fn is_mutating(&self) -> bool {
        !matches!(self.verb.as_str(), "get" | "list" | "watch")
    }

    /// The RBAC attributes of this request.
    pub fn attributes(&self) -> Attributes {
        if !self.resource_request {
            return Attributes {
                verb: self.verb.clone(),
                resource_request: false,
                api_group: String::new(),
                resource: String::new(),
                subresource: String::new(),
                namespace: String::new(),
                name: String::new(),
                path: self.path.clone(),
            };
        }
        Attributes {
            verb: self.verb.clone(),
            resource_request: true,
            api_group: self.api_group.clone(),
            resource: self.resource.clone(),
            subresource: self.subresource.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            path: self.path.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: Method, uri: &str) -> RequestInfo {
        RequestInfo::parse(&method, &uri.parse::<Uri>().expect("uri")).expect("parse")
    }

    #[test]
    fn resource_requests() {
        let a = info(Method::POST, "/api/v1/namespaces/foo/configmaps");
        assert_eq!(
            (a.verb.as_str(), a.resource.as_str(), a.namespace.as_str()),
            ("create", "configmaps", "foo")
        );
        assert!(a.namespace_scoped);
        let a = info(
            Method::GET,
            "/apis/coordination.k8s.io/v1/leases?watch=true",
        );
        assert_eq!(
            (a.verb.as_str(), a.api_group.as_str(), a.namespace.as_str()),
            ("watch", "coordination.k8s.io", "")
        );
        assert!(a.is_watch() && a.is_long_running() && !a.is_mutating());
        let a = info(Method::PUT, "/api/v1/namespaces/ns/pods/p/status");
        assert_eq!(
            (a.verb.as_str(), a.name.as_str(), a.subresource.as_str()),
            ("update", "p", "status")
        );
        assert!(a.is_mutating() && !a.is_long_running());
        let a = info(Method::GET, "/api/v1/namespaces/foo");
        assert_eq!(
            (a.resource.as_str(), a.name.as_str(), a.namespace.as_str()),
            ("namespaces", "foo", "foo")
        );
        assert!(!a.namespace_scoped);
        let a = info(Method::PUT, "/api/v1/namespaces/foo/finalize");
        assert_eq!(
            (a.resource.as_str(), a.name.as_str(), a.subresource.as_str()),
            ("namespaces", "foo", "finalize")
        );
        let a = info(Method::DELETE, "/api/v1/namespaces/foo/secrets");
        assert_eq!(a.verb, "deletecollection");
        let a = info(Method::GET, "/api/v1/namespaces/foo/pods/p/log");
        assert!(a.is_long_running() && a.verb == "get");
    }

    #[test]
    fn non_resource_requests() {
        for p in [
            "/api",
            "/apis",
            "/api/v1",
            "/apis/apps/v1",
            "/version",
            "/openapi/v3",
        ] {
            let a = info(Method::GET, p);
            assert!(!a.resource_request, "{p}");
            assert_eq!(a.verb, "get");
            assert!(!a.is_watch() && !a.is_long_running() && !a.is_mutating());
        }
        assert!(info(Method::POST, "/apis").is_mutating());
    }

    /// kube reads the first `watch` value, and anything but false/0 is true.
    #[test]
    fn watch_parameter_as_kube_reads_it() {
        let verb = |q: &str| info(Method::GET, &format!("/api/v1/configmaps?{q}")).verb;
        assert_eq!(verb("watch=true&watch=false"), "watch");
        assert_eq!(verb("watch=false&watch=true"), "list");
        assert_eq!(verb("watch=1"), "watch");
        assert_eq!(verb("watch=0"), "list");
        assert_eq!(verb("watch=FALSE"), "list");
        assert_eq!(verb("watch="), "watch");
        assert_eq!(verb("watch=yes"), "watch");
        assert_eq!(verb("limit=5"), "list");
        // A named object is a get, whatever `watch` says.
        assert_eq!(
            info(Method::GET, "/api/v1/namespaces/a/configmaps/b?watch=true").verb,
            "get"
        );
    }

    /// kube reads the path Go decoded (`req.URL.Path`): a name, namespace or subresource a
    /// client percent-encoded (the Python client escapes `:`, client-go spaces and non-ASCII)
    /// is read decoded, and so RBAC (`resourceNames`), admission and the handlers see it.
    #[test]
    fn percent_encoded_segments_are_decoded() {
        let a = info(
            Method::GET,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Anode",
        );
        assert_eq!(
            (a.verb.as_str(), a.resource.as_str(), a.name.as_str()),
            ("get", "clusterroles", "system:node")
        );
        assert_eq!(
            a.path,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:node"
        );
        assert_eq!(a.attributes().name, "system:node");
        let a = info(
            Method::DELETE,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/weird%20role",
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("delete", "weird role"));
        let a = info(
            Method::GET,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/r%C3%B4le",
        );
        assert_eq!(a.name, "rôle");
        let a = info(
            Method::PUT,
            "/api/v1/namespaces/n%73/configmaps/r%76/st%61tus",
        );
        assert_eq!(
            (
                a.namespace.as_str(),
                a.name.as_str(),
                a.subresource.as_str()
            ),
            ("ns", "rv", "status")
        );
        assert_eq!(a.parts, ["configmaps", "rv", "status"]);
        // A `+` is no space in a path; `%25` is a `%`.
        let a = info(Method::GET, "/api/v1/namespaces/ns/configmaps/a+b%40c%25d");
        assert_eq!(a.name, "a+b@c%d");
        // An encoded `/` separates segments, as in kube (Go's `URL.Path` cannot tell them apart).
        let a = info(Method::GET, "/api/v1/namespaces/ns/configmaps/a%2Fstatus");
        assert_eq!((a.name.as_str(), a.subresource.as_str()), ("a", "status"));
        // Bytes that are not UTF-8 read as U+FFFD, as kube's JSON writes them.
        let a = info(Method::GET, "/api/v1/namespaces/ns/configmaps/%FF");
        assert_eq!(a.name, "\u{FFFD}");
        // Non-resource paths too: RBAC's `nonResourceURLs` match the decoded path.
        let a = info(Method::GET, "/heal%74hz");
        assert!(!a.resource_request);
        assert_eq!(a.path, "/healthz");
        // A path with nothing encoded is as it was.
        assert_eq!(info(Method::GET, "/api/v1/pods").path, "/api/v1/pods");
    }

    /// Go's server cannot parse such a request line (`url.ParseRequestURI` fails with an
    /// `EscapeError`) and answers 400 before any handler.
    #[test]
    fn undecodable_paths_are_bad_requests() {
        for (uri, bad) in [
            ("/api/v1/namespaces/ns/configmaps/%zz", "%zz"),
            ("/api/v1/namespaces/ns/configmaps/a%2", "%2"),
            ("/api/v1/namespaces/ns/configmaps/a%", "%"),
            ("/api/v1/namespaces/ns/configmaps/%g0abc", "%g0"),
            ("/api/v1/namespaces/n%s/configmaps", "%s/"),
        ] {
            let e =
                RequestInfo::parse(&Method::GET, &uri.parse::<Uri>().expect("uri")).expect_err(uri);
            assert_eq!((e.code, e.reason), (400, "BadRequest"), "{uri}");
            assert_eq!(e.message, format!("invalid URL escape \"{bad}\""), "{uri}");
        }
    }

    #[test]
    fn decoded_paths_are_written_back_as_go_writes_them() {
        let round = |p: &str| escape_path(&unescape_path(p).expect("decodes"));
        assert_eq!(round("/a/system%3anode"), "/a/system:node");
        assert_eq!(round("/a/r%c3%b4le%20x"), "/a/r%C3%B4le%20x");
        assert_eq!(round("/a/%3F%23%25"), "/a/%3F%23%25");
        assert_eq!(round("/a/$&+,;=@-_.~"), "/a/$&+,;=@-_.~");
    }

    #[test]
    fn first_value_of_every_parameter() {
        let q = parse_query(Some("limit=1&limit=2&labelSelector=a%3Db&x"));
        assert_eq!(q.get("limit").map(String::as_str), Some("1"));
        assert_eq!(q.get("labelSelector").map(String::as_str), Some("a=b"));
        assert_eq!(q.get("x").map(String::as_str), Some(""));
    }

    /// `dryRun`, a `[]string` option, keeps every value (and an empty one), as kube's conversion
    /// of the query fills it.
    #[test]
    fn every_dry_run_value() {
        let i = info(
            Method::POST,
            "/api/v1/namespaces/a/configmaps?dryRun=All&limit=1&dryRun=b%20c&dryRun=",
        );
        assert_eq!(i.dry_run, ["All", "b c", ""]);
        assert_eq!(i.query.get("dryRun").map(String::as_str), Some("All"));
        assert!(info(Method::POST, "/api/v1/namespaces/a/configmaps")
            .dry_run
            .is_empty());
    }
}
