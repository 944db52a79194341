"""Reads of the host's index (no API call), as the policy's identity: only what its registration's
`permissions` allow (`get` for one object, `list` for many). A read that is not allowed looks like
a missing object (None, or an empty list).

Every function takes a resource as a string, "v1/namespaces" (core group) or
"apps/v1/deployments", or anything with `group`, `version` and `resource` attributes (e.g. a
turtles_controller Resource).
"""

import json

from . import _host


def gvr(spec):
    """(group, version, resource) of "v1/namespaces", "apps/v1/deployments" or a Resource."""
    if isinstance(spec, str):
        parts = spec.strip("/").split("/")
        if len(parts) == 2:
            return "", parts[0], parts[1]
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
        raise ValueError(f"not a resource: {spec!r} (want 'v1/namespaces' or 'apps/v1/deployments')")
    try:
        return spec.group, spec.version, spec.resource
    except AttributeError:
        raise TypeError(f"not a resource: {spec!r}") from None


def get(resource, namespace, name):
    """One object as a dict, or None (not there, or not readable by the policy).

    `namespace` "" or None for cluster-scoped objects: get("v1/namespaces", None, "default")."""
    group, version, res = gvr(resource)
    data = _host.backend.cache_get(group, version, res, namespace or "", name)
    return json.loads(data) if data is not None else None


def list(resource, namespace=None, labels=None):
    """Objects of `resource` in `namespace` (None: all namespaces), as dicts.

    `labels`: only objects carrying all these labels (a dict of exact values).
    """
    group, version, res = gvr(resource)
    data = _host.backend.cache_list(group, version, res, namespace or None)
    items = json.loads(data) if data else []
    if labels:
        items = [
            o
            for o in items
            if all(((o.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in labels.items())
        ]
    return items
