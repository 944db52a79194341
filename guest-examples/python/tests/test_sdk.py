"""The SDK in plain CPython, against the FakeCluster (python3 -m unittest discover -s tests)."""

import unittest

import helpers  # noqa: F401  (sys.path)
from turtles_controller import (
    CONFIGMAPS,
    ApiError,
    Controller,
    Done,
    Key,
    Permission,
    RequeueAfter,
    Resource,
    TerminalError,
    TransientError,
    Watch,
    api,
    cache,
    log,
    meta,
    resource,
)
from turtles_controller.testing import FakeCluster


class ResourceTest(unittest.TestCase):
    def test_parse_and_paths(self):
        self.assertEqual(resource("v1/configmaps"), CONFIGMAPS)
        d = resource("apps/v1/deployments")
        self.assertEqual((d.group, d.version, d.resource, d.api_version), ("apps", "v1", "deployments", "apps/v1"))
        self.assertEqual(CONFIGMAPS.path(None), "/api/v1/configmaps")
        self.assertEqual(CONFIGMAPS.object_path("ns", "a"), "/api/v1/namespaces/ns/configmaps/a")
        self.assertEqual(d.object_path("ns", "x", "status"), "/apis/apps/v1/namespaces/ns/deployments/x/status")
        self.assertEqual(Resource("", "v1", "namespaces").object_path("", "kube-system"), "/api/v1/namespaces/kube-system")
        with self.assertRaises(ValueError):
            resource("configmaps")


class ControllerTest(unittest.TestCase):
    def setUp(self):
        self.c = Controller(Watch("v1/configmaps"), permissions=[Permission.core("configmaps", "get")])

    def test_outcomes(self):
        cases = [
            (lambda k, o: None, Done),
            (lambda k, o: Done, Done),
            (lambda k, o: RequeueAfter(500), RequeueAfter(500)),
            (lambda k, o: TerminalError("bad"), TerminalError("bad")),
            (lambda k, o: TransientError("later"), TransientError("later")),
        ]
        for fn, want in cases:
            self.c.reconcile(fn)
            self.assertEqual(self.c.run(Key("ns", "a"), {}), want)

    def test_exceptions(self):
        with FakeCluster():

            @self.c.reconcile
            def boom(key, obj):
                raise KeyError("x")

            out = self.c.run(("ns", "a"), None)
            self.assertIsInstance(out, TransientError)
            self.assertIn("KeyError", str(out))

            @self.c.reconcile
            def terminal(key, obj):
                raise TerminalError("no")

            self.assertEqual(self.c.run(("ns", "a"), None), TerminalError("no"))

            @self.c.reconcile
            def api_fail(key, obj):
                api.get(CONFIGMAPS, "ns", "missing")

            out = self.c.run(("ns", "a"), None)
            self.assertIsInstance(out, TransientError)
            self.assertIn("404", str(out))

            self.c.reconcile(lambda k, o: 42)
            self.assertIsInstance(self.c.run(("ns", "a"), None), TerminalError)

    def test_registration_checks(self):
        with self.assertRaises(ValueError):
            Controller()
        with self.assertRaises(ValueError):
            Controller(Watch("apps/v1/replicasets", owner=("apps", "Deployment")))
        reg = Controller(Watch("apps/v1/deployments"), Watch("apps/v1/replicasets", owner=("apps", "Deployment")),
                         max_concurrent_reconciles=0).registration
        self.assertEqual(reg.max_concurrent_reconciles, 1)
        self.assertEqual(reg.watches[1].owner, ("apps", "Deployment"))

    def test_key(self):
        self.assertEqual(str(Key("ns", "a")), "ns/a")
        self.assertEqual(str(Key("", "node1")), "node1")


class FakeWit:
    """Records what the export glue builds from the WIT types (the real ones exist only in a
    component)."""

    def __getattr__(self, name):
        return lambda *args: (name, args)


class ExportTest(unittest.TestCase):
    def test_register_and_reconcile_glue(self):
        from turtles_controller import _host

        saved, _host.wit = _host.wit, FakeWit()
        self.addCleanup(setattr, _host, "wit", saved)
        c = Controller(
            Watch("apps/v1/deployments", namespace="ns"),
            Watch("apps/v1/replicasets", label_selector="a=b", owner=("apps", "Deployment")),
            permissions=[Permission.group("apps", "replicasets", "*")],
            max_concurrent_reconciles=3,
            resync_seconds=60,
            initial_keys=[("", "singleton")],
            service_account=("ops", "operator"),
        )
        seen = []

        @c.reconcile
        def rec(key, obj):
            seen.append((key, obj))
            return RequeueAfter(7) if obj else TerminalError("x")

        world = c.export()()
        self.assertEqual(world.register(), ("Registration", (
            [("Watch", ("apps", "v1", "deployments", "ns", None, ("KeyMapping_SelfKey", ()))),
             ("Watch", ("apps", "v1", "replicasets", None, "a=b",
                        ("KeyMapping_Owner", (("OwnerKind", ("apps", "Deployment")),))))],
            3, 60, [("Permission", (["apps"], ["replicasets"], ["*"]))],
            [("ObjectKey", ("", "singleton"))], ("ObjectKey", ("ops", "operator")))))
        plain = Controller(Watch("v1/configmaps")).export()().register()
        self.assertEqual(plain[1][4:], ([], None))

        class WitKey:
            namespace, name = "ns", "d"

        self.assertEqual(world.reconcile(WitKey, b'{"a": 1}'), ("Outcome_RequeueAfter", (7,)))
        self.assertEqual(world.reconcile(WitKey, None), ("Outcome_TerminalError", ("x",)))
        self.assertEqual(world.reconcile(WitKey, b"{nope")[0], "Outcome_TerminalError")
        self.assertEqual(seen, [(Key("ns", "d"), {"a": 1}), (Key("ns", "d"), None)])
        c.reconcile(lambda k, o: None)
        self.assertEqual(world.reconcile(WitKey, None), ("Outcome_Done", ()))
        c.reconcile(lambda k, o: TransientError("t"))
        self.assertEqual(world.reconcile(WitKey, None), ("Outcome_TransientError", ("t",)))
        self.assertIs(c.export().controller, c)


class ApplyAndEventsTest(unittest.TestCase):
    def test_server_side_apply(self):
        self.assertEqual(
            api.apply_path(CONFIGMAPS, "ns", "a", "my manager", force=True),
            "/api/v1/namespaces/ns/configmaps/a?fieldManager=my%20manager&force=true",
        )
        with FakeCluster() as c:
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"},
                  "data": {"k": "v"}}
            created = api.apply(CONFIGMAPS, cm, "mgr")
            self.assertEqual(created["data"], {"k": "v"})
            api.apply(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "a", "namespace": "ns"}, "data": {"k2": "w"}}, "mgr", force=True)
            self.assertEqual(c.get(CONFIGMAPS, "ns", "a")["data"], {"k": "v", "k2": "w"})
            self.assertEqual([m for m, _p in c.calls], ["PATCH", "PATCH"])
            self.assertEqual(c.calls[1][1], "/api/v1/namespaces/ns/configmaps/a?fieldManager=mgr&force=true")
            self.assertEqual(len(c.applies), 2)

    def test_events_are_recorded_by_the_host_and_counted(self):
        from turtles_controller import events

        with FakeCluster() as c:
            obj = {"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "namespace": "ns", "uid": "u1"}}
            self.assertTrue(events.record(obj, "Normal", "ScalingReplicaSet", "Scaled up", action="Scale"))
            self.assertTrue(events.record(obj, "Normal", "ScalingReplicaSet", "Scaled up", action="Scale"))
            self.assertTrue(events.record(obj, "Warning", "Failed", "no"))
            evs = c.events("ns")
            self.assertEqual(len(evs), 2)
            scaled = next(e for e in evs if e["reason"] == "ScalingReplicaSet")
            self.assertEqual(scaled["count"], 2)
            self.assertEqual(scaled["involvedObject"],
                             {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "ns", "uid": "u1"})
            self.assertEqual(scaled["action"], "Scale")
            self.assertEqual(c.calls, [])  # the host writes them, not an API call of the guest
            c.refuse_events = 'events is forbidden: User "x" cannot create resource "events"'
            self.assertFalse(events.record(obj, "Normal", "X", "y"))
            self.assertIn("event not recorded", [m for _l, m, _f in c.logs])


class ApiTest(unittest.TestCase):
    def test_crud(self):
        with FakeCluster() as c:
            cm = api.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "v"}})
            self.assertTrue(cm["metadata"]["uid"])
            self.assertEqual(api.get("v1/configmaps", "ns", "a")["data"], {"k": "v"})
            with self.assertRaises(ApiError) as e:
                api.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
            self.assertTrue(e.exception.is_conflict() and e.exception.is_already_exists())
            self.assertEqual(e.exception.reason, "AlreadyExists")

            api.patch_merge(CONFIGMAPS, "ns", "a", {"metadata": {"labels": {"x": "1"}}, "data": {"k": None}})
            got = api.get(CONFIGMAPS, "ns", "a")
            self.assertEqual(got["metadata"]["labels"], {"x": "1"})
            self.assertNotIn("k", got.get("data", {}))

            api.patch_json(CONFIGMAPS, "ns", "a", [{"op": "add", "path": "/data/j", "value": "2"}])
            self.assertEqual(api.get(CONFIGMAPS, "ns", "a")["data"], {"j": "2"})

            stale = dict(got)
            api.update(CONFIGMAPS, api.get(CONFIGMAPS, "ns", "a"))
            with self.assertRaises(ApiError) as e:
                api.update(CONFIGMAPS, stale)
            self.assertTrue(e.exception.is_conflict())

            self.assertEqual([meta.name(o) for o in api.list(CONFIGMAPS, "ns", label_selector="x=1")], ["a"])
            self.assertEqual(api.list(CONFIGMAPS, "ns", label_selector="x=2"), [])
            self.assertEqual(len(cache.list(CONFIGMAPS)), 1)
            self.assertEqual(len(cache.list(CONFIGMAPS, labels={"x": "1"})), 1)
            self.assertEqual(cache.list(CONFIGMAPS, labels={"x": "2"}), [])
            self.assertEqual(cache.get(CONFIGMAPS, "ns", "a")["metadata"]["name"], "a")
            self.assertIsNone(cache.get(CONFIGMAPS, "ns", "b"))

            with self.assertRaises(ApiError) as e:
                api.delete(CONFIGMAPS, "ns", "a", uid="wrong")
            self.assertTrue(e.exception.is_conflict())
            api.delete(CONFIGMAPS, "ns", "a", uid=cm["metadata"]["uid"])
            with self.assertRaises(ApiError) as e:
                api.get(CONFIGMAPS, "ns", "a")
            self.assertTrue(e.exception.is_not_found())
            self.assertEqual(c.calls[0], ("POST", "/api/v1/namespaces/ns/configmaps"))

    def test_status_subresource(self):
        with FakeCluster():
            d = api.create("apps/v1/deployments", {"metadata": {"name": "d", "namespace": "ns"}, "spec": {"replicas": 1}})
            self.assertEqual(d["metadata"]["generation"], 1)
            api.patch_status("apps/v1/deployments", "ns", "d", {"status": {"replicas": 1}, "spec": {"replicas": 9}})
            d = api.get("apps/v1/deployments", "ns", "d")
            self.assertEqual((d["spec"]["replicas"], d["status"]["replicas"]), (1, 1))
            d["spec"]["replicas"] = 2
            d["status"] = {"replicas": 7}
            d = api.update("apps/v1/deployments", d)
            self.assertEqual((d["spec"]["replicas"], d["status"]["replicas"], d["metadata"]["generation"]), (2, 1, 2))
            d["status"]["replicas"] = 2
            d = api.update_status("apps/v1/deployments", d)
            self.assertEqual(d["status"]["replicas"], 2)

    def test_log_fields(self):
        with FakeCluster() as c:
            log.info("hello", who="world", n=3)
            log.warning("careful")
        self.assertEqual(c.logs[0], (log.INFO, "hello", [("who", "world"), ("n", "3")]))
        self.assertEqual(c.logs[1][0], log.WARN)


class MetaTest(unittest.TestCase):
    def test_conditions(self):
        conds = meta.set_condition([], "Ready", "False", "Waiting", "", time="t1")
        self.assertEqual(conds[0]["lastTransitionTime"], "t1")
        same = meta.set_condition(conds, "Ready", "False", "Waiting", "", time="t2")
        self.assertEqual(same, conds)
        moved = meta.set_condition(conds, "Ready", "False", "Other", "", time="t3")
        self.assertEqual((moved[0]["lastTransitionTime"], moved[0]["lastUpdateTime"]), ("t1", "t3"))
        flipped = meta.set_condition(moved, "Ready", "True", "Done", "", time="t4")
        self.assertEqual(flipped[0]["lastTransitionTime"], "t4")

    def test_owner_reference(self):
        owner = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "uid": "u1"}}
        ref = meta.owner_reference(owner)
        child = {"metadata": {"ownerReferences": [ref]}}
        self.assertTrue(meta.is_controlled_by(child, owner))
        self.assertEqual(meta.controller_ref(child)["kind"], "Deployment")
        self.assertFalse(meta.is_controlled_by({"metadata": {}}, owner))


if __name__ == "__main__":
    unittest.main()
