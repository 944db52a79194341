"""The greeter controller, shared by `py-greeter` and `py-greeter-v2` (which differ only in the
greeting): every ConfigMap labelled `turtles.dev/greet=true` gets the annotation
`turtles.dev/greeting: "<greeting>, <name>"`, written with a merge patch."""

from turtles_controller import CONFIGMAPS, Controller, Done, Permission, Watch, api, log, meta

ANNOTATION = "turtles.dev/greeting"


def greeter(greeting):
    controller = Controller(
        Watch(CONFIGMAPS, label_selector="turtles.dev/greet=true"),
        permissions=[Permission.core("configmaps", ["get", "list", "watch", "patch"])],
    )

    @controller.reconcile
    def reconcile(key, obj):
        if obj is None:
            return Done  # gone: nothing to do
        text = f"{greeting}, {key.name}"
        if meta.annotation(obj, ANNOTATION) == text:
            return Done
        try:
            api.patch_merge(CONFIGMAPS, key.namespace, key.name, {"metadata": {"annotations": {ANNOTATION: text}}})
        except api.ApiError as e:
            if e.is_not_found():
                return Done  # deleted meanwhile
            raise  # anything else: a transient error, retried with backoff
        log.info(f"greeted {key}", greeting=greeting)
        return Done

    return controller
