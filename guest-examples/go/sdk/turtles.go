// Package turtles is the Go SDK for turtles controllers: WebAssembly components of the WIT world
// `turtles:controller/controller@0.2.0` (wit/controller.wit in the turtles repository).
//
// It is shaped like controller-runtime. A controller is a Reconciler registered from an init
// function of a main package built with GOOS=wasip1 -buildmode=c-shared:
//
//	func init() {
//		turtles.NewControllerManagedBy().
//			For(turtles.ConfigMaps, turtles.WithLabelSelector("turtles.dev/greet=true")).
//			WithPermission(turtles.Core("configmaps").Allow("get", "list", "watch", "patch")).
//			Complete(&Greeter{})
//	}
//
//	func (g *Greeter) Reconcile(ctx context.Context, req turtles.Request) (turtles.Result, error) { ... }
//
//	func main() {}
//
// The host runs the informers, the work queue, retries and resync; Reconcile gets a key and the
// cached object (nil when it is gone) and calls the API (Get, List, Create, Update, Patch,
// UpdateStatus, Delete, Apply), the informer cache (CacheGet, CacheList), Events and the log.
// Natively (go test) the same code runs against the fake host of package
// turtles.dev/go/turtles/fake.
package turtles

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// NamespacedName is a reconcile key (WIT `object-key`): Namespace is "" for cluster-scoped objects.
type NamespacedName struct {
	Namespace string
	Name      string
}

func (n NamespacedName) String() string {
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "/" + n.Name
}

// Request is what Reconcile is asked: the key, and the cached primary object (nil when it no
// longer exists: deletes arrive as "object gone").
type Request struct {
	NamespacedName
	Object Object
}

// Result says when to reconcile the key again (zero: on the next change only).
type Result struct {
	// RequeueAfter reconciles again after this long (rounded up to a millisecond).
	RequeueAfter time.Duration
	// Requeue without RequeueAfter reconciles again after one second.
	Requeue bool
}

// Reconciler brings the object named by the request to its desired state. A returned error is
// retried with exponential backoff by the host, unless it wraps a TerminalError. A panic is
// recovered and retried like an error (its stack is logged).
type Reconciler interface {
	Reconcile(ctx context.Context, req Request) (Result, error)
}

// ReconcilerFunc adapts a function to Reconciler.
type ReconcilerFunc func(ctx context.Context, req Request) (Result, error)

func (f ReconcilerFunc) Reconcile(ctx context.Context, req Request) (Result, error) {
	return f(ctx, req)
}

type terminalError struct{ err error }

func (t terminalError) Error() string { return "terminal error: " + t.err.Error() }
func (t terminalError) Unwrap() error { return t.err }

// TerminalError marks an error a retry cannot fix: the host does not retry the key until a
// watched change names it again (controller-runtime's reconcile.TerminalError).
func TerminalError(err error) error {
	if err == nil {
		err = errors.New("terminal error")
	}
	return terminalError{err}
}

// ---- resources and registration ---------------------------------------------------------------

// Resource is a kind the API serves: group ("" for core), version, plural resource name and Kind.
type Resource struct {
	Group, Version, Resource, Kind string
}

var (
	ConfigMaps  = Resource{"", "v1", "configmaps", "ConfigMap"}
	Secrets     = Resource{"", "v1", "secrets", "Secret"}
	Pods        = Resource{"", "v1", "pods", "Pod"}
	Services    = Resource{"", "v1", "services", "Service"}
	Namespaces  = Resource{"", "v1", "namespaces", "Namespace"}
	Nodes       = Resource{"", "v1", "nodes", "Node"}
	Events      = Resource{"", "v1", "events", "Event"}
	Jobs        = Resource{"batch", "v1", "jobs", "Job"}
	CronJobs    = Resource{"batch", "v1", "cronjobs", "CronJob"}
	ReplicaSets = Resource{"apps", "v1", "replicasets", "ReplicaSet"}
	Deployments = Resource{"apps", "v1", "deployments", "Deployment"}
)

// APIVersion is "v1" for the core group, "GROUP/VERSION" otherwise.
func (r Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// Path is the collection path: /api/v1/namespaces/NS/pods, or every namespace (or a
// cluster-scoped kind) when namespace is "".
func (r Resource) Path(namespace string) string {
	prefix := "/apis/" + r.Group + "/" + r.Version
	if r.Group == "" {
		prefix = "/api/" + r.Version
	}
	if namespace == "" {
		return prefix + "/" + r.Resource
	}
	return prefix + "/namespaces/" + namespace + "/" + r.Resource
}

// ObjectPath is one object's path (namespace "" for cluster-scoped objects).
func (r Resource) ObjectPath(namespace, name string) string {
	return r.Path(namespace) + "/" + name
}

// Watch is one kind the controller watches (WIT `watch`).
type Watch struct {
	Resource      Resource
	Namespace     string // "" : every namespace
	LabelSelector string // "" : every object
	// OwnerGroup/OwnerKind: an event on this kind reconciles the key of the object's controller
	// owner reference of this kind (OwnerKind "": the object's own key).
	OwnerGroup, OwnerKind string
}

// WatchOption narrows a watch.
type WatchOption func(*Watch)

// WithNamespace watches one namespace only.
func WithNamespace(ns string) WatchOption { return func(w *Watch) { w.Namespace = ns } }

// WithLabelSelector watches only objects matching a label selector (kube syntax).
func WithLabelSelector(sel string) WatchOption { return func(w *Watch) { w.LabelSelector = sel } }

// Permission is an RBAC rule the controller needs (WIT `permission`).
type Permission struct {
	APIGroups, Resources, Verbs []string
}

// Core starts a permission on core-group resources: Core("pods").Allow("get", "list").
func Core(resources ...string) Permission {
	return Permission{APIGroups: []string{""}, Resources: resources}
}

// Group starts a permission on resources of an API group.
func Group(group string, resources ...string) Permission {
	return Permission{APIGroups: []string{group}, Resources: resources}
}

// Allow sets the permission's verbs.
func (p Permission) Allow(verbs ...string) Permission {
	p.Verbs = verbs
	return p
}

// Registration is what the controller tells the host once at start (WIT `registration`).
type Registration struct {
	// The first watch is the primary kind.
	Watches                 []Watch
	MaxConcurrentReconciles uint32
	// ResyncSeconds: reconcile every cached primary this often (0: only on changes).
	ResyncSeconds uint32
	Permissions   []Permission
	// InitialKeys are reconciled once at start, after the informers' initial lists.
	InitialKeys []NamespacedName
	// ServiceAccount: act as this ServiceAccount, authorized by its bindings only.
	ServiceAccount *NamespacedName
}

// Builder assembles a Registration, controller-runtime style.
type Builder struct {
	reg     Registration
	primary *Resource
}

// NewControllerManagedBy starts a controller's registration.
func NewControllerManagedBy() *Builder {
	return &Builder{reg: Registration{MaxConcurrentReconciles: 1}}
}

// For sets the primary kind: its objects' own keys are reconciled.
func (b *Builder) For(r Resource, opts ...WatchOption) *Builder {
	w := Watch{Resource: r}
	for _, o := range opts {
		o(&w)
	}
	b.reg.Watches = append([]Watch{w}, b.reg.Watches...)
	b.primary = &r
	return b
}

// Owns watches a kind whose objects the primary controls: an event on one reconciles the key
// of its controller owner reference of the primary's kind.
func (b *Builder) Owns(r Resource, opts ...WatchOption) *Builder {
	if b.primary == nil {
		panic("turtles: call For before Owns")
	}
	w := Watch{Resource: r, OwnerGroup: b.primary.Group, OwnerKind: b.primary.Kind}
	for _, o := range opts {
		o(&w)
	}
	b.reg.Watches = append(b.reg.Watches, w)
	return b
}

// Watches adds any watch (e.g. one mapped to an owner of another kind).
func (b *Builder) Watches(w Watch) *Builder {
	b.reg.Watches = append(b.reg.Watches, w)
	return b
}

// WithPermission adds RBAC rules the controller needs.
func (b *Builder) WithPermission(p ...Permission) *Builder {
	b.reg.Permissions = append(b.reg.Permissions, p...)
	return b
}

// MaxConcurrentReconciles lets up to n keys reconcile at once.
func (b *Builder) MaxConcurrentReconciles(n uint32) *Builder {
	b.reg.MaxConcurrentReconciles = n
	return b
}

// ResyncEvery reconciles every cached primary this often (whole seconds).
func (b *Builder) ResyncEvery(d time.Duration) *Builder {
	b.reg.ResyncSeconds = uint32((d + time.Second - 1) / time.Second)
	return b
}

// InitialKey reconciles a key once at start even if no watched change names it.
func (b *Builder) InitialKey(namespace, name string) *Builder {
	b.reg.InitialKeys = append(b.reg.InitialKeys, NamespacedName{namespace, name})
	return b
}

// AsServiceAccount makes the controller act as a ServiceAccount.
func (b *Builder) AsServiceAccount(namespace, name string) *Builder {
	b.reg.ServiceAccount = &NamespacedName{namespace, name}
	return b
}

// Registration is what Complete would register (for tests).
func (b *Builder) Registration() Registration { return b.reg }

// Complete registers the reconciler: the component's `register` returns this registration and
// its `reconcile` calls r. Call it once, from an init function.
func (b *Builder) Complete(r Reconciler) {
	if len(b.reg.Watches) == 0 {
		panic("turtles: a controller needs For(...)")
	}
	if b.reg.MaxConcurrentReconciles == 0 {
		b.reg.MaxConcurrentReconciles = 1
	}
	current = &registered{reg: b.reg, r: r}
}

type registered struct {
	reg Registration
	r   Reconciler
}

var current *registered

func registration() Registration {
	if current == nil {
		panic("turtles: no controller registered (call NewControllerManagedBy()...Complete(r) from an init function)")
	}
	return current.reg
}

// ---- reconcile -------------------------------------------------------------------------------

type outcomeKind uint8

const (
	outcomeDone outcomeKind = iota
	outcomeRequeueAfter
	outcomeTransient
	outcomeTerminal
)

type outcome struct {
	kind    outcomeKind
	ms      uint32
	message string
}

func reconcileKey(key NamespacedName, present bool, object []byte) outcome {
	if current == nil {
		return outcome{kind: outcomeTerminal, message: "no controller registered"}
	}
	req := Request{NamespacedName: key}
	if present {
		obj, err := ParseObject(object)
		if err != nil {
			return outcome{kind: outcomeTransient, message: fmt.Sprintf("the cached object is not JSON: %v", err)}
		}
		req.Object = obj
	}
	return toOutcome(callReconciler(req))
}

// callReconciler runs the reconciler, turning a panic into an error (retried with backoff), as
// controller-runtime's RecoverPanic does; the stack goes to the log.
func callReconciler(req Request) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			Error(fmt.Errorf("panic: %v", p), "reconcile panicked", "key", req.NamespacedName.String(), "stack", string(debug.Stack()))
			res, err = Result{}, fmt.Errorf("panic: %v [recovered]", p)
		}
	}()
	return current.r.Reconcile(context.Background(), req)
}

func toOutcome(res Result, err error) outcome {
	if err != nil {
		var t terminalError
		if errors.As(err, &t) {
			return outcome{kind: outcomeTerminal, message: t.err.Error()}
		}
		return outcome{kind: outcomeTransient, message: err.Error()}
	}
	if res.RequeueAfter > 0 {
		ms := (res.RequeueAfter + time.Millisecond - 1) / time.Millisecond
		if ms > 1<<32-1 {
			ms = 1<<32 - 1
		}
		return outcome{kind: outcomeRequeueAfter, ms: uint32(ms)}
	}
	if res.Requeue {
		return outcome{kind: outcomeRequeueAfter, ms: 1000}
	}
	return outcome{kind: outcomeDone}
}

// Outcome is what the host would be told for a Reconcile result (for tests): "done",
// "requeue-after 5000ms", "transient-error: ..." or "terminal-error: ...".
func Outcome(res Result, err error) string {
	return o2s(toOutcome(res, err))
}

// o2s renders an outcome as Outcome documents.
func o2s(o outcome) string {
	switch o.kind {
	case outcomeRequeueAfter:
		return fmt.Sprintf("requeue-after %dms", o.ms)
	case outcomeTransient:
		return "transient-error: " + o.message
	case outcomeTerminal:
		return "terminal-error: " + o.message
	}
	return "done"
}

// ReconcileForTest runs the registered reconciler for a key as the host would, with the object
// (nil: gone) as JSON, and returns the outcome as Outcome renders it.
func ReconcileForTest(key NamespacedName, object Object) string {
	var raw []byte
	if object != nil {
		raw = object.JSON()
	}
	return o2s(reconcileKey(key, object != nil, raw))
}

// RegisteredForTest is the registration the component would return from `register`.
func RegisteredForTest() Registration { return registration() }
