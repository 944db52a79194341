"""Events about objects, as kube's controllers record them (`kubectl describe` shows them, and
`kubectl get events` lists them). The host writes them (WIT `record-event`) as the controller's
identity, so the controller needs `Permission.core("events", ["create", "patch"])`; the same
event again is counted on the existing Event (`count`, `lastTimestamp`) instead of adding one.

    events.record(deployment, "Normal", "ScalingReplicaSet", "Scaled up replica set web-1 from 0 to 3")

Recording is best effort, as in kube: a failure is logged, never raised (record returns False).
"""

from . import _host, log, meta


def record(obj, type_, reason, message, action=""):
    """Record an Event about `obj` (type_: "Normal" or "Warning"); True when recorded."""
    regarding = (
        obj.get("apiVersion", ""),
        obj.get("kind", ""),
        meta.namespace(obj) or "",
        meta.name(obj) or "",
        meta.uid(obj) or "",
    )
    error = _host.backend.record_event(regarding, type_, reason, action, message)
    if error is not None:
        log.warn("event not recorded", reason=reason, error=error)
        return False
    return True
