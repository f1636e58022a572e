#!/usr/bin/env python3
"""Test stand-in for TensileLite's tuning command (no AMD GPU here).

Where it stands in a fake hipBLASLt checkout: ``tensilelite/Tensile/bin/Tensile`` (the bin
form, run as ``python tensilelite/Tensile/bin/Tensile <yaml> <build> --prebuilt-client <client>
--client-lock <lock>``) and, through the module dispatcher ``tensilelite/tensilelite/__main__.py``,
``python -m tensilelite run <yaml> <build> --client-lock <lock>``.

It answers the way TensileLite does, from the sim platform's model instead of a GPU:
- reads the tuning YAML (GlobalParameters Device, ProblemType, fork parameters and groups,
  ProblemSizes, Backend, LibraryLogic ArchitectureName);
- writes ``<build>/1_BenchmarkProblems/<problem>/``, ``<build>/2_BenchmarkData/<name>.csv`` and
  ``<build>/3_LibraryLogic/<schedule>_<problem>.yaml`` in real library-logic list layout, the
  best kernel per size picked deterministically by the model;
- for ``Backend: Ductile`` runs the GA generation by generation, prints Ductile's framed
  per-generation table (``n_gen | n_evals | diversity | f_avg | f_max``) to stdout, checkpoints
  to ``<build>/step-00__ductile.checkpoint`` and resumes from it;
- holds ``--client-lock`` (an flock) while it "times" a generation;
- checks ``--prebuilt-client`` is an executable when given.

Test hooks (environment):
- ``GEKO_REPLAY_TENSILE_FAIL=start``: exit 2 before any work;
  ``GEKO_REPLAY_TENSILE_FAIL=gen:N``: exit 3 right after generation N (its checkpoint stays).
- ``GEKO_REPLAY_RECORD=<file>``: append one JSON line per call (argv, cwd, PYTHONPATH, Device,
  the visible-devices variables).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import sys
from pathlib import Path

import numpy as np
import yaml

from geko_lib.gemm import GemmProblem
from geko_lib.library import logic
from geko_lib.platforms import sim
from geko_lib.tuning import ga
from geko_lib.tuning import optimize as tune
from geko_lib.tuning.problem import TuningConfig

FAIL_ENV = "GEKO_REPLAY_TENSILE_FAIL"
RECORD_ENV = "GEKO_REPLAY_RECORD"
CHECKPOINT = "step-00__ductile.checkpoint"
STATS = ("n_gen", "n_evals", "diversity", "f_avg", "f_max")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="Tensile")
    parser.add_argument("ConfigFile")
    parser.add_argument("OutputPath")
    parser.add_argument("--prebuilt-client", default=None)
    parser.add_argument("--client-lock", default=None)
    parser.add_argument("-d", "--device", type=int, default=0)
    return parser.parse_args(argv)


def record_call(argv, device) -> None:
    path = os.environ.get(RECORD_ENV)
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps({"tool": "Tensile", "argv": list(argv), "cwd": os.getcwd(),
                                     "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                                     "device": device, "visible": visible_devices()}) + "\n")


def visible_devices() -> dict:
    """The visible-devices variables the tuner was started with (as HIP would read them)."""
    return {var: os.environ[var] for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                             "CUDA_VISIBLE_DEVICES") if var in os.environ}


@contextlib.contextmanager
def client_lock(path):
    """TensileLite serializes client runs (GPU timing) on this lock; compilation overlaps."""
    if not path:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def print_stats(stats: dict) -> None:
    """One generation as Ductile prints it: a header row and a value row between rules."""
    cells = {k: (f"{v:.3f}" if isinstance(v, float) else str(v)) for k, v in stats.items()}
    widths = {k: max(len(k), len(c)) + 2 for k, c in cells.items()}
    header = "|".join(k.center(widths[k]) for k in cells)
    values = "|".join(c.center(widths[k]) for k, c in cells.items())
    print("=" * len(header))
    print(header)
    print("-" * len(header))
    print(values)
    print("=" * len(header), flush=True)


def fail_after_generation() -> int | None:
    text = os.environ.get(FAIL_ENV, "")
    return int(text.split(":", 1)[1]) if text.startswith("gen:") else None


def make_evaluate(cfg: TuningConfig, arch: sim.SimArch, lock_path):
    problems = [GemmProblem(cfg.gemm_type, *size) for size in cfg.sizes]

    def evaluate(batch: list[dict]) -> np.ndarray:
        cat = sim.solutions_catalogue(cfg.gemm_type,
                                      [sim.tuned_solution(cfg.gemm_type, p) for p in batch])
        rows = np.arange(len(cat))
        with client_lock(lock_path):
            return np.array([p.flops / sim.model_us(arch, p, cat, rows) / 1e3 for p in problems])

    return evaluate


def ductile_progress(stop_after: int | None):
    def progress(row: dict) -> None:
        generation = int(row["generation"]) + 1  # Ductile counts generations from 1
        scores = [s for s in row["best_scores"] if s > 0]
        print_stats({"n_gen": generation, "n_evals": int(row["n_evals"]),
                     "diversity": round(float(row["batch"]) / max(int(row["n_evals"]), 1), 3),
                     "f_avg": float(row["mean_fitness"]),
                     "f_max": float(np.mean(scores)) if scores else -1.0})
        if stop_after is not None and generation >= stop_after:
            print(f"replay: failing after generation {generation} ({FAIL_ENV})", flush=True)
            raise SystemExit(3)

    return progress


def search(cfg: TuningConfig, space: ga.Space, evaluate, out: Path) -> ga.SearchResult:
    if cfg.backend.lower() == "tensile":
        return ga.exhaustive(space, evaluate)
    checkpoint = out / CHECKPOINT
    if checkpoint.is_file():
        print(f"DuctileBackend: Found existing checkpoint at {checkpoint}, resuming", flush=True)
    conf = cfg.backend_config
    return ga.run(space, evaluate, checkpoint=checkpoint,
                  progress=ductile_progress(fail_after_generation()),
                  pop_size=max(2, min(int(conf.get("pop_size", 512)), space.size)),
                  n_gen=int(conf.get("n_gen", 30)), soo=bool(conf.get("soo", False)))


def write_outputs(cfg: TuningConfig, arch: sim.SimArch, result: ga.SearchResult, out: Path,
                  config_text: str) -> Path:
    problem = cfg.gemm_type.tensile_problem_name
    bench = out / "1_BenchmarkProblems" / f"{problem}_00"
    bench.mkdir(parents=True, exist_ok=True)
    (bench / f"{cfg.name}.yaml").write_text(config_text)
    template = logic.LibraryLogic(
        version={"MinimumRequiredVersion": "5.0.0"}, schedule_name=arch.schedule_name,
        architecture=arch.name, device_names=list(arch.device_names),
        problem_type=logic.problem_type_for(cfg.gemm_type), solutions=[])
    lib = tune.best_library(cfg, result, template,
                            lambda params: sim.tuned_solution(cfg.gemm_type, params))
    data = out / "2_BenchmarkData"
    data.mkdir(parents=True, exist_ok=True)
    rows = ["M,N,B,K,SolutionIndex,GFlops"] + [f"{m},{n},{b},{k},{i},{g}"
                                               for (m, n, b, k), i, g in lib.size_entries()]
    (data / f"{cfg.name}.csv").write_text("\n".join(rows) + "\n")
    logic_dir = out / tune.LOGIC_DIR
    logic_dir.mkdir(parents=True, exist_ok=True)
    return logic.dump(lib, logic_dir / logic.file_name(lib.schedule_name, cfg.gemm_type))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    config_text = Path(args.ConfigFile).read_text()
    config = yaml.safe_load(config_text)
    device = (config.get("GlobalParameters") or {}).get("Device", args.device)
    record_call(argv, device)
    print(f"#  Tensile (geko replay)\n#  Config: {os.path.realpath(args.ConfigFile)}\n"
          f"#  Device: {device}", flush=True)
    if not isinstance(device, int) or isinstance(device, bool):
        print(f"Tensile::FATAL: GlobalParameters Device {device!r} is not an integer")
        return 1
    if args.prebuilt_client and not os.access(args.prebuilt_client, os.X_OK):
        print(f"Tensile::FATAL: prebuilt client {args.prebuilt_client} is not an executable")
        return 1
    if args.client_lock:
        print(f"#  Client lock: {args.client_lock}", flush=True)
    if os.environ.get(FAIL_ENV) == "start":
        print(f"replay: failing at start ({FAIL_ENV})", flush=True)
        return 2
    cfg = TuningConfig.load(args.ConfigFile)
    arch = sim.arch_by_name(str((config.get("LibraryLogic") or {}).get("ArchitectureName")))
    out = Path(args.OutputPath).resolve()
    out.mkdir(parents=True, exist_ok=True)
    space = tune.space_of(cfg, sim.kernel_is_valid(arch, cfg.gemm_type))
    result = search(cfg, space, make_evaluate(cfg, arch, args.client_lock), out)
    path = write_outputs(cfg, arch, result, out, config_text)
    print(f"# LibraryLogic written: {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
