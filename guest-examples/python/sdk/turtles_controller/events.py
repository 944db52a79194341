"""Events about objects, as kube's controllers record them (`kubectl describe` shows them, and
`kubectl get events` lists them). Needs the permission `Permission.core("events", ["create"])`.

    events.record(deployment, "Normal", "ScalingReplicaSet", "Scaled up replica set web-1 from 0 to 3")

Recording is best effort, as in kube: a failure is logged, never raised.
"""

from . import api, log, meta
from .resources import EVENTS


def record(obj, type_, reason, message, component="turtles-controller"):
    """Record a `v1 Event` about `obj` (type_: "Normal" or "Warning")."""
    now = meta.now()
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta.name(obj)}.", "namespace": meta.namespace(obj) or "default"},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.name(obj),
            "namespace": meta.namespace(obj),
            "uid": meta.uid(obj),
            "resourceVersion": (obj.get("metadata") or {}).get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message,
        "type": type_,
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        api.create(EVENTS, event)
    except api.ApiError as e:
        log.warn("event not recorded", reason=reason, error=str(e))
