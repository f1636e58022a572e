"""Library pruning: keep as few solutions as possible without losing more than ``tol`` on any size.

The pure algorithm of the original's ``prune_library`` (original_tool.md §6.3); measuring the
solutions and reading/writing library files happen elsewhere. Steps:

1. :func:`clusters` groups solutions by ``(MacroTile0, MacroTile1, DepthU)``; the original prunes
   each cluster on its own (every solution of the cluster measured on every size of the cluster).
2. :func:`efficiency`: ``EFF(size, sol) = gflops / max gflops of that size``.
3. :func:`scaled_tolerance`: small GEMMs get a larger tolerance (their timings are noisier).
4. Feasible pairs: ``EFF > 1 - tol'`` (a size's own best solution always counts as feasible, so a
   cover always exists, also for ``tol = 0``).
5. Cover every size with the fewest solutions: :func:`greedy_cover` (the original's algorithm)
   or :func:`ilp_cover` (exact minimum set cover with PuLP, never worse than greedy).
6. Each size is mapped to its best-EFF chosen solution.

:func:`select` runs steps 2-6 on one gflops matrix (one cluster).
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = ["Selection", "Cover", "clusters", "efficiency", "scaled_tolerance", "feasible_pairs",
           "greedy_cover", "ilp_cover", "assign", "select", "available_solvers",
           "DEFAULT_TOL", "CLUSTER_KEYS"]

DEFAULT_TOL = 0.02
CLUSTER_KEYS = ("MacroTile0", "MacroTile1", "DepthU")
_SMALL_FLOPS = 2e9  # sizes below this many FLOPs (on average) get a larger tolerance

METHODS = ("ilp", "greedy")
SOLVERS = ("auto", "highs", "cbc")


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cover:
    """A set cover of the sizes (rows) by solutions (columns).

    ``chosen``: column labels, in column order. ``method``: ``"ilp"``, ``"greedy"`` or
    ``"greedy-fallback"`` (the ILP was asked for but gave no usable answer: no solver, time-out
    without an incumbent, or an incumbent worse than greedy). ``status``: ``"optimal"`` (proven
    minimum), ``"feasible"`` (a solver incumbent, not proven optimal) or ``"greedy"``.
    ``solver``: the solver that produced ``chosen`` (None for greedy). ``lower_bound``: the best
    proven lower bound on the number of solutions, where the solver reports one.
    """

    chosen: list
    method: str
    status: str
    n_greedy: int
    solve_seconds: float = 0.0
    solver: str | None = None
    lower_bound: float | None = None


@dataclass(frozen=True)
class Selection:
    """The result of :func:`select` for one gflops matrix (one cluster).

    ``chosen``: the solution ids kept, in column order. ``assignment``: size id -> the chosen
    solution with the best efficiency on that size (ties: the leftmost column). ``method``,
    ``status``, ``solver``, ``lower_bound``: see :class:`Cover`. ``n_greedy``: the size of the
    greedy cover (the original's answer), for reporting. ``solve_seconds``: wall time of the ILP
    (model build, solve(s), reading back; 0 for greedy). ``tolerance``: the tolerance used
    (after scaling).
    """

    chosen: list
    assignment: dict
    method: str
    status: str
    n_greedy: int
    solve_seconds: float
    tolerance: float
    solver: str | None = None
    lower_bound: float | None = None


# --------------------------------------------------------------------------------------------
# clustering
# --------------------------------------------------------------------------------------------
def clusters(solutions: Sequence[dict],
             keys: Iterable[str] = CLUSTER_KEYS) -> dict[tuple, list[int]]:
    """Group solutions (Tensile solution parameter dicts) by the values of ``keys``.

    Returns ``{key tuple: [positions in solutions]}``; clusters are ordered by the first solution
    of each, positions ascending. ``keys=()`` gives one cluster ``()`` with every solution (the
    original's ``cluster=False``). A solution without one of the keys is a ValueError.
    """
    keys = tuple(keys)
    out: dict[tuple, list[int]] = {}
    for pos, sol in enumerate(solutions):
        if not isinstance(sol, dict):
            raise ValueError(f"solution {pos}: expected a mapping, got {type(sol).__name__}")
        try:
            key = tuple(_hashable(sol[k]) for k in keys)
        except KeyError as exc:
            raise ValueError(f"solution {pos}: no {exc.args[0]!r} to cluster on") from None
        out.setdefault(key, []).append(pos)
    return out


def _hashable(value):
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


# --------------------------------------------------------------------------------------------
# efficiency and tolerance
# --------------------------------------------------------------------------------------------
def _check_matrix(gflops: pd.DataFrame) -> None:
    if not isinstance(gflops, pd.DataFrame):
        raise TypeError(f"gflops must be a pandas DataFrame, got {type(gflops).__name__}")
    if not gflops.index.is_unique:
        dup = gflops.index[gflops.index.duplicated()][0]
        raise ValueError(f"size id {dup!r} appears more than once")
    if not gflops.columns.is_unique:
        dup = gflops.columns[gflops.columns.duplicated()][0]
        raise ValueError(f"solution id {dup!r} appears more than once")


def efficiency(gflops: pd.DataFrame) -> pd.DataFrame:
    """``EFF(size, sol) = gflops(size, sol) / max over sols of gflops(size, .)``.

    NaN (not measured / invalid) stays NaN and is ignored by the max. A size with no measured
    value, or whose best value is not > 0, is a ValueError naming the size id; so are negative
    or infinite values.
    """
    _check_matrix(gflops)
    values = gflops.to_numpy(dtype=float, na_value=np.nan)
    bad = np.isinf(values) | (values < 0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"size {gflops.index[i]!r}, solution {gflops.columns[j]!r}: gflops "
                         f"{values[i, j]} (must be finite and >= 0, or NaN)")
    measured = ~np.isnan(values)
    for i in np.flatnonzero(~measured.any(axis=1)):
        raise ValueError(f"size {gflops.index[i]!r}: no solution measured on it")
    best = np.nanmax(values, axis=1) if values.shape[1] else np.full(values.shape[0], np.nan)
    for i in np.flatnonzero(~(best > 0)):
        raise ValueError(f"size {gflops.index[i]!r}: best gflops is {best[i]} (must be > 0)")
    return pd.DataFrame(values / best[:, None], index=gflops.index, columns=gflops.columns)


def scaled_tolerance(tol: float, flops) -> float:
    """The original's tolerance scaling for small GEMMs.

    ``r = mean(flops) / 2e9`` over the sizes given; when ``r < 1``: ``x = 1/r - 1``,
    ``factor = 1 + 1.5*x/(x + 9)`` and ``tol' = min(tol * min(2.5, factor), tol + 0.03)``;
    otherwise ``tol' = tol``. The original computes ``r`` once per cluster (the mean over the
    sizes of the cluster being pruned), not per size: pass the FLOPs of the sizes of one cluster.

    Note: ``factor < 2.5`` for every finite ``x`` (it tends to 2.5), so the ``min(2.5, .)`` cap
    never binds; ``tol + 0.03`` binds only when ``tol * (factor - 1) > 0.03``, i.e. never for
    ``tol <= 0.02``.
    """
    tol = _check_tol(tol)
    f = np.asarray(flops.to_numpy() if isinstance(flops, (pd.Series, pd.Index)) else flops,
                   dtype=float).ravel()
    if f.size == 0:
        raise ValueError("scaled_tolerance: no FLOPs given")
    if not np.isfinite(f).all() or (f < 0).any():
        raise ValueError("scaled_tolerance: FLOPs must be finite and >= 0")
    r = float(f.mean()) / _SMALL_FLOPS
    if r >= 1:
        return tol
    if r <= 0:
        factor = 2.5  # the limit of the formula as r -> 0
    else:
        x = 1 / r - 1
        factor = 1 + 1.5 * x / (x + 9)
    return min(tol * min(2.5, factor), tol + 0.03)


def _check_tol(tol) -> float:
    tol = float(tol)
    if not (0 <= tol < 1):
        raise ValueError(f"tol must be in [0, 1), got {tol}")
    return tol


def feasible_pairs(eff: pd.DataFrame, tol: float) -> pd.DataFrame:
    """Boolean matrix: ``EFF > 1 - tol``, plus each size's best solution (EFF == 1)."""
    tol = _check_tol(tol)
    values = eff.to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        ok = (values > 1 - tol) | (values >= 1)
    return pd.DataFrame(ok, index=eff.index, columns=eff.columns)


# --------------------------------------------------------------------------------------------
# greedy
# --------------------------------------------------------------------------------------------
def _as_bool(feasible: pd.DataFrame) -> np.ndarray:
    _check_matrix(feasible)
    mat = feasible.fillna(False).to_numpy(dtype=bool)
    for i in np.flatnonzero(~mat.any(axis=1)):
        raise ValueError(f"size {feasible.index[i]!r}: no feasible solution, cannot be covered")
    return mat


def _greedy_positions(mat: np.ndarray) -> list[int]:
    """Column positions picked by greedy set cover, in pick order."""
    uncovered = np.ones(mat.shape[0], dtype=bool)
    cols = mat.astype(np.int32)
    picked: list[int] = []
    while uncovered.any():
        gain = uncovered.astype(np.int32) @ cols
        j = int(np.argmax(gain))  # first maximum: lowest column position on ties
        if gain[j] == 0:  # unreachable for a checked matrix
            raise AssertionError("greedy cover stuck")
        picked.append(j)
        uncovered &= ~mat[:, j]
    return picked


def greedy_cover(feasible: pd.DataFrame) -> list:
    """The original's greedy set cover: repeatedly take the solution covering the most uncovered
    sizes (ties: the lowest column position). Returns solution ids in column order. A size with
    no feasible solution is a ValueError."""
    mat = _as_bool(feasible)
    return [feasible.columns[j] for j in sorted(_greedy_positions(mat))]


# --------------------------------------------------------------------------------------------
# ILP
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def available_solvers() -> tuple[str, ...]:
    """The PuLP solvers usable here, among HiGHS (needs ``highspy``) and CBC (ships with PuLP)."""
    try:
        import pulp
    except ImportError:  # pragma: no cover - pulp is a dependency
        return ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        names = set(pulp.listSolvers(onlyAvailable=True))
    out = []
    if "HiGHS" in names:
        out.append("highs")
    if names & {"PULP_CBC_CMD", "COIN_CMD"}:
        out.append("cbc")
    return tuple(out)


def _pick_solver(solver: str) -> str | None:
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    avail = available_solvers()
    if solver == "auto":
        return avail[0] if avail else None
    return solver if solver in avail else None


@functools.lru_cache(maxsize=1)
def _highs_class():
    """pulp.HiGHS that also records HiGHS' own objective value and dual bound after the solve.

    No warm start: highspy 1.16.0 mishandles a MIP start (``setSolution``) on these models: it
    reports "optimal" with an objective below the true optimum and returns the start unchanged
    (bench/bench_prune.py seeds 0, 4, 17: greedy 28/33/32 returned as optimal, true optimum
    28/32/30; 1.11-1.15.1 are right). HiGHS finds a better incumbent than greedy on its own
    within the first node on every instance measured, and a time-out without one falls back to
    greedy anyway.
    """
    import pulp

    class _HiGHS(pulp.HiGHS):
        def callSolver(self, lp):
            super().callSolver(lp)
            info = lp.solverModel.getInfo()
            lp._geko_bound = float(info.mip_dual_bound)
            lp._geko_objective = float(info.objective_function_value)

    return _HiGHS


def _make_solver(name: str, time_limit: float, *, exact_integer: bool):
    import pulp

    # the objective of the cover model is integral: a gap < 1 proves optimality; ask for it
    # explicitly (HiGHS' default relative gap 1e-4 would accept 1 too many above 10,000).
    # the tie-break objective (total efficiency) is fractional: a tight relative gap instead
    gaps = {"gapRel": 0.0, "gapAbs": 0.999} if exact_integer else {"gapRel": 1e-9}
    if name == "highs":
        return _highs_class()(msg=False, timeLimit=time_limit, **gaps)  # no warm start: see there
    with warnings.catch_warnings():
        # PuLP 3.x deprecates its bundled CBC in favour of COIN_CMD + a separately installed CBC
        warnings.simplefilter("ignore", DeprecationWarning)
        bundled = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, warmStart=True, **gaps)
        if bundled.available():
            return bundled
        return pulp.COIN_CMD(msg=False, timeLimit=time_limit, warmStart=True, **gaps)


def _var(problem, name: str, **kw):
    """A new variable of ``problem`` (PuLP >= 3.3: ``add_variable``; older: ``LpVariable``)."""
    import pulp

    if hasattr(problem, "add_variable"):
        return problem.add_variable(name, **kw)
    return pulp.LpVariable(name, **kw)


def _run_solver(problem, solver) -> None:
    """One solve; a seam for tests (they replace it to simulate time-outs)."""
    problem.solve(solver)


def _solve(problem, solver) -> bool:
    """Run one solve; False when the solver itself failed (e.g. the CBC binary crashing: it
    segfaults in about 4 % of runs with a 0.01 s time limit), which then counts as "no answer"."""
    import pulp

    try:
        _run_solver(problem, solver)
    except (pulp.PulpSolverError, OSError):
        return False
    return True


def _solution_kind(problem) -> str | None:
    """'optimal' | 'feasible' | None, from PuLP's ``sol_status`` (not ``status``: after a
    time-out with an incumbent PuLP's HiGHS API reports status 'Optimal')."""
    import pulp

    sol = getattr(problem, "sol_status", None)
    if sol == pulp.LpSolutionOptimal:
        return "optimal"
    if sol == pulp.LpSolutionIntegerFeasible:
        return "feasible"
    return None


def _read_chosen(xvars: dict[int, object], mat: np.ndarray) -> list[int] | None:
    """Column positions with x = 1, or None when the values are missing or not a cover."""
    chosen = []
    for j, var in xvars.items():
        v = var.varValue
        if v is None or not math.isfinite(v):
            return None
        if v > 0.5:
            chosen.append(j)
    if not chosen or not mat[:, chosen].any(axis=1).all():
        return None
    return sorted(chosen)


def _ilp_positions(mat: np.ndarray, greedy: list[int], time_limit: float, solver_name: str,
                   eff: np.ndarray | None):
    """(positions, kind, lower_bound) of the ILP, or (None, None, None) without an answer."""
    import pulp

    t0 = time.perf_counter()
    cols = [j for j in range(mat.shape[1]) if mat[:, j].any()]
    prob = pulp.LpProblem("set_cover", pulp.LpMinimize)
    x = {j: _var(prob, f"x{j}", cat=pulp.LpBinary) for j in cols}
    prob += pulp.lpSum(x.values())
    rows = [np.flatnonzero(mat[i]) for i in range(mat.shape[0])]
    for i, js in enumerate(rows):
        prob += pulp.lpSum(x[j] for j in js) >= 1, f"c{i}"
    start = set(greedy)
    for j, var in x.items():
        var.setInitialValue(1 if j in start else 0)

    solved = _solve(prob, _make_solver(solver_name, time_limit, exact_integer=True))
    kind = _solution_kind(prob) if solved else None
    bound = getattr(prob, "_geko_bound", None)
    bound = bound if bound is not None and math.isfinite(bound) else None
    chosen = _read_chosen(x, mat) if kind else None
    if chosen is not None and not _consistent(prob, len(chosen)):
        chosen = None
    if chosen is None:
        return None, None, bound
    if kind == "optimal" and bound is not None and len(chosen) > math.ceil(bound - 1e-6):
        kind = "feasible"  # the solver says optimal but its own bound does not prove it
    if kind == "optimal":
        bound = float(len(chosen))
    if eff is not None:
        left = time_limit - (time.perf_counter() - t0)
        better = _tiebreak(mat, eff, rows, chosen, left, solver_name)
        if better is not None:
            chosen = better
    return chosen, kind, bound


def _consistent(problem, value: float) -> bool:
    """False when the solver reported an objective that the returned solution does not have
    (then neither the solution nor an optimality claim can be trusted)."""
    import pulp

    obj = getattr(problem, "_geko_objective", None)
    if obj is None or not math.isfinite(obj):
        return True
    if problem.sense == pulp.LpMaximize:  # PuLP hands HiGHS the negated objective
        obj = -obj
    return abs(obj - value) <= 1e-6 * max(1, abs(value))


def _assign_positions(mat: np.ndarray, eff: np.ndarray, chosen: list[int]) -> np.ndarray:
    """For each row, the chosen column with the best efficiency (ties: leftmost)."""
    chosen = sorted(chosen)
    sub = np.where(mat[:, chosen], np.nan_to_num(eff[:, chosen], nan=-1.0), -np.inf)
    return np.asarray(chosen)[np.argmax(sub, axis=1)]


def _total_eff(mat, eff, chosen) -> float:
    pick = _assign_positions(mat, eff, chosen)
    return float(eff[np.arange(mat.shape[0]), pick].sum())


def _tiebreak(mat, eff, rows, chosen, time_limit, solver_name) -> list[int] | None:
    """Among covers with at most len(chosen) solutions, the one with the largest total efficiency
    of the final assignment: a second solve (CBC warm started with ``chosen``), with binary
    ``x_s``, assignment variables ``0 <= y_is <= x_s``, ``sum_s y_is = 1``, ``sum x_s <= k``,
    maximizing ``sum EFF_is * y_is``. None if it found nothing better in the time left."""
    import pulp

    if time_limit <= 0.05:
        return None
    k = len(chosen)
    cols = sorted({int(j) for js in rows for j in js})
    prob = pulp.LpProblem("set_cover_efficiency", pulp.LpMaximize)
    x = {j: _var(prob, f"x{j}", cat=pulp.LpBinary) for j in cols}
    # y: assignment of a size to a solution; continuous is enough (for fixed x the best
    # assignment is integral)
    y = {(i, j): _var(prob, f"y{i}_{j}", lowBound=0, upBound=1)
         for i, js in enumerate(rows) for j in js}
    prob += pulp.lpSum(float(eff[i, j]) * v for (i, j), v in y.items())
    prob += pulp.lpSum(x.values()) <= k, "count"
    for i, js in enumerate(rows):
        prob += pulp.lpSum(y[i, j] for j in js) == 1, f"a{i}"
    for (i, j), v in y.items():
        prob += v <= x[j], f"u{i}_{j}"
    start = set(chosen)
    pick = _assign_positions(mat, eff, chosen)
    for j, var in x.items():
        var.setInitialValue(1 if j in start else 0)
    for (i, j), var in y.items():
        var.setInitialValue(1 if pick[i] == j else 0)

    if not _solve(prob, _make_solver(solver_name, time_limit, exact_integer=False)):
        return None
    if _solution_kind(prob) is None:
        return None
    if any(v.varValue is None for v in y.values()):
        return None
    if not _consistent(prob, sum(float(eff[i, j]) * v.varValue for (i, j), v in y.items())):
        return None
    better = _read_chosen(x, mat)
    if better is None or len(better) > k:
        return None
    if _total_eff(mat, eff, better) <= _total_eff(mat, eff, chosen) + 1e-12:
        return None
    return better


def ilp_cover(feasible: pd.DataFrame, time_limit: float = 10.0, *,
              efficiency: pd.DataFrame | None = None, solver: str = "auto") -> Cover:
    """Minimum set cover of the sizes (rows) by solutions (columns) with PuLP.

    Model: binary ``x_s`` per solution, ``sum_{s feasible on i} x_s >= 1`` for every size ``i``,
    minimize ``sum x_s``. ``solver``: ``"auto"`` (HiGHS when ``highspy`` is installed, else CBC),
    ``"highs"`` or ``"cbc"``. CBC is warm started with the greedy cover; HiGHS is not (highspy
    1.16.0 returns wrong "optimal" answers after a MIP start, see ``_highs_class``).
    ``time_limit`` (seconds) bounds the solving of the whole call (the tie-break solve gets what
    the first one left); building the model comes on top.

    Only PuLP's ``sol_status`` is trusted: "optimal" only for a proven optimum; a time-out with an
    incumbent no worse than greedy gives "feasible"; no solver, no incumbent, an invalid one or
    one worse than greedy gives the greedy cover (method "greedy-fallback"). The result never
    has more solutions than greedy.

    With ``efficiency`` (the EFF matrix), a second solve picks, among covers of the size found,
    the one maximizing the total efficiency of the final assignment, in the time left of
    ``time_limit``; it is skipped when no time is left and kept only when it improves.
    """
    mat = _as_bool(feasible)
    if time_limit is None or not time_limit > 0:
        raise ValueError(f"time_limit must be > 0, got {time_limit}")
    eff = None
    if efficiency is not None:
        if efficiency.shape != feasible.shape:
            raise ValueError("efficiency and feasible must have the same shape")
        eff = efficiency.loc[feasible.index, feasible.columns].to_numpy(dtype=float,
                                                                        na_value=np.nan)
    greedy = sorted(_greedy_positions(mat))
    labels = feasible.columns
    t0 = time.perf_counter()

    def fallback(bound=None):
        return Cover([labels[j] for j in greedy], "greedy-fallback", "greedy", len(greedy),
                     time.perf_counter() - t0, None, bound)

    if len(greedy) <= 1:  # one solution is the least any non-empty cover needs
        best = greedy
        if eff is not None and greedy:  # the most efficient of the solutions covering all
            full = np.flatnonzero(mat.all(axis=0))
            totals = np.where(mat[:, full], eff[:, full], 0.0).sum(axis=0)
            best = [int(full[np.argmax(totals)])]
        return Cover([labels[j] for j in best], "ilp", "optimal", len(greedy), 0.0, None,
                     float(len(greedy)))
    name = _pick_solver(solver)
    if name is None:
        return fallback()
    chosen, kind, bound = _ilp_positions(mat, greedy, float(time_limit), name, eff)
    if chosen is None or len(chosen) > len(greedy):
        return fallback(bound)
    return Cover([labels[j] for j in chosen], "ilp", kind, len(greedy),
                 time.perf_counter() - t0, name, bound)


# --------------------------------------------------------------------------------------------
# the whole selection
# --------------------------------------------------------------------------------------------
def assign(eff: pd.DataFrame, feasible: pd.DataFrame, chosen: Sequence[Hashable]) -> dict:
    """size id -> the chosen solution with the best efficiency on it among the feasible ones
    (ties: the leftmost column). Every size must be covered by ``chosen``."""
    pos = [feasible.columns.get_loc(c) for c in chosen]
    mat = _as_bool(feasible)
    if not mat[:, pos].any(axis=1).all():
        i = int(np.flatnonzero(~mat[:, pos].any(axis=1))[0])
        raise ValueError(f"size {feasible.index[i]!r} is not covered by the chosen solutions")
    e = eff.loc[feasible.index, feasible.columns].to_numpy(dtype=float, na_value=np.nan)
    pick = _assign_positions(mat, e, pos)
    return {size: feasible.columns[j] for size, j in zip(feasible.index, pick)}


def _flops_for(gflops: pd.DataFrame, flops) -> np.ndarray:
    if isinstance(flops, pd.Series):
        missing = gflops.index.difference(flops.index)
        if len(missing):
            raise ValueError(f"size {missing[0]!r}: no FLOPs given")
        return flops.loc[gflops.index].to_numpy(dtype=float)
    if isinstance(flops, dict):
        try:
            return np.asarray([flops[s] for s in gflops.index], dtype=float)
        except KeyError as exc:
            raise ValueError(f"size {exc.args[0]!r}: no FLOPs given") from None
    f = np.asarray(flops, dtype=float).ravel()
    if f.size != len(gflops.index):
        raise ValueError(f"flops has {f.size} values for {len(gflops.index)} sizes")
    return f


def select(gflops: pd.DataFrame, flops=None, tol: float = DEFAULT_TOL, scale_tol: bool = True,
           method: str = "ilp", time_limit: float = 10.0, *, solver: str = "auto",
           tiebreak: bool = True) -> Selection:
    """Prune one cluster: the fewest solutions that keep every size within ``tol`` of its best.

    ``gflops``: DataFrame, index = size ids, columns = solution ids, NaN = not measured / invalid.
    ``flops``: FLOPs per size (a Series or dict keyed by size id, or values in row order); needed
    only with ``scale_tol``. ``tol``: allowed loss (0.02 = 2 %), scaled by
    :func:`scaled_tolerance` over all the sizes of ``gflops`` when ``scale_tol`` (as the original,
    which prunes one cluster at a time). ``method``: ``"ilp"`` (exact, :func:`ilp_cover`, never
    worse than greedy) or ``"greedy"`` (the original's). ``tiebreak``: with the ILP, among
    minimum covers prefer the one with the largest total efficiency (a second, time-limited
    solve). ``solver``: see :func:`ilp_cover`.

    A size without any measured solution is a ValueError naming it.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    _check_matrix(gflops)
    if gflops.shape[0] == 0:
        raise ValueError("no sizes to prune")
    tol = _check_tol(tol)
    eff = efficiency(gflops)
    if scale_tol:
        if flops is None:
            raise ValueError("scale_tol needs the FLOPs of each size")
        tol = scaled_tolerance(tol, _flops_for(gflops, flops))
    feas = feasible_pairs(eff, tol)
    # every size's own best solution has EFF == 1 and is feasible: a cover always exists
    assert feas.to_numpy().any(axis=1).all(), "a size lost its own best solution"

    if method == "greedy":
        chosen = greedy_cover(feas)
        cover = Cover(chosen, "greedy", "greedy", len(chosen))
    else:
        cover = ilp_cover(feas, time_limit, efficiency=eff if tiebreak else None, solver=solver)
    assert len(cover.chosen) <= cover.n_greedy
    return Selection(chosen=list(cover.chosen), assignment=assign(eff, feas, cover.chosen),
                     method=cover.method, status=cover.status, n_greedy=cover.n_greedy,
                     solve_seconds=cover.solve_seconds, tolerance=tol, solver=cover.solver,
                     lower_bound=cover.lower_bound)
