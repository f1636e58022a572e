"""geko_lib.library.prune: library pruning (original_tool.md §6.3) - efficiency, tolerance scaling,
greedy and exact (ILP) set cover, assignment, time-out fallbacks."""

import dataclasses
import itertools
import math

import numpy as np
import pandas as pd
import pytest

# an install without the solver (the GPU image) skips this module instead of failing collection
pulp = pytest.importorskip("pulp")

from geko_lib.library import prune  # noqa: E402

SOLVERS = list(prune.available_solvers())
needs_solver = pytest.mark.skipif(not SOLVERS, reason="no PuLP MIP solver available")


def matrix(rows, index=None, columns=None):
    rows = [[np.nan if v is None else v for v in r] for r in rows]
    return pd.DataFrame(rows, index=index, columns=columns, dtype=float)


def from_sets(n_sizes, sets: dict):
    """gflops where solution s is within tolerance exactly on the sizes in sets[s]."""
    g = pd.DataFrame(50.0, index=[f"g{i}" for i in range(n_sizes)], columns=list(sets))
    for s, members in sets.items():
        for i in members:
            g.loc[f"g{i}", s] = 100.0
    return g


# The classic instance where greedy is not optimal: two rows a0..a6 / b0..b6 (sizes 0..6 and
# 7..13), R1 and R2 cover one row each (optimum: 2); C1 (8 sizes), C2 (4), C3 (2) cut across
# both rows and greedy takes C1, C2, C3.
CLASSIC = {
    "C1": [0, 1, 2, 3, 7, 8, 9, 10],
    "C2": [4, 5, 11, 12],
    "C3": [6, 13],
    "R1": list(range(0, 7)),
    "R2": list(range(7, 14)),
}


# ------------------------------------------------------------------------------------------
# efficiency and tolerance
# ------------------------------------------------------------------------------------------
def test_efficiency_hand_values():
    g = matrix([[100, 50, None], [200, 180, 190], [None, 3, 4]],
               index=["s1", "s2", "s3"], columns=["a", "b", "c"])
    eff = prune.efficiency(g)
    assert eff.loc["s1", "a"] == 1.0 and eff.loc["s1", "b"] == 0.5
    assert math.isnan(eff.loc["s1", "c"])
    assert eff.loc["s2"].tolist() == pytest.approx([1.0, 0.9, 0.95])
    assert math.isnan(eff.loc["s3", "a"])
    assert eff.loc["s3", ["b", "c"]].tolist() == pytest.approx([0.75, 1.0])
    assert list(eff.index) == ["s1", "s2", "s3"] and list(eff.columns) == ["a", "b", "c"]


def test_efficiency_rejects_bad_input():
    with pytest.raises(ValueError, match="'s2'"):
        prune.efficiency(matrix([[1, 2], [None, None]], index=["s1", "s2"]))
    with pytest.raises(ValueError, match="'z'"):
        prune.efficiency(matrix([[0, 0]], index=["z"]))
    with pytest.raises(ValueError, match="must be finite"):
        prune.efficiency(matrix([[1, -2]]))
    with pytest.raises(ValueError, match="must be finite"):
        prune.efficiency(matrix([[1, np.inf]]))
    with pytest.raises(ValueError, match="more than once"):
        prune.efficiency(matrix([[1], [2]], index=["x", "x"]))


@pytest.mark.parametrize("tol, flops, expected", [
    # r = mean/2e9 >= 1: unchanged (boundary r == 1 included)
    (0.02, [2e9], 0.02),
    (0.02, [4e9, 4e9], 0.02),
    (0.02, [1e9, 3e9], 0.02),            # mean 2e9: r == 1
    # r = 0.5: x = 1, factor = 1 + 1.5*1/10 = 1.15 -> 0.02*1.15 = 0.023
    (0.02, [1e9], 0.023),
    # the mean over the sizes (one cluster), not per size: mean(1e8, 1.9e9) = 1e9 -> 0.023
    (0.02, [1e8, 1.9e9], 0.023),
    # r = 0.25: x = 3, factor = 1 + 4.5/12 = 1.375 -> 0.0275
    (0.02, [5e8], 0.0275),
    # r = 0.1: x = 9, factor = 1 + 13.5/18 = 1.75 -> 0.035 (cap 0.05 not reached)
    (0.02, [2e8], 0.035),
    # cap tol + 0.03: tol 0.1, r = 0.1 -> min(0.175, 0.13) = 0.13
    (0.1, [2e8], 0.13),
    # cap tol + 0.03: tol 0.05, r = 0.1 -> min(0.0875, 0.08) = 0.08
    (0.05, [2e8], 0.08),
    # no FLOPs at all: the r -> 0 limit, factor 2.5 -> min(0.05, 0.05) = 0.05
    (0.02, [0.0, 0.0], 0.05),
])
def test_scaled_tolerance_hand_values(tol, flops, expected):
    assert prune.scaled_tolerance(tol, flops) == pytest.approx(expected, rel=1e-12)


def test_scaled_tolerance_factor_never_reaches_the_2_5_cap():
    # r = 1e-9: x = 1e9 - 1, factor = 1 + 1.5*x/(x + 9) = 2.5 - 1.35e-8 (< 2.5)
    # tol 0.01 -> 0.01*factor = 0.025 - 1.35e-10 (the tol + 0.03 = 0.04 cap is far)
    got = prune.scaled_tolerance(0.01, [2.0])
    assert got < 0.025
    assert got == pytest.approx(0.025 - 1.35e-10, abs=1e-12)
    # tol 0.02 never reaches tol + 0.03 = 0.05 (factor - 1 < 1.5)
    assert prune.scaled_tolerance(0.02, [2.0]) < 0.05


def test_scaled_tolerance_rejects_bad_input():
    for bad in ([], [np.nan], [-1.0]):
        with pytest.raises(ValueError):
            prune.scaled_tolerance(0.02, bad)
    with pytest.raises(ValueError):
        prune.scaled_tolerance(1.0, [1e9])


def test_feasible_is_strict_and_keeps_the_best():
    # EFF 0.75 with tol 0.25: 0.75 > 0.75 is false (exact binary fractions)
    eff = prune.efficiency(matrix([[100, 75, 76], [10, 10, 9]]))
    feas = prune.feasible_pairs(eff, 0.25)
    assert feas.to_numpy().tolist() == [[True, False, True], [True, True, True]]
    # tol 0: only the best (and exact ties)
    feas0 = prune.feasible_pairs(eff, 0.0)
    assert feas0.to_numpy().tolist() == [[True, False, False], [True, True, False]]


def test_select_uses_scaled_tolerance_of_the_whole_matrix():
    # EFF 0.978 is out at 2 % but in at the scaled 2.3 % (mean FLOPs 1e9)
    g = matrix([[100, 97.8], [None, 100]], index=["s1", "s2"], columns=["a", "b"])
    sel = prune.select(g, [1e9, 1e9], method="greedy")
    assert sel.tolerance == pytest.approx(0.023)
    assert sel.chosen == ["b"]
    unscaled = prune.select(g, [1e9, 1e9], scale_tol=False, method="greedy")
    assert unscaled.tolerance == 0.02
    assert unscaled.chosen == ["a", "b"]
    # FLOPs keyed by size id, any order
    keyed = prune.select(g, pd.Series({"s2": 1e9, "s1": 1e9}), method="greedy")
    assert keyed.tolerance == pytest.approx(0.023)
    with pytest.raises(ValueError, match="'s2'"):
        prune.select(g, pd.Series({"s1": 1e9}), method="greedy")
    with pytest.raises(ValueError, match="FLOPs"):
        prune.select(g, None)


# ------------------------------------------------------------------------------------------
# greedy and ILP
# ------------------------------------------------------------------------------------------
def test_greedy_on_classic_counterexample():
    feas = prune.feasible_pairs(prune.efficiency(from_sets(14, CLASSIC)), 0.02)
    assert prune.greedy_cover(feas) == ["C1", "C2", "C3"]


def test_greedy_ties_go_to_the_lowest_column():
    feas = pd.DataFrame([[True, True, False], [True, True, True]], columns=["z", "y", "x"])
    assert prune.greedy_cover(feas) == ["z"]
    feas = pd.DataFrame([[False, True, True], [True, False, True]], columns=["z", "y", "x"])
    assert prune.greedy_cover(feas) == ["x"]


def test_greedy_uncoverable_size_is_an_error():
    feas = pd.DataFrame([[True, False], [False, False]], index=["ok", "lost"])
    with pytest.raises(ValueError, match="'lost'"):
        prune.greedy_cover(feas)


@needs_solver
@pytest.mark.parametrize("solver", SOLVERS)
def test_ilp_beats_greedy_on_classic_counterexample(solver):
    g = from_sets(14, CLASSIC)
    sel = prune.select(g, scale_tol=False, solver=solver)
    assert sel.chosen == ["R1", "R2"]
    assert (sel.method, sel.status, sel.n_greedy, sel.solver) == ("ilp", "optimal", 3, solver)
    assert sel.lower_bound == 2
    assert sel.assignment == {f"g{i}": "R1" if i < 7 else "R2" for i in range(14)}
    greedy = prune.select(g, scale_tol=False, method="greedy")
    assert greedy.chosen == ["C1", "C2", "C3"]
    assert (greedy.method, greedy.status, greedy.n_greedy) == ("greedy", "greedy", 3)
    assert greedy.solve_seconds == 0.0


def brute_force(feas: np.ndarray, eff: np.ndarray):
    """(minimum cover size, best total efficiency among minimum covers)."""
    n_sizes, n_sols = feas.shape
    for k in range(1, n_sols + 1):
        best = None
        for combo in itertools.combinations(range(n_sols), k):
            sub = feas[:, combo]
            if sub.any(axis=1).all():
                total = np.where(sub, eff[:, combo], -np.inf).max(axis=1).sum()
                best = total if best is None else max(best, total)
        if best is not None:
            return k, best
    raise AssertionError("no cover")


def random_instance(rng):
    n_sols = int(rng.integers(1, 11))
    n_sizes = int(rng.integers(1, 16))
    spread = rng.choice([0.03, 0.06, 0.15])
    g = 100 * (1 - rng.uniform(0, spread, (n_sizes, n_sols)))
    g[rng.random(g.shape) < 0.2] = np.nan
    for i in np.flatnonzero(np.isnan(g).all(axis=1)):
        g[i, rng.integers(n_sols)] = 100.0
    return pd.DataFrame(g, index=[f"s{i}" for i in range(n_sizes)],
                        columns=[f"k{j}" for j in range(n_sols)])


def check_selection(g: pd.DataFrame, sel: prune.Selection):
    eff = prune.efficiency(g)
    assert set(sel.assignment) == set(g.index)
    assert sel.chosen == [c for c in g.columns if c in set(sel.chosen)]  # column order
    for size, sol in sel.assignment.items():
        assert sol in sel.chosen
        e = eff.loc[size, sol]
        assert e > 1 - sel.tolerance or e == 1.0
        best_chosen = eff.loc[size, sel.chosen].max()  # NaN skipped
        assert e == best_chosen


@needs_solver
def test_ilp_matches_brute_force_on_200_random_instances():
    rng = np.random.default_rng(20261130)
    strictly_better = 0
    for _ in range(200):
        g = random_instance(rng)
        sel = prune.select(g, scale_tol=False, tol=0.02)
        eff = prune.efficiency(g)
        feas = prune.feasible_pairs(eff, sel.tolerance)
        k, best_total = brute_force(feas.to_numpy(), eff.to_numpy())
        assert len(sel.chosen) == k
        assert sel.status == "optimal" and sel.method == "ilp"
        assert len(sel.chosen) <= sel.n_greedy == len(prune.greedy_cover(feas))
        strictly_better += len(sel.chosen) < sel.n_greedy
        check_selection(g, sel)
        # tie-break: the most efficient of the minimum covers
        total = sum(eff.loc[s, sol] for s, sol in sel.assignment.items())
        assert total == pytest.approx(best_total, abs=1e-9)
    assert strictly_better > 0  # the instances do exercise greedy's weakness


@pytest.mark.skipif(len(SOLVERS) < 2, reason="needs both HiGHS and CBC")
def test_both_solvers_agree_with_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(25):
        g = random_instance(rng)
        sizes = {len(prune.select(g, scale_tol=False, solver=s).chosen) for s in SOLVERS}
        eff = prune.efficiency(g)
        k, _ = brute_force(prune.feasible_pairs(eff, 0.02).to_numpy(), eff.to_numpy())
        assert sizes == {k}


@needs_solver
def test_without_tiebreak_still_minimum():
    rng = np.random.default_rng(3)
    for _ in range(20):
        g = random_instance(rng)
        sel = prune.select(g, scale_tol=False, tiebreak=False)
        eff = prune.efficiency(g)
        k, _ = brute_force(prune.feasible_pairs(eff, 0.02).to_numpy(), eff.to_numpy())
        assert len(sel.chosen) == k
        check_selection(g, sel)


def test_tiebreak_prefers_the_more_efficient_minimum_cover():
    # both a and b cover both sizes, b is the best on both: greedy takes a (tie, lowest
    # column), the ILP's tie-break takes b
    g = matrix([[99.0, 100.0], [99.5, 100.0]], index=["x", "y"], columns=["a", "b"])
    assert prune.select(g, scale_tol=False, method="greedy").chosen == ["a"]
    assert prune.select(g, scale_tol=False).chosen == ["b"]  # k = 1: no solver needed
    assert prune.select(g, scale_tol=False, tiebreak=False).chosen == ["a"]
    # three sizes, two minimum covers {a, c} and {b, c}: b is better on size 1
    g = matrix([[100, 99.0, None], [99.0, 100, 100], [None, None, 100]],
               index=["0", "1", "2"], columns=["a", "b", "c"])
    g.loc["0", "b"] = 99.5
    if SOLVERS:
        sel = prune.select(g, scale_tol=False)
        assert sel.chosen == ["a", "c"] or sel.chosen == ["b", "c"]
        # total efficiency: {a,c}: 1 + 1 + 1 = 3; {b,c}: .995 + 1 + 1 -> {a, c}
        assert sel.chosen == ["a", "c"]
        assert sel.assignment == {"0": "a", "1": "c", "2": "c"}


# ------------------------------------------------------------------------------------------
# time-outs and fallbacks (the solver call is replaced: deterministic)
# ------------------------------------------------------------------------------------------
def fake_solver(values=None, sol_status=pulp.LpSolutionNoSolutionFound,
                status=pulp.LpStatusNotSolved, bound=None, objective=None, calls=None):
    """A stand-in for prune._run_solver: sets x values by solution position, then statuses."""

    def run(problem, solver):
        if calls is not None:
            calls.append(problem.name)
        for var in problem.variables():
            var.varValue = None
            if values is not None and var.name.startswith("x"):
                var.varValue = float(values.get(int(var.name[1:]), 0))
        if bound is not None:
            problem._geko_bound = bound
        if objective is not None:
            problem._geko_objective = objective
        problem.assignStatus(status, sol_status)

    return run


CLASSIC_POS = {name: j for j, name in enumerate(CLASSIC)}


@pytest.fixture
def classic_feasible():
    return prune.feasible_pairs(prune.efficiency(from_sets(14, CLASSIC)), 0.02)


@pytest.fixture
def some_solver(monkeypatch):
    monkeypatch.setattr(prune, "available_solvers", lambda: ("cbc",))


def test_timeout_without_incumbent_falls_back_to_greedy(monkeypatch, classic_feasible, some_solver):
    monkeypatch.setattr(prune, "_run_solver", fake_solver())
    cover = prune.ilp_cover(classic_feasible, 0.01)
    assert cover.chosen == ["C1", "C2", "C3"]
    assert (cover.method, cover.status, cover.n_greedy) == ("greedy-fallback", "greedy", 3)


def test_timeout_with_incumbent_worse_than_greedy(monkeypatch, classic_feasible, some_solver):
    # PuLP's pitfall: status "Optimal" after a time-out; only sol_status tells
    everything = {j: 1 for j in range(5)}
    monkeypatch.setattr(prune, "_run_solver", fake_solver(
        everything, pulp.LpSolutionIntegerFeasible, pulp.LpStatusOptimal))
    cover = prune.ilp_cover(classic_feasible, 0.01)
    assert (cover.chosen, cover.method, cover.status) == (["C1", "C2", "C3"],
                                                          "greedy-fallback", "greedy")


def test_timeout_with_good_incumbent_is_feasible_not_optimal(monkeypatch, classic_feasible,
                                                              some_solver):
    best = {CLASSIC_POS["R1"]: 1, CLASSIC_POS["R2"]: 1}
    monkeypatch.setattr(prune, "_run_solver", fake_solver(
        best, pulp.LpSolutionIntegerFeasible, pulp.LpStatusOptimal, bound=1.4))
    cover = prune.ilp_cover(classic_feasible, 0.01)
    assert (cover.chosen, cover.method, cover.status) == (["R1", "R2"], "ilp", "feasible")
    assert cover.lower_bound == 1.4


def test_incumbent_that_is_not_a_cover_is_ignored(monkeypatch, classic_feasible, some_solver):
    monkeypatch.setattr(prune, "_run_solver", fake_solver(
        {CLASSIC_POS["R1"]: 1}, pulp.LpSolutionOptimal, pulp.LpStatusOptimal))
    cover = prune.ilp_cover(classic_feasible, 0.01)
    assert (cover.chosen, cover.method) == (["C1", "C2", "C3"], "greedy-fallback")


def test_optimal_claim_contradicted_by_bound_is_downgraded(monkeypatch, classic_feasible,
                                                           some_solver):
    best = {CLASSIC_POS["R1"]: 1, CLASSIC_POS["R2"]: 1}
    monkeypatch.setattr(prune, "_run_solver", fake_solver(
        best, pulp.LpSolutionOptimal, pulp.LpStatusOptimal, bound=1.0))
    cover = prune.ilp_cover(classic_feasible, 0.01)
    assert (cover.chosen, cover.status) == (["R1", "R2"], "feasible")


def test_solution_inconsistent_with_solver_objective_is_rejected(monkeypatch, classic_feasible,
                                                                 some_solver):
    # the highspy 1.16.0 MIP-start symptom: returned x has 3 solutions, solver objective says 2
    greedy = {CLASSIC_POS[s]: 1 for s in ("C1", "C2", "C3")}
    monkeypatch.setattr(prune, "_run_solver", fake_solver(
        greedy, pulp.LpSolutionOptimal, pulp.LpStatusOptimal, bound=2.0, objective=2.0))
    cover = prune.ilp_cover(classic_feasible, 0.01)
    assert (cover.method, cover.status) == ("greedy-fallback", "greedy")


def test_tiebreak_timeout_keeps_first_answer(monkeypatch, some_solver):
    g = from_sets(14, CLASSIC)
    best = {CLASSIC_POS["R1"]: 1, CLASSIC_POS["R2"]: 1}
    calls = []
    first = fake_solver(best, pulp.LpSolutionOptimal, pulp.LpStatusOptimal, calls=calls)
    nothing = fake_solver(calls=calls)
    monkeypatch.setattr(prune, "_run_solver",
                        lambda p, s: (first if p.name == "set_cover" else nothing)(p, s))
    sel = prune.select(g, scale_tol=False, time_limit=5)
    assert calls == ["set_cover", "set_cover_efficiency"]
    assert (sel.chosen, sel.status) == (["R1", "R2"], "optimal")


def test_solver_crash_falls_back_to_greedy(monkeypatch, classic_feasible, some_solver):
    # the CBC binary sometimes segfaults under a tiny time limit; PuLP raises PulpSolverError
    def crash(problem, solver):
        raise pulp.PulpSolverError("Pulp: Error while trying to execute")

    monkeypatch.setattr(prune, "_run_solver", crash)
    cover = prune.ilp_cover(classic_feasible, 0.01)
    assert (cover.chosen, cover.method, cover.status) == (["C1", "C2", "C3"],
                                                          "greedy-fallback", "greedy")


def test_tiebreak_crash_keeps_first_answer(monkeypatch, some_solver):
    g = from_sets(14, CLASSIC)
    best = {CLASSIC_POS["R1"]: 1, CLASSIC_POS["R2"]: 1}
    first = fake_solver(best, pulp.LpSolutionOptimal, pulp.LpStatusOptimal)

    def run(problem, solver):
        if problem.name != "set_cover":
            raise pulp.PulpSolverError("crash")
        first(problem, solver)

    monkeypatch.setattr(prune, "_run_solver", run)
    sel = prune.select(g, scale_tol=False, time_limit=5)
    assert (sel.chosen, sel.method, sel.status) == (["R1", "R2"], "ilp", "optimal")


def test_no_solver_falls_back_to_greedy(monkeypatch, classic_feasible):
    monkeypatch.setattr(prune, "available_solvers", lambda: ())
    cover = prune.ilp_cover(classic_feasible, 1.0)
    assert (cover.chosen, cover.method, cover.solver) == (["C1", "C2", "C3"],
                                                          "greedy-fallback", None)
    # a named solver that is not installed: same
    monkeypatch.setattr(prune, "available_solvers", lambda: ("cbc",))
    assert prune.ilp_cover(classic_feasible, 1.0, solver="highs").method == "greedy-fallback"
    with pytest.raises(ValueError):
        prune.ilp_cover(classic_feasible, 1.0, solver="gurobi")


@needs_solver
@pytest.mark.parametrize("solver", SOLVERS)
def test_real_tiny_time_limit_on_a_hard_instance(solver):
    # uniform random 2-4 solutions per size: hard for the ILP; whatever the solver gets done in
    # 10 ms, the answer is a valid cover no worse than greedy
    rng = np.random.default_rng(11)
    n_sizes, n_sols = 400, 150
    g = np.full((n_sizes, n_sols), 50.0)
    for i in range(n_sizes):
        g[i, rng.choice(n_sols, rng.integers(2, 5), replace=False)] = 100.0
    g = pd.DataFrame(g, columns=[f"k{j}" for j in range(n_sols)])
    sel = prune.select(g, scale_tol=False, time_limit=0.01, solver=solver)
    assert len(sel.chosen) <= sel.n_greedy
    assert sel.status in ("optimal", "feasible", "greedy")
    assert (sel.status == "greedy") == (sel.method == "greedy-fallback")
    check_selection(g, sel)


# ------------------------------------------------------------------------------------------
# NaN, errors, determinism
# ------------------------------------------------------------------------------------------
def test_nan_pairs_are_never_assigned():
    g = matrix([[100, None, 99.5], [None, 100, None], [100, 100, None]],
               index=["p", "q", "r"], columns=["a", "b", "c"])
    g["dead"] = np.nan  # a solution measured nowhere
    for method in ("greedy",) + (("ilp",) if SOLVERS else ()):
        sel = prune.select(g, scale_tol=False, method=method)
        assert "dead" not in sel.chosen
        for size, sol in sel.assignment.items():
            assert not math.isnan(g.loc[size, sol])
        assert sel.chosen == ["a", "b"]
        assert sel.assignment == {"p": "a", "q": "b", "r": "a"}


def test_size_without_measurement_is_a_value_error():
    g = matrix([[100, 90], [None, None]], index=["fine", (4096, 4096, 1, 512)])
    for method in ("greedy", "ilp"):
        with pytest.raises(ValueError, match=r"\(4096, 4096, 1, 512\)"):
            prune.select(g, scale_tol=False, method=method)


def test_select_argument_errors():
    g = matrix([[1.0]])
    with pytest.raises(ValueError):
        prune.select(g, scale_tol=False, method="lp")
    with pytest.raises(ValueError):
        prune.select(g, scale_tol=False, tol=-0.1)
    with pytest.raises(ValueError):
        prune.select(matrix([]).reindex(columns=["a"]), scale_tol=False)
    with pytest.raises(ValueError):
        prune.select(g, [1.0, 2.0])  # one FLOPs value per size


def test_selection_is_frozen_and_deterministic():
    rng = np.random.default_rng(5)
    g = random_instance(rng)
    a = prune.select(g, scale_tol=False)
    b = prune.select(g, scale_tol=False)
    assert (a.chosen, a.assignment, a.status) == (b.chosen, b.assignment, b.status)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.chosen = []


def test_single_solution_needs_no_solver(monkeypatch):
    monkeypatch.setattr(prune, "_run_solver", lambda p, s: pytest.fail("solver called"))
    g = matrix([[100, 90], [100, 50]], columns=["a", "b"])
    sel = prune.select(g, scale_tol=False)
    assert (sel.chosen, sel.method, sel.status, sel.n_greedy) == (["a"], "ilp", "optimal", 1)


# ------------------------------------------------------------------------------------------
# clustering
# ------------------------------------------------------------------------------------------
def test_clusters_group_by_tile_in_first_seen_order():
    sols = [
        {"MacroTile0": 256, "MacroTile1": 128, "DepthU": 64, "WorkGroupMapping": 8},
        {"MacroTile0": 128, "MacroTile1": 128, "DepthU": 64},
        {"MacroTile0": 256, "MacroTile1": 128, "DepthU": 64, "WorkGroupMapping": 1},
        {"MacroTile0": 256, "MacroTile1": 128, "DepthU": 32},
        {"MacroTile0": 128, "MacroTile1": 128, "DepthU": 64},
    ]
    got = prune.clusters(sols)
    assert list(got.items()) == [((256, 128, 64), [0, 2]), ((128, 128, 64), [1, 4]),
                                 ((256, 128, 32), [3])]
    assert prune.clusters(sols, keys=()) == {(): [0, 1, 2, 3, 4]}
    assert prune.clusters(sols, keys=("DepthU",)) == {(64,): [0, 1, 2, 4], (32,): [3]}
    assert prune.clusters([]) == {}
    with pytest.raises(ValueError, match="solution 1: no 'WorkGroupMapping'"):
        prune.clusters(sols, keys=("WorkGroupMapping",))
    # list values (e.g. MatrixInstruction) are usable keys
    mi = [{"MatrixInstruction": [16, 16, 16, 1]}, {"MatrixInstruction": [16, 16, 16, 1]}]
    assert prune.clusters(mi, keys=("MatrixInstruction",)) == {((16, 16, 16, 1),): [0, 1]}
