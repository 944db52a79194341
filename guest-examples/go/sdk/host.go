package turtles

import "fmt"

// HTTPRequest is one call to the API server (the WIT record `http-request`).
type HTTPRequest struct {
	// GET, POST, PUT, PATCH, DELETE.
	Method string
	// Path with query, e.g. "/api/v1/namespaces/default/configmaps?labelSelector=a%3Db".
	Path    string
	Headers [][2]string
	Body    []byte
}

// HTTPResponse is the API server's answer (the WIT record `http-response`).
type HTTPResponse struct {
	Status  int
	Headers [][2]string
	Body    []byte
}

// LogLevel is the WIT enum `log-level`.
type LogLevel uint8

const (
	LevelTrace LogLevel = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
)

// EventType is the WIT enum `event-type`.
type EventType uint8

const (
	EventNormal EventType = iota
	EventWarning
)

// ObjectReference names the object an Event is about (its `involvedObject`).
type ObjectReference struct {
	APIVersion, Kind, Namespace, Name, UID string
}

// EventRecord is an Event as the host records it (the WIT record `event`).
type EventRecord struct {
	Regarding ObjectReference
	Type      EventType
	Reason    string
	Action    string
	Note      string
}

// Host is everything a controller asks of the turtles host: the imports of the WIT world
// `turtles:controller/controller@0.2.0`. In a component it is the real host (the canonical ABI
// glue, built for GOOS=wasip1 only); in native unit tests it is whatever SetHost installed,
// typically the in-memory fake of package turtles.dev/go/turtles/fake.
type Host interface {
	// APICall calls the API server in-process as the controller's identity.
	APICall(req HTTPRequest) HTTPResponse
	// CacheGet returns one object of a watched kind from the informer cache (JSON).
	CacheGet(group, version, resource, namespace, name string) ([]byte, bool)
	// CacheList returns the cached objects of a watched kind as a JSON array; namespace nil:
	// every namespace.
	CacheList(group, version, resource string, namespace *string) []byte
	// Log writes a structured log line attributed to the controller.
	Log(level LogLevel, message string, fields [][2]string)
	// RecordEvent records an Event; the error is the Status message when it was not written.
	RecordEvent(ev EventRecord) error
}

var host Host = defaultHost()

// SetHost replaces the host the SDK talks to and returns the previous one (for tests).
func SetHost(h Host) Host {
	old := host
	host = h
	return old
}

// noHost is the host of a native build with no fake installed: every call says so.
type noHost struct{}

func (noHost) fail() string {
	return "turtles: no host: this is a native build; install a fake with turtles.SetHost (package turtles.dev/go/turtles/fake) or build with GOOS=wasip1"
}
func (h noHost) APICall(HTTPRequest) HTTPResponse { panic(h.fail()) }
func (h noHost) CacheGet(string, string, string, string, string) ([]byte, bool) {
	panic(h.fail())
}
func (h noHost) CacheList(string, string, string, *string) []byte { panic(h.fail()) }
func (noHost) Log(level LogLevel, message string, fields [][2]string) {
	fmt.Println(level, message, fields)
}
func (h noHost) RecordEvent(EventRecord) error { panic(h.fail()) }
