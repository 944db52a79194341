"""An in-memory stand-in for the host, to unit-test controllers in plain CPython (no Wasm).

    from turtles_controller.testing import FakeCluster

    with FakeCluster() as cluster:                  # routes api/cache/log here
        cluster.add("v1/configmaps", {"metadata": {"name": "a", "namespace": "default"}})
        outcome = controller.run(Key("default", "a"), cluster.get("v1/configmaps", "default", "a"))

It serves the API calls the SDK makes (GET/list with simple label selectors, POST with
generateName, PUT with resourceVersion conflicts, merge and JSON patches, DELETE with
preconditions, the /status subresource, metadata.generation) and the cache from the same store
(every kind, unfiltered). It is not the real server: test against `turtles serve` too.
"""

import copy
import itertools
import json
import uuid
from datetime import datetime, timezone
from urllib.parse import parse_qs, unquote, urlsplit

from . import _host
from .resources import resource as _resource


class _Fail(Exception):
    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def _merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge_patch(out.get(k), v)
    return out


def _pointer(path):
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def _json_patch(doc, ops):
    doc = copy.deepcopy(doc)
    for op in ops:
        parts = _pointer(op["path"])
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        kind = op["op"]
        if kind == "test":
            cur = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if cur != op.get("value"):
                raise _Fail(422, "Invalid", f"test operation failed at {op['path']}")
        elif kind == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                del parent[last]
        elif kind in ("add", "replace"):
            value = copy.deepcopy(op["value"])
            if isinstance(parent, list):
                if last == "-":
                    parent.append(value)
                elif kind == "add":
                    parent.insert(int(last), value)
                else:
                    parent[int(last)] = value
            else:
                if kind == "replace" and last not in parent:
                    raise _Fail(422, "Invalid", f"replace of missing {op['path']}")
                parent[last] = value
        else:
            raise _Fail(400, "BadRequest", f"unsupported JSON patch op {kind}")
    return doc


def _selector_matches(selector, labels):
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _spec_part(obj):
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class FakeCluster:
    """An in-memory API server + cache + log, installed as the SDK's host."""

    def __init__(self, echo_logs=False):
        self.objects = {}  # (group, version, resource, namespace, name) -> object
        self.calls = []  # (method, path) of every API call, in order
        self.logs = []  # (level, message, fields)
        self.echo_logs = echo_logs
        self._rv = itertools.count(1)
        self._previous = None
        self.refuse_events = None  # a message: record-event fails with it (like a 403)
        self.applies = []  # (path, body) of every server-side apply

    # -- installing -------------------------------------------------------------------------
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

    # -- direct access (no API call recorded; e.g. to play another controller) ---------------
    def add(self, resource, obj):
        """Store `obj` as if created (uid, resourceVersion, generation filled in); returns it."""
        r = _resource(resource)
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("generation", 1)
        meta.setdefault("creationTimestamp", self._now())
        meta["resourceVersion"] = str(next(self._rv))
        self.objects[(r.group, r.version, r.resource, meta.get("namespace") or "", meta["name"])] = obj
        return copy.deepcopy(obj)

    def get(self, resource, namespace, name):
        r = _resource(resource)
        obj = self.objects.get((r.group, r.version, r.resource, namespace or "", name))
        return copy.deepcopy(obj)

    def list(self, resource, namespace=None):
        r = _resource(resource)
        return [
            copy.deepcopy(o)
            for (g, v, res, ns, _n), o in sorted(self.objects.items())
            if (g, v, res) == (r.group, r.version, r.resource) and (namespace is None or ns == namespace)
        ]

    def set_status(self, resource, namespace, name, status):
        """Replace an object's status (as another controller would); returns the object."""
        r = _resource(resource)
        key = (r.group, r.version, r.resource, namespace or "", name)
        self.objects[key]["status"] = copy.deepcopy(status)
        self.objects[key]["metadata"]["resourceVersion"] = str(next(self._rv))
        return copy.deepcopy(self.objects[key])

    def delete(self, resource, namespace, name):
        r = _resource(resource)
        self.objects.pop((r.group, r.version, r.resource, namespace or "", name), None)

    # -- the host backend --------------------------------------------------------------------
    def cache_get(self, group, version, resource, namespace, name):
        obj = self.objects.get((group, version, resource, namespace, name))
        return json.dumps(obj).encode() if obj is not None else None

    def cache_list(self, group, version, resource, namespace):
        items = [
            o
            for (g, v, r, ns, _n), o in sorted(self.objects.items())
            if (g, v, r) == (group, version, resource) and (namespace is None or ns == namespace)
        ]
        return json.dumps(items).encode()

    def log(self, level, message, fields):
        self.logs.append((level, message, fields))
        if self.echo_logs:
            print(("TRACE", "DEBUG", "INFO", "WARN", "ERROR")[level], message, dict(fields))

    def record_event(self, regarding, type_, reason, action, note):
        """What the host does for record-event: a v1 Event, a repeat counted on the same one.
        Refused (like a 403) when `refuse_events` is set."""
        if self.refuse_events:
            return self.refuse_events
        api_version, kind, namespace, name, uid = regarding
        if not (api_version and kind and name) or not reason:
            return "invalid event: regarding needs apiVersion, kind and name, and a reason"
        ns = namespace or "default"
        key = ("", "v1", "events", ns, f"{name}.{abs(hash((kind, name, uid, type_, reason, action, note)))}")
        current = self.objects.get(key)
        if current is not None:
            current["count"] += 1
            current["lastTimestamp"] = self._now()
            return None
        involved = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
        if namespace:
            involved["namespace"] = namespace
        self._create(
            ("", "v1", "events"),
            ns,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": key[4]},
                "involvedObject": involved,
                "type": type_,
                "reason": reason,
                "action": action,
                "message": note[:1024],
                "count": 1,
                "firstTimestamp": self._now(),
                "lastTimestamp": self._now(),
            },
        )
        return None

    def events(self, namespace=None):
        """The Events recorded (in a namespace, or all)."""
        return [
            o
            for (g, v, r, ns, _n), o in sorted(self.objects.items())
            if (g, v, r) == ("", "v1", "events") and (namespace is None or ns == namespace)
        ]

    def api_call(self, method, path, headers, body):
        self.calls.append((method, path))
        try:
            status, answer = self._serve(method, path, dict((k.lower(), v) for k, v in headers), body)
            return status, [("content-type", "application/json")], json.dumps(answer).encode()
        except _Fail as f:
            st = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": f.message,
                "reason": f.reason,
                "code": f.code,
            }
            return f.code, [("content-type", "application/json")], json.dumps(st).encode()

    # -- serving -----------------------------------------------------------------------------
    @staticmethod
    def _now():
        return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    @staticmethod
    def _parse(path):
        url = urlsplit(path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        if parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise _Fail(404, "NotFound", f"unknown path {path}")
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        res = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return (group, version, res), namespace, name, sub, parse_qs(url.query)

    def _serve(self, method, path, headers, body):
        (g, v, r), ns, name, sub, query = self._parse(path)
        data = json.loads(body) if body else None
        key = (g, v, r, ns, name)
        if name is None:
            if method == "GET":
                items = [
                    o
                    for (og, ov, orr, ons, _n), o in sorted(self.objects.items())
                    if (og, ov, orr) == (g, v, r) and (not ns or ons == ns)
                ]
                sel = query.get("labelSelector", [""])[0]
                if sel:
                    items = [o for o in items if _selector_matches(sel, (o["metadata"].get("labels") or {}))]
                return 200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}
            if method == "POST":
                return 201, self._create((g, v, r), ns, data)
            raise _Fail(405, "MethodNotAllowed", f"{method} on a collection")
        current = self.objects.get(key)
        if current is None and method == "PATCH" and headers.get("content-type", "").startswith(
            "application/apply-patch+yaml"
        ):
            # Server-side apply creates what does not exist.
            self.applies.append((path, data))
            return 201, self._create((g, v, r), ns, copy.deepcopy(data))
        if current is None:
            raise _Fail(404, "NotFound", f'{r} "{name}" not found')
        if method == "GET":
            return 200, current
        if method == "DELETE":
            pre = (data or {}).get("preconditions") or {}
            if "uid" in pre and pre["uid"] != current["metadata"]["uid"]:
                raise _Fail(409, "Conflict", "Precondition failed: UID in precondition does not match")
            if "resourceVersion" in pre and pre["resourceVersion"] != current["metadata"]["resourceVersion"]:
                raise _Fail(409, "Conflict", "Precondition failed: resourceVersion does not match")
            del self.objects[key]
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "metadata": {}}
        if method == "PUT":
            rv = (data.get("metadata") or {}).get("resourceVersion")
            if rv and rv != current["metadata"]["resourceVersion"]:
                raise _Fail(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {r} "{name}": the object has been modified; '
                    "please apply your changes to the latest version and try again",
                )
            new = data
        elif method == "PATCH":
            ctype = headers.get("content-type", "")
            if ctype.startswith("application/merge-patch+json"):
                new = _merge_patch(current, data)
            elif ctype.startswith("application/json-patch+json"):
                new = _json_patch(current, data)
            elif ctype.startswith("application/apply-patch+yaml"):
                # Server-side apply, roughly: the applied fields merged in (no field ownership).
                self.applies.append((path, data))
                new = _merge_patch(current, data)
            else:
                raise _Fail(415, "UnsupportedMediaType", f"fake cluster: unsupported patch type {ctype}")
        else:
            raise _Fail(405, "MethodNotAllowed", f"{method} on an object")
        return 200, self._write(key, current, new, sub)

    def _create(self, gvr, ns, obj):
        meta = obj.setdefault("metadata", {})
        if meta.get("resourceVersion"):
            raise _Fail(400, "BadRequest", "resourceVersion should not be set on objects to be created")
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise _Fail(422, "Invalid", "name or generateName is required")
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if ns:
            meta["namespace"] = ns
        key = gvr + (ns, meta["name"])
        if key in self.objects:
            raise _Fail(409, "AlreadyExists", f'{gvr[2]} "{meta["name"]}" already exists')
        meta["uid"] = str(uuid.uuid4())
        meta["generation"] = 1
        meta["creationTimestamp"] = self._now()
        meta["resourceVersion"] = str(next(self._rv))
        self.objects[key] = obj
        return obj

    def _write(self, key, current, new, sub):
        new = copy.deepcopy(new)
        if sub == "status":  # only status changes
            out = copy.deepcopy(current)
            if "status" in new:
                out["status"] = new["status"]
            else:
                out.pop("status", None)
        elif sub is None:  # status is kept; identity fields are not the client's
            out = new
            if "status" in current:
                out["status"] = copy.deepcopy(current["status"])
            else:
                out.pop("status", None)
            meta = out.setdefault("metadata", {})
            for k in ("uid", "creationTimestamp", "generation", "namespace", "name"):
                if k in current["metadata"]:
                    meta[k] = current["metadata"][k]
            if _spec_part(out) != _spec_part(current):
                meta["generation"] = current["metadata"].get("generation", 1) + 1
        else:
            raise _Fail(404, "NotFound", f"no subresource {sub}")
        out["metadata"]["resourceVersion"] = str(next(self._rv))
        self.objects[key] = out
        return out
