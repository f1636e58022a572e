"""One contract for every platform: each method of the Platform protocol
(geko_lib/platforms/__init__.py), called the way the workflow calls it, must meet the same
expectations on sim, on rocm (a fake built checkout whose tools are the replays of
tests/rocm_replay) and on cuda (a real NVIDIA GPU: `gpu`-marked, skipped without one)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pytest

from geko_lib import platforms, search
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.library import logic
from geko_lib.platforms import RESULT_COLUMNS, VERIFY_COLUMNS, Capabilities
from tests.conftest import FIXTURES
from tests.rocm_fake import INVOKE_PATH, build_fake_hipblaslt, fixture_logic

# bf16 NN: a type of the rocm fake's device library (the gfx950 logic fixtures); small sizes
BF16_NN = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", compute_type="f32_r")
PROBLEMS = [GemmProblem(BF16_NN, 16, 2048, 1, 15360), GemmProblem(BF16_NN, 512, 512, 1, 512)]


@pytest.fixture(params=["sim", "rocm", pytest.param("cuda", marks=pytest.mark.gpu)])
def setup(request, tmp_path, monkeypatch):
    """(platform, config) of one platform, set up as a campaign would."""
    monkeypatch.chdir(tmp_path)
    for var in ("HIPBLASLT_TENSILE_LIBPATH", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    config = {"platform": request.param, "arch": "gfx950", "devices": [0]}
    if request.param == "rocm":
        if not (FIXTURES / "tensile_logic").is_dir():
            pytest.skip("tests/fixtures is not here")
        hip = build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx950"))
        monkeypatch.setenv("GEKO_HIPBLASLT_PATH", str(hip))
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
            p for p in (str(INVOKE_PATH), os.environ.get("PYTHONPATH")) if p))
    if request.param == "cuda":
        config.update(arch="h200", cuda={"search_budget_s": 0.5, "tune": {
            "n_gen": 1, "population": 4, "decode_n_gen": 1, "decode_population": 4}})
    return platforms.get(config), config


def _identity(frame: pd.DataFrame) -> list[tuple]:
    return sorted(GemmProblem.from_row(r).size for r in frame.to_dict("records"))


def test_capabilities_are_declared(setup):
    platform, config = setup
    caps = platforms.capabilities(config)
    assert isinstance(caps, Capabilities)
    assert set(caps.exports) <= set(platforms.EXPORT_FORMATS)
    assert caps.measured == platform.measured and caps.note == platform.note
    assert platform.name == config["platform"] and isinstance(platform.library_version, str)
    if caps.ceilings is not None:
        assert caps.ceilings["hbm_tbps"] > 0 and caps.ceilings["peak_tflops"]["16"] > 0


def test_bench_times_every_problem_once(setup, tmp_path):
    platform, _ = setup
    frame = platform.bench(PROBLEMS, tmp_path / "bench", 0, duration=0.01)
    assert [c for c in RESULT_COLUMNS if c not in frame] == []
    assert _identity(frame) == sorted(p.size for p in PROBLEMS)
    assert (frame["us"] > 0).all() and (frame["platform"] == platform.name).all()
    assert (frame["measured"] == platform.measured).all()


def test_search_extract_create_and_the_library_round_trip(setup, tmp_path):
    platform, _ = setup
    candidates = platform.search(PROBLEMS, tmp_path / "search", 0, duration=0.01)
    assert [c for c in RESULT_COLUMNS if c not in candidates] == []
    assert set(_identity(candidates)) == {p.size for p in PROBLEMS}
    winners = search.winners(candidates)
    assert _identity(winners) == sorted(p.size for p in PROBLEMS)

    libs = tmp_path / "libs"
    paths = platform.extract(winners, libs)
    served = sorted(s for p in paths for s, _, _ in logic.load(p).size_entries())
    assert served == sorted(p.size for p in PROBLEMS)

    created = platform.create_library(libs, tmp_path / "tensile")
    assert Path(created).is_dir()
    tuned = platform.bench(PROBLEMS, tmp_path / "bench", 0, library=created, duration=0.01)
    assert _identity(tuned) == sorted(p.size for p in PROBLEMS) and (tuned["us"] > 0).all()

    errors = platform.verify(PROBLEMS, tmp_path / "verify", 0, created)
    assert [c for c in VERIFY_COLUMNS if c not in errors] == []
    assert _identity(errors) == sorted(p.size for p in PROBLEMS)
    assert all(math.isfinite(e) and e < 0.03 for e in errors["error"])

    sweep = platform.sweep(PROBLEMS, paths[0], tmp_path / "sweep", 0)
    assert {"m", "n", "batch_count", "k", "SolutionIndex", "us", "gflops"} <= set(sweep.columns)
    assert (sweep["us"] > 0).all()


def test_reference_solution_is_library_logic(setup, tmp_path):
    platform, _ = setup
    reference = platform.bench(PROBLEMS[:1], tmp_path / "bench", 0)
    solution = platform.reference_solution(PROBLEMS[0],
                                           int(reference["solution_index"].iloc[0]))
    assert isinstance(solution, dict) and solution


def test_configure_and_optimize_leave_library_logic(setup, tmp_path):
    platform, config = setup
    yamls = platform.configure((BF16_NN, [p.size for p in PROBLEMS]), tmp_path / "opt",
                               config["arch"], {"backend": "ductile"})
    assert yamls and all(Path(p).is_file() for p in yamls)
    logic_dir = platform.optimize(Path(yamls[0]), tmp_path / "opt" / f"build_{Path(yamls[0]).stem}",
                                  0)
    outputs = list(Path(logic_dir).glob("*.yaml"))
    assert Path(logic_dir).name == "3_LibraryLogic" and outputs
    lib = logic.load(outputs[0])
    assert lib.gemm_type == BF16_NN and lib.size_entries()


def test_race_times_library_kernels_beside_the_default(setup, tmp_path):
    """Target combine's primitive, where the platform has it: the default (None) and library
    kernels on one problem, each timed and checked; a kernel that cannot run gets inf."""
    platform, config = setup
    if not platforms.capabilities(config).combine:
        pytest.skip(f"{config['platform']} cannot race kernels (capability combine)")
    candidates = platform.search(PROBLEMS[1:], tmp_path / "search", 0, duration=0.01)
    paths = platform.extract(search.winners(candidates), tmp_path / "libs")
    kernel = logic.load(paths[0]).solutions[0]
    raced = platform.race(PROBLEMS[1], [None, kernel, {"SolutionNameMin": "no such kernel"}], 0)
    assert len(raced) == 3
    for us, error in raced[:2]:
        assert 0 < us < math.inf and 0 <= error < 0.03
    assert raced[2] == (math.inf, math.inf)
