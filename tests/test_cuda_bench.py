"""bench/bench_h200.py's floor: a lower bound built from the best ceilings the run measured."""
import math

import pandas as pd
import pytest

from .conftest import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_h200")


def frame():
    # a decode GEMM whose kernel reads faster than the run's copy, a small GEMM and a large
    # compute-bound one faster than the run's 8192^3 matmul rate
    return pd.DataFrame([
        {"gemm": "decode", "n": 1, "flops": 2 * 4096 * 4096, "bytes": 33_570_816,
         "copy_us": 10.0, "default": 13.0, "final": 9.0, "call_count": 10},
        {"gemm": "small", "n": 8, "flops": 2 * 1024 * 1024 * 8, "bytes": 2_000_000,
         "copy_us": 3.0, "default": 4.0, "final": 4.0, "call_count": 10},
        {"gemm": "prefill", "n": 8192, "flops": 2 * 8192**3, "bytes": 400_000_000,
         "copy_us": 100.0, "default": 1500.0, "final": 1300.0, "call_count": 1},
    ])


def test_floor_is_a_lower_bound_of_every_time(bench):
    data = frame()
    data["floor"], ceilings = bench.honest_floor(data, matmul_tflops=700.0)
    # the peak is the prefill kernel's rate (845.8 TFLOP/s), above the matmul's 700
    assert ceilings["peak_tflops"] == pytest.approx(2 * 8192**3 / 1300.0 / 1e6)
    assert data.loc[2, "floor"] == pytest.approx(1300.0)
    # the decode kernel moved its bytes in 9 us: that bandwidth is the floor's, not the copy's
    assert data.loc[0, "floor"] == pytest.approx(9.0)
    # a larger GEMM never gets a lower bandwidth than a smaller one reached
    assert ceilings["bandwidth_tbps"][400_000_000] >= ceilings["bandwidth_tbps"][33_570_816]
    assert data.loc[1, "floor"] == pytest.approx(3.0)  # its copy was faster than its kernels
    assert bench.floor_flaws(data) == []
    summary = bench.summarize_runs(data)
    assert summary["floor_flaws"] == []
    assert all(v <= 100 + 1e-9 for v in summary["pct_of_floor"].values())


def test_a_read_of_the_bytes_faster_than_their_copy_lowers_the_floor(bench):
    data = frame()
    data["read_us"] = [8.0, 2.5, 90.0]  # as on the H200: reading beats copying the bytes
    data["floor"], ceilings = bench.honest_floor(data, matmul_tflops=700.0)
    assert data.loc[0, "floor"] == pytest.approx(8.0)  # under the 9 us kernel and the copy
    assert data.loc[1, "floor"] == pytest.approx(2.5)
    assert data.loc[2, "floor"] == pytest.approx(1300.0)  # compute-bound: the rate decides
    assert bench.floor_flaws(data) == []


def test_a_kernel_two_columns_name_is_one_kernel_to_time(bench):
    default = {"SolutionNameMin": "cublaslt_heuristic_default", "Backend": "default",
               "Chosen": "lt_a66_t29_s35_k1_r0_w0_c1_i0_cl3"}
    # the default as a library ships it: recorded for another size, at a place in the file
    shipped = dict(default, SolutionIndex=6, Chosen="lt_a66_t10_s35_k5_r2_w0_c1_i0_cl4")
    tuned = {"SolutionIndex": 0, "SolutionNameMin": "lt_a66_t20", "Backend": "cublaslt",
             "CublasLt": {"algo_id": 66, "tile": 20}, "CublasLtVersion": 130100}
    assert bench.solution_key(default) == bench.solution_key(shipped)
    assert bench.solution_key(default) != bench.solution_key(tuned)
    assert bench.solution_key(tuned) == bench.solution_key(
        dict(tuned, SolutionIndex=3, KernelNameMin="lt_a66_t20"))
    assert bench.solution_key(tuned) != bench.solution_key(
        dict(tuned, CublasLt={"algo_id": 66, "tile": 21}))


def test_a_time_under_the_floor_is_reported(bench):
    data = frame()
    data["floor"], _ = bench.honest_floor(data, matmul_tflops=700.0)
    data.loc[1, "final"] = 2.0  # e.g. a column added after the floor was computed
    (flaw,) = bench.floor_flaws(data)
    assert flaw.startswith("small final: 2.00 us < floor 3.00 us")
    assert not math.isnan(bench.summarize_runs(data)["decode_pct_floor_final"]["n<=16 min"])


def test_combined_library_takes_the_fastest_verified_per_gemm(tmp_path):
    from geko_lib import runtime
    from geko_lib.gemm import GemmProblem, GemmType
    from geko_lib.platforms.cuda import combine
    from geko_lib.platforms.cuda import triton_gemm as tg

    gemm_type = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    decode, prefill = GemmProblem(gemm_type, 4096, 1, 1, 4096), GemmProblem(gemm_type, 4096,
                                                                             2048, 1, 4096)
    cfg = tg.TritonConfig("decode_fma", 1, 8, 512, 1, 1, 4, 3)
    tuned = {"SolutionNameMin": cfg.name, "Backend": "triton", "Triton": cfg.to_params()}
    # decode: the tuned kernel wins; prefill: tune failed its check (NaN), the default is faster
    assert combine.fastest([(12.0, None), (11.5, tuned), (13.5, combine.DEFAULT)]) == \
        (11.5, tuned)
    assert combine.fastest([(90.0, combine.DEFAULT), (float("nan"), tuned)]) == \
        (90.0, combine.DEFAULT)
    assert combine.fastest([(float("nan"), tuned)]) is None
    paths = combine.write([(decode, tuned, decode.flops / 11.5e3),
                           (prefill, combine.DEFAULT, prefill.flops / 90e3)], tmp_path)
    assert len(paths) == 1
    served = runtime.load(tmp_path).solutions
    assert served[(gemm_type, decode.size)]["Triton"] == cfg.to_params()
    assert served[(gemm_type, prefill.size)]["Backend"] == "default"


def test_peer_faster_than_what_geko_ships_is_listed(bench):
    data = frame()
    data["nvmath_top8"] = [8.0, 3.99, 1300.0]  # 11% faster, 0.25% faster, a tie
    (win,) = bench.peer_wins(data, "nvmath_top8")
    assert win == "decode: nvmath_top8 8.00 us, final 9.00 us (not searched: left out of the " \
        "campaign's GEMMs)"
    # with a combined library, that is what geko ships
    data["combined"] = [7.9, 4.0, 1300.0]
    assert bench.peer_wins(data, "nvmath_top8") == []
    data["floor"], _ = bench.honest_floor(data, matmul_tflops=700.0)
    assert bench.summarize_runs(data)["nvmath_top8_faster"] == []


def test_each_gemm_shipped_slower_than_the_peer_says_why(bench):
    data = frame()
    data["nvmath_top8"] = [8.0, 3.5, 1200.0]
    # decode: the search found 9.5 us and shipped it; small: its best (3.52) was kept out by the
    # keep rule; prefill was never searched
    data["geko_search"] = [9.5, 3.52, float("nan")]
    data.loc[0, "final"] = 9.5
    wins = bench.peer_wins(data, "nvmath_top8")
    assert [w.split(" (")[1] for w in wins] == [
        "search's pick: 9.50 us)",
        "keep rule: the search's best 3.52 us was not up_thr faster than the default)",
        "not searched: left out of the campaign's GEMMs)"]


class _Call:
    """A fake launch: which kernel, on which operand sets."""

    def __init__(self, name, salt):
        self.name, self.salt = name, salt

    def __call__(self):
        pass


class _EightEqualPeers:
    """A platform whose default, eight heuristic peers and shipped kernel all run 100 us; the
    first run's replays read peer t3 at 92 us by chance, the confirming run reads the truth."""

    def _operands(self, problem, device, salt):
        return [salt]

    def default_solution(self, problem, device):
        return {"SolutionNameMin": "cublaslt_heuristic_default", "Backend": "default"}

    def _lt(self, problem):
        return type("Lt", (), {"heuristic": lambda self, n: [(i, None) for i in range(n)]})()

    def cublaslt_solution(self, tile, device):
        return {"SolutionNameMin": f"lt_t{tile}", "Backend": "cublaslt",
                "CublasLt": {"tile": tile}}

    def launchers(self, solution, problem, sets, device):
        return [_Call(solution["SolutionNameMin"], sets[0])]


def _fake_timing(real, timed_runs):
    def time_side_by_side(variants, repeats):
        calls = [v[0] for v in variants]
        timed_runs.append([(getattr(c, "name", "torch"), getattr(c, "salt", None))
                           for c in calls])
        lucky = {"lt_t3": 92.0} if calls[0].salt == 11 else {}
        return [real.Timing(us=lucky.get(getattr(c, "name", ""), 100.0), spread=0.1,
                            calls=4, graph=True) for c in calls]

    return type("FakeTiming", (), {
        "Timing": real.Timing, "time_side_by_side": staticmethod(time_side_by_side),
        "operand_bytes": staticmethod(lambda problem: 1 << 20),
        "copy_us": staticmethod(lambda n, device: 1.0),
        "read_us": staticmethod(lambda n, device: 1.0),
        "checked_error": staticmethod(lambda call, ops: 0.0)})


def test_a_column_that_picks_the_fastest_of_eight_reports_a_second_run(bench, monkeypatch):
    """The least of eight noisy medians reads fast by selection alone: each column's time is
    its pick timed again, on fresh operands, beside the other columns' picks."""
    from geko_lib.gemm import GemmProblem, GemmType
    from geko_lib.platforms.cuda import timing as real

    timed_runs: list = []
    monkeypatch.setattr(bench, "timing", _fake_timing(real, timed_runs))
    runner = bench.Bench.__new__(bench.Bench)
    runner.device, runner.repeats, runner.triton, runner.verified = 0, 9, False, {}
    runner.platform, runner.t = _EightEqualPeers(), type("T", (), {"matmul": None})()
    gemm_type = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    problem = GemmProblem(gemm_type, 8192, 8192, 1, 1024)
    shipped = {"SolutionNameMin": "lt_t5", "Backend": "cublaslt", "CublasLt": {"tile": 5}}
    row = runner.measure(problem, {"final": shipped}, peak_tflops=700.0)
    assert row["nvmath_top8_name"] == "lt_t3" and row["nvmath_top8_selection"] == 92.0
    assert row["nvmath_top8"] == 100.0 and row["final"] == 100.0 and row["default"] == 100.0
    # the confirming run: each distinct pick once (final's lt_t5 is one of the eight, timed
    # once in the first run), on the fresh operand sets, without torch.matmul
    first, second = timed_runs
    assert len(first) == 10 and first[-1] == ("torch", None)
    assert second == [("cublaslt_heuristic_default", 12), ("lt_t3", 12), ("lt_t5", 12)]
    data = pd.DataFrame([row | {"call_count": 1}])
    assert bench.peer_wins(data, "nvmath_top8") == []
