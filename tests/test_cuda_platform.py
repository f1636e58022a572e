"""The cuda platform's GPU-free parts: solution parameters, library files, validation, config.
(Its measuring parts run in tests/test_cuda_gpu.py on a GPU.)"""

import json
import math
import subprocess
import sys
import types

import pandas as pd
import pytest
import yaml

from geko_lib import library as liblogic
from geko_lib import platforms, runtime
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.platforms import PlatformError
from geko_lib.platforms.cuda import cublaslt
from geko_lib.platforms.cuda import platform as cp

from .conftest import ROOT

BF16_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")


def lt_solution(algo_id=66, tile=20, split_k=1, version=130100):
    cfg = cublaslt.AlgoConfig(algo_id, tile=tile, stages=35, split_k=split_k)
    return {"SolutionNameMin": cfg.name, "Backend": "cublaslt", "CublasLt": cfg.to_params(),
            "CublasLtVersion": version, "Device": "NVIDIA H200"}


def winners_frame(entries):
    rows = []
    for (m, n, k), solution, us in entries:
        problem = GemmProblem(BF16_TN, m, n, 1, k)
        rows.append({**problem.gemm_fields(), "scaleA": 0, "scaleB": 0, "us": us,
                     "gflops": problem.flops / us / 1e3, "solution_index": 1,
                     "solution_name": solution["SolutionNameMin"],
                     "params": json.dumps(solution)})
    return pd.DataFrame(rows)


def test_algo_config_round_trips_and_names_every_attribute():
    cfg = cublaslt.AlgoConfig(66, tile=20, stages=35, split_k=4, reduction_scheme=2,
                              cta_swizzling=1, custom_option=3, inner_shape=0, cluster_shape=4)
    assert cublaslt.AlgoConfig.from_params(cfg.to_params()) == cfg
    assert cfg.name == "lt_a66_t20_s35_k4_r2_w1_c3_i0_cl4"
    with pytest.raises(cublaslt.CublasLtError, match="unknown keys"):
        cublaslt.AlgoConfig.from_params({"algo_id": 1, "tiles": 3})
    with pytest.raises(cublaslt.CublasLtError, match="no algo_id"):
        cublaslt.AlgoConfig.from_params({"tile": 3})


def test_rough_model_never_predicts_below_the_memory_time():
    problem = GemmProblem(BF16_TN, 4096, 16, 1, 4096)
    memory_us = problem.min_bytes / 4e6
    for tile in ((64, 64), (128, 256), (256, 128)):
        for split in cublaslt.SPLIT_K_CHOICES:
            assert cublaslt.predicted_us(problem, tile, split) >= memory_us
    # a decode GEMM with few tiles gains from split-K in the model, a square one does not
    assert cublaslt.predicted_us(problem, (128, 64), 4) < cublaslt.predicted_us(problem,
                                                                                (128, 64), 1)
    square = GemmProblem(BF16_TN, 8192, 8192, 1, 8192)
    assert cublaslt.predicted_us(square, (128, 256), 1) < cublaslt.predicted_us(square,
                                                                               (128, 256), 4)


def test_extract_create_library_and_load_round_trip(tmp_path):
    platform = cp.CudaPlatform(cp.SearchSettings())
    first, second = lt_solution(tile=20), lt_solution(tile=18, split_k=2)
    triton = {"SolutionNameMin": "triton_tiled_16x64x128_g8_k1_w4_s4", "Backend": "triton",
              "Triton": {"template": "tiled", "block_m": 16, "block_n": 64, "block_k": 128,
                         "group_m": 8, "split_k": 1, "num_warps": 4, "num_stages": 4}}
    winners = winners_frame([((4096, 16, 4096), first, 12.0), ((4096, 32, 4096), first, 12.5),
                             ((6144, 16, 4096), second, 15.0), ((4096, 8, 4096), triton, 12.2)])
    libs = tmp_path / "libs"
    libs.mkdir()
    [path] = platform.extract(winners, libs)
    assert path.name == "h200_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml"
    lib = liblogic.load(path)
    assert len(lib.solutions) == 3  # the shared solution is stored once
    assert lib.device_names == ["NVIDIA H200"]
    built = platform.create_library(libs, tmp_path / "built")
    chosen = cp.library_solutions(built.parent)
    assert chosen[(BF16_TN, (6144, 16, 1, 4096))]["CublasLt"] == second["CublasLt"]
    assert chosen[(BF16_TN, (4096, 8, 1, 4096))]["Backend"] == "triton"
    rt = runtime.load(libs)
    assert len(rt.solutions) == 4


@pytest.mark.parametrize("broken, message", [
    ({"Backend": "cutlass"}, "Backend 'cutlass'"),
    ({"CublasLt": None}, "missing CublasLt"),
    ({"CublasLt": {"algo_id": 66, "bogus": 1}}, "unknown keys"),
])
def test_create_library_refuses_broken_solutions(tmp_path, broken, message):
    platform = cp.CudaPlatform(cp.SearchSettings())
    solution = {k: v for k, v in (lt_solution() | broken).items() if v is not None}
    libs = tmp_path / "libs"
    libs.mkdir()
    platform.extract(winners_frame([((4096, 16, 4096), solution, 12.0)]), libs)
    with pytest.raises((PlatformError, cublaslt.CublasLtError), match=message):
        platform.create_library(libs, tmp_path / "built")
    assert not list((tmp_path / "built" / "library").glob("*.yaml"))


def test_reference_solution_falls_through_to_the_default():
    platform = cp.CudaPlatform(cp.SearchSettings())
    solution = platform.reference_solution(GemmProblem(BF16_TN, 64, 64, 1, 64), 7)
    assert solution["Backend"] == "default" and solution["SolutionIndex"] == 7
    cp.validate_solution(solution, "here")


def family_solutions():
    """A solution of every backend geko writes: search's, the tune mode's (Triton, cuda),
    the reference and the combined library's default."""
    from geko_lib.platforms.cuda import cluster_gemm, combine, tune
    from geko_lib.platforms.cuda import triton_gemm as tg

    platform = cp.CudaPlatform(cp.SearchSettings())
    return [lt_solution(), tune.solution_of(tg.TritonConfig("decode_fma", 4, 16, 256)),
            tune.solution_of(cluster_gemm.ClusterConfig(2, 1, 1, 2, 128, 4, 4)),
            platform.reference_solution(GemmProblem(BF16_TN, 64, 64, 1, 64), 7),
            dict(combine.DEFAULT)]


def test_every_backend_a_solution_names_has_a_family():
    from geko_lib.platforms.cuda import families

    named = {sol["Backend"] for sol in family_solutions()}
    assert named == set(families.BY_BACKEND) == {"cublaslt", "triton", "cuda", "default"}
    for sol in family_solutions():
        assert families.of(sol).backend == sol["Backend"]
        cp.validate_solution(sol, "here")
    assert families.of({"SolutionNameMin": "old"}) is families.CUBLASLT  # before Backend


def test_an_unknown_backend_is_refused_by_name():
    from geko_lib.platforms.cuda import families

    solution = {"SolutionNameMin": "x", "Backend": "cutlass"}
    with pytest.raises(PlatformError, match="unknown solution backend 'cutlass' in"):
        families.of(solution)
    with pytest.raises(PlatformError, match="unknown solution backend 'cutlass' in"):
        cp.CudaPlatform(cp.SearchSettings()).launcher_factory(
            solution, GemmProblem(BF16_TN, 64, 64, 1, 64), 0)
    with pytest.raises(PlatformError, match="Backend 'cutlass' is not one of cublaslt, "
                                            "triton, cuda, default"):
        cp.validate_solution(solution, "here")


def test_a_solution_round_trips_through_its_family():
    from geko_lib.platforms.cuda import cluster_gemm, families
    from geko_lib.platforms.cuda import triton_gemm as tg

    for family, cfg in ((families.TRITON, tg.TritonConfig("decode_fma", 4, 16, 256)),
                        (families.CUDA, cluster_gemm.ClusterConfig(2, 1, 1, 2, 128, 4, 4))):
        solution = family.to_params(cfg)
        assert solution == {"SolutionIndex": 0, "SolutionNameMin": cfg.name,
                            "KernelNameMin": cfg.name, "Backend": family.backend,
                            family.key: cfg.to_params()}
        assert families.of(solution) is family is families.of_config(cfg)
        assert family.from_params(solution) == cfg
    cfg = cublaslt.AlgoConfig.from_params(lt_solution()["CublasLt"])
    assert families.of_config(cfg) is families.CUBLASLT
    assert families.CUBLASLT.from_params(families.CUBLASLT.to_params(cfg)) == cfg
    assert families.CUBLASLT.from_params(lt_solution()) == cfg


def test_config_selects_the_cuda_platform_with_its_settings():
    platform = platforms.get({"platform": "cuda", "arch": "h200", "err_thr": 0.01,
                              "cuda": {"search_budget_s": 2.5, "finalists": 3}})
    assert platform.name == "cuda" and platform.measured
    assert platform.settings.budget_s == 2.5 and platform.settings.finalists == 3
    assert platform.settings.err_thr == 0.01
    ceilings = platforms.ceilings({"platform": "cuda", "cuda": {}})
    assert ceilings["peak_tflops"]["16"] > 0 and ceilings["hbm_tbps"] > 0


def test_solution_index_is_stable_and_positive():
    name = lt_solution()["SolutionNameMin"]
    assert cp.solution_index_of(name) == cp.solution_index_of(name) >= 0
    assert cp.solution_index_of(name) != cp.solution_index_of(name + "x")


def test_h200_profile_dry_run_validates(tmp_path):
    """The profile and its config pass the schema and plan a full campaign."""
    workload = ROOT / "config" / "workloads" / "llama3_8b_serving.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", str(ROOT / "profiles" / "h200"),
         "--snakefile", str(ROOT / "workflow" / "Snakefile"), "final_libs", "-n",
         "--config", f"workload_log={workload}", f"workdir={tmp_path / 'run'}"],
        cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ingest" in proc.stdout
    config = yaml.safe_load((ROOT / "profiles" / "h200" / "h200.yaml").read_text())
    assert config["platform"] == "cuda" and config["epilogues"] is False


def test_runtime_refuses_a_library_with_a_broken_solution_naming_the_file(tmp_path):
    platform = cp.CudaPlatform(cp.SearchSettings())
    broken = {k: v for k, v in lt_solution().items() if k != "CublasLtVersion"}
    [path] = platform.extract(winners_frame([((4096, 16, 4096), broken, 12.0)]), tmp_path)
    with pytest.raises(PlatformError, match=f"{path.name}.*missing CublasLtVersion"):
        runtime.load(tmp_path)
    with pytest.raises(PlatformError, match="no library-logic files"):
        runtime.load(tmp_path / "empty")


# --- decisions near a boundary are re-timed (issue 23) -----------------------------------------

class FakeGpu:
    """Stands in for the GPU under CudaPlatform.bench / search_one: a call is (solution name,
    operand salt); a side-by-side round gives each variant the time its script says for that
    round (per name: one time per round), three replays each."""

    def __init__(self, monkeypatch, platform, script):
        self.script, self.rounds, self.salts, self.settled = script, [], [], []
        monkeypatch.setattr(cp, "use_device", lambda device: None)
        monkeypatch.setattr(platform, "_operands",
                            lambda problem, device, salt=0: self.salts.append(salt) or [salt])
        monkeypatch.setattr(platform, "launchers", lambda sol, problem, sets, device:
                            [(sol["SolutionNameMin"], sets[0])])
        monkeypatch.setattr(platform, "default_solution", lambda problem, device: dict(DEFAULT))
        monkeypatch.setattr(cp.timing, "time_side_by_side", self.side_by_side)
        self.references, self.checked_with = [], []
        monkeypatch.setattr(cp.timing, "reference",
                            lambda ops: self.references.append(ops) or f"ref{len(self.references)}")
        monkeypatch.setattr(cp.timing, "checked_error", self.checked_error)

    def checked_error(self, call, ops, ref=None):
        self.checked_with.append(ref)
        return 1e-3

    def side_by_side(self, variants, repeats=15, warmup=2, target_us=2000.0, settle=True):
        names = [calls[0][0] for calls in variants]
        self.rounds.append(names)
        self.settled.append(settle)
        out = []
        for name in names:
            times = self.script[name]
            us = times[min(len(self.rounds), len(times)) - 1]
            samples = (us * 0.995, us, us * 1.005)
            out.append(cp.timing.Timing(us=us, spread=0.01, calls=4, graph=True,
                                        samples=samples))
        return out


DEFAULT = {"SolutionNameMin": cp.DEFAULT_NAME, "Backend": "default"}


def tuned_library(monkeypatch, solutions):
    monkeypatch.setattr(cp, "library_solutions", lambda library: solutions)


def test_a_kept_kernel_near_the_keep_threshold_is_retimed_on_fresh_operands(monkeypatch):
    platform = cp.CudaPlatform(cp.SearchSettings(keep_threshold=1.03))
    near, far = GemmProblem(BF16_TN, 1280, 16, 1, 8192), GemmProblem(BF16_TN, 4096, 1, 1, 4096)
    tuned = {"SolutionNameMin": "lt_near", "Backend": "cublaslt"}
    quick = {"SolutionNameMin": "lt_far", "Backend": "cublaslt"}
    tuned_library(monkeypatch, {cp.problem_key(near): tuned, cp.problem_key(far): quick})
    # round 1 says 1.04x (kept at 1.03), the two fresh rounds 1.01x: not kept after all
    gpu = FakeGpu(monkeypatch, platform, {"lt_near": [10.0, 10.0, 10.0],
                                          cp.DEFAULT_NAME: [10.4, 10.1, 10.1],
                                          "lt_far": [8.0]})
    table = platform.bench([near, far], None, 0, library="lib")
    assert len(gpu.rounds) == 1 + cp.RETIME_ROUNDS + 1  # near: 3 rounds, far: one
    assert len(set(gpu.salts)) == 1 + cp.RETIME_ROUNDS  # each re-timing on fresh operands
    by_name = table.set_index("solution_name")
    assert by_name.loc["lt_near", "us_paired_reference"] / by_name.loc["lt_near", "us"] < 1.03
    # per-replay ratios 1.04 (round 1) and 1.01 (rounds 2, 3): the spread that decided
    assert by_name.loc["lt_near", "spread_pct"] == pytest.approx(100 * 0.03 / 1.01, abs=0.01)
    assert by_name.loc["lt_far", "us_paired_reference"] / by_name.loc["lt_far", "us"] > 1.2
    assert 0 <= by_name.loc["lt_far", "spread_pct"] < 0.1


class FakeLt:
    def __init__(self, names):
        self.names = names

    def heuristic(self, count):
        # the heuristic's own structs: a search that timed one would look up no script
        return [(FakeCfg(n), ("heuristic's struct", n)) for n in self.names[:count]]

    def enumerate(self):
        return iter(())

    @staticmethod
    def rebuilt(ranked):
        # the struct built from the configuration, as a library runs it; AlgoCheck refuses
        # a configuration named *_gone
        return [(cfg, cfg.name) for cfg, _ in ranked if not cfg.name.endswith("_gone")]

    @staticmethod
    def call(algo, ops, workspace):
        return (algo, ops)


class FakeCfg:
    def __init__(self, name):
        self.name = name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return self.name == other.name


class Screened:
    """A screening's pending timing (timing.start_timing) that the fake GPU answers at once."""

    def __init__(self, us):
        self.us = us

    def result(self):
        return cp.timing.Timing(self.us, 0.0, 4, True)


def searching_platform(monkeypatch, script, settings=cp.SearchSettings()):
    """A CudaPlatform whose search_one runs on FakeGpu, the heuristic listing the script's
    names in order."""
    platform = cp.CudaPlatform(settings)
    gpu = FakeGpu(monkeypatch, platform, script)
    names = [n for n in script if n != cp.DEFAULT_NAME]
    monkeypatch.setattr(platform, "_lt", lambda problem: FakeLt(names))
    monkeypatch.setattr(platform, "_workspace", lambda device: None)
    monkeypatch.setattr(platform, "cublaslt_solution", lambda cfg, device: {
        "SolutionNameMin": cfg.name, "Backend": "cublaslt"})
    monkeypatch.setattr(cp.timing, "start_timing",
                        lambda calls, **kw: Screened(script[calls[0][0]][0]))
    return platform, gpu


def search_rows(monkeypatch, script, settings=cp.SearchSettings()):
    platform, gpu = searching_platform(monkeypatch, script, settings)
    rows = platform.search_one(GemmProblem(BF16_TN, 8192, 16, 1, 1024), 0)
    return gpu, pd.DataFrame(rows).set_index("solution_name")


def test_search_near_ties_are_retimed_and_won_by_the_lowest_solution_index(monkeypatch):
    a, b = sorted(["lt_x", "lt_y"], key=cp.solution_index_of)  # a has the lower index
    # b measures faster in every round, but within the tie band of a; c is clearly slower
    gpu, rows = search_rows(monkeypatch, {cp.DEFAULT_NAME: [9.0], b: [6.0, 6.02, 6.01],
                                          a: [6.05, 6.04, 6.05], "lt_z": [7.0]})
    final = rows[rows["stage"] == "final"]
    assert final.loc[a, "eligible"] and not final.loc[b, "eligible"]
    assert final.loc[b, "tie_with"] == a
    # only the two near the fastest were re-timed, on fresh operands
    assert gpu.rounds[1:] == [[b, a]] * cp.RETIME_ROUNDS or \
        gpu.rounds[1:] == [[a, b]] * cp.RETIME_ROUNDS
    assert final.loc["lt_z", "eligible"] and final.loc["lt_z", "tie_with"] == ""
    assert final["spread_pct"].notna().all()
    assert gpu.settled == [True] * (1 + cp.RETIME_ROUNDS)


def test_a_search_without_settling_replays_times_its_finals_and_ties_so(monkeypatch):
    """bench/finals_settle.py's variant: the finals and their ties' re-timings leave out the
    untimed replay before each timed one; the bench's keep decision keeps it."""
    a, b = sorted(["lt_x", "lt_y"], key=cp.solution_index_of)
    monkeypatch.setattr(cp.CudaPlatform, "settle_finals", False)
    gpu, rows = search_rows(monkeypatch, {cp.DEFAULT_NAME: [9.0], b: [6.0, 6.02, 6.01],
                                          a: [6.05, 6.04, 6.05]})
    assert gpu.settled == [False] * (1 + cp.RETIME_ROUNDS)
    assert rows.loc[b, "tie_with"] == a


def test_finals_settle_searches_each_way_and_reports_each_pick(monkeypatch):
    from .conftest import load_bench

    finals_settle = load_bench("finals_settle")
    platform, gpu = searching_platform(monkeypatch, {cp.DEFAULT_NAME: [9.0], "lt_a": [7.0],
                                                     "lt_b": [8.0]})
    problem = GemmProblem(BF16_TN, 8192, 16, 1, 1024)
    on = finals_settle.searched(platform, problem, settle=True)
    off = finals_settle.searched(platform, problem, settle=False)
    assert gpu.settled == [True, False]
    assert on["pick"] == off["pick"] == "lt_a" and on["us"] == 7.0
    assert on["solution"]["SolutionNameMin"] == "lt_a"


def test_a_search_times_each_heuristic_pick_as_the_library_would_run_it(monkeypatch):
    """Each of the heuristic's configurations is timed by the struct built from it, what a
    library ships and the bench's nvmath_top8 column runs, not by the struct the heuristic
    returned (issue 39, criterion 4: bench/peer_gap.py times the two side by side). One that
    AlgoCheck refuses rebuilt cannot ship and is no candidate."""
    gpu, rows = search_rows(monkeypatch, {cp.DEFAULT_NAME: [9.0], "lt_a": [7.0],
                                          "lt_b_gone": [5.0], "lt_c": [8.0]})
    assert "lt_b_gone" not in rows.index
    assert all("lt_b_gone" not in names for names in gpu.rounds)
    assert rows.loc["lt_a", "eligible"] and rows.loc["lt_a", "us"] == 7.0


def test_search_checks_every_finalist_against_one_reference(monkeypatch):
    """The float32 product is made once per GEMM, not once per finalist (up to 14 a GEMM: a
    large GEMM's reference costs tens of milliseconds)."""
    gpu, rows = search_rows(monkeypatch, {cp.DEFAULT_NAME: [9.0], "lt_x": [6.0],
                                          "lt_y": [6.5], "lt_z": [7.0]})
    assert len(gpu.references) == 1
    assert gpu.checked_with == ["ref1"] * 4  # the default and the three finalists


def test_search_a_clear_winner_is_not_retimed(monkeypatch):
    gpu, rows = search_rows(monkeypatch, {cp.DEFAULT_NAME: [9.0], "lt_x": [6.0],
                                          "lt_y": [6.5]})
    assert len(gpu.rounds) == 1
    assert rows.loc[["lt_x", "lt_y"], "eligible"].all()


def test_search_rows_say_when_each_candidate_was_screened(monkeypatch):
    """``screen_s``: seconds into the GEMM's screening, in the order the candidates came (the
    heuristic's list first), so a campaign's rows show how much of the budget its winners
    needed; the default is never screened."""
    clock = iter(range(100))
    monkeypatch.setattr(cp.time, "monotonic", lambda: float(next(clock)))
    _, rows = search_rows(monkeypatch, {cp.DEFAULT_NAME: [9.0], "lt_x": [6.0],
                                        "lt_y": [6.5], "lt_z": [7.0]},
                          cp.SearchSettings(budget_s=1e6))
    assert math.isnan(rows.loc[cp.DEFAULT_NAME, "screen_s"])
    at = [rows.loc[n, "screen_s"] for n in ("lt_x", "lt_y", "lt_z")]  # the heuristic's order
    assert at == sorted(at) and at[0] > 0 and len(set(at)) == 3


def test_configure_takes_the_workflow_s_gemm_config(tmp_path):
    from geko_lib.schemas import GemmConfig

    platform = cp.CudaPlatform(cp.SearchSettings())
    sizes = [[1280, 16, 1, 8192], [8192, 1, 1, 1024]]
    paths = platform.configure(GemmConfig(BF16_TN, sizes), tmp_path / "a", "h200", {})
    again = platform.configure((BF16_TN, sizes), tmp_path / "b", "h200", {})
    assert [p.name for p in paths] == [p.name for p in again] == ["BBS_TN_0.yaml"]
    assert yaml.safe_load(paths[0].read_text().split("\n", 1)[1])["Sizes"] == \
        [[8192, 1, 1, 1024], [1280, 16, 1, 8192]]


class _FakeCuda:
    """torch.cuda of a one-GPU machine: what use_device asks of it."""

    def __init__(self):
        self.current = None

    @staticmethod
    def device_count():
        return 1

    def set_device(self, device):
        self.current = device


@pytest.mark.parametrize("device", [1, 7, -1])
def test_a_device_the_machine_lacks_is_refused_by_name(monkeypatch, device):
    """-d 0,1 on a one-GPU machine: the job says which device is missing and what exists,
    instead of torch's bare 'invalid device ordinal'; the current device is left alone."""
    fake = type("FakeTorch", (), {"cuda": _FakeCuda()})()
    monkeypatch.setattr(cp.timing, "torch", lambda: fake)
    with pytest.raises(PlatformError, match=rf"device {device} is not on this machine: it has "
                                            r"1 CUDA device\(s\) \(0\)"):
        cp.use_device(device)
    assert fake.cuda.current is None
    cp.use_device(0)
    assert fake.cuda.current == 0


def test_the_heuristics_first_eight_are_retimed_whatever_their_screening(monkeypatch):
    """Issue 39: a search shipped a GEMM slower than the best of the heuristic's first 8 in
    the same run. A screening of 3 replays ranked that one below the finalists; now the
    first PEER_TOP are always re-timed side by side, so the search ships the faster one."""
    settings = cp.SearchSettings(finalists=2, heuristic_count=10, budget_s=0.0)
    names = [f"lt_h{i}" for i in range(10)]
    # the side-by-side times: h5 is the fastest; the screening (below) says it is slow
    script = {cp.DEFAULT_NAME: [9.0], **{n: [7.0 + 0.1 * i] for i, n in enumerate(names)}}
    script["lt_h5"] = [6.0]
    screen = {**{n: 7.0 + 0.1 * i for i, n in enumerate(names)}, "lt_h5": 8.5}
    platform = cp.CudaPlatform(settings)
    FakeGpu(monkeypatch, platform, script)
    monkeypatch.setattr(platform, "_lt", lambda problem: FakeLt(names))
    monkeypatch.setattr(platform, "_workspace", lambda device: None)
    monkeypatch.setattr(platform, "cublaslt_solution", lambda cfg, device: {
        "SolutionNameMin": cfg.name, "Backend": "cublaslt"})
    monkeypatch.setattr(cp.timing, "start_timing",
                        lambda calls, **kw: Screened(screen[calls[0][0]]))
    rows = pd.DataFrame(platform.search_one(GemmProblem(BF16_TN, 8192, 16, 1, 1024), 0))
    final = rows[rows["stage"] == "final"]
    # every heuristic entry was screened although the budget was 0 s
    assert set(rows["solution_name"]) == {cp.DEFAULT_NAME, *names}
    assert set(final["solution_name"]) == {cp.DEFAULT_NAME, *names[:cp.PEER_TOP]}
    fastest = final[final["eligible"]].sort_values("us").iloc[0]
    assert fastest["solution_name"] == "lt_h5"


def test_the_screening_enumerates_the_next_candidate_while_the_gpu_times_the_last(monkeypatch):
    """The search's screening (CudaPlatform._screened): each candidate's replays are waited
    for only after the next one was taken from the enumeration; max_candidates counts the one
    in flight; a candidate whose replays fail is no candidate, the rest go on."""
    events = []

    class Pending(Screened):
        def __init__(self, name):
            super().__init__(5.0)
            self.name = name
            events.append(("start", name))

        def result(self):
            events.append(("wait", self.name))
            if self.name == "lt_e1":
                raise RuntimeError("launch failed")
            return super().result()

    class Enumerating(FakeLt):
        def enumerate(self):
            for i in range(10):
                events.append(("next", f"lt_e{i}"))
                yield FakeCfg(f"lt_e{i}"), f"lt_e{i}"

    platform = cp.CudaPlatform(cp.SearchSettings(budget_s=60.0, max_candidates=4))
    monkeypatch.setattr(cp.timing, "start_timing", lambda calls, **kw: Pending(calls[0][0]))
    monkeypatch.setattr(cp.timing, "torch", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(synchronize=lambda: None)))
    lt = Enumerating(["lt_h0"])
    screened = platform._screened(GemmProblem(BF16_TN, 8192, 16, 1, 1024), lt,
                                  lt.rebuilt(lt.heuristic(1)), [0], None)
    assert [c[0].name for c in screened] == ["lt_h0", "lt_e0", "lt_e2", "lt_e3"]
    # every wait comes after the next candidate was enumerated
    assert events[:6] == [("start", "lt_h0"), ("next", "lt_e0"), ("wait", "lt_h0"),
                          ("start", "lt_e0"), ("next", "lt_e1"), ("wait", "lt_e0")]
    # 4 taken (one failed), so the fifth enumerated ends the screening before it starts
    assert ("start", "lt_e4") not in events and events[-1] == ("wait", "lt_e3")
