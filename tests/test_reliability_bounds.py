"""Nothing outside the workdir is touched (issue 34): a symlink under the workdir that leads out
of it refuses the run before anything changes, naming the link and where it points, through
``geko`` (in process: a refusal starts nothing) and the snakemake route. Before, with
``results/`` linked outside, ``geko --search`` removed the outside ``final_results.csv`` ("has
no stamp: removed") and wrote its own there; ``--report`` wrote into an outside file that
``report.html`` linked to."""

import pytest
import yaml

from geko_lib import cli
from geko_lib.campaign import bounds, progress as campaign_progress

INLINE = ["--inline", "1024", "1024", "1", "1024", "B", "B", "S", "N", "T"]


@pytest.fixture
def no_snakemake(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("snakemake was started")
    monkeypatch.setattr(campaign_progress, "call", refuse)


def _outside(tmp_path):
    """A directory outside the workdir holding a file a campaign would write."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "final_results.csv").write_text("precious\n")
    return outside


def _refused(capsys, *argv) -> str:
    code = cli.main(["--platform", "sim", *argv])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("geko: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("name", ["results", "logs", "baseline", "search", "benchmarks",
                                  "exports", "report", "final_libs", ".snakemake",
                                  "search/data"])
def test_a_directory_linked_outside_the_workdir_is_refused_and_left_alone(
        tmp_path, capsys, no_snakemake, name):
    outside = _outside(tmp_path)
    workdir = tmp_path / "w"
    (workdir / name).parent.mkdir(parents=True)
    (workdir / name).symlink_to(outside)
    line = _refused(capsys, "--search", *INLINE, "-w", str(workdir))
    assert f"{workdir / name} is a symlink to {outside}, outside the workdir {workdir}" in line
    assert sorted(p.name for p in outside.iterdir()) == ["final_results.csv"]
    assert (outside / "final_results.csv").read_text() == "precious\n"
    assert not (workdir / "geko_config.yaml").exists()  # nothing written before the refusal


def test_a_report_html_linked_to_an_outside_file_is_refused(tmp_path, capsys, no_snakemake):
    outside = _outside(tmp_path) / "final_results.csv"
    workdir = tmp_path / "w"
    workdir.mkdir()
    # a campaign to continue (`geko -w W --report`), its report linked outside
    (workdir / "geko_config.yaml").write_text(yaml.safe_dump(
        {"mode": "search", "platform": "sim", "workload_inline": " ".join(INLINE[1:])}))
    (workdir / "report.html").symlink_to(outside)
    line = _refused(capsys, "-w", str(workdir), "--report")
    assert f"{workdir / 'report.html'} is a symlink to {outside}" in line
    assert outside.read_text() == "precious\n"


def test_a_dangling_link_outside_is_refused_by_where_it_would_lead(tmp_path):
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / "results").symlink_to(tmp_path / "nowhere")
    assert bounds.links_out(workdir) == [(workdir / "results", tmp_path / "nowhere")]


def test_links_that_stay_inside_the_workdir_are_left_alone(tmp_path):
    workdir = tmp_path / "w"
    (workdir / "real").mkdir(parents=True)
    (workdir / "results").symlink_to(workdir / "real")
    (workdir / "real" / "up").symlink_to("..")  # the workdir itself: inside
    (workdir / "loop").symlink_to("loop")
    assert bounds.links_out(workdir) == []
    # a workdir reached through a link of its own is no link under it
    (tmp_path / "alias").symlink_to(workdir)
    assert bounds.links_out(tmp_path / "alias") == []
    bounds.refuse_links_out(tmp_path / "alias")


@pytest.mark.slow
def test_the_snakemake_route_refuses_a_link_outside_before_anything_changes(campaign, tmp_path):
    outside = _outside(tmp_path)
    c = campaign(workload_log="", workload_inline=" ".join(INLINE[1:]), mode="search")
    c.workdir.mkdir()
    (c.workdir / "results").symlink_to(outside)
    proc = c.snakemake("final_libs", check=False)
    assert proc.returncode != 0
    assert f"{c.workdir / 'results'} is a symlink to {outside}, outside the workdir" in \
        proc.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["final_results.csv"]
    assert (outside / "final_results.csv").read_text() == "precious\n"
    assert sorted(p.name for p in c.workdir.iterdir()) == ["results"]
