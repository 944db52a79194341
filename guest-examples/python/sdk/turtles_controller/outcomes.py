"""What a reconcile returns (or raises)."""


class _Done:
    """Reconciled; wait for the next change. Returning None means the same."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "Done"


Done = _Done()


class RequeueAfter:
    """Reconcile this key again after `ms` milliseconds (e.g. to poll something slow)."""

    __slots__ = ("ms",)

    def __init__(self, ms):
        ms = int(ms)
        if ms < 0:
            raise ValueError("RequeueAfter needs ms >= 0")
        self.ms = min(ms, 0xFFFFFFFF)

    @classmethod
    def seconds(cls, s):
        return cls(s * 1000)

    def __eq__(self, other):
        return isinstance(other, RequeueAfter) and other.ms == self.ms

    def __repr__(self):
        return f"RequeueAfter({self.ms})"


class TransientError(Exception):
    """Failed; retried with exponential backoff. Return it or raise it.

    Any other exception escaping reconcile (an ApiError too) counts as a transient error.
    """

    def __eq__(self, other):
        return type(other) is type(self) and other.args == self.args

    __hash__ = Exception.__hash__


class TerminalError(Exception):
    """Failed in a way a retry cannot fix; wait for the next change. Return it or raise it."""

    def __eq__(self, other):
        return type(other) is type(self) and other.args == self.args

    __hash__ = Exception.__hash__
