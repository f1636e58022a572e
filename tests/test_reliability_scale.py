"""Scale (issue 24): what the terminal shows of a large --bench (the baseline's progress bar,
a bounded table naming the baseline's table for the rest), and the mask-64 reader's refusals
naming the right line now that it keeps a number per row, not the row's line. The workflow's
phases run in process as their jobs run them (``run_phase``: jobs of the rule table); the
terminal lines are the geko command's."""

import io
import re
from pathlib import Path

import pandas as pd
import pytest

from geko_lib import platforms, progress, terminal, workload
from geko_lib.bench_formats import summary
from geko_lib.campaign import layout, progress as campaign_progress

from .test_reliability_paths import bench_steps

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

ROW = ("- {{function: matmul, M: {m}, N: {n}, K: 4096, lda: 4096, ldb: 4096, ldc: {m}, "
       "ldd: {m}, transA: T, transB: N, batch_count: 1, a_type: bf16_r, b_type: bf16_r, "
       "c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, compute_type: c_f32_r, "
       "call_count: {calls}}}\n")
N_GEMMS = terminal.BENCH_TABLE_ROWS + 17


def _log(path: Path, n: int) -> Path:
    path.write_text("".join(ROW.format(m=256 + 64 * i, n=1 + i % 9, calls=1 + i % 4)
                            for i in range(n)))
    return path


@pytest.fixture()
def benched(tmp_path, monkeypatch, run_phase):
    """A workdir after the bench phases of N_GEMMS distinct GEMMs."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    monkeypatch.setenv(progress.ENV_INTERVAL, "0")  # a progress line per GEMM
    log = _log(tmp_path / "app.yaml", N_GEMMS)
    steps = bench_steps(tmp_path, log, N_GEMMS)
    for rule, how in steps:
        run_phase(rule, workdir, **how)
    return workdir, steps[0][1]["config"]


def test_bench_prints_the_largest_gemms_then_how_many_more_and_where(benched, capsys):
    workdir, config = benched
    terminal.run_summary(workdir, config, target="bench", until=None, code=0)
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if "largest share of GEMM time first" in line)
    assert f"baseline of {N_GEMMS} GEMMs" in out[start]
    header, rows = out[start + 1], out[start + 2:start + 2 + terminal.BENCH_TABLE_ROWS]
    assert header.split() == ["GEMM", "calls", "us", "GFLOP/s", "share"]
    full = pd.read_csv(workdir / layout.SUMMARY)
    assert len(full) == N_GEMMS
    shares = [float(line.split()[-1].rstrip("%")) for line in rows]
    assert shares == sorted(shares, reverse=True)
    rest = full[summary.PCT].iloc[terminal.BENCH_TABLE_ROWS:].sum()
    more = out[start + 2 + terminal.BENCH_TABLE_ROWS]
    match = re.fullmatch(r"geko: \.\.\. and (\d+) more GEMMs \(([\d.]+)% of GEMM time\): every "
                         r"GEMM's timing is in (.+)", more)
    assert match, more
    assert int(match[1]) == N_GEMMS - terminal.BENCH_TABLE_ROWS
    assert Path(match[3]) == workdir / layout.BASELINE
    assert len(pd.read_csv(match[3]).dropna(subset=["us"])) == N_GEMMS
    assert float(match[2]) == pytest.approx(rest, abs=0.01)
    assert float(match[2]) == pytest.approx(100 - sum(shares), abs=0.005 * len(shares) + 0.01)
    assert not any(line.startswith("  ") and "_M" in line
                   for line in out[start + 3 + terminal.BENCH_TABLE_ROWS:])


def test_a_small_bench_prints_every_gemm_and_no_more_line(benched):
    workdir, _ = benched
    table = terminal.bench_table(workdir).head(5)
    lines = terminal.bench_table_lines(table, workdir)
    assert len(lines) == 6 and not any("more GEMMs" in line for line in lines)


def test_the_baseline_draws_its_bar_from_its_jobs_progress_lines(benched):
    workdir, _ = benched
    counts = campaign_progress.baseline_counts(workdir)
    assert counts == campaign_progress.Counts(N_GEMMS, N_GEMMS, 0)
    stream = io.StringIO()
    bar = campaign_progress.CampaignBar(workdir, campaign_progress.phase_of(
        {"mode": "search"}, "bench"), stream)
    bar.close()
    line = stream.getvalue().splitlines()[-1]
    # all of it done before the bar looked (a rerun over a finished campaign): no rate of
    # millions of GEMMs a second (issue 41), the counts alone
    assert line == f"Baseline in progress: {N_GEMMS}/{N_GEMMS} [n_completed: {N_GEMMS}, " \
        "n_failed: 0]"


def test_a_part_under_way_counts_its_last_progress_line_and_the_search_takes_over(benched):
    workdir, _ = benched
    part = next(Path(workdir, layout.BASELINE_PART).parent.glob("*.csv"))
    part.unlink()  # the part is still running: its log's last line counts
    log = next(Path(workdir, layout.LOG_DIR, "baseline").glob("*.log"))
    log.write_text(progress.line(campaign_progress.baseline_label(part.stem), 12, N_GEMMS, 2.0)
                   + "\n")
    assert campaign_progress.baseline_counts(workdir) == \
        campaign_progress.Counts(N_GEMMS, 12, 0)
    stream = io.StringIO()
    bar = campaign_progress.CampaignBar(workdir, ("baseline", "search"), stream)
    bar.refresh()
    chunks = workdir / layout.SEARCH_CHUNKS
    chunks.mkdir(parents=True)
    (chunks / "gemms_0-1.yaml").write_text("- {M: 1}\n- {M: 2}\n")
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith(f"Baseline in progress: 12/{N_GEMMS} ")
    assert lines[0].endswith("n_completed: 12, n_failed: 0]")
    assert lines[-1] == "Search in progress: 0/2 [n_completed: 0, n_failed: 0]"


@pytest.mark.parametrize("fast", [True, False])
def test_a_refusal_names_the_first_line_of_the_bad_row(tmp_path, fast):
    """The fast reader finds a row's line from the row's position among the distinct lines:
    comments, blank lines, a byte-order mark and repeated rows before it count."""
    good = [ROW.format(m=256 + 64 * i, n=1, calls=1) for i in range(3)]
    bad = ROW.format(m=-4, n=1, calls=1)
    lines = ["\ufeff# app log\n", good[0], "\n", good[1], good[0], "# again\n", good[2],
             good[1], bad, good[2], bad]
    path = tmp_path / "app.yaml"
    path.write_text("".join(lines))
    with pytest.raises(workload.WorkloadError) as refused:
        workload.read(path, fast=fast, support=ANY)
    assert str(refused.value).startswith(f"{path}:{lines.index(bad) + 1}: M:")
