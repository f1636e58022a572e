"""geko_lib.tuning.ga: the genetic-algorithm tuner (Ductile semantics) and its baselines."""

import json
import math

import numpy as np
import pytest

from geko_lib.tuning import ga


class Recorder:
    """evaluate() from a function of the params; records every batch; optionally dies."""

    def __init__(self, fn, die_at: int | None = None):
        self.fn, self.die_at = fn, die_at
        self.batches: list[list[dict]] = []

    def __call__(self, batch):
        if self.die_at is not None and len(self.batches) >= self.die_at:
            raise KeyboardInterrupt("killed")
        scores = np.array([self.fn(p) for p in batch], dtype=float)
        self.batches.append([dict(p) for p in batch])
        return scores.T if scores.ndim == 2 else scores


def rugged(p):
    """A 2-size objective with structure and a hash-like rugged part."""
    a, b, c, d = p["a"], p["b"], p["c"], p["d"]
    bump = ((a * 7 + b * 13 + c * 17 + d * 3) % 11) / 11
    return [100 - (a - 2) ** 2 - (b - 5) ** 2 + 3 * bump + c, 50 - (a - 6) ** 2 + d + bump]


def small_space(**kw):
    return ga.Space({"a": range(8), "b": range(8), "c": range(4), "d": range(6)}, **kw)


# --------------------------------------------------------------------------------------------
# the space


def test_decode_groups_and_size():
    mi = [{"MatrixInstruction": [16, 16, 16, 1], "MIWaveTile": [2, 2]},
          {"MatrixInstruction": [32, 32, 8, 1], "MIWaveTile": [1, 1]}]
    space = ga.Space({"DepthU": [32, 64], "group_0": mi, "GSU": [1, 2, 4]})
    assert space.size == 12 and isinstance(space.size, int)
    assert space.decode([1, 1, 2]) == {"DepthU": 64, "MatrixInstruction": [32, 32, 8, 1],
                                       "MIWaveTile": [1, 1], "GSU": 4}
    assert space.groups == (False, True, False)
    big = ga.Space({f"v{i}": range(10) for i in range(30)})
    assert big.size == 10**30  # a python int beyond int64
    with pytest.raises(ga.GAError, match="set by both"):
        ga.Space({"DepthU": [1], "g": [{"DepthU": 2}]})
    with pytest.raises(ga.GAError, match="mixes"):
        ga.Space({"g": [{"a": 1}, 3]})
    with pytest.raises(ga.GAError, match="no values"):
        ga.Space({"a": []})
    assert len(space.enumerate()) == 12
    # the GA hands evaluate the merged dicts
    res = ga.run(space, Recorder(lambda p: p["DepthU"] * p["MIWaveTile"][0] / p["GSU"]),
                 pop_size=6, n_gen=3)
    assert res.best_params == [{"DepthU": 64, "MatrixInstruction": [16, 16, 16, 1],
                                "MIWaveTile": [2, 2], "GSU": 1}]
    assert {tuple(r) for r in space.enumerate().tolist()} == {
        (i, j, k) for i in range(2) for j in range(2) for k in range(3)}


def test_weights_become_sampling_probabilities():
    w = [0.0, 2.0, 4.0, 10.0]
    space = ga.Space({"x": ["a", "b", "c", "d"], "y": [1, 2]}, weights={"x": w})
    expected = np.exp(-0.25 * (np.array(w) - 0.0))
    expected /= expected.sum()
    np.testing.assert_allclose(space.probs[0], expected)
    np.testing.assert_allclose(space.probs[1], [0.5, 0.5])
    rng = np.random.Generator(np.random.PCG64(7))
    sample = space.sample(rng, 200_000)
    freq = np.bincount(sample[:, 0], minlength=4) / len(sample)
    np.testing.assert_allclose(freq, expected, atol=0.005)
    assert abs(sample[:, 1].mean() - 0.5) < 0.005
    # beta changes the sharpness; weights are shifted by their minimum
    sharp = ga.Space({"x": range(3)}, weights={"x": [5, 6, 7]}, beta=1.0)
    np.testing.assert_allclose(sharp.probs[0], np.exp([0, -1, -2]) / np.exp([0, -1, -2]).sum())
    with pytest.raises(ga.GAError, match="unknown"):
        ga.Space({"x": range(3)}, weights={"z": [1, 2, 3]})
    with pytest.raises(ga.GAError, match="3 finite"):
        ga.Space({"x": range(3)}, weights={"x": [1, 2]})


# --------------------------------------------------------------------------------------------
# constraints and population size


def test_constraints_are_resampled():
    calls = []

    def valid(p):
        calls.append(1)
        return (p["a"] + p["b"]) % 3 == 0

    space = small_space(valid=valid)
    ev = Recorder(rugged)
    res = ga.run(space, ev, pop_size=32, n_gen=4, seed=3)
    assert res.n_evals == 4 * 32 and res.dropped == 0
    assert all((p["a"] + p["b"]) % 3 == 0 for batch in ev.batches for p in batch)
    keys = [tuple(sorted(p.items())) for batch in ev.batches for p in batch]
    assert len(keys) == len(set(keys))  # never evaluated twice


def test_unsatisfiable_individuals_are_dropped_and_reported(caplog):
    # a large space (no enumeration) where only 3 combinations are valid
    space = ga.Space({f"v{i}": range(10) for i in range(6)},
                     valid=lambda p: p["v0"] == p["v1"] == p["v2"] == p["v3"] == p["v4"] == 0
                     and p["v5"] < 3)
    with pytest.raises(ga.GAError, match="valid individuals"):
        ga.run(space, Recorder(lambda p: 1.0), pop_size=8, max_iters=5)
    # a large space where 5 % is valid and only 3 sampling rounds are allowed: the population
    # is not filled, the rest is dropped with a warning
    space = ga.Space({"a": range(1000), "b": range(1000)}, valid=lambda p: p["a"] < 50)
    with caplog.at_level("WARNING"):
        res = ga.run(space, Recorder(lambda p: 1.0 + p["b"]), pop_size=64, n_gen=1, max_iters=3)
    assert 0 < res.dropped < 64 and res.n_evals == 64 - res.dropped
    assert all(r[0] < 50 for r in res.individuals.tolist())
    assert "dropped" in caplog.text


def test_space_smaller_than_population():
    space = ga.Space({"a": range(10), "b": range(10)}, valid=lambda p: p["a"] < 3)  # 30 valid
    with pytest.raises(ga.GAError, match="only 30 valid combinations.*exhaustive"):
        ga.run(space, Recorder(lambda p: 1.0), pop_size=64)
    # the population is capped at the size of the space: it then is one exhaustive generation
    tiny = ga.Space({"a": range(4), "b": range(5)})
    res = ga.run(tiny, Recorder(lambda p: 1 + p["a"] * 5 + p["b"]))
    assert res.n_evals == 20 and res.stop_reason == "exhausted"
    assert res.best_params == [{"a": 3, "b": 4}]


# --------------------------------------------------------------------------------------------
# fitness


def test_fitness_formula():
    scores = np.array([[10.0, 5.0, np.nan, 4.0], [2.0, 4.0, 8.0, -1.0]])
    best = np.array([10.0, 8.0])
    np.testing.assert_allclose(ga._fitness(scores, best, soo=False), [1.0, 0.5, 1.0, 0.4])
    np.testing.assert_allclose(ga._fitness(scores, best, soo=True), [0.625, 0.5, 0.5, 0.2])
    np.testing.assert_allclose(ga._fitness(scores, np.array([10.0, 0.0]), soo=False),
                               [1.0, 0.5, 0.0, 0.4])


@pytest.mark.parametrize("soo", [False, True])
def test_fitness_is_recomputed_every_generation(soo):
    """Two sizes, two generations, checked against a hand computation."""
    table = {0: (10.0, 1.0), 1: (8.0, 4.0), 2: (2.0, 2.0), 3: (4.0, 8.0), 4: (20.0, 1.0),
             5: (1.0, 1.0)}
    ev = Recorder(lambda p: table[p["x"]])
    res = ga.run(ga.Space({"x": range(6)}), ev, pop_size=3, n_gen=2, soo=soo, seed=1)
    assert [len(b) for b in ev.batches] == [3, 3]
    gen0 = [p["x"] for p in ev.batches[0]]
    reduce = (lambda v: sum(v) / len(v)) if soo else max

    def fit(x, best):
        return reduce([table[x][i] / best[i] for i in range(2)])

    best0 = [max(table[x][i] for x in gen0) for i in range(2)]
    f0 = [fit(x, best0) for x in gen0]
    row0 = res.history[0]
    assert row0["best_scores"] == best0
    assert row0["mean_fitness"] == pytest.approx(sum(f0) / 3)
    assert row0["best_fitness"] == pytest.approx(max(f0))
    # generation 1: all six evaluated; best per size is now (20, 8); survivors are the elites
    # (x=4 best on size 0, x=3 best on size 1) and the next best by the *new* fitness
    best1 = [20.0, 8.0]
    assert res.history[1]["best_scores"] == best1
    f1 = {x: fit(x, best1) for x in range(6)}
    elites = {4, 3} | {max(range(6), key=lambda x: (f1[x], -x))}
    rest = sorted((x for x in range(6) if x not in elites), key=lambda x: (-f1[x], x))
    survivors = sorted(elites, key=lambda x: (-f1[x], x))
    survivors = (survivors + rest)[:3]
    got = [res.space.decode(res.individuals[r])["x"] for r in res.population]
    assert sorted(got) == sorted(survivors)
    assert res.history[1]["mean_fitness"] == pytest.approx(sum(f1[x] for x in survivors) / 3)
    np.testing.assert_allclose(res.fitness, [f1[x] for x in got])
    # the same by hand for seed 1: generation 0 evaluates x = 3, 5, 0 (best so far (10, 8))
    assert gen0 == [3, 5, 0] and sorted(p["x"] for p in ev.batches[1]) == [1, 2, 4]
    if not soo:
        # max: f(3) = max(4/10, 8/8) = 1, f(5) = max(1/10, 1/8) = 0.125, f(0) = 1
        assert row0["mean_fitness"] == pytest.approx((1 + 0.125 + 1) / 3)
        # best becomes (20, 8): x=0 drops from 1 to max(10/20, 1/8) = 0.5 and ties with x=1
        # (max(8/20, 4/8) = 0.5); the older archive row wins the tie
        assert got == [3, 4, 0]
        np.testing.assert_allclose(res.fitness, [1.0, 1.0, 0.5])
    else:
        # mean: f(3) = (0.4 + 1) / 2 = 0.7, f(5) = (0.1 + 0.125) / 2, f(0) = (1 + 0.125) / 2
        assert row0["mean_fitness"] == pytest.approx((0.7 + 0.1125 + 0.5625) / 3)
        # rescored against (20, 8): x=0 falls to 0.3125 and loses its place to x=1 (0.45)
        assert got == [3, 4, 1]
        np.testing.assert_allclose(res.fitness, [0.6, 0.5625, 0.45])


def test_failed_kernels_have_zero_fitness_and_best_per_size():
    def fn(p):
        if p["a"] == 0:
            return [np.nan, np.inf]
        return [10 - abs(p["a"] - 3) + p["b"] / 10, 10 - abs(p["a"] - 6) - p["b"] / 10]

    res = ga.run(ga.Space({"a": range(8), "b": range(5)}), Recorder(fn), pop_size=8, n_gen=10,
                 seed=0)
    assert res.n_sizes == 2
    assert res.best_params == [{"a": 3, "b": 4}, {"a": 6, "b": 0}]
    np.testing.assert_allclose(res.best_scores, [10.4, 10.0])
    rows = np.flatnonzero(res.individuals[:, 0] == 0)
    assert np.isnan(res.scores[:, rows]).all()  # inf is a failure too
    assert res.overall(1)[0]["fitness"] == 1.0


# --------------------------------------------------------------------------------------------
# the loop


def test_early_stop_and_n_gen():
    res = ga.run(small_space(), Recorder(lambda p: 5.0), pop_size=16, n_gen=30, period=5)
    assert res.stop_reason == "converged" and len(res.history) == 6
    res = ga.run(small_space(), Recorder(rugged), pop_size=16, n_gen=3)
    assert res.stop_reason == "n_gen" and len(res.history) == 3 and res.n_evals == 48
    res = ga.run(small_space(), Recorder(rugged), pop_size=16, max_evals=40)
    assert res.stop_reason == "max_evals" and res.n_evals == 40
    assert [r["batch"] for r in res.history] == [16, 16, 8]


def test_progress_and_history_rows():
    rows = []
    res = ga.run(small_space(), Recorder(rugged), pop_size=16, n_gen=4, progress=rows.append)
    assert rows == res.history and [r["generation"] for r in rows] == [0, 1, 2, 3]
    assert [r["n_evals"] for r in rows] == [16, 32, 48, 64]
    assert all(len(r["best_scores"]) == 2 for r in rows)
    assert ga.format_row(rows[-1]).split("|")[0].strip() == "3"


def test_deterministic():
    a, b, c = Recorder(rugged), Recorder(rugged), Recorder(rugged)
    ra = ga.run(small_space(), a, pop_size=24, n_gen=8, seed=5)
    rb = ga.run(small_space(), b, pop_size=24, n_gen=8, seed=5)
    ga.run(small_space(), c, pop_size=24, n_gen=8, seed=6)
    assert a.batches == b.batches and a.batches != c.batches
    assert ra.history == rb.history
    np.testing.assert_array_equal(ra.population, rb.population)


def _same(r1, r2):
    np.testing.assert_array_equal(r1.individuals, r2.individuals)
    np.testing.assert_array_equal(r1.scores, r2.scores)
    np.testing.assert_array_equal(r1.population, r2.population)
    np.testing.assert_array_equal(r1.fitness, r2.fitness)
    assert r1.history == r2.history and r1.stop_reason == r2.stop_reason
    assert r1.best_params == r2.best_params


def _with_failures(p):
    return [np.nan, np.nan] if p["a"] == 7 and p["b"] == 7 else rugged(p)


@pytest.mark.parametrize("kill_after", [1, 3, 6])
def test_resume_after_a_kill_is_exact(tmp_path, kill_after):
    space = small_space(valid=lambda p: p["a"] != p["b"])
    opts = dict(pop_size=24, n_gen=10, seed=11)
    full_ev = Recorder(_with_failures)
    full = ga.run(space, full_ev, **opts)
    ckpt = tmp_path / "ga.json"
    killed = Recorder(_with_failures, die_at=kill_after)
    with pytest.raises(KeyboardInterrupt):
        ga.run(space, killed, checkpoint=ckpt, **opts)
    assert json.loads(ckpt.read_text())["generation"] == kill_after - 1
    rest = Recorder(_with_failures)
    resumed = ga.run(space, rest, checkpoint=ckpt, **opts)
    assert killed.batches + rest.batches == full_ev.batches
    _same(full, resumed)


def test_resume_after_every_generation(tmp_path):
    space = small_space()
    opts = dict(pop_size=16, n_gen=12, seed=2, soo=True)
    full_ev = Recorder(rugged)
    full = ga.run(space, full_ev, **opts)
    ckpt, batches = tmp_path / "ga.json", []
    for _ in range(100):
        ev = Recorder(rugged, die_at=1)  # evaluates one generation, then is killed
        try:
            res = ga.run(space, ev, checkpoint=ckpt, **opts)
        except KeyboardInterrupt:
            batches += ev.batches
            continue
        batches += ev.batches
        break
    assert batches == full_ev.batches
    _same(full, res)
    # the checkpoint is plain JSON with what was promised
    data = json.loads(ckpt.read_text())
    assert {"generation", "population", "best", "individuals", "scores", "rng",
            "history"} <= set(data)
    assert len(data["individuals"]) == full.n_evals
    # written compact, after every generation (the indented form cost a sim tuning job most of
    # its time: bench/bench_ga_checkpoint.py)
    assert ckpt.read_text().count("\n") == 1 and ", " not in ckpt.read_text()
    # finished: resuming again evaluates nothing; a longer n_gen continues the same trajectory
    idle = Recorder(rugged)
    _same(full, ga.run(space, idle, checkpoint=ckpt, **opts))
    assert idle.batches == []
    longer = Recorder(rugged)
    ga.run(space, longer, checkpoint=ckpt, **{**opts, "n_gen": 14})
    assert len(longer.batches) <= 2
    # another space or other settings refuse the checkpoint
    with pytest.raises(ga.GAError, match="another search space"):
        ga.run(space, Recorder(rugged), checkpoint=ckpt, **{**opts, "seed": 3})
    with pytest.raises(ga.GAError, match="another search space"):
        ga.run(ga.Space({"a": range(8), "b": range(8), "c": range(4), "d": range(5)}),
               Recorder(rugged), checkpoint=ckpt, **opts)


def test_bad_evaluate_shape():
    with pytest.raises(ga.GAError, match="expected"):
        ga.run(small_space(), lambda batch: np.ones((2, len(batch) + 1)), pop_size=8)


# --------------------------------------------------------------------------------------------
# search quality and baselines


def test_ga_finds_the_optimum_of_a_separable_objective():
    rng = np.random.default_rng(0)
    tables = rng.uniform(0, 10, (7, 8))  # 7 variables x 8 values: 2,097,152 combinations
    space = ga.Space({f"v{i}": range(8) for i in range(7)})
    optimum = tables.max(axis=1).sum()

    def evaluate(batch):
        x = np.array([[p[f"v{i}"] for i in range(7)] for p in batch])
        return tables[np.arange(7), x].sum(axis=1)

    res = ga.run(space, evaluate, pop_size=64, n_gen=60, seed=0)
    assert res.best_scores[0] == pytest.approx(optimum)
    assert res.best_params[0] == {f"v{i}": int(tables[i].argmax()) for i in range(7)}
    assert res.n_evals < 0.002 * space.size


def test_exhaustive_and_random_search():
    space = small_space(valid=lambda p: p["c"] != 1)
    ev = Recorder(rugged)
    full = ga.exhaustive(space, ev, batch=100)
    assert full.n_evals == 8 * 8 * 3 * 6 and max(len(b) for b in ev.batches) <= 100
    by_hand = [max(rugged(space.decode(r))[i] for r in space.enumerate().tolist()
                   if space.is_valid(r)) for i in range(2)]
    np.testing.assert_allclose(full.best_scores, by_hand)
    rnd = ga.random_search(space, Recorder(rugged), n_evals=300, seed=1, batch=64)
    assert rnd.n_evals == 300 and len({tuple(r) for r in rnd.individuals.tolist()}) == 300
    assert all(space.is_valid(r) for r in rnd.individuals.tolist())
    assert (rnd.best_curve()[:, -1] == rnd.best_scores).all()
    again = ga.random_search(space, Recorder(rugged), n_evals=300, seed=1, batch=64)
    np.testing.assert_array_equal(rnd.individuals, again.individuals)
    assert ga.random_search(space, Recorder(rugged), n_evals=10_000).stop_reason == "exhausted"
    ga_res = ga.run(space, Recorder(rugged), pop_size=32, n_gen=20, seed=0)
    assert (ga_res.best_scores >= 0.98 * full.best_scores).all()
    assert math.isclose(float(full.best_curve()[0, -1]), by_hand[0])
