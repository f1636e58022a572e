"""A run that fails in Snakemake itself (no job failed, no workflow file names the error) shows
the cause on the terminal (issue 33): `geko --report` without pygments said "the failed jobs'
logs are printed above" and printed none; the cause was only in logs/snakemake.log."""

from __future__ import annotations

from geko_lib import terminal
from geko_lib.campaign import snakemake_output


def _fed(tmp_path, lines):
    output = snakemake_output.Output(tmp_path, ["snakemake"])
    for line in lines:
        output.feed(line, say=lambda line: None)
    output.close()
    return output


def test_snakemakes_own_error_is_shown_from_its_name_on(tmp_path):
    output = _fed(tmp_path, ["Creating report...", "Adding pareto.png (45.17 KB).",
                             "Loading script code for rule summarize", "WorkflowError:",
                             "Python package pygments must be installed to create reports."])
    assert output.failure_lines() == [
        "snakemake stopped (logs/snakemake.log):", "    WorkflowError:",
        "    Python package pygments must be installed to create reports."]


def test_without_an_error_name_its_last_lines_are_shown(tmp_path):
    lines = [f"line {i}" for i in range(20)]
    output = _fed(tmp_path, lines)
    assert output.failure_lines()[1:] == [f"    {line}" for line in
                                          lines[-snakemake_output.OWN_ERROR_LINES:]]


def test_the_failure_line_says_the_cause_is_above(tmp_path, capsys):
    terminal.run_summary(tmp_path, {"mode": "search", "platform": "rocm"}, target="final_libs",
                         until=None, code=1)
    out = capsys.readouterr().out
    assert "the run failed (snakemake exit code 1): the cause is printed above" in out
    assert "failed jobs' logs are printed above" not in out
