"""An in-memory stand-in for the host, to unit-test policies in plain CPython (no Wasm).

    from turtles_admission import Request, jsonpatch
    from turtles_admission.testing import FakeHost

    with FakeHost() as host:                            # routes cache/log here
        host.add("v1/namespaces", {"metadata": {"name": "ns", "labels": {"team": "a"}}})
        req = Request(resource="v1/pods", namespace="ns", object=pod)
        response = MyPolicy().run_mutate(req)           # what the component's `mutate` runs
        stored = host.apply(pod, response)              # the object as the host would store it

Its cache serves every object added, unfiltered: the permissions are not checked (set
`host.readable` to a set of (group, resource) pairs to check them).
"""

import copy
import json

from . import _host, jsonpatch
from .cache import gvr


class FakeHost:
    """An in-memory cache + log, installed as the SDK's host."""

    def __init__(self, echo_logs=False):
        self.objects = {}  # (group, version, resource, namespace, name) -> object
        self.logs = []  # (level, message, fields)
        self.echo_logs = echo_logs
        self.readable = None  # None: everything; else a set of (group, resource) the policy may read
        self._previous = None

    def install(self):
        self._previous = _host.install(self)
        return self

    def uninstall(self):
        if self._previous is not None:
            _host.install(self._previous)
            self._previous = None

    def __enter__(self):
        return self.install()

    def __exit__(self, *exc):
        self.uninstall()

    def add(self, resource, obj):
        """Put `obj` (a dict with metadata.name, and metadata.namespace if namespaced) in the cache."""
        meta = obj.get("metadata") or {}
        self.objects[(*gvr(resource), meta.get("namespace") or "", meta["name"])] = copy.deepcopy(obj)
        return obj

    def _may(self, group, resource):
        return self.readable is None or (group, resource) in self.readable

    # -- the backend ------------------------------------------------------------------------------
    def cache_get(self, group, version, resource, namespace, name):
        obj = self.objects.get((group, version, resource, namespace, name))
        if obj is None or not self._may(group, resource):
            return None
        return json.dumps(obj).encode()

    def cache_list(self, group, version, resource, namespace):
        if not self._may(group, resource):
            return b"[]"
        items = [
            o
            for (g, v, r, ns, _n), o in sorted(self.objects.items())
            if (g, v, r) == (group, version, resource) and (namespace is None or ns == namespace)
        ]
        return json.dumps(items).encode()

    def log(self, level, message, fields):
        self.logs.append((level, message, list(fields)))
        if self.echo_logs:
            print(("TRACE", "DEBUG", "INFO", "WARN", "ERROR")[level], message, fields)

    # -- checking answers -------------------------------------------------------------------------
    @staticmethod
    def apply(obj, response):
        """The object the host stores for `obj` after a mutate `response` (obj itself if the
        response changes nothing; None if it denies)."""
        if not response.allowed:
            return None
        if response.object is not None:
            return copy.deepcopy(response.object)
        if response.json_patch:
            return jsonpatch.apply(obj, response.json_patch)
        return obj
