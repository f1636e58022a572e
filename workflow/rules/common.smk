# Config validation, path resolution and the input functions of data-dependent fan-out.
import os
import sys

from snakemake.utils import validate

from geko_lib import config_schema, path_errors, phases, resources, workload
from geko_lib.bench_formats import rows as bench_rows
from geko_lib.campaign import layout, rules as table


# --config values typed as a config file types them (snakemake hands lists and sections over
# as text); cluster jobs get the same --config items, so they type them alike.
config_schema.typed_overrides(config, workflow.config_settings.config_args)
# A refused value is named in one line as the geko command names it (key, value, what is
# allowed), not in a schema dump; the same check as the command (NaN too: no bound catches it).
_PROBLEM = config_schema.first_problem(config_schema.yaml_booleans(config))
if _PROBLEM:
    print(f"geko: error: {config_schema.problem_line(*_PROBLEM)}", file=sys.stderr)
    sys.exit(2)
validate(config, "../schemas/config.schema.yaml")  # fills in the defaults of the schema

# Paths in the config are relative to where snakemake was started, before `workdir:` moves us.
LAUNCH_DIR = Path(os.getcwd())


def launch_path(value, key="path"):
    """A config path from where snakemake was started; a symlink loop or a name that is not
    UTF-8 is refused naming the config key (geko_lib.path_errors), not with a traceback."""
    return str(path_errors.resolve(LAUNCH_DIR / value, f"config {key}")) if value else ""


def refused_in_one_line(check, *args):
    """Run one of geko's path checks; a refusal is geko's one line, exit 2."""
    try:
        check(*args)
    except path_errors.PathError as exc:
        print(f"geko: error: {exc}", file=sys.stderr)
        sys.exit(2)


WORKDIR = launch_path(config["workdir"], "workdir")
# a workdir that is a file, lies under one or is not writable
refused_in_one_line(path_errors.check_directory, WORKDIR, "config workdir")
MODE = config["mode"]
WORKLOAD_SOURCES = {
    kind: config[f"workload_{kind}"]
    for kind in workload.SOURCE_KINDS
    if config[f"workload_{kind}"]
}
if len(WORKLOAD_SOURCES) != 1:
    raise ValueError(
        "config: set exactly one of "
        f"{', '.join('workload_' + k for k in workload.SOURCE_KINDS)} "
        f"(set: {', '.join('workload_' + k for k in WORKLOAD_SOURCES) or 'none'})"
    )
(WORKLOAD_KIND, WORKLOAD_VALUE), = WORKLOAD_SOURCES.items()
if WORKLOAD_KIND != "inline":
    # from the launch directory, else a bundled workload (config/workloads/ of the checkout or
    # of the installed package: the default is one)
    WORKLOAD_VALUE = str(resources.find(WORKLOAD_VALUE, LAUNCH_DIR)
                         or launch_path(WORKLOAD_VALUE, f"workload_{WORKLOAD_KIND}"))
    refused_in_one_line(path_errors.check_rule_file, WORKLOAD_VALUE,
                        f"config workload_{WORKLOAD_KIND}")
    if not Path(WORKLOAD_VALUE).is_file():
        raise ValueError(f"config: workload_{WORKLOAD_KIND} {WORKLOAD_VALUE} does not exist")
    config[f"workload_{WORKLOAD_KIND}"] = WORKLOAD_VALUE  # resolved: jobs run in the workdir


def platform_exports():
    """The exports rule's files where the campaign's platform has valid exports (its
    capabilities; cuda has none: both formats name hipBLASLt kernels)."""
    from geko_lib import platforms

    return [table.BY_NAME["exports"].output] if platforms.capabilities(config).exports else []


def combine_workdirs():
    """The combine_with workdirs, absolute (the rules run in this campaign's workdir)."""
    others = [Path(launch_path(str(Path(other).expanduser()), "combine_with"))
              for other in config.get("combine_with") or []]
    for other in others:  # each is a rule's input
        refused_in_one_line(path_errors.check_rule_file, other, "config combine_with")
    return others


def combine_sources():
    """The final_libs/ and run_state.json of every combine_with workdir, so the combination is
    redone when another campaign is."""
    return [str(root / name) for root in combine_workdirs()
            for name in (layout.FINAL_LIBS, layout.RUN_STATE)]


wildcard_constraints:
    chunk=r"gemms_\d+(-\d+)?",
    cfg=r"[A-Z0-9]+_[NT]{2}_\d+",
    lib=r"[^/]+",
    part=r"part_\d+_of_\d+",
    rest=layout.UNCOMPARED,
    share=r"part_\d+_of_\d+",
    search_share=r"part_\d+_of_\d+",


def search_chunks():
    checkpoints.search_configure.get()
    return layout.Layout(".").search_chunks()  # jobs run in the workdir


def search_shares():
    """The search's jobs: one per device over its share of the chunks, no more jobs than
    chunks (geko_lib.gpu_jobs.search_share)."""
    checkpoints.search_configure.get()
    return layout.Layout(".").search_shares(len(config["devices"]))


def share_chunks(share):
    checkpoints.search_configure.get()
    return layout.Layout(".").share_chunks(share)


def search_share_outputs(wildcards):
    return expand(layout.SEARCH_SHARE, search_share=search_shares())


def tuning_configs():
    checkpoints.configure.get()
    return layout.Layout(".").tuning_configs()


def optimize_outputs(wildcards):
    return expand(layout.BUILD_LOGIC, cfg=tuning_configs())


def phase_jobs(wildcards):
    """Every GPU job of the phase, so a deleted output is redone by a plain rerun."""
    return search_share_outputs(wildcards) if MODE == "search" else optimize_outputs(wildcards)


def library_stems():
    checkpoints.libs.get()
    return layout.Layout(".").lib_stems()


def lib_shares():
    """The comparison's jobs: one per device over its share of the libraries, no more jobs
    than libraries (geko_lib.gpu_jobs.bench_libraries)."""
    checkpoints.libs.get()
    return layout.Layout(".").lib_shares(len(config["devices"]))


def share_libs(share):
    checkpoints.libs.get()
    return layout.Layout(".").share_libs(share)


def uncompared():
    """bench_uncompared's one job where libs/ leaves a GEMM of the summary out (keep_thr 0)."""
    checkpoints.libs.get()
    return layout.Layout(".").uncompared()


def baseline_parts():
    """The baseline fans out like the search: one part per device, but never more parts than
    GEMMs (a part without work would be a GPU job benchmarking nothing), GEMMs dealt
    round-robin, merged in workload order."""
    checkpoints.ingest.get()
    return layout.Layout(".").baseline_parts(len(config["devices"]))  # jobs run in the workdir


# --- the rule table's entries as Snakemake's directives (geko_lib.campaign.rules) -------------

# what the table's Given values are for this campaign
GIVEN = {
    "workload_source": [] if WORKLOAD_KIND == "inline" else [WORKLOAD_VALUE],
    "workload_kind": WORKLOAD_KIND,
    "workload_value": WORKLOAD_VALUE,
    "model_options": workload.model_config.options(config) if WORKLOAD_KIND == "model" else {},
    "stem": layout.benchmark_stem(WORKLOAD_KIND, WORKLOAD_VALUE),
    "baseline_duration": bench_rows.baseline_duration(config),
    "combine_sources": combine_sources(),
    "landing_template": str(Path(workflow.basedir) / "report" / "workflow.rst"),
}

# the values each fan-out gathers over, once its checkpoint ran
FANNED = {"part": baseline_parts, "chunk": search_chunks, "cfg": tuning_configs,
          "lib": library_stems, "rest": uncompared, "share": lib_shares,
          "search_share": search_shares}
# the values of a fan-out that one share's job holds, by what the share is of
SHARED = {"lib": share_libs, "chunk": share_chunks}


def _directive(value):
    """A file of the table as Snakemake takes it: a Gather as a function of the checkpoint that
    fans out, a Directory as directory()."""
    if isinstance(value, table.Gather):
        values = FANNED[value.over]
        return lambda wildcards: expand(value.pattern, **{value.over: values()})
    if isinstance(value, table.Share):  # the libraries or chunks of the job's share
        members = SHARED[value.over]
        return lambda wildcards: expand(value.pattern,
                                        **{value.over: members(getattr(wildcards, value.by))})
    if isinstance(value, table.Directory):
        return directory(value.pattern)
    return value


def rule_input(name):
    found = table.inputs(table.BY_NAME[name], config, GIVEN)
    return {key: _directive(value) for key, value in found.items()}


def rule_output(name, shown=None):
    """The rule's outputs; those named in ``shown`` wrapped for `snakemake --report`."""
    found = table.outputs(table.BY_NAME[name], config, GIVEN)
    return {key: shown[key](_directive(value)) if shown and key in shown else _directive(value)
            for key, value in found.items()}


def rule_params(name):
    return table.params(table.BY_NAME[name], config, GIVEN)


def rule_resources(name):
    return table.resources(table.BY_NAME[name])


def rule_retries(name):
    return table.retries(table.BY_NAME[name], config)


def rule_log(name):
    return table.BY_NAME[name].log_pattern()


def in_process(name, input, output, params, wildcards, threads, resources, log):
    """A ``run:`` rule's job: its phase in this process (geko_lib.phases.run_in_snakemake)."""
    job = phases.Job(name, input, output, config, params, wildcards, list(log), resources,
                     threads=threads)
    phases.run_in_snakemake(job, table.BY_NAME[name].phase(MODE))


def rule_script(name):
    """The workflow script of the rule's phase (workflow/scripts/<phase>.py, one line each)."""
    return f"../scripts/{table.BY_NAME[name].phase(MODE)}.py"
