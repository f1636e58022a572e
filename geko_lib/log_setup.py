"""geko's log line format, in one place: the original's ``GEKO:INFO [module:function] message``.

The original logs through a logger named ``GEKO`` (:data:`LOGGER`) with lines such as
``GEKO:INFO [optim:run] ...``; geko_lib logs through that logger too (so
``logging.getLogger("GEKO").setLevel(logging.DEBUG)`` works as in the original's README), and
every geko log line (job logs under ``logs/``, the ``geko``
command's own lines) has that shape, so what a user greps for in the original's output is found
in geko's. ``module`` is the Python module that logged (a workflow script appears under its own
name: Snakemake runs a copy called ``tmp<random>.<script>.py``, and the random part is dropped).
"""

from __future__ import annotations

import logging
import re
import sys

LOGGER = "GEKO"  # the original's logger name: every geko_lib module logs through it
FORMAT = "GEKO:%(levelname)s [%(module)s:%(funcName)s] %(message)s"
PREFIX = "GEKO:"  # every line starts with it; then the level name
_SNAKEMAKE_COPY = re.compile(r"^tmp[A-Za-z0-9_]+\.")


class _ScriptName(logging.Filter):
    """``tmpab12cd34.search_share`` (Snakemake's copy of a script) -> ``search_share``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.module = _SNAKEMAKE_COPY.sub("", record.module)
        return True


class JobLog(logging.FileHandler):
    """A job's log file. A line the disk has no room for is lost from the file, not told as a
    traceback on the terminal (which gets the job's warnings and errors anyway, the full disk's
    line among them)."""

    def handleError(self, record: logging.LogRecord) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handleError(record)


def formatter() -> logging.Formatter:
    return logging.Formatter(FORMAT)


def attach(handler: logging.Handler) -> logging.Handler:
    """``handler`` writing geko's format (and script names without Snakemake's prefix)."""
    handler.setFormatter(formatter())
    handler.addFilter(_ScriptName())
    return handler


def parse(line: str) -> dict | None:
    """{level, module, function, message} of a geko log line, None for any other line. The
    function may be missing (``[geko]``: a line written by another formatter, as a test or a
    user's script writes one); ``function`` is then ""."""
    match = re.match(r"^GEKO:(\w+) \[([^:\]]*)(?::([^\]]*))?\] (.*)$", line)
    if not match:
        return None
    level, module, function, message = match.groups()
    return {"level": level, "module": module, "function": function or "", "message": message}


def first_error(path) -> str | None:
    """The message of the first ERROR line of a geko log (a job log: why the job failed), None
    where it has none or cannot be read."""
    try:
        with open(path, errors="replace") as handle:
            for line in handle:
                parsed = parse(line.rstrip("\n"))
                if parsed and parsed["level"] == "ERROR":
                    return parsed["message"].strip()
    except OSError:
        return None
    return None
