"""Every phase of a campaign, declared once, and the one way a phase runs.

A phase is a module of this package with ``run(job)``: it reads ``job.input`` and writes
``job.output`` (paths relative to the workdir it runs in), with ``job.config``,
``job.params``, ``job.wildcards``, ``job.log`` and ``job.rule``, the attributes of Snakemake's
script object. A workflow script is one line, ``phases.run(snakemake, "<phase>")``; the Python
API builds a :class:`Job` with the same attributes and calls :func:`run` in process. Either way
:func:`run` is the wrapper around the phase: the job log, the check of every input's stamp,
the stamp of every output (``jobs.run``), so stamps, provenance and failure handling are one
policy whichever door a user came in by.

``RULES`` is the workflow's rule list, in DAG order: which phase each rule runs, whether it is
bookkeeping (local: it runs where snakemake runs, never on a cluster node), where its log
lives. The Snakefile's ``localrules``, ``geko status``'s table and the job logs read it; the
``.smk`` files wire the same names to their files (``campaign.layout``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    name: str
    phases: tuple[str, ...]  # the phase modules it runs (one; libs: extract or merge_tuned)
    local: bool  # bookkeeping: runs where snakemake runs
    log: str = ""  # logs/<log>[/<job>].log; "" for the rule's own name
    # files it writes beside its output are read by later jobs (stamped as its companions)
    companions: bool = False

    @property
    def log_name(self) -> str:
        return self.log or self.name


RULES = (
    Rule("ingest", ("ingest",), local=True),
    Rule("baseline_part", ("baseline",), local=False, log="baseline"),
    Rule("baseline", ("baseline_merge",), local=True),
    Rule("summarize", ("summarize",), local=True),
    Rule("search_configure", ("search_configure",), local=True),
    Rule("search_chunk", ("search_chunk",), local=False, log="search"),
    Rule("winners", ("winners",), local=True),
    Rule("configure", ("configure",), local=True, companions=True),
    Rule("optimize", ("optimize",), local=False),
    Rule("libs", ("extract", "merge_tuned"), local=True),
    Rule("create_library", ("create_library",), local=True),
    Rule("bench_input", ("bench_input",), local=True),
    Rule("bench_reference", ("bench_library",), local=False),
    Rule("bench_tuned", ("bench_library",), local=False),
    Rule("verify_tuned", ("verify_library",), local=False),
    Rule("analyze", ("analyze",), local=True),
    Rule("ship_final_libs", ("final_libs",), local=True, log="final_libs"),
    Rule("ship_full_libs", ("full_libs",), local=True, log="full_libs"),
    Rule("exports", ("exports",), local=True),
    Rule("plots", ("report_plots",), local=False),
    Rule("prune_libs", ("prune",), local=False, log="prune"),
    Rule("combine_libs", ("combine",), local=False),
    Rule("integrate", ("integrate",), local=False),
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
    """A phase's inputs, outputs and settings, as Snakemake hands them to a script: what the
    Python API gives :func:`run` to run a phase in process."""

    rule: str
    input: "Paths"
    output: "Paths"
    config: dict
    params: "Paths" = field(default_factory=lambda: Paths())
    wildcards: "Paths" = field(default_factory=lambda: Paths())
    log: list = field(default_factory=list)


class Paths(list):
    """Positional and named values, as Snakemake's ``input``/``output``: ``paths[0]`` and
    ``paths.name``."""

    def __init__(self, *positional, **named):
        super().__init__([*positional, *named.values()])
        self.__dict__.update(named)


def function(phase: str):
    """The ``run(job)`` of a phase."""
    if phase not in PHASES:
        raise KeyError(f"no phase {phase!r} (phases: {', '.join(PHASES)})")
    return importlib.import_module(f"{__name__}.{phase}").run


def run(job, phase: str) -> None:
    """Run one phase as a job: its log, its inputs checked, its outputs stamped (jobs.run)."""
    from .. import jobs

    jobs.run(function(phase), job)
