//! What an answer is written as: kube's output negotiation (apiserver
//! `endpoints/handlers/negotiation/negotiate.go`) over goautoneg's reading of `Accept`
//! (github.com/munnerz/goautoneg, the version kube vendors).
//!
//! goautoneg splits the header into clauses (`type/subtype;param=value`), reads each `q`
//! (Go's `ParseFloat(q, 32)`; one that does not parse is 0) and sorts the clauses by Go's
//! `sort.Sort` with its `Less`: a higher q first, a specific type or subtype before `*`. A
//! `q=0` clause is not refused: it is merely last (kube takes it when nothing before it
//! fits). kube then takes, clause by clause, the first of its media types (JSON, YAML,
//! protobuf, in that order) that the clause names (exactly, `type/*` or `*/*`) and whose
//! parameters the endpoint allows: `as`/`g`/`v` (a transform: Table only as JSON or YAML,
//! PartialObjectMetadata and its list as any type, both only in `meta.k8s.io` `v1` or
//! `v1beta1`; an error's answer takes no transform), `stream` (only `watch`, only for a type
//! with a stream serializer: not YAML), `sv` (only the meta group's `v1`). A custom resource
//! is served without a transform as JSON or YAML only (kube's `StandardSerializers` leave
//! protobuf out). No `Accept` at all is JSON; a header with no clause that fits is a 406.

use super::gosort;

/// The media types kube's serializers offer, in their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    Json,
    Yaml,
    /// Negotiated as kube does; answered as JSON here (only protobuf bodies are read).
    Protobuf,
}

impl Media {
    const ALL: [Media; 3] = [Media::Json, Media::Yaml, Media::Protobuf];

    fn subtype(self) -> &'static str {
        match self {
            Media::Json => "json",
            Media::Yaml => "yaml",
            Media::Protobuf => "vnd.kubernetes.protobuf",
        }
    }

    /// Whether kube can stream watch events in it.
    fn streams(self) -> bool {
        self != Media::Yaml
    }
}

/// kube's 406 when no clause of `Accept` fits: the media types it serves.
pub const NOT_ACCEPTABLE: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";
/// kube's 406 when a watch's clause names a type without a stream serializer (or none fits).
pub const NOT_ACCEPTABLE_STREAM: &str = "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch";

/// A transform asked for with `as`, `g` and `v`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Convert {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Convert {
    /// The `meta.k8s.io` version of a transform kube serves (`v1`, `v1beta1`), if it is one.
    pub fn meta_version(&self) -> Option<&str> {
        (self.group == "meta.k8s.io" && matches!(self.version.as_str(), "v1" | "v1beta1"))
            .then_some(self.version.as_str())
    }
}

/// The outcome of a negotiation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    pub media: Media,
    pub convert: Option<Convert>,
}

/// Which handlers answer, as kube's `EndpointRestrictions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A resource's handlers (`RequestScope`); a custom resource's serve no protobuf.
    Resource { custom: bool },
    /// An error's answer (`DefaultEndpointRestrictions`): no transform, no server version.
    Errors,
}

impl Endpoint {
    fn allows_transform(self, media: Media, convert: Option<&Convert>) -> bool {
        match (self, convert) {
            (Endpoint::Errors, c) => c.is_none(),
            (Endpoint::Resource { custom }, None) => !custom || media != Media::Protobuf,
            (Endpoint::Resource { .. }, Some(c)) => {
                if c.meta_version().is_none() {
                    return false;
                }
                match c.kind.as_str() {
                    "Table" => matches!(media, Media::Json | Media::Yaml),
                    "PartialObjectMetadata" | "PartialObjectMetadataList" => true,
                    _ => false,
                }
            }
        }
    }

    fn allows_server_version(self, v: &str) -> bool {
        match self {
            Endpoint::Resource { .. } => v == "v1",
            Endpoint::Errors => false,
        }
    }
}

/// One clause of `Accept`, as goautoneg reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub ty: String,
    pub subtype: String,
    pub q: f64,
    /// Parameters other than `q` (a repeated name: the last value).
    pub params: Vec<(String, String)>,
}

/// Go's `strings.TrimFunc(s, func(r) bool { return r == ' ' })`.
fn trim_spaces(s: &str) -> &str {
    s.trim_matches(' ')
}

/// goautoneg's `nextSplitElement`: what comes before the first `sep` and what after it.
fn split_first(s: &str, sep: char) -> (&str, &str) {
    s.split_once(sep).unwrap_or((s, ""))
}

/// goautoneg's `ParseAccept`: the clauses of `header`, sorted as it sorts them.
pub fn parse_accept(header: &str) -> Vec<Clause> {
    let mut clauses = Vec::new();
    let mut remaining = header;
    while !remaining.is_empty() {
        let (part, rest) = split_first(remaining, ',');
        remaining = rest;
        let part = trim_spaces(part);
        let (media, mut params) = split_first(part, ';');
        let (ty, sub) = split_first(media, '/');
        let ty = trim_spaces(ty);
        let subtype = if sub.is_empty() {
            if ty != "*" {
                continue;
            }
            "*"
        } else {
            let (sub, extra) = split_first(sub, '/');
            if !extra.is_empty() {
                continue;
            }
            trim_spaces(sub)
        };
        let mut clause = Clause {
            ty: ty.to_owned(),
            subtype: subtype.to_owned(),
            q: 1.0,
            params: Vec::new(),
        };
        while !params.is_empty() {
            let (param, rest) = split_first(params, ';');
            params = rest;
            let (name, value) = split_first(param, '=');
            if value.is_empty() {
                continue;
            }
            let (value, extra) = split_first(value, '=');
            if !extra.is_empty() {
                continue;
            }
            let name = trim_spaces(name);
            if name == "q" {
                // Go's `ParseFloat(value, 32)`: its error ignored (0, or ±Inf out of range).
                clause.q = value.parse::<f32>().map_or(0.0, f64::from);
            } else {
                let value = trim_spaces(value).to_owned();
                match clause.params.iter_mut().find(|(k, _)| k == name) {
                    Some(p) => p.1 = value,
                    None => clause.params.push((name.to_owned(), value)),
                }
            }
        }
        clauses.push(clause);
    }
    gosort::sort(&mut clauses, |a, b| {
        a.q > b.q || (a.ty != "*" && b.ty == "*") || (a.subtype != "*" && b.subtype == "*")
    });
    clauses
}

/// kube's `NegotiateMediaTypeOptions`: the first clause, in goautoneg's order, that names one
/// of the served media types with parameters `endpoint` allows.
pub fn negotiate(accept: &str, endpoint: Endpoint) -> Option<Negotiated> {
    if accept.is_empty() {
        return Some(Negotiated {
            media: Media::Json,
            convert: None,
        });
    }
    for clause in parse_accept(accept) {
        for media in Media::ALL {
            let named = (clause.ty == "application"
                && (clause.subtype == media.subtype() || clause.subtype == "*"))
                || (clause.ty == "*" && clause.subtype == "*");
            if named {
                if let Some(n) = accepts(&clause, media, endpoint) {
                    return Some(n);
                }
            }
        }
    }
    None
}

/// kube's `acceptMediaTypeOptions`: whether `clause`'s parameters allow `media` here.
fn accepts(clause: &Clause, media: Media, endpoint: Endpoint) -> Option<Negotiated> {
    let mut convert: Option<Convert> = None;
    for (name, value) in &clause.params {
        match name.as_str() {
            "as" => convert.get_or_insert_with(Convert::default).kind = value.clone(),
            "g" => convert.get_or_insert_with(Convert::default).group = value.clone(),
            "v" => convert.get_or_insert_with(Convert::default).version = value.clone(),
            "stream" if !value.is_empty() && (!media.streams() || value != "watch") => {
                return None;
            }
            "sv" if !value.is_empty() && !endpoint.allows_server_version(value) => return None,
            _ => {}
        }
    }
    if !endpoint.allows_transform(media, convert.as_ref()) {
        return None;
    }
    Some(Negotiated { media, convert })
}

/// kube's `NegotiateOutputMediaTypeStream` for a watch: the negotiated type must stream.
pub fn negotiate_stream(accept: &str, endpoint: Endpoint) -> Option<Negotiated> {
    negotiate(accept, endpoint).filter(|n| n.media.streams())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILTIN: Endpoint = Endpoint::Resource { custom: false };

    fn media(accept: &str, endpoint: Endpoint) -> Option<Media> {
        negotiate(accept, endpoint).map(|n| n.media)
    }

    #[test]
    fn goautoneg_sorts_by_q_then_specificity() {
        let order = |h: &str| -> Vec<String> {
            parse_accept(h)
                .into_iter()
                .map(|c| format!("{}/{};q={}", c.ty, c.subtype, c.q))
                .collect()
        };
        assert_eq!(
            order("application/json;q=0.5, application/yaml"),
            ["application/yaml;q=1", "application/json;q=0.5"]
        );
        assert_eq!(
            order("*/*, application/*, application/json"),
            ["application/json;q=1", "application/*;q=1", "*/*;q=1"]
        );
        // Equal q and specificity: the client's order (an insertion sort is stable).
        assert_eq!(
            order("application/yaml, application/json"),
            ["application/yaml;q=1", "application/json;q=1"]
        );
        // A q that does not parse is 0; `q= 1` keeps its space and does not parse.
        assert_eq!(
            order("application/json;q=x, application/yaml;q= 1, text/plain;q=0.1"),
            [
                "text/plain;q=0.10000000149011612",
                "application/json;q=0",
                "application/yaml;q=0"
            ]
        );
        // A lone type other than `*`, or three parts, is no clause; `*` alone is `*/*`.
        assert_eq!(order("json, a/b/c, *"), ["*/*;q=1"]);
    }

    #[test]
    fn the_higher_q_wins() {
        assert_eq!(
            media("application/json;q=0.5,application/yaml", BUILTIN),
            Some(Media::Yaml)
        );
        assert_eq!(
            media("application/yaml;q=0.9,application/json", BUILTIN),
            Some(Media::Json)
        );
        // `q=0` is only last: taken when nothing else fits.
        assert_eq!(
            media("text/html, application/yaml;q=0", BUILTIN),
            Some(Media::Yaml)
        );
        assert_eq!(
            media("application/json;q=0, application/yaml", BUILTIN),
            Some(Media::Yaml)
        );
    }

    #[test]
    fn types_and_wildcards() {
        assert_eq!(media("", BUILTIN), Some(Media::Json));
        assert_eq!(media("*/*", BUILTIN), Some(Media::Json));
        assert_eq!(media("application/*", BUILTIN), Some(Media::Json));
        assert_eq!(media("application/yaml", BUILTIN), Some(Media::Yaml));
        assert_eq!(
            media("application/vnd.kubernetes.protobuf", BUILTIN),
            Some(Media::Protobuf)
        );
        assert_eq!(media("text/html", BUILTIN), None);
        assert_eq!(media("text/*", BUILTIN), None);
        assert_eq!(media("Application/JSON", BUILTIN), None);
        // A custom resource is not served as protobuf (its transforms are).
        let custom = Endpoint::Resource { custom: true };
        assert_eq!(media("application/vnd.kubernetes.protobuf", custom), None);
        assert_eq!(
            media(
                "application/vnd.kubernetes.protobuf, application/yaml",
                custom
            ),
            Some(Media::Yaml)
        );
        assert_eq!(
            media(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
                custom
            ),
            Some(Media::Protobuf)
        );
    }

    #[test]
    fn transforms_and_parameters() {
        let table = |m: &str, v: &str| format!("application/{m};as=Table;g=meta.k8s.io;v={v}");
        let n = negotiate(&table("yaml", "v1"), BUILTIN).expect("yaml table");
        assert_eq!(n.media, Media::Yaml);
        assert_eq!(
            n.convert.as_ref().and_then(|c| c.meta_version()),
            Some("v1")
        );
        // No Table as protobuf, nor in another group or version.
        assert_eq!(
            media(&table("vnd.kubernetes.protobuf", "v1"), BUILTIN),
            None
        );
        assert_eq!(media(&table("json", "v2"), BUILTIN), None);
        assert_eq!(media("application/json;as=Table", BUILTIN), None);
        assert_eq!(
            media("application/json;as=Pod;g=meta.k8s.io;v=v1", BUILTIN),
            None
        );
        // An error takes no transform.
        assert_eq!(media(&table("json", "v1"), Endpoint::Errors), None);
        assert_eq!(
            media(
                &format!("{},application/yaml", table("json", "v1")),
                Endpoint::Errors
            ),
            Some(Media::Yaml)
        );
        // `stream=watch` only for a streaming type; `sv` only `v1`; others ignored.
        assert_eq!(media("application/yaml;stream=watch", BUILTIN), None);
        assert_eq!(
            media("application/json;stream=watch", BUILTIN),
            Some(Media::Json)
        );
        assert_eq!(media("application/json;stream=other", BUILTIN), None);
        assert_eq!(media("application/json;sv=v1", BUILTIN), Some(Media::Json));
        assert_eq!(media("application/json;sv=v2", BUILTIN), None);
        assert_eq!(media("application/json;sv=v1", Endpoint::Errors), None);
        assert_eq!(
            media("application/json;charset=utf-8", BUILTIN),
            Some(Media::Json)
        );
    }

    #[test]
    fn a_watch_needs_a_streaming_type() {
        assert_eq!(
            negotiate_stream("application/yaml", BUILTIN).map(|n| n.media),
            None
        );
        // The first clause that fits decides, streaming or not.
        assert_eq!(
            negotiate_stream("application/yaml, application/json", BUILTIN).map(|n| n.media),
            None
        );
        assert_eq!(
            negotiate_stream("application/json, application/yaml", BUILTIN).map(|n| n.media),
            Some(Media::Json)
        );
    }
}
