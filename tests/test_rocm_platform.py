"""RocmPlatform against a fake hipBLASLt checkout (tests/rocm_fake.py): locating the checkout,
the exact rows, argv and environment of every phase, MatchTable extraction, errors."""

import datetime
import json
import logging
import os
import socket
from pathlib import Path

import pytest
import yaml

from geko_lib import platforms, search
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.platforms import PlatformError
from geko_lib.platforms.rocm import install
from geko_lib.platforms.rocm.platform import (RocmPlatform, client_revision, run_tool,
                                              tensile_libpath)
from tests.conftest import FIXTURES
from tests.rocm_fake import (FAKE_HASH, FIRST_INDEX, INVOKE_PATH, build_fake_hipblaslt,
                             fixture_logic, write_git)

pytestmark = pytest.mark.skipif(not (FIXTURES / "tensile_logic").is_dir(),
                                reason="tests/fixtures is not here")

BBS_NN = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
PROBLEMS = [GemmProblem(BBS_NN, 16, 2048, 1, 15360), GemmProblem(BBS_NN, 512, 512, 1, 512)]
TUNING_YAML = Path(__file__).resolve().parent / "data" / "tuning" / "BBS_TN_128_gfx950_tensile.yaml"
HOST = socket.gethostname().split(".")[0]


@pytest.fixture
def fake(tmp_path):
    return build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx950"))


@pytest.fixture
def platform(fake, tmp_path):
    replay_log = tmp_path / "replay.jsonl"
    env = {"PATH": os.environ.get("PATH", ""), "GEKO_REPLAY_LOG": str(replay_log),
           "HIPBLASLT_TENSILE_LIBPATH": "/stale/from/the/shell"}
    p = RocmPlatform.from_config({"platform": "rocm", "rocm": {"hipblaslt_path": str(fake)}},
                                 environ=env)
    p.replay_log = replay_log
    return p


def calls(platform):
    return [json.loads(line) for line in platform.replay_log.read_text().splitlines()]


def rows_of(out_dir, kind):
    (path,) = sorted(p for p in out_dir.glob(f"{kind}_*.yaml") if "_probe" not in p.name)
    return yaml.safe_load(path.read_text())


# --- locating the checkout -------------------------------------------------------------------

def test_locate_priority_env_over_config(fake, tmp_path):
    other = build_fake_hipblaslt(tmp_path / "other", fixture_logic("gfx950"))
    config = {"rocm": {"hipblaslt_path": str(other)}}
    assert install.locate(config, {}).root == other.resolve()
    found = install.locate(config, {"GEKO_HIPBLASLT_PATH": str(fake)})
    assert found.root == fake.resolve()
    assert found.bench == fake.resolve() / "build/release/clients/staging/hipblaslt-bench"
    assert found.tensilelite == fake.resolve() / "tensilelite"
    assert found.git_hash == FAKE_HASH


def test_locate_older_bench_location_and_packed_refs(tmp_path):
    root = build_fake_hipblaslt(tmp_path / "old", fixture_logic("gfx950"), bench_location="clients")
    (root / ".git" / "refs" / "heads" / "develop").unlink()
    write_git(root, "fedcba9876543210fedcba9876543210fedcba98", packed=True)
    found = install.locate({}, {"GEKO_HIPBLASLT_PATH": str(root)})
    assert found.bench.name == "hipblaslt-bench" and found.bench.parent.name == "clients"
    assert found.git_hash == "fedcba9876543210fedcba9876543210fedcba98"


def test_git_hash_unknown_without_git(fake):
    import shutil

    shutil.rmtree(fake / ".git")
    assert install.git_hash(fake) == "unknown"


@pytest.mark.parametrize("damage, words", [
    (None, "needs a built hipBLASLt checkout"),
    ("missing", "does not exist"),
    ("tensilelite", "is not a hipBLASLt checkout"),
    ("build", "is not built"),
    ("bench", "has no hipblaslt-bench"),
])
def test_locate_errors_name_the_path(fake, damage, words):
    import shutil

    path = fake
    if damage == "missing":
        path = fake / "nowhere"
    elif damage == "tensilelite":
        shutil.rmtree(fake / "tensilelite")
    elif damage == "build":
        shutil.rmtree(fake / "build")
    elif damage == "bench":
        (fake / "build/release/clients/staging/hipblaslt-bench").unlink()
    environ = {} if damage is None else {"GEKO_HIPBLASLT_PATH": str(path)}
    with pytest.raises(PlatformError, match=words) as err:
        install.locate({}, environ)
    if damage:
        assert str(path.resolve()) in str(err.value)


def test_platforms_get_and_ceilings(fake, monkeypatch):
    monkeypatch.setenv("GEKO_HIPBLASLT_PATH", str(fake))
    platform = platforms.get({"platform": "rocm", "arch": "gfx942"})
    assert isinstance(platform, RocmPlatform) and platform.measured and platform.name == "rocm"
    assert platform.library_version == f"hipblaslt-{FAKE_HASH}"
    ceilings = platforms.ceilings({"platform": "rocm", "arch": "gfx942"})
    assert ceilings["peak_tflops"]["16"] == pytest.approx(1307.4)
    assert "datasheet" in ceilings["source"]
    assert platforms.ceilings({"platform": "rocm", "arch": "gfx90a"}) is None


# --- the phases: rows, argv, environment ----------------------------------------------------

def test_bench_probe_then_budgeted_run(platform, tmp_path):
    out = tmp_path / "baseline"
    frame = platform.bench(PROBLEMS, out, 3, duration=0.5)
    assert [(r.m, r.n) for r in frame.itertuples()] == [(16, 2048), (512, 512)]
    assert set(frame["platform"]) == {"rocm"} and frame["measured"].all()
    assert (frame["device"] == 3).all() and (frame["solution_index"] >= FIRST_INDEX).all()
    probe, timed = calls(platform)
    for call in (probe, timed):
        assert call["argv"][:1] == ["--yaml"] and call["argv"][2:] == ["--device", "3"]
        assert call["libpath"] is None and not call["freq"]  # the stale shell value is gone
    probe_rows = yaml.safe_load(next(out.glob("*_probe.yaml")).read_text())
    assert {(r["iters"], r["cold_iters"]) for r in probe_rows} == {(10, 2)}
    rows = rows_of(out, "bench")
    expected = [-(-0.5e6 // us) for us in frame["us"]]  # ceil(budget / probe latency)
    assert [r["iters"] for r in rows] == pytest.approx(expected, rel=0.05)
    assert all(r["iters"] == r["cold_iters"] and r["rotating"] == 512 and r["flush"] is True
               and r["print_kernel_info"] is True for r in rows)


def test_search_returns_every_candidate(platform, tmp_path):
    out = tmp_path / "search"
    frame = platform.search(PROBLEMS, out, 1, duration=0.04)
    assert len(frame) == 2 * 8  # the 8 solutions of the NN bf16 logic file, per GEMM
    assert not frame["winner"].any()
    rows = rows_of(out, "search")
    assert all(r["algo_method"] == 0 and r["requested_solution_num"] == -1 for r in rows)
    assert [r["skip_slow_solution_ratio"] for r in rows] == [0.3, 0.3]  # both under 20 us
    winners = search.winners(frame)
    assert len(winners) == 2


def test_extract_create_bench_verify_reference(platform, tmp_path):
    winners = search.winners(platform.search(PROBLEMS, tmp_path / "s", 0))
    (tmp_path / "libs").mkdir()
    (path,) = platform.extract(winners, tmp_path / "libs")
    assert path.name == "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"
    library = platform.create_library(tmp_path / "libs", tmp_path / "tensile")
    tuned = platform.bench(PROBLEMS, tmp_path / "b", 0, library=library)
    # TensileCreateLibrary keeps the files per architecture: the variable names that directory
    assert calls(platform)[-1]["libpath"] == str(
        (tmp_path / "tensile" / "library" / "gfx950").resolve())
    reference = {int(i): platform.reference_solution(p, int(i))["SolutionNameMin"]
                 for p, i in zip(PROBLEMS, winners["solution_index"])}
    assert list(tuned["kernel"].str[:60]) == [reference[int(i)][:60]
                                              for i in winners["solution_index"]]
    checked = platform.verify(PROBLEMS, tmp_path / "v", 0, library)
    assert list(checked.columns[:13]) == list(platforms.VERIFY_COLUMNS[:13])
    assert (checked["error"] < 0.03).all()
    verify_rows = rows_of(tmp_path / "v", "verify")
    assert all(r["norm_check"] == 1 and r["allclose_check"] == 1 and r["iters"] == 1
               for r in verify_rows)


def test_reference_solution_checks_the_type(platform):
    other = GemmProblem(GemmType("T", "T", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r"),
                        1, 1, 1, 1)
    with pytest.raises(PlatformError, match="not HHS_TT"):
        platform.reference_solution(other, FIRST_INDEX)
    with pytest.raises(PlatformError, match="not in"):
        platform.reference_solution(PROBLEMS[0], 1)


def test_bench_freq_sets_the_variable_and_columns(platform, tmp_path):
    platform.bench_freq = True
    frame = platform.bench(PROBLEMS[:1], tmp_path / "f", 0)
    assert calls(platform)[-1]["freq"]
    assert frame["lowest_avg_freq"].iloc[0] == 2100


def test_failing_bench_names_command_and_log(platform, tmp_path):
    platform.environ["GEKO_REPLAY_FAIL"] = "1"
    with pytest.raises(PlatformError) as err:
        platform.bench(PROBLEMS, tmp_path / "x", 0)
    message = str(err.value)
    assert "hipblaslt-bench failed (exit code 3)" in message and "--yaml" in message
    assert str(tmp_path / "x") in message and ".out" in message


def test_unsupported_gemm_is_an_error(platform, tmp_path):
    fp32 = GemmProblem(GemmType("N", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r"), 8, 8, 1, 8)
    with pytest.raises(PlatformError, match=r"no result for 1 GEMM\(s\): SSS_NN_M8"):
        platform.bench([PROBLEMS[0], fp32], tmp_path / "u", 0)
    with pytest.raises(PlatformError, match="no hipblaslt-bench result found"):
        platform.bench([fp32], tmp_path / "u", 0)


def test_run_tool_missing_program(tmp_path):
    with pytest.raises(PlatformError, match="cannot run"):
        run_tool([str(tmp_path / "no-such-tool"), "--yaml", "x"], tmp_path / "log")


# --- geko --hipblaslt ---------------------------------------------------------------------------

def test_cli_hipblaslt_flag(fake, tmp_path, monkeypatch):
    from geko_lib import cli

    monkeypatch.setenv("GEKO_HIPBLASLT_PATH", str(tmp_path / "elsewhere"))
    base = ["--search", "--inline", "16", "2048", "1", "15360", "B", "B", "S", "N", "N",
            "--platform", "rocm", "--workdir", str(tmp_path / "w")]
    config, _ = cli.build_config(cli.parser().parse_args(base + ["--hipblaslt", str(fake)]))
    assert config["rocm"]["hipblaslt_path"] == str(fake.resolve())
    assert cli.child_environment(config)["GEKO_HIPBLASLT_PATH"] == str(fake.resolve())
    with pytest.raises(cli.UsageError, match="is not built"):
        import shutil

        shutil.rmtree(fake / "build")
        cli.build_config(cli.parser().parse_args(base + ["--hipblaslt", str(fake)]))


# --- tune mode: the platform's TensileLite run ----------------------------------------------

def ductile_config(tmp_path, name="BBS_TN_0"):
    """The stored tuning YAML with a tiny Ductile run, under optimizations/configs/."""
    text = TUNING_YAML.read_text().replace(
        "Backend:\n  Name: Tensile\n", "Backend:\n  Name: Ductile\n  Config:\n    n_gen: 2\n"
        "    pop_size: 4\n")
    path = tmp_path / "optimizations" / "configs" / f"{name}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("allocation, device, in_yaml, lock", [
    ({}, 3, 3, "gpulock_3"),
    ({"HIP_VISIBLE_DEVICES": "4,5"}, 5, 1, "gpulock_5"),
    ({"SLURM_JOB_ID": "77", "ROCR_VISIBLE_DEVICES": "6"}, 6, 0, f"gpulock_{HOST}_6")])
def test_optimize_device_is_the_ordinal_the_tuner_sees(fake, tmp_path, monkeypatch, allocation,
                                                       device, in_yaml, lock):
    """Device: counts the devices the tuner sees, as hipblaslt-bench's --device does; geko
    never narrows them itself (the environment reaches the tuner as it was)."""
    record = tmp_path / "tools.jsonl"
    monkeypatch.setenv("PYTHONPATH", str(INVOKE_PATH))  # the client build's invoke
    env = {k: v for k, v in os.environ.items() if "VISIBLE" not in k and k not in (
        "SLURM_JOB_ID", "GEKO_REPLAY_TENSILE_FAIL")}
    env.update(allocation, GEKO_REPLAY_RECORD=str(record))
    p = RocmPlatform.from_config({"platform": "rocm", "rocm": {
        "hipblaslt_path": str(fake), "client_dir": str(tmp_path / "client")}}, environ=env)
    config = ductile_config(tmp_path)
    build = tmp_path / "optimizations" / "build_BBS_TN_0"
    assert any(p.optimize(config, build, device).glob("*.yaml"))
    [call] = [json.loads(line) for line in record.read_text().splitlines()
              if json.loads(line)["tool"] == "Tensile"]
    assert call["device"] == in_yaml
    assert call["argv"][call["argv"].index("--client-lock") + 1] == \
        str((tmp_path / "optimizations" / lock).resolve())
    assert call["visible"] == {k: v for k, v in allocation.items() if "VISIBLE" in k}


def test_an_interrupted_tuning_job_logs_its_retry_once(fake, tmp_path, monkeypatch, caplog):
    """optim.run on the rocm checkout resumes an interrupted Ductile build: the build dir is
    prepared once per job (the door's tuning.build_dir.prepare_build_dir), so its 'retrying'
    line is logged once; TensileLite's own run prepared it again and logged it twice."""
    from geko_lib import optim

    monkeypatch.setenv("PYTHONPATH", str(INVOKE_PATH))  # the client build's invoke
    out = tmp_path / "optimizations"
    ductile_config(tmp_path).rename(out / "BBS_TN_0.yaml")

    def tune():
        return optim.run(fake, tuning_dir=out, devices=[0], n_slots=1, retry=False,
                         arch="gfx950", rocm={"client_dir": str(tmp_path / "client")})

    monkeypatch.setenv("GEKO_REPLAY_TENSILE_FAIL", "gen:1")
    assert tune() == []  # interrupted after its first generation: a checkpoint is left
    monkeypatch.delenv("GEKO_REPLAY_TENSILE_FAIL")
    with caplog.at_level(logging.INFO, logger="GEKO"):
        (logic,) = tune()
    assert any(logic.glob("*.yaml"))
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert retries == ["BBS_TN_0: resumable build dir, retrying from its checkpoint"]


def test_created_library_path_is_its_library_directory(tmp_path):
    (tmp_path / "t" / "library").mkdir(parents=True)
    assert tensile_libpath(tmp_path / "t") == (tmp_path / "t" / "library").resolve()
    (tmp_path / "t" / "library" / "gfx950").mkdir()
    assert tensile_libpath(tmp_path / "t") == (tmp_path / "t" / "library" / "gfx950").resolve()
    with pytest.raises(PlatformError, match="no created library"):
        tensile_libpath(tmp_path / "elsewhere")


def test_client_revision_falls_back_to_the_date():
    assert client_revision(FAKE_HASH) == FAKE_HASH
    assert client_revision("unknown", datetime.date(2026, 3, 1)) == "unknown-2026-03-01"
