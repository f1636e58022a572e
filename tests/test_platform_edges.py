"""The same edge inputs for every platform (issue 22): more devices than GEMMs, one GEMM, and no
GEMM at all. No part, chunk or job is made without work (the baseline's parts, the search's
chunks, the tuning jobs are dealt by the functions the workflow and the API use), and every
platform refuses an empty problem list, as hipblaslt-bench does (it prints no result, which the
rocm platform rejects), so the sim cannot hide a job without work again."""

from __future__ import annotations

import os
import re

import pandas as pd
import pytest

from geko_lib import search
from geko_lib.bench_formats import summary
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.platforms import PlatformError
from geko_lib.search import chunk_bounds
from tests.rocm_fake import build_fake_hipblaslt, fixture_logic
from tests.test_platform_contract import setup  # noqa: F401 (the fixture: every platform)

BF16_NN = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", compute_type="f32_r")
TWO = [GemmProblem(BF16_NN, 16, 2048, 1, 15360), GemmProblem(BF16_NN, 512, 512, 1, 512)]
EIGHT_DEVICES = list(range(8))


@pytest.fixture
def platform(setup):
    """Each platform as the contract test sets it up (sim, the rocm replays, cuda on a GPU)."""
    return setup[0]


def more_devices_than(platform, problems) -> list[int]:
    """EIGHT_DEVICES, or on cuda the GPUs this machine has: a cuda job is leased a real device
    (one that is not there is refused, tests/test_cuda_platform.py)."""
    if platform.name != "cuda":
        return EIGHT_DEVICES
    import torch

    devices = list(range(torch.cuda.device_count()))
    if len(devices) <= len(problems):
        pytest.skip(f"needs more than {len(problems)} GPUs")
    return devices


# --- dealing: never a part, chunk or job without work ----------------------------------------

@pytest.mark.parametrize("n_gemms, n_devices", [(2, 8), (1, 8), (1, 1), (7, 3), (3, 3)])
def test_baseline_parts_and_search_chunks_all_have_work(n_gemms, n_devices):
    parts = summary.part_names(n_gemms, n_devices)
    assert len(parts) == min(n_gemms, n_devices)
    dealt = [summary.part_positions(part, n_gemms) for part in parts]
    assert all(dealt) and sorted(p for d in dealt for p in d) == list(range(n_gemms))
    chunks = chunk_bounds(n_gemms, 25, n_devices)
    assert all(last >= first for first, last in chunks)
    assert sum(last - first + 1 for first, last in chunks) == n_gemms
    assert summary.part_names(0, n_devices) == []


def test_a_part_of_an_older_deal_that_has_no_gemm_is_refused():
    """A part name from another deal (``part_5_of_8`` of a 2-GEMM workload) names no GEMM."""
    with pytest.raises(summary.SummaryError, match="part_5_of_8 .*no GEMM"):
        summary.part_positions("part_5_of_8", 2)


def test_the_baseline_deal_benchmarks_every_gemm_once_on_every_platform(platform, tmp_path):
    """What the workflow's baseline does (workflow/scripts/baseline.py, baseline_merge.py) with
    8 devices and 2 GEMMs: two parts, each benchmarked, merged back in workload order."""
    parts = summary.part_names(len(TWO), len(more_devices_than(platform, TWO)))
    tables = [platform.bench(summary.part_problems(TWO, part), tmp_path / "parts", device)
              for device, part in enumerate(parts)]
    merged = summary.merge_parts(tables, len(TWO))
    assert [GemmProblem.from_row(r).size for r in merged.to_dict("records")] == \
        [p.size for p in TWO]
    assert (merged["us"] > 0).all() and merged["device"].tolist() == [0, 1]


def test_a_search_over_more_devices_than_gemms(platform, tmp_path):
    """search.run (the API's door; the workflow deals its chunks with the same chunk_bounds):
    one chunk per GEMM, every GEMM searched, no chunk without a GEMM."""
    rows = search.configure(pd.DataFrame([p.gemm_fields() for p in TWO]), duration=0.01)
    winners = search.run(configs=rows, output_dir=tmp_path / "search",
                         devices=more_devices_than(platform, TWO), platform=platform,
                         duration=0.01)
    assert sorted(GemmProblem.from_row(r).size for r in winners.to_dict("records")) == \
        sorted(p.size for p in TWO)
    chunk_files = sorted(p.name for p in (tmp_path / "search" / "data").glob("*.csv"))
    assert chunk_files == ["gemms_0.csv", "gemms_1.csv"]


# --- one GEMM, and none ----------------------------------------------------------------------

def test_one_gemm_goes_through_every_phase(platform, tmp_path):
    one = TWO[1:]
    assert len(platform.bench(one, tmp_path / "bench", 0)) == 1
    candidates = platform.search(one, tmp_path / "search", 0)
    winners = search.winners(candidates)
    assert len(winners) == 1
    assert platform.extract(winners, tmp_path / "libs")
    created = platform.create_library(tmp_path / "libs", tmp_path / "tensile")
    assert len(platform.verify(one, tmp_path / "verify", 0, created)) == 1


@pytest.mark.parametrize("phase", ["bench", "search", "verify", "sweep"])
def test_every_platform_refuses_an_empty_problem_list(platform, tmp_path, phase):
    call = {"bench": lambda: platform.bench([], tmp_path / "bench", 0),
            "search": lambda: platform.search([], tmp_path / "search", 0),
            "verify": lambda: platform.verify([], tmp_path / "verify", 0, None),
            "sweep": lambda: platform.sweep([], tmp_path / "lib.yaml", tmp_path / "sweep", 0)}
    with pytest.raises(PlatformError, match=rf"{platform.name}: {phase} of no GEMM"):
        call[phase]()
    assert not list(tmp_path.glob(f"{phase}/*"))  # nothing was run or written


# --- the workflow on more devices than GEMMs (slow tier: real runs) ----------------------------

@pytest.mark.slow
def test_geko_bench_inline_on_two_devices_makes_one_part(tmp_path):
    """The README's ``geko --bench --inline ... -d 0,1`` on the sim: one GEMM, one part."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "geko_lib.cli", "--bench", "--inline", "256",
                           "256", "1", "256", "B", "B", "S", "N", "T", "-d", "0,1", "--workdir",
                           "run", "--cores", "2"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    parts = sorted(p.name for p in (tmp_path / "run" / "baseline" / "parts").glob("*.csv"))
    assert parts == ["part_0_of_1.csv"]
    assert len(pd.read_csv(tmp_path / "run" / "baseline" / "workload.csv")) == 1


@pytest.mark.slow
def test_rocm_bench_of_two_gemms_on_eight_devices(campaign, tmp_path):
    """The rocm replay on an 8-GPU node with a 2-GEMM log (the README's first command, to the
    baseline): two parts, each run on its own leased device, none benchmarking nothing."""
    import json

    import yaml

    from tests.test_rocm_workflow import MASK32_LOG, profile_run

    log = tmp_path / "app_mask32.txt"
    log.write_text("".join(line for line in MASK32_LOG.splitlines(True)
                           if "-m 512 " in line or "-m 1024 " in line))
    hip = build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx950"))
    replay_log = tmp_path / "replay.jsonl"
    run = campaign(workload_log=str(log))
    env = dict(os.environ, GEKO_HIPBLASLT_PATH=str(hip), GEKO_REPLAY_LOG=str(replay_log))
    env.pop("HIPBLASLT_TENSILE_LIBPATH", None)
    overrides = tmp_path / "paths.yaml"
    overrides.write_text(yaml.safe_dump({"workdir": str(run.workdir), "workload_log": str(log),
                                         "lock_dir": str(tmp_path / "locks"),
                                         "devices": EIGHT_DEVICES}))
    proc = profile_run(tmp_path, overrides, env, target="bench")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    parts = sorted(p.name for p in run.path("baseline", "parts").glob("*.csv"))
    assert parts == ["part_0_of_2.csv", "part_1_of_2.csv"]
    assert len(pd.read_csv(run.path("baseline", "workload.csv"))) == 2
    calls = [json.loads(line) for line in replay_log.read_text().splitlines()]
    for yaml_name in {c["yaml"] for c in calls}:
        rows = yaml.safe_load(next(run.workdir.rglob(yaml_name)).read_text())
        assert rows, yaml_name  # hipblaslt-bench was never given an empty problem list


@pytest.mark.slow
def test_geko_tune_of_one_gemm_on_four_devices_matches_the_api(tmp_path):
    """``./bin/geko --tune`` of one GEMM with ``-d 0,1,2,3`` on the sim: one tuning job on one
    of those devices, the GEMM kept and shipped, and the Python API (optim.run over the same
    tuning YAML and devices) tunes the same kernel."""
    import shutil
    import subprocess
    import sys

    from geko_lib import library, optim
    from tests.conftest import ROOT

    proc = subprocess.run([sys.executable, str(ROOT / "bin" / "geko"), "--tune", "--arch",
                           "gfx950", "--inline", "256", "512", "1", "256", "B", "B", "S", "N",
                           "T", "-d", "0,1,2,3", "--workdir", "run", "--cores", "2",
                           "--lock-dir", str(tmp_path / "locks")],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "run"
    (tuning_yaml,) = (run / "optimizations").glob("*_0.yaml")
    leases = (run / "logs" / "optimize" / f"{tuning_yaml.stem}.log").read_text()
    assert re.findall(r"leased sim device (\d+)", leases)[0] in {"0", "1", "2", "3"}
    kept = pd.read_csv(run / "results" / "final_results.csv")
    assert len(kept) == 1 and "1 of 1 GEMMs kept" in proc.stdout

    api_dir = tmp_path / "api"
    api_dir.mkdir()
    shutil.copy(tuning_yaml, api_dir / tuning_yaml.name)
    (logic,) = optim.run(tuning_dir=api_dir, devices=[0, 1, 2, 3], platform="sim",
                         arch="gfx950", lock_dir=str(tmp_path / "locks"))
    flow = run / "optimizations" / f"build_{tuning_yaml.stem}" / "3_LibraryLogic"

    def kernels(directory):
        return {p.name: [s.get("SolutionNameMin") for s in library.load(p).solutions]
                for p in directory.glob("*.yaml")}

    assert kernels(logic) == kernels(flow) and kernels(flow)
