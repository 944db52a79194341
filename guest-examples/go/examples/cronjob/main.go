// cronjob: kube-controller-manager's CronJob controller (batch/v1 CronJobs) in Go.
//
// For every CronJob it creates a Job from spec.jobTemplate at each time of spec.schedule (standard
// cron syntax and the @hourly-style descriptors, in spec.timeZone or UTC), named
// "CRONJOB-<scheduled time in minutes since the epoch>", owned by the CronJob (controller: true),
// with the annotation batch.kubernetes.io/cronjob-scheduled-timestamp; honours
// spec.concurrencyPolicy (Allow, Forbid, Replace), spec.startingDeadlineSeconds, spec.suspend and
// the history limits (successfulJobsHistoryLimit 3, failedJobsHistoryLimit 1 by default), and
// writes status.active (references to its running Jobs), lastScheduleTime and
// lastSuccessfulTime, with kube's Events (SuccessfulCreate, SawCompletedJob, SuccessfulDelete,
// MissSchedule, JobAlreadyActive, UnexpectedJob, TooManyMissedTimes, UnparseableSchedule,
// UnknownTimeZone). It requeues itself for the next scheduled time.
//
// Not done: @every schedules; the legacy "TZ=" / "CRON_TZ=" schedule prefixes (kube's API
// rejects them).
package main

import (
	"context"
	"fmt"
	"sort"
	"time"
	_ "time/tzdata" // spec.timeZone: the IANA database is not on a WASI machine

	"turtles.dev/go/turtles"
)

const (
	scheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"
	// Past this many missed start times kube warns (and still starts the most recent one).
	maxMissed = 100
	// The requeue for the next scheduled time comes this much after it, as kube's.
	nextScheduleDelta = 100 * time.Millisecond
)

type cronJobController struct{}

func init() {
	turtles.NewControllerManagedBy().
		For(turtles.CronJobs).
		Owns(turtles.Jobs).
		WithPermission(
			turtles.Group("batch", "cronjobs").Allow("get", "list", "watch"),
			turtles.Group("batch", "cronjobs/status").Allow("get", "update", "patch"),
			turtles.Group("batch", "jobs").Allow("get", "list", "watch", "create", "delete"),
			turtles.Core("events").Allow("create", "patch"),
		).
		Complete(cronJobController{})
}

// main is not called: the component is a reactor; init registers the controller.
func main() {}

func jobFinished(j turtles.Object) (string, bool) {
	for _, c := range turtles.GetConditions(j) {
		if (c.Type == "Complete" || c.Type == "Failed") && c.Status == "True" {
			return c.Type, true
		}
	}
	return "", false
}

type activeRef struct {
	APIVersion      string `json:"apiVersion"`
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

func activeRefs(cj turtles.Object) []activeRef {
	var out []activeRef
	for _, a := range turtles.NestedSlice(cj, "status", "active") {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		o := turtles.Object(m)
		out = append(out, activeRef{
			APIVersion: turtles.NestedString(o, "apiVersion"), Kind: turtles.NestedString(o, "kind"),
			Namespace: turtles.NestedString(o, "namespace"), Name: turtles.NestedString(o, "name"),
			UID: turtles.NestedString(o, "uid"), ResourceVersion: turtles.NestedString(o, "resourceVersion"),
		})
	}
	return out
}

func setActive(cj turtles.Object, refs []activeRef) {
	if len(refs) == 0 {
		turtles.RemoveNestedField(cj, "status", "active")
		return
	}
	list := make([]any, len(refs))
	for i, r := range refs {
		m := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "namespace": r.Namespace, "name": r.Name, "uid": r.UID}
		if r.ResourceVersion != "" {
			m["resourceVersion"] = r.ResourceVersion
		}
		list[i] = m
	}
	turtles.SetNestedField(cj, list, "status", "active")
}

// jobName is kube's: the CronJob's name and the scheduled time in minutes since the epoch.
func jobName(cj turtles.Object, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.GetName(), scheduled.Unix()/60)
}

func (cronJobController) Reconcile(ctx context.Context, req turtles.Request) (turtles.Result, error) {
	cj := req.Object
	if cj == nil || cj.IsDeleting() {
		return turtles.Result{}, nil // the garbage collector removes its Jobs
	}
	now := turtles.Now()
	next := cj.DeepCopy()
	oldStatus := string(turtles.Object(turtles.NestedMap(cj, "status")).JSON())

	// The CronJob's Jobs, from the cache.
	var jobs []turtles.Object
	for _, j := range turtles.CacheList(turtles.Jobs, cj.GetNamespace()) {
		if ref, ok := j.GetControllerOf(); ok && ref.UID == cj.GetUID() {
			jobs = append(jobs, j)
		}
	}
	// status.active: drop Jobs that are gone or finished (recording finished ones).
	active := activeRefs(cj)
	byUID := map[string]turtles.Object{}
	for _, j := range jobs {
		byUID[j.GetUID()] = j
	}
	inActive := map[string]bool{}
	var keep []activeRef
	for _, a := range active {
		j, ok := byUID[a.UID]
		if !ok {
			// Gone (or not in the cache yet: a Job created moments ago is kept).
			if _, err := turtles.Get(ctx, turtles.Jobs, cj.GetNamespace(), a.Name); err == nil {
				keep = append(keep, a)
				inActive[a.UID] = true
			} else if !turtles.IsNotFound(err) {
				return turtles.Result{}, err
			}
			continue
		}
		if cond, done := jobFinished(j); done {
			_ = turtles.Eventf(cj, turtles.EventNormal, "SawCompletedJob", "Saw completed job: %s, status: %s", j.GetName(), cond)
			if cond == "Complete" {
				if ct, ok := turtles.ParseTimestamp(turtles.NestedString(j, "status", "completionTime")); ok {
					last, had := turtles.ParseTimestamp(turtles.NestedString(next, "status", "lastSuccessfulTime"))
					if !had || ct.After(last) {
						turtles.SetNestedField(next, turtles.Timestamp(ct), "status", "lastSuccessfulTime")
					}
				}
			}
			continue
		}
		keep = append(keep, a)
		inActive[a.UID] = true
	}
	for _, j := range jobs {
		if _, done := jobFinished(j); !done && !inActive[j.GetUID()] {
			_ = turtles.Eventf(cj, turtles.EventWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.GetName())
		}
	}
	setActive(next, keep)

	// History limits.
	if err := cleanupFinished(ctx, cj, jobs); err != nil {
		return turtles.Result{}, err
	}

	result, err := schedule1(ctx, cj, next, now, &keep)
	if err != nil {
		return turtles.Result{}, err
	}
	setActive(next, keep)
	if string(turtles.Object(turtles.NestedMap(next, "status")).JSON()) != oldStatus {
		if _, err := turtles.UpdateStatus(ctx, turtles.CronJobs, next); err != nil {
			return turtles.Result{}, fmt.Errorf("updating the status of cronjob %s: %w", req.NamespacedName, err)
		}
	}
	return result, nil
}

// schedule1 starts the Job of the most recent unmet schedule time, if it is due, and says when
// to look again.
func schedule1(ctx context.Context, cj, next turtles.Object, now time.Time, active *[]activeRef) (turtles.Result, error) {
	if suspend, _ := turtles.NestedBool(cj, "spec", "suspend"); suspend {
		return turtles.Result{}, nil
	}
	loc := time.UTC
	if tz := turtles.NestedString(cj, "spec", "timeZone"); tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			_ = turtles.Eventf(cj, turtles.EventWarning, "UnknownTimeZone", "invalid timeZone: %q: %v", tz, err)
			return turtles.Result{}, nil // until the spec changes
		}
		loc = l
	}
	sched, err := parseSchedule(turtles.NestedString(cj, "spec", "schedule"))
	if err != nil {
		_ = turtles.Eventf(cj, turtles.EventWarning, "UnparseableSchedule", "unparseable schedule: %q : %v", turtles.NestedString(cj, "spec", "schedule"), err)
		return turtles.Result{}, nil
	}
	now = now.In(loc)
	// The earliest time to consider: the last schedule time (or creation), not before the
	// starting deadline.
	earliest, ok := turtles.ParseTimestamp(turtles.NestedString(cj, "status", "lastScheduleTime"))
	if !ok {
		earliest, _ = turtles.ParseTimestamp(turtles.NestedString(cj, "metadata", "creationTimestamp"))
	}
	sds, hasSDS := turtles.NestedInt64(cj, "spec", "startingDeadlineSeconds")
	if hasSDS {
		if floor := now.Add(-time.Duration(sds) * time.Second); floor.After(earliest) {
			earliest = floor
		}
	}
	earliest = earliest.In(loc)
	scheduled, missed := mostRecent(sched, earliest, now)
	requeue := func() turtles.Result {
		n := sched.next(now)
		if n.IsZero() {
			return turtles.Result{}
		}
		return turtles.Result{RequeueAfter: n.Sub(now) + nextScheduleDelta}
	}
	if scheduled.IsZero() {
		return requeue(), nil // nothing due yet
	}
	if missed > maxMissed {
		_ = turtles.Eventf(cj, turtles.EventWarning, "TooManyMissedTimes", "too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if hasSDS && scheduled.Add(time.Duration(sds)*time.Second).Before(now) {
		_ = turtles.Eventf(cj, turtles.EventWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return requeue(), nil
	}
	name := jobName(cj, scheduled)
	for _, a := range *active {
		if a.Name == name {
			return requeue(), nil // already running
		}
	}
	if last, ok := turtles.ParseTimestamp(turtles.NestedString(cj, "status", "lastScheduleTime")); ok && last.Equal(scheduled) {
		return requeue(), nil // already started (and finished)
	}
	switch turtles.NestedString(cj, "spec", "concurrencyPolicy") {
	case "Forbid":
		if len(*active) > 0 {
			_ = turtles.Event(cj, turtles.EventNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return requeue(), nil
		}
	case "Replace":
		for _, a := range *active {
			if err := deleteJob(ctx, cj, a.Name); err != nil {
				return turtles.Result{}, err
			}
		}
		*active = nil
	}
	job, err := createJob(ctx, cj, scheduled)
	if err != nil {
		return turtles.Result{}, err
	}
	*active = append(*active, activeRef{APIVersion: "batch/v1", Kind: "Job", Namespace: job.GetNamespace(),
		Name: job.GetName(), UID: job.GetUID(), ResourceVersion: job.GetResourceVersion()})
	turtles.SetNestedField(next, turtles.Timestamp(scheduled), "status", "lastScheduleTime")
	return requeue(), nil
}

// mostRecent is the latest schedule time in (earliest, now] (zero: none) and kube's estimate of
// how many were missed: the interval between the first two times fitted between the first and
// now (exact for regular schedules), so a CronJob far behind costs a few steps, not one per time.
func mostRecent(sched *schedule, earliest, now time.Time) (time.Time, int64) {
	t1 := sched.next(earliest)
	if t1.IsZero() || t1.After(now) {
		return time.Time{}, 0
	}
	t2 := sched.next(t1)
	if t2.IsZero() || t2.After(now) {
		return t1, 1
	}
	between := int64(t2.Sub(t1).Round(time.Second).Seconds())
	missed := int64(now.Sub(t1).Seconds())/between + 1
	// Start from the estimate and step to the actual most recent time (irregular schedules,
	// like @monthly, land a little before it).
	from := t1.Add(time.Duration((missed-2)*between) * time.Second)
	if from.Before(t1) {
		from = t1
	}
	var recent time.Time
	for t := sched.next(from); !t.IsZero() && !t.After(now); t = sched.next(t) {
		recent = t
	}
	if recent.IsZero() {
		recent = t1
		for t := t2; !t.IsZero() && !t.After(now); t = sched.next(t) {
			recent = t
		}
	}
	return recent, missed
}

func createJob(ctx context.Context, cj turtles.Object, scheduled time.Time) (turtles.Object, error) {
	tmpl := turtles.Object(turtles.NestedMap(cj, "spec", "jobTemplate")).DeepCopy()
	job := turtles.Object{"apiVersion": "batch/v1", "kind": "Job"}
	if spec := turtles.NestedMap(tmpl, "spec"); spec != nil {
		job["spec"] = spec
	}
	if l := turtles.NestedStringMap(tmpl, "metadata", "labels"); len(l) > 0 {
		job.SetLabels(l)
	}
	ann := turtles.NestedStringMap(tmpl, "metadata", "annotations")
	if ann == nil {
		ann = map[string]string{}
	}
	ann[scheduledTimestampAnnotation] = scheduled.Format(time.RFC3339)
	job.SetAnnotations(ann)
	job.SetName(jobName(cj, scheduled))
	job.SetNamespace(cj.GetNamespace())
	job.SetOwnerReferences([]turtles.OwnerReference{turtles.NewControllerRef(cj)})
	created, err := turtles.Create(ctx, turtles.Jobs, job)
	if turtles.IsAlreadyExists(err) {
		// Made by an earlier reconcile whose status write was lost: ours if we control it.
		existing, gerr := turtles.Get(ctx, turtles.Jobs, cj.GetNamespace(), job.GetName())
		if gerr == nil && existing.IsControlledBy(cj) {
			return existing, nil
		}
	}
	if err != nil {
		_ = turtles.Eventf(cj, turtles.EventWarning, "FailedCreate", "Error creating job: %v", err)
		return nil, fmt.Errorf("creating job %s: %w", job.GetName(), err)
	}
	_ = turtles.Eventf(cj, turtles.EventNormal, "SuccessfulCreate", "Created job %s", created.GetName())
	return created, nil
}

func deleteJob(ctx context.Context, cj turtles.Object, name string) error {
	err := turtles.Delete(ctx, turtles.Jobs, cj.GetNamespace(), name, turtles.DeleteOptions{PropagationPolicy: "Background"})
	if err != nil && !turtles.IsNotFound(err) {
		_ = turtles.Eventf(cj, turtles.EventWarning, "FailedDelete", "Deleted job: %v", err)
		return fmt.Errorf("deleting job %s: %w", name, err)
	}
	if err == nil {
		_ = turtles.Eventf(cj, turtles.EventNormal, "SuccessfulDelete", "Deleted job %s", name)
	}
	return nil
}

// cleanupFinished deletes the oldest finished Jobs beyond the history limits.
func cleanupFinished(ctx context.Context, cj turtles.Object, jobs []turtles.Object) error {
	limit := func(field string, def int64) int64 {
		if n, ok := turtles.NestedInt64(cj, "spec", field); ok {
			return n
		}
		return def
	}
	var succeeded, failed []turtles.Object
	for _, j := range jobs {
		switch cond, _ := jobFinished(j); cond {
		case "Complete":
			succeeded = append(succeeded, j)
		case "Failed":
			failed = append(failed, j)
		}
	}
	for _, group := range []struct {
		jobs  []turtles.Object
		limit int64
	}{{succeeded, limit("successfulJobsHistoryLimit", 3)}, {failed, limit("failedJobsHistoryLimit", 1)}} {
		if int64(len(group.jobs)) <= group.limit {
			continue
		}
		sort.SliceStable(group.jobs, func(a, b int) bool { return startOf(group.jobs[a]).Before(startOf(group.jobs[b])) })
		for _, j := range group.jobs[:int64(len(group.jobs))-group.limit] {
			if err := deleteJob(ctx, cj, j.GetName()); err != nil {
				return err
			}
		}
	}
	return nil
}

// startOf orders finished Jobs as kube does: status.startTime, else creation.
func startOf(j turtles.Object) time.Time {
	if t, ok := turtles.ParseTimestamp(turtles.NestedString(j, "status", "startTime")); ok {
		return t
	}
	t, _ := turtles.ParseTimestamp(turtles.NestedString(j, "metadata", "creationTimestamp"))
	return t
}
