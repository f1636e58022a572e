"""Stamps prove an output whole and current (geko_lib.campaign.integrity); run_state.json refuses another
campaign (geko_lib.campaign.state); a stale Snakemake lock is cleared, a live one refuses
(geko_lib.campaign.lock)."""
import json
import os
import re
import subprocess
import sys
import time

import pandas as pd
import pytest

from geko_lib.campaign import (lock as campaign_lock, start as campaign_start,
                               state as campaign_state, integrity)
from geko_lib import jobs
from geko_lib.errors import GekoError

from .conftest import WORKLOADS

PROVENANCE = {"workload_sha256": "w1", "platform": "sim", "arch": "gfx950",
              "library_version": "sim-model-1", "options_sha256": "o1"}


def table(tmp_path, rows=3):
    path = tmp_path / "summary.csv"
    pd.DataFrame({"m": range(rows), "us": [1.5 * i for i in range(rows)]}).to_csv(path, index=False)
    return path


def test_a_file_stamp_records_digest_rows_provenance_and_inputs(tmp_path):
    source = tmp_path / "gemms.csv"
    source.write_text("m\n1\n")
    path = table(tmp_path)
    integrity.stamp(path, PROVENANCE, integrity.input_digests(["gemms.csv"], tmp_path), rule="r")
    record = json.loads(integrity.sidecar(path).read_text())
    assert record["sha256"] == integrity.file_sha256(path) and record["rows"] == 3
    assert record["provenance"] == PROVENANCE and record["rule"] == "r"
    assert record["inputs"] == {"gemms.csv": integrity.file_sha256(source)}
    assert integrity.problem(path, PROVENANCE, tmp_path, check_inputs=True) is None


@pytest.mark.parametrize("fault", ["cut at a line", "cut mid-row", "number edited"])
def test_damage_is_found_and_named(tmp_path, fault):
    path = table(tmp_path)
    integrity.stamp(path, PROVENANCE, {})
    text = path.read_text()
    damaged = {"cut at a line": "".join(text.splitlines(keepends=True)[:-1]),
               "cut mid-row": text[:-3],
               "number edited": text.replace("1.5", "1.6")}[fault]
    path.write_text(damaged)
    reason = integrity.problem(path, PROVENANCE, tmp_path)
    assert "differs from its stamp summary.csv.stamp.json" in reason
    with pytest.raises(integrity.IntegrityError, match=re.escape(str(path))):
        integrity.require(path, PROVENANCE, tmp_path)


def test_a_table_read_with_fewer_rows_than_stamped_is_refused(tmp_path):
    path = table(tmp_path)
    integrity.stamp(path, PROVENANCE, {})
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(integrity.IntegrityError, match=r"2 rows read, .* recorded 3"):
        jobs.read_table(path)


def test_another_campaigns_output_is_stale_and_says_what_differs(tmp_path):
    path = table(tmp_path)
    integrity.stamp(path, PROVENANCE, {})
    reason = integrity.problem(path, {**PROVENANCE, "arch": "gfx942"}, tmp_path)
    assert reason == "made for arch 'gfx950' (this run: 'gfx942')"


def test_the_other_modes_results_are_stale_but_the_workload_tables_are_not():
    campaign = {**PROVENANCE}
    assert "mode" not in integrity.expected_provenance(campaign, "tune", "summary.csv")
    assert integrity.expected_provenance(campaign, "tune", "final_libs")["mode"] == "tune"
    assert integrity.expected_provenance(campaign, "tune", "benchmarks/x_bench.yaml")["mode"] \
        == "tune"


def test_an_output_made_from_a_changed_input_is_stale(tmp_path):
    source = tmp_path / "gemms.csv"
    source.write_text("m\n1\n")
    path = table(tmp_path)
    integrity.stamp(path, PROVENANCE, integrity.input_digests(["gemms.csv"], tmp_path))
    mtime = source.stat().st_mtime_ns
    source.write_text("m\n2\n")
    os.utime(source, ns=(mtime, mtime))  # the same mtime: Snakemake would see nothing
    reason = integrity.problem(path, PROVENANCE, tmp_path, check_inputs=True)
    assert reason == "made from another version of gemms.csv"


def test_a_directory_manifest_covers_every_file_inside(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "a.yaml").write_text("- 1\n- 2\n")
    (libs / ".snakemake_timestamp").write_text("")
    integrity.stamp(libs, {**PROVENANCE, "mode": "search"}, {})
    manifest = json.loads((libs / integrity.MANIFEST).read_text())
    assert manifest["files"] == {"a.yaml": {"sha256": integrity.file_sha256(libs / "a.yaml"),
                                            "rows": 2}}
    assert '"arch": "gfx950"' in (libs / integrity.MANIFEST).read_text()
    expected = {**PROVENANCE, "mode": "search"}
    assert integrity.problem(libs / "a.yaml", expected, tmp_path) is None
    (libs / "a.yaml").write_text("- 1\n")
    assert "differs from its stamp provenance.json" in integrity.problem(libs, expected)
    assert "differs" in integrity.problem(libs / "a.yaml", expected, tmp_path)


def test_an_unstamped_or_unreadable_stamp_is_a_problem(tmp_path):
    path = table(tmp_path)
    assert "has no stamp" in integrity.problem(path, PROVENANCE, tmp_path)
    integrity.sidecar(path).write_text("{not json")
    assert "unreadable stamp" in integrity.problem(path, PROVENANCE, tmp_path)


def test_the_audit_removes_damaged_outputs_and_what_was_made_from_them(tmp_path):
    first, second, third = (tmp_path / n for n in ("a.csv", "b.csv", "c.csv"))
    for path in (first, second, third):
        path.write_text("x\n1\n")
    integrity.stamp(first, PROVENANCE, {})
    integrity.stamp(second, PROVENANCE, integrity.input_digests(["a.csv"], tmp_path))
    integrity.stamp(third, PROVENANCE, {})
    first.write_text("x\n2\n")  # damaged; b.csv was made from the old a.csv
    patterns = [("{name}.csv", re.compile(r"(?P<name>.+)\.csv$"))]
    told = []
    removed = campaign_start.remove_untrustworthy_outputs(
        tmp_path, patterns, PROVENANCE, "search", report=told.append)
    assert [str(p) for p, _ in removed] == ["a.csv", "b.csv"]
    assert not first.exists() and not second.exists() and third.exists()
    assert not integrity.sidecar(first).exists()
    assert "a.csv: content differs from its stamp" in told[0] and "recomputes it" in told[0]


def test_the_audit_leaves_a_locked_workdir_alone(tmp_path):
    path = table(tmp_path)  # no stamp: would be removed
    (tmp_path / ".snakemake" / "locks").mkdir(parents=True)
    (tmp_path / ".snakemake" / "locks" / "0.input.lock").write_text("")
    patterns = [("summary.csv", re.compile(r"summary\.csv$"))]
    assert campaign_start.remove_untrustworthy_outputs(tmp_path, patterns, PROVENANCE,
                                                       "search") == []
    assert path.exists()


def test_pattern_glob_keeps_constraints_out():
    assert campaign_start.pattern_glob(r"search/data/{chunk,gemms_\d{2}}.csv") == \
        "search/data/*.csv"
    assert campaign_start.pattern_glob("optimizations/build_{cfg}/3_LibraryLogic") == \
        "optimizations/build_*/3_LibraryLogic"


# --- run_state.json ----------------------------------------------------------------------------

def config_for(tmp_path, **change):
    return campaign_state.with_defaults({"platform": "sim", "arch": "gfx950",
                                         "workload_log": str(WORKLOADS / "mixed_types.yaml"),
                                         "workload_list": "", "workload_inline": "", **change})


def test_run_state_keeps_the_originals_keys_and_refuses_another_campaign(tmp_path):
    current = campaign_state.identity(config_for(tmp_path))
    campaign_state.record(tmp_path, current, "search")
    state = json.loads((tmp_path / "run_state.json").read_text())
    assert {"input_sha256", "input_path", "created_at", "last_modified", "configured",
            "optimized"} <= set(state)
    assert state["input_path"] == str(WORKLOADS / "mixed_types.yaml")
    campaign_state.check(tmp_path, current)  # the same campaign passes
    other = campaign_state.identity(config_for(tmp_path, arch="gfx942", bench_duration=0.2))
    with pytest.raises(campaign_state.CampaignMismatch) as caught:
        campaign_state.check(tmp_path, other)
    message = str(caught.value)
    assert "arch 'gfx950' (this run: 'gfx942')" in message
    assert "option bench_duration 0.5 (this run: 0.2)" in message
    assert "new --workdir" in message and f"delete {tmp_path}" in message


def test_options_digests_keep_the_values_earlier_runs_stamped(tmp_path):
    """The campaign's identity and the API's search chunks digest their options by one rule
    (campaign.state.made_by); the values below were computed by the code before that rule was
    shared, so stamps already in workdirs still match and their results are reused."""
    from geko_lib import search
    from tests.test_search import _rows_of

    config = config_for(tmp_path, bench_duration=0.05, search_duration=0.1,
                        compare_duration=0.2, rotating_mb=512, backend="ductile",
                        tune_options={"n_gen": 4}, epilogues=False,
                        sim={"seed": 3, "noise": 0.0, "faulty_solutions": []})
    assert campaign_state.identity(config)["options_sha256"] == \
        "ad9fd09bcaad8469ad65d4322307807e68fa0e0583e539725b2941009b9c3e94"
    out = tmp_path / "s"
    search.run(configs=_rows_of((256, 512)), output_dir=out, devices=[0], platform="sim",
               duration=0.01, sim={"seed": 7})
    stamp = json.loads(integrity.sidecar(out / "data" / "gemms_0-1.csv").read_text())
    assert stamp["provenance"]["options_sha256"] == \
        "b93f1475ede1d9754bd527918914b0852b3d796d6333fc08f7e653ef7695b654"


def test_an_edited_file_that_a_list_names_is_another_workload(tmp_path):
    log = tmp_path / "app.yaml"
    log.write_text((WORKLOADS / "mixed_types.yaml").read_text())
    listing = tmp_path / "sizes.yaml"
    listing.write_text("SIZE_OPTION: 2\nGEMM_LOG_PATH: app.yaml\n")
    config = config_for(tmp_path, workload_log="", workload_list=str(listing))
    before = campaign_state.identity(config)
    mtime = log.stat().st_mtime_ns
    log.write_text(log.read_text().replace("call_count: 1", "call_count: 7", 1))
    os.utime(log, ns=(mtime, mtime))
    after = campaign_state.identity(config)
    assert before["input_sha256"] == after["input_sha256"]  # the list file itself is unchanged
    assert campaign_state.differences(before, after) == [
        f"workload_sha256 {before['workload_sha256']!r} (this run: "
        f"{after['workload_sha256']!r})"]


def test_fault_injection_knobs_are_not_part_of_the_identity(tmp_path):
    plain = campaign_state.identity(config_for(tmp_path))
    crashing = campaign_state.identity(config_for(tmp_path, sim={"crash_on": ["X"]}))
    assert campaign_state.differences(plain, crashing) == []


# --- the Snakemake lock ------------------------------------------------------------------------

def locked(tmp_path):
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("")
    return locks


def test_a_lock_whose_holder_is_gone_is_cleared(tmp_path):
    locks = locked(tmp_path)
    assert campaign_lock.prepare(tmp_path) == ["0.input.lock"]
    assert not list(locks.iterdir())


def test_a_live_campaign_refuses_and_keeps_its_lock(tmp_path):
    locks = locked(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                               "snakemake"], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 10
        while not campaign_lock.live_holders(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(GekoError, match=rf"a campaign is running there \(snakemake pid "
                                            rf"{holder.pid}\)"):
            campaign_lock.prepare(tmp_path)
        assert list(locks.iterdir())
    finally:
        holder.kill()
        holder.wait()


def test_an_edited_companion_of_a_finished_job_is_refused_not_recomputed(tmp_path):
    manifest, config = tmp_path / "tuning_configs.txt", tmp_path / "BBS_TN_0.yaml"
    manifest.write_text("BBS_TN_0\n")
    config.write_text("a: 1\n")
    integrity.stamp(manifest, PROVENANCE, {})
    integrity.stamp(config, PROVENANCE, {}, companion_of="tuning_configs.txt")
    config.write_text("a: 2\n")  # a person's edit after --until configure
    patterns = [("tuning_configs.txt", re.compile(r"tuning_configs\.txt$"))]
    with pytest.raises(integrity.IntegrityError, match="delete its .stamp.json to use your"):
        campaign_start.remove_untrustworthy_outputs(tmp_path, patterns, PROVENANCE, "tune")
    assert config.read_text() == "a: 2\n" and manifest.exists()
    integrity.sidecar(config).unlink()  # accepted as the person's own
    assert campaign_start.remove_untrustworthy_outputs(tmp_path, patterns, PROVENANCE,
                                                       "tune") == []
    manifest.unlink()  # the job that wrote it did not finish: written again, not refused
    integrity.stamp(config, PROVENANCE, {}, companion_of="tuning_configs.txt")
    config.write_text("a: 3\n")
    removed = campaign_start.remove_untrustworthy_outputs(tmp_path, patterns, PROVENANCE, "tune")
    assert [str(p) for p, _ in removed] == ["BBS_TN_0.yaml"]


def test_a_tuning_yaml_edited_since_configure_is_tuned_as_edited(tmp_path):
    """The review step of --until configure: a tuning YAML a person edits (one value removed
    from a parameter list) is theirs: stamped as it is, named in one line, never rewritten;
    a build made from its earlier content is recomputed. Another companion (its .sh) edited
    stays refused."""
    opt = tmp_path / "optimizations"
    opt.mkdir()
    manifest, config, script = (opt / n for n in ("tuning_configs.txt", "BBS_TN_0.yaml",
                                                  "BBS_TN_0.sh"))
    manifest.write_text("BBS_TN_0\n")
    config.write_text("- DepthU: [32, 64]\n")
    script.write_text("#!/bin/sh\n")
    integrity.stamp(manifest, PROVENANCE, {})
    for side in (config, script):
        integrity.stamp(side, PROVENANCE, {}, companion_of="optimizations/tuning_configs.txt")
    logic = opt / "build_BBS_TN_0" / "3_LibraryLogic"
    logic.mkdir(parents=True)
    (logic / "lib.yaml").write_text("x\n")
    integrity.stamp(logic, PROVENANCE, integrity.input_digests(
        ["optimizations/BBS_TN_0.yaml"], tmp_path))
    config.write_text("- DepthU: [64]\n")  # the review
    patterns = [(f"optimizations/{n}", re.compile(re.escape(f"optimizations/{n}") + "$"))
                for n in ("tuning_configs.txt", "BBS_TN_0.yaml", "BBS_TN_0.sh",
                          "build_BBS_TN_0/3_LibraryLogic")]
    said = []
    removed = campaign_start.remove_untrustworthy_outputs(tmp_path, patterns, PROVENANCE,
                                                          "tune", report=said.append)
    assert config.read_text() == "- DepthU: [64]\n" and manifest.exists()
    assert integrity.problem(config, PROVENANCE, tmp_path) is None  # stamped as edited
    assert said[0] == f"geko: tuning YAML(s) edited since configure, tuned as edited: {config}"
    assert [str(p) for p, _ in removed] == ["optimizations/build_BBS_TN_0/3_LibraryLogic"]
    script.write_text("#!/bin/sh\necho edited\n")
    with pytest.raises(integrity.IntegrityError, match="delete its .stamp.json to use your"):
        campaign_start.remove_untrustworthy_outputs(tmp_path, patterns, PROVENANCE, "tune")


def test_outputs_of_the_same_job_go_together(tmp_path):
    summary, gemms, other = (tmp_path / n for n in ("summary.csv", "gemms.csv", "other.csv"))
    for path in (summary, gemms, other):
        path.write_text("x\n1\n")
    both = ["gemms.csv", "summary.csv"]
    integrity.stamp(summary, PROVENANCE, {}, rule="summarize", outputs=both)
    integrity.stamp(gemms, PROVENANCE, {}, rule="summarize", outputs=both)
    integrity.stamp(other, PROVENANCE, {}, rule="summarize", outputs=["other.csv"])
    summary.write_text("x\n")
    patterns = [("{name}.csv", re.compile(r"(?P<name>.+)\.csv$"))]
    removed = campaign_start.remove_untrustworthy_outputs(tmp_path, patterns, PROVENANCE,
                                                          "search", report=lambda line: None)
    assert sorted(str(p) for p, _ in removed) == ["gemms.csv", "summary.csv"]
    assert other.exists()
