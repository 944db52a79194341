module turtles.dev/go/turtles

go 1.24
