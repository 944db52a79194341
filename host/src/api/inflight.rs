//! kube's `--max-requests-inflight` / `--max-mutating-requests-inflight` (`WithMaxInFlightLimit`):
//! at most so many read-only (get, list) and mutating requests are served at once; beyond that a
//! request is answered 429 `TooManyRequests` with `Retry-After: 1` at once (clients retry).
//! Long-running requests (watches, and kube's long-running subresources) are not counted, and
//! members of `system:masters` are served even over the limit, as in kube.
//!
//! One [`Flow`] may hold at most half of a limit's slots, so a single client (a tenant's slow
//! lists or uploads, say) cannot take them all and leave every other client 429s. kube gets this
//! from API Priority and Fairness, which queues each priority level's requests fairly among
//! flows; turtles has no APF, and this cap is its stand-in. A flow is who really sent the
//! request, not who it impersonates (names made up with `Impersonate-User` would each get a
//! share of their own), and every ServiceAccount of one namespace is one flow (a tenant who may
//! create accounts or their tokens would otherwise multiply its share).

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
    /// The most slots one flow may hold, read-only and mutating (half of each limit).
    share: [usize; 2],
    /// The slots each flow holds now, read-only and mutating.
    held: [Holders; 2],
}

/// The slots each flow holds now.
type Holders = Arc<Mutex<HashMap<Flow, usize>>>;

/// Whom a request's share of the limits is counted against: who sent it, as authenticated
/// (before impersonation).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Flow {
    /// A user, by the name it authenticated as.
    User(String),
    /// Every ServiceAccount of one namespace (`system:serviceaccounts:NS`): a token of any
    /// account there, whichever account (tenants with `edit` create accounts and their tokens).
    ServiceAccounts(String),
    /// One of the host's WebAssembly controllers, by its name: its in-process API calls, which
    /// carry [`ControllerCall`], whatever identity (its own user or a ServiceAccount) they act as.
    Controller(String),
}

impl Flow {
    /// The flow of a request authenticated as `authenticated` (the user its credential names,
    /// before any `Impersonate-*` header is applied); `controller` when a Wasm controller of this
    /// host made it.
    pub fn of(authenticated: &UserInfo, controller: Option<&ControllerCall>) -> Flow {
        if let Some(c) = controller {
            return Flow::Controller(c.0.clone());
        }
        match super::access::service_account_of(&authenticated.name) {
            Some((ns, _)) => Flow::ServiceAccounts(ns.to_owned()),
            None => Flow::User(authenticated.name.clone()),
        }
    }
}

/// The [`Flow`] that sent a request, in its extensions once it is admitted (`access.rs`), with
/// whether its share counts: not for `system:masters` as the request acts, exempt from shares
/// as from the limits. What takes a share of something else (the turns off the async workers,
/// `offload.rs`) reads it with [`Sender::share`].
#[derive(Debug, Clone)]
pub struct Sender {
    pub flow: Flow,
    pub exempt: bool,
}

impl Sender {
    pub fn new(flow: Flow, acting_as: &UserInfo) -> Self {
        Sender {
            flow,
            exempt: acting_as.groups.iter().any(|g| g == MASTERS),
        }
    }

    /// The flow whose share a request takes, `None` when exempt.
    pub fn share(&self) -> Option<&Flow> {
        (!self.exempt).then_some(&self.flow)
    }
}

/// Set by the WebAssembly runtime on the requests of its controllers' `api-call`s (in process:
/// no network client can set a request's extensions), naming the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerCall(pub String);

/// A request being served: its permit, if a limit counts it, and its place in the gauge.
#[derive(Debug)]
pub struct Slot {
    _permit: Option<OwnedSemaphorePermit>,
    serving: Arc<AtomicUsize>,
    /// The flow's count of slots, when it holds one of a limit's.
    held: Option<(Holders, Flow)>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.serving.fetch_sub(1, Ordering::AcqRel);
        release(self.held.take());
    }
}

/// Give back one of a flow's slots.
fn release(held: Option<(Holders, Flow)>) {
    if let Some((held, flow)) = held {
        let mut h = held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = h.get_mut(&flow) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                h.remove(&flow);
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
    /// counted (long-running), or 429. `user` is who the request acts as (impersonation
    /// applied): `system:masters` is exempt, as in kube; `flow` is who sent it, whose share
    /// it takes.
    pub fn admit(
        &self,
        info: &RequestInfo,
        user: &UserInfo,
        flow: &Flow,
    ) -> Result<Option<Slot>, ApiError> {
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
        // The flow's share first (counted before the permit is taken, undone if it is not).
        let held = match sem {
            Some(_) if !master => {
                let mut h = self.held[kind].lock().unwrap_or_else(|e| e.into_inner());
                let n = h.entry(flow.clone()).or_default();
                if *n >= self.share[kind] {
                    if *n == 0 {
                        h.remove(flow);
                    }
                    return Err(ApiError::too_many_requests(TOO_MANY_REQUESTS));
                }
                *n += 1;
                Some((self.held[kind].clone(), flow.clone()))
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
        named("u", groups)
    }

    fn named(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: Default::default(),
        }
    }

    /// A request sent and acting as `user` (no impersonation, not a controller's).
    fn admit(
        l: &InFlightLimits,
        info: &RequestInfo,
        user: &UserInfo,
    ) -> Result<Option<Slot>, ApiError> {
        l.admit(info, user, &Flow::of(user, None))
    }

    /// One user holds at most half a limit's slots; the others are left for everyone else.
    #[test]
    fn one_user_holds_at_most_half() {
        let l = InFlightLimits::new(4, 4);
        let list = info(Method::GET, "/api/v1/configmaps");
        let bob = named("bob", &["system:authenticated"]);
        let eve = named("eve", &["system:authenticated"]);
        let held: Vec<_> = (0..2)
            .map(|_| admit(&l, &list, &eve).expect("eve"))
            .collect();
        let e = admit(&l, &list, &eve).expect_err("over eve's share");
        assert_eq!(e.code, 429);
        let b = admit(&l, &list, &bob).expect("bob is served");
        drop(held);
        assert!(admit(&l, &list, &eve).expect("eve again").is_some());
        drop(b);
        assert!(
            l.held[0]
                .lock()
                .unwrap()
                .get(&Flow::User("bob".into()))
                .is_none(),
            "counts go with the slots"
        );
    }

    /// The flow is who sent the request: a user by name, every ServiceAccount of a namespace
    /// as one (as kube splits their names: an invalid one is a plain user), and a controller of
    /// the host by its name, whatever identity it acts as.
    #[test]
    fn the_flow_is_the_sender_and_a_namespaces_accounts_are_one() {
        let sa = |name: &str| named(name, &["system:serviceaccounts", "system:authenticated"]);
        let a = Flow::of(&sa("system:serviceaccount:tenant:a"), None);
        let b = Flow::of(&sa("system:serviceaccount:tenant:b"), None);
        let other = Flow::of(&sa("system:serviceaccount:other:a"), None);
        assert_eq!(a, Flow::ServiceAccounts("tenant".into()));
        assert_eq!(
            a, b,
            "minting accounts does not multiply a namespace's share"
        );
        assert_ne!(a, other);
        // Not a service account's name as kube splits it: the user it names.
        for name in [
            "system:serviceaccount:Tenant:a",
            "system:serviceaccount:tenant",
            "system:serviceaccount:tenant:a:b",
        ] {
            assert_eq!(Flow::of(&sa(name), None), Flow::User(name.into()));
        }
        // A user called like a namespace's group is not that namespace's flow.
        assert_eq!(
            Flow::of(&named("system:serviceaccounts:tenant", &[]), None),
            Flow::User("system:serviceaccounts:tenant".into())
        );
        // A Wasm controller acting as a tenant's account keeps its own flow.
        let call = ControllerCall("deployments".into());
        assert_eq!(
            Flow::of(&sa("system:serviceaccount:tenant:a"), Some(&call)),
            Flow::Controller("deployments".into())
        );
        assert_eq!(
            Flow::of(&named("system:controller:deployments", &[]), Some(&call)),
            Flow::Controller("deployments".into())
        );
    }

    /// Requests impersonating users made up one per request, or sent with tokens of one
    /// namespace's accounts, share one share; another namespace's account is served meanwhile.
    #[test]
    fn made_up_impersonated_users_and_new_accounts_share_the_senders_share() {
        let l = InFlightLimits::new(0, 4);
        let create = info(Method::POST, "/api/v1/namespaces/tenant/configmaps");
        let tenant = named(
            "system:serviceaccount:tenant:editor",
            &["system:serviceaccounts", "system:serviceaccounts:tenant"],
        );
        let sent_by_tenant = Flow::of(&tenant, None);
        let as_made_up = |n: usize| {
            named(
                &format!("system:serviceaccount:tenant:x{n}"),
                &["system:serviceaccounts", "system:serviceaccounts:tenant"],
            )
        };
        let held: Vec<_> = (0..2)
            .map(|n| {
                l.admit(&create, &as_made_up(n), &sent_by_tenant)
                    .expect("within the share")
            })
            .collect();
        for n in 2..6 {
            let e = l
                .admit(&create, &as_made_up(n), &sent_by_tenant)
                .expect_err("a made-up name is no new share");
            assert_eq!(e.code, 429);
        }
        // A token of another account the tenant made: the same namespace, the same share.
        let minted = named("system:serviceaccount:tenant:minted", &[]);
        assert_eq!(
            admit(&l, &create, &minted)
                .expect_err("same namespace")
                .code,
            429
        );
        // Another namespace's client is served.
        let neighbour = named("system:serviceaccount:other:app", &[]);
        let n = admit(&l, &create, &neighbour).expect("another namespace");
        assert!(n.is_some());
        drop(held);
        assert!(admit(&l, &create, &minted).expect("slots back").is_some());
    }

    /// `system:masters` is exempt as the request acts (kube's rule, after impersonation); an
    /// administrator impersonating someone else is counted, against the administrator.
    #[test]
    fn masters_are_exempt_as_the_request_acts() {
        let l = InFlightLimits::new(0, 2);
        let create = info(Method::POST, "/api/v1/namespaces/a/configmaps");
        let admin = named("admin", &["system:masters", "system:authenticated"]);
        let alice = named("alice", &["system:authenticated"]);
        let as_admin: Vec<_> = (0..4)
            .map(|_| admit(&l, &create, &admin).expect("masters over the limit"))
            .collect();
        drop(as_admin);
        let by_admin = Flow::of(&admin, None);
        let as_alice = l
            .admit(&create, &alice, &by_admin)
            .expect("the admin's share");
        let e = l
            .admit(&create, &alice, &by_admin)
            .expect_err("over the admin's share");
        assert_eq!(e.code, 429);
        // Alice's own share is untouched.
        let own = admit(&l, &create, &alice).expect("alice herself");
        drop((as_alice, own));
    }

    #[test]
    fn limits_by_kind_and_exemptions() {
        let l = InFlightLimits::new(1, 1);
        let bob = user(&["system:authenticated"]);
        let list = info(Method::GET, "/api/v1/configmaps");
        let create = info(Method::POST, "/api/v1/namespaces/a/configmaps");
        let watch = info(Method::GET, "/api/v1/configmaps?watch=1");
        let held = admit(&l, &list, &bob).expect("first read");
        assert!(held.is_some());
        let e = admit(&l, &list, &bob).expect_err("second read");
        assert_eq!((e.code, e.reason), (429, "TooManyRequests"));
        assert_eq!(e.retry_after, Some(1));
        // Other kinds and long-running requests are not held up.
        let w = admit(&l, &create, &bob).expect("a write");
        assert!(w.is_some());
        assert!(admit(&l, &watch, &bob).expect("watch").is_none());
        // system:masters is served over the limit.
        let admin = admit(&l, &list, &user(&["system:masters"])).expect("masters");
        let gauge = |l: &InFlightLimits| {
            let mut out = String::new();
            l.render(&mut out);
            out
        };
        assert!(gauge(&l).contains("turtles_api_inflight_requests{request_kind=\"readOnly\"} 2"));
        assert!(gauge(&l).contains("turtles_api_inflight_requests{request_kind=\"mutating\"} 1"));
        drop((held, admin, w));
        assert!(gauge(&l).contains("turtles_api_inflight_requests{request_kind=\"readOnly\"} 0"));
        assert!(admit(&l, &list, &bob).expect("after release").is_some());
        // 0: unlimited, and still counted.
        let l = InFlightLimits::new(0, 0);
        let _w = admit(&l, &create, &bob).expect("unlimited");
        assert!(gauge(&l).contains("turtles_api_inflight_requests{request_kind=\"mutating\"} 1"));
    }
}
