"""The optimize phase, platform-independent part: a tuning YAML's fork parameters and groups
become a search space; the Tensile backend measures all of it, the Ductile backend runs the GA
(checkpointed in the build dir); the best kernel of every size becomes TensileLite-style library
logic in ``build_dir/3_LibraryLogic``. The platform supplies how a kernel is timed."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import numpy as np

from ..gemm import GemmProblem
from ..library import logic
from . import ga, running_jobs
from .build_dir import CHECKPOINT, LOGIC_DIR
from .problem import TuningConfig
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)



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
