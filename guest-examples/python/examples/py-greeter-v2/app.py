"""`py-greeter-v2`: `py-greeter` (the same source, examples/lib/greeter.py) with another
greeting, `"hi from python, <name>"`: swap it in for `py-greeter` to see a hot reload."""

from greeter import greeter

WitWorld = greeter("hi from python").export()
