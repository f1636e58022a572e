"""A rejected workload (file, line, field) and the readers' internal error kinds."""

from __future__ import annotations

import logging


from ..errors import GekoError
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


# --------------------------------------------------------------------------------------------
# errors


class WorkloadError(GekoError, ValueError):
    """A rejected workload: ``"<path>:<line>: <field>: <what is wrong>"``.

    ``line`` is 1-based, or None for whole-file problems (then the message reads
    ``"<path>: <field>: <what is wrong>"``).
    """

    def __init__(self, path, line: int | None, field: str, message: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.field}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.field, self.message))


class _Bad(Exception):
    """Internal: row ``index`` of a column is invalid."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index
        self.message = message
