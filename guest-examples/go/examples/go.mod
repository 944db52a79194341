module turtles.dev/go/examples

go 1.24

require turtles.dev/go/turtles v0.0.0

replace turtles.dev/go/turtles => ../sdk
