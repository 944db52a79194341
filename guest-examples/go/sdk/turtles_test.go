package turtles_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"turtles.dev/go/turtles"
	"turtles.dev/go/turtles/fake"
)

func obj(s string) turtles.Object {
	o, err := turtles.ParseObject([]byte(s))
	if err != nil {
		panic(err)
	}
	return o
}

func TestNestedFieldsLabelsAnnotations(t *testing.T) {
	o := obj(`{"metadata":{"name":"a","namespace":"ns","generation":9007199254740993,"labels":{"x":"1"}},"spec":{"n":3,"f":2.5}}`)
	if o.GetName() != "a" || o.GetNamespace() != "ns" {
		t.Fatalf("name/namespace: %v", o)
	}
	if g := o.GetGeneration(); g != 9007199254740993 {
		t.Fatalf("generation kept exactly: got %d", g)
	}
	if n, ok := turtles.NestedInt64(o, "spec", "n"); !ok || n != 3 {
		t.Fatalf("spec.n = %d %v", n, ok)
	}
	if _, ok := turtles.NestedInt64(o, "spec", "f"); ok {
		t.Fatal("2.5 is not an integer")
	}
	if _, ok := turtles.NestedInt64(o, "spec", "missing"); ok {
		t.Fatal("a missing field is not an integer")
	}
	o.SetLabel("y", "2")
	o.SetAnnotation("a", "b")
	turtles.SetNestedField(o, turtles.Int(5), "status", "active")
	if got := string(o.JSON()); !strings.Contains(got, `"labels":{"x":"1","y":"2"}`) ||
		!strings.Contains(got, `"annotations":{"a":"b"}`) || !strings.Contains(got, `"status":{"active":5}`) {
		t.Fatalf("JSON after sets: %s", got)
	}
	o.SetLabels(nil)
	if _, ok := turtles.NestedField(o, "metadata", "labels"); ok {
		t.Fatal("SetLabels(nil) removes the labels")
	}
	turtles.RemoveNestedField(o, "spec", "n")
	if _, ok := turtles.NestedField(o, "spec", "n"); ok {
		t.Fatal("RemoveNestedField")
	}
}

func TestOwnerReferences(t *testing.T) {
	owner := obj(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","uid":"u1"}}`)
	child := obj(`{"metadata":{"name":"p"}}`)
	child.SetOwnerReferences([]turtles.OwnerReference{turtles.NewControllerRef(owner)})
	want := `"ownerReferences":[{"apiVersion":"batch/v1","blockOwnerDeletion":true,"controller":true,"kind":"Job","name":"j","uid":"u1"}]`
	if got := string(child.JSON()); !strings.Contains(got, want) {
		t.Fatalf("got %s, want %s", got, want)
	}
	if !child.IsControlledBy(owner) {
		t.Fatal("IsControlledBy")
	}
	other := obj(`{"metadata":{"name":"j","uid":"u2"}}`)
	if child.IsControlledBy(other) {
		t.Fatal("a different uid does not control it")
	}
}

func TestOutcomes(t *testing.T) {
	cases := []struct {
		res  turtles.Result
		err  error
		want string
	}{
		{turtles.Result{}, nil, "done"},
		{turtles.Result{RequeueAfter: 1500 * time.Microsecond}, nil, "requeue-after 2ms"},
		{turtles.Result{Requeue: true}, nil, "requeue-after 1000ms"},
		{turtles.Result{}, errors.New("boom"), "transient-error: boom"},
		{turtles.Result{}, turtles.TerminalError(errors.New("bad spec")), "terminal-error: bad spec"},
		{turtles.Result{}, fmt.Errorf("wrapped: %w", turtles.TerminalError(errors.New("x"))), "terminal-error: x"},
	}
	for _, c := range cases {
		if got := turtles.Outcome(c.res, c.err); got != c.want {
			t.Errorf("Outcome(%v, %v) = %q, want %q", c.res, c.err, got, c.want)
		}
	}
}

func TestClientAgainstTheFake(t *testing.T) {
	h := fake.New()
	defer h.Install()()
	ctx := context.Background()
	_, err := turtles.Get(ctx, turtles.ConfigMaps, "default", "nope")
	if !turtles.IsNotFound(err) {
		t.Fatalf("Get of a missing object: %v", err)
	}
	var apiErr *turtles.APIError
	if !errors.As(err, &apiErr) || apiErr.Reason != "NotFound" || !strings.Contains(apiErr.Message, `"nope" not found`) {
		t.Fatalf("the Status becomes an APIError: %#v", apiErr)
	}
	created, err := turtles.Create(ctx, turtles.ConfigMaps, obj(`{"metadata":{"generateName":"cm-","namespace":"default","labels":{"app":"a"}}}`))
	if err != nil || !strings.HasPrefix(created.GetName(), "cm-") || created.GetUID() == "" {
		t.Fatalf("Create: %v %v", created, err)
	}
	if _, err := turtles.Create(ctx, turtles.ConfigMaps, created); !turtles.IsAlreadyExists(err) {
		t.Fatalf("second Create: %v", err)
	}
	stale := created.DeepCopy()
	if _, err := turtles.Patch(ctx, turtles.ConfigMaps, "default", created.GetName(), turtles.MergePatch,
		map[string]any{"data": map[string]any{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := turtles.Update(ctx, turtles.ConfigMaps, stale); !turtles.IsConflict(err) {
		t.Fatalf("Update with a stale resourceVersion: %v", err)
	}
	list, err := turtles.List(ctx, turtles.ConfigMaps, "default", turtles.ListOptions{LabelSelector: "app=a"})
	if err != nil || len(list) != 1 || turtles.NestedString(list[0], "data", "k") != "v" {
		t.Fatalf("List: %v %v", list, err)
	}
	if got := h.Calls[len(h.Calls)-1].Path; got != "/api/v1/namespaces/default/configmaps?labelSelector=app%3Da" {
		t.Fatalf("list path %s", got)
	}
	if cached := turtles.CacheList(turtles.ConfigMaps, ""); len(cached) != 1 {
		t.Fatalf("CacheList: %v", cached)
	}
	if _, ok := turtles.CacheGet(turtles.ConfigMaps, "default", created.GetName()); !ok {
		t.Fatal("CacheGet")
	}
	if err := turtles.Delete(ctx, turtles.ConfigMaps, "default", created.GetName(), turtles.DeleteOptions{PropagationPolicy: "Background"}); err != nil {
		t.Fatal(err)
	}
	if del := h.CallsOf("DELETE"); len(del) != 1 || !strings.Contains(string(del[0].Body), `"propagationPolicy":"Background"`) {
		t.Fatalf("delete body: %v", del)
	}
	if err := turtles.Event(created, turtles.EventNormal, "Made", "made it"); err != nil {
		t.Fatal(err)
	}
	if h.Events[0].Regarding.Name != created.GetName() || h.Events[0].Regarding.Kind != "ConfigMap" {
		t.Fatalf("event: %+v", h.Events[0])
	}
	turtles.Info("hello", "key", "value", "odd")
	if l := h.Logs[len(h.Logs)-1]; l.Message != "hello" || fmt.Sprint(l.Fields) != "[[key value] [odd (missing)]]" {
		t.Fatalf("log: %+v", l)
	}
}

func TestStatusSubresourceOnlyChangesStatus(t *testing.T) {
	h := fake.New()
	defer h.Install()()
	ctx := context.Background()
	j := h.Add(turtles.Jobs, obj(`{"metadata":{"name":"j","namespace":"default"},"spec":{"parallelism":1}}`))
	turtles.SetNestedField(j, turtles.Int(7), "spec", "parallelism")
	turtles.SetNestedField(j, turtles.Int(1), "status", "active")
	if _, err := turtles.UpdateStatus(ctx, turtles.Jobs, j); err != nil {
		t.Fatal(err)
	}
	got, _ := h.Get(turtles.Jobs, "default", "j")
	if p, _ := turtles.NestedInt64(got, "spec", "parallelism"); p != 1 {
		t.Fatalf("status update changed spec: %v", got)
	}
	if a, _ := turtles.NestedInt64(got, "status", "active"); a != 1 {
		t.Fatalf("status not written: %v", got)
	}
	if h.Calls[0].Path != "/apis/batch/v1/namespaces/default/jobs/j/status" || h.Calls[0].Method != "PUT" {
		t.Fatalf("call %+v", h.Calls[0])
	}
}

func TestRegistrationBuilder(t *testing.T) {
	reg := turtles.NewControllerManagedBy().
		For(turtles.Jobs, turtles.WithNamespace("ns")).
		Owns(turtles.Pods, turtles.WithLabelSelector("a=b")).
		WithPermission(turtles.Group("batch", "jobs").Allow("get")).
		ResyncEvery(1500*time.Millisecond).
		InitialKey("", "x").
		AsServiceAccount("ns", "sa").
		Registration()
	if len(reg.Watches) != 2 || reg.Watches[0].Resource != turtles.Jobs || reg.Watches[0].Namespace != "ns" ||
		reg.Watches[1].OwnerGroup != "batch" || reg.Watches[1].OwnerKind != "Job" || reg.Watches[1].LabelSelector != "a=b" {
		t.Fatalf("watches: %+v", reg.Watches)
	}
	if reg.ResyncSeconds != 2 || reg.MaxConcurrentReconciles != 1 || reg.ServiceAccount.Name != "sa" || len(reg.InitialKeys) != 1 {
		t.Fatalf("registration: %+v", reg)
	}
}

func TestReconcileForTestParsesAndRuns(t *testing.T) {
	h := fake.New()
	defer h.Install()()
	var seen turtles.Request
	turtles.NewControllerManagedBy().For(turtles.ConfigMaps).Complete(turtles.ReconcilerFunc(
		func(ctx context.Context, req turtles.Request) (turtles.Result, error) {
			seen = req
			if req.Object == nil {
				return turtles.Result{}, turtles.TerminalError(errors.New("gone"))
			}
			return turtles.Result{RequeueAfter: time.Second}, nil
		}))
	if got := turtles.ReconcileForTest(turtles.NamespacedName{Namespace: "d", Name: "a"}, obj(`{"metadata":{"name":"a"}}`)); got != "requeue-after 1000ms" {
		t.Fatal(got)
	}
	if seen.Name != "a" || seen.Namespace != "d" || seen.Object.GetName() != "a" {
		t.Fatalf("request %+v", seen)
	}
	if got := turtles.ReconcileForTest(turtles.NamespacedName{Name: "b"}, nil); got != "terminal-error: gone" {
		t.Fatal(got)
	}
}

func TestPanicIsRecoveredAsATransientError(t *testing.T) {
	h := fake.New()
	defer h.Install()()
	turtles.NewControllerManagedBy().For(turtles.ConfigMaps).Complete(turtles.ReconcilerFunc(
		func(ctx context.Context, req turtles.Request) (turtles.Result, error) {
			var m map[string]int
			m["x"] = 1 // nil map: panics
			return turtles.Result{}, nil
		}))
	got := turtles.ReconcileForTest(turtles.NamespacedName{Name: "a"}, obj(`{"metadata":{"name":"a"}}`))
	if got != "transient-error: panic: assignment to entry in nil map [recovered]" {
		t.Fatal(got)
	}
	if l := h.Logs[len(h.Logs)-1]; l.Message != "reconcile panicked" || !strings.Contains(fmt.Sprint(l.Fields), "TestPanicIsRecovered") {
		t.Fatalf("log %+v", l)
	}
}
