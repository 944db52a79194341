//! Graceful deletion of Pods: kube's `rest.BeforeDelete` with the Pod strategy's
//! `CheckGracefulDelete`. A DELETE of a Pod that runs on a node marks it (`deletionTimestamp` in
//! the future by the grace period, `deletionGracePeriodSeconds`) instead of removing it; the
//! node's kubelet stops its containers and deletes it again with a grace period of 0. A Pod that
//! is not scheduled, or has finished, goes at once.

use chrono::{DateTime, NaiveDate, SecondsFormat, TimeDelta, Utc};
use serde_json::{Map, Value};

/// The longest period a deletion timestamp moves by: kube's, whose `time.Duration` (int64
/// nanoseconds) holds at most this many seconds (a longer period overflows there).
const MAX_SHIFT: i64 = i64::MAX / 1_000_000_000;

/// What a DELETE does to a Pod, before finalizers are looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Graceful {
    /// Not a graceful deletion: the object goes (or waits for its finalizers) as any kind does.
    No,
    /// A graceful deletion is under way and this request does not shorten it: the object is
    /// answered as it is and nothing changes (not even finalizers, as in kube).
    Pending,
    /// Mark the Pod with these: `deletionTimestamp`, `deletionGracePeriodSeconds` (and a
    /// `generation` bump on a first mark). A period of 0 removes it at once when no finalizer
    /// holds it.
    Mark {
        timestamp: String,
        period: i64,
        first: bool,
    },
}

/// kube's `BeforeDelete` for a Pod: `requested` is the DELETE's `gracePeriodSeconds`.
pub fn before_delete(pod: &Value, requested: Option<i64>, now: DateTime<Utc>) -> Graceful {
    // Negative periods count as 1 second on the delete path.
    let requested = requested.map(|p| if p < 0 { 1 } else { p });
    let meta = pod.get("metadata").and_then(Value::as_object);
    let field = |k: &str| meta.and_then(|m| m.get(k));
    if let Some(ts) = field("deletionTimestamp").and_then(Value::as_str) {
        // Already going: a shorter period may be asked for, nothing else changes.
        let current = match field("deletionGracePeriodSeconds").and_then(Value::as_i64) {
            None | Some(0) => return Graceful::No,
            Some(p) if p < 0 => 1,
            Some(p) => p,
        };
        let Some(period) = requested else {
            return Graceful::Pending;
        };
        if period >= current {
            return Graceful::Pending;
        }
        let Ok(at) = DateTime::parse_from_rfc3339(ts) else {
            return Graceful::No;
        };
        // Both capped as the timestamp was: the difference is what the first mark added.
        let at = shift(
            at.with_timezone(&Utc),
            period.min(MAX_SHIFT) - current.min(MAX_SHIFT),
        );
        return Graceful::Mark {
            timestamp: format(at),
            period,
            first: false,
        };
    }
    // The Pod strategy's CheckGracefulDelete.
    let mut period = requested.unwrap_or_else(|| {
        pod.pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    });
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() || matches!(phase, "Failed" | "Succeeded") {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    Graceful::Mark {
        timestamp: format(shift(now, period.min(MAX_SHIFT))),
        period,
        first: true,
    }
}

/// `at` moved by `seconds`, kept within the years a `metav1.Time` can carry (Go's JSON encoding
/// of a time refuses years outside 0 to 9999): any period a client sends gives a timestamp every
/// client can read, never an overflow.
pub fn shift(at: DateTime<Utc>, seconds: i64) -> DateTime<Utc> {
    let (min, max) = bounds();
    TimeDelta::try_seconds(seconds)
        .and_then(|d| at.checked_add_signed(d))
        .unwrap_or(if seconds < 0 { min } else { max })
        .clamp(min, max)
}

/// The first and last second of years 1 to 9999.
fn bounds() -> (DateTime<Utc>, DateTime<Utc>) {
    let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default();
    let min = day(1, 1, 1).and_hms_opt(0, 0, 0).unwrap_or_default();
    let max = day(9999, 12, 31)
        .and_hms_opt(23, 59, 59)
        .unwrap_or_default();
    (min.and_utc(), max.and_utc())
}

/// Write a [`Graceful::Mark`] into an object's metadata.
pub fn mark(meta: &mut Map<String, Value>, timestamp: &str, period: i64, first: bool) {
    meta.insert("deletionTimestamp".into(), Value::String(timestamp.into()));
    meta.insert("deletionGracePeriodSeconds".into(), Value::from(period));
    if first {
        if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
            if g > 0 {
                meta.insert("generation".into(), Value::from(g + 1));
            }
        }
    }
}

fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-05T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn mark_of(g: Graceful) -> (String, i64, bool) {
        match g {
            Graceful::Mark {
                timestamp,
                period,
                first,
            } => (timestamp, period, first),
            other => panic!("not a mark: {other:?}"),
        }
    }

    #[test]
    fn a_bound_pod_gets_its_own_grace_period_or_the_requested_one() {
        let pod = json!({"metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30},
            "status": {"phase": "Running"}});
        assert_eq!(
            mark_of(before_delete(&pod, None, now())),
            ("2026-12-05T10:00:30Z".into(), 30, true)
        );
        assert_eq!(
            mark_of(before_delete(&pod, Some(5), now())),
            ("2026-12-05T10:00:05Z".into(), 5, true)
        );
        assert_eq!(mark_of(before_delete(&pod, Some(0), now())).1, 0);
        // Negative: one second.
        assert_eq!(mark_of(before_delete(&pod, Some(-3), now())).1, 1);
    }

    #[test]
    fn unscheduled_or_finished_pods_go_at_once() {
        let unscheduled = json!({"spec": {"terminationGracePeriodSeconds": 30}});
        assert_eq!(mark_of(before_delete(&unscheduled, Some(10), now())).1, 0);
        for phase in ["Succeeded", "Failed"] {
            let done = json!({"spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30},
                "status": {"phase": phase}});
            assert_eq!(mark_of(before_delete(&done, None, now())).1, 0);
        }
    }

    #[test]
    fn a_pending_deletion_may_only_be_shortened() {
        let going = json!({"metadata": {"deletionTimestamp": "2026-12-05T10:00:30Z",
                "deletionGracePeriodSeconds": 30},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}});
        assert_eq!(before_delete(&going, None, now()), Graceful::Pending);
        assert_eq!(before_delete(&going, Some(30), now()), Graceful::Pending);
        assert_eq!(before_delete(&going, Some(60), now()), Graceful::Pending);
        // Shorter: the timestamp moves back by the difference.
        assert_eq!(
            mark_of(before_delete(&going, Some(10), now())),
            ("2026-12-05T10:00:10Z".into(), 10, false)
        );
        assert_eq!(
            mark_of(before_delete(&going, Some(0), now())),
            ("2026-12-05T10:00:00Z".into(), 0, false)
        );
        // Marked with no grace (finalizers): a plain delete again.
        let zero = json!({"metadata": {"deletionTimestamp": "2026-12-05T10:00:00Z",
            "deletionGracePeriodSeconds": 0}, "spec": {"nodeName": "n1"}});
        assert_eq!(before_delete(&zero, Some(5), now()), Graceful::No);
    }

    #[test]
    fn any_period_gives_a_timestamp_clients_can_read() {
        let pod = json!({"spec": {"nodeName": "n1"}});
        // At most the ~292 years kube's time.Duration holds.
        let (at, period, _) = mark_of(before_delete(&pod, Some(i64::MAX), now()));
        assert_eq!((at.as_str(), period), ("2319-03-17T09:47:16Z", i64::MAX));
        // Shortened from the largest period: now plus the new one.
        let going = json!({"metadata": {"deletionTimestamp": at,
            "deletionGracePeriodSeconds": i64::MAX}, "spec": {"nodeName": "n1"}});
        let (at, period, _) = mark_of(before_delete(&going, Some(1), now()));
        assert_eq!((at.as_str(), period), ("2026-12-05T10:00:01Z", 1));
        // Stored timestamps far out are kept within what clients read.
        assert_eq!(
            shift(now(), 1 << 40),
            DateTime::parse_from_rfc3339("9999-12-31T23:59:59Z").unwrap()
        );
        assert_eq!(
            shift(now(), i64::MIN),
            DateTime::parse_from_rfc3339("0001-01-01T00:00:00Z").unwrap()
        );
    }

    #[test]
    fn a_first_mark_bumps_a_kept_generation() {
        let mut m = json!({"generation": 2}).as_object().unwrap().clone();
        mark(&mut m, "2026-12-05T10:00:30Z", 30, true);
        assert_eq!(m["generation"], 2 + 1);
        assert_eq!(m["deletionGracePeriodSeconds"], 30);
        mark(&mut m, "2026-12-05T10:00:10Z", 10, false);
        assert_eq!(m["generation"], 3);
        let mut none = Map::new();
        mark(&mut none, "2026-12-05T10:00:30Z", 30, true);
        assert!(!none.contains_key("generation"));
    }
}
