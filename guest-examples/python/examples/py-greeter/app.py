"""`py-greeter`: ConfigMaps labelled `turtles.dev/greet=true` get the annotation
`turtles.dev/greeting: "hello from python, <name>"`."""

from greeter import greeter

WitWorld = greeter("hello from python").export()
