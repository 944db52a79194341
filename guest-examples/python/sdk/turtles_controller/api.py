"""Calls to the API server, made in-process as the controller's own user
(`system:controller:NAME`) and authorized by RBAC against the controller's permissions.

Objects go in and come out as dicts. A non-2xx answer raises ApiError. Every function that takes
a resource takes a Resource or a string such as "v1/configmaps" or "apps/v1/deployments";
`namespace` "" or None means cluster-scoped (or, for `list`, every namespace).
"""

import builtins
import json
from urllib.parse import quote

from . import _host
from .resources import resource as _resource

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class ApiError(Exception):
    """A non-2xx answer, described by the server's Status body when it has one."""

    def __init__(self, status, reason="", message="", body=None):
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status  # HTTP status code, e.g. 404
        self.reason = reason  # Status reason, e.g. "NotFound", "Conflict", "AlreadyExists"
        self.message = message
        self.body = body  # the parsed Status (or None)

    def is_not_found(self):
        return self.status == 404

    def is_conflict(self):
        """409: AlreadyExists or a stale resourceVersion."""
        return self.status == 409

    def is_already_exists(self):
        return self.status == 409 and self.reason == "AlreadyExists"

    def is_forbidden(self):
        return self.status == 403

    def is_invalid(self):
        return self.status == 422

    @classmethod
    def from_response(cls, status, body):
        parsed = None
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            pass
        if isinstance(parsed, dict):
            return cls(status, parsed.get("reason") or "", parsed.get("message") or "", parsed)
        return cls(status, "", bytes(body).decode("utf-8", "replace"), None)


def call(method, path, headers=(), body=b""):
    """The raw call: returns (status, headers, body bytes); never raises ApiError."""
    return _host.backend.api_call(method, path, builtins.list(headers), bytes(body))


def request(method, path, body=None, content_type=JSON):
    """A JSON call: the parsed answer (None if empty) on 2xx, else raises ApiError."""
    headers = [("accept", JSON)]
    data = b""
    if body is not None:
        headers.append(("content-type", content_type))
        data = json.dumps(body, separators=(",", ":")).encode()
    status, _headers, answer = call(method, path, headers, data)
    if not 200 <= status < 300:
        raise ApiError.from_response(status, answer)
    if not answer:
        return None
    try:
        return json.loads(answer)
    except ValueError as e:
        raise ApiError(status, "InvalidResponse", f"response body is not JSON: {e}") from None


def _where(obj, namespace):
    meta = obj.get("metadata") or {}
    return (namespace if namespace is not None else meta.get("namespace") or ""), meta.get("name")


def get(resource, namespace, name):
    """GET one object."""
    return request("GET", _resource(resource).object_path(namespace, name))


def list(resource, namespace=None, label_selector=None, field_selector=None):
    """GET a collection; returns its items (a list of dicts)."""
    path = _resource(resource).path(namespace)
    query = []
    if label_selector:
        query.append("labelSelector=" + quote(label_selector, safe=""))
    if field_selector:
        query.append("fieldSelector=" + quote(field_selector, safe=""))
    if query:
        path += "?" + "&".join(query)
    answer = request("GET", path) or {}
    return answer.get("items") or []


def create(resource, obj, namespace=None):
    """POST `obj` (namespace: from its metadata unless given); returns the created object."""
    ns, _name = _where(obj, namespace)
    return request("POST", _resource(resource).path(ns), obj)


def update(resource, obj):
    """PUT `obj` (with its metadata.resourceVersion: a stale one raises a 409 conflict)."""
    ns, name = _where(obj, None)
    return request("PUT", _resource(resource).object_path(ns, name), obj)


def update_status(resource, obj):
    """PUT `obj` to its /status subresource (only `status` changes)."""
    ns, name = _where(obj, None)
    return request("PUT", _resource(resource).object_path(ns, name, "status"), obj)


def patch_merge(resource, namespace, name, patch):
    """PATCH with a JSON merge patch (RFC 7386): a dict; None values delete keys."""
    return request("PATCH", _resource(resource).object_path(namespace, name), patch, MERGE_PATCH)


def patch_json(resource, namespace, name, ops):
    """PATCH with a JSON patch (RFC 6902): a list of {"op", "path", "value"} operations."""
    return request("PATCH", _resource(resource).object_path(namespace, name), ops, JSON_PATCH)


def patch_strategic(resource, namespace, name, patch):
    """PATCH with a strategic merge patch (built-in kinds only)."""
    path = _resource(resource).object_path(namespace, name)
    return request("PATCH", path, patch, STRATEGIC_MERGE_PATCH)


def patch_status(resource, namespace, name, patch):
    """Merge-patch the /status subresource: patch_status(r, ns, n, {"status": {...}})."""
    path = _resource(resource).object_path(namespace, name, "status")
    return request("PATCH", path, patch, MERGE_PATCH)


def apply_path(resource, namespace, name, field_manager, force=False):
    """The path of a server-side apply: the object's path with ?fieldManager= (and &force=true)."""
    path = _resource(resource).object_path(namespace, name)
    path += "?fieldManager=" + quote(field_manager, safe="")
    if force:
        path += "&force=true"
    return path


def apply(resource, obj, field_manager, force=False, namespace=None):
    """Server-side apply: PATCH `obj` (the fields this manager owns, with apiVersion, kind and
    metadata.name) as application/apply-patch+yaml (JSON is YAML) to its object path, owned by
    `field_manager`; force=True takes over fields other managers own instead of a 409 conflict.
    Creates the object if it does not exist; returns the result."""
    ns, name = _where(obj, namespace)
    return request("PATCH", apply_path(resource, ns, name, field_manager, force), obj, APPLY_PATCH)


def delete(resource, namespace, name, uid=None, resource_version=None):
    """DELETE one object, optionally only if its uid / resourceVersion still match (else 409)."""
    options = None
    if uid is not None or resource_version is not None:
        pre = {}
        if uid is not None:
            pre["uid"] = uid
        if resource_version is not None:
            pre["resourceVersion"] = resource_version
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": pre}
    return request("DELETE", _resource(resource).object_path(namespace, name), options)
