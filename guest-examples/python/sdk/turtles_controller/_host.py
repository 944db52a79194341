"""The one place that talks to the host (the WIT imports), so everything else is plain Python.

Inside a component built by componentize-py, `wit_world` is the generated binding of
`wit/controller.wit` and the calls go to the host. In plain CPython (unit tests) there is no
`wit_world`: install a backend first, e.g. `turtles_controller.testing.FakeCluster().install()`.
"""

try:  # componentize-py generates `wit_world` on the fly when it builds the component
    from wit_world.imports import host as _wit_host
    from wit_world.imports import types as wit
except ImportError:  # plain CPython: no host
    _wit_host = None
    wit = None


class _ComponentBackend:
    """Forwards to the WIT imports."""

    def api_call(self, method, path, headers, body):
        resp = _wit_host.api_call(wit.HttpRequest(method, path, headers, body))
        return resp.status, resp.headers, resp.body

    def cache_get(self, group, version, resource, namespace, name):
        return _wit_host.cache_get(group, version, resource, namespace, name)

    def cache_list(self, group, version, resource, namespace):
        return _wit_host.cache_list(group, version, resource, namespace)

    def log(self, level, message, fields):
        _wit_host.log(wit.LogLevel(level), message, fields)

    def record_event(self, regarding, type_, reason, action, note):
        """regarding: (api_version, kind, namespace, name, uid). None when recorded, else why not."""
        ref = wit.ObjectReference(*regarding)
        kind = wit.EventType(1 if type_ == "Warning" else 0)  # normal, warning
        try:
            _wit_host.record_event(wit.Event(ref, kind, reason, action, note))
        except Exception as e:  # componentize-py raises result errors as `Err`
            return str(getattr(e, "value", e))
        return None


class _NoBackend:
    """Outside a component, before a test installed a backend."""

    def _fail(self, *_args):
        raise RuntimeError(
            "turtles_controller: no host here (plain Python). In tests, install one first: "
            "turtles_controller.testing.FakeCluster().install()"
        )

    api_call = cache_get = cache_list = record_event = _fail

    def log(self, level, message, fields):
        names = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR")
        extra = "".join(f" {k}={v}" for k, v in fields)
        print(f"{names[level]} {message}{extra}")


backend = _ComponentBackend() if _wit_host is not None else _NoBackend()


def install(new_backend):
    """Route host calls to `new_backend` (tests); returns the previous backend."""
    global backend
    previous, backend = backend, new_backend
    return previous
