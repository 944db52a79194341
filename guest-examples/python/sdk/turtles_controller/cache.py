"""The host's informer cache of the controller's watched kinds: no API call, always current.

Only kinds the controller watches are there (with the watch's namespace and label filters).
"""

import json

from . import _host
from .resources import resource as _resource


def get(resource, namespace, name):
    """One cached object as a dict, or None (not there, or not of a watched kind)."""
    r = _resource(resource)
    data = _host.backend.cache_get(r.group, r.version, r.resource, namespace or "", name)
    return json.loads(data) if data is not None else None


def list(resource, namespace=None, labels=None):
    """Cached objects of `resource` in `namespace` (None: all namespaces), as dicts.

    `labels`: only objects carrying all these labels (a dict of exact values).
    """
    r = _resource(resource)
    data = _host.backend.cache_list(r.group, r.version, r.resource, namespace or None)
    items = json.loads(data) if data else []
    if labels:
        items = [
            o
            for o in items
            if all(((o.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in labels.items())
        ]
    return items
