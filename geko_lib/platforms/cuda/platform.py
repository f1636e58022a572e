"""The cuda platform: cuBLASLt (through nvmath-python) and Triton kernels on an NVIDIA GPU.

- bench: the default heuristic's choice (what an application calling cuBLASLt gets) or the
  library's solution, with torch.matmul timed beside it;
- search: cuBLASLt's heuristic list plus its own enumeration of configurations, screened within
  a time budget per GEMM, the fastest few re-timed side by side and checked numerically;
- tune (configure/optimize): Triton GEMM templates chosen by the genetic algorithm (tune.py).

Solutions in library logic carry ``Backend`` (``cublaslt``, ``triton``, ``cuda`` for geko's own
CUDA C++ kernels (cluster_gemm.py), or ``default``) and the parameters of that backend, each
kernel family described once in families.py; cuBLASLt solutions also record the cuBLASLt
version and GPU name, which are checked whenever the library is loaded.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ... import library as liblogic
from ... import original_columns
from ...config_schema import default as _default
from ...gemm import GemmProblem, GemmType
from .. import (RESULT_COLUMNS, VERIFY_COLUMNS, Capabilities, PlatformError, require_problems,
                results_frame)
from . import families, timing
from .solutions import solutions_in, validate_solution  # noqa: F401 (the platform's names)
from ...log_setup import LOGGER

log = logging.getLogger(LOGGER)

DEFAULT_NAME = "cublaslt_heuristic_default"
# timing.RETIME_BAND / RETIME_ROUNDS / TIE_BAND here: a tuned kernel whose ratio to the default
# lies within the band of the keep threshold, and every search finalist within it of the
# fastest, are re-timed; a search tie is won by the lowest solution index (the winners' own
# tiebreak)
RETIME_BAND, RETIME_ROUNDS, TIE_BAND = timing.RETIME_BAND, timing.RETIME_ROUNDS, timing.TIE_BAND
# a peer's pick (nvmath's top 8, TunableOp-on-CUDA's: the best of the heuristic's first 8): a
# search re-times those 8 beside its own finalists, so a short screening's noise never drops
# the configuration that would beat what it ships (issue 39: 7168 x 4096 x 8192 shipped 697.6
# us where top-8 gave 661.2 in the same run)
PEER_TOP = 8


@dataclass(frozen=True)
class SearchSettings:
    # every default is the config schema's (the one place defaults live), so the Python API
    # and the workflow screen candidates alike
    budget_s: float = field(default_factory=lambda: _default("cuda.search_budget_s"))
    # how many of the heuristic's ranked list are always screened
    heuristic_count: int = field(default_factory=lambda: _default("cuda.heuristic_count"))
    max_candidates: int = field(default_factory=lambda: _default("cuda.max_candidates"))
    # re-timed side by side and checked numerically
    finalists: int = field(default_factory=lambda: _default("cuda.finalists"))
    workspace_mb: int = field(default_factory=lambda: _default("cuda.workspace_mb"))
    err_thr: float = field(default_factory=lambda: _default("err_thr"))
    # the keep rule's up_thr: a tuned kernel this close to it is re-timed before the keep
    keep_threshold: float = field(default_factory=lambda: _default("up_thr"))


def solution_index_of(name: str) -> int:
    """A stable index for a solution name (library logic wants integers)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def _cublaslt_version() -> str:
    from . import cublaslt

    return str(cublaslt.version())


def _triton_version() -> str:
    import triton

    return str(triton.__version__)


def _installed(read) -> str:
    """``read()``, or ``unavailable`` where its library is not installed (a CPU-only machine)."""
    try:
        return read()
    except Exception:  # ImportError, or a library present without a driver to answer
        return "unavailable"


def use_device(device: int) -> None:
    """Make ``device`` current: cuBLASLt and torch's current stream follow the current device,
    so a job leased device 1 would otherwise launch on device 0 with device-1 pointers. A
    device this machine does not have is refused by name (torch says only "invalid device
    ordinal", from inside the first job that reaches it)."""
    cuda = timing.torch().cuda
    present = cuda.device_count()
    if not 0 <= int(device) < present:
        ids = f" ({', '.join(map(str, range(present)))})" if present else ""
        raise PlatformError(
            f"cuda: device {device} is not on this machine: it has {present} CUDA "
            f"device(s){ids} that CUDA_VISIBLE_DEVICES lets through; give devices that exist "
            "(config key devices, or geko -d)")
    cuda.set_device(int(device))


def gpu_name(device: int) -> str:
    return timing.torch().cuda.get_device_name(device)


class CudaPlatform:
    name = "cuda"
    # its settings (config section cuda) that shape results
    RESULT_OPTIONS = ("seed", "search_budget_s", "heuristic_count", "max_candidates", "finalists",
                      "workspace_mb", "tune")
    ARCH_MODELS = ("h200",)
    measured = True
    # the search's finals time each replay right after an untimed one of the same variant
    # (timing.time_side_by_side's settle); bench/finals_settle.py measures what leaving it
    # out would change (half the finals' GPU time, the picks side by side)
    settle_finals = True
    note = ""

    def __init__(self, settings: SearchSettings, seed: int = 0, arch: str = "h200",
                 tune_options: dict | None = None):
        self.settings = settings
        self.seed = seed
        self.arch = arch
        self.tune_options = dict(tune_options or {})
        self._descriptors: dict[GemmProblem, object] = {}
        self._workspaces: dict[int, object] = {}

    @classmethod
    def capabilities(cls, config: dict) -> Capabilities:
        """No epilogue variants (the kernels have no bias/activation forms), no hipBLASLt or
        TunableOp exports (their solution indices name hipBLASLt kernels), no integrate."""
        measured = (config.get("cuda") or {}).get("ceilings") or {}
        ceilings = {"arch": config.get("arch", "h200"),
                    "peak_tflops": {"16": float(measured.get("bf16_tflops", 802.0))},
                    "hbm_tbps": float(measured.get("copy_tbps", 4.21)),
                    "source": measured.get("source", "measured on an H200 (bf16 8192^3 matmul, "
                                           "1 GiB device copy), config cuda.ceilings")}
        return Capabilities(measured=True, note="", epilogues=False, exports=(),
                            integrate=False, combine=True, ceilings=ceilings)

    @property
    def library_version(self) -> str:
        """What provenance records: results measured with another cuBLASLt or Triton are stale
        (a stored cuBLASLt configuration is only valid for its version, Triton kernels are
        compiled by the installed Triton). A part that cannot be read here is ``unavailable``."""
        return f"cublaslt-{_installed(_cublaslt_version)}+triton-{_installed(_triton_version)}"

    @classmethod
    def from_config(cls, config: dict) -> "CudaPlatform":
        cuda = config.get("cuda") or {}
        settings = SearchSettings(
            budget_s=float(cuda.get("search_budget_s", _default("cuda.search_budget_s"))),
            heuristic_count=int(cuda.get("heuristic_count", _default("cuda.heuristic_count"))),
            max_candidates=int(cuda.get("max_candidates", _default("cuda.max_candidates"))),
            finalists=int(cuda.get("finalists", _default("cuda.finalists"))),
            workspace_mb=int(cuda.get("workspace_mb", _default("cuda.workspace_mb"))),
            err_thr=float(config.get("err_thr", _default("err_thr"))),
            keep_threshold=float(config.get("up_thr", _default("up_thr"))))
        return cls(settings, seed=int(cuda.get("seed", 0)), arch=config.get("arch", "h200"),
                   tune_options=cuda.get("tune") or {})

    # --- shared machinery -----------------------------------------------------------------------
    def _lt(self, problem: GemmProblem):
        from . import cublaslt

        if problem not in self._descriptors:
            self._descriptors[problem] = cublaslt.ProblemDescriptors(
                problem, self.settings.workspace_mb * 2**20)
        return self._descriptors[problem]

    def _workspace(self, device: int):
        t = timing.torch()
        if device not in self._workspaces:
            self._workspaces[device] = t.empty(self.settings.workspace_mb * 2**20,
                                               dtype=t.uint8, device=f"cuda:{device}")
        return self._workspaces[device]

    def _operands(self, problem: GemmProblem, device: int, salt: int = 0):
        seed = (self.seed * 1_000_003 + zlib.crc32(problem.name.encode()) + salt) & 0x7FFFFFFF
        return timing.make_operands(problem, device, seed)

    def launchers(self, solution: dict, problem: GemmProblem, sets, device: int) -> list:
        """One zero-argument call per operand set running ``solution`` on ``problem``."""
        make = self.launcher_factory(solution, problem, device)
        return [make(ops) for ops in sets]

    def launcher_factory(self, solution: dict, problem: GemmProblem, device: int):
        """operands -> zero-argument call, the per-solution work (heuristic query, AlgoCheck,
        feasibility) done once: what the benchmarks run."""
        family = families.of(solution)
        if family.runs_itself:
            cfg = family.feasible(solution, problem)
            return lambda ops: family.launcher(cfg, ops)
        lt, algo, workspace = self._cublaslt_algo(solution, problem, device)
        return lambda ops: lt.call(algo, ops, workspace)

    def operand_launcher(self, solution: dict, problem: GemmProblem, device: int):
        """(x, y, d) -> None running ``solution`` on ``timing``'s 2-D row-major views (x =
        op(B)^T, y = op(A)^T, d = D_mem) of one set of strides, everything but the operands'
        addresses prepared once: what the runtime calls per GEMM."""
        family = families.of(solution)
        if family.runs_itself:
            return family.prepared(family.feasible(solution, problem), problem, device,
                                   early_edge=solution.get(families.EARLY_EDGE))
        lt, algo, workspace = self._cublaslt_algo(solution, problem, device)
        launch = lt.prepared(algo, workspace)

        def call(x, y, d):
            # cuBLASLt reads A and B as stored: y and x are views of them (same addresses)
            launch(y.data_ptr(), x.data_ptr(), d.data_ptr())

        call.linear = call  # F.linear's weight w is stored at y = w^T's address
        return call

    def _cublaslt_algo(self, solution: dict, problem: GemmProblem, device: int):
        """(descriptors, algo struct, workspace) of a cublaslt or default solution."""
        lt = self._lt(problem)
        if families.of(solution) is families.DEFAULT:
            algo = lt.heuristic(1)[0][1]
        else:
            check_environment(solution, device)
            algo = lt.checked(families.CUBLASLT.from_params(solution))
        return lt, algo, self._workspace(device)

    def _row(self, problem: GemmProblem, solution: dict, us: float, device: int,
             **extra) -> dict:
        name = solution["SolutionNameMin"]
        return {**problem.gemm_fields(), "scaleA": 0, "scaleB": 0, "us": round(float(us), 4),
                "gflops": round(problem.flops / us / 1e3, 3),
                "gbps": round(problem.min_bytes / us / 1e3, 3),
                "solution_index": solution_index_of(name), "solution_name": name,
                "kernel": name, "platform": self.name, "measured": True, "device": int(device),
                "params": json.dumps(_portable(solution), sort_keys=True), **extra}

    def cublaslt_solution(self, cfg, device: int) -> dict:
        """A searched configuration as a solution: not ``families.CUBLASLT.to_params``, it
        records the cuBLASLt version and GPU it was measured on (``check_environment``) and,
        as library files always had, no KernelNameMin."""
        from . import cublaslt

        return {"SolutionNameMin": cfg.name, "Backend": "cublaslt",
                "CublasLt": cfg.to_params(), "CublasLtVersion": cublaslt.version(),
                "Device": gpu_name(device)}

    def default_solution(self, problem: GemmProblem, device: int) -> dict:
        """The heuristic's first choice, named by its configuration."""
        cfg = self._lt(problem).heuristic(1)[0][0]
        return {"SolutionNameMin": DEFAULT_NAME, "Backend": "default", "Chosen": cfg.name}

    # --- protocol -------------------------------------------------------------------------------
    def bench(self, problems, out_dir, device, library=None, duration=None,
              progress=None) -> pd.DataFrame:
        problems = require_problems(self.name, "bench", problems)
        use_device(device)
        chosen = library_solutions(library) if library is not None else {}
        rows = []
        t = timing.torch() if library is None else None  # torch.matmul is timed beside it
        for problem in problems:
            sets = self._operands(problem, device)
            default = self.default_solution(problem, device)
            solution = chosen.get(problem_key(problem)) or default
            variants = [self.launchers(solution, problem, sets, device)]
            if library is None and problem.type.a_type == problem.type.b_type:
                variants.append([(lambda o=o: t.matmul(o.x, o.y, out=o.d)) for o in sets])
            elif solution is not default:  # the reference beside the tuned kernel, interleaved
                variants.append(self.launchers(default, problem, sets, device))
            timings = timing.time_side_by_side(variants)
            extra = {}
            if len(timings) > 1 and library is not None:
                timings = self._settle_keep(problem, [solution, default], timings, device)
                extra["spread_pct"] = round(
                    100 * timing.paired_ratio_spread(timings[1], timings[0]), 3)
            if len(timings) > 1:
                name = "torch_us" if library is None else "us_paired_reference"
                extra[name] = round(timings[1].us, 4)
            rows.append(self._row(problem, solution, timings[0].us, device, **extra))
            del sets
            if progress is not None:
                progress(1)
        return results_frame(rows, RESULT_COLUMNS)

    def _retimed(self, problem: GemmProblem, solutions: list, first: list, device: int,
                 settle: bool = True) -> list:
        """``first`` (side-by-side timings of ``solutions``) merged with RETIME_ROUNDS more
        rounds, each on fresh rotating operands, the solutions interleaved."""
        rounds = [first]
        for r in range(RETIME_ROUNDS):
            fresh = self._operands(problem, device, salt=101 + r)
            rounds.append(timing.time_side_by_side(
                [self.launchers(sol, problem, fresh, device) for sol in solutions],
                settle=settle))
            del fresh
        return [timing.merged(list(per)) for per in zip(*rounds)]

    def _settle_keep(self, problem: GemmProblem, solutions: list, timings: list,
                     device: int) -> list:
        """The tuned kernel beside the default: re-timed when their ratio is within
        RETIME_BAND of the keep threshold (the campaign's up_thr)."""
        threshold = self.settings.keep_threshold
        if abs(timings[1].us / timings[0].us - threshold) > RETIME_BAND:
            return timings
        return self._retimed(problem, solutions, timings, device)

    def _settle_ties(self, problem: GemmProblem, timed: list, timings: list, errors: list,
                     device: int) -> tuple[list, dict]:
        """Search finalists within RETIME_BAND of the fastest correct one re-timed side by
        side; of those within TIE_BAND of the fastest after that, the lowest solution index
        wins: {position: winner's name} of the tie's losers."""
        ok = [i for i, e in enumerate(errors) if e < self.settings.err_thr]
        if not ok:
            return timings, {}
        best = min(timings[i].us for i in ok)
        near = [i for i in ok if timings[i].us <= best * (1 + RETIME_BAND)]
        if len(near) > 1:
            again = self._retimed(problem, [timed[i][0] for i in near],
                                  [timings[i] for i in near], device, self.settle_finals)
            timings = list(timings)
            for i, t in zip(near, again):
                timings[i] = t
            best = min(timings[i].us for i in near)
        tied = [i for i in near if timings[i].us <= best * (1 + TIE_BAND)]
        names = {i: timed[i][0]["SolutionNameMin"] for i in tied}
        winner = min(tied, key=lambda i: (solution_index_of(names[i]), names[i]))
        return timings, {i: names[winner] for i in tied if i != winner}

    def search(self, problems, out_dir, device, duration=None, progress=None) -> pd.DataFrame:
        problems = require_problems(self.name, "search", problems)
        use_device(device)
        rows = []
        for problem in problems:
            try:
                rows.extend(self.search_one(problem, device))
            except PlatformError as err:
                log.warning("search skipped %s: %s", problem.name, err)
            if progress is not None:
                progress(1)
        return results_frame(rows, RESULT_COLUMNS)

    def search_one(self, problem: GemmProblem, device: int) -> list[dict]:
        """Screen candidates within the budget, re-time the fastest side by side with the
        default, check their numerics; rows of every candidate measured."""
        s = self.settings
        lt = self._lt(problem)
        sets = self._operands(problem, device)
        workspace = self._workspace(device)
        default = self.default_solution(problem, device)
        # the heuristic's own list first (always screened), then cuBLASLt's enumeration while
        # the budget lasts, each configuration once
        ranked = lt.heuristic(s.heuristic_count)
        peers = {cfg for cfg, _ in ranked[:PEER_TOP]}
        heuristic = lt.rebuilt(ranked)
        screened = self._screened(problem, lt, heuristic, sets, workspace)
        screened.sort(key=lambda c: c[2])
        # the heuristic's first PEER_TOP go to the side-by-side whatever their screening said
        finalists = screened[:s.finalists] + [c for c in screened[s.finalists:] if c[0] in peers]
        rows = [self._row(problem, self.cublaslt_solution(c, device), us, device,
                          stage="screen", error=math.nan, eligible=False, screen_s=at)
                for c, _, us, at in screened[s.finalists:] if c not in peers]
        default_calls = self.launchers(default, problem, sets, device)
        timed = [(default, default_calls)] + [
            (self.cublaslt_solution(c, device), [lt.call(a, ops, workspace) for ops in sets])
            for c, a, _, _ in finalists]
        screen_s = [math.nan] + [at for *_, at in finalists]  # the default is not screened
        timings = timing.time_side_by_side([calls for _, calls in timed],  # same operands
                                           settle=self.settle_finals)
        ref = timing.reference(sets[0])  # one float32 product for every finalist's check
        errors = [timing.checked_error(calls[0], sets[0], ref) for _, calls in timed]
        timings, tie_lost = self._settle_ties(problem, timed, timings, errors, device)
        for i, ((solution, _), measured, error) in enumerate(zip(timed, timings, errors)):
            ok = error < s.err_thr
            if not ok:
                log.warning("%s: %s rejected, relative error %.3g", problem.name,
                            solution["SolutionNameMin"], error)
            rows.append(self._row(problem, solution, measured.us, device, stage="final",
                                  error=error, eligible=ok and i not in tie_lost,
                                  spread_pct=round(100 * measured.spread, 3),
                                  tie_with=tie_lost.get(i, ""), screen_s=screen_s[i]))
        log.info("%s: screened %d configurations in %.1f s", problem.name, len(screened),
                 s.budget_s)
        return rows

    def _screened(self, problem: GemmProblem, lt, heuristic: list, sets, workspace) -> list:
        """(config, algo, quick us, seconds since the start) of every candidate screened:
        the heuristic's list whatever the budget, then cuBLASLt's enumeration, each
        configuration once, until the budget or ``max_candidates``. The next candidate is
        enumerated while the GPU runs the last one's replays (``timing.start_timing``)."""
        s = self.settings
        seen, screened, pending = set(), [], None
        start = time.monotonic()
        deadline = start + s.budget_s

        def collect():
            cfg, algo, timed = pending
            try:
                screened.append((cfg, algo, timed.result().us,
                                 round(time.monotonic() - start, 3)))
            except Exception as err:  # noqa: BLE001 - see below
                _failed_to_run(problem, cfg, err)

        for position, (cfg, algo) in enumerate(itertools.chain(heuristic, lt.enumerate())):
            taken = len(screened) + (pending is not None)
            if position >= len(heuristic) and (time.monotonic() > deadline
                                               or taken >= s.max_candidates):
                break
            if cfg in seen:
                continue
            seen.add(cfg)
            if pending is not None:
                collect()
                pending = None
            calls = [lt.call(algo, ops, workspace) for ops in sets]
            try:
                pending = (cfg, algo, timing.start_timing(calls))
            except Exception as err:  # noqa: BLE001 - AlgoCheck passed, yet it cannot run
                _failed_to_run(problem, cfg, err)
        if pending is not None:
            collect()
        return screened

    def extract(self, winners: pd.DataFrame, out_dir) -> list[Path]:
        by_type: dict[GemmType, list] = {}
        for row in winners.to_dict("records"):
            problem = GemmProblem.from_row(row)
            solution = json.loads(row["params"])
            by_type.setdefault(problem.type, []).append((problem, solution, float(row["gflops"])))
        paths = []
        for gemm_type, chosen in sorted(by_type.items()):
            lib = liblogic.build(self.library_template(gemm_type, chosen), chosen,
                                 key=lambda sol: sol["SolutionNameMin"])
            path = Path(out_dir) / liblogic.file_name(self.arch, gemm_type)
            paths.append(liblogic.dump(lib, path))
        return paths

    def library_template(self, gemm_type: GemmType, chosen=()) -> liblogic.LibraryLogic:
        devices = sorted({sol.get("Device") for _, sol, _ in chosen if sol.get("Device")})
        return liblogic.LibraryLogic(
            version={"MinimumRequiredVersion": "5.0.0"}, schedule_name=self.arch,
            architecture=self.arch, device_names=devices or [self.arch],
            problem_type=liblogic.problem_type_for(gemm_type), solutions=[])

    def create_library(self, libs_dir, out_dir) -> Path:
        """The cuda runtime loads library logic directly: validate and copy it."""
        out = Path(out_dir) / "library"
        out.mkdir(parents=True, exist_ok=True)
        for name, lib in liblogic.load_dir(libs_dir).items():
            for solution in lib.solutions:
                validate_solution(solution, source=f"{libs_dir}/{name}")
            liblogic.dump(lib, out / name)
        return out

    def verify(self, problems, out_dir, device, library, progress=None) -> pd.DataFrame:
        problems = require_problems(self.name, "verify", problems)
        use_device(device)
        chosen = library_solutions(library)
        rows = []
        for problem in problems:
            solution = chosen.get(problem_key(problem)) or self.default_solution(problem, device)
            ops = self._operands(problem, device, salt=7)[:1]  # fresh data, not the timing's
            error = timing.checked_error(self.launchers(solution, problem, ops, device)[0],
                                         ops[0])
            row = self._row(problem, solution, 1.0, device)
            rows.append({c: row[c] for c in VERIFY_COLUMNS if c in row} | {"error": error})
            if progress is not None:
                progress(1)
        return results_frame(rows, VERIFY_COLUMNS)

    def lib_source(self, solution_index: int) -> str:
        return original_columns.NOT_FOUND  # cuBLASLt keeps no logic-file directories

    def reference_solution(self, problem, solution_index) -> dict:
        """The reference is the library default: a solution that tells the runtime to fall
        through to cuBLAS's own heuristic."""
        return {"SolutionIndex": int(solution_index), "SolutionNameMin": DEFAULT_NAME,
                "Backend": "default"}

    def race(self, problem, solutions, device) -> list[tuple[float, float]]:
        use_device(device)
        sets = self._operands(problem, device)
        checks = self._operands(problem, device, salt=7)[:1]  # fresh data, not the timing's
        entrants, out = [], [(math.inf, math.inf)] * len(solutions)
        for i, solution in enumerate(solutions):
            solution = self.default_solution(problem, device) if solution is None else solution
            try:
                entrants.append((i, self.launchers(solution, problem, sets, device),
                                 self.launchers(solution, problem, checks, device)[0]))
            except Exception as err:  # a solution another campaign shipped loses, loudly
                log.warning("race: %s cannot run %s: %s", solution.get("SolutionNameMin"),
                            problem.name, err)
        timings = timing.time_side_by_side([calls for _, calls, _ in entrants])
        ref = timing.reference(checks[0])
        for (i, _, check), t in zip(entrants, timings):
            out[i] = (t.us, timing.checked_error(check, checks[0], ref))
        return out

    def sweep(self, problems, library, out_dir, device) -> pd.DataFrame:
        problems = require_problems(self.name, "sweep", problems)
        use_device(device)
        lib = liblogic.load(library)
        rows = []
        for problem in problems:
            sets = self._operands(problem, device)
            for position, solution in enumerate(lib.solutions):
                try:
                    us = timing.time_calls(self.launchers(solution, problem, sets, device)).us
                except PlatformError:
                    us = math.inf
                rows.append({"m": problem.m, "n": problem.n, "batch_count": problem.batch,
                             "k": problem.k, "SolutionIndex": lib.solutions.index_of(position),
                             "us": us, "gflops": problem.flops / us / 1e3})
        return pd.DataFrame(rows)

    def configure(self, gemm_config, out_dir, arch, options):
        from . import tune

        # a GemmConfig (what the workflow's configure phase passes) or (GemmType, sizes)
        gemm_type, sizes = ((gemm_config.gemm_type, gemm_config.sizes)
                            if hasattr(gemm_config, "gemm_type") else gemm_config)
        return tune.configure(gemm_type, sizes, Path(out_dir), {**self.tune_options,
                                                                 **(options or {})})

    def optimize(self, tuning_yaml, build_dir, device) -> Path:
        from . import tune

        use_device(device)
        return tune.optimize(Path(tuning_yaml), Path(build_dir), device)


def _failed_to_run(problem: GemmProblem, cfg, err: Exception) -> None:
    """A configuration AlgoCheck accepted can still fail to run: no candidate."""
    log.info("%s: %s failed to run: %s", problem.name, cfg.name, err)
    timing.torch().cuda.synchronize()


# --- library files ----------------------------------------------------------------------------

def problem_key(problem: GemmProblem) -> tuple:
    return (problem.type, problem.size)


def library_solutions(library) -> dict:
    """(GEMM type, size) -> solution dict, from the library dir ``create_library`` wrote."""
    return solutions_in(Path(library) / "library")


def check_environment(solution: dict, device: int) -> None:
    """A cuBLASLt configuration is only trusted with the cuBLASLt version and GPU it was
    measured on."""
    from . import cublaslt

    want_version, have_version = solution.get("CublasLtVersion"), cublaslt.version()
    if want_version is not None and int(want_version) != have_version:
        raise PlatformError(f"solution {solution['SolutionNameMin']} was measured with "
                            f"cuBLASLt {want_version}, this is {have_version}: re-run the search")
    want_gpu = solution.get("Device")
    if want_gpu and want_gpu != gpu_name(device):
        raise PlatformError(f"solution {solution['SolutionNameMin']} was measured on "
                            f"{want_gpu}, this is {gpu_name(device)}: re-run the search")


def _portable(solution: dict) -> dict:
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in solution.items()
            if k != "SolutionIndex"}
