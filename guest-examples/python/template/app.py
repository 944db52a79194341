"""`{{name}}`: a turtles controller in Python, built into a WebAssembly component by componentize-py.

Every ConfigMap, in every namespace, gets the annotation `turtles.dev/{{name}}` set to GREETING,
written with a JSON merge patch. Edit GREETING, save, and `turtles dev` swaps the new build in.
"""

from turtles_controller import CONFIGMAPS, Controller, Done, Permission, Watch, api, log, meta

ANNOTATION = "turtles.dev/{{name}}"
GREETING = "hello from {{name}}"

controller = Controller(
    Watch(CONFIGMAPS),  # core v1 configmaps, all namespaces
    permissions=[Permission.core("configmaps", ["get", "list", "watch", "patch"])],
)


@controller.reconcile
def reconcile(key, obj):
    # `obj` is the ConfigMap as the store has it when the call starts (never older than what
    # api.get would read), or None once it is gone: no need to read it again.
    if obj is None:
        return Done  # gone: nothing to do
    if meta.annotation(obj, ANNOTATION) == GREETING:
        return Done
    try:
        api.patch_merge(CONFIGMAPS, key.namespace, key.name, {"metadata": {"annotations": {ANNOTATION: GREETING}}})
    except api.ApiError as e:
        if e.is_not_found():
            return Done  # deleted meanwhile
        raise
    log.info(f"annotated {key}")
    return Done


# componentize-py looks for `WitWorld` in the app module: the component's register and reconcile.
WitWorld = controller.export()
