package turtles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Object is any Kubernetes object as parsed JSON (like controller-runtime's
// unstructured.Unstructured.Object): maps are map[string]any, lists []any, numbers json.Number
// (exact integers), strings, bools and nil. The methods read and write metadata; the Nested*
// functions any field.
type Object map[string]any

// ParseObject parses one JSON object, keeping numbers exact (json.Number).
func ParseObject(data []byte) (Object, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var o Object
	if err := d.Decode(&o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("not a JSON object: %.40q", data)
	}
	return o, nil
}

func parseList(data []byte) ([]Object, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var list []Object
	if err := d.Decode(&list); err != nil {
		return nil, err
	}
	return list, nil
}

// JSON is the object serialized.
func (o Object) JSON() []byte {
	b, err := json.Marshal(map[string]any(o))
	if err != nil {
		panic(fmt.Sprintf("turtles: object does not serialize: %v", err))
	}
	return b
}

// DeepCopy copies the object through JSON.
func (o Object) DeepCopy() Object {
	c, err := ParseObject(o.JSON())
	if err != nil {
		panic(err)
	}
	return c
}

func (o Object) GetAPIVersion() string      { return NestedString(o, "apiVersion") }
func (o Object) GetKind() string            { return NestedString(o, "kind") }
func (o Object) GetName() string            { return NestedString(o, "metadata", "name") }
func (o Object) GetGenerateName() string    { return NestedString(o, "metadata", "generateName") }
func (o Object) GetNamespace() string       { return NestedString(o, "metadata", "namespace") }
func (o Object) GetUID() string             { return NestedString(o, "metadata", "uid") }
func (o Object) GetResourceVersion() string { return NestedString(o, "metadata", "resourceVersion") }
func (o Object) GetGeneration() int64       { n, _ := NestedInt64(o, "metadata", "generation"); return n }
func (o Object) SetAPIVersion(v string)     { SetNestedField(o, v, "apiVersion") }
func (o Object) SetKind(v string)           { SetNestedField(o, v, "kind") }
func (o Object) SetName(v string)           { SetNestedField(o, v, "metadata", "name") }
func (o Object) SetGenerateName(v string)   { SetNestedField(o, v, "metadata", "generateName") }
func (o Object) SetNamespace(v string)      { SetNestedField(o, v, "metadata", "namespace") }

// GetKey is the object's namespace and name.
func (o Object) GetKey() NamespacedName {
	return NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// IsDeleting says whether metadata.deletionTimestamp is set.
func (o Object) IsDeleting() bool {
	_, ok := NestedField(o, "metadata", "deletionTimestamp")
	return ok
}

func (o Object) GetLabels() map[string]string { return NestedStringMap(o, "metadata", "labels") }
func (o Object) GetAnnotations() map[string]string {
	return NestedStringMap(o, "metadata", "annotations")
}

// SetLabels replaces metadata.labels (nil or empty removes them).
func (o Object) SetLabels(l map[string]string) { setStringMap(o, l, "metadata", "labels") }

// SetAnnotations replaces metadata.annotations (nil or empty removes them).
func (o Object) SetAnnotations(a map[string]string) { setStringMap(o, a, "metadata", "annotations") }

// SetLabel sets one label.
func (o Object) SetLabel(k, v string) { SetNestedField(o, v, "metadata", "labels", k) }

// SetAnnotation sets one annotation.
func (o Object) SetAnnotation(k, v string) { SetNestedField(o, v, "metadata", "annotations", k) }

func setStringMap(o Object, m map[string]string, fields ...string) {
	if len(m) == 0 {
		RemoveNestedField(o, fields...)
		return
	}
	v := make(map[string]any, len(m))
	for k, s := range m {
		v[k] = s
	}
	SetNestedField(o, v, fields...)
}

// OwnerReference is one metadata.ownerReferences entry.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// IsController says whether the reference has controller: true.
func (r OwnerReference) IsController() bool { return r.Controller != nil && *r.Controller }

// NewControllerRef is the owner reference kube's controllers put on what they create: the owner's
// apiVersion, kind, name and uid with controller: true and blockOwnerDeletion: true.
func NewControllerRef(owner Object) OwnerReference {
	t := true
	return OwnerReference{
		APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(),
		Controller: &t, BlockOwnerDeletion: &t,
	}
}

func (o Object) GetOwnerReferences() []OwnerReference {
	v, ok := NestedField(o, "metadata", "ownerReferences")
	if !ok {
		return nil
	}
	b, _ := json.Marshal(v)
	var refs []OwnerReference
	if json.Unmarshal(b, &refs) != nil {
		return nil
	}
	return refs
}

func (o Object) SetOwnerReferences(refs []OwnerReference) {
	if len(refs) == 0 {
		RemoveNestedField(o, "metadata", "ownerReferences")
		return
	}
	list := make([]any, len(refs))
	for i, r := range refs {
		m := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": r.UID}
		if r.Controller != nil {
			m["controller"] = *r.Controller
		}
		if r.BlockOwnerDeletion != nil {
			m["blockOwnerDeletion"] = *r.BlockOwnerDeletion
		}
		list[i] = m
	}
	SetNestedField(o, list, "metadata", "ownerReferences")
}

// GetControllerOf is the owner reference with controller: true, if any.
func (o Object) GetControllerOf() (OwnerReference, bool) {
	for _, r := range o.GetOwnerReferences() {
		if r.IsController() {
			return r, true
		}
	}
	return OwnerReference{}, false
}

// IsControlledBy says whether the object's controller reference names owner's uid.
func (o Object) IsControlledBy(owner Object) bool {
	r, ok := o.GetControllerOf()
	return ok && r.UID != "" && r.UID == owner.GetUID()
}

// ---- nested fields --------------------------------------------------------------------------------

// NestedField is the value at the path of map keys, if every step is a map holding the key.
func NestedField(o map[string]any, fields ...string) (any, bool) {
	var cur any = o
	for _, f := range fields {
		m, ok := asMap(cur)
		if !ok {
			return nil, false
		}
		cur, ok = m[f]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case Object:
		return m, true
	}
	return nil, false
}

// NestedString is the string at the path ("" if absent or not a string).
func NestedString(o map[string]any, fields ...string) string {
	v, _ := NestedField(o, fields...)
	s, _ := v.(string)
	return s
}

// NestedBool is the bool at the path, and whether it is one.
func NestedBool(o map[string]any, fields ...string) (bool, bool) {
	v, _ := NestedField(o, fields...)
	b, ok := v.(bool)
	return b, ok
}

// NestedInt64 is the integer at the path, and whether there is one.
func NestedInt64(o map[string]any, fields ...string) (int64, bool) {
	v, ok := NestedField(o, fields...)
	if !ok {
		return 0, false
	}
	return toInt64(v)
}

func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		if f, err := n.Float64(); err == nil && f == math.Trunc(f) {
			return int64(f), true
		}
	case float64:
		if n == math.Trunc(n) {
			return int64(n), true
		}
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

// NestedMap is the map at the path (nil if absent).
func NestedMap(o map[string]any, fields ...string) map[string]any {
	v, _ := NestedField(o, fields...)
	m, _ := asMap(v)
	return m
}

// NestedSlice is the list at the path (nil if absent).
func NestedSlice(o map[string]any, fields ...string) []any {
	v, _ := NestedField(o, fields...)
	s, _ := v.([]any)
	return s
}

// NestedStringMap is the map of strings at the path (non-string values are left out).
func NestedStringMap(o map[string]any, fields ...string) map[string]string {
	m := NestedMap(o, fields...)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// SetNestedField sets the value at the path, making maps on the way (a non-map on the way is
// replaced by a map).
func SetNestedField(o map[string]any, value any, fields ...string) {
	if len(fields) == 0 {
		return
	}
	m := o
	for _, f := range fields[:len(fields)-1] {
		next, ok := asMap(m[f])
		if !ok {
			next = map[string]any{}
			m[f] = next
		}
		m = next
	}
	m[fields[len(fields)-1]] = value
}

// RemoveNestedField deletes the value at the path, if there is one.
func RemoveNestedField(o map[string]any, fields ...string) {
	if len(fields) == 0 {
		return
	}
	m := NestedMap(o, fields[:len(fields)-1]...)
	if len(fields) == 1 {
		m = o
	}
	if m != nil {
		delete(m, fields[len(fields)-1])
	}
}

// Int is a JSON integer for SetNestedField (the same as a plain int; json.Number keeps it exact).
func Int(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }

// ---- conditions ---------------------------------------------------------------------------------

// Condition is one entry of status.conditions, as most kube kinds write them.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	LastProbeTime      string `json:"lastProbeTime,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// GetConditions reads status.conditions.
func GetConditions(o Object) []Condition {
	v, ok := NestedField(o, "status", "conditions")
	if !ok {
		return nil
	}
	b, _ := json.Marshal(v)
	var cs []Condition
	if json.Unmarshal(b, &cs) != nil {
		return nil
	}
	return cs
}

// FindCondition is the condition of a type, if present.
func FindCondition(o Object, condType string) (Condition, bool) {
	for _, c := range GetConditions(o) {
		if c.Type == condType {
			return c, true
		}
	}
	return Condition{}, false
}

// SetConditions writes status.conditions.
func SetConditions(o Object, cs []Condition) {
	list := make([]any, len(cs))
	for i, c := range cs {
		b, _ := json.Marshal(c)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		list[i] = m
	}
	SetNestedField(o, list, "status", "conditions")
}

// Now is the time the SDK uses for timestamps (replaceable in tests).
var Now = func() time.Time { return time.Now() }

// Timestamp formats a time as Kubernetes writes metav1.Time (RFC 3339, seconds, UTC).
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ParseTimestamp parses a metav1.Time.
func ParseTimestamp(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}
