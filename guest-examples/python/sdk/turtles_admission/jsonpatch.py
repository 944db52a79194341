"""JSON Patch (RFC 6902) helpers: build a patch by hand, compute one from two objects, apply one.

    ops = jsonpatch.diff(before, after)       # the ops turning `before` into `after`
    ops = [jsonpatch.add(["metadata", "labels", "team"], "payments")]
"""

import copy


def escape(token):
    """One JSON Pointer reference token: "~" -> "~0", "/" -> "~1"."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(*parts):
    """A JSON Pointer from path parts (strings or list indexes), each escaped:
    pointer("metadata", "labels", "app.kubernetes.io/name") == "/metadata/labels/app.kubernetes.io~1name".
    A single list or tuple argument is the parts."""
    if len(parts) == 1 and isinstance(parts[0], (list, tuple)):
        parts = parts[0]
    return "".join("/" + escape(p) for p in parts)


def _path(path):
    return path if isinstance(path, str) else pointer(path)


def add(path, value):
    """{"op": "add", ...}; `path` a pointer string or a list of parts."""
    return {"op": "add", "path": _path(path), "value": value}


def replace(path, value):
    return {"op": "replace", "path": _path(path), "value": value}


def remove(path):
    return {"op": "remove", "path": _path(path)}


def test(path, value):
    """Fails the whole patch unless the value at `path` is `value`."""
    return {"op": "test", "path": _path(path), "value": value}


def diff(old, new, path=""):
    """The ops that turn `old` into `new`: added, removed and replaced object members, recursively;
    lists of the same length element by element, other lists replaced whole. [] when equal."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        ops = []
        for k in old:
            if k not in new:
                ops.append({"op": "remove", "path": f"{path}/{escape(k)}"})
        for k, v in new.items():
            if k not in old:
                ops.append({"op": "add", "path": f"{path}/{escape(k)}", "value": copy.deepcopy(v)})
            else:
                ops.extend(diff(old[k], v, f"{path}/{escape(k)}"))
        return ops
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        ops = []
        for i, (a, b) in enumerate(zip(old, new)):
            ops.extend(diff(a, b, f"{path}/{i}"))
        return ops
    return [{"op": "replace", "path": path, "value": copy.deepcopy(new)}]


def _parts(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError(f"not a JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def _index(container, token, allow_end):
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise ValueError(f"not a list index: {token!r}")
    i = int(token)
    if i > len(container) or (i == len(container) and not allow_end):
        raise ValueError(f"list index {i} out of range")
    return i


def apply(doc, ops):
    """`doc` with the ops applied (a new object; `doc` is left as it is). Raises ValueError for an
    op that does not apply (a missing path, a failed test). Supports add, remove, replace, move,
    copy and test: what the host applies, for tests in plain Python."""
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, path = op["op"], op["path"]
        if kind in ("move", "copy"):
            value = _get(doc, _parts(op["from"]))
            if kind == "move":
                doc = _remove(doc, _parts(op["from"]))
            doc = _add(doc, _parts(path), copy.deepcopy(value))
        elif kind == "test":
            if _get(doc, _parts(path)) != op["value"]:
                raise ValueError(f"test failed at {path}")
        elif kind == "remove":
            doc = _remove(doc, _parts(path))
        elif kind == "add":
            doc = _add(doc, _parts(path), copy.deepcopy(op["value"]))
        elif kind == "replace":
            doc = _remove(doc, _parts(path))
            doc = _add(doc, _parts(path), copy.deepcopy(op["value"]))
        else:
            raise ValueError(f"unknown JSON patch op {kind!r}")
    return doc


def _get(doc, parts):
    for p in parts:
        if isinstance(doc, list):
            doc = doc[_index(doc, p, False)]
        elif isinstance(doc, dict) and p in doc:
            doc = doc[p]
        else:
            raise ValueError(f"no member {p!r}")
    return doc


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _get(doc, parts[:-1])
    if isinstance(parent, list):
        parent.insert(_index(parent, parts[-1], True), value)
    elif isinstance(parent, dict):
        parent[parts[-1]] = value
    else:
        raise ValueError(f"cannot add {parts[-1]!r} to a {type(parent).__name__}")
    return doc


def _remove(doc, parts):
    if not parts:
        return None
    parent = _get(doc, parts[:-1])
    if isinstance(parent, list):
        del parent[_index(parent, parts[-1], False)]
    elif isinstance(parent, dict) and parts[-1] in parent:
        del parent[parts[-1]]
    else:
        raise ValueError(f"no member {parts[-1]!r} to remove")
    return doc
