"""What the ``geko`` command does with Snakemake's own output while it runs the workflow.

At the default verbosity the terminal shows what the original tool shows: a line when each phase
starts (the original's phase lines), one progress bar for the campaign
(``geko_lib.campaign.progress``), the jobs' warnings and errors, and geko's own ``geko:`` lines.
Everything Snakemake prints (banner, job statistics, one block per job) goes to
``<workdir>/logs/snakemake.log`` instead; at ``-v 2`` it reaches the terminal too. When jobs
fail, their logs (the ``log:`` lines of Snakemake's ``Error in rule`` blocks) are named, and
their last lines shown, at the end. A run refused by Snakemake's workdir lock (another campaign
took the workdir first) is told in one line, not as a LockException.
"""

from __future__ import annotations

import contextlib
import re
from collections import deque
from pathlib import Path

from .. import interrupt
from ..log_setup import PREFIX
from ..path_errors import NO_SPACE, describe, no_space
from .rules import RULES

LOG = "logs/snakemake.log"  # workdir-relative: Snakemake's output of the geko command's runs
# the original's phases, by the rules that run them (rules without one start no phase)
PHASES = {rule.name: rule.stage for rule in RULES if rule.stage}
_RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
_ERROR = re.compile(r"^Error in rule (\w+):$")
_LOG_LINE = re.compile(r"^\s+log: (.+?)(?: \(check log file\(s\) for error details\))?$")
_LOCKED = ("LockException", "Directory cannot be locked")
# an error raised while Snakemake reads the workflow (the config schema, geko's checks of the
# workdir's outputs before the DAG is built): no job runs, so no job log names it
_WORKFLOW_ERROR = re.compile(r'^\w+ in file ".+", line \d+:$')
_TRACEBACK = '  File "'
WORKFLOW_ERROR_LINES = 12  # lines of its message kept (a schema error's runs to about 8)
TAIL = 15  # lines of each failed job's log shown at the end
# an error Snakemake raises itself, after the DAG (``WorkflowError:`` of a report without
# pygments): no job log and no workflow file names it, only Snakemake's own last lines do
_OWN_ERROR = re.compile(r"^[A-Z]\w*(?:Error|Exception)\b")
OWN_ERROR_LINES = 8


class Output:
    """Feed it Snakemake's output line by line (:meth:`feed`, with the function that prints a
    line on the terminal: the campaign bar's, so the two do not garble each other). ``show_all``
    passes every line on (-v 2, dry runs); ``phases`` off (-v 0) drops the phase lines."""

    def __init__(self, workdir, command: list[str], show_all: bool = False,
                 phases: bool = True):
        self.workdir, self.show_all, self.show_phases = Path(workdir), show_all, phases
        self.path = log_path(workdir)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.path, "a", encoding="utf-8", errors="replace")
        # the first write a full disk refused: a job's, Snakemake's own or this log's
        self.write_error: str | None = None
        self._keep(f"\n=== geko runs: {' '.join(map(str, command))}\n")
        self.phases: list[str] = []
        self.failed: list[tuple[str, str]] = []  # (rule, log) of each failed job
        self.locked = False
        self.interrupted = False  # the workflow said it was interrupted (geko_lib.interrupt)
        self._in_error: str | None = None
        self.workflow_error: list[str] = []  # the header and message of a workflow error
        self._in_workflow_error = False
        self._last = deque(maxlen=WORKFLOW_ERROR_LINES)  # Snakemake's latest non-blank lines

    def feed(self, line: str, say=print) -> None:
        line = line.rstrip("\n")
        self._keep(line + "\n")
        if line.strip():
            self._last.append(line)
        self._failures(line)
        self.write_error = self.write_error or full_disk(line, self.workdir)
        if any(mark in line for mark in _LOCKED):
            self.locked = True
        self.interrupted = self.interrupted or interrupt.MESSAGE in line
        if self.show_all:
            say(line)
            return
        rule = _RULE.match(line)
        phase = PHASES.get(rule.group(1)) if rule else None
        if phase and phase not in self.phases:
            self.phases.append(phase)
            if self.show_phases:
                say(f"geko: {phase}...")
        elif line.startswith((f"{PREFIX}WARNING", f"{PREFIX}ERROR", f"{PREFIX}CRITICAL",
                              "geko: ")):
            say(line)

    def _failures(self, line: str) -> None:
        self._workflow_error(line)
        error = _ERROR.match(line)
        if error:
            self._in_error = error.group(1)
            return
        if self._in_error is None:
            return
        found = _LOG_LINE.match(line)
        if found:
            self.failed.append((self._in_error, found.group(1).strip()))
            self._in_error = None
        elif not line.startswith((" ", "\t")):
            self._in_error = None

    def _workflow_error(self, line: str) -> None:
        if _WORKFLOW_ERROR.match(line):
            self.workflow_error, self._in_workflow_error = [line], True
        elif self._in_workflow_error:
            if line.startswith(_TRACEBACK) or len(self.workflow_error) > WORKFLOW_ERROR_LINES:
                self._in_workflow_error = False
            else:
                self.workflow_error.append(line)

    def _keep(self, text: str) -> None:
        """``text`` into the log. A log that cannot be written (a full disk) is given up, not
        Snakemake's output: a reader that stopped would leave Snakemake waiting on its pipe for
        ever; the error is told when the run ends (:attr:`write_error`)."""
        if self._log is None:
            return
        try:
            self._log.write(text)
            self._log.flush()
        except OSError as exc:
            self.write_error = self.write_error or describe(exc, self.path)
            self.close()

    def close(self) -> None:
        if self._log is not None:
            with contextlib.suppress(OSError):  # what it could not write is told already
                self._log.close()
            self._log = None

    def failure_lines(self) -> list[str]:
        """The failed jobs' logs, each named with its last lines (indented); where no job
        failed, the workflow's own error (header and message). (A failed job's script error
        has the same header, under ``RuleException:``: its log says more.) Where neither
        names the cause, Snakemake's own error: its last lines from the error's name on."""
        lines = [] if self.failed else [line for line in self.workflow_error if line.strip()]
        if not self.failed and not lines:
            lines = self._own_error()
        for rule, log in self.failed:
            for name in [p.strip() for p in log.split(",") if p.strip()]:
                path = Path(name) if Path(name).is_absolute() else self.workdir / name
                lines.append(f"failed job {rule}: its log {path}:")
                try:
                    text = path.read_text(errors="replace").splitlines()[-TAIL:]
                except OSError:
                    text = ["(the log was not written)"]
                lines += [f"    {t}" for t in text]
        return lines

    def _own_error(self) -> list[str]:
        last = list(self._last)
        starts = [i for i, line in enumerate(last) if _OWN_ERROR.match(line)]
        shown = last[starts[-1]:] if starts else last[-OWN_ERROR_LINES:]
        return [f"snakemake stopped ({LOG}):"] + [f"    {line}" for line in shown]


_ERRNO = re.compile(r"\[Errno (%s)\]" % "|".join(map(str, NO_SPACE)))
_NAMED = re.compile(r"'(/[^']+)'|directory (/\S+)")
_TOLD = tuple(what for what, _ in NO_SPACE.values())  # a job's line, told by path_errors


def full_disk(line: str, workdir) -> str | None:
    """``PATH: no space left ...`` where ``line`` says a write found the disk full: a job's
    error line (already in those words) or Snakemake's own (``[Errno 28] ...``: its records in
    .snakemake; the path it names, else the workdir's)."""
    if line.startswith(PREFIX):
        message = line.split("] ", 1)[-1]
        return message if any(f": {what} (" in message for what in _TOLD) else None
    code = _ERRNO.search(line)
    if code is None:
        return None
    named = _NAMED.search(line)
    path = next(filter(None, named.groups())) if named else str(workdir)
    return f"{path}: {no_space(int(code.group(1)), path)}"


def log_path(workdir) -> Path:
    return Path(workdir) / LOG

