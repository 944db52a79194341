package turtles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// APIError is a non-2xx answer of the API server, from its Status body when it has one.
type APIError struct {
	Code    int    // HTTP status, e.g. 404
	Reason  string // Status reason, e.g. "NotFound", "AlreadyExists", "Conflict"
	Message string // Status message (or the body when it is not a Status)
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message) }

func codeOf(err error) int {
	var a *APIError
	if errors.As(err, &a) {
		return a.Code
	}
	return 0
}

// IsNotFound: 404.
func IsNotFound(err error) bool { return codeOf(err) == 404 }

// IsConflict: 409 (a stale resourceVersion, or AlreadyExists).
func IsConflict(err error) bool { return codeOf(err) == 409 }

// IsAlreadyExists: 409 with reason AlreadyExists.
func IsAlreadyExists(err error) bool {
	var a *APIError
	return errors.As(err, &a) && a.Code == 409 && a.Reason == "AlreadyExists"
}

// IsForbidden: 403.
func IsForbidden(err error) bool { return codeOf(err) == 403 }

func apiErrorFrom(resp HTTPResponse) *APIError {
	e := &APIError{Code: resp.Status}
	var status struct{ Reason, Message string }
	if json.Unmarshal(resp.Body, &status) == nil && (status.Reason != "" || status.Message != "") {
		e.Reason, e.Message = status.Reason, status.Message
	} else {
		e.Message = string(resp.Body)
	}
	return e
}

// Call is the raw API call: any method, path (with query), headers and body.
func Call(ctx context.Context, method, path string, headers [][2]string, body []byte) HTTPResponse {
	return host.APICall(HTTPRequest{Method: method, Path: path, Headers: headers, Body: body})
}

// DoJSON is a JSON call: the parsed response on 2xx (nil for an empty body), an *APIError
// otherwise. body nil sends none.
func DoJSON(ctx context.Context, method, path, contentType string, body any) (Object, error) {
	headers := [][2]string{{"accept", "application/json"}}
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encoding the %s %s body: %w", method, path, err)
		}
		headers = append(headers, [2]string{"content-type", contentType})
	}
	resp := Call(ctx, method, path, headers, raw)
	if resp.Status < 200 || resp.Status >= 300 {
		return nil, apiErrorFrom(resp)
	}
	if len(resp.Body) == 0 {
		return nil, nil
	}
	obj, err := ParseObject(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: the response is not a JSON object: %w", method, path, err)
	}
	return obj, nil
}

// QueryEscape percent-encodes a query parameter value (e.g. a label selector).
func QueryEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Get reads an object from the API server (not the cache; see CacheGet).
func Get(ctx context.Context, r Resource, namespace, name string) (Object, error) {
	return DoJSON(ctx, "GET", r.ObjectPath(namespace, name), "", nil)
}

// ListOptions narrow a List.
type ListOptions struct {
	LabelSelector string
	FieldSelector string
}

// List reads a collection from the API server (namespace "": every namespace) and returns its items.
func List(ctx context.Context, r Resource, namespace string, opts ListOptions) ([]Object, error) {
	path := r.Path(namespace)
	var q []string
	if opts.LabelSelector != "" {
		q = append(q, "labelSelector="+QueryEscape(opts.LabelSelector))
	}
	if opts.FieldSelector != "" {
		q = append(q, "fieldSelector="+QueryEscape(opts.FieldSelector))
	}
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}
	list, err := DoJSON(ctx, "GET", path, "", nil)
	if err != nil {
		return nil, err
	}
	items := NestedSlice(list, "items")
	out := make([]Object, 0, len(items))
	for _, it := range items {
		if m, ok := asMap(it); ok {
			out = append(out, Object(m))
		}
	}
	return out, nil
}

// Create creates the object in its metadata.namespace and returns what was stored.
func Create(ctx context.Context, r Resource, obj Object) (Object, error) {
	return DoJSON(ctx, "POST", r.Path(obj.GetNamespace()), "application/json", obj)
}

// Update replaces the object (metadata.resourceVersion makes it conditional).
func Update(ctx context.Context, r Resource, obj Object) (Object, error) {
	return DoJSON(ctx, "PUT", r.ObjectPath(obj.GetNamespace(), obj.GetName()), "application/json", obj)
}

// UpdateStatus replaces the object's status through the /status subresource.
func UpdateStatus(ctx context.Context, r Resource, obj Object) (Object, error) {
	return DoJSON(ctx, "PUT", r.ObjectPath(obj.GetNamespace(), obj.GetName())+"/status", "application/json", obj)
}

// PatchType is a patch's content type.
type PatchType string

const (
	MergePatch          PatchType = "application/merge-patch+json"
	JSONPatch           PatchType = "application/json-patch+json"
	StrategicMergePatch PatchType = "application/strategic-merge-patch+json"
)

// Patch patches an object; patch is marshalled to JSON (a []byte or json.RawMessage is sent as is).
func Patch(ctx context.Context, r Resource, namespace, name string, pt PatchType, patch any) (Object, error) {
	return DoJSON(ctx, "PATCH", r.ObjectPath(namespace, name), string(pt), rawOrValue(patch))
}

// PatchStatus patches the /status subresource.
func PatchStatus(ctx context.Context, r Resource, namespace, name string, pt PatchType, patch any) (Object, error) {
	return DoJSON(ctx, "PATCH", r.ObjectPath(namespace, name)+"/status", string(pt), rawOrValue(patch))
}

func rawOrValue(p any) any {
	if b, ok := p.([]byte); ok {
		return json.RawMessage(b)
	}
	return p
}

// DeleteOptions for Delete.
type DeleteOptions struct {
	// PropagationPolicy: "", "Background", "Foreground" or "Orphan".
	PropagationPolicy string
	// Preconditions on the object (uid and/or resourceVersion), when set.
	UID, ResourceVersion string
}

// Delete deletes an object.
func Delete(ctx context.Context, r Resource, namespace, name string, opts DeleteOptions) error {
	var body map[string]any
	if opts.PropagationPolicy != "" || opts.UID != "" || opts.ResourceVersion != "" {
		body = map[string]any{"apiVersion": "v1", "kind": "DeleteOptions"}
		if opts.PropagationPolicy != "" {
			body["propagationPolicy"] = opts.PropagationPolicy
		}
		pre := map[string]any{}
		if opts.UID != "" {
			pre["uid"] = opts.UID
		}
		if opts.ResourceVersion != "" {
			pre["resourceVersion"] = opts.ResourceVersion
		}
		if len(pre) > 0 {
			body["preconditions"] = pre
		}
	}
	var b any
	if body != nil {
		b = body
	}
	_, err := DoJSON(ctx, "DELETE", r.ObjectPath(namespace, name), "application/json", b)
	return err
}

// Apply is server-side apply: the fields this manager wants (with apiVersion, kind and
// metadata.name), owned by fieldManager; force takes over fields other managers own.
func Apply(ctx context.Context, r Resource, obj Object, fieldManager string, force bool) (Object, error) {
	path := r.ObjectPath(obj.GetNamespace(), obj.GetName()) + "?fieldManager=" + QueryEscape(fieldManager)
	if force {
		path += "&force=true"
	}
	return DoJSON(ctx, "PATCH", path, "application/apply-patch+yaml", obj)
}

// ---- the informer cache ---------------------------------------------------------------------------

// CacheGet reads an object of a watched kind from the host's informer cache.
func CacheGet(r Resource, namespace, name string) (Object, bool) {
	raw, ok := host.CacheGet(r.Group, r.Version, r.Resource, namespace, name)
	if !ok {
		return nil, false
	}
	obj, err := ParseObject(raw)
	if err != nil {
		Error(err, "the cache returned an object that is not JSON", "resource", r.Resource, "name", name)
		return nil, false
	}
	return obj, true
}

// CacheList lists cached objects of a watched kind; namespace "" lists every namespace.
func CacheList(r Resource, namespace string) []Object {
	var ns *string
	if namespace != "" {
		ns = &namespace
	}
	raw := host.CacheList(r.Group, r.Version, r.Resource, ns)
	list, err := parseList(raw)
	if err != nil {
		Error(err, "the cache returned a list that is not JSON", "resource", r.Resource)
		return nil
	}
	return list
}

// ---- events ---------------------------------------------------------------------------------

// ReferenceTo is the ObjectReference of an object (apiVersion, kind, namespace, name, uid).
func ReferenceTo(o Object) ObjectReference {
	return ObjectReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID()}
}

// Event records an Event about obj (needs create and patch on events), like client-go's
// recorder.Event: eventType EventNormal or EventWarning, reason in UpperCamelCase.
func Event(obj Object, eventType EventType, reason, note string) error {
	return host.RecordEvent(EventRecord{Regarding: ReferenceTo(obj), Type: eventType, Reason: reason, Note: note})
}

// Eventf is Event with a formatted note.
func Eventf(obj Object, eventType EventType, reason, format string, args ...any) error {
	return Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// ---- logging ----------------------------------------------------------------------------------

func logAt(level LogLevel, msg string, kv []any) {
	var fields [][2]string
	for i := 0; i < len(kv); i += 2 {
		k := fmt.Sprint(kv[i])
		v := "(missing)"
		if i+1 < len(kv) {
			v = fmt.Sprint(kv[i+1])
		}
		fields = append(fields, [2]string{k, v})
	}
	host.Log(level, msg, fields)
}

// Info logs a message with key/value pairs (logr style).
func Info(msg string, keysAndValues ...any) { logAt(LevelInfo, msg, keysAndValues) }

// Debug logs at debug level.
func Debug(msg string, keysAndValues ...any) { logAt(LevelDebug, msg, keysAndValues) }

// Warn logs at warn level.
func Warn(msg string, keysAndValues ...any) { logAt(LevelWarn, msg, keysAndValues) }

// Error logs an error (as the field "error").
func Error(err error, msg string, keysAndValues ...any) {
	logAt(LevelError, msg, append([]any{"error", err}, keysAndValues...))
}
