//go:build !wasip1

package turtles

// A native build (unit tests) has no turtles host: tests install one with SetHost, typically
// fake.New() from package turtles.dev/go/turtles/fake.
func defaultHost() Host { return noHost{} }
