"""Controller, Watch, Permission, Registration, Key, and the glue to the component's exports."""

import json
import traceback
from collections import namedtuple

from . import _host
from . import log
from .api import ApiError
from .outcomes import Done, RequeueAfter, TerminalError, TransientError, _Done
from .resources import resource as _resource


def _strings(value):
    return [value] if isinstance(value, str) else list(value)


class Watch:
    """One kind to watch. The first watch of a controller is its primary kind (its own keys are
    reconciled); a secondary watch usually maps to its owner:

        Watch("apps/v1/replicasets", owner=("apps", "Deployment"))
    """

    __slots__ = ("resource", "namespace", "label_selector", "owner")

    def __init__(self, resource, namespace=None, label_selector=None, owner=None):
        self.resource = _resource(resource)
        self.namespace = namespace  # only this namespace (None: all)
        self.label_selector = label_selector  # kube syntax, e.g. "app=web,tier!=db"
        if owner is not None:
            group, kind = owner  # (group, kind) of the controller owner reference
            owner = (group, kind)
        self.owner = owner  # None: the object's own key

    def __repr__(self):
        return (
            f"Watch({self.resource}, namespace={self.namespace!r}, "
            f"label_selector={self.label_selector!r}, owner={self.owner!r})"
        )


class Permission:
    """An RBAC rule: Permission(["apps"], ["deployments"], ["get", "list"]); a single string
    stands for a one-element list. Permission.core(...) is the core ("") group."""

    __slots__ = ("api_groups", "resources", "verbs")

    def __init__(self, api_groups, resources, verbs):
        self.api_groups = _strings(api_groups)
        self.resources = _strings(resources)
        self.verbs = _strings(verbs)

    @classmethod
    def core(cls, resources, verbs):
        return cls([""], resources, verbs)

    @classmethod
    def group(cls, group, resources, verbs):
        return cls([group], resources, verbs)

    def __repr__(self):
        return f"Permission({self.api_groups}, {self.resources}, {self.verbs})"


class Registration:
    """What register() answers: watches (first = primary), concurrency, resync, permissions,
    keys to reconcile at start, and the ServiceAccount to act as (namespace, name) if any."""

    __slots__ = (
        "watches",
        "permissions",
        "max_concurrent_reconciles",
        "resync_seconds",
        "initial_keys",
        "service_account",
    )

    def __init__(
        self,
        watches,
        permissions=(),
        max_concurrent_reconciles=1,
        resync_seconds=None,
        initial_keys=(),
        service_account=None,
    ):
        self.watches = list(watches)
        if not self.watches:
            raise ValueError("a controller needs at least one watch (its primary kind)")
        if self.watches[0].owner is not None:
            raise ValueError("the first (primary) watch maps to its own key: no owner")
        self.permissions = list(permissions)
        self.max_concurrent_reconciles = max(1, int(max_concurrent_reconciles))
        self.resync_seconds = resync_seconds
        # Reconciled once at start, even if no watched change names them: [(namespace, name)].
        self.initial_keys = [Key(ns, name) for ns, name in initial_keys]
        if service_account is not None:
            ns, name = service_account
            service_account = Key(ns, name)
        # Act as this ServiceAccount: its bindings decide what the controller may do.
        self.service_account = service_account

    def to_wit(self):
        wit = _host.wit
        watches = []
        for w in self.watches:
            if w.owner is None:
                mapping = wit.KeyMapping_SelfKey()
            else:
                mapping = wit.KeyMapping_Owner(wit.OwnerKind(w.owner[0], w.owner[1]))
            r = w.resource
            watches.append(wit.Watch(r.group, r.version, r.resource, w.namespace, w.label_selector, mapping))
        perms = [wit.Permission(p.api_groups, p.resources, p.verbs) for p in self.permissions]
        keys = [wit.ObjectKey(k.namespace, k.name) for k in self.initial_keys]
        sa = self.service_account
        sa = None if sa is None else wit.ObjectKey(sa.namespace, sa.name)
        return wit.Registration(watches, self.max_concurrent_reconciles, self.resync_seconds, perms, keys, sa)


class Key(namedtuple("Key", ["namespace", "name"])):
    """The primary object to reconcile: namespace ("" if cluster-scoped) and name."""

    __slots__ = ()

    def __str__(self):
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class Controller:
    """A controller: its registration plus a reconcile function.

        controller = Controller(
            Watch("v1/configmaps", label_selector="turtles.dev/greet=true"),
            permissions=[Permission.core("configmaps", ["get", "list", "watch", "patch"])],
        )

        @controller.reconcile
        def reconcile(key, obj):   # key: Key; obj: the cached primary (dict) or None if gone
            ...
            return Done            # or None, RequeueAfter(ms), TransientError(msg), TerminalError(msg)

        WitWorld = controller.export()   # componentize-py looks for `WitWorld` in the app module

    An exception escaping reconcile is a transient error (retried with backoff); raise
    TerminalError(msg) for one a retry cannot fix.
    """

    def __init__(
        self,
        *watches,
        permissions=(),
        max_concurrent_reconciles=1,
        resync_seconds=None,
        initial_keys=(),
        service_account=None,
    ):
        self.registration = Registration(
            watches, permissions, max_concurrent_reconciles, resync_seconds, initial_keys, service_account
        )
        self._reconcile = None

    def reconcile(self, fn):
        """Decorator: the function that reconciles one key, fn(key, obj) -> outcome."""
        self._reconcile = fn
        return fn

    def run(self, key, obj):
        """Call the reconcile function and turn whatever happens into an outcome (Done,
        RequeueAfter, TransientError or TerminalError). What the component export calls; handy
        in tests."""
        if self._reconcile is None:
            return TerminalError("no reconcile function: decorate one with @controller.reconcile")
        if not isinstance(key, Key):
            key = Key(*key)
        try:
            result = self._reconcile(key, obj)
        except (TransientError, TerminalError) as e:
            return e
        except ApiError as e:
            return TransientError(f"API call failed: {e}")
        except Exception as e:  # noqa: BLE001 - any bug is a transient error, logged with its trace
            log.error(
                f"reconcile {key} raised {type(e).__name__}: {e}",
                traceback="".join(traceback.format_exception(e))[-4000:],
            )
            return TransientError(f"{type(e).__name__}: {e}")
        if result is None or isinstance(result, (_Done, RequeueAfter, TransientError, TerminalError)):
            return Done if result is None else result
        return TerminalError(f"reconcile returned {result!r}, not an outcome")

    def export(self):
        """The class componentize-py exports as the component's `register` and `reconcile`:
        assign it to `WitWorld` in the app module."""
        this = self

        class WitWorld:
            # The Controller behind the exports (for tests: app.WitWorld.controller.run(...)).
            controller = this

            def register(self):
                return this.registration.to_wit()

            def reconcile(self, key, object):
                wit = _host.wit
                obj = None
                if object is not None:
                    try:
                        obj = json.loads(object)
                    except ValueError as e:
                        return wit.Outcome_TerminalError(f"the host passed an object that is not JSON: {e}")
                outcome = this.run(Key(key.namespace, key.name), obj)
                return _to_wit(outcome)

        return WitWorld


def _to_wit(outcome):
    wit = _host.wit
    if isinstance(outcome, RequeueAfter):
        return wit.Outcome_RequeueAfter(outcome.ms)
    if isinstance(outcome, TransientError):
        return wit.Outcome_TransientError(str(outcome) or "transient error")
    if isinstance(outcome, TerminalError):
        return wit.Outcome_TerminalError(str(outcome) or "terminal error")
    return wit.Outcome_Done()
