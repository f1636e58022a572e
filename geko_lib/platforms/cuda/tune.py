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

from ... import files, resources
from ... import library as liblogic
from ...errors import GekoError
from ...gemm import GemmProblem, GemmType
from ...tuning import configure as tuning_configure
from ...tuning import ga
from ...tuning import optimize as tune
from . import families, timing
from . import triton_gemm as tg
from . import warm
from ...log_setup import LOGGER

log = logging.getLogger(LOGGER)

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
# decode GEMMs are tuned one by one (per_size): seeds first, then a small GA of their own, then
# the best few re-timed side by side; the evaluation budget is per GEMM, not per cluster
# cuda_kernels: geko's CUDA C++ cluster kernels (cluster_gemm.py) race the Triton finalists
DECODE_GA_DEFAULTS = {"n_gen": 3, "population": 12, "seed": 0, "per_size": True,
                      "finalists": 4, "warm_start": True,  # warm start: warm.py
                      "cuda_kernels": True}
MEASURE_DEFAULTS = {"error_threshold": None, "compile_workers": None, "repeats": 10}
# a cluster kernel's early edge is kept where it shortens the kernel after a short one by more
# than this (the side-by-side noise of a decode GEMM on one H100 is about 0.5%)
EDGE_MARGIN = 0.005

# search spaces per cluster: template/split-K entries move together (a GA group)
SPACES = {
    # the decode family first (weights streamed once for all tokens, split-K in the launch),
    # the general split-K template beside it; block_m is tokens per pass
    "decode": {
        "kernel": ([{"template": t, "split_k": s} for t in tg.DECODE_TEMPLATES
                    for s in (1, 2, 4, 8, 16, 32) if s > 1 or t not in tg.ATOMIC_TEMPLATES]
                   + [{"template": "splitk", "split_k": s} for s in (2, 4, 8)]),
        "block_m": [1, 2, 4, 8, 16, 32, 64, 128],
        "block_n": [8, 16, 32, 64, 128, 256],
        "block_k": [64, 128, 256, 512, 1024],
        "group_m": [1],
        "num_warps": [2, 4, 8],
        "num_stages": [1, 2, 3, 4, 5],  # decode_fma: the K loop's unroll factor
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
           "architecture_name", "device_names", "decode_n_gen", "decode_population",
           "finalists", "seed_library", "warm_start", "cuda_kernels")
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
    seeds: list = field(default_factory=list)  # per size: config params measured first

    @property
    def problems(self) -> list[GemmProblem]:
        return [GemmProblem(self.gemm_type, *size) for size in self.sizes]

    def to_dict(self) -> dict:
        return {"Format": FORMAT, "Version": VERSION, "Name": self.name,
                "GemmType": self.gemm_type.log_fields(), "Cluster": self.cluster,
                "Sizes": [list(s) for s in self.sizes], "Space": self.space, "GA": self.ga,
                "Measure": self.measure, "LibraryLogic": self.library,
                "Seeds": [[dict(p) for p in per_size] for per_size in self.seeds]}

    def one_size(self, index: int) -> "TritonTuning":
        """This file narrowed to its ``index``-th size (per-size tuning); the GA seed is offset
        by the index, so the sizes' GAs draw different first populations."""
        ga_settings = dict(self.ga) | {"seed": int(self.ga.get("seed", 0)) + index}
        return TritonTuning(f"{self.name}_size{index}", self.gemm_type, [self.sizes[index]],
                            self.cluster, self.space, ga_settings, dict(self.measure),
                            dict(self.library), [self.seeds_of(index)])

    def seeds_of(self, index: int) -> list[dict]:
        return list(self.seeds[index]) if index < len(self.seeds) else []

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
            seeds = data.get("Seeds") or []
            if len(seeds) not in (0, len(sizes)):
                raise TuningFileError(f"{path}: Seeds has {len(seeds)} lists for "
                                      f"{len(sizes)} Sizes")
            seeds = [[tg.TritonConfig.from_params(p).to_params() for p in per_size]
                     for per_size in seeds]
            return cls(name=str(data["Name"]), gemm_type=gemm_type, sizes=sizes,
                       cluster=str(data.get("Cluster", "")), space=space,
                       ga={**GA_DEFAULTS, **(data.get("GA") or {})},
                       measure={**MEASURE_DEFAULTS, **(data.get("Measure") or {})},
                       library={**LIBRARY_DEFAULTS, **(data.get("LibraryLogic") or {})},
                       seeds=seeds)
        except TuningFileError:
            raise
        except tg.TritonConfigError as exc:
            raise TuningFileError(f"{path}: Seeds: {exc}") from None
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
    ga_settings = {"prefill": {k: int(opts.get(k, v)) for k, v in GA_DEFAULTS.items()},
                   "decode": decode_ga_settings(opts)}
    measure = {k: opts.get(k, v) for k, v in MEASURE_DEFAULTS.items()}
    earlier = seed_winners(opts.get("seed_library"), gemm_type)
    library = {"ScheduleName": opts.get("schedule_name", LIBRARY_DEFAULTS["ScheduleName"]),
               "ArchitectureName": opts.get("architecture_name",
                                            LIBRARY_DEFAULTS["ArchitectureName"]),
               "DeviceNames": list(opts.get("device_names", LIBRARY_DEFAULTS["DeviceNames"]))}

    clusters: dict[str, list] = {"decode": [], "prefill": []}
    for size in tuning_configure.tuning_sizes(gemm_type, sizes):
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
            chunk = members[start:start + per_config]
            seeds = ([seed_configs(GemmProblem(gemm_type, *size), earlier) for size in chunk]
                     if cluster == "decode" else [])
            cfg = TritonTuning(name, gemm_type, chunk, cluster,
                               {k: list(v) for k, v in SPACES[cluster].items()},
                               dict(ga_settings[cluster]), dict(measure), library, seeds)
            paths.append(cfg.dump(out_dir / f"{name}.yaml"))
    tuning_configure._remove_stale(out_dir, gemm_type.name, {p.name for p in paths})
    return paths


def decode_ga_settings(opts: dict) -> dict:
    """The per-GEMM GA of decode clusters: ``decode_n_gen`` / ``decode_population`` /
    ``finalists`` options, ``seed`` shared with the prefill GA."""
    return {"n_gen": int(opts.get("decode_n_gen", DECODE_GA_DEFAULTS["n_gen"])),
            "population": int(opts.get("decode_population", DECODE_GA_DEFAULTS["population"])),
            "seed": int(opts.get("seed", DECODE_GA_DEFAULTS["seed"])), "per_size": True,
            "finalists": int(opts.get("finalists", DECODE_GA_DEFAULTS["finalists"])),
            "warm_start": bool(opts.get("warm_start", DECODE_GA_DEFAULTS["warm_start"])),
            "cuda_kernels": bool(opts.get("cuda_kernels", DECODE_GA_DEFAULTS["cuda_kernels"]))}


# --------------------------------------------------------------------------------------------
# seeds: what to measure first on a decode GEMM

TARGET_PROGRAMS = 2 * tg.H200_SMS  # enough tl.dot programs that every SM streams weights
# the CUDA-core kernel keeps few bytes in flight per program (no software pipeline): it wants
# many programs per SM (seeded at 2, 8 and 16 programs per SM)
FMA_TARGET_PROGRAMS = 8 * tg.H200_SMS


def _split_for(programs: int, k_blocks: int, target: int) -> int:
    """The smallest power-of-two split reaching ``target`` programs (at most 16, k_blocks)."""
    split = 1
    while programs * split < target and split * 2 <= min(16, k_blocks):
        split *= 2
    return split


def _seed(template: str, problem: GemmProblem, block_m: int, block_n: int, block_k: int,
          warps: int, stages: int, target: int) -> tg.TritonConfig | None:
    """A feasible config of these blocks, split to ``target`` programs and with the deepest
    pipeline at most ``stages`` that fits (None if none fits)."""
    tiles = -(-problem.m // block_n) * -(-problem.n // block_m)
    split = _split_for(tiles, -(-problem.k // block_k), target)
    for depth in range(stages, 0, -1):
        cfg = tg.TritonConfig(template, block_m, block_n, block_k, 1, split, warps, depth)
        if tg.infeasible_reason(cfg, problem) is None:
            return cfg
    return None


# (weight rows, K block, warps); 4 rows x 512 on 8 warps: the decode probe's fastest one-token
# GEMV on 4096 x 4096 and 3584 x 3584 (shared/reference/h200_measurements.md); 8 x 1024 on 4
# warps: the fastest of bench/decode_sweep.py's 261 configs on 4096 x 1 x 4096 (RESULTS.md)
FMA_SEEDS = ((8, 1024, 4), (8, 512, 4), (8, 256, 4), (16, 256, 4), (8, 1024, 8), (16, 512, 8),
             (4, 512, 8), (4, 512, 4))
MMAW_SEEDS = ((64, 128, 4, 4), (64, 256, 4, 3), (128, 128, 4, 4), (128, 64, 4, 4),
              (32, 128, 4, 4), (128, 128, 8, 3))
MMA_SEEDS = ((32, 256, 4, 4), (64, 128, 4, 4), (32, 128, 2, 4))
# small weight matrices (tensor-parallel shards, 16-21 MB: 1280 x K 8192, 8192 x K 1024): TMA
# panels and the atomic split-K reduction, split to one and two waves of programs as well; the
# fastest of bench/decode_sweep.py on the Llama-3-70B TP-8 shards (RESULTS.md, issue 23) were
# decode_tma_atomic 64 rows x 64-128 K split 16-32 for 1280 rows, decode_tma 64 x 128-256 K
# unsplit for 7168-8192 rows (their winners ship in profiles/h200/decode_seeds/tp8)
SHARD_SEEDS = ((64, 128, 4, 4), (64, 128, 4, 3), (64, 64, 4, 4), (128, 64, 4, 3),
               (64, 256, 4, 4))
SHARD_TEMPLATES = ("decode_tma", "decode_tma_atomic", "decode_mmaw_atomic")
SHARD_TARGETS = (tg.H200_SMS, TARGET_PROGRAMS, 2 * TARGET_PROGRAMS)


def rule_seeds(problem: GemmProblem) -> list[tg.TritonConfig]:
    """Configs shaped by the decode measurements (shared/reference/h200_measurements.md):
    up to 8 tokens on the CUDA cores with 8-16 weight rows x 256-1024 K per program, more
    tokens through tl.dot (weights as the MMA's rows first); each split-K to two targets of
    programs per SM; for small weight matrices also TMA panels and the atomic split-K
    reduction, split to one wave of programs too (fewer slices, a shorter reduction)."""
    tokens = tg._next_pow2(problem.n)
    shapes = []
    if problem.n <= 8:
        # decode_fma's num_stages is its K loop's unroll factor: 1 (none) and 2
        shapes += [("decode_fma", tokens, bn, bk, w, unroll, t) for bn, bk, w in FMA_SEEDS
                   for t in (TARGET_PROGRAMS, FMA_TARGET_PROGRAMS, 2 * FMA_TARGET_PROGRAMS)
                   for unroll in (1, 2)]
    mma_m = min(128, max(16, tokens))
    for template, table in (("decode_mmaw", MMAW_SEEDS), ("decode_mma", MMA_SEEDS)):
        for bn, bk, w, stages in table:
            warps = 8 if mma_m * bn >= 128 * 64 else w
            shapes += [(template, mma_m, bn, bk, warps, stages, t)
                       for t in (TARGET_PROGRAMS, 2 * TARGET_PROGRAMS)]
    for template in SHARD_TEMPLATES:
        for bn, bk, w, stages in SHARD_SEEDS:
            warps = 8 if mma_m * bn >= 128 * 64 else w
            shapes += [(template, mma_m, bn, bk, warps, stages, t) for t in SHARD_TARGETS]
    out = [_seed(template, problem, *rest) for template, *rest in shapes]
    return [c for c in dict.fromkeys(out) if c is not None]


def seed_winners(library, gemm_type: GemmType) -> list[tuple[tuple, tg.TritonConfig]]:
    """(size, config) of every Triton solution of ``gemm_type`` in an earlier tuning's
    library logic (the ``seed_library`` option: a directory, searched recursively, e.g. a
    tune run's ``optimizations`` or ``libs``); none without one."""
    if not library:
        return []
    from .solutions import solutions_in

    path = _seed_library_dir(Path(library))
    found = {}
    for folder in sorted({p.parent for p in path.rglob("*.yaml")}):
        found.update(solutions_in(folder))
    return [(size, families.TRITON.from_params(sol))
            for (t, size), sol in sorted(found.items(), key=lambda kv: kv[0][1])
            if t == gemm_type and sol.get("Backend") == families.TRITON.backend]


def _seed_library_dir(path: Path) -> Path:
    """``path`` as given, or a relative one among geko's own files (the checkout's, or an
    installed package's: jobs run in the campaign's workdir, so ``profiles/h200/decode_seeds``
    would otherwise not be found)."""
    found = resources.find(path, Path.cwd())
    if found is not None and found.is_dir():
        return found
    raise TuningFileError(f"seed_library {path}: not a directory of library logic (looked in "
                          f"the working directory and in {resources.root()})")


def seed_configs(problem: GemmProblem, earlier=(), nearest: int = 4) -> list[dict]:
    """The seeds of one decode GEMM: the winners of the ``nearest`` most similar shapes of an
    earlier tuning first (where they can run this one), then the rule seeds."""
    ranked = sorted(earlier, key=lambda sc: warm.shape_distance(sc[0], problem.size))
    chosen = [cfg for _, cfg in ranked[:nearest] if tg.infeasible_reason(cfg, problem) is None]
    return [c.to_params() for c in dict.fromkeys(chosen + rule_seeds(problem))]


# --------------------------------------------------------------------------------------------
# measuring


Evaluate = Callable[[list, list], np.ndarray]


def error_threshold(gemm_type: GemmType, given=None) -> float:
    """Relative Frobenius error a kernel must stay under: 1e-2 (16-bit/fp8 data or output,
    or TF32), 1e-4 for exact fp32."""
    if given is not None:
        return float(given)
    exact = (gemm_type.a_type == gemm_type.d_type == "f32_r"
             and gemm_type.compute_type == "f32_r")
    return 1e-4 if exact else 1e-2


class Measurer:
    """The real evaluator: compile in parallel, time with ``timing``, check numerics of every
    would-be best. Scores are GFLOP/s; 0 for infeasible, failed or wrong kernels."""

    def __init__(self, tuning: TritonTuning, build_dir: Path, device: int, executor=None):
        self.tuning, self.device = tuning, device
        self.build_dir = Path(build_dir)
        self.threshold = error_threshold(tuning.gemm_type, tuning.measure.get("error_threshold"))
        workers = tuning.measure.get("compile_workers")
        self.workers = tg.default_workers() if workers is None else int(workers)
        self.repeats = int(tuning.measure.get("repeats") or 10)
        self.executor = executor  # compile workers (shared across per-size measurers)
        self._own_executor = executor is None
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
        if self.executor is not None and self._own_executor:
            self.executor.shutdown(wait=True)
        self.executor = None

    def finalists(self, configs: list, problem: GemmProblem) -> list[float]:
        """GFLOP/s of ``configs`` re-timed side by side (replays interleaved, fresh operands,
        as the final benchmark times them); 0 for a config that fails or computes wrong."""
        from . import timing

        sets = timing.make_operands(problem, self.device, seed=2000)
        ready, calls = [], []
        for cfg in configs:
            try:
                calls.append([launcher_of(cfg)(cfg, ops) for ops in sets])
                ready.append(cfg)
            except Exception as exc:
                self.rejected[cfg.name] = f"launch: {type(exc).__name__}: {exc}"[:300]
        out = {cfg: 0.0 for cfg in configs}
        if ready:
            timings = timing.time_side_by_side(calls, repeats=self.repeats)
            ref = timing.reference(sets[0])
            for cfg, measured in zip(ready, timings):
                if self._correct(cfg, sets[0], ref):
                    out[cfg] = problem.flops / measured.us / 1e3
        del sets
        return [out[c] for c in configs]

    def edge_pays(self, cfg, problem: GemmProblem) -> bool:
        """Whether ``cfg``'s early edge shortens it by more than EDGE_MARGIN after each short
        kernel a decode GEMM follows (``cluster_gemm.edge_verdict``)."""
        from . import cluster_gemm

        pays, timed = cluster_gemm.edge_verdict(cfg, problem, self.device, self.repeats,
                                                EDGE_MARGIN)
        for produce, (plain, edged) in timed.items():
            log.info("%s: %s on %s after %s: %.2f us plain, %.2f us with the early edge",
                     self.tuning.name, cfg.name, problem.name, produce, plain.us, edged.us)
        log.info("%s: %s on %s: early edge %s", self.tuning.name, cfg.name, problem.name,
                 "on" if pays else "off")
        return pays

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

        error = timing.checked_error(launcher_of(cfg)(cfg, ops), ops, ref)
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
    whatever it returns, and are never passed when infeasible on every size. A file whose GA
    settings say ``per_size`` (decode clusters) is tuned one size at a time."""
    tuning = TritonTuning.load(tuning_yaml)
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    if tuning.ga.get("per_size"):
        chosen = _optimize_per_size(tuning, build_dir, device, evaluate)
        lib = liblogic.build(library_template(tuning), chosen,
                             key=lambda sol: sol["SolutionNameMin"])
        if not lib.exact_logic:
            raise RuntimeError(f"{tuning.name}: no Triton config ran correctly on any size")
        tune.write_logic(lib, build_dir, header=NOTE)
        return build_dir / tune.LOGIC_DIR
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


def _masked_evaluator(evaluate: Evaluate, problems: list) -> Callable[[list], np.ndarray]:
    """GA batch (param dicts) -> scores, 0 where a config cannot run a size; every config is
    measured once (a seed the GA draws again reuses its score)."""
    known: dict = {}

    def batch_scores(batch: list[dict]) -> np.ndarray:
        configs = [tg.TritonConfig.from_params(p) for p in batch]
        new = [c for c in dict.fromkeys(configs) if c not in known]
        if new:
            mask = np.array([[tg.infeasible_reason(c, p) is None for c in new]
                             for p in problems], dtype=bool)
            scores = np.asarray(evaluate(new, problems), dtype=np.float64)
            if scores.shape != mask.shape:
                raise ga.GAError(f"evaluate returned shape {scores.shape}, expected "
                                 f"{mask.shape}")
            scores = np.where(mask & np.isfinite(scores), scores, 0.0)
            known.update({c: scores[:, j] for j, c in enumerate(new)})
        return np.stack([known[c] for c in configs], axis=1)

    batch_scores.known = known
    return batch_scores


def _optimize_per_size(tuning: TritonTuning, build_dir: Path, device: int,
                       evaluate: Evaluate | None) -> list[tuple]:
    """Per size: its seeds, then a GA of its own (``n_gen`` x ``population`` evaluations per
    GEMM), then the best ``finalists`` re-timed side by side; (problem, solution, GFLOP/s) of
    every size that got a correct kernel."""
    executor = env = None
    if evaluate is None:
        workers = tuning.measure.get("compile_workers")
        workers = tg.default_workers() if workers is None else int(workers)
        executor = tg.make_executor(workers) if workers > 1 else None
        if tuning.ga.get("warm_start", True):

            try:
                env = warm.environment(device)
            except Exception as exc:  # a part of the environment cannot be read: no cache
                log.warning("%s: no warm start (%s: %s)", tuning.name, type(exc).__name__, exc)
    chosen = []
    try:
        for index in range(len(tuning.sizes)):
            one = tuning.one_size(index)
            if env is not None:
                _warm_seeds(one, env)
            measurer = None if evaluate is not None else Measurer(one, build_dir, device,
                                                                  executor)
            picked = _tune_one_size(one, build_dir / f"size{index}", measurer or evaluate,
                                    measurer)
            if picked is not None:
                chosen.append(picked)
                problem, sol, gflops = picked
                # the warm-start cache holds Triton configs only
                if env is not None and sol["Backend"] == families.TRITON.backend:
                    warm.store(env, problem, config_of(sol), gflops)
    finally:
        if executor is not None:
            executor.shutdown(wait=True)
    return chosen


def _warm_seeds(one: TritonTuning, env: str) -> None:
    """Put the warm-start cache's winners first among ``one``'s seeds; where its exact shape
    is cached, no GA, and of the other seeds only the first of each template (the earlier
    campaign measured them all on the same software: one per family guards that decision)."""

    cached, exact = warm.seeds(env, one.problems[0])
    rest = [s for s in one.seeds_of(0) if s not in cached]
    if exact:
        one.ga["n_gen"] = 0
        rest = _first_of_each_template(rest)
    one.seeds = [cached + rest]
    log.info("%s: %d warm-start seeds%s", one.name, len(cached),
             f" (this shape cached: no GA, {len(rest)} other seeds)" if exact else "")


def _first_of_each_template(seeds: list[dict]) -> list[dict]:
    firsts: dict = {}
    for params in seeds:
        firsts.setdefault(params["template"], params)
    return list(firsts.values())


def _tune_one_size(one: TritonTuning, build_dir: Path, evaluate: Evaluate,
                   measurer: "Measurer | None") -> tuple | None:
    problem = one.problems[0]
    build_dir.mkdir(parents=True, exist_ok=True)
    scores_of = _masked_evaluator(evaluate, [problem])
    seeds = [p for p in one.seeds_of(0)
             if tg.infeasible_reason(tg.TritonConfig.from_params(p), problem) is None]
    if seeds:
        scores_of(seeds)
    settings = one.ga
    if int(settings["n_gen"]) < 1:  # seeds only (a warm start of a cached shape)
        return _pick_finalist(one, problem, scores_of.known, measurer)
    space = ga_space(one)
    progress = tune.progress_logger(one.name, total=int(settings["n_gen"]))
    try:
        ga.run(space, scores_of, checkpoint=build_dir / tune.CHECKPOINT, progress=progress,
               seed=int(settings["seed"]), n_gen=int(settings["n_gen"]),
               pop_size=max(2, min(int(settings["population"]), space.size)))
    except ga.GAError as exc:  # too few valid configs left for a population: seeds stand
        log.warning("%s: GA stopped: %s", one.name, exc)
    finally:
        progress.close()
    return _pick_finalist(one, problem, scores_of.known, measurer)


def _pick_finalist(one: TritonTuning, problem: GemmProblem, known: dict,
                   measurer: "Measurer | None") -> tuple | None:
    """The best ``finalists`` of every config measured, re-timed side by side (by the
    measurer; a fake evaluator's scores stand as they are): (problem, solution, GFLOP/s)."""
    ranked = sorted(((float(v[0]), c) for c, v in known.items() if v[0] > 0),
                    key=lambda sc: (-sc[0], sc[1].name))
    finalists = [c for _, c in ranked[:max(1, int(one.ga.get("finalists", 4)))]]
    if measurer is not None and one.ga.get("cuda_kernels", True):
        finalists += cuda_seeds(problem)
    if not finalists:
        log.warning("%s: no valid kernel for size %s", one.name, list(problem.size))
        return None
    if measurer is not None:
        final = measurer.finalists(finalists, problem)
        if measurer.rejected:
            log.info("%s: %d configs rejected, e.g. %s", one.name, len(measurer.rejected),
                     "; ".join(f"{k}: {v}" for k, v in list(measurer.rejected.items())[:3]))
    else:
        final = [float(known[c][0]) for c in finalists]
    gflops, best = _tie_winner(final, finalists)
    if gflops <= 0:
        return None
    log.info("%s: %s %.1f GFLOP/s (%d configs measured)", one.name, best.name, gflops,
             len(known))
    chosen = solution_of(best)
    if measurer is not None and families.of_config(best).takes_edges:
        chosen = with_edge_choice(chosen, measurer.edge_pays(best, problem))
    return problem, chosen, gflops


def with_edge_choice(solution: dict, pays: bool) -> dict:
    """``solution`` with its EARLY_EDGE: where the edge did not pay, the solution is named for
    it (one kernel, two solutions a library may both hold)."""
    chosen = {**solution, families.EARLY_EDGE: bool(pays)}
    if not pays:
        chosen["SolutionNameMin"] = solution["SolutionNameMin"] + families.PLAIN_EDGE_SUFFIX
    return chosen


def cuda_seeds(problem: GemmProblem) -> list:
    """The CUDA C++ cluster kernels that race the Triton finalists of a decode GEMM (none
    where cuda.core or NVRTC is missing: the Triton kernels stand alone, as before)."""
    from . import cluster_gemm

    if not cluster_gemm.available():
        log.info("cuda kernels: cuda.core / NVRTC not found; Triton and cuBLASLt only")
        return []
    return cluster_gemm.seed_configs(problem)


def launcher_of(cfg) -> Callable:
    """The ``launcher(cfg, ops)`` of a config's kernel family."""
    return families.of_config(cfg).launcher


def _tie_winner(gflops: list, configs: list) -> tuple:
    """The fastest finalist, or among those within timing.TIE_BAND of it a deterministic pick:
    a bitwise-deterministic kernel (not an atomic split-K one) first, then the config name."""
    best = max(gflops)
    tied = [(g, c) for g, c in zip(gflops, configs)
            if g > 0 and g * (1 + timing.TIE_BAND) >= best]
    if not tied:
        return best, configs[gflops.index(best)]
    return min(tied, key=lambda gc: (getattr(gc[1], "template", None) in tg.ATOMIC_TEMPLATES,
                                     gc[1].name))


def solution(params: dict) -> dict:
    """A tuned Triton config as a library-logic solution."""
    return families.TRITON.to_params(tg.TritonConfig.from_params(params))


def solution_of(cfg) -> dict:
    """A tuned config of either family (Triton, or geko's CUDA C++ kernels) as a solution."""
    return families.of_config(cfg).to_params(cfg)


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
    return families.TRITON.from_params(solution_params)


TUNING_NAME = re.compile(r"^[A-Z0-9]+_[NT]{2}_\d+$")  # the workflow's {cfg} wildcard


def names_ok(paths: Sequence[Path]) -> bool:
    return all(TUNING_NAME.match(Path(p).stem) for p in paths)
