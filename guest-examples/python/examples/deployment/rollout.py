"""The Deployment controller's pure logic (no API calls): pod-template-hash, the ReplicaSet a
Deployment wants, the rollout's scaling steps and the Deployment's status. Modelled on
kube-controller-manager's pkg/controller/deployment; app.py does the API calls."""

import copy
import json
import math
from datetime import datetime, timedelta, timezone

from turtles_controller import meta as m

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"

# kube's rand.SafeEncodeString alphabet: no vowels (no words), no 0/1/3 (look like letters).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


# ---------------------------------------------------------------------------------------------
# Hash and ReplicaSet shape


def fnv32a(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _drop_nulls(value):
    """Nulls are absent fields (Go's typed structs see `creationTimestamp: null`, which kubectl
    writes into templates, as unset)."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def pod_template_hash(template, collision_count=None):
    """kube's ComputeHash, over canonical JSON instead of Go's spew dump: FNV-32a of the template
    (nulls dropped; plus collisionCount as 4 little-endian bytes when set), its decimal digits
    mapped onto kube's safe alphabet: at most 10 characters of [a-z0-9], e.g. "7d9c6b8f54"."""
    data = json.dumps(_drop_nulls(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += int(collision_count).to_bytes(4, "little")
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in str(fnv32a(data)))


def without_hash(template):
    """The template minus the pod-template-hash label (to compare an RS's with a Deployment's)."""
    t = copy.deepcopy(template or {})
    labels = (t.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(HASH_LABEL, None)
        if not labels:
            del t["metadata"]["labels"]
        if not t["metadata"]:
            del t["metadata"]
    return t


def _normal_template(template):
    t = without_hash(_drop_nulls(template))
    if "metadata" in t and not t["metadata"]:
        del t["metadata"]
    return t


def template_equal(rs_template, deploy_template):
    return _normal_template(rs_template) == _normal_template(deploy_template)


def replicas_of(obj):
    """spec.replicas, defaulting to 1 like kube."""
    r = (obj.get("spec") or {}).get("replicas")
    return 1 if r is None else int(r)


def status_int(obj, field):
    return int((obj.get("status") or {}).get(field) or 0)


def revision(rs):
    try:
        return int(((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def new_replicaset(deploy, hash_, replicas, revision_):
    """The ReplicaSet `<deploy>-<hash>` for the Deployment's current template."""
    meta = deploy["metadata"]
    spec = deploy.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = dict(tmeta.get("labels") or {}, **{HASH_LABEL: hash_})
    selector = copy.deepcopy(spec.get("selector") or {})
    selector["matchLabels"] = dict(selector.get("matchLabels") or {}, **{HASH_LABEL: hash_})
    rs_spec = {"replicas": replicas, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{hash_}",
            "namespace": meta.get("namespace") or "default",
            "labels": dict(tmeta["labels"]),
            "annotations": dict(copied_annotations(deploy), **replicaset_annotations(deploy, revision_)),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": rs_spec,
    }


# kube's deployment controller keeps at most this many characters of old revisions in
# `revision-history` (`maxRevHistoryLengthInChars`).
MAX_REVISION_HISTORY = 2000


def revision_history(history, old_revision):
    """`history` (`deployment.kubernetes.io/revision-history`: comma-separated old revisions of a
    ReplicaSet) with `old_revision` added, as kube's `SetNewReplicaSetAnnotations` adds the
    revision a rolled-back-to ReplicaSet had: the oldest are dropped to stay within
    MAX_REVISION_HISTORY characters; None when even that does not make room (kube leaves it)."""
    old = history.split(",")
    if not old[0]:
        return old_revision
    total = len(history) + len(old_revision) + 1
    start = 0
    while total > MAX_REVISION_HISTORY and start < len(old):
        total -= len(old[start]) + 1
        start += 1
    if total > MAX_REVISION_HISTORY:
        return None
    return ",".join(old[start:] + [old_revision])


# kube's `annotationsToSkip`: what the Deployment's annotations do not carry over to its
# ReplicaSet.
_NOT_COPIED = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
}


def copied_annotations(deploy):
    """The Deployment's annotations its new ReplicaSet carries (kube's
    `copyDeploymentAnnotationsToReplicaSet`): `kubernetes.io/change-cause`, which `kubectl rollout
    history` shows, among them."""
    have = ((deploy.get("metadata") or {}).get("annotations")) or {}
    return {k: v for k, v in have.items() if k not in _NOT_COPIED}


def replicaset_annotations(deploy, revision_):
    replicas = replicas_of(deploy)
    return {
        REVISION: str(revision_),
        DESIRED_REPLICAS: str(replicas),
        MAX_REPLICAS: str(replicas + max_surge(deploy)),
    }


# ---------------------------------------------------------------------------------------------
# Strategy


def strategy_type(deploy):
    return ((deploy.get("spec") or {}).get("strategy") or {}).get("type") or "RollingUpdate"


def _int_or_percent(value, total, round_up, default):
    if value is None:
        value = default
    if isinstance(value, str):
        if value.endswith("%"):
            pct = int(value[:-1])
            x = pct * total / 100
            return math.ceil(x) if round_up else math.floor(x)
        return int(value)
    return int(value)


def _surge_unavailable(deploy):
    ru = ((deploy.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    replicas = replicas_of(deploy)
    surge = _int_or_percent(ru.get("maxSurge"), replicas, True, "25%")
    unavailable = _int_or_percent(ru.get("maxUnavailable"), replicas, False, "25%")
    if surge == 0 and unavailable == 0:
        unavailable = 1  # kube: both zero would never make progress
    return surge, unavailable


def max_surge(deploy):
    return 0 if strategy_type(deploy) != "RollingUpdate" else _surge_unavailable(deploy)[0]


def max_unavailable(deploy):
    """How many of spec.replicas may be unavailable (0 for Recreate), at most spec.replicas."""
    if strategy_type(deploy) != "RollingUpdate" or replicas_of(deploy) == 0:
        return 0
    return min(_surge_unavailable(deploy)[1], replicas_of(deploy))


def plan_rolling(deploy, new_rs, old_rss):
    """kube's rolloutRolling as a list of (rs_name, replicas) scalings for this step.

    First scale the new RS up (within maxSurge over spec.replicas); if that changed nothing, scale
    old ones down (unhealthy replicas first, then keeping spec.replicas - maxUnavailable
    available). Each step waits for the ReplicaSet controller to report progress in RS status."""
    desired = replicas_of(deploy)
    all_rss = [new_rs] + old_rss
    new_spec = replicas_of(new_rs)
    if new_spec > desired:
        return [(new_rs["metadata"]["name"], desired)]
    if new_spec < desired:
        surge, _ = _surge_unavailable(deploy)
        current = sum(replicas_of(rs) for rs in all_rss)
        max_total = desired + surge
        if current < max_total:
            return [(new_rs["metadata"]["name"], new_spec + min(max_total - current, desired - new_spec))]

    old_total = sum(replicas_of(rs) for rs in old_rss)
    if old_total == 0:
        return []
    min_available = desired - max_unavailable(deploy)
    all_total = sum(replicas_of(rs) for rs in all_rss)
    new_unavailable = replicas_of(new_rs) - status_int(new_rs, "availableReplicas")
    max_scaled_down = all_total - min_available - new_unavailable
    if max_scaled_down <= 0:
        return []
    steps = {}
    spec = {rs["metadata"]["name"]: replicas_of(rs) for rs in old_rss}
    # Unhealthy replicas of old RSes first: they add nothing to availability.
    for rs in _oldest_first(old_rss):
        if max_scaled_down <= 0:
            break
        name = rs["metadata"]["name"]
        unhealthy = spec[name] - status_int(rs, "availableReplicas")
        if unhealthy <= 0:
            continue
        down = min(max_scaled_down, unhealthy)
        spec[name] -= down
        steps[name] = spec[name]
        max_scaled_down -= down
    # Then available ones, keeping minAvailable available overall.
    available = sum(status_int(rs, "availableReplicas") for rs in all_rss)
    total_down = available - min_available
    for rs in _oldest_first(old_rss):
        if total_down <= 0:
            break
        name = rs["metadata"]["name"]
        down = min(spec[name], total_down)
        if down <= 0:
            continue
        spec[name] -= down
        steps[name] = spec[name]
        total_down -= down
    return sorted(steps.items())


def plan_recreate(deploy, new_rs, old_rss):
    """kube's rolloutRecreate: scale every old RS to 0, wait until none has pods left, then scale
    the new one to spec.replicas."""
    downs = [(rs["metadata"]["name"], 0) for rs in old_rss if replicas_of(rs) != 0]
    if downs:
        return downs
    if any(status_int(rs, "replicas") > 0 for rs in old_rss):
        return []  # old pods still running
    if replicas_of(new_rs) != replicas_of(deploy):
        return [(new_rs["metadata"]["name"], replicas_of(deploy))]
    return []


def _oldest_first(rss):
    return sorted(
        rss,
        key=lambda rs: (revision(rs), (rs.get("metadata") or {}).get("creationTimestamp") or "",
                        rs["metadata"]["name"]),
    )


def to_clean_up(deploy, old_rss):
    """Old RSes beyond spec.revisionHistoryLimit (default 10) that are fully scaled down."""
    limit = (deploy.get("spec") or {}).get("revisionHistoryLimit")
    limit = 10 if limit is None else int(limit)
    idle = [rs for rs in _oldest_first(old_rss)
            if replicas_of(rs) == 0 and status_int(rs, "replicas") == 0
            and not (rs.get("metadata") or {}).get("deletionTimestamp")]
    excess = len(old_rss) - limit
    return idle[:max(0, excess)]


# ---------------------------------------------------------------------------------------------
# Status


def is_complete(deploy, status):
    """What `kubectl rollout status` waits for (plus observedGeneration)."""
    want = replicas_of(deploy)
    return (
        status.get("updatedReplicas", 0) == want
        and status.get("replicas", 0) == want
        and status.get("availableReplicas", 0) == want
        and status.get("observedGeneration", 0) >= (deploy["metadata"].get("generation") or 0)
    )


def compute_status(deploy, new_rs, old_rss, now, paused=False, created=False):
    """The Deployment's status from its ReplicaSets' status, as kube's calculateStatus +
    syncRolloutStatus. `now` stamps conditions that change."""
    old_status = deploy.get("status") or {}
    all_rss = ([new_rs] if new_rs is not None else []) + list(old_rss)
    want = replicas_of(deploy)
    available = sum(status_int(rs, "availableReplicas") for rs in all_rss)
    status = {
        "observedGeneration": deploy["metadata"].get("generation") or 0,
        "replicas": sum(status_int(rs, "replicas") for rs in all_rss),
        "updatedReplicas": status_int(new_rs, "replicas") if new_rs is not None else 0,
        "readyReplicas": sum(status_int(rs, "readyReplicas") for rs in all_rss),
        "availableReplicas": available,
        "unavailableReplicas": max(0, want - available),
    }
    if old_status.get("collisionCount") is not None:
        status["collisionCount"] = old_status["collisionCount"]

    conditions = list(old_status.get("conditions") or [])
    if available >= want - max_unavailable(deploy):
        conditions = m.set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                                     "Deployment has minimum availability.", now)
    else:
        conditions = m.set_condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                                     "Deployment does not have minimum availability.", now)
    rs_name = new_rs["metadata"]["name"] if new_rs is not None else ""
    # kube's getReplicaFailures: a ReplicaSet's ReplicaFailure (quota exceeded, ...) shows on
    # the Deployment, the new ReplicaSet's first; gone once none has one.
    failure = next((c for rs in all_rss for c in ((rs.get("status") or {}).get("conditions") or [])
                    if c.get("type") == "ReplicaFailure"), None)
    if failure is not None:
        conditions = m.set_condition(conditions, "ReplicaFailure", failure.get("status", "True"),
                                     failure.get("reason", ""), failure.get("message", ""), now)
    else:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    if paused:
        conditions = m.set_condition(conditions, "Progressing", "Unknown", "DeploymentPaused",
                                     "Deployment is paused", now)
        status["conditions"] = conditions
        return status
    current = m.find_condition(conditions, "Progressing")
    if current is not None and current.get("reason") == "DeploymentPaused":
        # kube's checkPausedConditions: resuming restarts the progress deadline.
        conditions = m.set_condition(conditions, "Progressing", "Unknown", "DeploymentResumed",
                                     "Deployment is resumed", now)
    if created:
        conditions = _progressing(conditions, "True", "NewReplicaSetCreated",
                                  f'Created new replica set "{rs_name}"', now)
    deadline = progress_deadline(deploy)
    if deadline is None:
        if new_rs is not None and is_complete(deploy, status):
            conditions = m.set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                                         f'ReplicaSet "{rs_name}" has successfully progressed.', now)
        elif new_rs is not None:
            conditions = m.set_condition(conditions, "Progressing", "True", "ReplicaSetUpdated",
                                         f'ReplicaSet "{rs_name}" is progressing.', now)
        status["conditions"] = conditions
        return status
    # kube's syncRolloutStatus: a rollout that is not complete must make progress (more
    # updated, ready or available replicas, fewer old ones) within progressDeadlineSeconds of
    # the Progressing condition's lastUpdateTime, or it is ProgressDeadlineExceeded.
    current = m.find_condition(conditions, "Progressing")
    complete_before = (
        status["replicas"] == status["updatedReplicas"]
        and current is not None
        and current.get("reason") == "NewReplicaSetAvailable"
    )
    what = f'ReplicaSet "{rs_name}"' if new_rs is not None else f'Deployment "{m.name(deploy)}"'
    if not complete_before:
        if is_complete(deploy, status):
            conditions = m.set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                                         f"{what} has successfully progressed.", now)
        elif made_progress(old_status, status):
            conditions = _progressing(conditions, "True", "ReplicaSetUpdated", f"{what} is progressing.", now)
        elif timed_out(deploy, conditions, now):
            conditions = m.set_condition(conditions, "Progressing", "False", TIMED_OUT,
                                         f"{what} has timed out progressing.", now)
    status["conditions"] = conditions
    return status


# ---------------------------------------------------------------------------------------------
# Progress deadline

TIMED_OUT = "ProgressDeadlineExceeded"
# kube: a progressDeadlineSeconds of MaxInt32 means no deadline.
_NO_DEADLINE = 2**31 - 1


def progress_deadline(deploy):
    """Seconds a rollout may go without progress, or None (the API defaults it to 600)."""
    s = (deploy.get("spec") or {}).get("progressDeadlineSeconds")
    if not isinstance(s, int) or isinstance(s, bool) or s == _NO_DEADLINE:
        return None
    return s


def _time(t):
    """An RFC 3339 time in UTC (`2026-01-01T00:00:00Z`), or None. Not with `strptime`: CPython
    imports `_strptime` lazily from C, which componentize-py's bundle does not see, and in the
    component every call raised ModuleNotFoundError."""
    if not isinstance(t, str) or not t.endswith("Z"):
        return None
    try:
        return datetime.fromisoformat(t[:-1]).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _progressing(conditions, status, reason, message, now):
    """The Progressing condition set with its lastUpdateTime at `now` even when only that
    changes (kube updates it on every sign of progress); lastTransitionTime kept while the
    status stays."""
    old = m.find_condition(conditions, "Progressing")
    new = {"type": "Progressing", "status": status, "reason": reason, "message": message,
           "lastUpdateTime": now,
           "lastTransitionTime": old.get("lastTransitionTime", now)
           if old is not None and old.get("status") == status else now}
    out = [new if c.get("type") == "Progressing" else c for c in conditions]
    if old is None:
        out.append(new)
    return out


def made_progress(old_status, status):
    """kube's DeploymentProgressing: more updated, ready or available replicas, or fewer old."""
    def old_replicas(s):
        return s.get("replicas", 0) - s.get("updatedReplicas", 0)
    return (
        status["updatedReplicas"] > old_status.get("updatedReplicas", 0)
        or status["readyReplicas"] > old_status.get("readyReplicas", 0)
        or old_replicas(status) < old_replicas(old_status)
        or status["availableReplicas"] > old_status.get("availableReplicas", 0)
    )


def timed_out(deploy, conditions, now):
    """kube's DeploymentTimedOut: already so, or no progress since the deadline passed."""
    c = m.find_condition(conditions, "Progressing")
    deadline = progress_deadline(deploy)
    if c is None or deadline is None:
        return False
    if c.get("reason") == TIMED_OUT:
        return True
    since, at = _time(c.get("lastUpdateTime")), _time(now)
    return since is not None and at is not None and since + timedelta(seconds=deadline) < at


def deadline_check_in(deploy, status, now):
    """Seconds until the rollout's progress deadline should be checked again (kube's
    requeueStuckDeployment), or None when nothing waits on it."""
    deadline = progress_deadline(deploy)
    c = m.find_condition(status.get("conditions"), "Progressing")
    if deadline is None or c is None or c.get("reason") in (TIMED_OUT, "NewReplicaSetAvailable"):
        return None
    if is_complete(deploy, status) or c.get("status") == "Unknown" and c.get("reason") == "DeploymentPaused":
        return None
    since, at = _time(c.get("lastUpdateTime")), _time(now)
    if since is None or at is None:
        return None
    left = (since + timedelta(seconds=deadline) - at).total_seconds()
    return 0 if left < 1 else left + 1


# ---------------------------------------------------------------------------------------------
# Selector


def selector_matches(selector, labels):
    """Whether a metav1.LabelSelector selects `labels`; an absent or empty selector selects
    nothing here (the API refuses a Deployment with one)."""
    if not isinstance(selector, dict):
        return False
    match = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not match and not exprs:
        return False
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for e in exprs:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True
