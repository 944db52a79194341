//! The pure part of kube's HPA controller (`pkg/controller/podautoscaler`, kube 1.34): its
//! conditions, the replica calculator for resource metrics, and the normalization of a
//! recommendation (stabilization windows, scale rate limits, min and max). No I/O: times are
//! Unix seconds handed in.

use turtles_controller::{json, Value};

/// kube's `--horizontal-pod-autoscaler-downscale-stabilization` (5 minutes).
pub const DOWNSCALE_STABILIZATION_SECONDS: i64 = 300;
/// kube's `--horizontal-pod-autoscaler-tolerance`.
pub const TOLERANCE: f64 = 0.1;
/// kube's `--horizontal-pod-autoscaler-cpu-initialization-period` (5 minutes).
pub const CPU_INITIALIZATION_SECONDS: i64 = 300;
/// kube's `--horizontal-pod-autoscaler-initial-readiness-delay` (30 s).
pub const INITIAL_READINESS_DELAY_SECONDS: i64 = 30;

/// kube's `setConditionInList`: the condition is updated in place (or appended), and its
/// `lastTransitionTime` moves only when its status changes.
pub fn set_condition(
    status: &mut Value,
    ty: &str,
    state: &str,
    reason: &str,
    message: &str,
    now: &str,
) {
    if !status.is_object() {
        *status = json!({});
    }
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(list) = status["conditions"].as_array_mut() else {
        return;
    };
    let at = match list.iter().position(|c| c["type"] == ty) {
        Some(i) => i,
        None => {
            list.push(json!({"type": ty}));
            list.len() - 1
        }
    };
    let c = &mut list[at];
    let transition = if c["status"] != state {
        Value::String(now.to_owned())
    } else {
        c["lastTransitionTime"].clone()
    };
    // kube's field order: type, status, lastTransitionTime, reason, message.
    *c = json!({"type": ty, "status": state, "lastTransitionTime": transition,
                "reason": reason, "message": message});
}

/// kube's `setStatus`: the counts and metrics are new, the conditions and `lastScaleTime` carried
/// over (`lastScaleTime` set now on a rescale).
pub fn set_status(
    status: &mut Value,
    current: i64,
    desired: i64,
    metrics: Option<Vec<Value>>,
    rescaled: bool,
    now: &str,
) {
    let conditions = status.get("conditions").cloned();
    let mut last_scale = status.get("lastScaleTime").cloned();
    if rescaled {
        last_scale = Some(Value::String(now.to_owned()));
    }
    let mut next = json!({});
    if let Some(t) = last_scale.filter(|t| !t.is_null()) {
        next["lastScaleTime"] = t;
    }
    if current != 0 {
        next["currentReplicas"] = json!(current);
    }
    next["desiredReplicas"] = json!(desired);
    next["currentMetrics"] = metrics.map_or(Value::Null, Value::Array);
    if let Some(c) = conditions.filter(|c| c.as_array().is_some_and(|l| !l.is_empty())) {
        next["conditions"] = c;
    }
    *status = next;
}

// ---------------------------------------------------------------------------------------------
// The replica calculator (resource metrics)

/// One Pod's metric (milli-units) with when and over which window it was measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodMetric {
    pub value: i64,
    pub timestamp: i64,
    pub window: i64,
}

/// A Pod as the calculator sees it.
#[derive(Debug, Clone)]
pub struct PodInfo {
    pub name: String,
    pub deleting: bool,
    pub phase: String,
    /// The Ready condition: (status, lastTransitionTime).
    pub ready: Option<(String, i64)>,
    pub start_time: Option<i64>,
    /// The request (milli-units) of the resource, or the container lacking one.
    pub request: Result<i64, String>,
}

/// kube's `groupPods`: how many are ready, and which are unready, missing a metric or ignored.
pub fn group_pods(
    pods: &[PodInfo],
    metrics: &std::collections::BTreeMap<String, PodMetric>,
    cpu: bool,
    now: i64,
) -> (usize, Vec<String>, Vec<String>, Vec<String>) {
    let (mut ready, mut unready, mut missing, mut ignored) = (0, vec![], vec![], vec![]);
    for pod in pods {
        if pod.deleting || pod.phase == "Failed" {
            ignored.push(pod.name.clone());
            continue;
        }
        if pod.phase == "Pending" {
            unready.push(pod.name.clone());
            continue;
        }
        let Some(metric) = metrics.get(&pod.name) else {
            missing.push(pod.name.clone());
            continue;
        };
        if cpu {
            let not_ready = match (&pod.ready, pod.start_time) {
                (Some((status, transition)), Some(start)) => {
                    if start + CPU_INITIALIZATION_SECONDS > now {
                        status == "False" || metric.timestamp < transition + metric.window
                    } else {
                        status == "False" && start + INITIAL_READINESS_DELAY_SECONDS > *transition
                    }
                }
                _ => true,
            };
            if not_ready {
                unready.push(pod.name.clone());
                continue;
            }
        }
        ready += 1;
    }
    (ready, unready, missing, ignored)
}

fn within_tolerance(ratio: f64) -> bool {
    ((1.0 - TOLERANCE)..=(1.0 + TOLERANCE)).contains(&ratio)
}

/// What the calculator found: the proposal and the current value for the metric's status.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub replicas: i64,
    /// Utilization in percent of the request (utilization targets only).
    pub utilization: Option<i64>,
    /// The average value, milli-units.
    pub average: i64,
}

/// The target of a resource metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// `averageUtilization` percent of the request.
    Utilization(i64),
    /// `averageValue`, milli-units.
    AverageValue(i64),
}

/// kube's `GetResourceReplicas` (a utilization target) and `GetRawResourceReplicas` /
/// `calcPlainMetricReplicas` (an average value), from the Pods the selector picks and their
/// metrics.
pub fn resource_replicas(
    current: i64,
    target: Target,
    resource: &str,
    pods: &[PodInfo],
    mut metrics: std::collections::BTreeMap<String, PodMetric>,
    now: i64,
) -> Result<Proposal, String> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let (ready, unready, missing, ignored) = group_pods(pods, &metrics, resource == "cpu", now);
    for name in ignored.iter().chain(&unready) {
        metrics.remove(name);
    }
    if metrics.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let mut requests = std::collections::BTreeMap::new();
    if let Target::Utilization(_) = target {
        for pod in pods {
            requests.insert(pod.name.clone(), pod.request.clone()?);
        }
    }
    // The ratio of usage to target, the utilization and the raw average.
    let ratio_of = |metrics: &std::collections::BTreeMap<String, PodMetric>| -> Result<(f64, Option<i64>, i64), String> {
        match target {
            Target::Utilization(t) => {
                let (mut used, mut requested, mut n) = (0i64, 0i64, 0i64);
                for (name, m) in metrics {
                    let Some(r) = requests.get(name) else { continue };
                    used = used.saturating_add(m.value);
                    requested = requested.saturating_add(*r);
                    n += 1;
                }
                if requested == 0 {
                    return Err("no metrics returned matched known pods".into());
                }
                let utilization = used.saturating_mul(100) / requested;
                Ok((utilization as f64 / t as f64, Some(utilization), used / n.max(1)))
            }
            Target::AverageValue(t) => {
                let total = metrics
                    .values()
                    .fold(0i64, |t, m| t.saturating_add(m.value));
                let average = total / metrics.len().max(1) as i64;
                Ok((average as f64 / t as f64, None, average))
            }
        }
    };
    let (ratio, utilization, average) = ratio_of(&metrics)?;
    let proposal = |replicas| Proposal {
        replicas,
        utilization,
        average,
    };
    let scale_up_with_unready = !unready.is_empty() && ratio > 1.0;
    if !scale_up_with_unready && missing.is_empty() {
        if within_tolerance(ratio) {
            return Ok(proposal(current));
        }
        return Ok(proposal((ratio * ready as f64).ceil() as i64));
    }
    let zero = PodMetric {
        value: 0,
        timestamp: now,
        window: 0,
    };
    // At a ratio of exactly 1 the missing Pods are left out (kube fills them in only for a
    // scale-down or a scale-up).
    if !missing.is_empty() && ratio != 1.0 {
        for name in &missing {
            let value = if ratio < 1.0 {
                // On a scale-down, a Pod without a metric counts as using its target.
                match target {
                    Target::Utilization(t) => {
                        requests.get(name).copied().unwrap_or(0) * t.max(100) / 100
                    }
                    Target::AverageValue(t) => t,
                }
            } else {
                0
            };
            metrics.insert(name.clone(), PodMetric { value, ..zero });
        }
    }
    if scale_up_with_unready {
        for name in &unready {
            metrics.insert(name.clone(), zero);
        }
    }
    let (new_ratio, _, _) = ratio_of(&metrics)?;
    if within_tolerance(new_ratio)
        || (ratio < 1.0 && new_ratio > 1.0)
        || (ratio > 1.0 && new_ratio < 1.0)
    {
        return Ok(proposal(current));
    }
    let replicas = (new_ratio * metrics.len() as f64).ceil() as i64;
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return Ok(proposal(current));
    }
    Ok(proposal(replicas))
}

// ---------------------------------------------------------------------------------------------
// Normalization

/// A recommendation, kept per HPA for the stabilization windows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recommendation {
    pub replicas: i64,
    pub at: i64,
}

/// A rescale, kept per HPA for the scaling policies' periods.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScaleEvent {
    pub change: i64,
    pub at: i64,
    pub outdated: bool,
}

/// The memory kube's controller keeps per HPA.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    pub recommendations: Vec<Recommendation>,
    pub ups: Vec<ScaleEvent>,
    pub downs: Vec<ScaleEvent>,
    /// When it was last synced (Unix milliseconds).
    pub last_sync: Option<i64>,
    /// The Pods it last selected (its target's scale selector), for `AmbiguousSelector`.
    pub selector: Option<Value>,
}

/// What normalization decided, with the conditions it sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    pub replicas: i64,
    /// AbleToScale True with this reason and message.
    pub able: (&'static str, &'static str),
    /// ScalingLimited: (status, reason, message).
    pub limited: (&'static str, &'static str, &'static str),
}

const READY_FOR_NEW_SCALE: (&str, &str) =
    ("ReadyForNewScale", "recommended size matches current size");
const DOWN_STABILIZED: (&str, &str) = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const UP_STABILIZED: (&str, &str) = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const WITHIN_RANGE: (&str, &str) = (
    "DesiredWithinRange",
    "the desired count is within the acceptable range",
);
const SCALE_UP_LIMIT: (&str, &str) = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
);
const SCALE_DOWN_LIMIT: (&str, &str) = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);
const TOO_MANY: (&str, &str) = (
    "TooManyReplicas",
    "the desired replica count is more than the maximum replica count",
);
const TOO_FEW: (&str, &str) = (
    "TooFewReplicas",
    "the desired replica count is less than the minimum replica count",
);

fn limited(
    result: i64,
    stabilized: i64,
    why: (&'static str, &'static str),
) -> (&'static str, &'static str, &'static str) {
    let status = if result == stabilized {
        "False"
    } else {
        "True"
    };
    (status, why.0, why.1)
}

/// kube's `recordInitialRecommendation`.
pub fn record_initial(memory: &mut Memory, current: i64, now: i64) {
    if memory.recommendations.is_empty() {
        memory.recommendations.push(Recommendation {
            replicas: current,
            at: now,
        });
    }
}

/// Keep `replicas` as this sync's recommendation: in place of the oldest one past `cutoff`
/// (kube reuses the last such slot it finds), else appended.
fn remember(memory: &mut Memory, old: Option<usize>, replicas: i64, now: i64) {
    let rec = Recommendation { replicas, at: now };
    match old {
        Some(i) => memory.recommendations[i] = rec,
        None => memory.recommendations.push(rec),
    }
}

/// kube's `normalizeDesiredReplicas`: an HPA without `behavior`.
pub fn normalize(
    memory: &mut Memory,
    current: i64,
    proposal: i64,
    min: i64,
    max: i64,
    now: i64,
) -> Normalized {
    // stabilizeRecommendation: the highest recommendation of the last 5 minutes.
    let cutoff = now - DOWNSCALE_STABILIZATION_SECONDS;
    let mut stabilized = proposal;
    let mut old = None;
    for (i, r) in memory.recommendations.iter().enumerate() {
        if r.at < cutoff {
            old = Some(i);
        } else if r.replicas > stabilized {
            stabilized = r.replicas;
        }
    }
    remember(memory, old, proposal, now);
    let able = if stabilized != proposal {
        DOWN_STABILIZED
    } else {
        READY_FOR_NEW_SCALE
    };
    // convertDesiredReplicasWithRules.
    let scale_up_limit = (2 * current).max(4);
    let (max_allowed, why_max) = if max > scale_up_limit {
        (scale_up_limit, SCALE_UP_LIMIT)
    } else {
        (max, TOO_MANY)
    };
    let (replicas, why) = if stabilized < min {
        (min, TOO_FEW)
    } else if stabilized > max_allowed {
        (max_allowed, why_max)
    } else {
        (stabilized, WITHIN_RANGE)
    };
    Normalized {
        replicas,
        able,
        limited: limited(replicas, stabilized, why),
    }
}

/// One direction's rules from `spec.behavior` (defaults already applied by the API).
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    pub window: i64,
    pub select: String,
    /// (type, value, periodSeconds).
    pub policies: Vec<(String, i64, i64)>,
}

impl Rules {
    /// The rules of `behavior.scaleUp` / `scaleDown`; a scale-down window left unset is kube's
    /// flag value (5 minutes).
    pub fn from(rules: &Value, default_window: i64) -> Self {
        Rules {
            window: rules["stabilizationWindowSeconds"]
                .as_i64()
                .unwrap_or(default_window),
            select: rules["selectPolicy"].as_str().unwrap_or("Max").to_owned(),
            policies: rules["policies"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        p["type"].as_str().unwrap_or("").to_owned(),
                        p["value"].as_i64().unwrap_or(0),
                        p["periodSeconds"].as_i64().unwrap_or(0),
                    )
                })
                .collect(),
        }
    }
}

fn change_in_period(period: i64, events: &[ScaleEvent], now: i64) -> i64 {
    events
        .iter()
        .filter(|e| e.at > now - period)
        .map(|e| e.change)
        .sum()
}

/// kube's `calculateScaleUpLimitWithScalingRules` and `calculateScaleDownLimitWithBehaviors`.
fn rate_limit(up: bool, current: i64, memory: &Memory, rules: &Rules, now: i64) -> i64 {
    if rules.select == "Disabled" {
        return current;
    }
    // For a scale-up the "Min" policy takes the smallest proposal; for a scale-down the largest.
    let smallest = (rules.select == "Min") == up;
    let mut result = if smallest { i64::MAX } else { i64::MIN };
    for (ty, value, period) in &rules.policies {
        let added = change_in_period(*period, &memory.ups, now);
        let removed = change_in_period(*period, &memory.downs, now);
        let start = current - added + removed;
        let proposed = match (ty.as_str(), up) {
            ("Pods", true) => start + value,
            ("Pods", false) => start - value,
            ("Percent", true) => (start as f64 * (1.0 + *value as f64 / 100.0)).ceil() as i64,
            ("Percent", false) => (start as f64 * (1.0 - *value as f64 / 100.0)) as i64,
            _ => continue,
        };
        result = if smallest {
            result.min(proposed)
        } else {
            result.max(proposed)
        };
    }
    result
}

/// kube's `normalizeDesiredReplicasWithBehaviors`.
#[allow(clippy::too_many_arguments)]
pub fn normalize_with_behavior(
    memory: &mut Memory,
    up: &Rules,
    down: &Rules,
    current: i64,
    proposal: i64,
    min: i64,
    max: i64,
    now: i64,
) -> Normalized {
    // stabilizeRecommendationWithBehaviors.
    let (up_cutoff, down_cutoff) = (now - up.window, now - down.window);
    let (mut up_rec, mut down_rec) = (proposal, proposal);
    let mut old = None;
    for (i, r) in memory.recommendations.iter().enumerate() {
        if r.at > up_cutoff {
            up_rec = up_rec.min(r.replicas);
        }
        if r.at > down_cutoff {
            down_rec = down_rec.max(r.replicas);
        }
        if r.at < up_cutoff && r.at < down_cutoff {
            old = Some(i);
        }
    }
    let stabilized = current.max(up_rec).min(down_rec);
    remember(memory, old, proposal, now);
    let able = if stabilized == proposal {
        READY_FOR_NEW_SCALE
    } else if proposal >= current {
        UP_STABILIZED
    } else {
        DOWN_STABILIZED
    };
    // convertDesiredReplicasWithBehaviorRate.
    let (replicas, why) = if stabilized > current {
        let limit = rate_limit(true, current, memory, up, now).max(current);
        let (allowed, why) = if max > limit {
            (limit, SCALE_UP_LIMIT)
        } else {
            (max, TOO_MANY)
        };
        if stabilized > allowed {
            (allowed, why)
        } else {
            (stabilized, WITHIN_RANGE)
        }
    } else if stabilized < current {
        let limit = rate_limit(false, current, memory, down, now).min(current);
        let (allowed, why) = if min < limit {
            (limit, SCALE_DOWN_LIMIT)
        } else {
            (min, TOO_FEW)
        };
        if stabilized < allowed {
            (allowed, why)
        } else {
            (stabilized, WITHIN_RANGE)
        }
    } else {
        (stabilized, WITHIN_RANGE)
    };
    Normalized {
        replicas,
        able,
        limited: limited(replicas, stabilized, why),
    }
}

/// kube's `storeScaleEvent` (HPAs with `behavior` only): the change is kept for the longest
/// policy period of its direction, reusing an outdated slot.
pub fn store_scale_event(
    memory: &mut Memory,
    up: &Rules,
    down: &Rules,
    previous: i64,
    new: i64,
    now: i64,
) {
    let (events, rules, change) = if new > previous {
        (&mut memory.ups, up, new - previous)
    } else {
        (&mut memory.downs, down, previous - new)
    };
    let longest = rules.policies.iter().map(|p| p.2).max().unwrap_or(0);
    let cutoff = now - longest;
    let mut slot = None;
    for (i, e) in events.iter_mut().enumerate() {
        if e.at < cutoff {
            e.outdated = true;
        }
        if e.outdated {
            slot = Some(i);
        }
    }
    let event = ScaleEvent {
        change,
        at: now,
        outdated: false,
    };
    match slot {
        Some(i) => events[i] = event,
        None => events.push(event),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn conditions_keep_their_order_and_transition_times() {
        let mut status = json!({});
        set_condition(
            &mut status,
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "m",
            "t1",
        );
        set_condition(
            &mut status,
            "ScalingActive",
            "False",
            "FailedGetResourceMetric",
            "x",
            "t1",
        );
        set_condition(
            &mut status,
            "AbleToScale",
            "True",
            "SucceededRescale",
            "n",
            "t2",
        );
        set_condition(
            &mut status,
            "ScalingActive",
            "True",
            "ValidMetricFound",
            "y",
            "t3",
        );
        let c = &status["conditions"];
        assert_eq!(c[0]["type"], "AbleToScale");
        assert_eq!(c[0]["lastTransitionTime"], "t1");
        assert_eq!(c[0]["reason"], "SucceededRescale");
        assert_eq!(c[1]["lastTransitionTime"], "t3");
        set_status(&mut status, 3, 5, None, true, "t4");
        assert_eq!(status["lastScaleTime"], "t4");
        assert_eq!(status["currentMetrics"], Value::Null);
        assert_eq!(status["conditions"].as_array().unwrap().len(), 2);
    }

    fn pod(name: &str, request: i64) -> PodInfo {
        PodInfo {
            name: name.into(),
            deleting: false,
            phase: "Running".into(),
            ready: Some(("True".into(), 0)),
            start_time: Some(0),
            request: Ok(request),
        }
    }

    fn metric(value: i64) -> PodMetric {
        PodMetric {
            value,
            timestamp: 10_000,
            window: 30,
        }
    }

    #[test]
    fn utilization_scales_by_its_ratio_within_the_tolerance() {
        let pods = vec![pod("a", 100), pod("b", 100)];
        let now = 10_000;
        let m = |a, b| BTreeMap::from([("a".to_owned(), metric(a)), ("b".to_owned(), metric(b))]);
        // 90% against 50%: ceil(1.8 * 2) = 4.
        let p =
            resource_replicas(2, Target::Utilization(50), "cpu", &pods, m(90, 90), now).unwrap();
        assert_eq!((p.replicas, p.utilization, p.average), (4, Some(90), 90));
        // 52% against 50% is within 10%: no change.
        let p =
            resource_replicas(2, Target::Utilization(50), "cpu", &pods, m(52, 52), now).unwrap();
        assert_eq!(p.replicas, 2);
        // A Pod without a metric on a scale-up counts as idle: (90 + 0) / 200 = 45% -> none.
        let one = BTreeMap::from([("a".to_owned(), metric(90))]);
        let p = resource_replicas(2, Target::Utilization(50), "cpu", &pods, one, now).unwrap();
        assert_eq!(p.replicas, 2);
        // Exactly at the target with a Pod missing: no change (nothing filled in).
        let at_target = BTreeMap::from([("a".to_owned(), metric(50))]);
        let p =
            resource_replicas(2, Target::Utilization(50), "cpu", &pods, at_target, now).unwrap();
        assert_eq!(p.replicas, 2);
        let mut missing = pods.clone();
        missing[1].request = Err("missing request for cpu in container c of Pod b".into());
        assert_eq!(
            resource_replicas(2, Target::Utilization(50), "cpu", &missing, m(1, 1), now)
                .unwrap_err(),
            "missing request for cpu in container c of Pod b"
        );
        assert_eq!(
            resource_replicas(2, Target::Utilization(50), "cpu", &[], m(1, 1), now).unwrap_err(),
            "no pods returned by selector while calculating replica count"
        );
        // An average value target: 300m each against 100m.
        let p = resource_replicas(
            2,
            Target::AverageValue(100),
            "memory",
            &pods,
            m(300, 300),
            now,
        )
        .unwrap();
        assert_eq!((p.replicas, p.utilization, p.average), (6, None, 300));
    }

    #[test]
    fn without_behavior_a_scale_down_waits_five_minutes_and_a_scale_up_is_capped() {
        let mut mem = Memory::default();
        record_initial(&mut mem, 4, 0);
        let n = normalize(&mut mem, 4, 1, 1, 10, 10);
        assert_eq!(n.replicas, 4);
        assert_eq!(n.able.0, "ScaleDownStabilized");
        assert_eq!(n.limited.0, "False");
        let n = normalize(&mut mem, 4, 1, 1, 10, 400);
        assert_eq!((n.replicas, n.able.0), (1, "ReadyForNewScale"));
        let n = normalize(&mut mem, 2, 50, 1, 10, 800);
        assert_eq!(
            (n.replicas, n.limited),
            (4, ("True", SCALE_UP_LIMIT.0, SCALE_UP_LIMIT.1))
        );
        let n = normalize(&mut mem, 8, 50, 1, 10, 900);
        assert_eq!((n.replicas, n.limited.1), (10, "TooManyReplicas"));
    }

    #[test]
    fn behavior_policies_limit_the_rate() {
        let up = Rules::from(
            &json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                             {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
            0,
        );
        let down = Rules::from(
            &json!({"selectPolicy": "Max", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}),
            DOWNSCALE_STABILIZATION_SECONDS,
        );
        let mut mem = Memory::default();
        // Up from 2: at most max(2 + 4, 2 * 2) = 6.
        let n = normalize_with_behavior(&mut mem, &up, &down, 2, 20, 1, 100, 1000);
        assert_eq!((n.replicas, n.limited.1), (6, "ScaleUpLimit"));
        store_scale_event(&mut mem, &up, &down, 2, 6, 1000);
        // Within the same 15 s the period started at 2 again: still at most 6.
        let n = normalize_with_behavior(&mut mem, &up, &down, 6, 20, 1, 100, 1005);
        assert_eq!(n.replicas, 6);
        // Down is held by the 5-minute window (recommendations of 20 in it).
        let n = normalize_with_behavior(&mut mem, &up, &down, 6, 1, 1, 100, 1100);
        assert_eq!((n.replicas, n.able.0), (6, "ScaleDownStabilized"));
        // Past the window, one Pod a minute.
        let n = normalize_with_behavior(&mut mem, &up, &down, 6, 1, 1, 100, 1500);
        assert_eq!((n.replicas, n.limited.1), (5, "ScaleDownLimit"));
    }
}
