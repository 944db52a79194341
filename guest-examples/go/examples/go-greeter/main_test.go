package main

import (
	"testing"

	"turtles.dev/go/turtles"
	"turtles.dev/go/turtles/fake"
)

func TestGreets(t *testing.T) {
	h := fake.New()
	defer h.Install()()
	cm := h.Add(turtles.ConfigMaps, turtles.Object{"metadata": map[string]any{"name": "demo", "namespace": "default"}})
	if got := turtles.ReconcileForTest(cm.GetKey(), cm); got != "done" {
		t.Fatal(got)
	}
	cm, _ = h.Get(turtles.ConfigMaps, "default", "demo")
	if got := cm.GetAnnotations()["turtles.dev/greeting"]; got != "hello from Go, demo" {
		t.Fatalf("greeting %q", got)
	}
	// Greeted already: no second patch.
	turtles.ReconcileForTest(cm.GetKey(), cm)
	if n := len(h.CallsOf("PATCH")); n != 1 {
		t.Fatalf("%d patches", n)
	}
	// Gone: nothing to do.
	if got := turtles.ReconcileForTest(turtles.NamespacedName{Namespace: "default", Name: "x"}, nil); got != "done" || len(h.Calls) != 1 {
		t.Fatal(got, h.Calls)
	}
}

func TestRegistration(t *testing.T) {
	reg := turtles.RegisteredForTest()
	if w := reg.Watches[0]; w.Resource != turtles.ConfigMaps || w.LabelSelector != "turtles.dev/greet=true" {
		t.Fatalf("%+v", reg)
	}
}

func TestAPIErrorIsRetried(t *testing.T) {
	h := fake.New()
	defer h.Install()()
	h.Fail["PATCH"] = 500
	cm := h.Add(turtles.ConfigMaps, turtles.Object{"metadata": map[string]any{"name": "demo", "namespace": "default"}})
	if got := turtles.ReconcileForTest(cm.GetKey(), cm); got != "transient-error: 500 InternalError: injected failure" {
		t.Fatal(got)
	}
}
