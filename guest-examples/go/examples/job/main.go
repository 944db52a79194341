// job: kube-controller-manager's Job controller (batch/v1 Jobs) in Go.
//
// For every Job it keeps up to spec.parallelism active Pods, made from spec.template (owned by
// the Job with controller: true, generateName "JOBNAME-", the labels kube's API server puts on a
// Job's template: batch.kubernetes.io/controller-uid, batch.kubernetes.io/job-name,
// controller-uid, job-name), counts the Pods that Succeeded and Failed against spec.completions
// and spec.backoffLimit, and writes status.active/ready/succeeded/failed, startTime,
// completionTime and kube's conditions: SuccessCriteriaMet then Complete (reason
// CompletionsReached), FailureTarget then Failed (reason BackoffLimitExceeded, or
// DeadlineExceeded past spec.activeDeadlineSeconds; the active Pods are deleted first). A failed
// Pod is replaced after kube's back-off (10 s doubling per consecutive failure, at most 6 min).
//
// spec.suspend deletes the active Pods and sets the Suspended condition (JobSuspended); resuming
// sets it False (JobResumed) and restarts startTime.
//
// spec.ttlSecondsAfterFinished deletes a finished Job that long after it finished (kube's
// TTL-after-finished controller).
//
// Not (yet) done: indexed completion, podFailurePolicy, successPolicy,
// podReplacementPolicy, the batch.kubernetes.io/job-tracking finalizer
// (Pods deleted by someone else before they were counted are not counted), and counting
// container restarts of restartPolicy: OnFailure Pods toward backoffLimit.
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"turtles.dev/go/turtles"
)

const (
	// Reasons and messages as kube's job controller writes them.
	reasonCompletionsReached   = "CompletionsReached"
	messageCompletionsReached  = "Reached expected number of succeeded pods"
	reasonBackoffLimitExceeded = "BackoffLimitExceeded"
	messageBackoffLimit        = "Job has reached the specified backoff limit"
	reasonDeadlineExceeded     = "DeadlineExceeded"
	messageDeadline            = "Job was active longer than specified deadline"

	defaultBackoffLimit = 6
	podFailureBackoff   = 10 * time.Second
	maxPodBackoff       = 6 * time.Minute
	// Pods created in one reconcile at most (kube's MaxPodCreateDeletePerSync).
	maxPodCreatePerSync = 500
)

type jobController struct {
	// Pods created but not yet seen in the informer cache (name -> when), by Job uid: counted
	// as active so a lagging cache never makes a Job create too many (kube's expectations, which
	// also expire after 5 minutes).
	expected map[string]map[string]time.Time
}

const expectationsTTL = 5 * time.Minute

func newController() *jobController {
	return &jobController{expected: map[string]map[string]time.Time{}}
}

func init() {
	turtles.NewControllerManagedBy().
		For(turtles.Jobs).
		Owns(turtles.Pods).
		WithPermission(
			turtles.Group("batch", "jobs").Allow("get", "list", "watch", "delete"),
			turtles.Group("batch", "jobs/status").Allow("get", "update", "patch"),
			turtles.Core("pods").Allow("get", "list", "watch", "create", "delete"),
			turtles.Core("events").Allow("create", "patch"),
		).
		Complete(newController())
}

// main is not called: the component is a reactor; init registers the controller.
func main() {}

func intField(o turtles.Object, def int64, fields ...string) int64 {
	if n, ok := turtles.NestedInt64(o, fields...); ok {
		return n
	}
	return def
}

func hasTrue(o turtles.Object, condType string) bool {
	c, ok := turtles.FindCondition(o, condType)
	return ok && c.Status == "True"
}

func podReady(p turtles.Object) bool { return hasTrue(p, "Ready") }

// finishTime is when a finished Pod finished, as well as its status tells (the latest
// condition transition or container termination), else its creation.
func finishTime(p turtles.Object) time.Time {
	var latest time.Time
	consider := func(s string) {
		if t, ok := turtles.ParseTimestamp(s); ok && t.After(latest) {
			latest = t
		}
	}
	for _, c := range turtles.GetConditions(p) {
		consider(c.LastTransitionTime)
	}
	for _, cs := range turtles.NestedSlice(p, "status", "containerStatuses") {
		if m, ok := cs.(map[string]any); ok {
			consider(turtles.NestedString(m, "state", "terminated", "finishedAt"))
		}
	}
	if latest.IsZero() {
		consider(turtles.NestedString(p, "metadata", "creationTimestamp"))
	}
	return latest
}

func (c *jobController) Reconcile(ctx context.Context, req turtles.Request) (turtles.Result, error) {
	job := req.Object
	if job == nil {
		return turtles.Result{}, nil // deleted: the garbage collector removes its Pods
	}
	uid := job.GetUID()
	if job.IsDeleting() {
		delete(c.expected, uid)
		return turtles.Result{}, nil
	}
	now := turtles.Now().UTC().Truncate(time.Second)
	if hasTrue(job, "Complete") || hasTrue(job, "Failed") {
		delete(c.expected, uid)
		return ttlAfterFinished(ctx, job, now) // finished
	}

	// The Job's Pods: those whose controller reference is this Job.
	var active, succeededPods, failedPods []turtles.Object
	terminating := 0 // being deleted and not finished (kube's CountTerminatingPods)
	seen := map[string]bool{}
	for _, p := range turtles.CacheList(turtles.Pods, job.GetNamespace()) {
		ref, ok := p.GetControllerOf()
		if !ok || ref.UID != uid {
			continue
		}
		seen[p.GetName()] = true
		switch turtles.NestedString(p, "status", "phase") {
		case "Succeeded":
			succeededPods = append(succeededPods, p)
		case "Failed":
			failedPods = append(failedPods, p)
		default:
			if p.IsDeleting() {
				terminating++
			} else {
				active = append(active, p)
			}
		}
	}
	pending := 0
	for name, at := range c.expected[uid] {
		if seen[name] || now.Sub(at) > expectationsTTL {
			delete(c.expected[uid], name)
		} else {
			pending++
		}
	}

	status := turtles.NestedMap(job, "status")
	oldStatus := turtles.Object{}
	if status != nil {
		oldStatus = turtles.Object(status).DeepCopy()
	}
	next := job.DeepCopy()

	succeeded := max(int64(len(succeededPods)), intField(job, 0, "status", "succeeded"))
	failed := max(int64(len(failedPods)), intField(job, 0, "status", "failed"))
	parallelism := intField(job, 1, "spec", "parallelism")
	completions, hasCompletions := turtles.NestedInt64(job, "spec", "completions")
	backoffLimit := intField(job, defaultBackoffLimit, "spec", "backoffLimit")

	// spec.suspend: no Pods, no startTime (the activeDeadlineSeconds timer stops); resuming sets
	// startTime anew, as kube does.
	suspended, _ := turtles.NestedBool(job, "spec", "suspend")
	startTime, started := turtles.ParseTimestamp(turtles.NestedString(job, "status", "startTime"))
	if !suspended && hasTrue(job, "Suspended") {
		setConditionStatus(next, "Suspended", "False", "JobResumed", "Job resumed", now)
		_ = turtles.Event(job, turtles.EventNormal, "Resumed", "Job resumed")
		started = false
	}
	if !started && !suspended {
		startTime = now
		turtles.SetNestedField(next, turtles.Timestamp(now), "status", "startTime")
	}
	if suspended && started {
		// kube clears it while suspended (its status validation refuses a new startTime for an
		// unsuspended Job that had one), so resuming starts the deadline anew.
		turtles.RemoveNestedField(next, "status", "startTime")
	}

	var requeue time.Duration
	// Failure first, as kube: the backoff limit, then the deadline.
	failReason, failMessage := "", ""
	if suspended {
		// Neither the backoff limit nor the deadline is checked while suspended.
	} else if ft, ok := turtles.FindCondition(job, "FailureTarget"); ok && ft.Status == "True" {
		failReason, failMessage = ft.Reason, ft.Message
	} else if failed > backoffLimit {
		failReason, failMessage = reasonBackoffLimitExceeded, messageBackoffLimit
	} else if ads, ok := turtles.NestedInt64(job, "spec", "activeDeadlineSeconds"); ok {
		deadline := startTime.Add(time.Duration(ads) * time.Second)
		if !now.Before(deadline) {
			failReason, failMessage = reasonDeadlineExceeded, messageDeadline
		} else {
			requeue = deadline.Sub(now)
		}
	}

	complete := false
	if failReason == "" && !suspended {
		if hasCompletions {
			complete = succeeded >= completions
		} else {
			complete = succeeded > 0 // work-queue Job: done once any Pod succeeded
		}
	}

	switch {
	case suspended:
		for _, p := range active {
			if err := c.deletePod(ctx, job, p); err != nil {
				return turtles.Result{}, err
			}
		}
		active = nil
		pending = 0
		delete(c.expected, uid)
		if !hasTrue(job, "Suspended") {
			setConditionStatus(next, "Suspended", "True", "JobSuspended", "Job suspended", now)
			_ = turtles.Event(job, turtles.EventNormal, "Suspended", "Job suspended")
		}
	case failReason != "":
		setCondition(next, "FailureTarget", failReason, failMessage, now)
		// Terminate the active Pods, then mark the Job Failed.
		for _, p := range active {
			if err := c.deletePod(ctx, job, p); err != nil {
				return turtles.Result{}, err
			}
		}
		active = nil
		pending = 0
		setCondition(next, "Failed", failReason, failMessage, now)
		_ = turtles.Event(job, turtles.EventWarning, failReason, failMessage)
	case complete:
		setCondition(next, "SuccessCriteriaMet", reasonCompletionsReached, messageCompletionsReached, now)
		// Complete once no Pod is left running (a work-queue Job's other Pods, or extras).
		for _, p := range active {
			if err := c.deletePod(ctx, job, p); err != nil {
				return turtles.Result{}, err
			}
		}
		active = nil
		pending = 0
		setCondition(next, "Complete", reasonCompletionsReached, messageCompletionsReached, now)
		turtles.SetNestedField(next, turtles.Timestamp(now), "status", "completionTime")
		_ = turtles.Event(job, turtles.EventNormal, "Completed", "Job completed")
	default:
		want := parallelism
		if hasCompletions {
			want = min(parallelism, completions-succeeded)
		}
		want = max(want, 0)
		have := int64(len(active) + pending)
		if have < want {
			// A failed Pod is replaced after kube's back-off (failures since the last success).
			if delay := c.backoff(failedPods, succeededPods, now); delay > 0 {
				requeue = minPositive(requeue, delay)
			} else {
				// At most maxPodCreatePerSync a reconcile (kube's MaxPodCreateDeletePerSync):
				// the Pods' own events bring the Job back for the rest, so one Job asking for
				// 100,000 Pods does not hold the worker, and others' Jobs are served between.
				for i := have; i < want && i < have+maxPodCreatePerSync; i++ {
					created, err := c.createPod(ctx, job)
					if err != nil {
						return turtles.Result{}, err
					}
					if c.expected[uid] == nil {
						c.expected[uid] = map[string]time.Time{}
					}
					c.expected[uid][created.GetName()] = now
					pending++
				}
			}
		} else if int64(len(active)) > want {
			// Too many (parallelism lowered): delete the newest, not-ready first.
			sort.SliceStable(active, func(i, j int) bool {
				if podReady(active[i]) != podReady(active[j]) {
					return !podReady(active[i])
				}
				return turtles.NestedString(active[i], "metadata", "creationTimestamp") >
					turtles.NestedString(active[j], "metadata", "creationTimestamp")
			})
			for _, p := range active[:int64(len(active))-want] {
				if err := c.deletePod(ctx, job, p); err != nil {
					return turtles.Result{}, err
				}
			}
			active = active[int64(len(active))-want:]
		}
	}

	ready := 0
	for _, p := range active {
		if podReady(p) {
			ready++
		}
	}
	turtles.SetNestedField(next, turtles.Int(int64(len(active)+pending)), "status", "active")
	turtles.SetNestedField(next, turtles.Int(int64(ready)), "status", "ready")
	turtles.SetNestedField(next, turtles.Int(succeeded), "status", "succeeded")
	turtles.SetNestedField(next, turtles.Int(failed), "status", "failed")
	// kube's job controller (JobPodReplacementPolicy, on by default) always writes how many of
	// the Job's Pods are terminating, and an empty uncountedTerminatedPods.
	turtles.SetNestedField(next, turtles.Int(int64(terminating)), "status", "terminating")
	if turtles.NestedMap(next, "status", "uncountedTerminatedPods") == nil {
		turtles.SetNestedField(next, map[string]any{}, "status", "uncountedTerminatedPods")
	}
	if string(turtles.Object(turtles.NestedMap(next, "status")).JSON()) != string(oldStatus.JSON()) {
		if _, err := turtles.UpdateStatus(ctx, turtles.Jobs, next); err != nil {
			return turtles.Result{}, fmt.Errorf("updating the status of job %s: %w", req.NamespacedName, err)
		}
	}
	if hasTrue(next, "Complete") || hasTrue(next, "Failed") {
		delete(c.expected, uid)
		return ttlAfterFinished(ctx, next, now)
	}
	return turtles.Result{RequeueAfter: requeue}, nil
}

// ttlAfterFinished is kube's TTL-after-finished controller for one finished Job: with
// spec.ttlSecondsAfterFinished, the Job is deleted (propagation Foreground, precondition on its
// uid) that long after it finished (completionTime, or the Failed condition's transition).
func ttlAfterFinished(ctx context.Context, job turtles.Object, now time.Time) (turtles.Result, error) {
	ttl, ok := turtles.NestedInt64(job, "spec", "ttlSecondsAfterFinished")
	if !ok {
		return turtles.Result{}, nil
	}
	finished, ok := turtles.ParseTimestamp(turtles.NestedString(job, "status", "completionTime"))
	if !ok {
		c, _ := turtles.FindCondition(job, "Failed")
		if finished, ok = turtles.ParseTimestamp(c.LastTransitionTime); !ok {
			return turtles.Result{}, nil
		}
	}
	if expires := finished.Add(time.Duration(ttl) * time.Second); now.Before(expires) {
		return turtles.Result{RequeueAfter: expires.Sub(now)}, nil
	}
	err := turtles.Delete(ctx, turtles.Jobs, job.GetNamespace(), job.GetName(),
		turtles.DeleteOptions{PropagationPolicy: "Foreground", UID: job.GetUID()})
	if err != nil && !turtles.IsNotFound(err) && !turtles.IsConflict(err) {
		return turtles.Result{}, fmt.Errorf("deleting job %s/%s after its TTL: %w", job.GetNamespace(), job.GetName(), err)
	}
	return turtles.Result{}, nil
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || b < a {
		return b
	}
	return a
}

// backoff is how long to wait before replacing failed Pods: 10 s doubled for each failure since
// the last success (at most 6 min), counted from the last failure.
func (c *jobController) backoff(failed, succeeded []turtles.Object, now time.Time) time.Duration {
	var lastSuccess time.Time
	for _, p := range succeeded {
		if t := finishTime(p); t.After(lastSuccess) {
			lastSuccess = t
		}
	}
	var n int
	var lastFailure time.Time
	for _, p := range failed {
		t := finishTime(p)
		if t.Before(lastSuccess) {
			continue
		}
		n++
		if t.After(lastFailure) {
			lastFailure = t
		}
	}
	if n == 0 {
		return 0
	}
	delay := podFailureBackoff
	for i := 1; i < n && delay < maxPodBackoff; i++ {
		delay *= 2
	}
	delay = min(delay, maxPodBackoff)
	return lastFailure.Add(delay).Sub(now)
}

// setCondition adds a condition of this type with status True (kept as is when already True).
func setCondition(job turtles.Object, condType, reason, message string, now time.Time) {
	setConditionStatus(job, condType, "True", reason, message, now)
}

// setConditionStatus sets a condition (kept as is when it already has this status).
func setConditionStatus(job turtles.Object, condType, status, reason, message string, now time.Time) {
	cond := turtles.Condition{Type: condType, Status: status, Reason: reason, Message: message,
		LastProbeTime: turtles.Timestamp(now), LastTransitionTime: turtles.Timestamp(now)}
	cs := turtles.GetConditions(job)
	for i, c := range cs {
		if c.Type == condType {
			if c.Status == status {
				return
			}
			cs[i] = cond
			turtles.SetConditions(job, cs)
			return
		}
	}
	turtles.SetConditions(job, append(cs, cond))
}

// createPod makes one Pod from the Job's template, as kube's pod control does.
func (c *jobController) createPod(ctx context.Context, job turtles.Object) (turtles.Object, error) {
	tmpl := turtles.NestedMap(job, "spec", "template")
	pod := turtles.Object{"apiVersion": "v1", "kind": "Pod"}
	if tmpl != nil {
		t := turtles.Object(tmpl).DeepCopy()
		if spec := turtles.NestedMap(t, "spec"); spec != nil {
			pod["spec"] = spec
		}
		if md := turtles.NestedMap(t, "metadata"); md != nil {
			pod["metadata"] = md
		}
	}
	turtles.RemoveNestedField(pod, "metadata", "name")
	turtles.RemoveNestedField(pod, "metadata", "namespace")
	pod.SetGenerateName(job.GetName() + "-")
	pod.SetNamespace(job.GetNamespace())
	labels := pod.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range map[string]string{
		"batch.kubernetes.io/controller-uid": job.GetUID(),
		"batch.kubernetes.io/job-name":       job.GetName(),
		"controller-uid":                     job.GetUID(),
		"job-name":                           job.GetName(),
	} {
		if _, set := labels[k]; !set {
			labels[k] = v
		}
	}
	pod.SetLabels(labels)
	pod.SetOwnerReferences([]turtles.OwnerReference{turtles.NewControllerRef(job)})
	created, err := turtles.Create(ctx, turtles.Pods, pod)
	if err != nil {
		// kube's words: client-go's error is the Status's message alone.
		why := err.Error()
		var apiErr *turtles.APIError
		if errors.As(err, &apiErr) && apiErr.Message != "" {
			why = apiErr.Message
		}
		_ = turtles.Eventf(job, turtles.EventWarning, "FailedCreate", "Error creating: %s", why)
		return nil, fmt.Errorf("creating a pod for job %s/%s: %w", job.GetNamespace(), job.GetName(), err)
	}
	_ = turtles.Eventf(job, turtles.EventNormal, "SuccessfulCreate", "Created pod: %s", created.GetName())
	return created, nil
}

func (c *jobController) deletePod(ctx context.Context, job, pod turtles.Object) error {
	err := turtles.Delete(ctx, turtles.Pods, pod.GetNamespace(), pod.GetName(), turtles.DeleteOptions{})
	if err != nil && !turtles.IsNotFound(err) {
		_ = turtles.Eventf(job, turtles.EventWarning, "FailedDelete", "Error deleting: %v", err)
		return fmt.Errorf("deleting pod %s/%s of job %s: %w", pod.GetNamespace(), pod.GetName(), job.GetName(), err)
	}
	if err == nil {
		_ = turtles.Eventf(job, turtles.EventNormal, "SuccessfulDelete", "Deleted pod: %s", pod.GetName())
	}
	return nil
}
