"""The one place that talks to the host (the WIT imports of world `policy`), so everything else is
plain Python.

Inside a component built by componentize-py against `wit/admission` (world `policy`), `wit_world`
is the generated binding and the calls go to the host. In plain CPython (unit tests) there is no
`wit_world`: install a backend first, e.g. `turtles_admission.testing.FakeHost().install()`.
"""

try:  # componentize-py generates `wit_world` on the fly when it builds the component
    from wit_world.imports import host as _wit_host
    from wit_world.imports import types as wit

    if not hasattr(wit, "FailurePolicy"):  # the bindings of another world (a controller)
        raise ImportError("not the turtles:admission bindings")
except ImportError:  # plain CPython, or imported by a controller: no policy host
    _wit_host = None
    wit = None


class _ComponentBackend:
    """Forwards to the WIT imports."""

    def cache_get(self, group, version, resource, namespace, name):
        return _wit_host.cache_get(group, version, resource, namespace, name)

    def cache_list(self, group, version, resource, namespace):
        return _wit_host.cache_list(group, version, resource, namespace)

    def log(self, level, message, fields):
        _wit_host.log(wit.LogLevel(level), message, fields)


class _NoBackend:
    """Outside a component, before a test installed a backend."""

    def _fail(self, *_args):
        raise RuntimeError(
            "turtles_admission: no host here (plain Python). In tests, install one first: "
            "turtles_admission.testing.FakeHost().install()"
        )

    cache_get = cache_list = _fail

    def log(self, level, message, fields):
        names = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR")
        extra = "".join(f" {k}={v}" for k, v in fields)
        print(f"{names[level]} {message}{extra}")


backend = _ComponentBackend() if _wit_host is not None else _NoBackend()


def install(new_backend):
    """Route host calls to `new_backend` (tests): any object with cache_get, cache_list and log
    (turtles_controller.testing.FakeCluster has them too). Returns the previous backend."""
    global backend
    previous, backend = backend, new_backend
    return previous
