package main

import (
	"strings"
	"testing"
	"time"

	"turtles.dev/go/turtles"
	"turtles.dev/go/turtles/fake"
)

// created at 10:00:30 UTC; "*/1 * * * *" is first due at 10:01.
var created = time.Date(2026, 3, 14, 10, 0, 30, 0, time.UTC)

func setup(t *testing.T, at time.Time) *fake.Host {
	t.Helper()
	h := fake.New()
	restore := h.Install()
	setNow(at)
	t.Cleanup(func() { restore(); turtles.Now = time.Now })
	turtles.NewControllerManagedBy().For(turtles.CronJobs).Owns(turtles.Jobs).Complete(cronJobController{})
	return h
}

func setNow(at time.Time) { turtles.Now = func() time.Time { return at } }

func addCronJob(h *fake.Host, spec map[string]any) {
	spec["jobTemplate"] = map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "tick"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}},
	}
	h.Add(turtles.CronJobs, turtles.Object{
		"metadata": map[string]any{"name": "tick", "namespace": "default", "uid": "cj-uid",
			"creationTimestamp": turtles.Timestamp(created)},
		"spec": spec,
	})
}

func reconcile(t *testing.T, h *fake.Host) (string, turtles.Object) {
	t.Helper()
	cj, _ := h.Get(turtles.CronJobs, "default", "tick")
	out := turtles.ReconcileForTest(cj.GetKey(), cj)
	cj, _ = h.Get(turtles.CronJobs, "default", "tick")
	return out, cj
}

func jobNames(h *fake.Host) string {
	var names []string
	for _, j := range h.List(turtles.Jobs, "default") {
		names = append(names, j.GetName())
	}
	return strings.Join(names, ",")
}

func finish(h *fake.Host, name, cond string, at time.Time) {
	j, _ := h.Get(turtles.Jobs, "default", name)
	turtles.SetConditions(j, []turtles.Condition{{Type: cond, Status: "True"}})
	turtles.SetNestedField(j, turtles.Timestamp(at.Add(-10*time.Second)), "status", "startTime")
	if cond == "Complete" {
		turtles.SetNestedField(j, turtles.Timestamp(at), "status", "completionTime")
	}
	h.Add(turtles.Jobs, j)
}

func activeNames(cj turtles.Object) string {
	var names []string
	for _, a := range activeRefs(cj) {
		names = append(names, a.Name)
	}
	return strings.Join(names, ",")
}

func TestNothingBeforeTheFirstScheduleThenAJobOnTime(t *testing.T) {
	h := setup(t, created)
	addCronJob(h, map[string]any{"schedule": "*/1 * * * *"})
	out, _ := reconcile(t, h)
	if out != "requeue-after 30100ms" || jobNames(h) != "" {
		t.Fatalf("before 10:01: %s, jobs %q", out, jobNames(h))
	}
	setNow(created.Add(30*time.Second + 100*time.Millisecond)) // 10:01:00.1
	out, cj := reconcile(t, h)
	want := "tick-" + "29558041" // 10:01 UTC in minutes since the epoch
	if out != "requeue-after 60000ms" || jobNames(h) != want {
		t.Fatalf("at 10:01: %s, jobs %q", out, jobNames(h))
	}
	j, _ := h.Get(turtles.Jobs, "default", want)
	if !j.IsControlledBy(cj) || j.GetLabels()["app"] != "tick" ||
		j.GetAnnotations()["batch.kubernetes.io/cronjob-scheduled-timestamp"] != "2026-03-14T10:01:00Z" ||
		turtles.NestedString(j, "spec", "template", "spec", "restartPolicy") != "Never" {
		t.Fatalf("job %v", j)
	}
	if activeNames(cj) != want || turtles.NestedString(cj, "status", "lastScheduleTime") != "2026-03-14T10:01:00Z" {
		t.Fatalf("status %v", cj["status"])
	}
	if a := activeRefs(cj)[0]; a.Kind != "Job" || a.APIVersion != "batch/v1" || a.UID != j.GetUID() {
		t.Fatalf("active ref %+v", a)
	}
	// The same minute again: nothing new.
	reconcile(t, h)
	if jobNames(h) != want {
		t.Fatalf("jobs %q", jobNames(h))
	}
	if r := strings.Join(h.EventReasons(), ","); r != "SuccessfulCreate" {
		t.Fatalf("events %s", r)
	}
}

func TestCompletedJobsLeaveActiveAndSetLastSuccessfulTime(t *testing.T) {
	h := setup(t, created.Add(30*time.Second))
	addCronJob(h, map[string]any{"schedule": "*/1 * * * *"})
	reconcile(t, h)
	finish(h, "tick-29558041", "Complete", created.Add(40*time.Second))
	setNow(created.Add(45 * time.Second))
	_, cj := reconcile(t, h)
	if activeNames(cj) != "" || turtles.NestedString(cj, "status", "lastSuccessfulTime") != "2026-03-14T10:01:10Z" {
		t.Fatalf("status %v", cj["status"])
	}
	if r := h.EventReasons(); r[len(r)-1] != "SawCompletedJob" || !strings.Contains(h.Events[len(r)-1].Note, "status: Complete") {
		t.Fatalf("events %v", r)
	}
}

func TestHistoryLimits(t *testing.T) {
	h := setup(t, created)
	addCronJob(h, map[string]any{"schedule": "*/1 * * * *", "successfulJobsHistoryLimit": 2})
	for i := 1; i <= 4; i++ {
		at := created.Add(time.Duration(i)*time.Minute - 30*time.Second)
		setNow(at)
		reconcile(t, h)
		finish(h, jobName(turtles.Object{"metadata": map[string]any{"name": "tick"}}, at.Truncate(time.Minute)), "Complete", at.Add(time.Second))
	}
	setNow(created.Add(4*time.Minute + 10*time.Second))
	reconcile(t, h)
	// Four completed: the two oldest go (10:01, 10:02); 10:03 and 10:04 stay.
	if got := jobNames(h); got != "tick-29558043,tick-29558044" {
		t.Fatalf("jobs %q", got)
	}
	// Failed ones: one is kept by default.
	setNow(created.Add(5*time.Minute - 30*time.Second))
	reconcile(t, h)
	finish(h, "tick-29558045", "Failed", created.Add(5*time.Minute))
	setNow(created.Add(6*time.Minute - 30*time.Second))
	reconcile(t, h)
	finish(h, "tick-29558046", "Failed", created.Add(6*time.Minute))
	reconcile(t, h)
	if got := jobNames(h); got != "tick-29558043,tick-29558044,tick-29558046" {
		t.Fatalf("jobs %q", got)
	}
}

func TestConcurrencyPolicies(t *testing.T) {
	for _, c := range []struct{ policy, want, event string }{
		{"Allow", "tick-29558041,tick-29558042", "SuccessfulCreate"},
		{"Forbid", "tick-29558041", "JobAlreadyActive"},
		{"Replace", "tick-29558042", "SuccessfulCreate"},
	} {
		t.Run(c.policy, func(t *testing.T) {
			h := setup(t, created.Add(30*time.Second))
			addCronJob(h, map[string]any{"schedule": "*/1 * * * *", "concurrencyPolicy": c.policy})
			reconcile(t, h)
			setNow(created.Add(90 * time.Second))
			_, cj := reconcile(t, h)
			if got := jobNames(h); got != c.want {
				t.Fatalf("jobs %q, want %q", got, c.want)
			}
			if activeNames(cj) != c.want {
				t.Fatalf("active %q", activeNames(cj))
			}
			if r := h.EventReasons(); r[len(r)-1] != c.event {
				t.Fatalf("events %v", r)
			}
		})
	}
}

func TestStartingDeadlineSecondsSkipsALateStart(t *testing.T) {
	// 20 s after 10:01 with a 10 s starting deadline: 10:01 is not started (kube looks only
	// at times after now - startingDeadlineSeconds); without the deadline it would be.
	h := setup(t, created.Add(30*time.Second+20*time.Second)) // 10:01:20
	addCronJob(h, map[string]any{"schedule": "*/1 * * * *", "startingDeadlineSeconds": 10})
	out, _ := reconcile(t, h)
	if jobNames(h) != "" || out != "requeue-after 40100ms" || len(h.Events) != 0 {
		t.Fatalf("%s, jobs %q, events %v", out, jobNames(h), h.EventReasons())
	}
	// Within the deadline: started.
	setNow(created.Add(90*time.Second + 5*time.Second)) // 10:02:05
	reconcile(t, h)
	if jobNames(h) != "tick-29558042" {
		t.Fatalf("jobs %q", jobNames(h))
	}
	h2 := setup(t, created.Add(30*time.Second+20*time.Second))
	addCronJob(h2, map[string]any{"schedule": "*/1 * * * *"})
	reconcile(t, h2)
	if jobNames(h2) != "tick-29558041" {
		t.Fatalf("no deadline: jobs %q", jobNames(h2))
	}
}

func TestSuspendAndBadSpecs(t *testing.T) {
	h := setup(t, created.Add(time.Hour))
	addCronJob(h, map[string]any{"schedule": "*/1 * * * *", "suspend": true})
	if out, _ := reconcile(t, h); out != "done" || jobNames(h) != "" {
		t.Fatalf("suspended: %s %q", out, jobNames(h))
	}
	h2 := setup(t, created.Add(time.Hour))
	addCronJob(h2, map[string]any{"schedule": "61 * * * *"})
	if out, _ := reconcile(t, h2); out != "done" || h2.EventReasons()[0] != "UnparseableSchedule" {
		t.Fatalf("bad schedule: %s %v", out, h2.EventReasons())
	}
	h3 := setup(t, created.Add(time.Hour))
	addCronJob(h3, map[string]any{"schedule": "*/1 * * * *", "timeZone": "Mars/Olympus"})
	if out, _ := reconcile(t, h3); out != "done" || h3.EventReasons()[0] != "UnknownTimeZone" {
		t.Fatalf("bad time zone: %s %v", out, h3.EventReasons())
	}
}

func TestTimeZoneAndMissedTimes(t *testing.T) {
	// 09:00 every day in Kolkata (03:30 UTC); an hour past it, created long before.
	h := setup(t, time.Date(2026, 3, 20, 4, 30, 0, 0, time.UTC))
	addCronJob(h, map[string]any{"schedule": "0 9 * * *", "timeZone": "Asia/Kolkata"})
	reconcile(t, h)
	want := "tick-" + "29566290" // 2026-03-20T03:30:00Z in minutes
	j, ok := h.Get(turtles.Jobs, "default", want)
	if !ok {
		t.Fatalf("jobs %q", jobNames(h))
	}
	if got := j.GetAnnotations()["batch.kubernetes.io/cronjob-scheduled-timestamp"]; got != "2026-03-20T09:00:00+05:30" {
		t.Fatalf("annotation %s", got)
	}
	// More than 100 missed times: a warning, and the most recent one still starts.
	h2 := setup(t, created.Add(200*time.Minute+time.Second))
	addCronJob(h2, map[string]any{"schedule": "*/1 * * * *"})
	reconcile(t, h2)
	if r := h2.EventReasons(); r[0] != "TooManyMissedTimes" || jobNames(h2) != "tick-29558240" {
		t.Fatalf("events %v jobs %q", r, jobNames(h2))
	}
}

func TestUnexpectedJobIsReported(t *testing.T) {
	h := setup(t, created)
	addCronJob(h, map[string]any{"schedule": "0 0 1 1 *"})
	cj, _ := h.Get(turtles.CronJobs, "default", "tick")
	stray := turtles.Object{"metadata": map[string]any{"name": "stray", "namespace": "default"}}
	stray.SetOwnerReferences([]turtles.OwnerReference{turtles.NewControllerRef(cj)})
	h.Add(turtles.Jobs, stray)
	reconcile(t, h)
	if r := h.EventReasons(); len(r) != 1 || r[0] != "UnexpectedJob" {
		t.Fatalf("events %v", r)
	}
}

func TestMostRecentOfAnIrregularScheduleFarBehind(t *testing.T) {
	s, _ := parseSchedule("@monthly")
	got, missed := mostRecent(s, time.Date(2020, 1, 15, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC))
	if got.Format(time.RFC3339) != "2026-03-01T00:00:00Z" || missed < 70 {
		t.Fatalf("most recent %s, missed %d", got, missed)
	}
	if got, missed := mostRecent(s, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)); !got.IsZero() || missed != 0 {
		t.Fatalf("none due: %s %d", got, missed)
	}
}
