# Config validation, path resolution and the input functions of data-dependent fan-out.
import os

from snakemake.utils import validate


validate(config, "../schemas/config.schema.yaml")

# Paths in the config are relative to where snakemake was started, before `workdir:` moves us.
LAUNCH_DIR = Path(os.getcwd())


def launch_path(value):
    return str((LAUNCH_DIR / value).resolve()) if value else ""


WORKDIR = launch_path(config["workdir"])
WORKLOAD_SOURCES = {
    kind: config[f"workload_{kind}"]
    for kind in ("log", "list", "inline")
    if config[f"workload_{kind}"]
}
if len(WORKLOAD_SOURCES) != 1:
    raise ValueError(
        "config: set exactly one of workload_log, workload_list, workload_inline "
        f"(set: {', '.join('workload_' + k for k in WORKLOAD_SOURCES) or 'none'})"
    )
(WORKLOAD_KIND, WORKLOAD_VALUE), = WORKLOAD_SOURCES.items()
if WORKLOAD_KIND != "inline":
    WORKLOAD_VALUE = launch_path(WORKLOAD_VALUE)
    if not Path(WORKLOAD_VALUE).is_file():
        raise ValueError(f"config: workload_{WORKLOAD_KIND} {WORKLOAD_VALUE} does not exist")


wildcard_constraints:
    chunk=r"gemms_\d+(-\d+)?",
    lib=r"[^/]+",


def search_chunks():
    chunk_dir = checkpoints.search_configure.get().output[0]
    return sorted(p.stem for p in Path(chunk_dir).glob("gemms_*.yaml"))


def search_chunk_outputs(wildcards):
    return expand("search/data/{chunk}.csv", chunk=search_chunks())


def library_stems():
    libs_dir = checkpoints.extract.get().output[0]
    return sorted(p.stem for p in Path(libs_dir).glob("*.yaml"))


def per_library(pattern):
    return lambda wildcards: expand(pattern, lib=library_stems())
