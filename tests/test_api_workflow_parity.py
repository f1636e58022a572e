"""The two doors on the same input, in process on the sim platform: the Python API as the README
shows it (search.run then extract_solutions; optim.configure, optim.run then merge_solutions)
and the workflow's phases as its jobs run them (run_phase: jobs of the rule table) write the
same libraries, the same failure files (one failed_jobs.log format) and whole stamps recording
the same platform and library; a tuning job that fails and one that stalls leave the same
files, job log lines and counts through either door (geko_lib.gpu_jobs behind both)."""

import json
import re
import shutil
from pathlib import Path

import yaml

from geko_lib import bench, failures, gpu_jobs, library, log_setup, optim, phases, search
from geko_lib.campaign import integrity, layout, state
from geko_lib.gemm import GemmProblem
from geko_lib.optim.optim import tuning_files
from geko_lib.phases import Job, Paths
from geko_lib.schemas import GemmConfig, GemmType
from geko_lib.tuning import ga

from .test_one_engine import CRASH, _api as search_api, _rows as search_rows, \
    _workflow as search_workflow

BBS_TN, HHS_NN = (GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "f32_r"),
                  GemmType("N", "N", "f16_r", "f16_r", "f16_r", "f32_r"))
TUNE_CRASH = "HHS_NN"  # every tuning job of this type fails
BBS_NT = GemmType("N", "T", "bf16_r", "bf16_r", "bf16_r", "f32_r")
TUNE_STALL = "BBS_NT"  # every tuning job of this type hangs
HHS_NN_SIZE = "HHS_NN_M512_N256_B1_K128"


def _config(tmp_path, mode, sim) -> dict:
    return state.with_defaults({"platform": "sim", "arch": "gfx950", "mode": mode,
                                "devices": [0], "lock_dir": str(tmp_path / "locks"),
                                "sim": sim, "search_duration": 0.01})


def _libraries(directory) -> dict:
    """Each library of a directory as YAML reads it (geko's own ``#`` note is no content)."""
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(Path(directory).glob("*.yaml"))}


def _stamp(path) -> dict:
    found = integrity.find_stamp(path)
    assert found is not None and integrity.damage(path, found) is None, path
    return {key: found.record[key] for key in ("platform", "library_version")}


def test_search_doors_write_the_same_libraries_failure_files_and_stamps(tmp_path, monkeypatch,
                                                                       run_phase):
    """search.run and the workflow's search_share job, each with a GEMM whose search fails:
    both run the one chunk body (gpu_jobs.search: whole, then the failed chunk GEMM by GEMM)
    and write the same libraries, failure files and stamps."""
    bodies = []
    body = gpu_jobs.search
    monkeypatch.setattr(gpu_jobs, "search", lambda chunk, *a, **k: bodies.append(
        (chunk.name, len(chunk.problems()))) or body(chunk, *a, **k))
    winners, api = search_api(tmp_path)
    library.operations.extract_solutions(winners, platform="sim").dump(api / "libs")
    _, flow = search_workflow(tmp_path, run_phase)  # its phases, in the workdir
    assert [count for _, count in bodies] == [3, 3], bodies  # one chunk of 3 GEMMs, each door
    config = _config(tmp_path, "search", {"search_crash_on": [CRASH]})
    run_phase("libs", tmp_path / "workdir", config)  # search mode: extract

    assert _libraries(api / "libs") == _libraries(layout.LIBS) != {}
    for name in (failures.FAILED_JOBS, failures.FAILED_GEMMS, "processed.csv"):
        assert (api / name).read_text() == (flow / name).read_text(), name
    assert failures.failed_names((api / failures.FAILED_JOBS).read_text()) == [
        n for n in (GemmProblem.from_row(r).name for r in search_rows()) if CRASH in n]
    api_tables = sorted((api / "data").glob("*.csv"))
    assert api_tables and {str(_stamp(p)) for p in api_tables} == {
        str(_stamp(p)) for p in (flow / "data").glob("*.csv")}


def _tuning_yamls(directory) -> list[Path]:
    return optim.configure(gemm_configs=[GemmConfig(BBS_TN, [[256, 128, 1, 64]]),
                                         GemmConfig(HHS_NN, [[512, 256, 1, 128]]),
                                         GemmConfig(BBS_NT, [[128, 256, 1, 64]])],
                           output_dir=directory, arch="gfx950", platform="sim")


def _tune_api(tmp_path, sim: dict, stall_timeout: float):
    """optim.run over the three tuning YAMLs (one job at a time, in the order it lists them:
    tuning_files), the tuned libraries merged; its tuning dir, the YAMLs in that order
    and the logic dirs it returned."""
    api = tmp_path / "api" / "optimizations"
    _tuning_yamls(api)
    yamls = tuning_files(api)
    # the workflow's copy of the configure checkpoint's files, before either door ran a job
    shutil.copytree(api, tmp_path / "workdir" / layout.TUNING_DIR)
    finished = optim.run(tuning_dir=api, devices=[0], n_slots=1, platform="sim", sim=sim,
                         stall_timeout=stall_timeout, lock_dir=str(tmp_path / "locks"))
    library.operations.merge_solutions(api, epilogues=True).dump(api.parent / "libs")
    return api, yamls, finished


def _tune_workflow(workdir: Path, config: dict, yamls, run_phase) -> None:
    """The workflow's optimize jobs over the same tuning YAMLs, each attempt as Snakemake runs
    it (a failed attempt is run again until the last, which skips the job), then merge_tuned."""
    for path in yamls:
        for attempt in range(1, 1 + config["tune_retries"] + 1):
            try:
                run_phase("optimize", workdir, config, wildcards={"cfg": path.stem},
                          attempt=attempt)
                break
            except Exception:  # noqa: BLE001 - the attempt failed; Snakemake would retry
                assert TUNE_CRASH in path.stem or TUNE_STALL in path.stem, path
                assert attempt <= config["tune_retries"]
    # tune mode: merge_tuned, over every tuning job the configure phase made
    run_phase("libs", workdir, config, over={"cfg": [path.stem for path in yamls]})


def _job_lines(log_path: Path, root: Path) -> list[tuple]:
    """A job log's lines, its paths relative to its door's workdir (``root``): without the
    device lease's lines (a workflow job leases inside the job, at INFO; the API's runner
    around it, at DEBUG) and the seconds a generation count took."""
    lines = []
    for line in log_path.read_text().splitlines():
        parsed = log_setup.parse(line)
        assert parsed is not None, line
        message = parsed["message"].replace(f"{root}/", "")
        if re.match(r"(leased|freed) sim device", message):
            continue
        lines.append((parsed["level"], parsed["module"], parsed["function"],
                      re.sub(r"elapsed [\d.]+ s", "elapsed", message)))
    return lines


def _tuning_files(tuning_dir: Path, root: Path, names) -> dict:
    """What a door's tuning jobs left: failed_jobs.log's entries (paths relative to
    ``root``), each build dir's .failcount and library files, the failed-run counts, the
    failure streak and running_jobs.log."""
    failed = tuning_dir / failures.FAILED_JOBS
    return {
        "failed": [(item["gemm"], item["error"].replace(f"{root}/", ""))
                   for item in failures.failed_items(failed.read_text())],
        "failcount": {name: (tuning_dir / f"build_{name}" / ".failcount").read_text()
                      for name in names if (tuning_dir / f"build_{name}" / ".failcount").exists()},
        "logic": {name: sorted(p.name for p in (tuning_dir / f"build_{name}" /
                                                "3_LibraryLogic").iterdir()) for name in names},
        "failed runs": failures.read_entries(tuning_dir),
        "streak": (tuning_dir / ".failure_streak").read_text(),
        "running": (tuning_dir / "running_jobs.log").read_text()}


def test_tune_doors_run_one_tuning_job_with_one_policy(tmp_path, monkeypatch, capsys, run_phase):
    """One tuning job that works, one that fails (sim crash_on) and one that stalls (sim
    stall_on, stall_timeout 1 s) through both doors (geko_lib.gpu_jobs behind either): the
    same libraries and stamps, the same failed_jobs.log entries (the job's own reason, its
    log), .failcount of each attempt, empty 3_LibraryLogic for the two skipped jobs, failed-run
    counts and failure streak, and the same lines in each job's log."""
    monkeypatch.setattr(ga.GAConfig, "n_gen", 2)
    sim = {"crash_on": [TUNE_CRASH], "stall_on": [TUNE_STALL]}
    api, yamls, finished = _tune_api(tmp_path, sim, stall_timeout=1)
    # the campaign's bar over the jobs, as the workflow's terminal draws it
    bars = [part for part in capsys.readouterr().err.split("\r")
            if part.startswith("Optimization in progress")]
    assert bars and "3/3" in bars[-1] and "n_completed: 1, n_failed: 2" in bars[-1], bars
    workdir, config = tmp_path / "workdir", dict(_config(tmp_path, "tune", sim), stall_timeout=1)
    _tune_workflow(workdir, config, yamls, run_phase)

    assert _libraries(api.parent / "libs") == _libraries(workdir / layout.LIBS) != {}
    names = [path.stem for path in yamls]
    api_files = _tuning_files(api, api.parent, names)
    assert api_files == _tuning_files(workdir / layout.TUNING_DIR, workdir, names)
    skipped = [name for name in names if TUNE_CRASH in name or TUNE_STALL in name]
    assert [name for name, _ in api_files["failed"]] == skipped
    (crash,) = [item for item in api_files["failed"] if TUNE_CRASH in item[0]]
    (stall,) = [item for item in api_files["failed"] if TUNE_STALL in item[0]]
    assert crash[1] == f"sim: injected crash on {HHS_NN_SIZE}; see " \
        f"{layout.job_log('optimize', crash[0])}"
    assert stall[1].startswith(f"no progress in {layout.job_log('optimize', stall[0])} for 1 s")
    assert api_files["failcount"] == {name: "2\n" for name in skipped}  # both attempts failed
    # the skipped jobs' empty library dirs (stamped: provenance.json), the others' library
    assert {name: logic for name, logic in api_files["logic"].items()
            if logic == [integrity.MANIFEST]} == {name: [integrity.MANIFEST]
                                                    for name in skipped}
    assert api_files["failed runs"] == {name: {"failed_runs": int(name in skipped), "ran_at": 0}
                                        for name in names}
    assert api_files["streak"].strip() == "2" and api_files["running"] == ""
    for name in names:  # the job logs: the API's where the workflow puts its own
        api_lines = _job_lines(api.parent / layout.job_log("optimize", name), api.parent)
        assert api_lines == _job_lines(workdir / layout.job_log("optimize", name), workdir)
        assert any(f"{name} skipped" in line[3] for line in api_lines) == (name in skipped)
    assert [p.parent.name for p in finished] == [f"build_{n}" for n in names if n not in skipped]
    for logic in finished:
        assert _libraries(logic) == _libraries(workdir / layout.TUNING_DIR / logic.parent.name
                                               / logic.name)
        assert _stamp(logic) == _stamp(workdir / layout.TUNING_DIR / logic.parent.name
                                       / logic.name)


# two GEMMs, the second one's search fails (sim); keep_thr 0: no baseline times the workload
TWO_GEMMS = "".join(
    f"- {{function: matmul, M: {m}, N: 16, K: 1024, transA: T, transB: N, batch_count: 1, "
    "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, "
    "call_count: 10}\n" for m in (1024, 2048))
SEARCH_CRASH = "M2048_N16"


def _analyze_workflow(workdir: Path, config: dict) -> None:
    """The workflow's jobs from libs/ and summary.csv to results/, as its rules chain them."""
    phases.run(Job.for_rule("create_library", Paths(layout.LIBS), Paths(layout.TENSILE),
                            config), "create_library")
    libs = layout.Layout(workdir).lib_stems()
    for lib in libs:
        fill = {key: layout.fill(path, lib=lib) for key, path in (
            ("logic", layout.LIB_LOGIC), ("bench", layout.BENCH_INPUT),
            ("verify", layout.VERIFY_INPUT))}
        phases.run(Job.for_rule("bench_input", Paths(fill["logic"]),
                                Paths(bench=fill["bench"], verify=fill["verify"]), config,
                                params=Paths(duration=config["compare_duration"],
                                             rotating_mb=config["rotating_mb"]),
                                wildcards=Paths(lib=lib)), "bench_input")
    tables = {"reference": [], "tuned": [], "verify": []}
    for share in layout.Layout(workdir).lib_shares(len(config["devices"])):
        mine = layout.Layout(workdir).share_libs(share)
        outputs = {key: layout.fill(pattern, share=share) for key, pattern in (
            ("reference", layout.BENCH_SHARE_REFERENCE), ("tuned", layout.BENCH_SHARE_TUNED),
            ("verify", layout.BENCH_SHARE_VERIFY))}
        phases.run(Job.for_rule(
            "bench_libs", Paths(bench=[layout.fill(layout.BENCH_INPUT, lib=lib) for lib in mine],
                                verify=[layout.fill(layout.VERIFY_INPUT, lib=lib) for lib in mine],
                                library=layout.TENSILE),
            Paths(**outputs), config, wildcards=Paths(share=share)), "bench_libs")
        for key, path in outputs.items():
            tables[key].append(path)
    uncompared = [layout.fill(layout.BENCH_UNCOMPARED, rest=rest)
                  for rest in layout.Layout(workdir).uncompared()]
    for table in uncompared:
        phases.run(Job.for_rule("bench_uncompared", Paths(summary=layout.SUMMARY,
                                                          libs=layout.LIBS),
                                Paths(table=table), config,
                                wildcards=Paths(rest=layout.UNCOMPARED)), "bench_uncompared")
    phases.run(Job.for_rule("analyze", Paths(**tables, summary=layout.SUMMARY,
                                             uncompared=uncompared),
                            Paths(raw=layout.RAW_RESULTS, final=layout.FINAL_RESULTS,
                                  dashboard=layout.DASHBOARD, metrics=layout.METRICS), config,
                            params=Paths(up_thr=config["up_thr"], err_thr=config["err_thr"])),
               "analyze")


def _headline(metrics_json: Path) -> dict:
    m = json.loads(metrics_json.read_text())
    return {"counts": {k: m["counts"][k] for k in ("n_attempted", "n_kept", "n_failed")},
            "uplift": round(m["e2e"]["e2e_uplift_pct"], 9),
            "kept share": round(m["e2e"]["coverage_pct"], 9),
            "n_untimed": m["e2e"]["n_untimed"],
            "roofline": (m["roofline"]["n"], m["roofline"]["n_failed"])}


def test_with_keep_thr_0_and_a_failed_gemm_both_doors_give_the_same_headline(
        tmp_path, monkeypatch, caplog):
    """optim.analyze(log_summary=...) on a keep_thr-0 summary whose second GEMM's search
    failed weighted only the compared GEMM (uplift of its own time, 'kept GEMMs are 100.0%',
    no failed count) where the workflow's phases weigh the whole workload (bench_uncompared
    times the failed GEMM's default kernel): both give the whole workload's figures now."""
    sim = {"search_crash_on": [SEARCH_CRASH]}
    config = dict(_config(tmp_path, "search", sim), keep_thr=0)
    api = tmp_path / "api"
    (tmp_path / "app.yaml").write_text(TWO_GEMMS)
    summary, gemms = bench.log.summarize(log_file=tmp_path / "app.yaml", output_dir=api,
                                         keep_thr=0, platform="sim")
    winners = search.run(configs=search.configure(gemms, duration=0.01),
                         output_dir=api / "search", devices=[0], platform="sim", sim=sim,
                         lock_dir=str(tmp_path / "locks"))
    library.operations.extract_solutions(winners, platform="sim").dump(api / "libs")
    with caplog.at_level("INFO", logger="GEKO"):
        optim.analyze(lib_dir=api / "libs", output_dir=api / "results",
                      log_summary=api / "summary.csv", duration=config["compare_duration"],
                      platform="sim", sim=sim, lock_dir=str(tmp_path / "locks"))
    # the failed GEMM's default kernel, timed by the workflow's bench_uncompared function
    assert (api / "benchmarks" / "uncompared-reference.out").is_file()
    api_lines = [r.getMessage() for r in caplog.records if "GEMM uplift" in r.getMessage()]

    workdir = tmp_path / "workdir"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    shutil.copy(api / "summary.csv", layout.SUMMARY)
    winners.to_csv(layout.WINNERS, index=False)  # the same winners: the libs job's input
    phases.run(Job.for_rule("libs", Paths(layout.WINNERS), Paths(layout.LIBS), config), "extract")
    assert _libraries(layout.LIBS) == _libraries(api / "libs")
    caplog.clear()
    with caplog.at_level("INFO", logger="GEKO"):
        _analyze_workflow(workdir, config)
    flow_lines = [line for line in (workdir / layout.job_log("analyze")).read_text()
                  .splitlines() if "GEMM uplift" in line]

    flow = _headline(workdir / layout.METRICS)
    assert flow["counts"] == {"n_attempted": 1, "n_kept": 1, "n_failed": 1}
    assert flow["n_untimed"] == 0 and 0 < flow["kept share"] < 100
    assert _headline(api / "results" / "metrics.json") == flow
    # the original's closing lines say the same figures
    assert [line.split("] ", 1)[-1] for line in api_lines] == \
        [line.split("] ", 1)[-1] for line in flow_lines] != []
