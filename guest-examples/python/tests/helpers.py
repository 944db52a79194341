"""Puts the SDK and the examples on sys.path, and loads an example's app.py under its own name."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.dirname(HERE)
EXAMPLES = os.path.join(PYTHON, "examples")

for path in (os.path.join(PYTHON, "sdk"), os.path.join(EXAMPLES, "lib")):
    if path not in sys.path:
        sys.path.insert(0, path)


def load_example(name):
    """Import examples/NAME/app.py as module `example_NAME` (its folder first on sys.path)."""
    folder = os.path.join(EXAMPLES, name)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module_name = "example_" + name.replace("-", "_")
    spec = importlib.util.spec_from_file_location(module_name, os.path.join(folder, "app.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
