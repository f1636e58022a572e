# Config validation, path resolution and the input functions of data-dependent fan-out.
import os
import sys

from snakemake.utils import validate

from geko_lib import config_schema, failures, path_errors, resources, workload
from geko_lib.bench import rows as bench_rows, text as bench_text
from geko_lib.campaign import layout


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

    return ["exports/hipblaslt_tuning_override.txt"] if platforms.capabilities(config).exports else []


def aiter_export():
    """aiter's tuned CSV, as a named output of rule exports, where the platform's capabilities
    list it (rocm; not sim, whose indices are the model's, nor cuda)."""
    from geko_lib import platforms

    listed = "aiter_tuned" in platforms.capabilities(config).exports
    return {"aiter": layout.EXPORT_AITER} if listed else {}


def export_sources():
    """What the exports rule reads beside the kept GEMMs: the workload (aiter's key of each
    call) and whose kernels were kept: the dense search's winners (stock library indices) or
    geko's built library (tune)."""
    index_of = {"searched": layout.WINNERS} if MODE == "search" else \
        {"tensile": layout.TENSILE}
    return {"workload": layout.WORKLOAD, **index_of}


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


def runtime(minutes):
    """Minutes of wall time for a job, doubling with each retry (cluster executors use it)."""
    return lambda wildcards, attempt: minutes * 2 ** (attempt - 1)


def mem_mb(megabytes):
    return lambda wildcards, attempt: megabytes * attempt


wildcard_constraints:
    chunk=r"gemms_\d+(-\d+)?",
    cfg=r"[A-Z0-9]+_[NT]{2}_\d+",
    lib=r"[^/]+",
    part=r"part_\d+_of_\d+",


def search_chunks():
    checkpoints.search_configure.get()
    return layout.Layout(".").search_chunks()  # jobs run in the workdir


def search_chunk_outputs(wildcards):
    return expand(layout.SEARCH_DATA, chunk=search_chunks())


def search_chunk_failures(wildcards):
    return expand(layout.SEARCH_CHUNK_FAILED, chunk=search_chunks())


def tuning_configs():
    checkpoints.configure.get()
    return layout.Layout(".").tuning_configs()


def optimize_outputs(wildcards):
    return expand(layout.BUILD_LOGIC, cfg=tuning_configs())


def phase_outputs(wildcards):
    """What libs/ is made from: the dense-search winners, or every tuning job's logic."""
    return [layout.WINNERS] if MODE == "search" else optimize_outputs(wildcards)


def phase_jobs(wildcards):
    """Every GPU job of the phase, so a deleted output is redone by a plain rerun."""
    return search_chunk_outputs(wildcards) if MODE == "search" else optimize_outputs(wildcards)


def library_stems():
    checkpoints.libs.get()
    return layout.Layout(".").lib_stems()


def per_library(pattern):
    return lambda wildcards: expand(pattern, lib=library_stems())
