"""The one base of every error geko shows a user.

Jobs and the command line catch ``GekoError`` alone: it means the input, the configuration or a
tool was at fault and the message says which file, line and field. Anything else is a bug and keeps
its traceback.
"""


class GekoError(Exception):
    """A user-facing failure: its message names what was wrong and where."""


class PlatformError(GekoError, RuntimeError):
    """A platform could not do what was asked (missing tool, failed run, unknown solution).
    Declared here, below every platform module, so the arch table (geko_lib/archs.py) and the
    registry (platforms) both raise it without importing each other; ``platforms.PlatformError``
    is this class."""
