"""`deployment`: the apps/v1 Deployment controller, after kube-controller-manager's (simplified).

For each Deployment it keeps a ReplicaSet `<name>-<pod-template-hash>` for the current pod
template, rolls from older ReplicaSets to it (RollingUpdate with maxSurge/maxUnavailable, or
Recreate), and writes the Deployment's status from the ReplicaSets' status, which the ReplicaSet
controller maintains. The pure logic is in rollout.py; this file reads the cache and calls the API.
See docs/guests/python.md.
"""

import rollout as r
from turtles_controller import (
    DEPLOYMENTS,
    REPLICASETS,
    ApiError,
    Controller,
    Done,
    Permission,
    RequeueAfter,
    TerminalError,
    Watch,
    api,
    cache,
    events,
    log,
    meta,
)


controller = Controller(
    Watch(DEPLOYMENTS),
    Watch(REPLICASETS, owner=("apps", "Deployment")),
    permissions=[
        Permission.group("apps", ["deployments", "deployments/status"], ["get", "list", "watch", "update", "patch"]),
        Permission.group(
            "apps",
            "replicasets",
            ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
        ),
        Permission.core("events", ["create", "patch"]),
    ],
    max_concurrent_reconciles=2,
)


def _claim(d, namespace, selector):
    """kube's `ClaimReplicaSets`: the ReplicaSets this Deployment controls whose labels its
    selector still matches, with the orphans it matches adopted (a controller owner reference
    added: `kubectl delete deploy --cascade=orphan` then re-creating the Deployment takes its
    ReplicaSets back rather than making more) and the ones it no longer matches released (their
    reference removed: relabelled out, a ReplicaSet is no longer the Deployment's). A Deployment
    being deleted adopts and releases nothing."""
    uid, deleting = meta.uid(d), meta.is_deleting(d)
    claimed = []
    for rs in cache.list(REPLICASETS, namespace):
        ref = meta.controller_ref(rs)
        matches = r.selector_matches(selector, meta.labels(rs))
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches or deleting:
                claimed.append(rs)
            else:
                _set_controller(rs, None, uid, "released replicaset")
        elif matches and not deleting and not meta.is_deleting(rs):
            adopted = _set_controller(rs, d, uid, "adopted replicaset")
            if adopted is not None:
                claimed.append(adopted)
    return claimed


def _set_controller(rs, d, uid, what):
    """Add `d` as the controller of `rs` (adopt), or take the reference to `uid` off (`d` None:
    release): a JSON patch that tests the ReplicaSet's uid and resourceVersion, so a ReplicaSet
    that changed meanwhile is left for the next reconcile (its change brings one). The result, or
    None if it changed or went."""
    refs = [ref for ref in (rs["metadata"].get("ownerReferences") or []) if ref.get("uid") != uid]
    if d is not None:
        refs.append(meta.owner_reference(d))
    ops = [
        {"op": "test", "path": "/metadata/uid", "value": meta.uid(rs)},
        {"op": "test", "path": "/metadata/resourceVersion", "value": rs["metadata"].get("resourceVersion")},
        {"op": "add", "path": "/metadata/ownerReferences", "value": refs},
    ]
    try:
        out = api.patch_json(REPLICASETS, meta.namespace(rs), meta.name(rs), ops)
    except ApiError as e:
        if e.is_not_found() or e.is_conflict() or e.is_invalid():
            return None
        raise
    log.info(what, replicaset=meta.name(rs))
    return out


@controller.reconcile
def reconcile(key, d):
    if d is None:
        # Gone: its ReplicaSets (and their Pods) are the garbage collector's, through their
        # owner references.
        return Done
    spec = d.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not r.selector_matches(spec.get("selector"), labels):
        return TerminalError("spec.selector must be set and match spec.template.metadata.labels")
    owned = _claim(d, key.namespace, spec.get("selector"))

    new_rs = next((rs for rs in owned if r.template_equal(rs["spec"].get("template"), template)), None)
    old_rss = [rs for rs in owned if rs is not new_rs]
    paused = bool(spec.get("paused")) or meta.is_deleting(d)
    created = False
    if not paused:
        revision = max((r.revision(rs) for rs in old_rss), default=0) + 1
        if new_rs is None:
            new_rs = _create_replicaset(d, old_rss, revision)
            if new_rs is None:
                return Done  # hash collision: collisionCount bumped, the status change requeues
            created = True
        else:
            new_rs = _sync_annotations(d, new_rs, revision)
        if meta.annotation(d, r.REVISION) != meta.annotation(new_rs, r.REVISION):
            _patch_deployment(d, {"metadata": {"annotations": {r.REVISION: meta.annotation(new_rs, r.REVISION)}}})
        plan = r.plan_recreate if r.strategy_type(d) == "Recreate" else r.plan_rolling
        current = {meta.name(rs): r.replicas_of(rs) for rs in [new_rs, *old_rss]}
        for name, replicas in plan(d, new_rs, old_rss):
            _scale(d, key.namespace, name, replicas, current.get(name, 0))

    now = meta.now()
    status = r.compute_status(d, new_rs, old_rss, now, paused=bool(spec.get("paused")), created=created)
    have = d.get("status") or {}
    if any(have.get(k) != v for k, v in status.items()):
        _patch_deployment(d, {"status": status}, status_subresource=True)
    if not paused and r.is_complete(d, status):
        for rs in r.to_clean_up(d, old_rss):
            _delete(rs, "beyond revisionHistoryLimit")
    check_in = None if paused else r.deadline_check_in(d, status, now)
    if check_in is not None:
        return RequeueAfter.seconds(check_in)
    return Done


def _create_replicaset(d, old_rss, revision):
    """Create `<name>-<hash>` for the current template; None on a hash collision."""
    spec = d["spec"]
    collisions = (d.get("status") or {}).get("collisionCount")
    hash_ = r.pod_template_hash(spec["template"], collisions)
    want = r.replicas_of(d)
    if r.strategy_type(d) == "Recreate":
        busy = any(r.replicas_of(rs) or r.status_int(rs, "replicas") for rs in old_rss)
        replicas = 0 if busy else want
    else:
        room = want + r.max_surge(d) - sum(r.replicas_of(rs) for rs in old_rss)
        replicas = max(0, min(room, want))
    rs = r.new_replicaset(d, hash_, replicas, revision)
    try:
        created = api.create(REPLICASETS, rs)
    except ApiError as e:
        if not e.is_already_exists():
            raise
        # Someone else's ReplicaSet, or ours with another template: kube's answer is a new hash.
        _patch_deployment(d, {"status": {"collisionCount": (collisions or 0) + 1}}, status_subresource=True)
        log.warn("pod-template-hash collision", deployment=meta.name(d), replicaset=meta.name(rs))
        return None
    log.info("created replicaset", deployment=meta.name(d), replicaset=meta.name(created), replicas=replicas)
    if replicas:
        events.record(d, "Normal", "ScalingReplicaSet",
                      f"Scaled up replica set {meta.name(created)} from 0 to {replicas}")
    return created


def _sync_annotations(d, rs, revision):
    """Revision (raised when an old template comes back: a rollback), desired/max replicas, and
    the Deployment's own annotations (kube's `SetNewReplicaSetAnnotations`)."""
    want = dict(r.copied_annotations(d), **r.replicaset_annotations(d, max(revision, r.revision(rs))))
    have = meta.annotations(rs)
    # A rollback: the revision it had joins its history (`kubectl rollout history` reads it).
    old = have.get(r.REVISION)
    if old is not None and r.revision(rs) < revision:
        history = r.revision_history(have.get(r.REVISION_HISTORY, ""), old)
        if history is not None:
            want[r.REVISION_HISTORY] = history
    changed = {k: v for k, v in want.items() if have.get(k) != v}
    if not changed:
        return rs
    return api.patch_merge(REPLICASETS, meta.namespace(rs), meta.name(rs), {"metadata": {"annotations": changed}})


def _scale(d, namespace, name, replicas, before):
    patch = {"metadata": {"annotations": r.replicaset_annotations(d, None)}, "spec": {"replicas": replicas}}
    del patch["metadata"]["annotations"][r.REVISION]
    api.patch_merge(REPLICASETS, namespace, name, patch)
    log.info("scaled replicaset", deployment=meta.name(d), replicaset=name, replicas=replicas)
    if replicas != before:
        way = "up" if replicas > before else "down"
        events.record(d, "Normal", "ScalingReplicaSet",
                      f"Scaled {way} replica set {name} from {before} to {replicas}")


def _patch_deployment(d, patch, status_subresource=False):
    write = api.patch_status if status_subresource else api.patch_merge
    try:
        write(DEPLOYMENTS, meta.namespace(d), meta.name(d), patch)
    except ApiError as e:
        if not e.is_not_found():  # deleted meanwhile: its deletion requeues it
            raise


def _delete(rs, why):
    try:
        api.delete(REPLICASETS, meta.namespace(rs), meta.name(rs), uid=meta.uid(rs))
        log.info("deleted replicaset", replicaset=meta.name(rs), reason=why)
    except ApiError as e:
        if not (e.is_not_found() or e.is_conflict()):
            raise


WitWorld = controller.export()
