"""The execution scripts beside the tuning YAMLs: ``optimizations/<TYPE>_<n>.sh``.

The original writes one shell script per tuning YAML that runs that one job by hand. geko's
runs exactly what the workflow's ``optimize`` rule runs for that YAML (a leased device slot, the
stall watchdog, the GA resuming from its checkpoint, the platform's tool command lines), through
Snakemake with that single target, so its results land where the next workflow run finds them
(``build_<TYPE>_<n>/3_LibraryLogic``) and Snakemake's records stay consistent. The scripts read
``optimizations/job_config.json``: the campaign's config with absolute paths (the workdir, the
workload source), written with them by the configure step. Extra arguments go to Snakemake
(``./BBS_TN_0.sh --dry-run``, ``--forcerun``).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from . import layout
from .. import files
from ..workload import SOURCE_KINDS


def job_config(config: dict, workdir: Path, workload_kind: str, workload_value: str) -> dict:
    """The campaign config with the paths a script started in the workdir needs absolute."""
    out = dict(config)
    out["workdir"] = str(Path(workdir).resolve())
    for kind in SOURCE_KINDS:
        out[f"workload_{kind}"] = workload_value if kind == workload_kind else ""
    return out


def script_text(cfg: str, python: str, snakefile: Path) -> str:
    target = layout.fill(layout.BUILD_LOGIC, cfg=cfg)
    argv = [python, "-m", "snakemake", "--snakefile", str(snakefile), "--configfile",
            layout.TUNING_JOB_CONFIG, "--cores", "1", "--resources", "gpu_slot=1",
            "--rerun-triggers", "mtime", "input", "params"]
    return "\n".join([
        "#!/bin/sh",
        f"# Tuning job {cfg} by hand: what the workflow's optimize rule runs for {cfg}.yaml",
        f"# (leased device slot, stall watchdog, GA checkpoint); results: {target}",
        "# Extra arguments go to snakemake (e.g. --dry-run, --forcerun).",
        'cd "$(dirname "$0")/.." || exit 1',
        f'exec {shlex.join(argv)} "$@" -- {shlex.quote(target)}', ""])


def write_scripts(configs: list[str], config: dict, workdir: Path, python: str,
                  snakefile: Path) -> list[Path]:
    """``optimizations/job_config.json`` and one executable ``<cfg>.sh`` per tuning YAML."""
    workdir = Path(workdir)
    files.write_json(workdir / layout.TUNING_JOB_CONFIG, config)
    paths = []
    for cfg in configs:
        path = files.write_text(workdir / layout.fill(layout.TUNING_SCRIPT, cfg=cfg),
                                script_text(cfg, python, snakefile))
        path.chmod(0o755)
        paths.append(path)
    return paths
