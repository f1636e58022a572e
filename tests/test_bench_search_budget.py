"""bench/search_budget.py: a finished cuda search's winners replayed under smaller screening
budgets, from the rows' ``screen_s`` (bench/RESULTS.md quotes it for issue 39's campaign time)."""
import math

import pandas as pd
import pytest

from tests.conftest import load_bench

budget = load_bench("search_budget")
GEMM = {"transA": "T", "transB": "N", "batch_count": 1, "a_type": "bf16_r",
        "compute_type": "c_f32_r"}


def rows(m: int, finals: dict, screens: dict) -> list[dict]:
    """A GEMM's rows: the default (never screened), finals {us: screen_s}, screens likewise."""
    out = [{**GEMM, "m": m, "n": 1, "k": 64, "stage": "final", "us": 10.0, "eligible": True,
            "screen_s": math.nan, "solution_name": "cublaslt_heuristic_default"}]
    for stage, given in (("final", finals), ("screen", screens)):
        out += [{**GEMM, "m": m, "n": 1, "k": 64, "stage": stage, "us": us,
                 "eligible": stage == "final", "screen_s": at, "solution_name": f"c{us}"}
                for us, at in given.items()]
    return out


def test_a_smaller_budget_loses_only_the_winners_screened_after_it():
    table = pd.DataFrame(
        rows(1, {9.0: 0.1, 8.0: 2.5}, {9.5: 3.0}) +  # its winner came at 2.5 s
        rows(2, {7.0: 0.2, 7.5: 0.3}, {8.0: 1.0}))   # its winner came at once
    replay = budget.replay(table, [1.0, 3.0], heuristic_count=1)
    at_1, at_3 = replay
    assert (at_1["gemms"], at_1["same_winner"]) == (2, 1)
    assert at_1["winners_us"] == pytest.approx(9.0 + 7.0)
    assert at_1["vs_full_budget"] == pytest.approx(16.0 / 15.0, abs=1e-5)
    assert at_1["screening_s_saved"] == pytest.approx((3.0 - 1.0) + 0.0)
    assert (at_3["same_winner"], at_3["vs_full_budget"]) == (2, 1.0)


def test_the_heuristics_list_is_kept_whatever_the_budget():
    """The search always screens the heuristic's list: its first entries (the earliest
    screen_s) count as kept even under a budget shorter than their screening time."""
    table = pd.DataFrame(rows(1, {6.0: 0.4, 9.0: 0.5}, {}))
    only_first, = budget.replay(table, [0.1], heuristic_count=1)
    assert only_first["same_winner"] == 1


def test_rows_from_before_screen_s_are_refused(tmp_path):
    pd.DataFrame([{**GEMM, "m": 1, "n": 1, "k": 64, "stage": "final", "us": 1.0,
                   "eligible": True}]).to_csv(tmp_path / "old.csv", index=False)
    with pytest.raises(SystemExit, match="no screen_s"):
        budget.main([str(tmp_path)])


def test_it_says_when_each_winner_came_up():
    table = pd.DataFrame(rows(1, {9.0: 0.1, 8.0: 2.5}, {9.5: 3.0})
                         + rows(2, {17.0: 0.2}, {}))  # the default (10 us) won
    found = budget.winners_found_at(table)
    assert list(found.fillna(-1)) == [2.5, -1]
