"""Progress of long jobs (search chunks, verification, tuning generations).

On a terminal a tqdm bar is drawn on stderr, except inside workflow jobs, which share one
terminal (:func:`draw_terminal_bars`). A job log is a file, where tqdm's carriage-return
redraws turn into one unreadable line, so the log gets plain lines instead::

    search gemms_0-24: 12/25 (48%) elapsed 3.1 s

written through ``logging`` (the job's log handlers), at most one every ``interval`` seconds,
plus the first (0/total) and the last (total/total) always. ``interval`` defaults to
``GEKO_PROGRESS_INTERVAL`` from the environment, else 10 s.

    for problem in progress.track(problems, label="verify lib"):
        ...

    with progress.Progress(len(problems), "search gemms_0-24") as bar:
        platform.search(problems, ..., progress=bar.update)   # where the platform takes one
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
import time
from typing import Callable, Iterable, Iterator, TypeVar

from .log_setup import LOGGER

T = TypeVar("T")

log = logging.getLogger(f"{LOGGER}.progress")

DEFAULT_INTERVAL = 10.0
ENV_INTERVAL = "GEKO_PROGRESS_INTERVAL"

# Workflow jobs share one terminal: their bars would overwrite each other's lines, so a job that
# logs to a file draws none (jobs.setup_logging turns them off) and its log gets the plain lines.
_terminal_bars = True


def draw_terminal_bars(enabled: bool) -> None:
    """Whether a Progress on a terminal stream draws a tqdm bar (default on)."""
    global _terminal_bars
    _terminal_bars = bool(enabled)


def terminal_bars_drawn() -> bool:
    return _terminal_bars


def default_interval() -> float:
    text = os.environ.get(ENV_INTERVAL, "")
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_INTERVAL
    return max(value, 0.0)


def line(label: str, n: int, total: int | None, elapsed: float) -> str:
    """``<label>: 12/45 (27%) elapsed 3.1 s`` (``<label>: 12 elapsed 3.1 s`` without a total)."""
    if total:
        count = f"{n}/{total} ({int(100 * n / total)}%)"
    elif total == 0:
        count = f"{n}/0 (100%)"
    else:
        count = str(n)
    return f"{label}: {count} elapsed {elapsed:.1f} s"


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class _SkipTerminal(logging.Filter):
    """On handlers that write to a terminal: drop the plain progress lines (a bar is drawn)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "geko_progress_line", False)


def _terminal_handlers(logger: logging.Logger) -> list[logging.Handler]:
    found, current = [], logger
    while current is not None:
        for handler in current.handlers:
            if isinstance(handler, logging.StreamHandler) and \
                    not isinstance(handler, logging.FileHandler) and \
                    _is_terminal(getattr(handler, "stream", None)):
                found.append(handler)
        current = current.parent if current.propagate else None
    return found


class Progress:
    """A counter shown as a tqdm bar on a terminal and as throttled plain lines in a log.

    ``update(n)`` adds to the count, ``set(n)`` sets it; ``close()`` (or leaving the ``with``
    block) writes the last line. ``stream`` is where a terminal bar would go (stderr);
    ``logger`` carries the plain lines (to the job log); with no logging handlers configured at
    all the plain lines go to ``stream``."""

    def __init__(self, total: int | None = None, label: str = "progress", *,
                 interval: float | None = None, logger: logging.Logger | None = None,
                 stream=None, unit: str = "it", clock: Callable[[], float] = time.monotonic):
        self.total = None if total is None else int(total)
        self.label = label
        self.interval = default_interval() if interval is None else float(interval)
        self.logger = logger or log
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.n = 0
        self.start = clock()
        self._last_line = None  # clock of the last plain line
        self._last_n = None  # count of the last plain line
        self.closed = False
        self._bar = None
        if _terminal_bars and _is_terminal(self.stream):
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=self.total, desc=label, unit=unit, file=self.stream,
                                 leave=True, dynamic_ncols=True)
                for handler in _terminal_handlers(self.logger):
                    if not any(isinstance(f, _SkipTerminal) for f in handler.filters):
                        handler.addFilter(_SkipTerminal())
        self._emit(force=True)

    # --- counting -----------------------------------------------------------------------
    def update(self, n: int = 1) -> None:
        self.set(self.n + int(n))

    def set(self, n: int) -> None:
        n = int(n)
        if self._bar is not None:
            self._bar.update(n - self.n)
        self.n = n
        self._emit(force=self.total is not None and n >= self.total)

    def finish(self) -> None:
        """Count everything as done (for work that could not report item by item)."""
        if self.total is not None and self.n < self.total:
            self.set(self.total)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._bar is not None:
            self._bar.close()
        if self._last_n != self.n:
            self._emit(force=True)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- output -------------------------------------------------------------------------
    @property
    def elapsed(self) -> float:
        return self.clock() - self.start

    def text(self) -> str:
        return line(self.label, self.n, self.total, self.elapsed)

    def _emit(self, force: bool = False) -> None:
        now = self.clock()
        if self._last_line is not None:
            if self._last_n == self.n:
                return  # this count is already written
            if not force and now - self._last_line < self.interval:
                return
        self._last_line, self._last_n = now, self.n
        text = self.text()
        if self.logger.hasHandlers():
            self.logger.info("%s", text, extra={"geko_progress_line": True})
        elif self._bar is None:
            try:
                print(text, file=self.stream, flush=True)
            except ValueError:  # a closed stream
                pass


def track(iterable: Iterable[T], total: int | None = None, label: str = "progress",
          **options) -> Iterator[T]:
    """Yield the items of ``iterable`` while counting them (see Progress)."""
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with Progress(total, label, **options) as bar:
        for item in iterable:
            yield item
            bar.update()


def accepts_progress(fn) -> bool:
    """Whether a platform method takes a ``progress`` callback (called with the number of
    problems finished since the last call)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "progress" in params


def run_with_progress(fn, problems, label: str, *args, **kwargs):
    """``fn(problems, *args, **kwargs)`` with per-problem progress where ``fn`` takes a
    ``progress`` callback, else one step at the end."""
    with Progress(len(problems), label, unit="GEMM") as bar:
        if accepts_progress(fn):
            result = fn(problems, *args, progress=bar.update, **kwargs)
        else:
            result = fn(problems, *args, **kwargs)
        bar.finish()
    return result
