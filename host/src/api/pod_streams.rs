//! The Pod subresources that kube's API server hands to the Pod's kubelet: `log`, `exec`,
//! `attach` and `portforward`.
//!
//! The API server's own checks are kube's, in kube's order: the options (422
//! `PodLogOptions "NAME" is invalid: ...`), the Pod (404), its container (400 `container C is
//! not valid for pod P`, `a container name must be specified for pod P, choose one of: [...]`),
//! its Node (a log of an unscheduled Pod is 204 No Content; exec, attach and port-forward are
//! 400 `pod P does not have a host assigned`), and for the streams an upgrade request (400
//! `Upgrade request required`).
//!
//! turtles' kubelet (the `node` guest) runs no process, so what the kubelet would do comes from
//! the Pod's status, as kube's kubelet judges a log request (`validateContainerLogStatus`):
//! - a log of a container waiting to start, terminated without an ID, or unknown is refused
//!   with the kubelet's 400 (`container "C" in pod "P" is waiting to start: ContainerCreating`);
//!   `previous` needs a `lastState.terminated`;
//! - otherwise the log is **empty** (200 `text/plain`): no process wrote anything. Followed
//!   (`follow=true`), the stream stays open while the container runs, and ends when it stops,
//!   the Pod goes, the client leaves or the server stops, as a real container's log does;
//! - exec, attach and port-forward are refused (400) after kube's checks, saying there is no
//!   process to reach.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::handlers::Target;
use super::request_info::Query;
use super::AppState;
use crate::informer::{Event, Expiry, StoreSource, Watcher};
use crate::model::{ApiError, Cause};
use crate::service::Filter;

/// Which of the kubelet's subresources a request names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodStream {
    Log,
    Exec,
    Attach,
    PortForward,
}

impl PodStream {
    pub fn from_subresource(sub: &str) -> Option<Self> {
        Some(match sub {
            "log" => Self::Log,
            "exec" => Self::Exec,
            "attach" => Self::Attach,
            "portforward" => Self::PortForward,
            _ => return None,
        })
    }
}

/// At most this many followed logs are open per user (more is 429)...
pub const MAX_FOLLOWS_PER_USER: usize = 32;
/// ... and in all.
pub const MAX_FOLLOWS: usize = 1024;

/// The followed logs open: each holds a stream with no bytes and a watcher for as long as its
/// container runs, so a tenant could otherwise open them without end. (Also the count of
/// watches proxied to extension servers, `Follows::named`.)
pub struct Follows {
    open: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    /// What is counted, for the 429's message.
    what: &'static str,
    /// At most so many per user, and in all.
    per_user: usize,
    total: usize,
}

impl Default for Follows {
    fn default() -> Self {
        Self::named("followed Pod logs")
    }
}

/// One open follow, given back when dropped.
pub struct FollowPermit {
    follows: Arc<Follows>,
    user: String,
}

impl Follows {
    pub fn named(what: &'static str) -> Self {
        Self::with_limits(what, MAX_FOLLOWS_PER_USER, MAX_FOLLOWS)
    }

    /// A count of `what` with these bounds (`usize::MAX`: none).
    pub fn with_limits(what: &'static str, per_user: usize, total: usize) -> Self {
        Self {
            open: Default::default(),
            what,
            per_user,
            total,
        }
    }

    pub fn acquire(self: &Arc<Self>, user: &str) -> Result<FollowPermit, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let total: usize = open.values().sum();
        let mine = open.get(user).copied().unwrap_or(0);
        if mine >= self.per_user || total >= self.total {
            let bounds = if self.total == usize::MAX {
                format!("at most {} per user", self.per_user)
            } else {
                format!("at most {} per user, {} in all", self.per_user, self.total)
            };
            return Err(ApiError::new(
                429,
                "TooManyRequests",
                format!("too many {} are open ({bounds})", self.what),
            ));
        }
        open.insert(user.to_owned(), mine + 1);
        Ok(FollowPermit {
            follows: self.clone(),
            user: user.to_owned(),
        })
    }
}

impl Drop for FollowPermit {
    fn drop(&mut self) {
        let mut open = self.follows.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.user);
            }
        }
    }
}

/// One request of a Pod's `log`, `exec`, `attach` or `portforward`.
pub struct StreamRequest<'a> {
    pub kind: PodStream,
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    pub query: &'a Query,
    /// Who asks (follows are counted per user).
    pub user: &'a str,
}

/// Serve one request of a Pod's `log`, `exec`, `attach` or `portforward`.
pub async fn serve(
    state: &Arc<AppState>,
    target: &Target,
    request: StreamRequest<'_>,
) -> Result<Response, ApiError> {
    let StreamRequest {
        kind: stream,
        method,
        headers,
        query,
        user,
    } = request;
    // `log` is a GET; the streams are upgraded GETs (WebSocket) or POSTs (SPDY).
    let allowed = match stream {
        PodStream::Log => method == Method::GET,
        _ => method == Method::GET || method == Method::POST,
    };
    if !allowed {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let ns = target.namespace.as_deref().unwrap_or("");
    let name = target.name.as_deref().unwrap_or("");
    match stream {
        PodStream::Log => log(state, target, ns, name, query, user).await,
        _ => connect(state, target, stream, ns, name, headers, query),
    }
}

/// kube's conversion of a query value to a bool: absent, `0` or `false` (any case) is false,
/// anything else true.
fn flag(query: &Query, param: &str) -> bool {
    query
        .get(param)
        .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// An integer option, with Go's `strconv.ParseInt` error as kube's decoder answers it (400).
fn integer(query: &Query, param: &str) -> Result<Option<i64>, ApiError> {
    let Some(v) = query.get(param) else {
        return Ok(None);
    };
    super::handlers::go_parse_int(v).map(Some)
}

/// The log options kube reads (`PodLogOptions`), checked as `ValidatePodLogOptions` does.
#[derive(Debug, Default, PartialEq)]
struct LogOptions {
    container: String,
    follow: bool,
    previous: bool,
}

fn log_options(name: &str, query: &Query) -> Result<LogOptions, ApiError> {
    let tail = integer(query, "tailLines")?;
    let limit = integer(query, "limitBytes")?;
    let since_seconds = integer(query, "sinceSeconds")?;
    let since_time = match query.get("sinceTime") {
        None => None,
        Some(t) if t.is_empty() => None,
        Some(t) => Some(chrono::DateTime::parse_from_rfc3339(t).map_err(|_| {
            ApiError::bad_request(format!(
                "parsing time {t:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {t:?} as \"2006\""
            ))
        })?),
    };
    let mut causes = Vec::new();
    if let Some(n) = tail.filter(|n| *n < 0) {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "tailLines",
            format!("Invalid value: {n}: must be greater than or equal to 0"),
        ));
    }
    if let Some(n) = limit.filter(|n| *n < 1) {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "limitBytes",
            format!("Invalid value: {n}: must be greater than 0"),
        ));
    }
    match (since_seconds, since_time) {
        (Some(_), Some(_)) => causes.push(Cause::new(
            "FieldValueForbidden",
            "[]",
            "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
        )),
        (Some(n), None) if n < 1 => causes.push(Cause::new(
            "FieldValueInvalid",
            "sinceSeconds",
            format!("Invalid value: {n}: must be greater than 0"),
        )),
        _ => {}
    }
    // Stream selection is behind kube's PodLogsQuerySplitStreams gate, off by default.
    if query.contains_key("stream") {
        causes.push(Cause::new(
            "FieldValueForbidden",
            "stream",
            "Forbidden: may not be specified",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "PodLogOptions", name, causes));
    }
    Ok(LogOptions {
        container: query.get("container").cloned().unwrap_or_default(),
        follow: flag(query, "follow"),
        previous: flag(query, "previous"),
    })
}

/// The names of a Pod's containers in kube's order: init, regular, ephemeral.
fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|list| {
            pod["spec"][*list]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str())
        })
        .collect()
}

/// kube's `validateContainer`: the named container, or the only regular one.
fn choose_container(pod: &Value, name: &str, container: &str) -> Result<String, ApiError> {
    if container.is_empty() {
        let regular = pod["spec"]["containers"].as_array().map_or(&[][..], |v| v);
        return match regular {
            [only] => Ok(only["name"].as_str().unwrap_or("").to_owned()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                container_names(pod).join(" ")
            ))),
        };
    }
    if container_names(pod).contains(&container) {
        Ok(container.to_owned())
    } else {
        Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {name}"
        )))
    }
}

fn node_name(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or("")
}

/// The container's status, from the regular, init and ephemeral lists (the kubelet's order).
fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .find_map(|list| {
        pod["status"][*list]
            .as_array()?
            .iter()
            .find(|s| s["name"] == container)
    })
}

/// What the kubelet says of a log request for this container (`validateContainerLogStatus`):
/// `Ok(running)`, or its error (a 400 through the API server).
fn log_status(pod: &Value, name: &str, container: &str, previous: bool) -> Result<bool, ApiError> {
    let refuse = |why: String| Err(ApiError::bad_request(why));
    let Some(status) = container_status(pod, container) else {
        return refuse(format!(
            "container {container:?} in pod {name:?} is not available"
        ));
    };
    let last = &status["lastState"]["terminated"];
    let state = &status["state"];
    let has_id = |v: &Value| v["containerID"].as_str().is_some_and(|id| !id.is_empty());
    let terminated_error = || format!("container {container:?} in pod {name:?} is terminated");
    if previous {
        return if last.is_object() && has_id(last) {
            Ok(false)
        } else {
            refuse(format!(
                "previous terminated container {container:?} in pod {name:?} not found"
            ))
        };
    }
    if state["running"].is_object() {
        return Ok(true);
    }
    let terminated = &state["terminated"];
    if terminated.is_object() {
        return if has_id(terminated) || (last.is_object() && has_id(last)) {
            Ok(false)
        } else {
            refuse(terminated_error())
        };
    }
    if last.is_object() {
        return if has_id(last) {
            Ok(false)
        } else {
            refuse(terminated_error())
        };
    }
    if let Some(waiting) = state["waiting"].as_object() {
        let reason = waiting.get("reason").and_then(Value::as_str).unwrap_or("");
        let why = match reason {
            "ErrImagePull" => "image can't be pulled",
            "ImagePullBackOff" => "trying and failing to pull image",
            other => other,
        };
        return refuse(format!(
            "container {container:?} in pod {name:?} is waiting to start: {why}"
        ));
    }
    refuse(format!(
        "container {container:?} in pod {name:?} is waiting to start - no logs yet"
    ))
}

/// Whether the container of this Pod still runs (a finished Pod runs nothing, whatever its
/// statuses say).
fn still_running(pod: &Value, container: &str) -> bool {
    let finished = matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    );
    !finished && container_status(pod, container).is_some_and(|s| s["state"]["running"].is_object())
}

/// kube's `GetConnectionInfo`: the Pod's Node must exist (404 `nodes "N" not found`).
fn node_exists(state: &AppState, node: &str) -> Result<(), ApiError> {
    let nodes = state
        .registry
        .lookup("", "v1", "nodes")
        .ok_or_else(|| ApiError::internal("the nodes resource is not registered"))?;
    state.service.get(&nodes, "", node).map(|_| ())
}

async fn log(
    state: &Arc<AppState>,
    target: &Target,
    ns: &str,
    name: &str,
    query: &Query,
    user: &str,
) -> Result<Response, ApiError> {
    let opts = log_options(name, query)?;
    // A follow watches from here: every change after the Pod is read is seen.
    let revision = state.service.store.revision();
    let stored = state.service.get(&target.ri, ns, name)?;
    let pod = stored.parse();
    let container = choose_container(&pod, name, &opts.container)?;
    if node_name(&pod).is_empty() {
        // kube's LocationStreamer without a location: no content.
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    node_exists(state, node_name(&pod))?;
    let running = log_status(&pod, name, &container, opts.previous)?;
    if !(opts.follow && running && !opts.previous && still_running(&pod, &container)) {
        return Ok(text(Body::empty()));
    }
    // Followed while it runs: held open until the container stops or the Pod goes (another
    // Pod of the same name is not this one), from the revision of the Pod read above.
    let permit = state.log_follows.acquire(user)?;
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_owned();
    let filter = Filter::new(Some(ns), None, Some(&format!("metadata.name={name}")))?;
    let source = StoreSource {
        store: state.service.store.clone(),
        resource: target.ri.group_resource(),
        namespace: Some(ns.to_owned()),
    };
    let mut watcher = Watcher::resume(source, Some(filter), revision).on_expiry(Expiry::End);
    let mut stop = state.shutdown.clone();
    let ended = async move {
        let _permit = permit;
        loop {
            tokio::select! {
                event = watcher.next() => match event {
                    // The history lost its place, the store closed, or the Pod went.
                    None | Some(Event::Delete(_)) => return,
                    Some(Event::InitApply(p) | Event::Added(p) | Event::Apply(p)) => {
                        // Only what is looked at, not the whole Pod at each of its changes.
                        let pod = serde_json::json!({
                            "metadata": p.pick("metadata", &["uid"]),
                            "status": p.pick("status", &["phase", "containerStatuses",
                                "initContainerStatuses", "ephemeralContainerStatuses"]),
                        });
                        if pod["metadata"]["uid"] != uid.as_str() || !still_running(&pod, &container) {
                            return;
                        }
                    }
                    Some(Event::Init | Event::InitDone) => {}
                },
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    };
    // A body with no chunk that ends when `ended` does.
    let body = futures::stream::unfold(Some(Box::pin(ended)), |ended| async move {
        if let Some(ended) = ended {
            ended.await;
        }
        None::<(Result<axum::body::Bytes, std::convert::Infallible>, _)>
    });
    Ok(text(Body::from_stream(body)))
}

fn text(body: Body) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    r
}

/// Whether a request asks to be upgraded (WebSocket or SPDY), as kube's
/// `httpstream.IsUpgradeRequest` judges it.
fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// `exec`, `attach` and `portforward`: kube's checks, then the kubelet's refusal.
fn connect(
    state: &Arc<AppState>,
    target: &Target,
    stream: PodStream,
    ns: &str,
    name: &str,
    headers: &HeaderMap,
    query: &Query,
) -> Result<Response, ApiError> {
    let stored = state.service.get(&target.ri, ns, name)?;
    let pod = stored.parse();
    // Port-forward names no container (kube's PortForwardLocation).
    let container = match stream {
        PodStream::PortForward => None,
        _ => Some(choose_container(
            &pod,
            name,
            query.get("container").map_or("", String::as_str),
        )?),
    };
    if node_name(&pod).is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    node_exists(state, node_name(&pod))?;
    if !is_upgrade(headers) {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    let Some(container) = container else {
        return Err(ApiError::bad_request(format!(
            "unable to forward ports of pod {name:?}: turtles' kubelet simulates containers and runs no process to connect to"
        )));
    };
    // The kubelet's own check of the streams asked for (a TTY has no separate stderr).
    let tty = flag(query, "tty");
    let stderr = flag(query, "stderr") && !tty;
    if !flag(query, "stdin") && !flag(query, "stdout") && !stderr {
        return Err(ApiError::bad_request(
            "you must specify at least 1 of stdin, stdout, stderr",
        ));
    }
    let verb = if stream == PodStream::Exec {
        "exec in"
    } else {
        "attach to"
    };
    Err(ApiError::bad_request(format!(
        "unable to {verb} container {container:?} in pod {name:?}: turtles' kubelet simulates containers and runs no process"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn query(pairs: &[(&str, &str)]) -> Query {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn follows_are_bounded_per_user_and_given_back() {
        let follows = Arc::new(Follows::default());
        let mine: Vec<_> = (0..MAX_FOLLOWS_PER_USER)
            .map(|_| follows.acquire("eve").unwrap())
            .collect();
        assert_eq!(follows.acquire("eve").err().map(|e| e.code), Some(429));
        // Another user is not held back by eve's.
        let other = follows.acquire("bob").unwrap();
        drop(mine);
        assert!(follows.acquire("eve").is_ok());
        drop(other);
        assert!(follows.open.lock().unwrap().is_empty());
    }

    #[test]
    fn log_options_are_checked_as_kube_does() {
        let e = log_options("p", &query(&[("tailLines", "-1"), ("limitBytes", "0")])).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "PodLogOptions \"p\" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]"
        );
        let e = log_options(
            "p",
            &query(&[("sinceSeconds", "5"), ("sinceTime", "2026-01-01T00:00:00Z")]),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "PodLogOptions \"p\" is invalid: []: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
        );
        let e = log_options("p", &query(&[("tailLines", "x")])).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "strconv.ParseInt: parsing \"x\": invalid syntax")
        );
        let ok = log_options(
            "p",
            &query(&[("follow", "yes"), ("previous", "False"), ("tailLines", "0")]),
        )
        .unwrap();
        assert!(ok.follow && !ok.previous);
    }

    #[test]
    fn a_container_is_chosen_as_kube_does() {
        let pod = json!({"spec": {"initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b"}]}});
        let e = choose_container(&pod, "p", "").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "a container name must be specified for pod p, choose one of: [init a b]"
            )
        );
        assert_eq!(
            choose_container(&pod, "p", "nope").unwrap_err().message,
            "container nope is not valid for pod p"
        );
        assert_eq!(choose_container(&pod, "p", "init").unwrap(), "init");
        let one =
            json!({"spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "a"}]}});
        assert_eq!(choose_container(&one, "p", "").unwrap(), "a");
    }

    #[test]
    fn the_kubelet_answers_from_the_container_status() {
        let pod = |state: Value, last: Value| json!({"status": {"containerStatuses": [{"name": "c", "state": state, "lastState": last}]}});
        let waiting = pod(
            json!({"waiting": {"reason": "ContainerCreating"}}),
            json!({}),
        );
        assert_eq!(
            log_status(&waiting, "p", "c", false).unwrap_err().message,
            "container \"c\" in pod \"p\" is waiting to start: ContainerCreating"
        );
        let pulling = pod(
            json!({"waiting": {"reason": "ImagePullBackOff"}}),
            json!({}),
        );
        assert_eq!(
            log_status(&pulling, "p", "c", false).unwrap_err().message,
            "container \"c\" in pod \"p\" is waiting to start: trying and failing to pull image"
        );
        let running = pod(json!({"running": {"startedAt": "t"}}), json!({}));
        assert!(log_status(&running, "p", "c", false).unwrap());
        assert_eq!(
            log_status(&running, "p", "c", true).unwrap_err().message,
            "previous terminated container \"c\" in pod \"p\" not found"
        );
        let done = pod(
            json!({"terminated": {"containerID": "turtles://1"}}),
            json!({}),
        );
        assert!(!log_status(&done, "p", "c", false).unwrap());
        let gone = pod(json!({"terminated": {"reason": "Error"}}), json!({}));
        assert_eq!(
            log_status(&gone, "p", "c", false).unwrap_err().message,
            "container \"c\" in pod \"p\" is terminated"
        );
        assert_eq!(
            log_status(&running, "p", "other", false)
                .unwrap_err()
                .message,
            "container \"other\" in pod \"p\" is not available"
        );
    }

    /// Watches are bounded per user only, and say so.
    #[test]
    fn watches_are_bounded_per_user() {
        let w = Arc::new(Follows::with_limits("watches", 2, usize::MAX));
        let held = [w.acquire("t").unwrap(), w.acquire("t").unwrap()];
        let e = w.acquire("t").err().expect("a third");
        assert_eq!(e.code, 429);
        assert_eq!(e.message, "too many watches are open (at most 2 per user)");
        assert!(w.acquire("other").is_ok());
        drop(held);
        assert!(w.acquire("t").is_ok());
    }
}
