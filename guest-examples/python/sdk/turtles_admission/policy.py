"""Policy, Registration, Rule, Permission, and the glue to the component's exports."""

import json
import re
import traceback

from . import _host, log
from .request import CREATE, DELETE, UPDATE, Request
from .responses import Denied, Response, allow

FAIL, IGNORE = "Fail", "Ignore"
ANY_SCOPE, CLUSTER, NAMESPACED = "*", "Cluster", "Namespaced"

_VERSION = re.compile(r"^v\d+((alpha|beta)\d+)?$")


def _strings(value):
    return [value] if isinstance(value, str) else list(value)


def _split(spec):
    """ "v1/pods" -> ("", "v1", "pods"); "apps/v1/deployments"; "v1/pods/status" (a core
    subresource); "apps/v1/deployments/scale"; "*/*/*" (anything) -> (group, version, resource)."""
    parts = spec.strip("/").split("/")
    if len(parts) == 2:
        return "", parts[0], parts[1]
    if len(parts) >= 3 and _VERSION.match(parts[0]):
        return "", parts[0], "/".join(parts[1:])
    if len(parts) >= 3:
        return parts[0], parts[1], "/".join(parts[2:])
    raise ValueError(f"not a resource: {spec!r} (want 'v1/pods', 'apps/v1/deployments' or '*/*/*')")


class Rule:
    """Which writes the policy sees (kube's RuleWithOperations):

        Rule("v1/pods", CREATE)                              # core v1 pods, on create
        Rule("apps/v1/deployments", [CREATE, UPDATE])
        Rule("v1/pods/status")                               # a subresource; every operation
        Rule(api_groups=["", "apps"], api_versions=["v1"], resources=["pods", "deployments"])

    operations: CREATE, UPDATE, DELETE (a string or a list; "*" or empty: every operation).
    scope: "*" (default), "Cluster" or "Namespaced". The groups x versions x resources of one rule
    all match (as in kube): give rules with different groups separately.
    """

    __slots__ = ("operations", "api_groups", "api_versions", "resources", "scope")

    def __init__(self, resource=None, operations=(), scope=ANY_SCOPE, *, api_groups=None, api_versions=None,
                 resources=None):
        if resource is not None:
            if api_groups is not None or api_versions is not None or resources is not None:
                raise ValueError("give a resource string or api_groups/api_versions/resources, not both")
            group, version, res = _split(resource)
            api_groups, api_versions, resources = [group], [version], [res]
        if not resources:
            raise ValueError("a rule needs a resource: Rule('v1/pods') or Rule(api_groups=..., resources=...)")
        self.api_groups = _strings(api_groups if api_groups is not None else ["*"])
        self.api_versions = _strings(api_versions if api_versions is not None else ["*"])
        self.resources = _strings(resources)
        ops = [o.upper() for o in _strings(operations)]
        for o in ops:
            if o not in (CREATE, UPDATE, DELETE, "*"):
                raise ValueError(f"not an admission operation: {o!r} (CREATE, UPDATE, DELETE or '*')")
        self.operations = [] if "*" in ops else ops
        scopes = {"*": ANY_SCOPE, "any": ANY_SCOPE, "cluster": CLUSTER, "namespaced": NAMESPACED}
        if scope.lower() not in scopes:
            raise ValueError(f"not a scope: {scope!r} ('*', 'Cluster' or 'Namespaced')")
        self.scope = scopes[scope.lower()]

    def to_wit(self):
        wit = _host.wit
        scope = {ANY_SCOPE: wit.Scope.ANY, CLUSTER: wit.Scope.CLUSTER, NAMESPACED: wit.Scope.NAMESPACED}[self.scope]
        ops = [wit.Operation[o] for o in self.operations]
        return wit.Rule(ops, self.api_groups, self.api_versions, self.resources, scope)

    def __repr__(self):
        return (f"Rule(operations={self.operations}, api_groups={self.api_groups}, "
                f"api_versions={self.api_versions}, resources={self.resources}, scope={self.scope!r})")


class Permission:
    """An RBAC rule the policy's cache reads need: Permission(["apps"], ["deployments"], ["get",
    "list"]); a single string stands for a one-element list. Permission.core(...) is the core group."""

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

    def to_wit(self):
        return _host.wit.Permission(self.api_groups, self.resources, self.verbs)

    def __repr__(self):
        return f"Permission({self.api_groups}, {self.resources}, {self.verbs})"


class Registration:
    """What register() answers:

        Registration(
            Rule("v1/pods", CREATE),                   # one Rule or a list (at least one)
            mutating=True,                             # None (default): whether the class
            validating=False,                          #   overrides mutate / validate
            namespace_selector="env in (prod)",        # kube label selector syntax, or None
            object_selector=None,
            failure_policy=FAIL,                       # FAIL ("Fail") or IGNORE ("Ignore")
            timeout_ms=None,                           # None: the host's call deadline
            permissions=[Permission.core("namespaces", ["get", "list"])],
        )
    """

    __slots__ = ("rules", "validating", "mutating", "namespace_selector", "object_selector", "failure_policy",
                 "timeout_ms", "permissions")

    def __init__(self, rules, *, validating=None, mutating=None, namespace_selector=None, object_selector=None,
                 failure_policy=FAIL, timeout_ms=None, permissions=()):
        self.rules = [rules] if isinstance(rules, Rule) else list(rules)
        if not self.rules:
            raise ValueError("a policy needs at least one rule")
        for r in self.rules:
            if not isinstance(r, Rule):
                raise TypeError(f"not a Rule: {r!r}")
        self.validating = validating
        self.mutating = mutating
        self.namespace_selector = namespace_selector or None
        self.object_selector = object_selector or None
        policies = {"fail": FAIL, "ignore": IGNORE}
        if str(failure_policy).lower() not in policies:
            raise ValueError(f"not a failure policy: {failure_policy!r} (FAIL or IGNORE)")
        self.failure_policy = policies[str(failure_policy).lower()]
        if timeout_ms is not None and not 0 < int(timeout_ms) < 2**32:
            raise ValueError(f"timeout_ms {timeout_ms} is not a positive u32")
        self.timeout_ms = None if timeout_ms is None else int(timeout_ms)
        self.permissions = list(permissions)

    def to_wit(self):
        wit = _host.wit
        return wit.Registration(
            bool(self.validating),
            bool(self.mutating),
            [r.to_wit() for r in self.rules],
            self.namespace_selector,
            self.object_selector,
            wit.FailurePolicy.IGNORE if self.failure_policy == IGNORE else wit.FailurePolicy.FAIL,
            self.timeout_ms,
            [p.to_wit() for p in self.permissions],
        )


class Policy:
    """An admission policy: subclass it, answer register(), override validate and/or mutate.

        class NoLatest(Policy):
            def register(self):
                return Registration(Rule("v1/pods", [CREATE, UPDATE]))

            def validate(self, request):
                for c in request.object["spec"]["containers"]:
                    if c["image"].endswith(":latest"):
                        return deny(f"container {c['name']}: no :latest images")
                return allow()

        WitWorld = NoLatest.export()   # componentize-py looks for `WitWorld` in the app module

    validate and mutate answer a Response (allow, deny, warn, json_patch, replace_object,
    request.patch()) or None (allow); raising Denied denies. Any other exception (or an answer
    that is not a Response) is logged with its traceback and raised on: the call traps and the
    host applies the registration's failure policy (FAIL refuses the write, IGNORE lets it through
    unchanged), counting it among the policy's errors, as for a policy in any language.
    """

    def register(self):
        raise NotImplementedError(f"{type(self).__name__}.register(): return a Registration")

    def validate(self, request):
        """Validating admission (called when the registration says validating): allow by default."""
        return None

    def mutate(self, request):
        """Mutating admission (called when the registration says mutating): allow, no patch, by default."""
        return None

    @classmethod
    def export(cls):
        """The class componentize-py exports: `WitWorld = MyPolicy.export()` (MyPolicy() made once)."""
        return export(cls())

    # -- what the exports call (handy in tests) --------------------------------------------------
    @property
    def registration(self):
        """register()'s answer (asked once), with validating / mutating filled in when None."""
        reg = self.__dict__.get("_turtles_registration")
        if reg is None:
            reg = self.register()
            if not isinstance(reg, Registration):
                raise TypeError(f"{type(self).__name__}.register() returned {reg!r}, not a Registration")
            if reg.validating is None:
                reg.validating = type(self).validate is not Policy.validate
            if reg.mutating is None:
                reg.mutating = type(self).mutate is not Policy.mutate
            if not (reg.validating or reg.mutating):
                raise ValueError(f"{type(self).__name__} neither validates nor mutates: override validate or mutate")
            self.__dict__["_turtles_registration"] = reg
        return reg

    def run_validate(self, request):
        """validate(request) as a Response (see the class doc); never a change."""
        response = self._run("validate", self.validate, request)
        if response.changes:
            log.warn(f"{type(self).__name__}.validate returned a change: ignored (return it from mutate)")
            response = Response(response.denied, response.warnings)
        return response

    def run_mutate(self, request):
        """mutate(request) as a Response (see the class doc)."""
        return self._run("mutate", self.mutate, request)

    def _run(self, what, fn, request):
        if not isinstance(request, Request):
            request = Request(**request) if isinstance(request, dict) else request
        try:
            result = fn(request)
            if result is None:
                return allow()
            if not isinstance(result, Response):
                raise TypeError(f"returned {result!r}, not a Response (allow, deny, json_patch, ...)")
            return result
        except Denied as e:
            return e.response
        except Exception as e:  # a bug: logged here, then a trap (the host's failure policy)
            log.error(
                f"{type(self).__name__}.{what} raised {type(e).__name__}: {e} ({request!r})",
                traceback="".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:],
            )
            raise


def _verdict(response):
    wit = _host.wit
    d = response.denied
    return wit.Verdict(None if d is None else wit.Denial(d.code, d.reason, d.message), list(response.warnings))


def _mutation(response):
    wit = _host.wit
    d = response.denied
    if response.object is not None:
        patch = wit.Patch_Object(json.dumps(response.object, separators=(",", ":")).encode())
    elif response.json_patch:
        patch = wit.Patch_JsonPatch(json.dumps(response.json_patch, separators=(",", ":")).encode())
    else:
        patch = wit.Patch_None_()
    return wit.Mutation(None if d is None else wit.Denial(d.code, d.reason, d.message), list(response.warnings), patch)


def export(policy):
    """The class componentize-py exports as the component's register, validate and mutate, for a
    Policy instance (or subclass, made with no arguments): `WitWorld = export(MyPolicy("x"))`."""
    if isinstance(policy, type):
        policy = policy()
    if not isinstance(policy, Policy):
        raise TypeError(f"export() wants a Policy, not {policy!r}")
    this = policy

    class WitWorld:
        # The Policy behind the exports (for tests: app.WitWorld.policy.run_mutate(...)).
        policy = this

        def register(self):
            return this.registration.to_wit()

        def validate(self, request):
            return _verdict(this.run_validate(Request.from_wit(request)))

        def mutate(self, request):
            return _mutation(this.run_mutate(Request.from_wit(request)))

    return WitWorld
