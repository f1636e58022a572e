"""The optimize phase, platform-independent part: a tuning YAML's fork parameters and groups
become a search space; the Tensile backend measures all of it, the Ductile backend runs the GA
(checkpointed in the build dir); the best kernel of every size becomes TensileLite-style library
logic in ``build_dir/3_LibraryLogic``. The platform supplies how a kernel is timed."""

from __future__ import annotations

import fcntl
import logging
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

from .. import files
from ..errors import GekoError
from ..gemm import GemmProblem
from ..library import logic
from ..schemas import sha256_of
from . import ga, running_jobs
from .problem import TuningConfig
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

CHECKPOINT = "step-00__ductile.checkpoint.json"
# TensileLite's Ductile backend pickles its GA state as step-<NN>__ductile.checkpoint (rocm)
CHECKPOINT_NAMES = (CHECKPOINT, "step-00__ductile.checkpoint")
LOGIC_DIR = "3_LibraryLogic"


def space_of(cfg: TuningConfig, valid: Callable[[dict], bool] | None = None) -> ga.Space:
    """Fork parameters as variables, each multi-entry group as one variable ``group_<i>`` whose
    values are the group's entries; the MI group's weights (Backend.Config) become priors."""
    forks = {name: list(values) for name, values in cfg.fork.items()}
    groups = [[dict(entry) for entry in group] for group in cfg.groups]
    weights = {i: list(w) for i, w in cfg.group_weights.items()
               if i < len(groups) and len(w) == len(groups[i])}
    for name in [n for n in forks if any(n in e for group in groups for e in group)]:
        values = forks.pop(name)
        for i, group in enumerate(groups):
            if any(name in entry for entry in group):
                groups[i], weights[i] = _fold_fork(group, weights.get(i), name, values)
    variables: dict[str, list] = dict(forks)
    for i, group in enumerate(groups):
        variables[f"group_{i}"] = group
    priors = {f"group_{i}": w for i, w in weights.items() if w is not None}
    return ga.Space(variables, weights=priors or None, valid=valid)


def _fold_fork(group: list[dict], weights: list | None, name: str, values: list):
    """A fork parameter that some entries of a group also set (gfx950's MIArchVgpr on big MI
    tiles): entries that set it keep their own value, the more specific setting; every other
    entry is copied once per fork value (its prior weight shared among the copies)."""
    entries, shares = [], []
    for position, entry in enumerate(group):
        copies = [entry] if name in entry else [{**entry, name: v} for v in values]
        entries.extend(copies)
        if weights is not None:
            shares.extend([weights[position] / len(copies)] * len(copies))
    return entries, (shares if weights is not None else None)


def search(cfg: TuningConfig, space: ga.Space, evaluate, build_dir: Path, *, seed: int = 0,
           max_exhaustive: int = 200_000, progress=None) -> ga.SearchResult:
    """Tensile backend: every kernel (a seeded sample of ``max_exhaustive`` when larger);
    Ductile backend: the GA with the YAML's population, resumable from its checkpoint."""
    if cfg.backend.lower() == "tensile":
        if space.size <= max_exhaustive:
            return ga.exhaustive(space, evaluate, progress=progress)
        log.warning("%s: %d kernels; measuring a seeded sample of %d", cfg.name, space.size,
                    max_exhaustive)
        return ga.random_search(space, evaluate, max_exhaustive, seed=seed, progress=progress)
    config = cfg.backend_config
    pop = int(config.get("pop_size", ga.GAConfig.pop_size))
    return ga.run(space, evaluate, checkpoint=Path(build_dir) / CHECKPOINT, progress=progress,
                  seed=seed, pop_size=max(2, min(pop, space.size)),
                  n_gen=int(config.get("n_gen", ga.GAConfig.n_gen)),
                  soo=bool(config.get("soo", False)))


def best_library(cfg: TuningConfig, result: ga.SearchResult, template: logic.LibraryLogic,
                 solution_of: Callable[[dict], dict]) -> logic.LibraryLogic:
    """The best kernel of every size as library logic (sizes whose kernels all failed are left
    out); ``solution_of(params)`` turns a kernel's parameters into a solution mapping."""
    chosen = []
    best = result.best_index()
    scores = result.best_scores
    for n, size in enumerate(cfg.sizes):
        if best[n] < 0 or not np.isfinite(scores[n]) or scores[n] <= 0:
            log.warning("%s: no valid kernel for size %s", cfg.name, list(size))
            continue
        solution = solution_of(result.space.decode(result.individuals[best[n]]))
        chosen.append((GemmProblem(cfg.gemm_type, *size), solution, float(scores[n])))
    # one kernel chosen for several sizes is one solution
    return logic.build(template, chosen, key=lambda solution: solution["SolutionNameMin"])


def write_logic(lib: logic.LibraryLogic, build_dir: Path, header: str | None = None) -> Path:
    out = Path(build_dir) / LOGIC_DIR
    out.mkdir(parents=True, exist_ok=True)
    return logic.dump(lib, out / logic.file_name(lib.schedule_name, lib.gemm_type), header=header)


def progress_logger(name: str, total: int | None = None):
    """A progress callback that logs Ductile's per-generation table, one line per generation,
    and shows the generation count (a bar on a terminal, throttled ``<name> generations: 12/100
    (12%) elapsed 3.1 s`` lines in a log; ``total`` = generations expected, None if unknown).
    ``progress.close()`` writes the last count when the search stops before ``total``."""
    from .. import progress as _progress

    bar = _progress.Progress(total, f"{name} generations", unit="gen")

    def progress(row: dict) -> None:
        log.info("%s | %s", name, ga.format_row(row))
        bar.set(int(row["generation"]) + 1)
        running_jobs.generation(int(row["generation"]) + 1)

    progress.close = bar.close
    return progress


# --- build-dir bookkeeping ------------------------------------------------------------------------

FAILCOUNT = ".failcount"
TUNED_FROM = ".tuning_yaml.sha256"  # the SHA-256 of the tuning YAML the build dir is made from


class TuningAborted(GekoError, RuntimeError):
    """Too many tuning jobs failed in a row: the campaign stops starting new ones."""


def build_state(build_dir: Path) -> str:
    """missing | completed (3_LibraryLogic has a library) | resumable (a GA checkpoint and
    nothing else that matters) | failed."""
    build_dir = Path(build_dir)
    if not build_dir.is_dir():
        return "missing"
    if any((build_dir / LOGIC_DIR).glob("*.yaml")):
        return "completed"
    if any((build_dir / name).is_file() for name in CHECKPOINT_NAMES):
        return "resumable"
    leftovers = [p for p in build_dir.iterdir() if p.name not in (FAILCOUNT, TUNED_FROM)]
    return "failed" if leftovers else "missing"


def clean_for_retry(build_dir: Path) -> None:
    """Before a rerun: keep only the GA checkpoint, the failure count and the tuning YAML it
    was made from."""
    for path in Path(build_dir).iterdir() if Path(build_dir).is_dir() else []:
        if path.name in (*CHECKPOINT_NAMES, FAILCOUNT, TUNED_FROM):
            continue
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def prepare_build_dir(build_dir: Path, name: str, tuning_yaml: Path | None = None) -> str:
    """The build dir made ready for a run, as the original's worker setup: a failed or
    interrupted run is cleaned down to its GA checkpoint (kept, so the GA resumes) and its
    failure count. With ``tuning_yaml``, a build dir made from another version of it (edited
    at review after a run) starts over: its checkpoint is another search space's, which the
    GA would refuse to resume. Returns the state found."""
    build_dir = Path(build_dir)
    state = build_state(build_dir)
    if tuning_yaml is not None and state != "missing" and \
            _tuned_from_another(build_dir, tuning_yaml):
        log.info("%s: build dir made from another version of %s, starting over", name,
                 Path(tuning_yaml).name)
        shutil.rmtree(build_dir)
        state = "missing"
    if state in ("failed", "resumable"):
        log.info("%s: %s build dir, retrying%s", name, state,
                 " from its checkpoint" if state == "resumable" else "")
        clean_for_retry(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    if tuning_yaml is not None:
        files.write_text(build_dir / TUNED_FROM, sha256_of(tuning_yaml) + "\n")
    return state


def _tuned_from_another(build_dir: Path, tuning_yaml: Path) -> bool:
    """Whether the build dir records another tuning YAML than ``tuning_yaml``'s content (a
    build dir that records none, of an older geko, is taken as this one's)."""
    recorded = build_dir / TUNED_FROM
    if not recorded.is_file():
        return False
    return recorded.read_text().strip() != sha256_of(tuning_yaml)


class FailureStreak:
    """Consecutive failed tuning jobs across the campaign (a shared file under a lock); a
    degrading node shows up as a run of failures, and burning hours on it helps nobody.
    ``failed_log`` is where the failed jobs are listed (named when the cap stops the tuning)."""

    def __init__(self, directory: Path, cap: int, failed_log):
        self.path, self.cap = Path(directory) / ".failure_streak", int(cap)
        self.failed_log = failed_log

    def _update(self, change) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.seek(0)
            text = handle.read().strip()
            value = change(int(text) if text.isdigit() else 0)
            handle.seek(0)
            handle.truncate()
            handle.write(f"{value}\n")
            return value

    def check(self) -> None:
        streak = self._update(lambda v: v)
        if self.cap and streak >= self.cap:
            raise TuningAborted(f"{streak} consecutive tuning jobs failed (max_consecutive_"
                               f"failures={self.cap}): not starting more; see {self.failed_log}")

    def succeeded(self) -> None:
        self._update(lambda v: 0)

    def failed(self) -> int:
        return self._update(lambda v: v + 1)


def bump_failcount(build_dir: Path) -> int:
    path = Path(build_dir) / FAILCOUNT
    path.parent.mkdir(parents=True, exist_ok=True)
    count = int(path.read_text() or 0) + 1 if path.exists() else 1
    path.write_text(f"{count}\n")
    return count
