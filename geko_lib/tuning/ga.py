"""Genetic-algorithm tuner over categorical kernel-parameter spaces, with Ductile's semantics.

Ductile is the GA vendored in TensileLite (``Tensile/ductile``); GEKO drives it through the tuning
YAML. This module keeps its observable behaviour and drops its pitfalls:

* **Space.** Named categorical variables. A variable whose values are all mappings is a *group*
  (Tensile's ``Groups``): one categorical whose chosen mapping is merged into the individual, so
  correlated parameters move together. Optional per-variable weights are costs turned into
  sampling probabilities ``exp(-beta * (w - w_min))`` (normalized, ``beta`` 0.25 as in Ductile).
  A constraint ``valid(params) -> bool`` rejects individuals, which are resampled up to
  ``max_iters`` times; an individual that never validates is dropped and counted.
* **Loop.** Tournament selection (k=2), uniform crossover (0.9), per-gene mutation (1/n_vars)
  that resamples from the prior, fitness survival over parents + offspring with elitism of the
  best kernel of every size, no duplicate evaluation, one batch ``evaluate(list_of_params)`` per
  generation returning scores of shape ``(n_sizes, batch)`` (higher is better; NaN or <= 0 is a
  failed kernel).
* **Fitness** (Ductile's, non-stationary): a kernel's score on a size divided by the best score
  seen so far on that size, reduced over sizes with ``max`` (default) or ``mean`` (``soo``),
  recomputed for the whole retained population every generation.
* **Early stop** when the population's mean and max fitness did not rise by more than ``tol`` over
  the last ``period`` generations. With the ``max`` reduction the max fitness is always 1 (the
  best kernel of some size is always kept), so in practice the mean decides. The fitness being
  relative, a new best on a size lowers everyone else's fitness on it: the mean can fall while
  the search improves, which counts as no improvement (as in Ductile).
* **Not copied:** Ductile halves the population when the largest variable cardinality is below
  pop/5 (``auto_pop_size``), and shrinks it on low diversity. GEKO measured the first silently
  turning a 512 population into 127 evaluations per generation, so the population here is fixed
  (capped only at the size of the space); low diversity is answered by the duplicate repair
  (forced mutations), not by evaluating less. A space with fewer valid combinations than the
  population is an error (use :func:`exhaustive`); it is detected exactly for spaces of up to
  ``ENUMERATE_LIMIT`` combinations, larger ones run with the individuals sampling could find.
* **Checkpoint.** After every generation a JSON file (atomic write) holds the archive of every
  evaluated individual and its scores, the population, the best score per size, the history and
  the RNG state, so a resumed run continues exactly where an uninterrupted one would be: same
  batches, same result (not a pickle, unlike Ductile).

``n_gen`` counts every evaluated generation including the initial population.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from .. import files
from ..errors import GekoError
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

Evaluate = Callable[[list], np.ndarray]
CHECKPOINT_FORMAT = "geko-ga-checkpoint"
CHECKPOINT_VERSION = 1
ENUMERATE_LIMIT = 1 << 18  # spaces up to this size are enumerated when sampling runs dry


class GAError(GekoError, ValueError):
    """A search space, configuration, evaluation or checkpoint the tuner cannot use."""


# --------------------------------------------------------------------------------------------
# search space


class Space:
    """Categorical variables, priors and a constraint. Individuals are int64 index vectors."""

    def __init__(self, variables: Mapping[str, Sequence],
                 weights: Mapping[str, Sequence[float]] | None = None,
                 valid: Callable[[dict], bool] | None = None, beta: float = 0.25):
        if not variables:
            raise GAError("the search space has no variables")
        self.names = tuple(str(n) for n in variables)
        self.values = tuple(tuple(v) for v in variables.values())
        self.groups = []
        owner: dict[str, str] = {}
        for name, vals in zip(self.names, self.values):
            if not vals:
                raise GAError(f"variable {name!r} has no values")
            kinds = {isinstance(v, Mapping) for v in vals}
            if len(kinds) > 1:
                raise GAError(f"variable {name!r} mixes mappings (group entries) and plain values")
            group = kinds == {True}
            self.groups.append(group)
            for key in sorted({k for v in vals for k in v}) if group else [name]:
                if owner.setdefault(key, name) != name:
                    raise GAError(f"parameter {key!r} is set by both {owner[key]!r} and {name!r}")
        self.groups = tuple(self.groups)
        self.cards = np.array([len(v) for v in self.values], dtype=np.int64)
        self.valid = valid
        self.beta = float(beta)
        weights = dict(weights or {})
        unknown = set(weights) - set(self.names)
        if unknown:
            raise GAError(f"weights for unknown variables: {sorted(unknown)}")
        self.probs = []
        for name, vals in zip(self.names, self.values):
            if weights.get(name) is None:
                p = np.full(len(vals), 1.0 / len(vals))
            else:
                w = np.asarray(weights[name], dtype=np.float64)
                if w.shape != (len(vals),) or not np.isfinite(w).all():
                    raise GAError(f"weights of {name!r} must be {len(vals)} finite numbers")
                p = np.exp(-self.beta * (w - w.min()))
                p /= p.sum()
            self.probs.append(p)
        self._cdf = []
        for p in self.probs:
            cdf = np.cumsum(p)
            cdf[-1] = 1.0
            self._cdf.append(cdf)

    @property
    def n_vars(self) -> int:
        return len(self.names)

    @property
    def size(self) -> int:
        """Number of combinations (valid or not)."""
        return math.prod(int(c) for c in self.cards)

    def decode(self, ind) -> dict:
        """The parameter dict of an individual; group entries are merged in."""
        out = {}
        for name, vals, group, i in zip(self.names, self.values, self.groups, ind):
            value = vals[int(i)]
            if group:
                out.update(value)
            else:
                out[name] = value
        return out

    def is_valid(self, ind) -> bool:
        return self.valid is None or bool(self.valid(self.decode(ind)))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` individuals drawn from the priors, shape ``(n, n_vars)``."""
        u = rng.random((n, self.n_vars))
        out = np.empty((n, self.n_vars), dtype=np.int64)
        for j, cdf in enumerate(self._cdf):
            out[:, j] = np.minimum(np.searchsorted(cdf, u[:, j], side="right"), len(cdf) - 1)
        return out

    def enumerate(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Individuals ``start..stop`` of the mixed-radix enumeration (last variable fastest)."""
        if self.size >= 2**62:
            raise GAError(f"the space has {self.size} combinations: too many to enumerate")
        stop = self.size if stop is None else min(stop, self.size)
        flat = np.arange(start, stop, dtype=np.int64)
        return np.stack(np.unravel_index(flat, tuple(self.cards)), axis=1).astype(np.int64)

    def fingerprint(self) -> str:
        text = json.dumps([self.names, [repr(v) for v in self.values], self.beta,
                           [p.round(12).tolist() for p in self.probs]])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# results


@dataclass
class SearchResult:
    """Everything one search evaluated, in evaluation order, and how it ended."""

    space: Space = field(repr=False)
    individuals: np.ndarray  # (n_evals, n_vars), in evaluation order
    scores: np.ndarray  # (n_sizes, n_evals); NaN = failed kernel
    population: np.ndarray  # archive rows of the final population, best first
    fitness: np.ndarray  # their fitness
    history: list  # one dict per generation (or batch)
    stop_reason: str
    dropped: int = 0  # individuals that could not be made valid and new

    @property
    def n_evals(self) -> int:
        return len(self.individuals)

    @property
    def n_sizes(self) -> int:
        return self.scores.shape[0]

    def best_index(self) -> np.ndarray:
        """Archive row of the best kernel per size (-1 where every kernel failed)."""
        clean = _clean(self.scores)
        if clean.shape[1] == 0:
            return np.full(self.n_sizes, -1)
        return np.where(clean.max(axis=1) > 0, clean.argmax(axis=1), -1)

    @property
    def best_scores(self) -> np.ndarray:
        clean = _clean(self.scores)
        return clean.max(axis=1) if clean.shape[1] else np.zeros(self.n_sizes)

    @property
    def best_params(self) -> list:
        """The best kernel's parameters for each size (None where all failed)."""
        return [None if i < 0 else self.space.decode(self.individuals[i])
                for i in self.best_index()]

    def overall(self, n: int | None = None) -> list[dict]:
        """The final population, best fitness first: params, fitness and per-size scores."""
        rows = self.population[:n]
        return [{"params": self.space.decode(self.individuals[r]), "fitness": float(f),
                 "scores": [None if not np.isfinite(s) else float(s) for s in self.scores[:, r]]}
                for r, f in zip(rows, self.fitness[: len(rows)])]

    def best_curve(self) -> np.ndarray:
        """Best score per size after each evaluation, shape ``(n_sizes, n_evals)``."""
        return np.maximum.accumulate(_clean(self.scores), axis=1)


def format_row(row: dict) -> str:
    """One line of the per-generation log table (``gen | n_evals | ...`` like Ductile's)."""
    return (f"{row['generation']:>4} | {row['n_evals']:>7} | {row['best_fitness']:.4f} | "
            f"{row['mean_fitness']:.4f} | " + " ".join(f"{s:.6g}" for s in row["best_scores"]))


def _clean(scores: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(scores) & (scores > 0), scores, 0.0)


def _fitness(scores: np.ndarray, best: np.ndarray, soo: bool) -> np.ndarray:
    """Score over best-so-far per size, reduced over sizes (max, or mean for ``soo``)."""
    rel = np.zeros(scores.shape)
    np.divide(_clean(scores), best[:, None], out=rel, where=best[:, None] > 0)
    return rel.mean(axis=0) if soo else rel.max(axis=0)


# --------------------------------------------------------------------------------------------
# the archive: every evaluated individual, once


class _Archive:
    def __init__(self, space: Space, evaluate: Evaluate):
        self.space, self.evaluate = space, evaluate
        self.blocks: list[np.ndarray] = []
        self.score_blocks: list[np.ndarray] = []
        self.seen: set[tuple] = set()
        self.invalid: set[tuple] = set()  # cache of rejected keys (``valid`` is deterministic)
        self.n_sizes: int | None = None
        self._x = self._s = None

    def __len__(self):
        return sum(len(b) for b in self.blocks)

    @property
    def x(self) -> np.ndarray:
        if self._x is None:
            self._x = (np.concatenate(self.blocks) if self.blocks
                       else np.empty((0, self.space.n_vars), dtype=np.int64))
        return self._x

    @property
    def s(self) -> np.ndarray:
        if self._s is None:
            self._s = (np.concatenate(self.score_blocks, axis=1) if self.score_blocks
                       else np.empty((self.n_sizes or 0, 0)))
        return self._s

    def acceptable(self, key: tuple, batch: set) -> bool:
        if key in self.seen or key in batch or key in self.invalid:
            return False
        if not self.space.is_valid(key):
            self.invalid.add(key)
            return False
        return True

    def add(self, x: np.ndarray, s: np.ndarray) -> np.ndarray:
        start = len(self)
        self.blocks.append(x)
        self.score_blocks.append(s)
        self.seen.update(map(tuple, x.tolist()))
        self._x = self._s = None
        return np.arange(start, start + len(x))

    def run(self, x: np.ndarray) -> np.ndarray:
        """Evaluate one batch and file it; returns its archive rows."""
        params = [self.space.decode(ind) for ind in x]
        s = np.asarray(self.evaluate(params), dtype=np.float64)
        if s.ndim == 1:
            s = s[None, :]
        if s.ndim != 2 or s.shape[1] != len(x):
            raise GAError(f"evaluate returned shape {s.shape} for a batch of {len(x)}; expected "
                          f"(n_sizes, {len(x)})")
        if self.n_sizes is None:
            self.n_sizes = s.shape[0]
        elif s.shape[0] != self.n_sizes:
            raise GAError(f"evaluate returned {s.shape[0]} sizes, earlier {self.n_sizes}")
        s = np.where(np.isfinite(s), s, np.nan)
        return self.add(x, s)

    def sample_unique(self, rng, n: int, max_iters: int) -> np.ndarray:
        """Up to ``n`` new valid individuals from the priors (rejection, ``max_iters`` rounds)."""
        out, batch = [], set()
        for _ in range(max_iters):
            need = n - len(out)
            if need <= 0:
                break
            for row in self.space.sample(rng, need).tolist():
                key = tuple(row)
                if len(out) < n and self.acceptable(key, batch):
                    batch.add(key)
                    out.append(row)
        return np.array(out, dtype=np.int64).reshape(-1, self.space.n_vars)

    def unseen_valid(self) -> np.ndarray:
        """Every valid individual not yet evaluated (small spaces only)."""
        keep = [row for row in self.space.enumerate().tolist()
                if tuple(row) not in self.seen and self.acceptable(tuple(row), set())]
        return np.array(keep, dtype=np.int64).reshape(-1, self.space.n_vars)


# --------------------------------------------------------------------------------------------
# the GA


@dataclass(frozen=True)
class GAConfig:
    """Ductile's defaults (``Tensile/ductile/config/defaults.yaml``)."""

    pop_size: int = 512
    n_gen: int = 30
    soo: bool = False
    period: int = 5
    tol: float = 0.0008
    crossover_prob: float = 0.9
    mutation_prob: float | None = None  # None: 1 / n_vars
    tournament_k: int = 2
    max_iters: int = 250
    seed: int = 0
    max_evals: int | None = None  # evaluation budget; the last generation is cut to fit

    def trajectory_key(self) -> dict:
        """The settings a resumed run must share (n_gen and max_evals may grow)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("n_gen", "max_evals")}


class _GA:
    def __init__(self, space: Space, evaluate: Evaluate, cfg: GAConfig):
        if cfg.pop_size < 2 or cfg.n_gen < 1 or cfg.tournament_k < 1 or cfg.max_iters < 1:
            raise GAError(f"invalid GA settings: {cfg}")
        self.space, self.cfg = space, cfg
        self.pop_size = min(cfg.pop_size, space.size)
        self.p_mut = 1.0 / space.n_vars if cfg.mutation_prob is None else cfg.mutation_prob
        self.mutable = np.flatnonzero(space.cards > 1)
        self.archive = _Archive(space, evaluate)
        self.rng = np.random.Generator(np.random.PCG64(cfg.seed))
        self.pop = np.empty(0, dtype=np.int64)
        self.best = np.empty(0)
        self.history: list[dict] = []
        self.dropped = 0
        self.fingerprint = hashlib.sha256(json.dumps(
            [space.fingerprint(), cfg.trajectory_key()], sort_keys=True).encode()).hexdigest()[:16]

    # --- one generation ---------------------------------------------------------------------
    def initial(self) -> np.ndarray:
        n = self.pop_size
        x = self.archive.sample_unique(self.rng, n, self.cfg.max_iters)
        if len(x) < n and self.space.size <= ENUMERATE_LIMIT:
            taken = set(map(tuple, x.tolist()))
            rest = self.archive.unseen_valid()
            rest = rest[[tuple(r) not in taken for r in rest.tolist()]]
            if len(x) + len(rest) < n:
                raise GAError(
                    f"the search space has only {len(x) + len(rest)} valid combinations, fewer "
                    f"than the population of {n}: evaluate it with exhaustive() instead")
            x = np.concatenate([x, rest[self.rng.permutation(len(rest))[: n - len(x)]]])
        if len(x) < 2:
            raise GAError(f"found only {len(x)} valid individuals in {self.cfg.max_iters} "
                          f"sampling rounds; check the constraint or use exhaustive()")
        self._drop(n - len(x))
        return x

    def _drop(self, n: int):
        if n > 0:
            self.dropped += n
            log.warning("GA: %d individuals could not be made valid and new in %d attempts; "
                        "dropped", n, self.cfg.max_iters)

    def mate(self, n: int, fit: np.ndarray, forced: int) -> np.ndarray:
        """``n`` children: tournament, uniform crossover, prior mutation (+ forced changes)."""
        rng, nv, k = self.rng, self.space.n_vars, self.cfg.tournament_k
        parents = self.archive.x[self.pop]
        draw = rng.integers(0, len(self.pop), size=(n, 2, k))
        win = np.take_along_axis(draw, fit[draw].argmax(axis=-1)[..., None], axis=-1)[..., 0]
        p1, p2 = parents[win[:, 0]], parents[win[:, 1]]
        cross = (rng.random((n, nv)) < 0.5) & (rng.random(n) < self.cfg.crossover_prob)[:, None]
        child = np.where(cross, p2, p1)
        mutate = rng.random((n, nv)) < self.p_mut
        child = np.where(mutate, self.space.sample(rng, n), child)
        rows = np.arange(n)
        for _ in range(forced if len(self.mutable) else 0):  # a different value in one gene
            gene = self.mutable[rng.integers(0, len(self.mutable), n)]
            shift = rng.integers(1, 2**62, n) % (self.space.cards[gene] - 1) + 1
            child[rows, gene] = (child[rows, gene] + shift) % self.space.cards[gene]
        return child

    def offspring(self, n: int) -> np.ndarray:
        """``n`` new valid children; duplicates and invalid ones are re-mated with more forced
        mutations, and in the second half of the attempts drawn from the priors."""
        fit = _fitness(self.archive.s[:, self.pop], self.best, self.cfg.soo)
        out = np.empty((n, self.space.n_vars), dtype=np.int64)
        pending, batch = np.arange(n), set()
        half = max(1, self.cfg.max_iters // 2)
        for attempt in range(self.cfg.max_iters):
            if attempt < half:
                cand = self.mate(len(pending), fit, 0 if attempt == 0 else 1 + attempt // 10)
            else:
                cand = self.space.sample(self.rng, len(pending))
            ok = np.zeros(len(pending), dtype=bool)
            for i, row in enumerate(cand.tolist()):
                key = tuple(row)
                if self.archive.acceptable(key, batch):
                    batch.add(key)
                    ok[i] = True
            out[pending[ok]] = cand[ok]
            pending = pending[~ok]
            if not len(pending):
                break
        filled = np.setdiff1d(np.arange(n), pending)
        self._drop(len(pending))
        return out[filled]

    def survive(self, new_rows: np.ndarray):
        """Fitness survival over parents + offspring, keeping every size's best kernel."""
        s = self.archive.s
        clean = _clean(s)
        self.best = clean.max(axis=1)
        fit_all = _fitness(s, self.best, self.cfg.soo)
        elites = np.unique(np.concatenate([clean.argmax(axis=1)[self.best > 0],
                                           [fit_all.argmax()]]))
        cand = np.union1d(self.pop, new_rows)
        order = cand[np.lexsort((cand, -fit_all[cand]))]
        elite_order = elites[np.lexsort((elites, -fit_all[elites]))]
        rest = order[~np.isin(order, elites)]
        pop = np.concatenate([elite_order, rest])[: self.pop_size]
        self.pop = pop[np.lexsort((pop, -fit_all[pop]))]
        return fit_all[self.pop]

    def record(self, n_batch: int, fit: np.ndarray, dropped: int) -> dict:
        row = {"generation": len(self.history), "n_evals": len(self.archive), "batch": n_batch,
               "best_fitness": float(fit.max()), "mean_fitness": float(fit.mean()),
               "best_scores": [float(b) for b in self.best], "dropped": dropped}
        self.history.append(row)
        return row

    def converged(self) -> bool:
        p = self.cfg.period
        if len(self.history) <= p:
            return False
        now, then = self.history[-1], self.history[-1 - p]
        return all(now[k] - then[k] <= self.cfg.tol for k in ("mean_fitness", "best_fitness"))

    # --- checkpoint -------------------------------------------------------------------------
    def state(self) -> dict:
        s = self.archive.s
        return {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
                "fingerprint": self.fingerprint, "generation": len(self.history) - 1,
                "n_evals": len(self.archive), "n_sizes": self.archive.n_sizes,
                "pop_size": self.pop_size, "dropped": self.dropped,
                "population": self.pop.tolist(), "best": self.best.tolist(),
                "individuals": self.archive.x.tolist(),
                "scores": [[None if math.isnan(v) else v for v in col] for col in s.T.tolist()],
                "rng": self.rng.bit_generator.state, "history": self.history}

    def restore(self, data: dict):
        """Resume from ``data``. Everything is read and checked before any state changes, so a
        checkpoint that fails here leaves the GA as fresh as before (see :meth:`resume`)."""
        if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT \
                or data.get("version") != CHECKPOINT_VERSION:
            raise GAError("not a GA checkpoint of this version")
        if data.get("fingerprint") != self.fingerprint:
            raise GAError("the checkpoint was written for another search space or GA settings "
                          "(only n_gen and max_evals may change on resume)")
        x = np.array(data["individuals"], dtype=np.int64).reshape(-1, self.space.n_vars)
        n_sizes = int(data["n_sizes"])
        s = np.array([[np.nan if v is None else v for v in col] for col in data["scores"]],
                     dtype=np.float64).reshape(len(x), n_sizes).T
        pop = np.array(data["population"], dtype=np.int64)
        best = np.array(data["best"], dtype=np.float64)
        history, dropped = list(data["history"]), int(data["dropped"])
        type(self.rng.bit_generator)().state = data["rng"]  # validates it without touching ours
        self.archive.n_sizes = n_sizes
        self.archive.add(x, s)
        self.pop, self.best, self.history, self.dropped = pop, best, history, dropped
        self.rng.bit_generator.state = data["rng"]

    def resume(self, path: Path) -> None:
        """Continue from the checkpoint ``path``. One for other settings is refused naming the
        file; a damaged one (cut short, edited into nonsense) is set aside as ``<name>.damaged``
        and the search starts over, which, being seeded, ends exactly where an uninterrupted run
        would."""
        try:
            data = json.loads(path.read_text())
            self.restore(data)
        except GAError as exc:
            raise GAError(f"{path}: {exc}") from None
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError) as exc:
            damaged = path.with_name(path.name + ".damaged")
            os.replace(path, damaged)
            log.warning("GA: checkpoint %s is damaged (%s: %s); kept as %s, starting over",
                        path, type(exc).__name__, exc, damaged.name)
            return
        log.info("GA: resumed from %s at generation %d (%d evaluations)", path,
                 len(self.history) - 1, len(self.archive))

    # --- main loop --------------------------------------------------------------------------
    def run(self, checkpoint, progress) -> SearchResult:
        cfg, budget = self.cfg, self.cfg.max_evals
        path = None if checkpoint is None else Path(checkpoint)
        if path is not None and path.exists():
            self.resume(path)
        reason = None
        while reason is None:
            left = None if budget is None else budget - len(self.archive)
            if self.history and len(self.history) >= cfg.n_gen:
                reason = "n_gen"
            elif left is not None and left <= 0:
                reason = "max_evals"
            elif self.converged():
                reason = "converged"
            elif len(self.archive) >= self.space.size:
                reason = "exhausted"
            if reason:
                break
            dropped_before = self.dropped
            if not self.history:
                x = self.initial()
                if left is not None:
                    x = x[:left]
                self.pop = np.empty(0, dtype=np.int64)
            else:
                x = self.offspring(self.pop_size if left is None else min(self.pop_size, left))
                if not len(x):
                    reason = "exhausted"
                    break
            new_rows = self.archive.run(x)
            fit = self.survive(new_rows)
            row = self.record(len(x), fit, self.dropped - dropped_before)
            if path is not None:
                files.write_json(path, self.state(), compact=True)  # every generation
            if progress is not None:
                progress(row)
        s = self.archive.s
        fit = _fitness(s[:, self.pop], self.best, cfg.soo) if len(self.pop) else np.empty(0)
        return SearchResult(self.space, self.archive.x, s, self.pop, fit, self.history, reason,
                            self.dropped)


def run(space: Space, evaluate: Evaluate, config: GAConfig | None = None, *,
        checkpoint=None, progress: Callable[[dict], None] | None = None,
        **overrides) -> SearchResult:
    """Run the GA; ``overrides`` replace fields of ``config`` (default: Ductile's defaults).

    ``evaluate(list_of_param_dicts)`` returns scores of shape ``(n_sizes, len(batch))`` (a 1-D
    array means one size). With ``checkpoint`` (a JSON path) the state is saved after every
    generation and an existing file is resumed exactly. ``progress(row)`` is called with each
    generation's history row (see :func:`format_row`)."""
    cfg = replace(config or GAConfig(), **overrides)
    return _GA(space, evaluate, cfg).run(checkpoint, progress)


# --------------------------------------------------------------------------------------------
# baselines


def _baseline_result(archive: _Archive, history, reason) -> SearchResult:
    s = archive.s
    best = _clean(s).max(axis=1) if s.shape[1] else np.zeros(s.shape[0])
    fit = _fitness(s, best, False)
    order = np.lexsort((np.arange(len(fit)), -fit))
    return SearchResult(archive.space, archive.x, s, order, fit[order], history, reason)


def _baseline_row(archive: _Archive, n_batch: int, index: int) -> dict:
    best = _clean(archive.s).max(axis=1)
    fit = _fitness(archive.s, best, False)
    return {"generation": index, "n_evals": len(archive), "batch": n_batch,
            "best_fitness": float(fit.max()), "mean_fitness": float(fit.mean()),
            "best_scores": [float(b) for b in best]}


def exhaustive(space: Space, evaluate: Evaluate, batch: int = 4096,
               progress: Callable[[dict], None] | None = None) -> SearchResult:
    """Evaluate every valid combination, ``batch`` per call, in enumeration order."""
    archive, history = _Archive(space, evaluate), []
    for start in range(0, space.size, batch):
        x = space.enumerate(start, start + batch)
        if space.valid is not None:
            x = x[[space.is_valid(r) for r in x.tolist()]]
        if len(x):
            archive.run(x)
            history.append(_baseline_row(archive, len(x), len(history)))
            if progress is not None:
                progress(history[-1])
    if not len(archive):
        raise GAError("the search space has no valid combination")
    return _baseline_result(archive, history, "exhaustive")


def random_search(space: Space, evaluate: Evaluate, n_evals: int, seed: int = 0,
                  batch: int = 512, max_iters: int = 250,
                  progress: Callable[[dict], None] | None = None) -> SearchResult:
    """``n_evals`` distinct valid individuals drawn from the priors, ``batch`` per call."""
    rng = np.random.Generator(np.random.PCG64(seed))
    archive, history, reason = _Archive(space, evaluate), [], "n_evals"
    while len(archive) < n_evals:
        x = archive.sample_unique(rng, min(batch, n_evals - len(archive)), max_iters)
        if not len(x):
            reason = "exhausted"
            break
        archive.run(x)
        history.append(_baseline_row(archive, len(x), len(history)))
        if progress is not None:
            progress(history[-1])
    if not len(archive):
        raise GAError("random search found no valid combination")
    return _baseline_result(archive, history, reason)


__all__ = ["Space", "GAConfig", "SearchResult", "GAError", "run", "exhaustive", "random_search",
           "format_row"]
