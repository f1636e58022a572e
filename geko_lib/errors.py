"""The one base of every error geko shows a user.

Jobs and the command line catch ``GekoError`` alone: it means the input, the configuration or a
tool was at fault and the message says which file, line and field. Anything else is a bug and keeps
its traceback.
"""


class GekoError(Exception):
    """A user-facing failure: its message names what was wrong and where."""


class EnvironmentFailure(GekoError):
    """A job stopped by its surroundings, not by its work: a full disk or quota, an interrupt, a
    lost device lease. The same job can succeed once the surroundings are put right, so it
    counts toward no failure streak and no retirement (geko_lib.gpu_jobs), and a rerun resumes."""


class PlatformError(GekoError, RuntimeError):
    """A platform could not do what was asked (missing tool, failed run, unknown solution).
    Declared here, below every platform module, so the arch table (geko_lib/archs.py) and the
    registry (platforms) both raise it without importing each other; ``platforms.PlatformError``
    is this class."""
