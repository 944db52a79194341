"""Python SDK for turtles admission policies.

A policy is a WebAssembly component of the world `policy` in `wit/admission/admission.wit`, built
from a Python module by componentize-py (build.sh: an app.py with the line `# turtles-world: policy`).
With this package it is a class and one export line:

    # turtles-world: policy
    from turtles_admission import CREATE, Policy, Registration, Rule, allow, deny

    class NoLatest(Policy):
        def register(self):
            return Registration(Rule("v1/pods", CREATE))       # validating: validate is overridden

        def validate(self, request):
            for c in request.object["spec"]["containers"]:
                if c["image"].endswith(":latest"):
                    return deny(f"container {c['name']}: pin the image, not :latest")
            return allow()

    WitWorld = NoLatest.export()

Mutating: override mutate, change `request.object` in place and `return request.patch("what
changed")` (a JSON patch computed for you), or return json_patch(ops) / replace_object(obj).
`cache.get` / `cache.list` read the host's index (what `permissions` allow), `log` logs.
"""

from . import cache, jsonpatch, log
from .policy import (
    ANY_SCOPE,
    CLUSTER,
    FAIL,
    IGNORE,
    NAMESPACED,
    Permission,
    Policy,
    Registration,
    Rule,
    export,
)
from .request import CREATE, DELETE, UPDATE, GroupVersionKind, GroupVersionResource, Request, UserInfo
from .responses import Denial, Denied, Response, allow, deny, json_patch, replace_object, warn

cache_get = cache.get
cache_list = cache.list

__all__ = [
    "cache",
    "cache_get",
    "cache_list",
    "jsonpatch",
    "log",
    "Policy",
    "Registration",
    "Rule",
    "Permission",
    "export",
    "Request",
    "GroupVersionKind",
    "GroupVersionResource",
    "UserInfo",
    "Response",
    "Denial",
    "Denied",
    "allow",
    "warn",
    "deny",
    "json_patch",
    "replace_object",
    "CREATE",
    "UPDATE",
    "DELETE",
    "FAIL",
    "IGNORE",
    "ANY_SCOPE",
    "CLUSTER",
    "NAMESPACED",
]
