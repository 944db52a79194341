//go:build wasip1

// The canonical ABI glue between Go (GOOS=wasip1, a reactor built with -buildmode=c-shared)
// and the WIT world `turtles:controller/controller@0.2.0`, written by hand: Go has no
// wit-bindgen. The exports (`register`, `reconcile`, `cabi_realloc`) are //go:wasmexport
// functions, the imports (`turtles:controller/host@0.2.0`) //go:wasmimport ones; `wasm-tools
// component embed` adds the world as a custom section and `wasm-tools component new` lifts the
// module into a component with the WASI preview1 reactor adapter.
//
// Memory: everything handed to the host (return areas, strings, lists) and everything the host
// allocates through cabi_realloc (arguments, import results) is a Go []byte kept alive in
// `pins` until the next `register` or `reconcile` starts (after it has copied its arguments),
// so the garbage collector (non-moving) never frees what the host still reads or writes.
// Layouts (offsets, alignment 4 everywhere) follow the canonical ABI for the records of
// wit/controller.wit; see docs/guests/go.md.

package turtles

import (
	"encoding/binary"
	"errors"
	"strings"
	"unsafe"
)

func defaultHost() Host { return wasmHost{} }

var pins [][]byte

// emptyArea is the address given for empty strings and lists (any aligned, in-bounds address).
var emptyArea = make([]byte, 16)

// alloc returns a zeroed, pinned buffer of n bytes (at least 16: Go's size classes from 16 up
// are 8-aligned, the tiny allocator below 16 is not) and its address.
func alloc(n int) ([]byte, uint32) {
	if n < 16 {
		n = 16
	}
	b := make([]byte, n)
	pins = append(pins, b)
	return b, addr(b)
}

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// memory is the bytes at a linear-memory address (the module's memory starts at address 0).
func memory(ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(ptr))), n)
}

func putBytes(b []byte) (uint32, uint32) {
	if len(b) == 0 {
		return addr(emptyArea), 0
	}
	buf, p := alloc(len(b))
	copy(buf, b)
	return p, uint32(len(b))
}

func putString(s string) (uint32, uint32) { return putBytes([]byte(strings.ToValidUTF8(s, "\uFFFD"))) }

func le32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }

// putStringAt writes a string's (ptr, len) at off.
func putStringAt(b []byte, off int, s string) {
	p, n := putString(s)
	le32(b, off, p)
	le32(b, off+4, n)
}

func putStringList(b []byte, off int, list []string) {
	if len(list) == 0 {
		le32(b, off, addr(emptyArea))
		le32(b, off+4, 0)
		return
	}
	elems, p := alloc(8 * len(list))
	for i, s := range list {
		putStringAt(elems, 8*i, s)
	}
	le32(b, off, p)
	le32(b, off+4, uint32(len(list)))
}

func putOptString(b []byte, off int, s *string) {
	if s == nil {
		return // discriminant 0: none
	}
	b[off] = 1
	putStringAt(b, off+4, *s)
}

func getString(b []byte, off int) string {
	return string(memory(binary.LittleEndian.Uint32(b[off:]), binary.LittleEndian.Uint32(b[off+4:])))
}

func getBytes(b []byte, off int) []byte {
	m := memory(binary.LittleEndian.Uint32(b[off:]), binary.LittleEndian.Uint32(b[off+4:]))
	return append([]byte(nil), m...)
}

func getPairs(b []byte, off int) [][2]string {
	n := binary.LittleEndian.Uint32(b[off+4:])
	elems := memory(binary.LittleEndian.Uint32(b[off:]), 16*n)
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{getString(elems, 16*i), getString(elems, 16*i+8)}
	}
	return out
}

func putPairs(pairs [][2]string) (uint32, uint32) {
	if len(pairs) == 0 {
		return addr(emptyArea), 0
	}
	elems, p := alloc(16 * len(pairs))
	for i, kv := range pairs {
		putStringAt(elems, 16*i, kv[0])
		putStringAt(elems, 16*i+8, kv[1])
	}
	return p, uint32(len(pairs))
}

// ---- exports ----------------------------------------------------------------------------------

// cabi_realloc must not allocate with the Go runtime: the host calls it while lowering an
// import's results, inside the import call, where the component may not call out (a Go
// allocation may read the clock: "cannot leave component instance"). It bumps through arena,
// a static buffer (no heap, usable before the runtime is initialized), reset before every call.
//
//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	return bump(arena[:], &arenaUsed, oldPtr, oldSize, align, newSize)
}

// cabi_realloc_adapter is where the WASI preview1 adapter gets its state (once, at the first
// WASI call, which the Go runtime makes while it initializes): a static area of its own, so the
// adapter neither grows memory behind the Go heap's back nor depends on the runtime.
//
//go:wasmexport cabi_realloc_adapter
func cabiReallocAdapter(oldPtr, oldSize, align, newSize uint32) uint32 {
	return bump(adapterArea[:], &adapterUsed, oldPtr, oldSize, align, newSize)
}

//go:nosplit
func bump(area []byte, used *uint32, oldPtr, oldSize, align, newSize uint32) uint32 {
	if align == 0 {
		align = 1
	}
	base := addr(area)
	p := (base + *used + align - 1) &^ (align - 1)
	if p+newSize > base+uint32(len(area)) {
		return 0xFFFFFFFF &^ (align - 1) // out of bounds: the host traps with a clear error
	}
	*used = p + newSize - base
	if oldPtr != 0 && oldSize != 0 {
		copy(memory(p, newSize), memory(oldPtr, min(oldSize, newSize)))
	}
	return p
}

var (
	arena       [8 << 20]byte
	arenaUsed   uint32
	adapterArea [256 << 10]byte
	adapterUsed uint32
)

//go:wasmexport register
func wasmRegister() uint32 {
	pins = nil
	reg := registration()
	b, p := alloc(56)
	// watches: list<watch>, 68 bytes each
	if len(reg.Watches) == 0 {
		le32(b, 0, addr(emptyArea))
	} else {
		ws, wp := alloc(68 * len(reg.Watches))
		for i, w := range reg.Watches {
			o := 68 * i
			putStringAt(ws, o, w.Resource.Group)
			putStringAt(ws, o+8, w.Resource.Version)
			putStringAt(ws, o+16, w.Resource.Resource)
			putOptString(ws, o+24, optional(w.Namespace))
			putOptString(ws, o+36, optional(w.LabelSelector))
			if w.OwnerKind != "" {
				ws[o+48] = 1
				putStringAt(ws, o+52, w.OwnerGroup)
				putStringAt(ws, o+60, w.OwnerKind)
			}
		}
		le32(b, 0, wp)
	}
	le32(b, 4, uint32(len(reg.Watches)))
	le32(b, 8, reg.MaxConcurrentReconciles)
	if reg.ResyncSeconds != 0 {
		b[12] = 1
		le32(b, 16, reg.ResyncSeconds)
	}
	if len(reg.Permissions) == 0 {
		le32(b, 20, addr(emptyArea))
	} else {
		ps, pp := alloc(24 * len(reg.Permissions))
		for i, perm := range reg.Permissions {
			putStringList(ps, 24*i, perm.APIGroups)
			putStringList(ps, 24*i+8, perm.Resources)
			putStringList(ps, 24*i+16, perm.Verbs)
		}
		le32(b, 20, pp)
	}
	le32(b, 24, uint32(len(reg.Permissions)))
	if len(reg.InitialKeys) == 0 {
		le32(b, 28, addr(emptyArea))
	} else {
		ks, kp := alloc(16 * len(reg.InitialKeys))
		for i, k := range reg.InitialKeys {
			putStringAt(ks, 16*i, k.Namespace)
			putStringAt(ks, 16*i+8, k.Name)
		}
		le32(b, 28, kp)
	}
	le32(b, 32, uint32(len(reg.InitialKeys)))
	if sa := reg.ServiceAccount; sa != nil {
		b[36] = 1
		putStringAt(b, 40, sa.Namespace)
		putStringAt(b, 48, sa.Name)
	}
	return p
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

//go:wasmexport reconcile
func wasmReconcile(nsPtr, nsLen, namePtr, nameLen, objTag, objPtr, objLen uint32) uint32 {
	key := NamespacedName{Namespace: string(memory(nsPtr, nsLen)), Name: string(memory(namePtr, nameLen))}
	var object []byte
	present := objTag != 0
	if present {
		object = append([]byte(nil), memory(objPtr, objLen)...)
	}
	pins = nil // the arguments are copied: what the host allocated may go
	arenaUsed = 0
	o := reconcileKey(key, present, object)
	b, p := alloc(12)
	b[0] = byte(o.kind)
	switch o.kind {
	case outcomeRequeueAfter:
		le32(b, 4, o.ms)
	case outcomeTransient, outcomeTerminal:
		putStringAt(b, 4, o.message)
	}
	return p
}

// ---- imports ----------------------------------------------------------------------------------

//go:wasmimport turtles:controller/host@0.2.0 api-call
func hostAPICall(methodPtr, methodLen, pathPtr, pathLen, headersPtr, headersLen, bodyPtr, bodyLen, ret uint32)

//go:wasmimport turtles:controller/host@0.2.0 cache-get
func hostCacheGet(gPtr, gLen, vPtr, vLen, rPtr, rLen, nsPtr, nsLen, namePtr, nameLen, ret uint32)

//go:wasmimport turtles:controller/host@0.2.0 cache-list
func hostCacheList(gPtr, gLen, vPtr, vLen, rPtr, rLen, nsTag, nsPtr, nsLen, ret uint32)

//go:wasmimport turtles:controller/host@0.2.0 log
func hostLog(level, msgPtr, msgLen, fieldsPtr, fieldsLen uint32)

//go:wasmimport turtles:controller/host@0.2.0 record-event
func hostRecordEvent(event, ret uint32)

type wasmHost struct{}

func (wasmHost) APICall(req HTTPRequest) HTTPResponse {
	mp, ml := putString(req.Method)
	pp, pl := putString(req.Path)
	hp, hl := putPairs(req.Headers)
	bp, bl := putBytes(req.Body)
	ret, rp := alloc(20)
	arenaUsed = 0
	hostAPICall(mp, ml, pp, pl, hp, hl, bp, bl, rp)
	return HTTPResponse{
		Status:  int(binary.LittleEndian.Uint16(ret[0:])),
		Headers: getPairs(ret, 4),
		Body:    getBytes(ret, 12),
	}
}

func (wasmHost) CacheGet(group, version, resource, namespace, name string) ([]byte, bool) {
	gp, gl := putString(group)
	vp, vl := putString(version)
	rsp, rsl := putString(resource)
	np, nl := putString(namespace)
	xp, xl := putString(name)
	ret, rp := alloc(12)
	arenaUsed = 0
	hostCacheGet(gp, gl, vp, vl, rsp, rsl, np, nl, xp, xl, rp)
	if ret[0] == 0 {
		return nil, false
	}
	return getBytes(ret, 4), true
}

func (wasmHost) CacheList(group, version, resource string, namespace *string) []byte {
	gp, gl := putString(group)
	vp, vl := putString(version)
	rsp, rsl := putString(resource)
	var tag, np, nl uint32
	if namespace != nil {
		tag = 1
		np, nl = putString(*namespace)
	}
	ret, rp := alloc(8)
	arenaUsed = 0
	hostCacheList(gp, gl, vp, vl, rsp, rsl, tag, np, nl, rp)
	return getBytes(ret, 0)
}

func (wasmHost) Log(level LogLevel, message string, fields [][2]string) {
	mp, ml := putString(message)
	fp, fl := putPairs(fields)
	hostLog(uint32(level), mp, ml, fp, fl)
}

func (wasmHost) RecordEvent(ev EventRecord) error {
	// 17 flat parameters are more than 16: the record goes through memory.
	b, p := alloc(68)
	r := ev.Regarding
	putStringAt(b, 0, r.APIVersion)
	putStringAt(b, 8, r.Kind)
	putStringAt(b, 16, r.Namespace)
	putStringAt(b, 24, r.Name)
	putStringAt(b, 32, r.UID)
	b[40] = byte(ev.Type)
	putStringAt(b, 44, ev.Reason)
	putStringAt(b, 52, ev.Action)
	putStringAt(b, 60, ev.Note)
	ret, rp := alloc(12)
	arenaUsed = 0
	hostRecordEvent(p, rp)
	if ret[0] == 0 {
		return nil
	}
	return errors.New(getString(ret, 4))
}
