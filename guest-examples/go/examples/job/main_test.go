package main

import (
	"strings"
	"testing"
	"time"

	"turtles.dev/go/turtles"
	"turtles.dev/go/turtles/fake"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// setup installs a fresh fake host and controller, with the clock at t0.
func setup(t *testing.T) *fake.Host {
	t.Helper()
	h := fake.New()
	restore := h.Install()
	turtles.Now = func() time.Time { return t0 }
	t.Cleanup(func() { restore(); turtles.Now = time.Now })
	turtles.NewControllerManagedBy().For(turtles.Jobs).Owns(turtles.Pods).Complete(newController())
	return h
}

func addJob(h *fake.Host, spec map[string]any) turtles.Object {
	spec["template"] = map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "pi"}},
		"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "pi", "image": "perl"}}},
	}
	return h.Add(turtles.Jobs, turtles.Object{
		"metadata": map[string]any{"name": "pi", "namespace": "default", "uid": "job-uid"},
		"spec":     spec,
	})
}

func reconcile(t *testing.T, h *fake.Host) (string, turtles.Object) {
	t.Helper()
	job, ok := h.Get(turtles.Jobs, "default", "pi")
	if !ok {
		t.Fatal("no job")
	}
	out := turtles.ReconcileForTest(job.GetKey(), job)
	job, _ = h.Get(turtles.Jobs, "default", "pi")
	return out, job
}

func pods(h *fake.Host) []turtles.Object { return h.List(turtles.Pods, "default") }

func setPhase(h *fake.Host, p turtles.Object, phase string, at time.Time) {
	turtles.SetNestedField(p, phase, "status", "phase")
	turtles.SetConditions(p, []turtles.Condition{{Type: "Ready", Status: "False", LastTransitionTime: turtles.Timestamp(at)}})
	h.Add(turtles.Pods, p)
}

func num(o turtles.Object, f ...string) int64 {
	n, _ := turtles.NestedInt64(o, f...)
	return n
}

func conditionTypes(job turtles.Object) string {
	var out []string
	for _, c := range turtles.GetConditions(job) {
		out = append(out, c.Type+"="+c.Status+"/"+c.Reason)
	}
	return strings.Join(out, ",")
}

func TestCreatesParallelismPodsOwnedAndLabelledAsKube(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"completions": 3, "parallelism": 2, "backoffLimit": 6})
	out, job := reconcile(t, h)
	if out != "done" {
		t.Fatal(out)
	}
	ps := pods(h)
	if len(ps) != 2 {
		t.Fatalf("%d pods, want parallelism 2", len(ps))
	}
	for _, p := range ps {
		if !strings.HasPrefix(p.GetName(), "pi-") || p.GetGenerateName() != "pi-" {
			t.Errorf("name %q generateName %q", p.GetName(), p.GetGenerateName())
		}
		ref, ok := p.GetControllerOf()
		if !ok || ref.Kind != "Job" || ref.APIVersion != "batch/v1" || ref.Name != "pi" || ref.UID != "job-uid" ||
			ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("owner reference %+v", p.GetOwnerReferences())
		}
		l := p.GetLabels()
		if l["app"] != "pi" || l["batch.kubernetes.io/job-name"] != "pi" || l["job-name"] != "pi" ||
			l["batch.kubernetes.io/controller-uid"] != "job-uid" || l["controller-uid"] != "job-uid" {
			t.Errorf("labels %v", l)
		}
		if turtles.NestedString(p, "spec", "restartPolicy") != "Never" {
			t.Errorf("spec from the template: %v", p["spec"])
		}
	}
	if num(job, "status", "active") != 2 || num(job, "status", "succeeded") != 0 || num(job, "status", "ready") != 0 {
		t.Fatalf("status %v", job["status"])
	}
	if turtles.NestedString(job, "status", "startTime") != turtles.Timestamp(t0) {
		t.Fatalf("startTime %v", job["status"])
	}
	if got := strings.Join(h.EventReasons(), ","); got != "SuccessfulCreate,SuccessfulCreate" {
		t.Fatalf("events %s", got)
	}
	// Again: nothing more to create, and no status write when nothing changed.
	writes := len(h.CallsOf("PUT"))
	reconcile(t, h)
	if len(pods(h)) != 2 || len(h.CallsOf("PUT")) != writes {
		t.Fatalf("second reconcile changed things: %d pods, %d writes", len(pods(h)), len(h.CallsOf("PUT")))
	}
}

func TestCountsCompletionsThenCompletes(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"completions": 3, "parallelism": 2, "backoffLimit": 6})
	reconcile(t, h)
	ps := pods(h)
	// One Pod Ready, one Succeeded.
	turtles.SetConditions(ps[0], []turtles.Condition{{Type: "Ready", Status: "True"}})
	turtles.SetNestedField(ps[0], "Running", "status", "phase")
	h.Add(turtles.Pods, ps[0])
	setPhase(h, ps[1], "Succeeded", t0)
	_, job := reconcile(t, h)
	// completions 3 - succeeded 1 = 2 still wanted, at most parallelism 2: one new Pod.
	if len(pods(h)) != 3 || num(job, "status", "active") != 2 || num(job, "status", "succeeded") != 1 || num(job, "status", "ready") != 1 {
		t.Fatalf("%d pods, status %v", len(pods(h)), job["status"])
	}
	if conditionTypes(job) != "" {
		t.Fatalf("conditions too early: %s", conditionTypes(job))
	}
	for _, p := range pods(h) {
		if turtles.NestedString(p, "status", "phase") != "Succeeded" {
			setPhase(h, p, "Succeeded", t0)
		}
	}
	out, job := reconcile(t, h)
	if out != "done" {
		t.Fatal(out)
	}
	if got := conditionTypes(job); got != "SuccessCriteriaMet=True/CompletionsReached,Complete=True/CompletionsReached" {
		t.Fatalf("conditions %s", got)
	}
	c, _ := turtles.FindCondition(job, "Complete")
	if c.Message != "Reached expected number of succeeded pods" || c.LastTransitionTime != turtles.Timestamp(t0) {
		t.Fatalf("condition %+v", c)
	}
	if num(job, "status", "succeeded") != 3 || num(job, "status", "active") != 0 ||
		turtles.NestedString(job, "status", "completionTime") != turtles.Timestamp(t0) {
		t.Fatalf("status %v", job["status"])
	}
	if len(pods(h)) != 3 {
		t.Fatal("no extra pod for a completed job")
	}
	// A finished Job is left alone.
	calls := len(h.Calls)
	reconcile(t, h)
	if len(h.Calls) != calls {
		t.Fatalf("a complete job made calls: %v", h.Calls[calls:])
	}
}

func TestBackoffLimitFailsTheJobAndDeletesActivePods(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"completions": 2, "parallelism": 2, "backoffLimit": 1})
	reconcile(t, h)
	ps := pods(h)
	setPhase(h, ps[0], "Failed", t0.Add(-time.Hour))
	// One failure (not more than backoffLimit 1): replaced once the back-off (10 s) has passed.
	out, job := reconcile(t, h)
	if out != "done" || len(pods(h)) != 3 || num(job, "status", "failed") != 1 || num(job, "status", "active") != 2 {
		t.Fatalf("%s, %d pods, status %v", out, len(pods(h)), job["status"])
	}
	for _, p := range pods(h) {
		if p.GetName() != ps[0].GetName() && p.GetName() != ps[1].GetName() {
			setPhase(h, p, "Failed", t0.Add(-time.Minute))
		}
	}
	out, job = reconcile(t, h)
	if out != "done" {
		t.Fatal(out)
	}
	if got := conditionTypes(job); got != "FailureTarget=True/BackoffLimitExceeded,Failed=True/BackoffLimitExceeded" {
		t.Fatalf("conditions %s", got)
	}
	c, _ := turtles.FindCondition(job, "Failed")
	if c.Message != "Job has reached the specified backoff limit" {
		t.Fatalf("message %q", c.Message)
	}
	if num(job, "status", "failed") != 2 || num(job, "status", "active") != 0 {
		t.Fatalf("status %v", job["status"])
	}
	if _, still := h.Get(turtles.Pods, "default", ps[1].GetName()); still {
		t.Fatal("the active pod of a failed job is deleted")
	}
	if _, ok := turtles.NestedField(job, "status", "completionTime"); ok {
		t.Fatal("a failed job has no completionTime")
	}
	if r := h.EventReasons(); r[len(r)-1] != "BackoffLimitExceeded" {
		t.Fatalf("events %v", r)
	}
}

func TestFailedPodsAreReplacedAfterKubesBackoff(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"completions": 1, "parallelism": 1, "backoffLimit": 6})
	reconcile(t, h)
	setPhase(h, pods(h)[0], "Failed", t0.Add(-4*time.Second))
	out, job := reconcile(t, h)
	if out != "requeue-after 6000ms" || len(pods(h)) != 1 || num(job, "status", "active") != 0 {
		t.Fatalf("first failure 4 s ago: %s, %d pods, %v", out, len(pods(h)), job["status"])
	}
	turtles.Now = func() time.Time { return t0.Add(6 * time.Second) }
	if out, _ := reconcile(t, h); out != "done" || len(pods(h)) != 2 {
		t.Fatalf("after the back-off: %s, %d pods", out, len(pods(h)))
	}
	// A second consecutive failure doubles the delay: 20 s.
	for _, p := range pods(h) {
		if turtles.NestedString(p, "status", "phase") == "" {
			setPhase(h, p, "Failed", t0.Add(6*time.Second))
		}
	}
	if out, _ := reconcile(t, h); out != "requeue-after 20000ms" {
		t.Fatalf("second failure: %s", out)
	}
}

func TestActiveDeadlineSeconds(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"completions": 1, "parallelism": 1, "backoffLimit": 6, "activeDeadlineSeconds": 30})
	out, _ := reconcile(t, h)
	if out != "requeue-after 30000ms" {
		t.Fatalf("the deadline is 30 s away: %s", out)
	}
	turtles.Now = func() time.Time { return t0.Add(30 * time.Second) }
	out, job := reconcile(t, h)
	if out != "done" {
		t.Fatal(out)
	}
	if got := conditionTypes(job); got != "FailureTarget=True/DeadlineExceeded,Failed=True/DeadlineExceeded" {
		t.Fatalf("conditions %s", got)
	}
	c, _ := turtles.FindCondition(job, "Failed")
	if c.Message != "Job was active longer than specified deadline" {
		t.Fatalf("message %q", c.Message)
	}
	if len(pods(h)) != 0 || num(job, "status", "active") != 0 {
		t.Fatalf("the active pod is deleted: %d pods, %v", len(pods(h)), job["status"])
	}
}

func TestWorkQueueJobCompletesOnFirstSuccess(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"parallelism": 3, "backoffLimit": 6})
	reconcile(t, h)
	ps := pods(h)
	if len(ps) != 3 {
		t.Fatalf("%d pods", len(ps))
	}
	setPhase(h, ps[0], "Succeeded", t0)
	_, job := reconcile(t, h)
	if !strings.Contains(conditionTypes(job), "Complete=True") || num(job, "status", "succeeded") != 1 || len(pods(h)) != 1 {
		t.Fatalf("conditions %s, status %v, %d pods", conditionTypes(job), job["status"], len(pods(h)))
	}
}

func TestLaggingCacheDoesNotCreateTooMany(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"completions": 2, "parallelism": 2, "backoffLimit": 6})
	reconcile(t, h)
	// The informer has not seen the new Pods yet.
	for _, p := range pods(h) {
		h.Remove(turtles.Pods, "default", p.GetName())
	}
	_, job := reconcile(t, h)
	if n := len(h.CallsOf("POST")); n != 2 || num(job, "status", "active") != 2 {
		t.Fatalf("%d creates, status %v", n, job["status"])
	}
	// Pods the cache never shows (deleted before it saw them) stop counting after 5 minutes.
	turtles.Now = func() time.Time { return t0.Add(5*time.Minute + time.Second) }
	reconcile(t, h)
	if n := len(h.CallsOf("POST")); n != 4 {
		t.Fatalf("expired expectations: %d creates, want 4", n)
	}
}

func TestAtMostMaxPodCreatePerSyncAReconcile(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"parallelism": 1200, "backoffLimit": 6})
	reconcile(t, h)
	if n := len(h.CallsOf("POST")); n != maxPodCreatePerSync {
		t.Fatalf("%d creates in the first reconcile, want %d", n, maxPodCreatePerSync)
	}
	reconcile(t, h)
	_, job := reconcile(t, h)
	if n := len(h.CallsOf("POST")); n != 1200 || num(job, "status", "active") != 1200 {
		t.Fatalf("%d creates after three, status %v", n, job["status"])
	}
}

func TestNegativeParallelismCreatesNothing(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"parallelism": -1, "backoffLimit": 6})
	if out, _ := reconcile(t, h); out != "done" {
		t.Fatal(out)
	}
	if n := len(h.CallsOf("POST")); n != 0 {
		t.Fatalf("%d creates", n)
	}
}

func TestDeletedJobIsLeftToTheGarbageCollector(t *testing.T) {
	setup(t)
	if out := turtles.ReconcileForTest(turtles.NamespacedName{Namespace: "default", Name: "gone"}, nil); out != "done" {
		t.Fatal(out)
	}
}

func TestSuspendAndResume(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"completions": 2, "parallelism": 2, "backoffLimit": 6, "suspend": true, "activeDeadlineSeconds": 5})
	_, job := reconcile(t, h)
	if len(pods(h)) != 0 || turtles.NestedString(job, "status", "startTime") != "" {
		t.Fatalf("suspended: %d pods, status %v", len(pods(h)), job["status"])
	}
	c, _ := turtles.FindCondition(job, "Suspended")
	if c.Status != "True" || c.Reason != "JobSuspended" || c.Message != "Job suspended" {
		t.Fatalf("condition %+v", c)
	}
	// Resumed an hour later: the deadline counts from now, not from the creation.
	turtles.Now = func() time.Time { return t0.Add(time.Hour) }
	turtles.SetNestedField(job, false, "spec", "suspend")
	h.Add(turtles.Jobs, job)
	out, job := reconcile(t, h)
	if out != "requeue-after 5000ms" || len(pods(h)) != 2 || turtles.NestedString(job, "status", "startTime") != turtles.Timestamp(t0.Add(time.Hour)) {
		t.Fatalf("resumed: %s, %d pods, status %v", out, len(pods(h)), job["status"])
	}
	c, _ = turtles.FindCondition(job, "Suspended")
	if c.Status != "False" || c.Reason != "JobResumed" {
		t.Fatalf("condition %+v", c)
	}
	// Suspended again: the active Pods go.
	turtles.SetNestedField(job, true, "spec", "suspend")
	h.Add(turtles.Jobs, job)
	_, job = reconcile(t, h)
	if len(pods(h)) != 0 || num(job, "status", "active") != 0 || turtles.NestedString(job, "status", "startTime") != "" {
		t.Fatalf("suspended again: %d pods, status %v", len(pods(h)), job["status"])
	}
	if r := strings.Join(h.EventReasons(), ","); !strings.HasPrefix(r, "Suspended,Resumed,SuccessfulCreate,SuccessfulCreate") || !strings.HasSuffix(r, "SuccessfulDelete,SuccessfulDelete,Suspended") {
		t.Fatalf("events %s", r)
	}
}

func TestTTLSecondsAfterFinished(t *testing.T) {
	h := setup(t)
	addJob(h, map[string]any{"completions": 1, "parallelism": 1, "backoffLimit": 6, "ttlSecondsAfterFinished": 100})
	reconcile(t, h)
	setPhase(h, pods(h)[0], "Succeeded", t0)
	out, _ := reconcile(t, h)
	if out != "requeue-after 100000ms" {
		t.Fatalf("just completed: %s", out)
	}
	turtles.Now = func() time.Time { return t0.Add(99 * time.Second) }
	if out, _ := reconcile(t, h); out != "requeue-after 1000ms" {
		t.Fatalf("1 s to go: %s", out)
	}
	turtles.Now = func() time.Time { return t0.Add(100 * time.Second) }
	job, _ := h.Get(turtles.Jobs, "default", "pi")
	if out := turtles.ReconcileForTest(job.GetKey(), job); out != "done" {
		t.Fatal(out)
	}
	if _, still := h.Get(turtles.Jobs, "default", "pi"); still {
		t.Fatal("the job outlived its TTL")
	}
	del := h.CallsOf("DELETE")
	if len(del) != 1 || !strings.Contains(string(del[0].Body), `"propagationPolicy":"Foreground"`) ||
		!strings.Contains(string(del[0].Body), `"uid":"job-uid"`) {
		t.Fatalf("delete %v", del)
	}
}
