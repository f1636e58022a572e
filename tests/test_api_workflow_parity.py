"""The two doors on the same input, in process on the sim platform: the Python API as the README
shows it (search.run then extract_solutions; optim.configure, optim.run then merge_solutions)
and the workflow's phases as its jobs run them (run_phase: jobs of the rule table) write the
same libraries, the same failure files (one failed_jobs.log format) and whole stamps recording
the same platform and library."""

import shutil
from pathlib import Path

import yaml

from geko_lib import failures, library, optim
from geko_lib.campaign import integrity, layout, state
from geko_lib.gemm import GemmProblem
from geko_lib.schemas import GemmConfig, GemmType
from geko_lib.tuning import ga

from .test_one_engine import CRASH, _api as search_api, _rows as search_rows, \
    _workflow as search_workflow

BBS_TN, HHS_NN = (GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "f32_r"),
                  GemmType("N", "N", "f16_r", "f16_r", "f16_r", "f32_r"))
TUNE_CRASH = "HHS_NN"  # every tuning job of this type fails


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
    winners, api = search_api(tmp_path)
    library.operations.extract_solutions(winners, platform="sim").dump(api / "libs")
    _, flow = search_workflow(tmp_path, run_phase)  # its phases, in the workdir
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
                                         GemmConfig(HHS_NN, [[512, 256, 1, 128]])],
                           output_dir=directory, arch="gfx950", platform="sim")


def test_tune_doors_write_the_same_libraries_failure_files_and_stamps(tmp_path, monkeypatch,
                                                                      capsys, run_phase):
    monkeypatch.setattr(ga.GAConfig, "n_gen", 2)
    sim = {"crash_on": [TUNE_CRASH]}
    api = tmp_path / "api" / "optimizations"
    yamls = _tuning_yamls(api)
    finished = optim.run(tuning_dir=api, devices=[0], n_slots=1, platform="sim", sim=sim,
                         lock_dir=str(tmp_path / "locks"))
    # the campaign's bar over the jobs, as the workflow's terminal draws it
    bars = [part for part in capsys.readouterr().err.split("\r")
            if part.startswith("Optimization in progress")]
    assert bars and "2/2" in bars[-1] and "n_completed: 1, n_failed: 1" in bars[-1], bars
    library.operations.merge_solutions(api, epilogues=True).dump(api.parent / "libs")

    workdir, config = tmp_path / "workdir", _config(tmp_path, "tune", sim)
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    shutil.copytree(api, layout.TUNING_DIR, ignore=shutil.ignore_patterns("build_*", "*.log"))
    for path in yamls:
        # the workflow's attempts: Snakemake runs a failed job again until its last attempt
        for attempt in range(1, 1 + config["tune_retries"] + 1):
            try:
                run_phase("optimize", workdir, config, wildcards={"cfg": path.stem},
                          attempt=attempt)
                break
            except Exception:  # noqa: BLE001 - the attempt failed; Snakemake would retry
                assert TUNE_CRASH in path.stem and attempt <= config["tune_retries"]
    # tune mode: merge_tuned, over every tuning job the configure phase made
    run_phase("libs", workdir, config, over={"cfg": [path.stem for path in yamls]})

    assert _libraries(api.parent / "libs") == _libraries(workdir / layout.LIBS) != {}
    crashed = [p.stem for p in yamls if TUNE_CRASH in p.stem]
    api_failed, flow_failed = (failures.failed_items(path.read_text()) for path in (
        api / failures.FAILED_JOBS, workdir / layout.TUNING_FAILED))
    assert [item["gemm"] for item in api_failed] == crashed
    assert [item["gemm"] for item in flow_failed] == crashed
    for api_item, flow_item in zip(api_failed, flow_failed):  # the job's own reason; its log
        assert api_item["error"].startswith("sim: injected crash on HHS_NN"), api_item
        job_log = layout.job_log("optimize", api_item["gemm"])
        assert flow_item["error"] == f"{api_item['error']}; see {job_log}", flow_item
    assert [p.parent.name for p in finished] == [f"build_{p.stem}" for p in yamls
                                                 if p.stem not in crashed]
    for logic in finished:
        assert _libraries(logic) == _libraries(workdir / layout.TUNING_DIR / logic.parent.name
                                               / logic.name)
        assert _stamp(logic) == _stamp(workdir / layout.TUNING_DIR / logic.parent.name
                                       / logic.name)
