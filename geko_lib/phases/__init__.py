"""Every phase of a campaign, declared once, and the one way a phase runs.

A phase is a module of this package with ``run(job)``: it reads ``job.input`` and writes
``job.output`` (paths relative to the workdir it runs in), with ``job.config``,
``job.params``, ``job.wildcards``, ``job.log``, ``job.resources`` and ``job.rule``, the
attributes of Snakemake's script object (:class:`Job`). A workflow script is one line,
``phases.run_script(snakemake, "<phase>")``; the Python API and the tests build a :class:`Job`
(``Job.for_rule``) and call :func:`run` in process. Either way :func:`run` is the wrapper
around the phase: the job log, the check of every input's stamp, the stamp of every output
(``jobs.run``), so stamps, provenance and failure handling are one policy whichever door a user
came in by; only the script's entry turns a failure into an exit status.

The rules that run the phases, their files and settings are the rule table,
``geko_lib.campaign.rules`` (``RULES``, ``BY_NAME``, named here too).
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
import warnings
from dataclasses import dataclass, field

from .. import interrupt, jobs, resources as own_files  # geko's own files (a Job has a resources field)
from ..campaign import layout as L
from ..campaign.rules import (BY_NAME, LOCAL_RULES, RULES, TARGETS, Rule, check_rules,  # noqa: F401
                              has_companions, log_name)
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

PHASES = tuple(dict.fromkeys(phase for rule in RULES for phase in rule.phases))


@dataclass
class Job:
    """A phase's inputs, outputs and settings, as Snakemake hands them to a script (the
    attributes of its ``snakemake`` object that phases read): what :func:`run` runs, whichever
    door the job came in by. ``resources.attempt`` counts Snakemake's attempts of the job (1
    first); ``scriptdir`` is the workflow's scripts directory (the configure phase finds the
    Snakefile beside it)."""

    rule: str
    input: "Paths"
    output: "Paths"
    config: dict
    params: "Paths" = field(default_factory=lambda: Paths())
    wildcards: "Paths" = field(default_factory=lambda: Paths())
    log: list = field(default_factory=list)
    resources: "Paths" = field(default_factory=lambda: Paths(attempt=1))
    scriptdir: str = field(default_factory=lambda: str(own_files.path("workflow", "scripts")))
    threads: int = 1

    @classmethod
    def from_snakemake(cls, smk) -> "Job":
        """The job Snakemake hands a workflow script (its files as Snakemake's named lists)."""
        return cls(smk.rule, smk.input, smk.output, smk.config, smk.params, smk.wildcards,
                   list(smk.log), smk.resources, smk.scriptdir, smk.threads)

    @classmethod
    def for_rule(cls, rule: str, input: "Paths", output: "Paths", config: dict,
                 params: "Paths | None" = None, wildcards: "Paths | None" = None,
                 attempt: int = 1) -> "Job":
        """A job of a rule of the table, its log where the table puts the rule's logs
        (``logs/<log>.log``; one job of a fan-out rule: ``logs/<log>/<value>.log``)."""
        wildcards = wildcards if wildcards is not None else Paths()
        rule_of = BY_NAME[rule]
        value = wildcards.get(rule_of.over) if rule_of.over else None
        return cls(rule, input, output, config, params if params is not None else Paths(),
                   wildcards, [L.job_log(rule_of.log_name, value)], Paths(attempt=attempt))


class Paths(list):
    """Positional and named values, as Snakemake's ``input``/``output``: ``paths[0]`` and
    ``paths.name``."""

    def __init__(self, *positional, **named):
        super().__init__([*positional, *named.values()])
        self.__dict__.update(named)

    def get(self, name: str, default=None):
        """A named value, or ``default`` (as Snakemake's ``input.get``)."""
        return self.__dict__.get(name, default)


def function(phase: str):
    """The ``run(job)`` of a phase."""
    if phase not in PHASES:
        raise KeyError(f"no phase {phase!r} (phases: {', '.join(PHASES)})")
    return importlib.import_module(f"{__name__}.{phase}").run


def run(job, phase: str, own_thread: bool = False) -> None:
    """Run one phase as a job: its log, its inputs checked, its outputs stamped (jobs.run). A
    user error is logged once and raised. ``own_thread``: its log takes only this thread's
    lines (a job inside Snakemake's process)."""
    jobs.run(function(phase), job, companions=has_companions(job.rule), own_thread=own_thread)


class JobFailed(Exception):
    """An in-process job's user error, already said in its job log: Snakemake prints this one
    line in its error block instead of geko's traceback."""


_IN_PROCESS = threading.Lock()


def run_in_snakemake(job: Job, phase: str) -> None:
    """A rule's phase in Snakemake's own process (a ``run:`` rule: the rule table's in_process
    rules, CPU-only bookkeeping that takes under a second, where an interpreter's start-up per
    job would cost more than the job). One such job at a time: they share the process's
    logging, and the interpreter lock would run them one at a time anyway. The process's
    logging is as it was after the job; a user error (said in the job log) fails the job."""
    # fresh warning filters: a warning shown once in this process is shown again to this job
    with _IN_PROCESS, jobs.logging_restored(), warnings.catch_warnings():
        warnings.simplefilter("default")
        try:
            run(job, phase, own_thread=True)
        except jobs.USER_ERRORS as exc:
            raise JobFailed(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) \
                from None


def run_script(smk, phase: str) -> None:
    """A workflow script's entry (``phases.run_script(snakemake, "<phase>")``): :func:`run` on
    Snakemake's job; a user error (already said, one line) ends the job with exit 1, a Ctrl-C
    (it reached the whole process group: Snakemake says it once) with exit 130."""
    try:
        run(Job.from_snakemake(smk), phase)
    except jobs.USER_ERRORS:
        sys.exit(1)
    except KeyboardInterrupt:
        log.info("interrupted")
        sys.exit(interrupt.EXIT_CODE)
