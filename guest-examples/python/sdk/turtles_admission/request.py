"""Request: one write as admission sees it (kube's AdmissionRequest), with its objects as dicts."""

import json
from collections import namedtuple

from . import jsonpatch
from .responses import allow, json_patch

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"


class GroupVersionKind(namedtuple("GroupVersionKind", ["group", "version", "kind"])):
    """The object's kind: group ("" core), version, kind ("Pod")."""

    __slots__ = ()

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self):
        return f"{self.api_version}/{self.kind}"


class GroupVersionResource(namedtuple("GroupVersionResource", ["group", "version", "resource"])):
    """The resource written: group ("" core), version, plural resource ("pods"); str() gives
    "v1/pods" or "apps/v1/deployments", the SDK's resource spelling."""

    __slots__ = ()

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self):
        return f"{self.api_version}/{self.resource}"


class UserInfo(namedtuple("UserInfo", ["username", "uid", "groups", "extra"])):
    """Who writes: username, uid, groups (a list) and extra (a dict of lists)."""

    __slots__ = ()


def _gvr(spec):
    if isinstance(spec, GroupVersionResource):
        return spec
    if isinstance(spec, str):
        parts = spec.strip("/").split("/")
        if len(parts) == 2:
            return GroupVersionResource("", parts[0], parts[1])
        if len(parts) == 3:
            return GroupVersionResource(*parts)
        raise ValueError(f"not a resource: {spec!r} (want 'v1/pods' or 'apps/v1/deployments')")
    return GroupVersionResource(spec.group, spec.version, spec.resource)


def _raw(obj):
    if obj is None or isinstance(obj, (bytes, bytearray)):
        return obj
    if isinstance(obj, str):
        return obj.encode()
    return json.dumps(obj, separators=(",", ":")).encode()


_UNSET = object()


class Request:
    """One write. Attributes:

        uid, kind (GroupVersionKind), resource (GroupVersionResource), sub_resource ("" or
        "status"...), name ("" on a create with generateName), namespace ("" cluster-scoped),
        operation ("CREATE", "UPDATE" or "DELETE"), user (UserInfo), dry_run,
        object / old_object: the new / stored object as a dict (None on delete / create), parsed
        on first use; `object` is yours to change in place, then `return request.patch()`.
        raw_object / raw_old_object: the JSON bytes as the host sent them.

    Tests build one with keywords: Request(resource="v1/pods", namespace="ns", object={...}).
    """

    def __init__(
        self,
        *,
        uid="",
        kind=None,
        resource="v1/pods",
        sub_resource="",
        name=None,
        namespace=None,
        operation=CREATE,
        user=None,
        dry_run=False,
        object=None,
        old_object=None,
    ):
        self.uid = uid
        self.resource = _gvr(resource)
        self.sub_resource = sub_resource
        self.operation = operation.upper()
        if self.operation not in (CREATE, UPDATE, DELETE):
            raise ValueError(f"not an admission operation: {operation!r}")
        self.user = user if user is not None else UserInfo("", "", [], {})
        self.dry_run = dry_run
        self.raw_object = _raw(object)
        self.raw_old_object = _raw(old_object)
        self._object = self._old_object = _UNSET
        some = object if isinstance(object, dict) else old_object if isinstance(old_object, dict) else {}
        meta = some.get("metadata") or {}
        if kind is None:
            api_version = some.get("apiVersion") or self.resource.api_version
            group, _, version = api_version.rpartition("/")
            kind = GroupVersionKind(group, version, some.get("kind") or "")
        self.kind = kind if isinstance(kind, GroupVersionKind) else GroupVersionKind(*kind)
        self.name = name if name is not None else meta.get("name") or ""
        self.namespace = namespace if namespace is not None else meta.get("namespace") or ""

    @classmethod
    def from_wit(cls, r):
        """From the WIT record componentize-py hands the exports."""
        u = r.user_info
        return cls(
            uid=r.uid,
            kind=GroupVersionKind(r.kind.group, r.kind.version, r.kind.kind),
            resource=GroupVersionResource(r.resource.group, r.resource.version, r.resource.resource),
            sub_resource=r.sub_resource,
            name=r.name,
            namespace=r.namespace,
            operation=r.operation.name,
            user=UserInfo(u.username, u.uid, list(u.groups), {k: list(v) for k, v in u.extra}),
            dry_run=r.dry_run,
            object=r.object,
            old_object=r.old_object,
        )

    # -- the objects -----------------------------------------------------------------------------
    @property
    def object(self):
        """The object to be stored, as a dict (parsed once; None on delete)."""
        if self._object is _UNSET:
            self._object = json.loads(self.raw_object) if self.raw_object is not None else None
        return self._object

    @property
    def old_object(self):
        """The stored object being replaced or deleted, as a dict (parsed once; None on create)."""
        if self._old_object is _UNSET:
            self._old_object = json.loads(self.raw_old_object) if self.raw_old_object is not None else None
        return self._old_object

    def original_object(self):
        """A fresh parse of the object as it came in (whatever was done to `object`)."""
        return json.loads(self.raw_object) if self.raw_object is not None else None

    @property
    def labels(self):
        """The object's labels (the old object's on delete); {} if none."""
        obj = self.object if self.raw_object is not None else self.old_object
        return ((obj or {}).get("metadata") or {}).get("labels") or {}

    # -- what it is ------------------------------------------------------------------------------
    def is_resource(self, spec, sub_resource=""):
        """Whether the write is to `spec` ("v1/pods", "apps/v1/deployments"; "*" matches any
        group, version or resource) and this subresource ("" the object itself, "*" any)."""
        want = _gvr(spec)
        return all(w in ("*", h) for w, h in zip(want, self.resource)) and sub_resource in ("*", self.sub_resource)

    @property
    def is_create(self):
        return self.operation == CREATE

    @property
    def is_update(self):
        return self.operation == UPDATE

    @property
    def is_delete(self):
        return self.operation == DELETE

    # -- answers ---------------------------------------------------------------------------------
    def patch(self, *warnings, obj=None):
        """Allow, with the JSON patch that turns the object as it came in into `obj` (default:
        `request.object` as changed in place); a plain allow when nothing changed. The warnings
        are returned either way (give them only when something changed: `if changed: ...`)."""
        new = self.object if obj is None else obj
        ops = jsonpatch.diff(self.original_object(), new)
        return json_patch(ops, *warnings) if ops else allow(*warnings)

    def __repr__(self):
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"Request({self.operation} {self.resource} {where!r}, uid={self.uid!r})"
