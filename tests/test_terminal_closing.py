"""What a finished run says (issue 33): the GEMMs that got faster by name, most GEMM time saved
first (not only totals); the snakemake route's `--until configure` lists the tuning YAMLs and
how to continue, and its target `combine` gives the combined library's headline, not the
search's; `geko ... -- --dry-run` leaves no workdir behind."""

from __future__ import annotations

import json

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
    terminal.workflow_headline(tmp_path, {"mode": "tune", "platform": "sim"},
                               until={"configure"})
    out = capsys.readouterr().out
    assert f"Generated 0 configuration files in '{tmp_path / layout.TUNING_DIR}'" in out
    assert f"continue (optimize.py): geko --tune --workdir {tmp_path}" in out
    assert "or the same snakemake command without --until" in out


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
