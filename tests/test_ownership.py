"""No finished result is ever destroyed: whose a workdir is (run_state.json and the outputs'
stamps), refused through the real `geko` entry point (in process: a refusal starts nothing);
which platform a run that names none gets; what `geko status` says of damaged outputs."""
import json
from pathlib import Path

import pytest
import yaml

from snakemake import cli as snakemake_cli

from geko_lib import cli
from geko_lib.campaign import integrity, layout, ownership, state as campaign_state
from geko_lib.platforms import detect

INLINE = "1024 1024 1 1024 B B S N T"
OTHER = "2048 512 1 1024 B B S N T"


def identity(**config):
    return campaign_state.identity(campaign_state.with_defaults(
        {"platform": "sim", "arch": "gfx950", "workload_log": "", "workload_list": "",
         "workload_inline": INLINE, **config}))


def finished_workdir(workdir: Path, mode="search", **config) -> dict:
    """A workdir holding a finished campaign as its stamps say: workload.yaml, final_libs/ and
    results/metrics.json stamped for ``mode`` (run_state.json recorded too)."""
    campaign = identity(**config)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / layout.WORKLOAD).write_text("- {M: 1024}\n")
    integrity.stamp(workdir / layout.WORKLOAD, integrity.expected_provenance(
        campaign, mode, layout.WORKLOAD), {})
    final = workdir / layout.FINAL_LIBS
    final.mkdir()
    (final / "lib.yaml").write_text("kept: 1\n")
    integrity.stamp(final, integrity.expected_provenance(campaign, mode, layout.FINAL_LIBS), {})
    metrics = workdir / layout.METRICS
    metrics.parent.mkdir()
    metrics.write_text("{}\n")
    integrity.stamp(metrics, integrity.expected_provenance(campaign, mode, layout.METRICS), {})
    campaign_state.record(workdir, campaign, mode)
    return campaign


def geko_main(*args, capsys):
    code = cli.main([*args, "--platform", "sim"])
    out = capsys.readouterr()
    return code, out.out + out.err


# --- ownership -----------------------------------------------------------------------------------

def test_a_mode_change_on_a_finished_campaign_is_refused_through_geko(tmp_path, capsys):
    workdir = tmp_path / "run"
    finished_workdir(workdir, "search")
    before = sorted(p.name for p in workdir.iterdir())
    code, text = geko_main("--tune", "--arch", "gfx950", "--inline", *INLINE.split(),
                           "-w", str(workdir), "--until", "configure", capsys=capsys)
    assert code == 2
    assert f"{workdir}: this workdir holds a finished result (final_libs) of a search " \
           "campaign" in text
    assert "this tune run would replace" in text
    assert "new --workdir" in text and "--discard-results" in text
    assert sorted(p.name for p in workdir.iterdir()) == before  # no geko_config.yaml written
    assert (workdir / "final_libs" / "lib.yaml").is_file()


def test_without_run_state_the_stamps_say_whose_the_workdir_is(tmp_path, capsys):
    workdir = tmp_path / "run"
    finished_workdir(workdir, "search")
    (workdir / "run_state.json").unlink()
    code, text = geko_main("--search", "--inline", *OTHER.split(), "-w", str(workdir),
                           capsys=capsys)
    assert code == 2
    assert "holds a finished result (final_libs)" in text and "workload_sha256" in text
    assert not (workdir / "geko_config.yaml").exists()


def test_without_run_state_an_unfinished_campaign_of_another_workload_is_refused(tmp_path):
    workdir = tmp_path / "run"
    finished_workdir(workdir, "search")
    for rel in ("run_state.json",):
        (workdir / rel).unlink()
    integrity.remove_output(workdir / layout.FINAL_LIBS)
    integrity.remove_output(workdir / layout.METRICS)
    with pytest.raises(ownership.OtherCampaign) as caught:
        ownership.check(workdir, identity(workload_inline=OTHER), "search")
    assert "has no run_state.json, and the stamp of workload.yaml says it holds" in \
        str(caught.value)


def _delete_every_stamp(workdir: Path) -> None:
    for path in workdir.rglob("*"):
        if integrity.is_stamp(path) or path.name == "run_state.json":
            path.unlink()


@pytest.mark.parametrize("finished", ["final_libs", "results/metrics.json"])
@pytest.mark.parametrize("workload", [OTHER, INLINE])
def test_a_finished_campaign_without_any_stamp_is_refused_not_replaced(tmp_path, capsys,
                                                                        finished, workload):
    # issue 34: with every stamp and run_state.json deleted, a run of another workload (or of
    # the same: nothing says it is) replaced the finished result, exit 0
    workdir = tmp_path / "run"
    finished_workdir(workdir, "search")
    _delete_every_stamp(workdir)
    if finished == "final_libs":
        (workdir / layout.METRICS).unlink()
    else:
        integrity.remove_output(workdir / layout.FINAL_LIBS)
    before = {p: p.read_bytes() for p in workdir.rglob("*") if p.is_file()}
    code, text = geko_main("--search", "--inline", *workload.split(), "-w", str(workdir),
                           capsys=capsys)
    assert code == 2
    assert f"this workdir holds a finished result ({finished}) with no stamp and no " \
           "run_state.json: nothing says whose campaign it is" in text
    assert "--discard-results" in text and "\nTraceback" not in text
    assert {p: p.read_bytes() for p in workdir.rglob("*") if p.is_file()} == before
    # the way out it names lets the run go ahead
    reasons = ownership.check(workdir, identity(workload_inline=workload), "search",
                              discard=True)
    assert reasons and "with no stamp" in reasons[0]


def test_a_run_state_json_that_is_a_directory_is_refused(tmp_path, capsys):
    workdir = tmp_path / "run"
    (workdir / "run_state.json").mkdir(parents=True)
    code, text = geko_main("--search", "--inline", *INLINE.split(), "-w", str(workdir),
                           capsys=capsys)
    assert code == 2
    assert f"{workdir / 'run_state.json'} is a directory, not geko's run state" in text


def test_discard_results_lets_the_run_go_ahead_and_says_what_it_discards(tmp_path):
    workdir = tmp_path / "run"
    finished_workdir(workdir, "search")
    reasons = ownership.check(workdir, identity(), "tune", discard=True)
    assert reasons and "finished result (final_libs)" in reasons[0]
    # the same campaign and mode is no other campaign
    assert ownership.check(workdir, identity(), "search") == []


def test_discard_results_is_passed_to_snakemake_not_saved(tmp_path):
    args = cli.parser().parse_args(["--search", "--inline", *INLINE.split(), "-w",
                                    str(tmp_path / "run"), "--platform", "sim",
                                    "--discard-results"])
    config, _ = cli.build_config(args, environ={})
    assert config["discard_results"] is True
    assert cli.saved_config(config)["discard_results"] is False
    overrides = cli.config_overrides(config)
    # as snakemake itself reads --config: a boolean, which the config schema takes
    assert snakemake_cli.parse_config(overrides[1:]) == {"discard_results": True}


def test_run_state_takes_the_new_campaigns_workload_when_rewritten(tmp_path):
    workdir = tmp_path / "run"
    finished_workdir(workdir, "search")
    campaign_state.record(workdir, identity(workload_inline=OTHER), "search")
    state = json.loads((workdir / "run_state.json").read_text())
    assert state["input_path"] == f"inline: {OTHER}"


# --- the platform of a run that names none ------------------------------------------------------

def test_a_hipblaslt_checkout_around_the_current_directory_is_rocm(tmp_path):
    checkout = tmp_path / "hipblaslt"
    for sub in ("tensilelite", "library", "utilities/work"):
        (checkout / sub).mkdir(parents=True)
    choice = detect.choose({}, cwd=checkout / "utilities" / "work",
                           package_root=tmp_path / "elsewhere", root=tmp_path / "root")
    assert (choice.platform, choice.hipblaslt_path) == ("rocm", str(checkout))


def test_a_rocm_install_without_a_checkout_is_refused_saying_how_to_point_at_one(tmp_path,
                                                                                 capsys,
                                                                                 monkeypatch):
    root = tmp_path / "root"
    (root / "opt" / "rocm").mkdir(parents=True)
    monkeypatch.setattr(detect, "ROOT", root)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["--search", "--inline", *INLINE.split(), "-w", str(tmp_path / "run")])
    text = capsys.readouterr().err
    assert code == 2
    assert "a ROCm install is present (/opt/rocm) but no hipBLASLt checkout" in text
    assert "--hipblaslt PATH" in text and "--platform sim" in text
    assert not (tmp_path / "run").exists()


def test_an_nvidia_gpu_is_cuda_and_no_gpu_stack_is_sim(tmp_path):
    root = tmp_path / "root"
    assert detect.choose({}, cwd=tmp_path, package_root=tmp_path,
                         root=root).platform == "sim"
    (root / "dev").mkdir(parents=True)
    (root / "dev" / "nvidia0").touch()
    assert detect.choose({}, cwd=tmp_path, package_root=tmp_path, root=root).platform == "cuda"


def test_sim_says_why_on_its_first_line(tmp_path, monkeypatch):
    monkeypatch.setattr(detect, "choose", lambda environ: detect.Choice("sim", "", "no GPU here"))
    args = cli.parser().parse_args(["--search", "--inline", *INLINE.split(), "-w",
                                    str(tmp_path / "run")])
    notes = []
    config, _ = cli.build_config(args, environ={}, notes=notes)
    assert config["platform"] == "sim"
    from geko_lib import terminal

    assert terminal.platform_notice(config, *notes).endswith(
        "(platform chosen because: no GPU here)")


# --- retry and retirement ---------------------------------------------------------------------

def test_no_retry_leaves_a_failed_job_alone_and_retry_tries_it_again(tmp_path):
    from geko_lib import failures

    phase = tmp_path / "search"
    token_at_run = failures.rerun_token(phase, "gemms_0-1", retire_after=0)
    failures.record_run(phase, "gemms_0-1", failed=True)
    assert failures.rerun_token(phase, "gemms_0-1", 0) != token_at_run  # retry: rerun it
    assert failures.rerun_token(phase, "gemms_0-1", 0, retry=False) == token_at_run
    failures.record_run(phase, "gemms_2-3", failed=False)
    ok = failures.rerun_token(phase, "gemms_2-3", 0)
    assert failures.rerun_token(phase, "gemms_2-3", 0, retry=False) == ok


def test_shape_retirement_is_off_by_default():
    from geko_lib.config_schema import schema_defaults

    assert schema_defaults()["retire_after"] == 0


def test_the_search_baseline_uses_the_originals_iteration_counts():
    from geko_lib.bench_formats import rows

    config = campaign_state.with_defaults({})
    assert rows.baseline_duration(config) is None  # search/tune: iters 100, cold 20
    assert rows.iterations(rows.baseline_duration(config), 4.8) == (100, 20)
    bench = campaign_state.with_defaults({"bench_timing": "duration"})
    assert rows.iterations(rows.baseline_duration(bench), 4.8)[0] == 104167


def test_geko_bench_times_for_its_duration(tmp_path):
    args = cli.parser().parse_args(["--bench", "--inline", *INLINE.split(), "-w",
                                    str(tmp_path / "run"), "--platform", "sim"])
    config, target = cli.build_config(args, environ={})
    assert (target, config["bench_timing"]) == ("bench", "duration")
    args = cli.parser().parse_args(["--search", "--inline", *INLINE.split(), "-w",
                                    str(tmp_path / "run"), "--platform", "sim"])
    assert cli.build_config(args, environ={})[0]["bench_timing"] == "iterations"


# --- what the terminal gets from Snakemake's output -------------------------------------------

def test_snakemakes_output_goes_to_its_log_and_the_terminal_gets_phase_lines(tmp_path):
    from geko_lib.campaign import snakemake_output

    said = []
    out = snakemake_output.Output(tmp_path, ["snakemake", "final_libs"])
    (tmp_path / "logs").mkdir(exist_ok=True)
    (tmp_path / "logs" / "winners.log").write_text("GEKO:ERROR [winners:main] boom\n")
    for line in ["Building DAG of jobs...", "Job stats:", "localrule ingest:",
                 "    output: workload.yaml", "rule baseline_part:", "rule baseline_part:",
                 "GEKO:WARNING [sim:bench] slow", "localcheckpoint search_configure:",
                 "Error in rule winners:", "    jobid: 7",
                 "    log: logs/winners.log (check log file(s) for error details)",
                 "1 of 13 steps (8%) done"]:
        out.feed(line, said.append)
    out.close()
    assert said == ["geko: Baseline phase...", "GEKO:WARNING [sim:bench] slow",
                    "geko: Search phase..."]
    assert "Job stats:" in (tmp_path / "logs" / "snakemake.log").read_text()
    assert out.failed == [("winners", "logs/winners.log")]
    assert out.failure_lines() == [f"failed job winners: its log {tmp_path}/logs/winners.log:",
                                   "    GEKO:ERROR [winners:main] boom"]


def test_a_lock_exception_is_noticed(tmp_path):
    from geko_lib.campaign import snakemake_output

    out = snakemake_output.Output(tmp_path, ["snakemake"])
    out.feed("LockException:", lambda line: None)
    assert out.locked


def test_the_plain_progress_line_when_the_stream_is_no_terminal(tmp_path):
    import io

    from geko_lib.campaign import progress

    chunks = tmp_path / "search" / "chunks"
    chunks.mkdir(parents=True)
    (chunks / "gemms_0-1.yaml").write_text(yaml.safe_dump([{"M": 1}, {"M": 2}]))
    stream = io.StringIO()
    bar = progress.CampaignBar(tmp_path, "search", stream)
    bar.refresh()
    bar.refresh()  # nothing changed: no second line
    (tmp_path / "search" / "data").mkdir()
    (tmp_path / "search" / "data" / "gemms_0-1.csv").write_text("x\n")
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "Search in progress: 0/2 [n_completed: 0, n_failed: 0]"
    assert lines[1].startswith("Search in progress: 2/2 [") and \
        lines[1].endswith(", n_completed: 2, n_failed: 0]")
    assert len(lines) == 2 and "\r" not in stream.getvalue()


# --- geko status believes only what the stamps prove ------------------------------------------

def test_status_names_a_damaged_metrics_json_and_gives_no_figures(tmp_path, capsys):
    workdir = tmp_path / "run"
    finished_workdir(workdir, "search")
    (workdir / layout.METRICS).write_text('{"counts": {"n_kept": 9}}\n')  # edited after the run
    code = cli.main(["status", str(workdir)])
    text = capsys.readouterr().out
    assert code == 0
    assert "state:     damaged (1 output(s) damaged or stale (results/metrics.json: content " \
           "differs from its stamp" in text
    assert "a plain rerun recomputes them" in text
    assert "damaged:   results/metrics.json: content differs from its stamp" in text
    assert "no figures: results/metrics.json is damaged or stale" in text
    assert "finished" not in text


@pytest.mark.parametrize("edit", ["mode edited", "log edited"])
def test_status_says_a_plain_rerun_is_refused_where_it_is(tmp_path, capsys, edit):
    # issue 34: status said "a plain rerun recomputes them" of a rerun that is refused
    workdir = tmp_path / "run"
    log = tmp_path / "app.yaml"
    log.write_text("- {function: matmul, transA: T, transB: N, M: 1024, N: 1024, K: 1024, "
                   "batch_count: 1, lda: 1024, ldb: 1024, ldc: 1024, ldd: 1024, "
                   "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, "
                   "compute_type: c_f32_r}\n")
    source = {"workload_inline": "", "workload_log": str(log)}
    finished_workdir(workdir, "search", **source)
    saved = {"mode": "search", "platform": "sim", "arch": "gfx950", "keep_thr": 0.0, **source}
    if edit == "mode edited":
        saved["mode"] = "tune"
    else:
        log.write_text(log.read_text().replace("K: 1024", "K: 512"))
    (workdir / "geko_config.yaml").write_text(yaml.safe_dump(saved))
    code = cli.main(["status", str(workdir)])
    text = capsys.readouterr().out
    assert code == 0
    assert "state:     refused (a plain rerun is refused: " in text
    assert "--discard-results" in text
    assert "a plain rerun recomputes" not in text and "a rerun:   recomputes" not in text
    # the command refuses that rerun, as status said
    code = cli.main(["-w", str(workdir)])
    assert code == 2 and "--discard-results" in capsys.readouterr().err


def test_status_after_a_kill_says_a_plain_rerun_resumes(tmp_path, capsys):
    workdir = tmp_path / "run"
    finished_workdir(workdir, "search")
    (workdir / ".snakemake" / "locks").mkdir(parents=True)
    (workdir / ".snakemake" / "locks" / "0.input.lock").write_text("x\n")
    cli.main(["status", str(workdir)])
    text = capsys.readouterr().out
    assert "a plain rerun (geko, or the same snakemake command) clears it and resumes" in text
    assert "--unlock" not in text


def test_a_second_geko_command_in_the_workdir_is_refused_in_one_line(tmp_path):
    from geko_lib.campaign import lock

    with lock.hold(tmp_path):
        with pytest.raises(lock.CampaignRunning) as caught:
            with lock.hold(tmp_path):
                pass
        assert lock.command_running(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path}: a campaign is running there (geko pid ")
    assert "\n" not in message
    assert not lock.command_running(tmp_path)


# --- through the real entry points (slow: they run snakemake) ----------------------------------

@pytest.mark.slow
def test_a_small_search_prints_the_originals_lines_and_snakemake_keeps_its_workdir(tmp_path):
    import subprocess
    import sys

    from .conftest import SNAKEFILE
    from .test_cli import GEKO

    proc = subprocess.run([*GEKO, "--search", "--inline", *INLINE.split(), "--platform", "sim",
                           "-w", "run", "--cores", "2"], cwd=tmp_path, capture_output=True,
                          text=True)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(lines) < 40, "\n".join(lines)
    assert "geko: Search phase..." in lines and "localrule" not in proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-2] == "geko: Search workflow completed successfully!"
    assert "Job stats:" in (tmp_path / "run" / "logs" / "snakemake.log").read_text()
    # the tune review on the same workdir through snakemake: refused, the search result kept
    review = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "final_libs",
         "--configfile", str(tmp_path / "run" / "geko_config.yaml"), "--cores", "1",
         "--until", "configure", "--config", "mode=tune"],
        cwd=tmp_path, capture_output=True, text=True)
    assert review.returncode != 0
    assert f"{tmp_path / 'run'}: this workdir holds a finished result" in review.stderr
    assert "--discard-results" in review.stderr
    assert (tmp_path / "run" / "final_libs").is_dir() and (tmp_path / "run" / "results").is_dir()
