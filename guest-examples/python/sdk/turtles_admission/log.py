"""Structured logging, attributed to the policy by the host (`.../controllers/NAME/log`).

    log.info("defaulted", pod=request.name, team="payments")

Keyword arguments become the line's fields (values are str()-ed). print() works too: stdout and
stderr go to the policy's log.
"""

from . import _host

TRACE, DEBUG, INFO, WARN, ERROR = range(5)


def log(level, message, **fields):
    _host.backend.log(level, str(message), [(k, str(v)) for k, v in fields.items()])


def trace(message, **fields):
    log(TRACE, message, **fields)


def debug(message, **fields):
    log(DEBUG, message, **fields)


def info(message, **fields):
    log(INFO, message, **fields)


def warn(message, **fields):
    log(WARN, message, **fields)


warning = warn


def error(message, **fields):
    log(ERROR, message, **fields)
