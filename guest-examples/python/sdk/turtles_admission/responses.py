"""What validate and mutate answer: allow (with warnings), deny, or allow with a change.

    return allow()                                   # None works too
    return deny("no latest tags")                    # 403 Forbidden
    return deny("replicas > 10", code=422, reason="Invalid")
    return allow().warn("deprecated field spec.foo")
    return json_patch([{"op": "add", "path": "/metadata/labels/team", "value": "a"}], "set team")
    return replace_object(new_obj)                   # the whole object to store
    raise Denied("no")                               # from anywhere below validate/mutate
"""

from collections import namedtuple


class Denial(namedtuple("Denial", ["code", "reason", "message"])):
    """Why a write is refused: HTTP code (400-599), kube StatusReason ("" from the code), message."""

    __slots__ = ()


class Response:
    """An answer: `denied` (a Denial or None), `warnings` (client Warning headers) and at most one
    change, `json_patch` (a list of RFC 6902 ops) or `object` (the whole object to store)."""

    __slots__ = ("denied", "warnings", "json_patch", "object")

    def __init__(self, denied=None, warnings=(), json_patch=None, object=None):
        if json_patch is not None and object is not None:
            raise ValueError("a response changes the object by a JSON patch or by a new object, not both")
        self.denied = denied
        self.warnings = [str(w) for w in warnings]
        self.json_patch = list(json_patch) if json_patch is not None else None
        self.object = object

    @property
    def allowed(self):
        return self.denied is None

    @property
    def changes(self):
        """Whether it changes the object (a non-empty JSON patch or a new object)."""
        return bool(self.json_patch) or self.object is not None

    def warn(self, *messages):
        """Add warnings; returns the response (allow().warn("x"))."""
        self.warnings.extend(str(m) for m in messages)
        return self

    def __eq__(self, other):
        return isinstance(other, Response) and all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self):
        parts = ["denied=" + repr(tuple(self.denied)) if self.denied else "allowed"]
        if self.warnings:
            parts.append(f"warnings={self.warnings!r}")
        if self.json_patch is not None:
            parts.append(f"json_patch={self.json_patch!r}")
        if self.object is not None:
            parts.append("object=...")
        return f"Response({', '.join(parts)})"


def allow(*warnings):
    """Let the write through, unchanged, with these warnings."""
    return Response(warnings=warnings)


warn = allow  # return warn("deprecated field spec.foo") reads better


def deny(message, code=403, reason=None, warnings=()):
    """Refuse the write: 403 Forbidden unless told (reason None: "Forbidden" for 403, else "",
    which the host derives from the code)."""
    if reason is None:
        reason = "Forbidden" if code == 403 else ""
    return Response(denied=Denial(int(code), reason, str(message)), warnings=warnings)


def json_patch(ops, *warnings):
    """Allow with a JSON patch (RFC 6902): a list of {"op", "path", "value"} dicts (see
    turtles_admission.jsonpatch to build or compute one). Mutate only."""
    return Response(warnings=warnings, json_patch=ops)


def replace_object(obj, *warnings):
    """Allow, storing `obj` (a dict) instead of the object. Mutate only."""
    return Response(warnings=warnings, object=obj)


class Denied(Exception):
    """Raised anywhere under validate/mutate: the write is refused (as deny(...) would)."""

    def __init__(self, message, code=403, reason=None):
        super().__init__(message)
        self.response = deny(message, code, reason)
