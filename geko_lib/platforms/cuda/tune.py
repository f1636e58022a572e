"""Tune mode on the cuda platform: a genetic algorithm over Triton GEMM configs.

``configure`` writes one tuning YAML per size cluster (decode-like sizes, N <= 128 tokens, and
prefill-like ones) holding the GEMM type, the sizes, the search space over templates and their
parameters and the GA settings (docs/FORMATS.md, "Triton tuning YAML"). ``optimize`` runs the
GA of ``geko_lib.tuning.ga`` on one such file (checkpointed in the build dir, so a rerun
resumes), compiling each generation's new configs in parallel before timing any of them,
measuring every feasible config on every size with ``timing`` (GFLOP/s), checking the numerics
of every kernel before it becomes a size's best, and writes the best kernel of every size as
library logic in ``build_dir/3_LibraryLogic``.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import yaml

from ... import files
from ... import library as liblogic
from ...errors import GekoError
from ...gemm import GemmProblem, GemmType
from ...tuning import configure as tuning_configure
from ...tuning import ga
from ...tuning import optimize as tune
from . import triton_gemm as tg

log = logging.getLogger(__name__)

FORMAT = "geko-triton-tuning"
VERSION = 1
DECODE_MAX_TOKENS = 128  # BLAS N (tokens) at or below this is a decode-like size
MAX_SIZES_PER_CONFIG = 8
NOTE = "cuda platform: Triton kernels tuned with geko's GA; times measured on the device"
QUARANTINE = "triton_quarantine.txt"  # configs that took the process down, never retried
IN_FLIGHT = "triton_in_flight.txt"  # the config being measured (left behind by a crash)

LIBRARY_DEFAULTS = {"ScheduleName": "h200", "ArchitectureName": "sm_90",
                    "DeviceNames": ["NVIDIA H200"]}
GA_DEFAULTS = {"n_gen": 12, "population": 32, "seed": 0}
MEASURE_DEFAULTS = {"error_threshold": None, "compile_workers": None, "repeats": 10}

# search spaces per cluster: template/split-K entries move together (a GA group)
SPACES = {
    "decode": {
        "kernel": ([{"template": "tiled", "split_k": 1}]
                   + [{"template": "splitk", "split_k": s} for s in (2, 4, 8, 16)]
                   + [{"template": "persistent_tma", "split_k": 1}]),
        "block_m": [16, 32, 64],
        "block_n": [32, 64, 128, 256],
        "block_k": [64, 128, 256],
        "group_m": [1, 8],
        "num_warps": [2, 4, 8],
        "num_stages": [2, 3, 4, 5, 6],
    },
    "prefill": {
        "kernel": ([{"template": "tiled", "split_k": 1}]
                   + [{"template": "splitk", "split_k": s} for s in (2, 4)]
                   + [{"template": "persistent_tma", "split_k": 1}]),
        "block_m": [64, 128, 256],
        "block_n": [64, 128, 256],
        "block_k": [32, 64, 128],
        "group_m": [1, 4, 8, 16],
        "num_warps": [4, 8],
        "num_stages": [2, 3, 4, 5],
    },
}
SPACE_KEYS = ("kernel", "block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages")
OPTIONS = ("n_gen", "population", "seed", "max_sizes_per_config", "decode_max_tokens",
           "error_threshold", "compile_workers", "repeats", "schedule_name",
           "architecture_name", "device_names")
IGNORED_OPTIONS = ("backend", "arch")  # the workflow passes them for every platform


class TuningFileError(GekoError, ValueError):
    """A Triton tuning YAML that cannot be used (file and key named)."""


# --------------------------------------------------------------------------------------------
# the tuning file


@dataclass
class TritonTuning:
    """One Triton tuning YAML in memory (also what ``tuning.optimize.best_library`` needs:
    ``name``, ``gemm_type``, ``sizes``)."""

    name: str
    gemm_type: GemmType
    sizes: list[tuple[int, int, int, int]]
    cluster: str
    space: dict
    ga: dict = field(default_factory=lambda: dict(GA_DEFAULTS))
    measure: dict = field(default_factory=lambda: dict(MEASURE_DEFAULTS))
    library: dict = field(default_factory=lambda: dict(LIBRARY_DEFAULTS))

    @property
    def problems(self) -> list[GemmProblem]:
        return [GemmProblem(self.gemm_type, *size) for size in self.sizes]

    def to_dict(self) -> dict:
        return {"Format": FORMAT, "Version": VERSION, "Name": self.name,
                "GemmType": self.gemm_type.log_fields(), "Cluster": self.cluster,
                "Sizes": [list(s) for s in self.sizes], "Space": self.space, "GA": self.ga,
                "Measure": self.measure, "LibraryLogic": self.library}

    def dump(self, path: Path) -> Path:
        header = (f"# geko Triton tuning config {self.name} ({self.cluster} sizes), cuda "
                  f"platform: GA over {space_size(self.space)} configs\n")
        return files.write_text(path, header + yaml.safe_dump(self.to_dict(), sort_keys=False,
                                                              default_flow_style=None))

    @classmethod
    def load(cls, path) -> "TritonTuning":
        path = Path(path)
        data = files.read_yaml(path, TuningFileError, "Triton tuning file")
        if not isinstance(data, dict) or data.get("Format") != FORMAT:
            raise TuningFileError(f"{path}: not a Triton tuning file (Format: {FORMAT})")
        try:
            gemm_type = GemmType(**data["GemmType"])
            sizes = [tuple(int(v) for v in s) for s in data["Sizes"]]
            space = data["Space"]
            missing = [k for k in SPACE_KEYS if k not in space]
            if missing:
                raise TuningFileError(f"{path}: Space lacks {', '.join(missing)}")
            for entry in space["kernel"]:
                tg.TritonConfig(entry["template"], 16, 16, 16, split_k=int(entry["split_k"]))
            return cls(name=str(data["Name"]), gemm_type=gemm_type, sizes=sizes,
                       cluster=str(data.get("Cluster", "")), space=space,
                       ga={**GA_DEFAULTS, **(data.get("GA") or {})},
                       measure={**MEASURE_DEFAULTS, **(data.get("Measure") or {})},
                       library={**LIBRARY_DEFAULTS, **(data.get("LibraryLogic") or {})})
        except TuningFileError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise TuningFileError(f"{path}: {type(exc).__name__}: {exc}") from None


def space_size(space: dict) -> int:
    return math.prod(len(space[k]) for k in SPACE_KEYS)


def cluster_of(size, decode_max_tokens: int = DECODE_MAX_TOKENS) -> str:
    """decode: BLAS N (tokens of a linear layer) <= decode_max_tokens; prefill otherwise."""
    return "decode" if int(size[1]) <= decode_max_tokens else "prefill"


def _options(options: dict | None) -> dict:
    out = {}
    for key, value in (options or {}).items():
        if key in OPTIONS:
            out[key] = value
        elif key not in IGNORED_OPTIONS:
            log.warning("cuda tune: option %r has no meaning for Triton tuning; ignored", key)
    return out


def configure(gemm_type: GemmType, sizes, out_dir, options: dict | None = None) -> list[Path]:
    """Write ``<out_dir>/<GEMM>_<i>.yaml`` (``BBS_TN_0.yaml`` ...), one per size cluster
    (decode-like, then prefill-like; at most ``max_sizes_per_config`` sizes each); stale
    ``<GEMM>_<j>.yaml`` of an earlier run are removed. Sizes are ``[M, N, batch, K]``;
    batched sizes get no config (the templates do one matrix) and are logged."""
    opts = _options(options)
    out_dir = Path(out_dir)
    decode_max = int(opts.get("decode_max_tokens", DECODE_MAX_TOKENS))
    per_config = int(opts.get("max_sizes_per_config", MAX_SIZES_PER_CONFIG))
    if per_config < 1:
        raise ValueError("max_sizes_per_config must be positive")
    ga_settings = {k: int(opts.get(k, v)) for k, v in GA_DEFAULTS.items()}
    measure = {k: opts.get(k, v) for k, v in MEASURE_DEFAULTS.items()}
    library = {"ScheduleName": opts.get("schedule_name", LIBRARY_DEFAULTS["ScheduleName"]),
               "ArchitectureName": opts.get("architecture_name",
                                            LIBRARY_DEFAULTS["ArchitectureName"]),
               "DeviceNames": list(opts.get("device_names", LIBRARY_DEFAULTS["DeviceNames"]))}

    clusters: dict[str, list] = {"decode": [], "prefill": []}
    for size in tuning_configure._sizes(gemm_type, sizes):
        if size[2] != 1:
            log.warning("%s: size %s is batched; Triton tuning does batch 1 only, no config",
                        gemm_type.name, list(size))
            continue
        clusters[cluster_of(size, decode_max)].append(size)

    paths = []
    for cluster, members in clusters.items():
        members.sort(key=lambda s: (s[1], s[0], s[3]))
        for start in range(0, len(members), per_config):
            name = f"{gemm_type.name}_{len(paths)}"
            cfg = TritonTuning(name, gemm_type, members[start:start + per_config], cluster,
                               {k: list(v) for k, v in SPACES[cluster].items()},
                               dict(ga_settings), dict(measure), library)
            paths.append(cfg.dump(out_dir / f"{name}.yaml"))
    tuning_configure._remove_stale(out_dir, gemm_type.name, {p.name for p in paths})
    return paths


# --------------------------------------------------------------------------------------------
# measuring


Evaluate = Callable[[list, list], np.ndarray]


def error_threshold(gemm_type: GemmType, given=None) -> float:
    """Relative Frobenius error a kernel must stay under: 1e-2 (16-bit/fp8 data or output,
    or TF32), 1e-4 for exact fp32."""
    if given is not None:
        return float(given)
    exact = (gemm_type.a_type == gemm_type.d_type == "f32_r"
             and gemm_type.compute_type == "c_f32_r")
    return 1e-4 if exact else 1e-2


class Measurer:
    """The real evaluator: compile in parallel, time with ``timing``, check numerics of every
    would-be best. Scores are GFLOP/s; 0 for infeasible, failed or wrong kernels."""

    def __init__(self, tuning: TritonTuning, build_dir: Path, device: int):
        self.tuning, self.device = tuning, device
        self.build_dir = Path(build_dir)
        self.threshold = error_threshold(tuning.gemm_type, tuning.measure.get("error_threshold"))
        workers = tuning.measure.get("compile_workers")
        self.workers = tg.default_workers() if workers is None else int(workers)
        self.repeats = int(tuning.measure.get("repeats") or 10)
        self.executor = None
        self.best = np.zeros(len(tuning.sizes))  # accepted (checked) best per size
        self.quarantine = self._read_quarantine()
        self.rejected: dict[str, str] = {}  # config name -> why it scored 0 (for the log)

    # crash bookkeeping: a kernel that kills the CUDA context kills the job; on the retry the
    # config named in IN_FLIGHT is quarantined instead of crashing the job again
    def _read_quarantine(self) -> set[str]:
        path, flight = self.build_dir / QUARANTINE, self.build_dir / IN_FLIGHT
        names = set(path.read_text().split()) if path.exists() else set()
        if flight.exists():
            crashed = flight.read_text().strip()
            if crashed:
                log.warning("%s: %s was being measured when the last run died; quarantined",
                            self.tuning.name, crashed)
                names.add(crashed)
                files.write_text(path, "".join(f"{n}\n" for n in sorted(names)))
            flight.unlink()
        return names

    def seed_best(self, checkpoint: Path) -> None:
        """On resume, the checked bests are the checkpoint's best scores."""
        import json

        if checkpoint.exists():
            best = json.loads(checkpoint.read_text()).get("best") or []
            if len(best) == len(self.best):
                self.best = np.nan_to_num(np.array(best, dtype=float))

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None

    def __call__(self, configs: list, problems: list) -> np.ndarray:
        from . import timing

        scores = np.zeros((len(problems), len(configs)))
        feasible = [[tg.infeasible_reason(c, p) is None and c.name not in self.quarantine
                     for c in configs] for p in problems]
        compiled = self._compile(configs, problems, feasible)
        for i, problem in enumerate(problems):
            todo = [j for j, c in enumerate(configs) if feasible[i][j] and compiled[c]]
            if not todo:
                continue
            sets = timing.make_operands(problem, self.device, seed=1000 + i)
            ref = None
            for j in todo:
                cfg = configs[j]
                us = self._time(cfg, sets)
                if us is None:
                    continue
                gflops = problem.flops / us / 1e3
                if gflops > self.best[i]:
                    if ref is None:
                        ref = timing.reference(sets[0])
                    if not self._correct(cfg, sets[0], ref):
                        continue
                    self.best[i] = gflops
                scores[i, j] = gflops
            del sets, ref
        return scores

    def _compile(self, configs, problems, feasible) -> dict:
        """Compile every (config, size) that is feasible; a config counts as compiled when
        all its feasible sizes compiled (the specializations differ per size)."""
        ok = {c: True for c in configs}
        for i, problem in enumerate(problems):
            wanted = [c for j, c in enumerate(configs) if feasible[i][j]]
            if not wanted:
                continue
            if self.executor is None and self.workers > 1 and len(wanted) > 1:
                self.executor = tg.make_executor(self.workers)
            errors = tg.compile_all(wanted, problem, self.device, self.workers,
                                    executor=self.executor)
            for cfg, error in errors.items():
                if error is not None:
                    ok[cfg] = False
                    self.rejected[cfg.name] = f"compile ({problem.name}): {error}"
                    log.info("%s: %s does not compile for %s: %s", self.tuning.name, cfg.name,
                             problem.name, error)
        return ok

    def _time(self, cfg, sets) -> float | None:
        from . import timing

        flight = self.build_dir / IN_FLIGHT
        files.write_text(flight, cfg.name + "\n")
        try:
            calls = [tg.launcher(cfg, ops) for ops in sets]
            return timing.time_calls(calls, repeats=self.repeats).us
        except Exception as exc:  # a launch error (resources, ...) fails the config only
            self.rejected[cfg.name] = f"launch: {type(exc).__name__}: {exc}"[:300]
            log.info("%s: %s failed to run: %s", self.tuning.name, cfg.name,
                     self.rejected[cfg.name])
            return None
        finally:
            flight.unlink(missing_ok=True)

    def _correct(self, cfg, ops, ref) -> bool:
        from . import timing

        error = timing.checked_error(tg.launcher(cfg, ops), ops, ref)
        if error < self.threshold:
            return True
        self.rejected[cfg.name] = f"numerics: error {error:.3g} >= {self.threshold:g}"
        log.warning("%s: %s is fast but wrong on %s (error %.3g)", self.tuning.name, cfg.name,
                    ops.problem.name, error)
        return False


# --------------------------------------------------------------------------------------------
# the GA


def ga_space(tuning: TritonTuning) -> ga.Space:
    """The GA's variables (``kernel`` a group of template + split_k); an individual is valid
    when it can run at least one of the sizes."""
    problems = tuning.problems
    variables = {k: ([dict(e) for e in tuning.space[k]] if k == "kernel"
                     else [int(v) for v in tuning.space[k]]) for k in SPACE_KEYS}

    def valid(params: dict) -> bool:
        cfg = tg.TritonConfig.from_params(params)
        return any(tg.infeasible_reason(cfg, p) is None for p in problems)

    return ga.Space(variables, valid=valid)


def optimize(tuning_yaml, build_dir, device: int, *, evaluate: Evaluate | None = None) -> Path:
    """Run one Triton tuning YAML; returns ``build_dir/3_LibraryLogic``. ``evaluate(configs,
    problems)`` -> GFLOP/s of shape (len(problems), len(configs)) replaces the measurement
    (tests drive the GA on a CPU with a fake one); configs infeasible on a size score 0 there
    whatever it returns, and are never passed when infeasible on every size."""
    tuning = TritonTuning.load(tuning_yaml)
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    problems = tuning.problems
    space = ga_space(tuning)
    checkpoint = build_dir / tune.CHECKPOINT
    measurer = None
    if evaluate is None:
        measurer = Measurer(tuning, build_dir, device)
        measurer.seed_best(checkpoint)
        evaluate = measurer

    def batch_scores(batch: list[dict]) -> np.ndarray:
        configs = [tg.TritonConfig.from_params(p) for p in batch]
        mask = np.array([[tg.infeasible_reason(c, p) is None for c in configs]
                         for p in problems], dtype=bool)
        scores = np.asarray(evaluate(configs, problems), dtype=np.float64)
        if scores.shape != mask.shape:
            raise ga.GAError(f"evaluate returned shape {scores.shape}, expected {mask.shape}")
        return np.where(mask & np.isfinite(scores), scores, 0.0)

    settings = tuning.ga
    pop = max(2, min(int(settings["population"]), space.size))
    progress = tune.progress_logger(tuning.name, total=int(settings["n_gen"]))
    try:
        result = ga.run(space, batch_scores, checkpoint=checkpoint, progress=progress,
                        seed=int(settings["seed"]), pop_size=pop, n_gen=int(settings["n_gen"]))
    finally:
        progress.close()
        if measurer is not None:
            measurer.close()
    if measurer is not None and measurer.rejected:
        log.info("%s: %d configs rejected, e.g. %s", tuning.name, len(measurer.rejected),
                 "; ".join(f"{k}: {v}" for k, v in list(measurer.rejected.items())[:5]))
    lib = tune.best_library(tuning, result, library_template(tuning), solution)
    if not lib.exact_logic:
        raise RuntimeError(f"{tuning.name}: no Triton config ran correctly on any size")
    tune.write_logic(lib, build_dir, header=NOTE)
    return build_dir / tune.LOGIC_DIR


def solution(params: dict) -> dict:
    """A tuned Triton config as a library-logic solution."""
    cfg = tg.TritonConfig.from_params(params)
    return {"SolutionIndex": 0, "SolutionNameMin": cfg.name, "KernelNameMin": cfg.name,
            "Backend": "triton", "Triton": cfg.to_params()}


def library_template(tuning: TritonTuning) -> liblogic.LibraryLogic:
    lib = tuning.library
    return liblogic.LibraryLogic(
        version={"MinimumRequiredVersion": "5.0.0"}, schedule_name=str(lib["ScheduleName"]),
        architecture=str(lib["ArchitectureName"]), device_names=list(lib["DeviceNames"]),
        problem_type=liblogic.problem_type_for(tuning.gemm_type), solutions=[])


def config_of(solution_params: dict) -> tg.TritonConfig:
    """The Triton config of a library-logic solution written by ``optimize``."""
    if "Triton" not in solution_params:
        raise tg.TritonConfigError(f"solution {solution_params.get('SolutionNameMin')!r} has "
                                   "no Triton config")
    return tg.TritonConfig.from_params(dict(solution_params["Triton"]))


TUNING_NAME = re.compile(r"^[A-Z0-9]+_[NT]{2}_\d+$")  # the workflow's {cfg} wildcard


def names_ok(paths: Sequence[Path]) -> bool:
    return all(TUNING_NAME.match(Path(p).stem) for p in paths)
