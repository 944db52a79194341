"""Small helpers over an object's dict: metadata, owner references, conditions."""

from datetime import datetime, timezone


def _meta(obj):
    return (obj or {}).get("metadata") or {}


def name(obj):
    return _meta(obj).get("name")


def namespace(obj):
    return _meta(obj).get("namespace") or ""


def uid(obj):
    return _meta(obj).get("uid")


def labels(obj):
    return _meta(obj).get("labels") or {}


def annotations(obj):
    return _meta(obj).get("annotations") or {}


def label(obj, key, default=None):
    return labels(obj).get(key, default)


def annotation(obj, key, default=None):
    return annotations(obj).get(key, default)


def is_deleting(obj):
    return _meta(obj).get("deletionTimestamp") is not None


def controller_ref(obj):
    """The owner reference with `controller: true`, or None."""
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def is_controlled_by(obj, owner):
    """Whether `obj`'s controller owner reference points at `owner` (same uid)."""
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == uid(owner)


def owner_reference(owner, controller=True, block_owner_deletion=True):
    """An ownerReferences entry pointing at `owner` (which needs apiVersion, kind, name, uid)."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": name(owner),
        "uid": uid(owner),
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
    }


def now():
    """The current time as kube writes it: "2024-01-02T03:04:05Z"."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def find_condition(conditions, type_):
    for c in conditions or []:
        if c.get("type") == type_:
            return c
    return None


def set_condition(conditions, type_, status, reason="", message="", time=None):
    """A new conditions list with condition `type_` set. lastTransitionTime changes only when the
    status does; lastUpdateTime only when anything does (so an unchanged condition stays equal)."""
    old = find_condition(conditions, type_)
    stamp = time or now()
    new = {"type": type_, "status": status, "reason": reason, "message": message}
    if old is not None and all(old.get(k) == v for k, v in new.items()):
        return list(conditions)
    new["lastUpdateTime"] = stamp
    new["lastTransitionTime"] = (
        old.get("lastTransitionTime", stamp) if old is not None and old.get("status") == status else stamp
    )
    out = [new if c.get("type") == type_ else c for c in conditions or []]
    if old is None:
        out.append(new)
    return out
