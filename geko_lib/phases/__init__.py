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

``RULES`` is the workflow's rule list, in DAG order: which phase each rule runs, whether it is
bookkeeping (local: it runs where snakemake runs, never on a cluster node), where its log
lives. The Snakefile's ``localrules``, ``geko status``'s table and the job logs read it; the
``.smk`` files wire the same names to their files (``campaign.layout``).
"""

from __future__ import annotations

import importlib
import logging
import sys
from dataclasses import dataclass, field

from .. import interrupt, jobs, resources as own_files  # geko's own files (a Job has a resources field)
from ..campaign import layout as L
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


@dataclass(frozen=True)
class Rule:
    name: str
    phases: tuple[str, ...]  # the phase modules it runs (one; libs: extract or merge_tuned)
    local: bool  # bookkeeping: runs where snakemake runs
    output: str  # the layout pattern of the output that shows the job done (geko status)
    over: str = ""  # the wildcard a fan-out rule makes one job per value of ({part}, ...)
    mode: str = ""  # search or tune: the rule exists in that mode only
    optional: bool = False  # a target's rule a user asks for (shown once it was asked for)
    log: str = ""  # logs/<log>[/<job>].log; "" for the rule's own name
    # files it writes beside its output are read by later jobs (stamped as its companions)
    companions: bool = False

    @property
    def log_name(self) -> str:
        return self.log or self.name


RULES = (
    Rule("ingest", ("ingest",), True, L.WORKLOAD),
    Rule("baseline_part", ("baseline",), False, L.BASELINE_PART, over="part", log="baseline"),
    Rule("baseline", ("baseline_merge",), True, L.BASELINE),
    Rule("summarize", ("summarize",), True, L.SUMMARY),
    Rule("search_configure", ("search_configure",), True, L.SEARCH_CHUNKS, mode="search"),
    Rule("search_chunk", ("search_chunk",), False, L.SEARCH_DATA, over="chunk", mode="search",
         log="search"),
    Rule("winners", ("winners",), True, L.WINNERS, mode="search"),
    Rule("configure", ("configure",), True, L.TUNING_MANIFEST, mode="tune", companions=True),
    Rule("optimize", ("optimize",), False, L.BUILD_LOGIC, over="cfg", mode="tune"),
    Rule("libs", ("extract", "merge_tuned"), True, L.LIBS),
    Rule("create_library", ("create_library",), True, L.TENSILE),
    Rule("bench_input", ("bench_input",), True, L.BENCH_INPUT, over="lib"),
    Rule("bench_reference", ("bench_library",), False, L.BENCH_REFERENCE, over="lib"),
    Rule("bench_tuned", ("bench_library",), False, L.BENCH_TUNED, over="lib"),
    Rule("verify_tuned", ("verify_library",), False, L.VERIFY_TUNED, over="lib"),
    Rule("analyze", ("analyze",), True, L.METRICS),
    Rule("ship_final_libs", ("final_libs",), True, L.FINAL_LIBS, log="final_libs"),
    Rule("ship_full_libs", ("full_libs",), True, L.FULL_LIBS, log="full_libs"),
    Rule("exports", ("exports",), True, L.EXPORT_OVERRIDE),
    Rule("plots", ("report_plots",), False, L.REPORT_TABLE, optional=True),
    Rule("prune_libs", ("prune",), False, L.PRUNED_LIBS, optional=True, log="prune"),
    Rule("combine_libs", ("combine",), False, L.COMBINED_LIBS, optional=True),
    Rule("integrate", ("integrate",), False, L.INTEGRATE_COMMAND, optional=True),
)
BY_NAME = {rule.name: rule for rule in RULES}

# the targets a user asks for (Snakefile): they only gather files, so they run where snakemake runs
TARGETS = ("final_libs", "search", "bench", "tune", "prune", "combine")
LOCAL_RULES = TARGETS + tuple(rule.name for rule in RULES if rule.local)
PHASES = tuple(dict.fromkeys(phase for rule in RULES for phase in rule.phases))


def check_rules(names) -> None:
    """The workflow's rules are exactly the table's (the Snakefile asks once its rules are read),
    so a rule added to a .smk file without its entry here fails at once."""
    names = set(names)
    declared = {rule.name for rule in RULES} | set(TARGETS)
    if names != declared:
        raise RuntimeError("workflow rules and geko_lib.phases.RULES differ: "
                           f"not declared {sorted(names - declared)}, "
                           f"declared but absent {sorted(declared - names)}")


def log_name(rule: str) -> str:
    """Where a rule's job logs live under logs/ (its own name unless RULES says otherwise)."""
    return BY_NAME[rule].log_name if rule in BY_NAME else rule


def has_companions(rule: str | None) -> bool:
    return rule in BY_NAME and BY_NAME[rule].companions


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


def run(job, phase: str) -> None:
    """Run one phase as a job: its log, its inputs checked, its outputs stamped (jobs.run). A
    user error is logged once and raised."""
    jobs.run(function(phase), job, companions=has_companions(job.rule))


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
