"""What a finished run says (issue 33): the GEMMs that got faster by name, most GEMM time saved
first (not only totals); the snakemake route's `--until configure` lists the tuning YAMLs and
how to continue, and its target `combine` gives the combined library's headline, not the
search's; `geko ... -- --dry-run` leaves no workdir behind."""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

from geko_lib import terminal
from geko_lib.campaign import layout
from tests.test_cli import geko

IDENTITY = {"transA": "T", "transB": "N", "batch_count": 1, "a_type": "bf16_r",
            "b_type": "bf16_r", "c_type": "bf16_r", "d_type": "bf16_r",
            "compute_type": "c_f32_r"}


def _results(workdir, rows):
    path = workdir / layout.FINAL_RESULTS
    path.parent.mkdir(parents=True)
    pd.DataFrame([IDENTITY | row for row in rows]).to_csv(path, index=False)


def _row(m, saved, kept=True):
    return {"m": m, "n": 1, "k": 4096, "kept": kept, "us_reference": 10.0,
            "us_tuned": 10.0 - saved, "weighted_us_saved": saved * 100,
            "weighted_uplift_contribution_pct": saved}


def test_the_faster_gemms_are_named_most_time_saved_first(tmp_path):
    _results(tmp_path, [_row(1024 * i, 0.1 * i) for i in range(1, 8)] +
             [_row(999, 9.0, kept=False)])
    lines = terminal.faster_lines(tmp_path)
    assert lines[0].startswith("geko: faster GEMMs, most GEMM time saved first (5 of 7; all in ")
    assert [line.split()[0] for line in lines[1:]] == [
        f"BBS_TN_M{1024 * i}_N1_B1_K4096" for i in (7, 6, 5, 4, 3)]
    assert "10.000 ->      9.300 us  1.08x  0.70% of GEMM time saved" in lines[1]


def test_no_kept_gemm_no_list(tmp_path):
    _results(tmp_path, [_row(4096, 1.0, kept=False)])
    assert terminal.faster_lines(tmp_path) == []
    assert terminal.faster_lines(tmp_path / "none") == []


def test_the_snakemake_routes_combine_ends_with_the_combined_headline(tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.delenv(terminal.COMMAND_ENV, raising=False)
    (tmp_path / layout.METRICS).parent.mkdir(parents=True)
    (tmp_path / layout.METRICS).write_text(json.dumps(
        {"counts": {"n_kept": 2, "n_attempted": 9}}))
    pd.DataFrame([{"gemm": "a", "source": "this", "shipped": True}]).to_csv(
        tmp_path / layout.COMBINED_RESULTS, index=False)
    calls = []
    monkeypatch.setattr(terminal.combine, "summary",
                        lambda table: calls.append(len(table)) or "1 of 1 GEMMs served")
    terminal.workflow_headline(tmp_path, {"mode": "search", "platform": "sim"},
                               targets={"combine"})
    out = capsys.readouterr().out
    assert "combined library: 1 of 1 GEMMs served" in out and calls == [1]
    assert "2 of 9 GEMMs kept" not in out  # the search's headline


def test_the_snakemake_routes_until_configure_says_how_to_continue(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.delenv(terminal.COMMAND_ENV, raising=False)
    argv = ["snakemake", "--profile", "profiles/local", "final_libs", "--until", "configure",
            "--config", "mode=tune", "workdir=runs/t"]
    terminal.workflow_headline(tmp_path, {"mode": "tune", "platform": "sim"},
                               until={"configure"}, argv=argv)
    out = capsys.readouterr().out
    assert f"Generated 0 configuration files in '{tmp_path / layout.TUNING_DIR}'" in out
    # a snakemake-route workdir has no geko_config.yaml: `geko --tune -w` would refuse it
    assert "continue (optimize.py)" not in out
    assert "geko: continue: snakemake --profile profiles/local final_libs --config mode=tune " \
        "workdir=runs/t\n" in out
    (tmp_path / layout.CONFIG_COPY).write_text("mode: tune\n")  # a geko campaign's workdir
    terminal.workflow_headline(tmp_path, {"mode": "tune", "platform": "sim"},
                               until={"configure"}, argv=argv)
    assert f"continue (optimize.py): geko --tune --workdir {tmp_path}" in capsys.readouterr().out


@pytest.mark.slow
def test_a_dry_run_leaves_no_workdir_behind(tmp_path):
    proc = geko("--search", "--inline", "256", "256", "1", "256", "B", "B", "S", "N", "T",
                "--platform", "sim", "--workdir", "planned", "--", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "baseline" in proc.stdout + proc.stderr  # it planned
    assert not (tmp_path / "planned").exists()
    (tmp_path / "kept").mkdir()  # a workdir that was there stays
    proc = geko("--search", "--inline", "256", "256", "1", "256", "B", "B", "S", "N", "T",
                "--platform", "sim", "--workdir", "kept", "--", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "kept" / "geko_config.yaml").is_file()


@pytest.mark.slow
def test_the_snakemake_routes_review_step_continues_as_it_says(tmp_path):
    """`snakemake ... --until configure` on a checkout: the continuation it prints runs as
    printed and finishes the tune, and the run ends with the sim reminder as every sim run
    does. It printed `geko --tune --workdir W`, which a snakemake-route workdir (no
    geko_config.yaml) refuses with exit 2, and ended without the reminder."""
    import shlex
    import shutil
    import sys

    from tests.conftest import ROOT, TUNE_SIZES

    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".snakemake"))
    (tmp_path / "sizes.yaml").write_text(TUNE_SIZES)
    (tmp_path / "mine.yaml").write_text('workload_log: ""\nworkload_list: sizes.yaml\n')
    snakemake = [sys.executable, "-m", "snakemake"]
    args = ["--profile", "profiles/local", "final_libs", "--until", "configure",
            "--configfile", "mine.yaml", "--config", "mode=tune", "workdir=runs/t"]
    first = subprocess.run([*snakemake, *args], cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    said = [line for line in first.stdout.splitlines() if line.startswith("geko: ")]
    assert said[-1] == f"geko: {terminal.MODEL_REMINDER}", said
    (line,) = [s for s in said if s.startswith("geko: continue: ")]
    argv = shlex.split(line.removeprefix("geko: continue: "))
    assert "--until" not in argv and "configure" not in argv
    assert not (tmp_path / "runs" / "t" / "final_libs").exists()
    second = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert second.returncode == 0, line + "\n" + second.stdout[-3000:] + second.stderr[-3000:]
    assert "Optimization workflow completed successfully!" in second.stdout
    assert (tmp_path / "runs" / "t" / "final_libs").is_dir()


# --- a run told to stop early (snakemake's --until), and -v 0 (issue 41) ----------------------

def test_the_until_of_the_arguments_after_the_double_dash_is_read_in_every_spelling():
    from geko_lib import cli

    assert cli.snakemake_until(["--until", "ingest", "baseline", "--dry-run"]) == \
        ("ingest", "baseline")
    assert cli.snakemake_until(["--until=ingest"]) == ("ingest",)
    assert cli.snakemake_until(["-nU", "ingest"]) == ("ingest",)
    assert cli.snakemake_until(["--dry-run", "--config", "sim={noise: 0.1}"]) == ()


def test_a_run_stopped_by_until_says_where_and_reads_no_output_it_did_not_make(
        tmp_path, capsys):
    (tmp_path / layout.WORKLOAD).write_text("- {M: 1}\n")  # what ingest wrote; no baseline
    config = {"mode": "search", "platform": "sim", "workload_log": "", "verbosity": 1}
    for target in ("bench", "final_libs"):
        terminal.run_summary(tmp_path, config, target=target, until=("ingest",), code=0)
        out = capsys.readouterr().out
        assert "geko: stopped after ingest (--until), as asked; to go on, rerun the same geko " \
            "command without -- --until" in out
        assert "workload.yaml  the workload as geko read it" in out
        assert "completed successfully" not in out and "baseline of" not in out


def test_the_snakemake_routes_until_says_where_it_stopped_and_how_to_go_on(
        tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(terminal.COMMAND_ENV, raising=False)
    argv = ["snakemake", "--profile", "profiles/local", "bench", "--until", "ingest"]
    terminal.workflow_headline(tmp_path, {"mode": "search", "platform": "sim"},
                               targets={"bench"}, until={"ingest"}, argv=argv)
    out = capsys.readouterr().out
    assert "geko: stopped after ingest (--until), as asked; continue: snakemake --profile " \
        "profiles/local bench\n" in out


def test_at_verbosity_0_a_finished_run_prints_no_headline(tmp_path, capsys):
    """-v 0 is the original's WARNING level: its closing lines are INFO lines, not shown."""
    (tmp_path / layout.METRICS).parent.mkdir(parents=True)
    (tmp_path / layout.METRICS).write_text(json.dumps({"counts": {"n_kept": 2}}))
    config = {"mode": "search", "platform": "sim", "workload_log": "", "verbosity": 0}
    terminal.run_summary(tmp_path, config, target="final_libs", until=None, code=0)
    assert capsys.readouterr().out == f"geko: {terminal.MODEL_REMINDER}\n"
    terminal.run_summary(tmp_path, config, target="final_libs", until=None, code=1)
    assert "the run failed (snakemake exit code 1)" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["--bench", "--search"])
def test_geko_until_ingest_after_the_double_dash_ends_cleanly(tmp_path, mode):
    proc = geko(mode, "--platform", "sim", "--inline", "1024", "1024", "1", "1024", "B", "B",
                "S", "N", "T", "-w", "run", "--cores", "2", "--", "--until", "ingest",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "error" not in proc.stderr and "does not exist" not in proc.stdout + proc.stderr
    assert "geko: stopped after ingest (--until), as asked" in proc.stdout
    assert "completed successfully" not in proc.stdout
    assert not (tmp_path / "run" / layout.BASELINE).exists()
