"""py-greeter and py-greeter-v2 in plain CPython, against the FakeCluster."""

import unittest

import helpers
from turtles_controller import CONFIGMAPS, Done, Key, meta
from turtles_controller.testing import FakeCluster

v1 = helpers.load_example("py-greeter")
v2 = helpers.load_example("py-greeter-v2")


class GreeterTest(unittest.TestCase):
    def test_greets_and_is_idempotent(self):
        with FakeCluster() as c:
            c.add(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns", "labels": {"turtles.dev/greet": "true"}}})
            controller = v1.WitWorld.controller
            self.assertIs(controller.run(Key("ns", "a"), c.get(CONFIGMAPS, "ns", "a")), Done)
            self.assertEqual(meta.annotation(c.get(CONFIGMAPS, "ns", "a"), "turtles.dev/greeting"), "hello from python, a")
            calls = len(c.calls)
            self.assertIs(controller.run(Key("ns", "a"), c.get(CONFIGMAPS, "ns", "a")), Done)
            self.assertEqual(len(c.calls), calls)  # already greeted: no call
            v2.WitWorld.controller.run(Key("ns", "a"), c.get(CONFIGMAPS, "ns", "a"))
            self.assertEqual(meta.annotation(c.get(CONFIGMAPS, "ns", "a"), "turtles.dev/greeting"), "hi from python, a")

    def test_gone_is_done(self):
        with FakeCluster():
            controller = v1.greeter("x")
            self.assertIs(controller.run(Key("ns", "gone"), None), Done)
            # deleted between the event and the patch: 404 is done too
            self.assertIs(controller.run(Key("ns", "gone"), {"metadata": {"name": "gone"}}), Done)

    def test_registration(self):
        reg = v1.greeter("x").registration
        [w] = reg.watches
        self.assertEqual((str(w.resource), w.label_selector), ("v1/configmaps", "turtles.dev/greet=true"))
        self.assertEqual(reg.permissions[0].verbs, ["get", "list", "watch", "patch"])


if __name__ == "__main__":
    unittest.main()
