"""The workflow's rules, declared once: what each reads and writes, with what settings, where.

``RULES`` is the rule list in DAG order. Each :class:`Rule` says which phase it runs
(``geko_lib.phases``), its input and output files (layout patterns, by name, as the phase reads
them: ``job.input.summary``), the config keys of its params, the device it holds (``gpu``: a
device; ``gpu_slot``: one of a device's ``n_slots``), its retries, the conditions under which a
campaign has its jobs, its log, and whether it is bookkeeping that runs where snakemake runs.
The ``.smk`` files of ``workflow/rules/`` take all of that from here (``common.smk`` turns an
entry into Snakemake's directives), the Snakefile's ``localrules`` too, and :func:`check_rules`
holds the rules Snakemake read against this table; ``geko status``, the phase lines of the
``geko`` command and the job logs read it as well.

A file is a layout pattern, or one of the markers below where Snakemake needs more than a name:
:class:`Gather` (every file of a fan-out, once its checkpoint ran), :class:`When` (a file a
campaign has under a condition), :class:`Directory`, :class:`Given` (a value the workflow works
out from the config when it starts: the workload source, the benchmark log's stem). A param is a
config key, a :class:`Given` or a :class:`RerunToken`. A placeholder of a pattern that is no
wildcard (``{stem}``) is filled from the givens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import headline, layout as L
from .. import failures
from ..bench_formats.text import out_beside
from ..tuning import running_jobs


@dataclass(frozen=True)
class Gather:
    """Every ``pattern`` of a fan-out over ``over``, known once the checkpoint that fans out ran."""
    pattern: str
    over: str


@dataclass(frozen=True)
class Share:
    """The ``pattern`` of every value of the fan-out over ``over`` (``lib``, ``chunk``) that the
    job's share holds (its wildcard ``by``, ``part_<i>_of_<n>``: Layout.share_libs,
    Layout.share_chunks), once the checkpoint that fans out ran: a job over one device's share
    of the libraries or of the search's chunks."""
    pattern: str
    over: str
    by: str = "share"


@dataclass(frozen=True)
class When:
    """``file`` where ``condition`` (:data:`CONDITIONS`) holds for the campaign's config."""
    condition: str
    file: object


@dataclass(frozen=True)
class Directory:
    """An output that is a directory, written whole (Snakemake's ``directory()``)."""
    pattern: str


@dataclass(frozen=True)
class Given:
    """A value the workflow works out from the config when it starts (``common.smk``'s GIVEN)."""
    name: str


@dataclass(frozen=True)
class RerunToken:
    """A param that changes after a run in which jobs of the fan-out failed (their failures are
    kept under ``directory``), so a plain rerun tries them again (geko_lib.failures)."""
    directory: str


def _mode(mode):
    return lambda config: (config.get("mode") or "search") == mode


def _aiter_listed(config) -> bool:
    from .. import platforms

    return "aiter_tuned" in platforms.capabilities(config).exports


# what a campaign's config decides about the rules it has
CONDITIONS = {
    "keep_thr > 0": lambda config: float(config.get("keep_thr", 0)) > 0,  # the baseline filters
    "keep_thr == 0": lambda config: float(config.get("keep_thr", 0)) <= 0,  # no baseline
    "verify": lambda config: bool(config.get("verify", True)),
    "search": _mode("search"),
    "tune": _mode("tune"),
    "aiter": _aiter_listed,  # the platform's rows are hipBLASLt solutions (rocm)
}


def holds(condition: str, config: dict) -> bool:
    return CONDITIONS[condition](config)


@dataclass(frozen=True)
class Rule:
    name: str
    # the phase modules it runs: one, or (search mode's, tune mode's) (libs: extract, merge_tuned)
    phases: tuple[str, ...]
    local: bool  # bookkeeping: runs where snakemake runs, never on a cluster node
    inputs: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    checkpoint: bool = False  # the DAG is re-evaluated after it (what fans out depends on it)
    over: str = ""  # the wildcard a fan-out rule makes one job per value of ({part}, ...)
    mode: str = ""  # search or tune: the rule exists in that mode only
    condition: str = ""  # a campaign has its jobs where this holds (or a run made them)
    optional: bool = False  # a target's rule a user asks for (shown once it was asked for)
    log: str = ""  # logs/<log>[/<job>].log; "" for the rule's own name
    gpu: str = ""  # the resource a job holds: "gpu" (a device) or "gpu_slot" (a slot of one)
    minutes: int = 60  # wall time of a GPU job's first attempt (doubles with each retry)
    mem_mb: int = 4000  # memory of a GPU job's first attempt (grows with each retry)
    retries: str = ""  # the config key of its retries (none with retry off)
    stage: str = ""  # the original's phase its jobs belong to ("Search phase"): a phase line
    done: str = ""  # the output that shows a job done (geko status); "" for the first
    # files it writes beside its outputs that later jobs read: stamped as its companions
    companions: tuple[str, ...] = ()
    # other files it writes beside its outputs (failure lists, a tool's rows), no later job's input
    side_files: tuple[str, ...] = ()

    @property
    def log_name(self) -> str:
        return self.log or self.name

    @property
    def in_process(self) -> bool:
        """Whether its jobs run in Snakemake's own process (a ``run:`` rule in the workflow,
        geko_lib.phases.run_in_snakemake): the bookkeeping rules, CPU-only and mostly under a
        second, where starting an interpreter per job cost more than the job. The ingest keeps
        a process of its own: a log of a million rows takes a minute and a gigabyte."""
        return self.local and self.name not in OWN_PROCESS

    @property
    def output(self) -> str:
        """The layout pattern of the output that shows a job done."""
        item = self.outputs[self.done] if self.done else next(iter(self.outputs.values()))
        return pattern_of(item)

    def phase(self, mode: str) -> str:
        """The phase it runs in ``mode`` (search or tune)."""
        return self.phases[0] if len(self.phases) == 1 else \
            self.phases[("search", "tune").index(mode)]

    def log_pattern(self) -> str:
        """Its ``log:``: ``logs/<log>.log``, or ``logs/<log>/{<over>}.log`` for a fan-out."""
        return L.job_log(self.log_name, "{" + self.over + "}" if self.over else None)


def pattern_of(item):
    """The pattern inside a file marker (None for a Gather's or a Given's: no one file)."""
    if isinstance(item, When):
        return pattern_of(item.file)
    if isinstance(item, Directory):
        return item.pattern
    return item if isinstance(item, str) else None


# the .out a bench job writes beside its table (the tool's output as printed)
BASELINE_PART_OUT = str(out_beside(L.BASELINE_PART))
BASELINE = "Baseline phase"
BENCHMARK = "Benchmark phase"
FILTER = "Filter phase"
OPTIMIZATION = "Optimization phase"

RULES = (
    Rule("ingest", ("ingest",), True, checkpoint=True, stage=BASELINE,
         inputs={"source": Given("workload_source")},
         outputs={"workload": L.WORKLOAD},
         # a model's GEMMs depend on its options too: a change re-runs the ingest
         params={"kind": Given("workload_kind"), "value": Given("workload_value"),
                 "options": Given("model_options")}),
    Rule("baseline_part", ("baseline",), False, over="part", condition="keep_thr > 0",
         log="baseline", gpu="gpu", stage=BASELINE,
         inputs={"workload": L.WORKLOAD},
         outputs={"table": L.BASELINE_PART, "out": BASELINE_PART_OUT},
         # --bench times for bench_duration, the search/tune baseline with fixed iterations
         params={"timing": "bench_timing"}),
    Rule("baseline", ("baseline_merge",), True, condition="keep_thr > 0", stage=BASELINE,
         inputs={"workload": L.WORKLOAD, "parts": Gather(L.BASELINE_PART, "part"),
                 "part_outs": Gather(BASELINE_PART_OUT, "part")},
         # the original's updated benchmark log and its results (geko_lib.bench.benchmark_log)
         outputs={"table": L.BASELINE, "bench_log": L.BENCH_LOG, "bench_out": L.BENCH_OUT},
         params={"duration": Given("baseline_duration"), "rotating_mb": "rotating_mb"}),
    Rule("summarize", ("summarize",), True, stage=BASELINE,
         inputs={"workload": L.WORKLOAD, "baseline": When("keep_thr > 0", [L.BASELINE])},
         outputs={"summary": L.SUMMARY, "gemms": L.GEMMS},
         params={"keep_thr": "keep_thr"}),
    Rule("search_configure", ("search_configure",), True, checkpoint=True, mode="search",
         stage="Search phase",
         inputs={"gemms": L.GEMMS, "summary": L.SUMMARY},
         outputs={"chunks": Directory(L.SEARCH_CHUNKS)},
         params={"chunk_size": "search_chunk_size", "duration": "search_duration",
                 "rotating_mb": "rotating_mb"}),
    # one job per device over that device's share of the chunks, in one process (one device
    # context for the phase); each chunk's files are stamped as it finishes, so a rerun redoes
    # only the chunks without a current stamp or with failed GEMMs (gpu_jobs.search_share)
    Rule("search_share", ("search_share",), False, over="search_share", mode="search",
         log="search", gpu="gpu", stage="Search phase",
         inputs={"chunks": Share(L.SEARCH_CHUNK, "chunk", by="search_share")},
         outputs={"data": L.SEARCH_SHARE, "failed": L.SEARCH_SHARE_FAILED},
         params={"failed_runs": RerunToken(L.SEARCH_DIR)},
         # per chunk its candidates and failed GEMMs; per GEMM its bench rows and candidates'
         # results (the original's); the failure counts
         side_files=(L.SEARCH_DATA, L.SEARCH_CHUNK_FAILED, L.SEARCH_GEMM + ".yaml",
                     L.SEARCH_GEMM + ".out", f"{L.SEARCH_DIR}/{failures.COUNTS_FILE}")),
    Rule("winners", ("winners",), True, mode="search", stage="Search phase",
         inputs={"data": Gather(L.SEARCH_SHARE, "search_share"),
                 "failed": Gather(L.SEARCH_SHARE_FAILED, "search_share")},
         outputs={"winners": L.WINNERS, "processed": L.SEARCH_PROCESSED},
         # the GEMMs whose search failed, as the original lists them, and their rows
         side_files=(L.SEARCH_FAILED, f"{L.SEARCH_DIR}/{failures.FAILED_GEMMS}")),
    Rule("configure", ("configure",), True, checkpoint=True, mode="tune",
         stage="Configuration phase",
         inputs={"gemms": L.GEMMS},
         outputs={"manifest": L.TUNING_MANIFEST},
         # what the <cfg>.sh scripts need to run a job from the workdir
         params={"arch": "arch", "backend": "backend", "options": "tune_options",
                 "workload_kind": Given("workload_kind"),
                 "workload_value": Given("workload_value")},
         companions=(L.TUNING_YAML, L.TUNING_SCRIPT, L.TUNING_JOB_CONFIG)),
    Rule("optimize", ("optimize",), False, over="cfg", mode="tune", gpu="gpu_slot",
         minutes=240, mem_mb=8000, retries="tune_retries", stage=OPTIMIZATION,
         inputs={"yaml": L.TUNING_YAML},
         outputs={"logic": Directory(L.BUILD_LOGIC)},
         params={"failed_runs": RerunToken(L.TUNING_DIR)},
         # a job that failed its last attempt is marked and listed (skipped, not rerun); the
         # failure counts; the jobs running now (running_jobs.log)
         side_files=(L.BUILD_FAILED, L.TUNING_FAILED, f"{L.TUNING_DIR}/{failures.COUNTS_FILE}",
                     f"{L.TUNING_DIR}/{running_jobs.FILE}")),
    Rule("libs", ("extract", "merge_tuned"), True, checkpoint=True, stage=BENCHMARK,
         # what libs/ is made from: the dense-search winners, or every tuning job's logic
         inputs={"winners": When("search", L.WINNERS),
                 "logic": When("tune", Gather(L.BUILD_LOGIC, "cfg"))},
         outputs={"libs": Directory(L.LIBS)}),
    Rule("create_library", ("create_library",), True, stage=BENCHMARK,
         inputs={"libs": L.LIBS},
         outputs={"tensile": Directory(L.TENSILE)}),
    Rule("bench_input", ("bench_input",), True, over="lib", stage=BENCHMARK,
         inputs={"logic": L.LIB_LOGIC},
         outputs={"bench": L.BENCH_INPUT, "verify": L.VERIFY_INPUT},
         params={"duration": "compare_duration", "rotating_mb": "rotating_mb"}),
    # one job per device over that device's share of the libraries: per library the default
    # timed, the created library timed and checked, in one process (one device context); each
    # library's files are stamped as it finishes, so a rerun redoes only the libraries without
    # a stamp (gpu_jobs.bench_libraries), and one library's failure keeps the others' results
    Rule("bench_libs", ("bench_libs",), False, over="share", gpu="gpu", stage=BENCHMARK,
         inputs={"bench": Share(L.BENCH_INPUT, "lib"),
                 "verify": When("verify", Share(L.VERIFY_INPUT, "lib")),
                 "library": L.TENSILE},
         outputs={"reference": L.BENCH_SHARE_REFERENCE, "tuned": L.BENCH_SHARE_TUNED,
                  "verify": When("verify", L.BENCH_SHARE_VERIFY)},
         side_files=(L.BENCH_REFERENCE, str(out_beside(L.BENCH_REFERENCE)), L.BENCH_TUNED,
                     str(out_beside(L.BENCH_TUNED)), L.VERIFY_TUNED,
                     str(out_beside(L.VERIFY_TUNED)), L.BENCH_FAILED)),
    # without a baseline (keep_thr 0), the default kernel's time of the GEMMs whose job failed,
    # so the headline's shares are of the whole workload's GEMM time: one job where libs/ leaves
    # a GEMM of the summary out, none where not (Layout.uncompared)
    Rule("bench_uncompared", ("bench_uncompared",), False, over="rest", condition="keep_thr == 0",
         gpu="gpu", stage=BENCHMARK,
         inputs={"summary": L.SUMMARY, "libs": L.LIBS},
         outputs={"table": L.BENCH_UNCOMPARED}),
    Rule("analyze", ("analyze",), True, stage=FILTER, done="metrics",
         inputs={"reference": Gather(L.BENCH_SHARE_REFERENCE, "share"),
                 "tuned": Gather(L.BENCH_SHARE_TUNED, "share"),
                 "verify": When("verify", Gather(L.BENCH_SHARE_VERIFY, "share")),
                 "summary": L.SUMMARY,
                 "uncompared": When("keep_thr == 0", Gather(L.BENCH_UNCOMPARED, "rest"))},
         outputs={"raw": L.RAW_RESULTS, "final": L.FINAL_RESULTS, "dashboard": L.DASHBOARD,
                  "metrics": L.METRICS},
         params={"up_thr": "up_thr", "err_thr": "err_thr"}),
    Rule("ship_final_libs", ("final_libs",), True, log="final_libs", stage=FILTER,
         inputs={"final": L.FINAL_RESULTS, "libs": L.LIBS, "workload": L.WORKLOAD},
         outputs={"libs": Directory(L.FINAL_LIBS)}),
    Rule("ship_full_libs", ("full_libs",), True, log="full_libs", stage=FILTER,
         inputs={"raw": L.RAW_RESULTS, "libs": L.LIBS},
         outputs={"libs": Directory(L.FULL_LIBS)}),
    Rule("exports", ("exports",), True, stage=FILTER,
         # beside the kept GEMMs: the workload (aiter's key of each call) and whose kernels were
         # kept: the dense search's winners (stock library indices) or geko's built library
         inputs={"final": L.FINAL_RESULTS, "workload": L.WORKLOAD,
                 "searched": When("search", L.WINNERS), "tensile": When("tune", L.TENSILE)},
         outputs={"override": L.EXPORT_OVERRIDE, "tunableop": L.EXPORT_TUNABLEOP,
                  "library_index": L.EXPORT_INDEX, "aiter": When("aiter", L.EXPORT_AITER)}),
    Rule("plots", ("report_plots",), True, optional=True, done="table",
         inputs={"summary": L.SUMMARY, "raw": L.RAW_RESULTS, "final": L.FINAL_RESULTS,
                 "metrics": L.METRICS,
                 # the tuning jobs' outputs: their logs (logs/optimize/<cfg>.log) are complete then
                 "builds": When("tune", Gather(L.BUILD_LOGIC, "cfg"))},
         outputs={"pareto": "report/pareto.png", "uplift": "report/uplift.png",
                  "roofline": "report/roofline.png", "table": L.REPORT_TABLE,
                  "raw": "report/raw_results.csv", "final": "report/final_results.csv",
                  # the GA convergence of every tuning job (read from their logs)
                  "ga_convergence": When("tune", "report/ga_convergence.png"),
                  "landing": headline.LANDING},
         params={"up_thr": "up_thr", "landing_template": Given("landing_template")}),
    Rule("prune_libs", ("prune",), False, optional=True, log="prune", gpu="gpu",
         stage="Prune phase",
         inputs={"final": L.FINAL_LIBS},
         outputs={"libs": Directory(L.PRUNED_LIBS), "report": L.PRUNE_REPORT},
         params={"tol": "prune_tol", "scale_tol": "prune_scale_tol",
                 "time_limit": "prune_time_limit"}),
    Rule("combine_libs", ("combine",), False, optional=True, gpu="gpu", mem_mb=8000,
         stage="Combine phase",
         # the other campaigns' final_libs/ and run_state.json: redone when one of them is
         inputs={"final": L.FINAL_LIBS, "workload": L.WORKLOAD, "others": Given("combine_sources")},
         outputs={"libs": Directory(L.COMBINED_LIBS), "results": L.COMBINED_RESULTS},
         params={"up_thr": "up_thr", "err_thr": "err_thr"}),
    # rocm only: integrate.smk refuses any other platform before anything runs
    Rule("integrate", ("integrate",), True, optional=True, stage="Integration phase",
         inputs={"final": L.FINAL_LIBS},
         outputs={"command": L.INTEGRATE_COMMAND}),
)
BY_NAME = {rule.name: rule for rule in RULES}

# the targets a user asks for (Snakefile): they only gather files, so they run where snakemake runs
TARGETS = ("final_libs", "search", "bench", "tune", "prune", "combine")
OWN_PROCESS = ("ingest",)  # local rules whose jobs still run in a process of their own
LOCAL_RULES = TARGETS + tuple(rule.name for rule in RULES if rule.local)


def log_name(rule: str) -> str:
    """Where a rule's job logs live under logs/ (its own name unless RULES says otherwise)."""
    return BY_NAME[rule].log_name if rule in BY_NAME else rule


def rule_log(rule: str, name: str | None = None) -> str:
    """A rule's job log (of its job ``name``, for a fan-out), where the table says it lives."""
    return L.job_log(log_name(rule), name)


def has_companions(rule: str | None) -> bool:
    return rule in BY_NAME and bool(BY_NAME[rule].companions)


def stage(rule: str) -> str:
    """The original's phase a rule's jobs belong to ("" for a target's or the plots')."""
    return BY_NAME[rule].stage if rule in BY_NAME else ""


def fill(pattern: str, given: dict) -> str:
    """``pattern`` with its placeholders that are givens filled (``{stem}``), wildcards left."""
    return _PLACEHOLDER.sub(lambda m: str(given.get(m[1], m[0])), pattern)


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _resolve(item, config: dict, given: dict):
    """One file marker for this campaign: a When's file where its condition holds (None where
    not), a Given's value, placeholders filled; a Gather or Directory stays one, filled, for the
    workflow to turn into its own (a checkpoint's function, ``directory()``)."""
    if isinstance(item, When):
        return _resolve(item.file, config, given) if holds(item.condition, config) else None
    if isinstance(item, Given):
        return given[item.name]
    if isinstance(item, Directory):
        return Directory(fill(item.pattern, given))
    if isinstance(item, Gather):
        return Gather(fill(item.pattern, given), item.over)
    if isinstance(item, Share):
        return Share(fill(item.pattern, given), item.over, item.by)
    if isinstance(item, list):
        return [_resolve(each, config, given) for each in item]
    return fill(item, given)


def inputs(rule: Rule, config: dict, given: dict) -> dict:
    """The rule's inputs by name; a conditional one is an empty list where its condition fails
    (phases read ``job.input.verify`` or ``job.input.get("searched")`` either way)."""
    found = {name: _resolve(item, config, given) for name, item in rule.inputs.items()}
    return {name: [] if value is None else value for name, value in found.items()}


def outputs(rule: Rule, config: dict, given: dict) -> dict:
    """The rule's outputs by name; one a condition leaves out is absent (phases ask
    ``getattr(job.output, "aiter", None)``)."""
    found = {name: _resolve(item, config, given) for name, item in rule.outputs.items()}
    return {name: value for name, value in found.items() if value is not None}


def params(rule: Rule, config: dict, given: dict) -> dict:
    """The rule's params by name: config values, givens, and a rerun token as a function of the
    job's wildcards."""
    return {name: _param(rule, item, config, given) for name, item in rule.params.items()}


def _param(rule: Rule, item, config: dict, given: dict):
    if isinstance(item, Given):
        return given[item.name]
    if isinstance(item, RerunToken):
        # not with retry off; until the job is retired, where retire_after is set
        return lambda wildcards: failures.rerun_token(
            item.directory, getattr(wildcards, rule.over), config["retire_after"],
            config["retry"])
    return config[item]


def resources(rule: Rule) -> dict:
    """A GPU job's resources: its device (or slot), and wall time and memory that grow with
    each attempt (cluster executors use them); a job with retries also knows its attempt (it
    skips itself after the last one). Bookkeeping has none."""
    if not rule.gpu:
        return {}
    found = {rule.gpu: 1,
             "runtime": lambda wildcards, attempt: rule.minutes * 2 ** (attempt - 1),
             "mem_mb": lambda wildcards, attempt: rule.mem_mb * attempt}
    if rule.retries:
        found["attempt"] = lambda wildcards, attempt: attempt
    return found


def retries(rule: Rule, config: dict) -> int:
    """How often a failed job is tried again (none with retry off)."""
    return config[rule.retries] if rule.retries and config["retry"] else 0


def check_rules(workflow_rules, config: dict, given: dict) -> None:
    """The workflow's rules are exactly the table's (the Snakefile asks once its rules are read):
    the same names, checkpoints where the table has them, and each rule's outputs (names,
    patterns, directories), log, and the names of its inputs and params the table's; so a rule
    added to a .smk file without its entry here, or one whose files differ from it, fails at
    once."""
    workflow_rules = list(workflow_rules)
    names = {rule.name for rule in workflow_rules}
    declared = set(BY_NAME) | set(TARGETS)
    if names != declared:
        raise RuntimeError("workflow rules and geko_lib.campaign.rules.RULES differ: "
                           f"not declared {sorted(names - declared)}, "
                           f"declared but absent {sorted(declared - names)}")
    for rule in workflow_rules:
        if rule.name in BY_NAME:
            _check_rule(rule, BY_NAME[rule.name], config, given)


def _check_rule(rule, entry: Rule, config: dict, given: dict) -> None:
    from snakemake.io import is_flagged, strip_wildcard_constraints as bare

    found = {name: (bare(str(item)), bool(item.is_directory))
             for name, item in rule.output.items()}
    expected = {name: (pattern_of(item), isinstance(item, Directory))
                for name, item in outputs(entry, config, given).items()}
    problems = []
    if found != expected or len(rule.output) != len(found):
        problems.append(f"outputs {[str(item) for item in rule.output]} "
                        f"({', '.join(found) or 'unnamed'}), the table's {expected}")
    for what, names, declared in (("inputs", rule.input, entry.inputs),
                                  ("params", rule.params, entry.params)):
        unpacked = any(is_flagged(item, "unpack") for item in names)  # named by a function
        if list(names.keys()) != list(declared) and not unpacked:
            problems.append(f"{what} {', '.join(names.keys()) or 'unnamed'}, the table's "
                            f"{', '.join(declared) or 'none'}")
    logs = [bare(str(item)) for item in rule.log]
    if logs != [entry.log_pattern()]:
        problems.append(f"log {logs}, the table's {entry.log_pattern()}")
    if bool(rule.is_checkpoint) != entry.checkpoint:
        problems.append("a checkpoint" if rule.is_checkpoint else "not a checkpoint")
    if problems:
        raise RuntimeError(f"workflow rule {rule.name} differs from "
                           f"geko_lib.campaign.rules.RULES: {'; '.join(problems)}")
