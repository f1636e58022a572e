"""A real `snakemake --profile profiles/gfx950 final_libs` run on the rocm platform, with a fake
hipBLASLt checkout (tests/rocm_fake.py) standing in for a gfx950 node: search mode from a
HIPBLASLT_LOG_MASK=32 log to libs/, results/ and final_libs/, and tune mode from the same log
(TensileLite replays) to final_libs/."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from geko_lib import library
from tests.conftest import ROOT, FIXTURES, SNAKEFILE
from tests.rocm_fake import FAKE_HASH, INVOKE_PATH, build_fake_hipblaslt, fixture_logic

pytestmark = pytest.mark.skipif(not (FIXTURES / "tensile_logic").is_dir(),
                                reason="tests/fixtures is not here")

# bf16 NN and f16 TT: the GEMM types of the gfx950 logic fixtures (the fake's device library)
MASK32_LOG = "".join(
    f"hipblaslt-bench --api_method c -m {m} -n {n} -k {k} --lda {m} --ldb {k} --ldc {m} "
    f"--ldd {m}  --stride_a 0 --stride_b 0 --stride_c 0 --stride_d 0  --alpha 1.000000 "
    f"--beta 0.000000 --transA {ta} --transB {tb} --batch_count 1 --scaleA 0 --scaleB 0  "
    f"--a_type {t} --b_type {t} --c_type {t} --d_type {t} --scale_type f32_r --bias_type f32_r"
    f"   --compute_type f32_r --algo_method index --solution_index 1 --rotating 0 "
    f"--cold_iters 0 --iters 0\n" * calls
    for m, n, k, ta, tb, t, calls in [(16, 2048, 15360, "N", "N", "bf16_r", 40),
                                      (16, 16384, 15360, "N", "N", "bf16_r", 10),
                                      (512, 512, 512, "N", "N", "bf16_r", 5),
                                      (1024, 1024, 1024, "T", "T", "f16_r", 3)])


def profile_run(tmp_path, overrides, env, target="final_libs"):
    """`snakemake final_libs --profile profiles/gfx950`: the profile's config file, then the
    test's overrides on top (a --configfile replaces the profile's, so both are named); two
    devices, two cores on this host."""
    profile = ROOT / "profiles" / "gfx950"
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), target,
           "--profile", str(profile), "--configfile", str(profile / "gfx950.yaml"),
           str(overrides), "--cores", "2", "--resources", "gpu=2", "gpu_slot=4"]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)


@pytest.fixture
def fake(tmp_path):
    return build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx950"))


def test_search_mode_with_the_gfx950_profile(campaign, fake, tmp_path):
    log = tmp_path / "app_mask32.txt"
    log.write_text(MASK32_LOG)
    replay_log = tmp_path / "replay.jsonl"
    run = campaign(workload_log=str(log))  # paths only: platform, arch... are the profile's
    env = dict(os.environ, GEKO_HIPBLASLT_PATH=str(fake), GEKO_REPLAY_LOG=str(replay_log))
    env.pop("HIPBLASLT_TENSILE_LIBPATH", None)
    overrides = tmp_path / "paths.yaml"
    overrides.write_text(yaml.safe_dump({"workdir": str(run.workdir), "workload_log": str(log),
                                         "lock_dir": str(tmp_path / "locks"), "devices": [0, 1]}))
    proc = profile_run(tmp_path, overrides, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]

    winners = pd.read_csv(run.path("winners.csv"))
    assert len(winners) == 4 and (winners["platform"] == "rocm").all()
    libs = sorted(p.name for p in run.path("libs").glob("*.yaml"))
    assert libs == ["gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml",
                    "gfx950_Cijk_Alik_Bjlk_HHS_BH_BiasSH_HAS_SAV_UserArgs.yaml"]
    assert json.loads(run.path("libs", "provenance.json").read_text())["library_version"] == \
        f"hipblaslt-{FAKE_HASH}"
    assert any(run.path("tensile", "library", "gfx950").glob("TensileLibrary_lazy_gfx950.*"))

    raw = pd.read_csv(run.path("results", "raw_results.csv"))
    assert len(raw) == 4 and raw["verified"].all() and (raw["error_tuned"] < 0.03).all()
    assert (raw["us_reference"] > 0).all() and (raw["us_tuned"] > 0).all()
    # the original's lib_source: the directory hipBLASLt's MatchTable names for the default's
    # solution (the fake checkout keeps its logic files in Equality/); the tuned library has none
    assert (raw["lib_source_reference"] == "Equality").all()
    assert (raw["lib_source_tuned"] == "NotFound").all()
    # aiter's tuned table, stamped with the campaign's arch; this log's GEMMs (N N, T T) are no
    # F.linear call (T N), so it has its header and no row a runtime would look up wrongly
    aiter = pd.read_csv(run.path("exports", "aiter_bf16_tuned_gemm.csv"))
    assert list(aiter.columns)[:5] == ["gfx", "cu_num", "M", "N", "K"] and aiter.empty
    assert (pd.read_csv(run.path("summary.csv"))["lib_source"] == "Equality").all()
    # the override holds the index the stock library has each winner under (winners.csv), not
    # the index of the library geko built from the winners for the comparison
    from geko_lib.library import exports

    override = exports.read_tuning_override(run.path("exports", "hipblaslt_tuning_override.txt"))
    stock = dict(zip(winners["solution_name"], winners["solution_index"]))
    assert len(override) == len(kept := pd.read_csv(run.path("results", "final_results.csv")))
    assert override["solution_index"].tolist() == [stock[n] for n in override["solution_name"]]
    assert (override["solution_index"] >= 300000).all()
    assert json.loads(run.path("exports", "library_index.json").read_text())["index_of"] == \
        "stock hipBLASLt library"
    # the baseline ran the application's leading dimensions, as the log recorded them
    baseline_rows = [row for p in run.path("baseline", "parts").glob("bench_*.yaml")
                     if not p.stem.endswith("_probe") for row in yaml.safe_load(p.read_text())]
    assert baseline_rows and all(r["lda"] == r["M"] and r["ldb"] == r["K"] and r["ldd"] == r["M"]
                                 for r in baseline_rows)
    candidates = pd.concat(pd.read_csv(p) for p in run.path("search", "data").glob("*.csv"))
    assert (candidates["lib_source"] == "Equality").all()
    metrics = json.loads(run.path("results", "metrics.json").read_text())
    assert metrics["platform"]["name"] == "rocm" and metrics["platform"]["measured"]
    kept = pd.read_csv(run.path("results", "final_results.csv"))
    shipped = {p.name: library.load(p) for p in run.path("final_libs").glob("*.yaml")}
    assert sum(len(lib.exact_logic) for lib in shipped.values()) == len(kept)
    assert run.path("full_libs").is_dir()

    calls = [json.loads(line) for line in replay_log.read_text().splitlines()]
    tuned = [c for c in calls if c["libpath"]]
    # the per-arch directory TensileCreateLibrary writes (the original points the variable there)
    assert tuned and all(c["libpath"] == str(run.path("tensile", "library", "gfx950"))
                         for c in tuned)
    assert all(c["argv"][0] == "--yaml" and c["argv"][2] == "--device" for c in calls)
    assert {c["argv"][3] for c in calls} <= {"0", "1"}  # the config's devices


def test_tune_mode_with_the_gfx950_profile(campaign, fake, tmp_path):
    """Tune mode on the rocm platform: configure, the client built once by the checkout's
    invoke task (tests/rocm_replay/tensilelite_tasks.py under the invoke stand-in), one
    TensileLite run per tuning YAML (the replay tuner) with the leased device in its YAML,
    merged libs, TensileCreateLibrary, hipblaslt-bench reference/tuned/verify, final_libs."""
    log = tmp_path / "app_mask32.txt"
    log.write_text(MASK32_LOG)
    replay_log, tool_log = tmp_path / "replay.jsonl", tmp_path / "tools.jsonl"
    run = campaign(workload_log=str(log))
    env = dict(os.environ, GEKO_HIPBLASLT_PATH=str(fake), GEKO_REPLAY_LOG=str(replay_log),
               GEKO_REPLAY_RECORD=str(tool_log),
               PYTHONPATH=os.pathsep.join(p for p in (str(INVOKE_PATH),
                                                      os.environ.get("PYTHONPATH")) if p))
    for var in ("HIPBLASLT_TENSILE_LIBPATH", "GEKO_REPLAY_TENSILE_FAIL", "HIP_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES", "SLURM_JOB_ID"):
        env.pop(var, None)
    overrides = tmp_path / "paths.yaml"
    overrides.write_text(yaml.safe_dump({
        "workdir": str(run.workdir), "workload_log": str(log), "mode": "tune",
        "lock_dir": str(tmp_path / "locks"), "devices": [0, 1], "n_slots": 2}))
    proc = profile_run(tmp_path, overrides, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]

    configs = sorted(p.stem for p in run.path("optimizations").glob("*.yaml"))
    assert configs
    tools = [json.loads(line) for line in tool_log.read_text().splitlines()]
    builds = [t for t in tools if t["tool"] == "invoke build-client"]
    assert len(builds) == 1 and builds[0]["gpu_targets"] == "gfx950"
    assert builds[0]["cwd"] == str((fake / "tensilelite").resolve())
    client_dir = run.path("tensilelite_client")  # rocm.client_dir's default
    assert (client_dir / "hash.txt").read_text().strip() == FAKE_HASH
    tuner = [t for t in tools if t["tool"] == "Tensile"]
    assert len(tuner) == len(configs)
    client = str(client_dir.resolve() / "tensilelite" / "client" / "tensilelite-client")
    for call in tuner:
        argv = call["argv"]
        assert argv[argv.index("--prebuilt-client") + 1] == client
        lock = argv[argv.index("--client-lock") + 1]
        # the device in the job's YAML is the one whose lock it takes
        assert lock == str(run.path("optimizations", f"gpulock_{call['device']}"))
        assert call["device"] in (0, 1)
        assert str(fake.resolve() / "tensilelite") in call["PYTHONPATH"].split(os.pathsep)
    for cfg in configs:
        build = run.path("optimizations", f"build_{cfg}")
        assert len(list(build.joinpath("3_LibraryLogic").glob("*.yaml"))) == 1
        assert (build / f"{cfg}-tensilelite.log").is_file()
        assert not (build / "1_BenchmarkProblems").exists()
        assert " | " in run.path("logs", "optimize", f"{cfg}.log").read_text()  # generations
    assert len(run.path("optimizations", "timing.log").read_text().splitlines()) == len(configs)

    libs = sorted(run.path("libs").glob("*.yaml"))
    assert libs and all(library.load(p).architecture_name == "gfx950" for p in libs)
    assert any(run.path("tensile", "library", "gfx950").glob("TensileLibrary_lazy_gfx950.*"))
    raw = pd.read_csv(run.path("results", "raw_results.csv"))
    assert len(raw) == 4 and (raw["us_reference"] > 0).all() and (raw["us_tuned"] > 0).all()
    assert raw["verified"].all()
    metrics = json.loads(run.path("results", "metrics.json").read_text())
    assert metrics["platform"]["name"] == "rocm" and metrics["counts"]["n_attempted"] == 4
    kept = pd.read_csv(run.path("results", "final_results.csv"))
    shipped = {p.name: library.load(p) for p in run.path("final_libs").glob("*.yaml")}
    assert sum(len(lib.exact_logic) for lib in shipped.values()) == len(kept)
    # tuned kernels exist only in geko's library: the exports say so, and name its build
    index = json.loads(run.path("exports", "library_index.json").read_text())
    assert index["index_of"] == "geko library" and index["library"] == "tensile/library"
    assert index["library_version"].startswith("geko-")

    calls = [json.loads(line) for line in replay_log.read_text().splitlines()]
    tuned = [c for c in calls if c["libpath"]]
    # the per-arch directory TensileCreateLibrary writes (the original points the variable there)
    assert tuned and all(c["libpath"] == str(run.path("tensile", "library", "gfx950"))
                         for c in tuned)
    assert any(not c["libpath"] for c in calls)  # the reference runs use hipBLASLt's own

    again = profile_run(tmp_path, overrides, env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, \
        again.stderr[-3000:]
