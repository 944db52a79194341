"""The admission policy SDK (turtles_admission) and py-defaults in plain CPython, against the
FakeHost (python3 -m unittest discover -s tests)."""

import copy
import importlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

import helpers
from turtles_admission import (
    CREATE,
    DELETE,
    FAIL,
    IGNORE,
    UPDATE,
    Denied,
    Permission,
    Policy,
    Registration,
    Request,
    Rule,
    allow,
    cache,
    deny,
    json_patch,
    jsonpatch,
    log,
    replace_object,
    warn,
)
from turtles_admission.testing import FakeHost

defaults = helpers.load_example("py-defaults")


class JsonPatchTest(unittest.TestCase):
    def test_pointer(self):
        self.assertEqual(jsonpatch.pointer("metadata", "labels", "a/b~c"), "/metadata/labels/a~1b~0c")
        self.assertEqual(jsonpatch.pointer(["spec", "containers", 0]), "/spec/containers/0")
        self.assertEqual(jsonpatch.add(["metadata", "labels", "x"], "1"),
                         {"op": "add", "path": "/metadata/labels/x", "value": "1"})

    def test_diff_then_apply_gives_the_new_object(self):
        old = {"metadata": {"name": "a", "labels": {"x": "1", "a/b": "2"}}, "spec": {"c": [1, {"d": 2}], "e": [1]}}
        cases = [
            {"metadata": {"name": "a", "labels": {"x": "2", "a/b": "2", "y": "3"}}, "spec": old["spec"]},
            {"metadata": {"name": "a"}, "spec": {"c": [1, {"d": 3, "f": None}], "e": [1, 2]}},
            {"metadata": {"name": "a", "labels": None}, "spec": {}},
            [1, 2],
        ]
        for new in cases:
            ops = jsonpatch.diff(old, new)
            self.assertEqual(jsonpatch.apply(old, ops), new, ops)
        self.assertEqual(jsonpatch.diff(old, copy.deepcopy(old)), [])
        self.assertEqual(jsonpatch.diff({"a": {"b/c": 1}}, {"a": {"b/c": 2}}),
                         [{"op": "replace", "path": "/a/b~1c", "value": 2}])

    def test_apply_ops(self):
        doc = {"a": [1, 2], "b": {"c": 1}}
        out = jsonpatch.apply(doc, [
            {"op": "add", "path": "/a/-", "value": 3},
            {"op": "add", "path": "/a/0", "value": 0},
            {"op": "test", "path": "/b/c", "value": 1},
            {"op": "move", "from": "/b/c", "path": "/d"},
            {"op": "copy", "from": "/d", "path": "/e"},
            {"op": "remove", "path": "/a/1"},
            {"op": "replace", "path": "/b", "value": "x"},
        ])
        self.assertEqual(out, {"a": [0, 2, 3], "b": "x", "d": 1, "e": 1})
        self.assertEqual(doc, {"a": [1, 2], "b": {"c": 1}})  # untouched
        for bad in ([{"op": "test", "path": "/b/c", "value": 2}], [{"op": "remove", "path": "/zz"}],
                    [{"op": "replace", "path": "/a/5", "value": 1}], [{"op": "add", "path": "/q/r", "value": 1}]):
            with self.assertRaises(ValueError):
                jsonpatch.apply(doc, bad)


class RegistrationTest(unittest.TestCase):
    def test_rules(self):
        r = Rule("v1/pods", CREATE)
        self.assertEqual((r.api_groups, r.api_versions, r.resources, r.operations, r.scope),
                         ([""], ["v1"], ["pods"], ["CREATE"], "*"))
        r = Rule("apps/v1/deployments", ["create", "Update"], scope="namespaced")
        self.assertEqual((r.api_groups, r.resources, r.operations, r.scope), (["apps"], ["deployments"],
                                                                              ["CREATE", "UPDATE"], "Namespaced"))
        self.assertEqual(Rule("v1/pods/status").resources, ["pods/status"])
        self.assertEqual(Rule("v1beta1/things/scale").api_groups, [""])
        self.assertEqual(Rule("apps/v1/deployments/scale").resources, ["deployments/scale"])
        r = Rule("*/*/*", "*")
        self.assertEqual((r.api_groups, r.api_versions, r.resources, r.operations), (["*"], ["*"], ["*"], []))
        r = Rule(api_groups=["", "apps"], resources=["pods", "deployments"], operations=DELETE)
        self.assertEqual((r.api_groups, r.api_versions, r.operations), (["", "apps"], ["*"], ["DELETE"]))
        for bad in (lambda: Rule("v1/pods", "CONNECT"), lambda: Rule("pods"), lambda: Rule(),
                    lambda: Rule("v1/pods", scope="cluster-wide"), lambda: Rule("v1/pods", resources=["x"])):
            with self.assertRaises(ValueError):
                bad()

    def test_registration(self):
        with self.assertRaises(ValueError):
            Registration([])
        with self.assertRaises(ValueError):
            Registration(Rule("v1/pods"), failure_policy="maybe")
        with self.assertRaises(TypeError):
            Registration(["v1/pods"])
        reg = Registration(Rule("v1/pods"), failure_policy="ignore", timeout_ms=50,
                           permissions=[Permission.core("namespaces", "get")])
        self.assertEqual((reg.failure_policy, reg.timeout_ms, reg.permissions[0].verbs), (IGNORE, 50, ["get"]))

    def test_validating_and_mutating_follow_the_overrides(self):
        class V(Policy):
            def register(self):
                return Registration(Rule("v1/pods"))

            def validate(self, request):
                return allow()

        class M(V):
            validate = Policy.validate

            def mutate(self, request):
                return allow()

        class Neither(Policy):
            def register(self):
                return Registration(Rule("v1/pods"))

        self.assertEqual((V().registration.validating, V().registration.mutating), (True, False))
        self.assertEqual((M().registration.validating, M().registration.mutating), (False, True))
        with self.assertRaises(ValueError):
            Neither().registration


class RequestTest(unittest.TestCase):
    def test_fields_and_lazy_objects(self):
        req = Request(resource="apps/v1/deployments", operation="update",
                      object={"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "d", "namespace": "ns", "labels": {"a": "1"}}},
                      old_object=b"{not json")
        self.assertEqual((req.name, req.namespace, str(req.kind), str(req.resource)),
                         ("d", "ns", "apps/v1/Deployment", "apps/v1/deployments"))
        self.assertTrue(req.is_update and req.is_resource("apps/v1/deployments") and req.is_resource("*/*/*"))
        self.assertFalse(req.is_resource("v1/pods") or req.is_resource("apps/v1/deployments", "scale"))
        self.assertEqual(req.labels, {"a": "1"})
        with self.assertRaises(ValueError):  # parsed only when asked for
            req.old_object
        self.assertIs(req.object, req.object)

    def test_patch_from_changes_in_place(self):
        req = Request(object={"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "a"}]}})
        self.assertEqual(req.patch("nothing"), allow("nothing"))
        req.object["metadata"]["labels"] = {"team": "x"}
        req.object["spec"]["containers"][0]["image"] = "i"
        out = req.patch("set")
        self.assertEqual(out.json_patch, [
            {"op": "add", "path": "/metadata/labels", "value": {"team": "x"}},
            {"op": "add", "path": "/spec/containers/0/image", "value": "i"},
        ])
        self.assertEqual(out.warnings, ["set"])
        self.assertEqual(jsonpatch.apply(req.original_object(), out.json_patch), req.object)


class ResponseTest(unittest.TestCase):
    def test_helpers(self):
        self.assertTrue(allow().allowed)
        self.assertEqual(tuple(deny("no").denied), (403, "Forbidden", "no"))
        self.assertEqual(tuple(deny("bad", code=422).denied), (422, "", "bad"))
        self.assertEqual(tuple(deny("bad", 422, "Invalid").denied), (422, "Invalid", "bad"))
        self.assertEqual(warn("a").warn("b").warnings, ["a", "b"])
        self.assertEqual(json_patch([], "w").changes, False)
        self.assertTrue(replace_object({"a": 1}).changes)
        with self.assertRaises(ValueError):
            type(allow())(json_patch=[], object={})

    def test_policy_runs(self):
        class P(Policy):
            answer = None

            def register(self):
                return Registration(Rule("v1/pods"))

            def validate(self, request):
                return self.answer(request)

            mutate = validate

        p = P()
        req = Request(object={"metadata": {"name": "a"}})
        with FakeHost() as host:
            for answer, want in [
                (lambda r: None, allow()),
                (lambda r: deny("no"), deny("no")),
                (lambda r: replace_object({"x": 1}, "w"), replace_object({"x": 1}, "w")),
            ]:
                p.answer = answer
                self.assertEqual(p.run_mutate(req), want)

            def denied(r):
                raise Denied("nope", 409, "Conflict")

            p.answer = denied
            self.assertEqual(tuple(p.run_validate(req).denied), (409, "Conflict", "nope"))
            p.answer = lambda r: json_patch([{"op": "remove", "path": "/spec"}], "w")
            self.assertEqual(p.run_validate(req), allow("w"))  # validate cannot change the object
            self.assertEqual(host.logs[-1][0], log.WARN)

            p.answer = lambda r: r.object["spec"]["missing"]
            with self.assertRaises(KeyError):  # raised on: the call traps, the host's failure policy decides
                p.run_mutate(req)
            self.assertEqual(host.logs[-1][0], log.ERROR)
            self.assertIn("P.mutate raised KeyError", host.logs[-1][1])
            self.assertIn("traceback", dict(host.logs[-1][2]))
            p.answer = lambda r: 42
            with self.assertRaisesRegex(TypeError, "not a Response"):
                p.run_validate(req)


class CacheTest(unittest.TestCase):
    def test_get_and_list(self):
        with FakeHost() as host:
            host.add("v1/namespaces", {"metadata": {"name": "a", "labels": {"team": "x"}}})
            host.add("v1/namespaces", {"metadata": {"name": "b"}})
            host.add("apps/v1/deployments", {"metadata": {"name": "d", "namespace": "a"}})
            self.assertEqual(cache.get("v1/namespaces", None, "a")["metadata"]["labels"], {"team": "x"})
            self.assertIsNone(cache.get("v1/namespaces", "", "zz"))
            self.assertEqual([n["metadata"]["name"] for n in cache.list("v1/namespaces")], ["a", "b"])
            self.assertEqual(len(cache.list("v1/namespaces", labels={"team": "x"})), 1)
            self.assertEqual(len(cache.list("apps/v1/deployments", "a")), 1)
            self.assertEqual(cache.list("apps/v1/deployments", "b"), [])
            host.readable = {("", "namespaces")}
            self.assertIsNone(cache.get("apps/v1/deployments", "a", "d"))  # not allowed: not there
            log.info("hello", n=1)
            self.assertEqual(host.logs[-1], (log.INFO, "hello", [("n", "1")]))


def _pod(labels=None, containers=None, namespace="payments"):
    meta = {"name": "p", "namespace": namespace}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": containers if containers is not None else [{"name": "app", "image": "nginx"}]}}


class PyDefaultsTest(unittest.TestCase):
    def setUp(self):
        self.policy = defaults.WitWorld.policy
        self.host = FakeHost().install()
        self.addCleanup(self.host.uninstall)
        self.host.add("v1/namespaces", {"metadata": {"name": "payments", "labels": {"team": "pay"}}})
        self.host.add("v1/namespaces", {"metadata": {"name": "plain"}})

    def mutate(self, obj, resource="v1/pods", operation=CREATE):
        out = self.policy.run_mutate(Request(resource=resource, operation=operation, object=obj, old_object=None))
        self.assertTrue(out.allowed)
        self.assertIsNone(out.object)  # a JSON patch, never a whole object
        return out, FakeHost.apply(obj, out)

    def test_registration(self):
        reg = self.policy.registration
        self.assertEqual((reg.validating, reg.mutating, reg.failure_policy), (False, True, FAIL))
        self.assertEqual([(r.api_groups, r.resources, r.operations) for r in reg.rules],
                         [([""], ["pods"], ["CREATE"]), (["apps"], ["deployments"], ["CREATE", "UPDATE"])])
        self.assertEqual([(p.api_groups, p.resources, p.verbs) for p in reg.permissions],
                         [([""], ["namespaces"], ["get", "list"])])

    def test_pod_gets_requests_and_the_namespace_team(self):
        out, pod = self.mutate(_pod())
        self.assertEqual(pod["metadata"]["labels"], {"team": "pay"})
        self.assertEqual(pod["spec"]["containers"][0]["resources"], {"requests": {"cpu": "100m", "memory": "128Mi"}})
        self.assertEqual(out.warnings, ["py-defaults: set label team=pay; container app requests cpu=100m memory=128Mi"])

    def test_only_the_missing_keys(self):
        containers = [
            {"name": "a", "resources": {"requests": {"cpu": "1"}}},
            {"name": "b", "resources": {"limits": {"cpu": "50m"}}},
            {"name": "c", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
        ]
        out, pod = self.mutate(_pod(labels={"team": "mine", "x": "y"}, containers=containers))
        got = [c["resources"].get("requests") for c in pod["spec"]["containers"]]
        self.assertEqual(got, [{"cpu": "1", "memory": "128Mi"}, {"cpu": "50m", "memory": "128Mi"},
                               {"cpu": "2", "memory": "1Gi"}])
        self.assertEqual(pod["metadata"]["labels"], {"team": "mine", "x": "y"})
        self.assertEqual(len(out.json_patch), 2)
        self.assertEqual(out.warnings, ["py-defaults: set container a requests memory=128Mi; "
                                        "container b requests cpu=50m memory=128Mi"])

    def test_unassigned_without_a_namespace_label(self):
        for ns in ("plain", "missing"):
            _, pod = self.mutate(_pod(namespace=ns))
            self.assertEqual(pod["metadata"]["labels"]["team"], "unassigned")
        self.host.readable = set()  # no permission: the same as not found
        _, pod = self.mutate(_pod())
        self.assertEqual(pod["metadata"]["labels"]["team"], "unassigned")

    def test_nothing_to_do(self):
        done = _pod(labels={"team": "t"}, containers=[{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1"}}}])
        out, pod = self.mutate(done)
        self.assertEqual((out.json_patch, out.warnings, pod), (None, [], done))

    def test_deployment_template(self):
        dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "payments"},
               "spec": {"template": {"metadata": {"labels": {"app": "d"}},
                                     "spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "app"}]}}}}
        for op in (CREATE, UPDATE):
            out, new = self.mutate(dep, "apps/v1/deployments", op)
            spec = new["spec"]["template"]["spec"]
            for c in spec["initContainers"] + spec["containers"]:
                self.assertEqual(c["resources"]["requests"], {"cpu": "100m", "memory": "128Mi"})
            self.assertEqual(new["metadata"]["labels"], {"team": "pay"})
            self.assertEqual(new["spec"]["template"]["metadata"]["labels"], {"app": "d"})  # the object, not the template
            self.assertTrue(out.warnings[0].startswith("py-defaults: set label team=pay; container init requests"))


_TOOL = os.path.join(helpers.PYTHON, "..", "..", "target", "toolchains", "componentize-py-0.25.1")


@unittest.skipUnless(os.path.isdir(_TOOL) and sys.version_info >= (3, 11),
                     "componentize-py is not installed under target/toolchains (build.sh installs it)")
class WitGlueTest(unittest.TestCase):
    """The exports' glue against the real Python bindings of wit/admission (componentize-py
    `bindings`): the records, enums and variants the component hands the host."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        wit = os.path.join(helpers.PYTHON, "..", "..", "wit", "admission")
        subprocess.run(
            [sys.executable, "-c", "import sys, componentize_py; sys.argv[0] = 'componentize-py'; "
             "sys.exit(componentize_py.script())", "-d", wit, "-w", "policy", "bindings", cls.tmp.name],
            env={**os.environ, "PYTHONPATH": _TOOL, "PYTHONDONTWRITEBYTECODE": "1"}, check=True)
        sys.path.insert(0, cls.tmp.name)
        from turtles_admission import _host

        cls.saved_backend = _host.backend
        importlib.reload(_host)  # binds to the generated wit_world now
        cls.host, cls.wit = _host, _host.wit
        cls.wit_host = sys.modules["wit_world.imports.host"]

    @classmethod
    def tearDownClass(cls):
        sys.path.remove(cls.tmp.name)
        for name in [m for m in sys.modules if m.split(".")[0] in ("wit_world", "componentize_py_types")]:
            del sys.modules[name]
        importlib.reload(cls.host)
        cls.host.install(cls.saved_backend)
        cls.tmp.cleanup()

    def test_register_mutate_validate(self):
        t, h = self.wit, self.wit_host
        self.assertIsNotNone(t)
        ns = json.dumps({"metadata": {"name": "payments", "labels": {"team": "pay"}}}).encode()
        logs = []
        for name, fn in (("cache_get", lambda g, v, r, n, name: ns if (r, name) == ("namespaces", "payments") else None),
                         ("cache_list", lambda *a: b"[]"), ("log", lambda *a: logs.append(a))):
            saved = getattr(h, name)
            setattr(h, name, fn)
            self.addCleanup(setattr, h, name, saved)
        world = defaults.WitWorld()
        reg = world.register()
        self.assertEqual((reg.validating, reg.mutating, reg.failure_policy), (False, True, t.FailurePolicy.FAIL))
        self.assertEqual(reg.rules[1], t.Rule([t.Operation.CREATE, t.Operation.UPDATE], ["apps"], ["v1"],
                                              ["deployments"], t.Scope.ANY))
        self.assertEqual(reg.permissions, [t.Permission([""], ["namespaces"], ["get", "list"])])

        req = t.Request("u", t.GroupVersionKind("", "v1", "Pod"), t.GroupVersionResource("", "v1", "pods"), "", "p",
                        "payments", t.Operation.CREATE, t.UserInfo("alice", "1", ["g"], [("k", ["v"])]), False,
                        json.dumps(_pod()).encode(), None)
        m = world.mutate(req)
        self.assertIsNone(m.denied)
        self.assertIsInstance(m.patch, t.Patch_JsonPatch)
        self.assertEqual(jsonpatch.apply(_pod(), json.loads(m.patch.value))["metadata"]["labels"], {"team": "pay"})
        self.assertEqual(logs[-1][0], t.LogLevel.INFO)
        self.assertEqual(world.validate(req), t.Verdict(None, []))
        req.object = b"{"
        with self.assertRaises(ValueError):  # not JSON: a trap in the component
            world.mutate(req)
        self.assertEqual(logs[-1][0], t.LogLevel.ERROR)
        req.object = json.dumps(_pod(labels={"team": "t"}, containers=[])).encode()
        self.assertEqual(world.mutate(req), t.Mutation(None, [], t.Patch_None_()))


if __name__ == "__main__":
    unittest.main()
