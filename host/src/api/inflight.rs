//! kube's `--max-requests-inflight` / `--max-mutating-requests-inflight` (`WithMaxInFlightLimit`):
//! at most so many read-only (get, list) and mutating requests are served at once; beyond that a
//! request is answered 429 `TooManyRequests` with `Retry-After: 1` at once (clients retry).
//! Long-running requests (watches, and kube's long-running subresources) are not counted, and
//! members of `system:masters` are served even over the limit, as in kube.
//!
//! One user may hold at most half of a limit's slots, so a single client (a tenant's slow
//! lists, say) cannot take them all and leave every other client 429s. kube gets this from API
//! Priority and Fairness, which shares the seats fairly among users; turtles has no APF, and
//! this cap is its stand-in.

use std::collections::HashMap;
use std::sync::Mutex;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::request_info::RequestInfo;
use crate::auth::{UserInfo, MASTERS};
use crate::model::ApiError;

/// A response whose body is written as the client reads it (a list): its request keeps its
/// slot until the body is written, or [`SLOT_DEADLINE`] has passed. Other responses are
/// complete when the handler returns, and give the slot back then.
#[derive(Debug, Clone, Copy)]
pub struct HoldsSlot;

/// The longest a streamed response keeps its slot (kube's request timeout): a client that stops
/// reading (an HTTP/2 window of 0) cannot keep it for ever.
pub const SLOT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// kube's message for a request over the limit.
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";

pub struct InFlightLimits {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
    /// Requests being served now, read-only and mutating (limited or not): the
    /// `turtles_api_inflight_requests` gauge.
    serving: [Arc<AtomicUsize>; 2],
    /// The most slots one user may hold, read-only and mutating (half of each limit).
    share: [usize; 2],
    /// The slots each user holds now, read-only and mutating.
    held: [Holders; 2],
}

/// The slots each user holds now, by name.
type Holders = Arc<Mutex<HashMap<String, usize>>>;

/// A request being served: its permit, if a limit counts it, and its place in the gauge.
#[derive(Debug)]
pub struct Slot {
    _permit: Option<OwnedSemaphorePermit>,
    serving: Arc<AtomicUsize>,
    /// The user's count of slots, when it holds one of a limit's.
    held: Option<(Holders, String)>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.serving.fetch_sub(1, Ordering::AcqRel);
        release(self.held.take());
    }
}

/// Give back one of a user's slots.
fn release(held: Option<(Holders, String)>) {
    if let Some((held, user)) = held {
        let mut h = held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = h.get_mut(&user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                h.remove(&user);
            }
        }
    }
}

impl InFlightLimits {
    /// A limit of 0 means no limit.
    pub fn new(max_read_only: usize, max_mutating: usize) -> Self {
        let sem = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        Self {
            read_only: sem(max_read_only),
            mutating: sem(max_mutating),
            serving: Default::default(),
            share: [max_read_only.div_ceil(2), max_mutating.div_ceil(2)],
            held: Default::default(),
        }
    }

    /// The gauge of requests being served, by kube's request kinds.
    pub fn render(&self, out: &mut String) {
        out.push_str("# HELP turtles_api_inflight_requests Requests being served now (watches and other long-running requests not counted), by kind.\n# TYPE turtles_api_inflight_requests gauge\n");
        for (kind, n) in ["readOnly", "mutating"].iter().zip(&self.serving) {
            out.push_str(&format!(
                "turtles_api_inflight_requests{{request_kind=\"{kind}\"}} {}\n",
                n.load(Ordering::Acquire)
            ));
        }
    }

    /// A slot for this request (held until its answer is produced), `None` when it is not
    /// counted (long-running), or 429.
    pub fn admit(&self, info: &RequestInfo, user: &UserInfo) -> Result<Option<Slot>, ApiError> {
        if info.is_long_running() {
            return Ok(None);
        }
        let kind = usize::from(info.is_mutating());
        let (sem, serving) = if kind == 1 {
            (&self.mutating, &self.serving[1])
        } else {
            (&self.read_only, &self.serving[0])
        };
        let master = user.groups.iter().any(|g| g == MASTERS);
        // The user's share first (counted before the permit is taken, undone if it is not).
        let held = match sem {
            Some(_) if !master => {
                let mut h = self.held[kind].lock().unwrap_or_else(|e| e.into_inner());
                let n = h.entry(user.name.clone()).or_default();
                if *n >= self.share[kind] {
                    if *n == 0 {
                        h.remove(&user.name);
                    }
                    return Err(ApiError::too_many_requests(TOO_MANY_REQUESTS));
                }
                *n += 1;
                Some((self.held[kind].clone(), user.name.clone()))
            }
            _ => None,
        };
        let permit = match sem {
            None => None,
            Some(sem) => match sem.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) if master => None,
                Err(_) => {
                    // Not served: the share taken above goes back.
                    release(held);
                    return Err(ApiError::too_many_requests(TOO_MANY_REQUESTS));
                }
            },
        };
        serving.fetch_add(1, Ordering::AcqRel);
        Ok(Some(Slot {
            _permit: permit,
            serving: serving.clone(),
            held,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{Method, Uri};

    fn info(m: Method, uri: &str) -> RequestInfo {
        RequestInfo::parse(&m, &uri.parse::<Uri>().expect("uri")).expect("parse")
    }

    fn user(groups: &[&str]) -> UserInfo {
        UserInfo {
            name: "u".into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: Default::default(),
        }
    }

    /// One user holds at most half a limit's slots; the others are left for everyone else.
    #[test]
    fn one_user_holds_at_most_half() {
        let l = InFlightLimits::new(4, 4);
        let list = info(Method::GET, "/api/v1/configmaps");
        let mut bob = user(&["system:authenticated"]);
        bob.name = "bob".into();
        let mut eve = user(&["system:authenticated"]);
        eve.name = "eve".into();
        let held: Vec<_> = (0..2).map(|_| l.admit(&list, &eve).expect("eve")).collect();
        let e = l.admit(&list, &eve).expect_err("over eve's share");
        assert_eq!(e.code, 429);
        let b = l.admit(&list, &bob).expect("bob is served");
        drop(held);
        assert!(l.admit(&list, &eve).expect("eve again").is_some());
        drop(b);
        assert!(
            l.held[0].lock().unwrap().get("bob").is_none(),
            "counts go with the slots"
        );
    }

    #[test]
    fn limits_by_kind_and_exemptions() {
        let l = InFlightLimits::new(1, 1);
        let bob = user(&["system:authenticated"]);
        let list = info(Method::GET, "/api/v1/configmaps");
        let create = info(Method::POST, "/api/v1/namespaces/a/configmaps");
        let watch = info(Method::GET, "/api/v1/configmaps?watch=1");
        let held = l.admit(&list, &bob).expect("first read");
        assert!(held.is_some());
        let e = l.admit(&list, &bob).expect_err("second read");
        assert_eq!((e.code, e.reason), (429, "TooManyRequests"));
        assert_eq!(e.retry_after, Some(1));
        // Other kinds and long-running requests are not held up.
        let w = l.admit(&create, &bob).expect("a write");
        assert!(w.is_some());
        assert!(l.admit(&watch, &bob).expect("watch").is_none());
        // system:masters is served over the limit.
        let admin = l.admit(&list, &user(&["system:masters"])).expect("masters");
        let gauge = |l: &InFlightLimits| {
            let mut out = String::new();
            l.render(&mut out);
            out
        };
        assert!(gauge(&l).contains("turtles_api_inflight_requests{request_kind=\"readOnly\"} 2"));
        assert!(gauge(&l).contains("turtles_api_inflight_requests{request_kind=\"mutating\"} 1"));
        drop((held, admin, w));
        assert!(gauge(&l).contains("turtles_api_inflight_requests{request_kind=\"readOnly\"} 0"));
        assert!(l.admit(&list, &bob).expect("after release").is_some());
        // 0: unlimited, and still counted.
        let l = InFlightLimits::new(0, 0);
        let _w = l.admit(&create, &bob).expect("unlimited");
        assert!(gauge(&l).contains("turtles_api_inflight_requests{request_kind=\"mutating\"} 1"));
    }
}
