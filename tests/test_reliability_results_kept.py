"""Header-only winners.csv in a finished workdir (issue 16): no traceback, results/ kept."""

import pytest

from .test_reliability_edges import _no_traceback


@pytest.mark.slow
def test_header_only_winners_in_a_finished_workdir_keeps_the_results(campaign):
    c = campaign(keep_thr=0.0)
    c.snakemake("final_libs")
    results = {p.name: p.read_bytes() for p in c.path("results").iterdir()}
    winners = c.path("winners.csv")
    header = winners.read_text().splitlines()[0]
    for stamp in c.workdir.glob("winners.csv*.json"):  # as if written without its stamp
        stamp.unlink()
    winners.write_text(header + "\n")
    proc = c.snakemake("final_libs", check=False)
    out = proc.stdout + proc.stderr
    _no_traceback(out)
    # either refused naming the file, or set aside as not written by a geko job: never used
    assert "winners.csv" in out
    assert {p.name: p.read_bytes() for p in c.path("results").iterdir()} == results
