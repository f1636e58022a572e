"""The ``geko`` command: the original tool's flags, run as a Snakemake workflow.

    geko --search --workload-log app.yaml -d 0,1 --workdir run1
    geko --bench --inline 1024 1024 1 1024 B B S N T
    geko --search --list sizes.yaml --platform sim -- --dry-run
    geko --tune --arch gfx942 --backend tensile -n 2 --workload-log app.yaml -d 0,1
    geko status run1 [--json]                                   (where a campaign stands)
    geko coverage --library run1/final_libs --workload-log app.yaml [--timings CSV] [--json]

Arguments are validated before anything is written; then a config file is written into the
workdir and ``snakemake`` runs the target (``bench``, ``search`` or ``final_libs``) there, showing
its own progress. Anything after ``--`` goes to snakemake unchanged.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import yaml

from . import files, workload
from .analysis import summary_lines
from .errors import GekoError
from .gemm import GemmError

REPO_ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO_ROOT / "workflow" / "Snakefile"

log = logging.getLogger("geko")


class UsageError(GekoError):
    pass


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geko", description="Find faster GEMM kernels for the shapes an application runs.",
        epilog="Arguments after -- are passed to snakemake (e.g. -- --dry-run). Other "
               "commands: `geko status WORKDIR` (where a campaign stands), `geko coverage "
               "--library DIR --workload LOG` (which logged GEMMs a library serves); "
               "`geko status -h` for their options.")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--search", action="store_true",
                      help="dense search of the library's existing kernels (minutes)")
    mode.add_argument("--bench", action="store_true", help="benchmark the workload only")
    mode.add_argument("--tune", action="store_true",
                      help="generate new kernels with a genetic algorithm (hours)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--workload-log", metavar="PATH",
                     help="hipBLASLt HIPBLASLT_LOG_MASK=64 log (.yaml or .csv) or MASK=32 lines")
    src.add_argument("--list", metavar="PATH", help="size-list generator YAML")
    src.add_argument("--inline", nargs=9, metavar="X",
                     help="M N batch K DataType DestDataType ComputeDataType transA transB, "
                          "e.g. 1024 1024 1 1024 B B S N T")
    p.add_argument("-d", "--devices", default="0",
                   help="comma-separated device ids, e.g. 0,1,2,3 (default 0)")
    p.add_argument("--workdir", help="campaign directory (default geko_<timestamp>)")
    p.add_argument("--keep_thr", type=float,
                   help="percent of GEMM time a GEMM needs to be tuned (default 0.1 for "
                        "--search, 0 for --bench and --tune)")
    p.add_argument("--up_thr", type=float, default=1.03,
                   help="minimum speed-up ratio to keep a kernel (default 1.03)")
    p.add_argument("--err_thr", type=float, default=0.03,
                   help="maximum verified relative error of a kept kernel (default 0.03)")
    p.add_argument("--duration", type=float, default=0.5,
                   help="seconds per phase for --bench measurements (default 0.5)")
    p.add_argument("--benchmark-duration", type=float, default=1.0,
                   help="seconds per phase for the reference vs tuned comparison (default 1.0)")
    p.add_argument("--platform", choices=("sim", "rocm", "cuda"), default="sim",
                   help="hardware platform (default sim: an analytic model, no GPU)")
    p.add_argument("--hipblaslt", metavar="PATH",
                   help="built hipBLASLt checkout for --platform rocm (wins over "
                        "GEKO_HIPBLASLT_PATH and the config's rocm.hipblaslt_path)")
    p.add_argument("--arch", help="target architecture: gfx950, gfx942 (+ CU variants), h200 "
                                   "(required for --tune; default gfx950 otherwise)")
    p.add_argument("--backend", choices=("ductile", "tensile"), default="ductile",
                   help="tuning backend for --tune: ductile (genetic algorithm, default) or "
                        "tensile (exhaustive)")
    p.add_argument("-n", "--n_slots", type=int, default=4,
                   help="tuning jobs per device for --tune (default 4)")
    p.add_argument("--lock-dir", metavar="DIR",
                   help="directory of the per-(device, slot) lock files (default: a host-wide "
                        "temp dir, shared by every geko run of this user)")
    p.add_argument("--cores", type=int, default=max(os.cpu_count() or 1, 1),
                   help="CPU cores snakemake may use")
    p.add_argument("--no-verify", action="store_true", help="skip the numerical check")
    p.add_argument("-v", "--verbose", type=int, choices=(0, 1, 2), default=1,
                   help="0 warnings, 1 info, 2 debug")
    return p


def parse_devices(text: str) -> list[int]:
    try:
        devices = [int(part) for part in text.split(",") if part.strip() != ""]
    except ValueError:
        raise UsageError(f"--devices: expected comma-separated integers, got {text!r}") from None
    if not devices or any(d < 0 for d in devices) or len(set(devices)) != len(devices):
        raise UsageError(f"--devices: expected distinct non-negative ids, got {text!r}")
    return devices


def build_config(args) -> tuple[dict, str]:
    """(workflow config, target) from validated arguments."""
    if args.tune and not args.arch:
        raise UsageError("--tune needs --arch (the tuning YAMLs are written for one architecture)")
    if args.n_slots < 1:
        raise UsageError(f"--n_slots: must be >= 1, got {args.n_slots}")
    keep_thr = args.keep_thr if args.keep_thr is not None else (0.1 if args.search else 0.0)
    for flag, value in (("--keep_thr", keep_thr), ("--up_thr", args.up_thr),
                        ("--err_thr", args.err_thr), ("--duration", args.duration),
                        ("--benchmark-duration", args.benchmark_duration)):
        if value < 0 or (flag != "--keep_thr" and value == 0):
            raise UsageError(f"{flag}: must be {'>= 0' if flag == '--keep_thr' else '> 0'}, "
                             f"got {value}")
    if keep_thr > 100:
        raise UsageError(f"--keep_thr is a percent (0-100), got {keep_thr}")
    config = {
        "platform": args.platform,
        "arch": args.arch or ("h200" if args.platform == "cuda" else "gfx950"),
        "devices": parse_devices(args.devices), "mode": "tune" if args.tune else "search",
        "backend": args.backend, "n_slots": args.n_slots,
        "workload_log": "", "workload_list": "", "workload_inline": "",
        "keep_thr": keep_thr, "up_thr": args.up_thr, "err_thr": args.err_thr,
        "bench_duration": args.duration, "compare_duration": args.benchmark_duration,
        "verify": not args.no_verify,
    }
    if args.lock_dir:
        config["lock_dir"] = str(Path(args.lock_dir).resolve())
    if args.hipblaslt:
        if args.platform != "rocm":
            raise UsageError("--hipblaslt is for --platform rocm")
        config["rocm"] = {"hipblaslt_path": str(Path(args.hipblaslt).resolve())}
        from .platforms import PlatformError
        from .platforms.rocm.install import locate

        try:
            locate(config, environ={})  # a missing or unbuilt checkout is refused up front
        except PlatformError as exc:
            raise UsageError(f"--hipblaslt: {exc}") from None
    if args.inline:
        workload.read_inline(args.inline)  # validates every token before anything is written
        config["workload_inline"] = " ".join(args.inline)
    else:
        kind, path = ("log", args.workload_log) if args.workload_log else ("list", args.list)
        path = Path(path).resolve()
        if not path.is_file():
            raise UsageError(f"--{'workload-log' if kind == 'log' else 'list'}: "
                             f"{path} does not exist")
        (workload.read if kind == "log" else workload.read_list)(path)  # fail fast on bad input
        config[f"workload_{kind}"] = str(path)
    workdir = args.workdir or dt.datetime.now().strftime("geko_%Y%m%d_%H%M%S_%f")
    config["workdir"] = str(Path(workdir).resolve())
    target = "bench" if args.bench else "final_libs"
    return config, target


def snakemake_command(config_path: Path, config: dict, target: str, cores: int,
                      extra: list[str]) -> list[str]:
    # the target goes first: options that take several values would swallow it
    return [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), target,
            "--configfile", str(config_path), "--rerun-triggers", "mtime", "input", "params",
            "--cores", str(cores), "--resources", f"gpu={len(config['devices'])}",
            f"gpu_slot={len(config['devices']) * config['n_slots']}",
            "--scheduler", "greedy", "--rerun-incomplete", "--show-failed-logs", "--keep-going",
            *extra]


def child_environment(config: dict) -> dict:
    """snakemake's environment: ``--hipblaslt`` must win over a GEKO_HIPBLASLT_PATH the shell
    already has, so the flag's path is passed on in that variable too."""
    env = dict(os.environ)
    path = (config.get("rocm") or {}).get("hipblaslt_path")
    if path:
        env["GEKO_HIPBLASLT_PATH"] = path
    return env


def report(workdir: Path) -> None:
    metrics = workdir / "results" / "metrics.json"
    if metrics.is_file():
        for line in summary_lines(json.loads(metrics.read_text())):
            print(f"geko: {line}")
        print(f"geko: kept kernels in {workdir / 'final_libs'}")


SUBCOMMANDS = ("status", "coverage")


def status_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geko status",
        description="Where a running or finished campaign stands, from its workdir alone: jobs "
                    "done/running/failed, best uplift so far, busy devices.")
    p.add_argument("workdir", help="the campaign's workdir")
    p.add_argument("--config", metavar="PATH",
                   help="the config the run used (default: WORKDIR/geko_config.yaml, written by "
                        "the geko command; without one, devices come from the job logs)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def coverage_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geko coverage",
        description="Which GEMMs of an application's log a library serves (exact type and "
                    "size), with their share of calls and of GEMM time.")
    p.add_argument("--library", required=True, metavar="PATH",
                   help="library logic: a directory (e.g. a campaign's final_libs) or one file")
    p.add_argument("--workload", "--workload-log", dest="workload", required=True,
                   metavar="LOG", help="the application's GEMM log (any workload format)")
    p.add_argument("--timings", metavar="CSV",
                   help="per-GEMM times (a campaign's baseline/workload.csv or summary.csv: GEMM "
                        "identity and us); default: the sim model's estimate")
    p.add_argument("--arch", help="architecture of the sim model estimate (default: the "
                                  "library's, else gfx950)")
    p.add_argument("--top", type=int, default=30,
                   help="GEMM rows to list, largest time first (0 = all; default 30)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def _dump_json(data) -> str:
    from .analysis import _finite

    return json.dumps(_finite(data), indent=2, allow_nan=False)


def _print(text: str) -> None:
    """Print a report; a reader that stops early (``| head``) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def status_main(argv: list[str]) -> int:
    from . import status

    args = status_parser().parse_args(argv)
    try:
        report = status.collect(args.workdir, args.config)
    except status.StatusError as exc:
        print(f"geko status: error: {exc}", file=sys.stderr)
        return 2
    _print(_dump_json(report) if args.json else status.format_text(report))
    return 0


def coverage_main(argv: list[str]) -> int:
    from . import coverage
    from .library import LibraryError

    args = coverage_parser().parse_args(argv)
    try:
        report = coverage.coverage(args.library, args.workload, timings=args.timings,
                                   arch=args.arch)
    except (coverage.CoverageError, workload.WorkloadError, GemmError, LibraryError) as exc:
        print(f"geko coverage: error: {exc}", file=sys.stderr)
        return 2
    _print(_dump_json(report) if args.json else coverage.format_text(report, top=args.top))
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return (status_main if argv[0] == "status" else coverage_main)(argv[1:])
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    args = parser().parse_args(own)
    logging.basicConfig(level=[logging.WARNING, logging.INFO, logging.DEBUG][args.verbose],
                        format="GEKO:%(levelname)s %(message)s")
    try:
        if not SNAKEFILE.is_file():
            raise UsageError(f"workflow not found at {SNAKEFILE}: install geko from its source "
                             "checkout (pip install -e .)")
        config, target = build_config(args)
    except (UsageError, workload.WorkloadError, GemmError) as exc:
        print(f"geko: error: {exc}", file=sys.stderr)
        return 2
    workdir = Path(config["workdir"])
    config_path = files.write_text(workdir / "geko_config.yaml",
                                   yaml.safe_dump(config, sort_keys=False))
    command = snakemake_command(config_path, config, target, args.cores, extra)
    log.info("running: %s", " ".join(command))
    code = subprocess.call(command, env=child_environment(config))
    if code == 0 and "--dry-run" not in extra and "-n" not in extra:
        report(workdir)
    return code


if __name__ == "__main__":
    sys.exit(main())
