// Package fake is an in-memory turtles host for unit tests of Go controllers, run natively with
// plain `go test`: a small API server (get, list with label selectors, create with generateName,
// update and status update with resourceVersion conflicts, merge patch, delete), the informer
// cache (the same objects), Events and log lines, all recorded for assertions.
//
//	h := fake.New()
//	defer h.Install()()
//	h.Add(turtles.Jobs, job)
//	out := turtles.ReconcileForTest(key, job)
package fake

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"turtles.dev/go/turtles"
)

// Call is one API call the controller made.
type Call struct {
	Method, Path string
	Body         []byte
}

// LogLine is one log call.
type LogLine struct {
	Level   turtles.LogLevel
	Message string
	Fields  [][2]string
}

type key struct{ group, resource, namespace, name string }

// Host is the fake. Its fields are safe to read after a reconcile returns.
type Host struct {
	mu      sync.Mutex
	objects map[key]turtles.Object
	kinds   map[string]turtles.Resource // group/resource -> Resource
	rv      int
	uid     int
	// Calls, Events and Logs record what the controller did, in order.
	Calls  []Call
	Events []turtles.EventRecord
	Logs   []LogLine
	// Fail makes every call with this method (e.g. "POST") answer with this error code (a Status
	// with reason InternalError) until the entry is removed.
	Fail map[string]int
}

// New returns an empty fake host that knows the SDK's predefined kinds.
func New() *Host {
	h := &Host{objects: map[key]turtles.Object{}, kinds: map[string]turtles.Resource{}, Fail: map[string]int{}}
	for _, r := range []turtles.Resource{turtles.ConfigMaps, turtles.Secrets, turtles.Pods, turtles.Services,
		turtles.Namespaces, turtles.Nodes, turtles.Events, turtles.Jobs, turtles.CronJobs, turtles.ReplicaSets,
		turtles.Deployments} {
		h.Register(r)
	}
	return h
}

// Register teaches the fake a kind (for apiVersion and kind of created objects).
func (h *Host) Register(r turtles.Resource) { h.kinds[r.Group+"/"+r.Resource] = r }

// Install makes this the SDK's host and returns the function that restores the previous one.
func (h *Host) Install() func() {
	old := turtles.SetHost(h)
	return func() { turtles.SetHost(old) }
}

// Add stores an object as if it had been created (uid, resourceVersion, creationTimestamp are
// filled when missing) and returns the stored copy.
func (h *Host) Add(r turtles.Resource, obj turtles.Object) turtles.Object {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := obj.DeepCopy()
	h.fill(r, o)
	h.objects[key{r.Group, r.Resource, o.GetNamespace(), o.GetName()}] = o
	return o.DeepCopy()
}

// Get returns a copy of a stored object.
func (h *Host) Get(r turtles.Resource, namespace, name string) (turtles.Object, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.objects[key{r.Group, r.Resource, namespace, name}]
	if !ok {
		return nil, false
	}
	return o.DeepCopy(), true
}

// List returns copies of the stored objects of a kind (namespace "": all), sorted by name.
func (h *Host) List(r turtles.Resource, namespace string) []turtles.Object {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.list(r.Group, r.Resource, namespace, "")
}

// Remove deletes a stored object (as if someone else deleted it).
func (h *Host) Remove(r turtles.Resource, namespace, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.objects, key{r.Group, r.Resource, namespace, name})
}

// CallsOf returns the calls with this method.
func (h *Host) CallsOf(method string) []Call {
	var out []Call
	for _, c := range h.Calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (h *Host) fill(r turtles.Resource, o turtles.Object) {
	if o.GetAPIVersion() == "" {
		o.SetAPIVersion(r.APIVersion())
	}
	if o.GetKind() == "" && r.Kind != "" {
		o.SetKind(r.Kind)
	}
	if o.GetUID() == "" {
		h.uid++
		turtles.SetNestedField(o, fmt.Sprintf("uid-%d", h.uid), "metadata", "uid")
	}
	if turtles.NestedString(o, "metadata", "creationTimestamp") == "" {
		turtles.SetNestedField(o, turtles.Timestamp(turtles.Now()), "metadata", "creationTimestamp")
	}
	h.rv++
	turtles.SetNestedField(o, strconv.Itoa(h.rv), "metadata", "resourceVersion")
}

func (h *Host) list(group, resource, namespace, selector string) []turtles.Object {
	var out []turtles.Object
	for k, o := range h.objects {
		if k.group != group || k.resource != resource || (namespace != "" && k.namespace != namespace) {
			continue
		}
		if !matches(o.GetLabels(), selector) {
			continue
		}
		out = append(out, o.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}

// matches supports the equality forms of label selectors: a=b, a==b, a!=b, a, !a, comma-joined.
func matches(labels map[string]string, selector string) bool {
	for _, term := range strings.Split(selector, ",") {
		term = strings.TrimSpace(term)
		switch {
		case term == "":
		case strings.Contains(term, "!="):
			kv := strings.SplitN(term, "!=", 2)
			if labels[strings.TrimSpace(kv[0])] == strings.TrimSpace(kv[1]) {
				return false
			}
		case strings.Contains(term, "="):
			kv := strings.SplitN(strings.Replace(term, "==", "=", 1), "=", 2)
			v, ok := labels[strings.TrimSpace(kv[0])]
			if !ok || v != strings.TrimSpace(kv[1]) {
				return false
			}
		case strings.HasPrefix(term, "!"):
			if _, ok := labels[term[1:]]; ok {
				return false
			}
		default:
			if _, ok := labels[term]; !ok {
				return false
			}
		}
	}
	return true
}

type target struct {
	group, resource, namespace, name, sub string
	query                                 url.Values
}

func parsePath(p string) (target, error) {
	var t target
	path, rawQuery, _ := strings.Cut(p, "?")
	t.query, _ = url.ParseQuery(rawQuery)
	seg := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		seg = seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		t.group = seg[1]
		seg = seg[3:]
	default:
		return t, fmt.Errorf("not an API path: %s", p)
	}
	if len(seg) >= 3 && seg[0] == "namespaces" {
		t.namespace = seg[1]
		seg = seg[2:]
	}
	t.resource = seg[0]
	if len(seg) > 1 {
		t.name = seg[1]
	}
	if len(seg) > 2 {
		t.sub = seg[2]
	}
	return t, nil
}

func status(code int, reason, msg string) turtles.HTTPResponse {
	b, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
		"code": code, "reason": reason, "message": msg})
	return turtles.HTTPResponse{Status: code, Body: b}
}

func ok(code int, o turtles.Object) turtles.HTTPResponse {
	return turtles.HTTPResponse{Status: code, Body: o.JSON()}
}

// APICall serves the controller's API calls from the in-memory store.
func (h *Host) APICall(req turtles.HTTPRequest) turtles.HTTPResponse {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Calls = append(h.Calls, Call{Method: req.Method, Path: req.Path, Body: append([]byte(nil), req.Body...)})
	if code := h.Fail[req.Method]; code != 0 {
		return status(code, "InternalError", "injected failure")
	}
	t, err := parsePath(req.Path)
	if err != nil {
		return status(404, "NotFound", err.Error())
	}
	k := key{t.group, t.resource, t.namespace, t.name}
	gr := t.group + "/" + t.resource
	what := t.resource
	if t.group != "" {
		what += "." + t.group
	}
	notFound := func() turtles.HTTPResponse {
		return status(404, "NotFound", fmt.Sprintf("%s %q not found", what, t.name))
	}
	switch req.Method {
	case "GET":
		if t.name == "" {
			items := h.list(t.group, t.resource, t.namespace, t.query.Get("labelSelector"))
			list := make([]any, len(items))
			for i, o := range items {
				list[i] = map[string]any(o)
			}
			return ok(200, turtles.Object{"kind": "List", "apiVersion": "v1", "items": list,
				"metadata": map[string]any{"resourceVersion": strconv.Itoa(h.rv)}})
		}
		o, found := h.objects[k]
		if !found {
			return notFound()
		}
		return ok(200, o)
	case "POST":
		o, err := turtles.ParseObject(req.Body)
		if err != nil {
			return status(400, "BadRequest", err.Error())
		}
		if o.GetName() == "" && o.GetGenerateName() != "" {
			h.uid++
			o.SetName(fmt.Sprintf("%s%05d", o.GetGenerateName(), h.uid))
		}
		if o.GetName() == "" {
			return status(422, "Invalid", "metadata.name: Required value")
		}
		if t.namespace != "" {
			o.SetNamespace(t.namespace)
		}
		k.name = o.GetName()
		if _, exists := h.objects[k]; exists {
			return status(409, "AlreadyExists", fmt.Sprintf("%s %q already exists", what, k.name))
		}
		r := h.kinds[gr]
		if r.Resource == "" {
			r = turtles.Resource{Group: t.group, Resource: t.resource}
		}
		turtles.RemoveNestedField(o, "metadata", "uid")
		turtles.RemoveNestedField(o, "metadata", "resourceVersion")
		h.fill(r, o)
		h.objects[k] = o
		return ok(201, o)
	case "PUT", "PATCH":
		cur, found := h.objects[k]
		if !found {
			return notFound()
		}
		var next turtles.Object
		if req.Method == "PUT" {
			in, err := turtles.ParseObject(req.Body)
			if err != nil {
				return status(400, "BadRequest", err.Error())
			}
			if rv := in.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
				return status(409, "Conflict", fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", what, t.name))
			}
			next = in
		} else {
			var patch any
			d := json.NewDecoder(strings.NewReader(string(req.Body)))
			d.UseNumber()
			if err := d.Decode(&patch); err != nil {
				return status(400, "BadRequest", err.Error())
			}
			merged, _ := mergePatch(map[string]any(cur.DeepCopy()), patch).(map[string]any)
			next = turtles.Object(merged)
		}
		// The status subresource changes only status; the main resource everything but status.
		if t.sub == "status" {
			st, _ := turtles.NestedField(next, "status")
			next = cur.DeepCopy()
			if st == nil {
				turtles.RemoveNestedField(next, "status")
			} else {
				turtles.SetNestedField(next, st, "status")
			}
		} else if st, had := turtles.NestedField(cur, "status"); had {
			turtles.SetNestedField(next, st, "status")
		} else {
			turtles.RemoveNestedField(next, "status")
		}
		for _, f := range []string{"uid", "creationTimestamp", "name", "namespace"} {
			if v, had := turtles.NestedField(cur, "metadata", f); had {
				turtles.SetNestedField(next, v, "metadata", f)
			}
		}
		h.rv++
		turtles.SetNestedField(next, strconv.Itoa(h.rv), "metadata", "resourceVersion")
		h.objects[k] = next
		return ok(200, next)
	case "DELETE":
		o, found := h.objects[k]
		if !found {
			return notFound()
		}
		delete(h.objects, k)
		return ok(200, o)
	}
	return status(405, "MethodNotAllowed", req.Method)
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch any) any {
	p, isMap := patch.(map[string]any)
	if !isMap {
		return patch
	}
	t, tIsMap := target.(map[string]any)
	if !tIsMap {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = mergePatch(t[k], v)
		}
	}
	return t
}

// CacheGet serves the informer cache from the same store.
func (h *Host) CacheGet(group, version, resource, namespace, name string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, found := h.objects[key{group, resource, namespace, name}]
	if !found {
		return nil, false
	}
	return o.JSON(), true
}

// CacheList serves a cached list from the same store.
func (h *Host) CacheList(group, version, resource string, namespace *string) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	ns := ""
	if namespace != nil {
		ns = *namespace
	}
	items := h.list(group, resource, ns, "")
	if items == nil {
		items = []turtles.Object{}
	}
	b, _ := json.Marshal(items)
	return b
}

// Log records a log line.
func (h *Host) Log(level turtles.LogLevel, message string, fields [][2]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Logs = append(h.Logs, LogLine{level, message, fields})
}

// RecordEvent records an Event.
func (h *Host) RecordEvent(ev turtles.EventRecord) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Events = append(h.Events, ev)
	return nil
}

// EventReasons lists the recorded Events' reasons, in order.
func (h *Host) EventReasons() []string {
	out := make([]string, len(h.Events))
	for i, e := range h.Events {
		out[i] = e.Reason
	}
	return out
}
