"""Python SDK for turtles controllers.

A controller is a WebAssembly component of the world `controller` in `wit/controller.wit`, built
from a Python module by componentize-py. With this package it is a Controller, a reconcile
function, and one export line:

    from turtles_controller import Controller, Done, Permission, Watch, api

    controller = Controller(
        Watch("v1/configmaps", label_selector="turtles.dev/greet=true"),
        permissions=[Permission.core("configmaps", ["get", "list", "watch", "patch"])],
    )

    @controller.reconcile
    def reconcile(key, obj):
        if obj is None:
            return Done                      # gone: nothing to do
        api.patch_merge("v1/configmaps", key.namespace, key.name,
                        {"metadata": {"annotations": {"hi": key.name}}})
        return Done

    WitWorld = controller.export()

See docs/guests/python.md for the whole API.
"""

from . import api, cache, events, log, meta
from .api import ApiError
from .controller import Controller, Key, Permission, Registration, Watch
from .outcomes import Done, RequeueAfter, TerminalError, TransientError
from .resources import (
    CONFIGMAPS,
    DEPLOYMENTS,
    EVENTS,
    NAMESPACES,
    PODS,
    REPLICASETS,
    SECRETS,
    SERVICES,
    Resource,
    resource,
)

__all__ = [
    "api",
    "cache",
    "events",
    "log",
    "meta",
    "ApiError",
    "Controller",
    "Key",
    "Permission",
    "Registration",
    "Watch",
    "Done",
    "RequeueAfter",
    "TerminalError",
    "TransientError",
    "Resource",
    "resource",
    "CONFIGMAPS",
    "DEPLOYMENTS",
    "EVENTS",
    "NAMESPACES",
    "PODS",
    "REPLICASETS",
    "SECRETS",
    "SERVICES",
]
