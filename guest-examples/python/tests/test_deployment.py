"""The deployment controller in plain CPython: pure logic plus whole rollouts against the
FakeCluster, with a stand-in ReplicaSet controller that reports every replica ready."""

import re
import unittest

import helpers
from turtles_controller import DEPLOYMENTS, REPLICASETS, Key, Done, RequeueAfter, meta
from turtles_controller.testing import FakeCluster

app = helpers.load_example("deployment")
import rollout as r  # noqa: E402  (on sys.path once the example is loaded)

NS = "default"


def template(image="nginx:1", app_label="web"):
    return {
        "metadata": {"labels": {"app": app_label}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


def deployment(name="web", replicas=3, image="nginx:1", **spec):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": dict(
            {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template(image)}, **spec
        ),
    }


class Sim:
    """A FakeCluster, the deployment controller, and a ReplicaSet controller stand-in."""

    def __init__(self, test, ready=True):
        self.test = test
        self.cluster = FakeCluster().install()
        test.addCleanup(self.cluster.uninstall)
        self.ready = ready  # whether replicas become available at once

    def add(self, d):
        return self.cluster.add(DEPLOYMENTS, d)

    def update_spec(self, name, **spec):
        d = self.cluster.get(DEPLOYMENTS, NS, name)
        d["spec"].update(spec)
        d["metadata"]["generation"] += 1
        self.cluster.add(DEPLOYMENTS, d)

    def rs_controller(self):
        for rs in self.cluster.list(REPLICASETS, NS):
            n = r.replicas_of(rs)
            avail = n if self.ready else 0
            want = {"replicas": n, "fullyLabeledReplicas": n, "readyReplicas": avail,
                    "availableReplicas": avail, "observedGeneration": rs["metadata"]["generation"]}
            if rs.get("status") != want:
                self.cluster.set_status(REPLICASETS, NS, meta.name(rs), want)

    def reconcile(self, name="web"):
        out = app.controller.run(Key(NS, name), self.cluster.get(DEPLOYMENTS, NS, name))
        # Done, or a check of the progress deadline later.
        self.test.assertTrue(out == Done or isinstance(out, RequeueAfter), (out, self.cluster.logs[-3:]))
        return out

    def converge(self, name="web", check=None, limit=50):
        """Reconcile and let the RS controller act until nothing writes any more."""
        for _ in range(limit):
            before = len([c for c in self.cluster.calls if c[0] != "GET"])
            self.reconcile(name)
            if check:
                check()
            writes = len([c for c in self.cluster.calls if c[0] != "GET"]) - before
            snapshot = [rs.get("status") for rs in self.rss()]
            self.rs_controller()
            if writes == 0 and snapshot == [rs.get("status") for rs in self.rss()]:
                return
        self.test.fail("did not converge")

    def rss(self):
        return self.cluster.list(REPLICASETS, NS)

    def deploy(self, name="web"):
        return self.cluster.get(DEPLOYMENTS, NS, name)


def rollout_status_done(d):
    """kubectl rollout status's test."""
    s, want = d.get("status") or {}, d["spec"].get("replicas", 1)
    return (
        s.get("observedGeneration", 0) >= d["metadata"]["generation"]
        and s.get("updatedReplicas") == want
        and s.get("replicas") == s.get("updatedReplicas")
        and s.get("availableReplicas") == s.get("updatedReplicas")
    )


def cond(d, type_):
    return meta.find_condition(d["status"]["conditions"], type_)


class TimeTest(unittest.TestCase):
    def test_times_parse_without_strptime(self):
        # In the component `_strptime` is not there (CPython imports it lazily, from C, and
        # componentize-py's bundle does not see it): times must parse without it. A fresh
        # interpreter, since CPython keeps the module once any call imported it.
        import os
        import subprocess
        import sys
        code = (
            "import sys; sys.modules['_strptime'] = None; import rollout as r; "
            "t = r._time('2026-12-06T15:04:05Z'); "
            "assert (t.year, t.hour, t.second, t.utcoffset().total_seconds()) == (2026, 15, 5, 0), t; "
            "assert r._time('not a time') is None and r._time(None) is None"
        )
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)


class HashTest(unittest.TestCase):
    def test_shape_and_stability(self):
        h = r.pod_template_hash(template())
        self.assertRegex(h, r"^[bcdfghjklmnpqrstvwxz2456789]{1,10}$")
        reordered = {"spec": {"containers": [{"image": "nginx:1", "name": "c"}]}, "metadata": {"labels": {"app": "web"}}}
        self.assertEqual(r.pod_template_hash(reordered), h)
        self.assertNotEqual(r.pod_template_hash(template("nginx:2")), h)
        self.assertNotEqual(r.pod_template_hash(template(), 1), h)
        self.assertEqual(r.fnv32a(b"a"), 0xE40C292C)  # FNV-1a test vector

    def test_template_equal_ignores_hash_label(self):
        t = template()
        with_hash = r.new_replicaset(dict(deployment(), metadata={"name": "web", "namespace": NS, "uid": "u"}),
                                     "abc", 3, 1)["spec"]["template"]
        self.assertEqual(with_hash["metadata"]["labels"], {"app": "web", r.HASH_LABEL: "abc"})
        self.assertTrue(r.template_equal(with_hash, t))
        self.assertFalse(r.template_equal(with_hash, template("nginx:2")))
        # kubectl rollout undo writes `creationTimestamp: null` into the template: the same template
        undone = template()
        undone["metadata"]["creationTimestamp"] = None
        self.assertTrue(r.template_equal(with_hash, undone))
        self.assertEqual(r.pod_template_hash(undone), r.pod_template_hash(t))

    def test_surge_and_unavailable(self):
        d = deployment(replicas=10)
        self.assertEqual((r.max_surge(d), r.max_unavailable(d)), (3, 2))  # 25%: up, down
        d = deployment(replicas=3, strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}})
        self.assertEqual((r.max_surge(d), r.max_unavailable(d)), (0, 1))
        d = deployment(strategy={"type": "Recreate"})
        self.assertEqual((r.max_surge(d), r.max_unavailable(d)), (0, 0))


class RolloutTest(unittest.TestCase):
    def test_first_rollout(self):
        sim = Sim(self)
        d = sim.add(deployment())
        sim.reconcile()
        [rs] = sim.rss()
        h = r.pod_template_hash(d["spec"]["template"])
        self.assertEqual(meta.name(rs), f"web-{h}")
        self.assertEqual(rs["metadata"]["labels"], {"app": "web", "pod-template-hash": h})
        self.assertEqual(rs["spec"]["selector"], {"matchLabels": {"app": "web", "pod-template-hash": h}})
        self.assertEqual(rs["spec"]["template"]["metadata"]["labels"], {"app": "web", "pod-template-hash": h})
        self.assertEqual(rs["spec"]["replicas"], 3)
        self.assertEqual(rs["metadata"]["ownerReferences"], [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": d["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}])
        self.assertEqual(meta.annotation(rs, r.REVISION), "1")
        self.assertEqual(meta.annotation(sim.deploy(), r.REVISION), "1")
        d = sim.deploy()
        self.assertFalse(rollout_status_done(d))
        self.assertEqual(cond(d, "Progressing")["reason"], "ReplicaSetUpdated")
        self.assertEqual(cond(d, "Available")["status"], "False")

        sim.converge()
        d = sim.deploy()
        self.assertTrue(rollout_status_done(d), d["status"])
        self.assertEqual(d["status"]["readyReplicas"], 3)
        self.assertEqual(d["status"]["unavailableReplicas"], 0)
        self.assertEqual((cond(d, "Available")["status"], cond(d, "Available")["reason"]), ("True", "MinimumReplicasAvailable"))
        self.assertEqual((cond(d, "Progressing")["status"], cond(d, "Progressing")["reason"]), ("True", "NewReplicaSetAvailable"))

        # Idempotent: nothing more to write.
        writes = [c for c in sim.cluster.calls if c[0] != "GET"]
        sim.reconcile()
        self.assertEqual(writes, [c for c in sim.cluster.calls if c[0] != "GET"])

    def test_the_change_cause_follows_the_new_replicaset(self):
        # kube's SetNewReplicaSetAnnotations: the Deployment's annotations (not its revision or
        # last-applied) go to its new ReplicaSet, so `kubectl rollout history` shows CHANGE-CAUSE.
        sim = Sim(self)
        d = deployment()
        d["metadata"]["annotations"] = {"kubernetes.io/change-cause": "first",
                                        "kubectl.kubernetes.io/last-applied-configuration": "{}"}
        sim.add(d)
        sim.reconcile()
        [rs] = sim.rss()
        self.assertEqual(meta.annotation(rs, "kubernetes.io/change-cause"), "first")
        self.assertIsNone(meta.annotation(rs, "kubectl.kubernetes.io/last-applied-configuration"))
        d = sim.deploy()
        d["metadata"]["annotations"]["kubernetes.io/change-cause"] = "second"
        sim.cluster.add(DEPLOYMENTS, d)
        sim.reconcile()
        [rs] = sim.rss()
        self.assertEqual(meta.annotation(rs, "kubernetes.io/change-cause"), "second")

    def test_a_rollback_keeps_the_revisions_a_replicaset_had(self):
        # kube's SetNewReplicaSetAnnotations: the ReplicaSet rolled back to gets the next
        # revision, and the one it had joins its revision-history.
        sim = Sim(self)
        sim.add(deployment())
        sim.converge()
        sim.update_spec("web", template=template("nginx:2"))
        sim.converge()
        sim.update_spec("web", template=template("nginx:1"))
        sim.converge()
        by_image = {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs for rs in sim.rss()}
        one, two = by_image["nginx:1"], by_image["nginx:2"]
        self.assertEqual(meta.annotation(one, r.REVISION), "3")
        self.assertEqual(meta.annotation(one, r.REVISION_HISTORY), "1")
        self.assertEqual(meta.annotation(two, r.REVISION), "2")
        self.assertIsNone(meta.annotation(two, r.REVISION_HISTORY))
        sim.update_spec("web", template=template("nginx:2"))
        sim.converge()
        sim.update_spec("web", template=template("nginx:1"))
        sim.converge()
        one = next(rs for rs in sim.rss() if rs["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1")
        self.assertEqual(meta.annotation(one, r.REVISION), "5")
        self.assertEqual(meta.annotation(one, r.REVISION_HISTORY), "1,3")

    def test_revision_history_drops_the_oldest_past_2000_characters(self):
        self.assertEqual(r.revision_history("", "7"), "7")
        self.assertEqual(r.revision_history("1,3", "5"), "1,3,5")
        full = ",".join(str(10**8 + i) for i in range(222))  # 222 * 10 - 1 = 2219 characters
        self.assertGreater(len(full), 2000)
        got = r.revision_history(full, "99")
        self.assertLessEqual(len(got), 2000)
        self.assertTrue(got.endswith(",99"))
        self.assertEqual(got.split(",")[:-1], full.split(",")[-len(got.split(",")) + 1:])
        self.assertEqual(r.revision_history("1", "x" * 2000), "x" * 2000)
        self.assertIsNone(r.revision_history("1", "x" * 2001))

    def test_rolling_update_respects_surge_and_unavailable(self):
        sim = Sim(self)
        sim.add(deployment(replicas=4))
        sim.converge()
        sim.update_spec("web", template=template("nginx:2"))

        def check():
            rss = sim.rss()
            self.assertLessEqual(sum(r.replicas_of(x) for x in rss), 4 + 1)  # maxSurge 25% of 4
            self.assertGreaterEqual(sum(r.status_int(x, "availableReplicas") for x in rss), 4 - 1)

        sim.converge(check=check)
        d = sim.deploy()
        self.assertTrue(rollout_status_done(d), d["status"])
        by_rev = {meta.annotation(x, r.REVISION): x for x in sim.rss()}
        self.assertEqual(sorted(by_rev), ["1", "2"])
        self.assertEqual(r.replicas_of(by_rev["1"]), 0)
        self.assertEqual(r.replicas_of(by_rev["2"]), 4)
        self.assertEqual(by_rev["2"]["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:2")
        self.assertEqual(meta.annotation(d, r.REVISION), "2")
        self.assertEqual(d["status"]["observedGeneration"], 2)

    def test_rollout_waits_for_availability(self):
        sim = Sim(self, ready=False)
        sim.add(deployment(replicas=2))
        sim.converge()
        d = sim.deploy()
        self.assertFalse(rollout_status_done(d))
        self.assertEqual(d["status"]["unavailableReplicas"], 2)
        self.assertEqual(cond(d, "Available")["reason"], "MinimumReplicasUnavailable")
        sim.ready = True
        sim.update_spec("web", template=template("nginx:2"))
        sim.converge()
        self.assertTrue(rollout_status_done(sim.deploy()))

    def test_recreate(self):
        sim = Sim(self)
        sim.add(deployment(replicas=2, strategy={"type": "Recreate"}))
        sim.converge()
        sim.update_spec("web", template=template("nginx:2"))
        sim.reconcile()
        by_rev = {meta.annotation(x, r.REVISION): x for x in sim.rss()}
        self.assertEqual((r.replicas_of(by_rev["1"]), r.replicas_of(by_rev["2"])), (0, 0))
        sim.reconcile()  # old pods still reported: new stays at 0
        self.assertEqual(r.replicas_of(sim.cluster.get(REPLICASETS, NS, meta.name(by_rev["2"]))), 0)
        sim.converge()
        self.assertTrue(rollout_status_done(sim.deploy()))

    def test_rollback_reuses_the_old_replicaset(self):
        sim = Sim(self)
        sim.add(deployment())
        sim.converge()
        first = meta.name(sim.rss()[0])
        sim.update_spec("web", template=template("nginx:2"))
        sim.converge()
        sim.update_spec("web", template=template("nginx:1"))
        sim.converge()
        self.assertEqual(len(sim.rss()), 2)
        rs = sim.cluster.get(REPLICASETS, NS, first)
        self.assertEqual((r.replicas_of(rs), meta.annotation(rs, r.REVISION)), (3, "3"))
        self.assertEqual(meta.annotation(sim.deploy(), r.REVISION), "3")

    def test_scale(self):
        sim = Sim(self)
        sim.add(deployment())
        sim.converge()
        sim.update_spec("web", replicas=5)
        sim.converge()
        [rs] = sim.rss()
        self.assertEqual(r.replicas_of(rs), 5)
        self.assertEqual(meta.annotation(rs, r.DESIRED_REPLICAS), "5")
        self.assertTrue(rollout_status_done(sim.deploy()))

    def test_revision_history_limit(self):
        sim = Sim(self)
        sim.add(deployment(revisionHistoryLimit=1))
        for image in ("nginx:1", "nginx:2", "nginx:3", "nginx:4"):
            sim.update_spec("web", template=template(image))
            sim.converge()
        revs = sorted(meta.annotation(x, r.REVISION) for x in sim.rss())
        self.assertEqual(revs, ["3", "4"])

    def test_collision_bumps_collision_count(self):
        sim = Sim(self)
        d = deployment()
        h = r.pod_template_hash(d["spec"]["template"])
        sim.cluster.add(REPLICASETS, {"metadata": {"name": f"web-{h}", "namespace": NS}, "spec": {"replicas": 1}})
        sim.add(d)
        sim.reconcile()
        self.assertEqual(sim.deploy()["status"]["collisionCount"], 1)
        sim.converge()
        d = sim.deploy()
        self.assertTrue(rollout_status_done(d))
        owned = [x for x in sim.rss() if meta.controller_ref(x)]
        self.assertEqual([meta.name(x) for x in owned], [f"web-{r.pod_template_hash(d['spec']['template'], 1)}"])

    def test_an_orphaned_replicaset_is_adopted_not_duplicated(self):
        # `kubectl delete deploy --cascade=orphan`, then the same Deployment again: its
        # ReplicaSet (same template, matching labels, no controller) is taken back.
        sim = Sim(self)
        sim.add(deployment(replicas=2))
        sim.converge()
        (rs,) = sim.rss()
        rs["metadata"].pop("ownerReferences")
        sim.cluster.add(REPLICASETS, rs)
        sim.cluster.delete(DEPLOYMENTS, NS, "web")
        sim.add(deployment(replicas=2))
        sim.converge()
        d = sim.deploy()
        self.assertTrue(rollout_status_done(d))
        (adopted,) = sim.rss()
        self.assertEqual(meta.name(adopted), meta.name(rs))
        self.assertEqual(meta.controller_ref(adopted)["uid"], meta.uid(d))
        self.assertEqual(r.replicas_of(adopted), 2)
        self.assertNotIn("collisionCount", d["status"])

    def test_a_replicaset_relabelled_out_of_the_selector_is_released(self):
        sim = Sim(self)
        sim.add(deployment(replicas=1))
        sim.converge()
        (rs,) = sim.rss()
        rs["metadata"]["labels"] = {"app": "other"}
        sim.cluster.add(REPLICASETS, rs)
        sim.converge()
        released = sim.cluster.get(REPLICASETS, NS, meta.name(rs))
        self.assertIsNone(meta.controller_ref(released))
        # The Deployment made a new one (a hash collision with the released name first).
        owned = [x for x in sim.rss() if meta.controller_ref(x)]
        self.assertEqual(len(owned), 1)
        self.assertNotEqual(meta.name(owned[0]), meta.name(rs))
        self.assertTrue(rollout_status_done(sim.deploy()))

    def test_an_orphan_the_selector_does_not_match_is_left_alone(self):
        sim = Sim(self)
        sim.cluster.add(REPLICASETS, {"metadata": {"name": "stray", "namespace": NS, "labels": {"app": "db"}},
                                      "spec": {"replicas": 1}})
        sim.add(deployment(replicas=1))
        sim.converge()
        self.assertIsNone(meta.controller_ref(sim.cluster.get(REPLICASETS, NS, "stray")))

    def test_deleted_deployment_leaves_its_replicasets_to_the_garbage_collector(self):
        sim = Sim(self)
        sim.add(deployment())
        sim.add(deployment(name="other"))
        sim.converge()
        sim.converge("other")
        self.assertEqual(len(sim.rss()), 2)
        sim.cluster.delete(DEPLOYMENTS, NS, "web")
        self.assertIs(app.controller.run(Key(NS, "web"), None), Done)
        # The controller writes nothing: the host's garbage collector follows the owner references.
        self.assertEqual(sorted(meta.controller_ref(x)["name"] for x in sim.rss()), ["other", "web"])

    def test_bad_selector_is_terminal(self):
        sim = Sim(self)
        sim.add(deployment(selector={"matchLabels": {"app": "nope"}}))
        out = app.controller.run(Key(NS, "web"), sim.deploy())
        self.assertEqual(type(out).__name__, "TerminalError")
        self.assertEqual(sim.rss(), [])

    def test_paused(self):
        sim = Sim(self)
        sim.add(deployment())
        sim.converge()
        sim.update_spec("web", paused=True, template=template("nginx:2"))
        sim.converge()
        self.assertEqual(len(sim.rss()), 1)
        self.assertEqual(cond(sim.deploy(), "Progressing")["reason"], "DeploymentPaused")

    def test_selector_with_match_expressions_only(self):
        sim = Sim(self)
        sim.add(deployment(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}))
        sim.converge()
        self.assertEqual(len(sim.rss()), 1)
        self.assertTrue(rollout_status_done(sim.deploy()))

    def test_progress_deadline_exceeded_then_a_new_rollout_progresses(self):
        sim = Sim(self, ready=False)
        sim.add(deployment(replicas=2, progressDeadlineSeconds=600))
        sim.converge()
        c = cond(sim.deploy(), "Progressing")
        # Created, then its replicas counted as updated: progress.
        self.assertEqual((c["status"], c["reason"]), ("True", "ReplicaSetUpdated"))
        # Nothing becomes available: a check is asked for once the deadline has passed.
        out = sim.reconcile()
        self.assertIsInstance(out, RequeueAfter)
        self.assertGreater(out.ms, 590_000)
        later = (r._time(c["lastUpdateTime"]) + r.timedelta(seconds=601)).strftime("%Y-%m-%dT%H:%M:%SZ")
        real_now = meta.now
        meta.now = lambda: later
        self.addCleanup(setattr, meta, "now", real_now)
        self.assertEqual(sim.reconcile(), Done)
        c = cond(sim.deploy(), "Progressing")
        rs = meta.name(sim.rss()[0])
        self.assertEqual((c["status"], c["reason"], c["message"]),
                         ("False", "ProgressDeadlineExceeded", f'ReplicaSet "{rs}" has timed out progressing.'))
        # Replicas becoming available is progress: the rollout completes.
        sim.ready = True
        sim.converge()
        c = cond(sim.deploy(), "Progressing")
        self.assertEqual((c["status"], c["reason"]), ("True", "NewReplicaSetAvailable"))

    def test_replica_failure_shows_on_the_deployment(self):
        sim = Sim(self)
        sim.add(deployment(replicas=2))
        sim.converge()
        rs = sim.rss()[0]
        failed = dict(rs["status"], conditions=[{"type": "ReplicaFailure", "status": "True",
                                                 "reason": "FailedCreate", "message": "quota exceeded"}])
        sim.cluster.set_status(REPLICASETS, NS, meta.name(rs), failed)
        sim.reconcile()
        c = cond(sim.deploy(), "ReplicaFailure")
        self.assertEqual((c["status"], c["reason"], c["message"]), ("True", "FailedCreate", "quota exceeded"))
        sim.cluster.set_status(REPLICASETS, NS, meta.name(rs), dict(failed, conditions=[]))
        sim.reconcile()
        self.assertIsNone(cond(sim.deploy(), "ReplicaFailure"))

    def test_no_deadline_never_times_out(self):
        sim = Sim(self, ready=False)
        sim.add(deployment(replicas=2, progressDeadlineSeconds=2**31 - 1))
        sim.converge()
        self.assertEqual(sim.reconcile(), Done)
        self.assertEqual(cond(sim.deploy(), "Progressing")["reason"], "ReplicaSetUpdated")

    def test_hash_matches_kube_alphabet(self):
        self.assertTrue(re.fullmatch(r"[a-z0-9]+", r.pod_template_hash({})))


if __name__ == "__main__":
    unittest.main()
