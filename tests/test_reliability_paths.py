"""Paths (issue 24): a symlinked --lock-dir, a hard-linked lock file, symlink loops, a workdir
that is a file or under one, a read-only workdir, a full disk in a phase, names that are not
UTF-8; a symlink out of the workdir made while a run goes on (issue 41). Each is refused with
one line naming the path and what is wrong, exit non-zero, nothing lost and no traceback: through
the ``geko`` command in process (before snakemake starts) and through the workflow's phases run
in process as their jobs run them (``run_phase``: jobs of the rule table)."""

import errno
import os
from pathlib import Path

import pytest

from geko_lib import cli, devices, files, platforms, search, workload
from geko_lib.bench_formats import rows as bench_rows, summary
from geko_lib.campaign import layout, progress as campaign_progress, state
from geko_lib.library import exports

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

INLINE = ["--inline", "1024", "1024", "1", "1024", "B", "B", "S", "N", "T"]


@pytest.fixture(autouse=True)
def no_snakemake(monkeypatch):
    """Every case here is refused before the workflow would run."""
    def refuse(*args, **kwargs):
        raise AssertionError("snakemake was started")
    monkeypatch.setattr(campaign_progress, "call", refuse)


def _geko(capsys, *argv) -> str:
    """The one line ``geko`` prints, checked to be one line without a traceback and a
    non-zero exit."""
    code = cli.main(["--bench", "--platform", "sim", *argv])
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("geko: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _loop(tmp_path) -> Path:
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    return tmp_path / "loop_a"


# --- the lock directory and lock files --------------------------------------------------------

def test_symlinked_lock_dir_is_refused_by_geko_as_by_the_jobs(tmp_path, capsys):
    target = tmp_path / "real_locks"
    target.mkdir(mode=0o700)
    link = tmp_path / "locks"
    link.symlink_to(target)
    line = _geko(capsys, *INLINE, "-w", str(tmp_path / "w"), "--lock-dir", str(link))
    assert f"{link} is a symlink" in line and "--lock-dir" in line
    # the jobs (the snakemake route) refuse the same path the same way
    with pytest.raises(devices.UnsafeLockError, match=f"{link} is a symlink"):
        with devices.lease([0], lock_dir=str(link), namespace="sim", timeout=1):
            pass
    assert not list(target.iterdir()) and not (tmp_path / "w").exists()


def test_a_lock_dir_given_relative_is_kept_unresolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert cli.unresolved("link") == str(tmp_path / "link")


def test_hard_linked_device_lock_file_is_refused_and_the_other_name_untouched(tmp_path):
    lock_dir = tmp_path / "locks"
    lock_dir.mkdir(mode=0o700)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    os.link(precious, lock_dir / "sim-dev0-slot0.lock")
    with pytest.raises(devices.UnsafeLockError, match="has 2 hard links"):
        with devices.lease([0], lock_dir=lock_dir, namespace="sim", timeout=1):
            pass
    assert precious.read_text() == "keep me\n"


def test_hard_linked_command_lock_is_refused_by_geko_and_the_other_name_untouched(
        tmp_path, capsys):
    workdir = tmp_path / "w"
    (workdir / ".snakemake").mkdir(parents=True)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    os.link(precious, workdir / ".snakemake" / "geko_command.lock")
    line = _geko(capsys, *INLINE, "-w", str(workdir))
    assert "geko_command.lock has 2 hard links" in line
    assert precious.read_text() == "keep me\n"


# --- paths given on the command line ----------------------------------------------------------

@pytest.mark.parametrize("flag", ["--workload-log", "--list", "--workdir", "--combine_with"])
def test_symlink_loop_is_refused_naming_the_flag_and_path(tmp_path, capsys, flag):
    loop = _loop(tmp_path)
    source = [] if flag in ("--workload-log", "--list") else INLINE
    workdir = [] if flag == "--workdir" else ["-w", str(tmp_path / "w")]
    line = _geko(capsys, *source, *workdir, flag, str(loop))
    assert f"{flag} {loop}: is a symlink loop" in line
    assert not (tmp_path / "w").exists()


def test_workdir_that_is_a_file_is_refused_and_the_file_kept(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("mine\n")
    line = _geko(capsys, *INLINE, "-w", str(path))
    assert line.endswith(f"--workdir {path}: is a file, not a directory")
    assert path.read_text() == "mine\n"


def test_workdir_under_a_file_is_refused_naming_the_file(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("mine\n")
    line = _geko(capsys, *INLINE, "-w", str(path / "run" / "one"))
    assert f"--workdir {path / 'run' / 'one'}: {path} is a file, not a directory" in line
    assert path.read_text() == "mine\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_read_only_workdir_is_refused(tmp_path, capsys):
    workdir = tmp_path / "w"
    workdir.mkdir()
    workdir.chmod(0o555)
    try:
        line = _geko(capsys, *INLINE, "-w", str(workdir))
    finally:
        workdir.chmod(0o755)
    assert f"--workdir {workdir}: is not writable by this user" in line
    assert not list(workdir.iterdir())


def _fail_writes(monkeypatch, code: int, under=None):
    """The atomic writer's write fails as the system's would (a full disk, a read-only file
    system: an OSError naming no file) for files under ``under`` (every file where None)."""
    real = files._write_durably

    def failing(path, data, **where):
        if under is None or Path(path).resolve().is_relative_to(under):
            raise OSError(code, os.strerror(code))
        return real(path, data, **where)
    monkeypatch.setattr(files, "_write_durably", failing)


@pytest.mark.parametrize("code, what", [(errno.EROFS, "is on a read-only file system"),
                                        (errno.ENOSPC, "no space left on the device"),
                                        (errno.EACCES, "permission denied")])
def test_a_workdir_that_cannot_be_written_is_one_line_naming_the_file(
        tmp_path, capsys, monkeypatch, code, what):
    _fail_writes(monkeypatch, code)
    workdir = tmp_path / "w"
    line = _geko(capsys, *INLINE, "-w", str(workdir))
    assert f"{workdir / cli.CONFIG_NAME}: {what}" in line


def test_name_that_is_not_utf8_is_refused_naming_it_escaped(tmp_path, capsys):
    raw = os.fsencode(tmp_path) + b"/caf\xe9.yaml"
    Path(os.fsdecode(raw)).write_text("- {M: 1}\n")
    line = _geko(capsys, "--workload-log", os.fsdecode(raw), "-w", str(tmp_path / "w"))
    assert f"--workload-log {tmp_path}/caf\\xe9.yaml: the name is not valid UTF-8" in line
    line = _geko(capsys, *INLINE, "-w", os.fsdecode(os.fsencode(tmp_path) + b"/w\xff"))
    assert "w\\xff: the name is not valid UTF-8" in line


def test_subcommands_tell_a_symlink_loop_in_one_line(tmp_path, capsys):
    loop = _loop(tmp_path)
    code = cli.main(["coverage", "--library", str(loop), "--workload", str(loop)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert str(loop) in err


# --- a full disk in the workflow's phases -----------------------------------------------------

BENCH_RULES = ("ingest", "baseline_part", "baseline", "summarize")


def bench_steps(tmp_path, log_file=None, n_gemms: int = 1) -> list[tuple[str, dict]]:
    """The bench rules' jobs of a workload (a 1-GEMM inline one, or the log ``log_file`` of
    ``n_gemms`` GEMMs) on one device, as ``run_phase``'s rule and arguments: the campaign's
    config, what the workflow works out from it when it starts (common.smk's GIVEN), the job's
    part and the parts the merge gathers."""
    kind, value = ("log", str(log_file)) if log_file else ("inline", " ".join(INLINE[1:]))
    config = state.with_defaults({
        "platform": "sim", "arch": "gfx950", "devices": [0], "mode": "search",
        "lock_dir": str(tmp_path / "locks"), f"workload_{kind}": value,
        "bench_timing": "duration", "bench_duration": 0.01, "keep_thr": 0.5})
    given = {"workload_source": [value] if log_file else [], "workload_kind": kind,
             "workload_value": value, "stem": layout.benchmark_stem(kind, value),
             "baseline_duration": bench_rows.baseline_duration(config)}
    parts = summary.part_names(n_gemms, 1)  # one device: one part
    return [(rule, {"config": config, "given": given, "over": {"part": parts},
                    "wildcards": {"part": parts[0]} if rule == "baseline_part" else None})
            for rule in BENCH_RULES]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "logs" not in p.parts}


def test_full_disk_in_each_phase_is_one_line_in_its_log_and_nothing_lost(
        tmp_path, monkeypatch, capsys, run_phase):
    workdir = tmp_path / "w"
    workdir.mkdir()
    steps = bench_steps(tmp_path)
    jobs_ = [run_phase(rule, workdir, **how) for rule, how in steps]  # writes every output
    before = _snapshot(workdir)
    assert layout.SUMMARY in before
    _fail_writes(monkeypatch, errno.ENOSPC, under=workdir)
    for (rule, how), job in zip(steps, jobs_):
        with pytest.raises(SystemExit) as ended:  # as the job's workflow script ends
            run_phase(rule, workdir, script=True, **how)
        assert ended.value.code == 1
        text = Path(job.log[0]).read_text()
        errors = [line for line in text.splitlines() if "ERROR" in line]
        assert "Traceback" not in text and len(errors) == 1, text
        written = next(iter(job.output))
        assert f"{workdir / written}: no space left on the device" in errors[0]
        assert _snapshot(workdir) == before, rule  # every earlier output as it was
    assert "Traceback" not in capsys.readouterr().err


def test_symlinked_command_lock_is_refused_and_its_target_untouched(tmp_path, capsys):
    workdir = tmp_path / "w"
    (workdir / ".snakemake").mkdir(parents=True)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    (workdir / ".snakemake" / "geko_command.lock").symlink_to(precious)
    line = _geko(capsys, *INLINE, "-w", str(workdir))
    assert "geko_command.lock is a symlink" in line
    assert precious.read_text() == "keep me\n"


# --- what reaches Snakemake as a path (issue 34) -------------------------------------------------

@pytest.mark.parametrize("token", ["<script>", "<results>"])
def test_a_workload_path_with_a_pathvar_token_is_refused_naming_it(tmp_path, capsys, token):
    # Snakemake expands <name> in a rule's paths: <script> failed with
    # UndefinedPathvarException, <results> would have named another file
    log = tmp_path / f"a{token}b" / "log.yaml"
    log.parent.mkdir()
    log.write_text("- {function: matmul, transA: T, transB: N, M: 64, N: 64, K: 64}\n")
    line = _geko(capsys, "--workload-log", str(log), "-w", str(tmp_path / "w"))
    assert f"--workload-log {log}: Snakemake reads {token} in a path as one of its path " \
           "variables" in line
    assert not (tmp_path / "w").exists()


@pytest.mark.slow
@pytest.mark.parametrize("case", ["workdir is a file", "workload with <script>"])
def test_the_snakemake_route_refuses_a_bad_path_in_geko_s_line(campaign, tmp_path, case):
    if case == "workdir is a file":
        c = campaign()
        c.workdir.write_text("not a directory\n")
        c.config["workdir"] = str(c.workdir)
        expected = f"geko: error: config workdir {c.workdir}: is a file, not a directory"
    else:
        log = tmp_path / "a<script>b" / "log.yaml"
        log.parent.mkdir()
        log.write_text("- {function: matmul, transA: T, transB: N, M: 64, N: 64, K: 64}\n")
        c = campaign(workload_log=str(log))
        expected = (f"geko: error: config workload_log {log}: Snakemake reads <script> in a "
                    "path as one of its path variables")
    proc = c.snakemake("bench", check=False)
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr


# --- a symlink made while a run goes on (issue 41) ----------------------------------------------
# The start of a run refuses a link under the workdir that leads out (test_reliability_bounds);
# one made after that check is met by the writer of every job's outputs, which refuses it
# naming the link and writes nothing through it.

def _outside_with_exports(tmp_path) -> Path:
    """A directory outside the workdir holding files of the exports' names."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("tunableop_results.csv", "hipblaslt_tuning_override.txt"):
        (outside / name).write_text("precious\n")
    return outside


def _relink_outside(directory: Path, outside: Path) -> None:
    """``directory`` (of the workdir) replaced by a symlink to ``outside``, as a user or a
    script of theirs could do while the run goes on."""
    directory.rename(directory.with_name(directory.name + ".moved"))
    directory.symlink_to(outside)


def _snapshot_outside(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in outside.iterdir()}


def _exports_steps(tmp_path, workdir: Path, run_phase) -> dict:
    """A sim search campaign in ``workdir`` up to results/final_results.csv (its kept kernels
    the sim's dense search winners of one GEMM, written as the analyze phase would), its
    ingest run as the workflow runs it; the config the exports job runs with."""
    config = {"platform": "sim", "arch": "gfx950", "mode": "search", "devices": [0],
              "workload_inline": " ".join(INLINE[1:]), "lock_dir": str(tmp_path / "locks")}
    run_phase("ingest", workdir, config, given={
        "workload_source": [], "workload_kind": "inline", "workload_value": config[
            "workload_inline"]})
    problems = workload.problems(workload.read(workdir / layout.WORKLOAD, support=ANY))
    winners = search.winners(platforms.get(config).search(problems, tmp_path / "measured", 0))
    (workdir / layout.FINAL_RESULTS).parent.mkdir()
    winners[[c for c in exports.IDENTITY if c in winners]].assign(
        solution_index_tuned=winners["solution_index"],
        solution_name_tuned=winners["solution_name"], us_tuned=winners["us"],
        error_tuned=0.001).to_csv(workdir / layout.FINAL_RESULTS, index=False)
    winners.to_csv(workdir / layout.WINNERS, index=False)
    return config


def test_an_exports_link_made_during_a_run_is_refused_and_the_outside_file_kept(
        tmp_path, capsys, run_phase):
    """Before: the export job wrote through ``W/exports -> outside``, exit 0, and overwrote
    the outside tunableop_results.csv."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    config = _exports_steps(tmp_path, workdir, run_phase)
    job = run_phase("exports", workdir, config)  # the first run's exports: inside
    assert (workdir / job.output.tunableop).is_file()
    outside = _outside_with_exports(tmp_path)
    before = _snapshot_outside(outside)
    _relink_outside(workdir / "exports", outside)
    with pytest.raises(SystemExit) as ended:  # as the job's workflow script ends
        run_phase("exports", workdir, config, script=True)
    assert ended.value.code == 1
    text = Path(job.log[0]).read_text()
    errors = [line for line in text.splitlines() if "ERROR" in line]
    assert "Traceback" not in text and len(errors) == 1, text
    assert f"{workdir / 'exports'} is a symlink to {outside}, outside the workdir " \
           f"{workdir}" in errors[0]
    assert _snapshot_outside(outside) == before  # untouched: no export, stamp nor temporary
    assert "Traceback" not in capsys.readouterr().err


def test_the_writer_refuses_a_link_out_on_the_way_and_writes_nothing(tmp_path):
    workdir, outside = tmp_path / "w", _outside_with_exports(tmp_path)
    before = _snapshot_outside(outside)
    deep = workdir / "search" / "data" / "gemms_0-0.csv"
    with files.confined_to(workdir):
        files.write_text(deep, "first\n")
        _relink_outside(workdir / "search", outside)  # a part above the file's directory
        with pytest.raises(files.LinkOutOfWorkdir, match=f"{workdir / 'search'} is a symlink "
                           f"to {outside}, outside the workdir {workdir}"):
            files.write_text(deep, "second\n")
        with pytest.raises(files.LinkOutOfWorkdir):  # a file's own directory, a new file
            files.write_text(workdir / "search" / "tunableop_results.csv", "second\n")
        with pytest.raises(files.LinkOutOfWorkdir):
            with files.staged_dir(workdir / "search" / "libs"):
                pass
    assert _snapshot_outside(outside) == before  # no file, no directory made there
    # outside the block, or for a path outside the workdir, the writer writes where it is told
    files.write_text(outside / "notes.txt", "mine\n")
    assert (outside / "notes.txt").read_text() == "mine\n"


def test_a_link_made_while_a_directory_output_is_built_is_refused_at_the_swap(tmp_path):
    workdir, outside = tmp_path / "w", _outside_with_exports(tmp_path)
    (workdir / "final_libs").mkdir(parents=True)
    before = _snapshot_outside(outside)
    with files.confined_to(workdir):
        with pytest.raises(files.LinkOutOfWorkdir, match=f"{workdir / 'final_libs'} is a "
                           "symlink"):
            with files.staged_dir(workdir / "final_libs" / "lib") as staging:
                (staging / "lib.yaml").write_text("new\n")
                _relink_outside(workdir / "final_libs", outside)
    assert _snapshot_outside(outside) == before
    assert list((workdir / "final_libs.moved").iterdir()) == []  # the staging removed


def test_links_that_stay_inside_the_workdir_are_written_through(tmp_path):
    """As the start of a run leaves them alone (campaign.bounds), so does the writer."""
    workdir = tmp_path / "w"
    (workdir / "real").mkdir(parents=True)
    (workdir / "results").symlink_to(workdir / "real")
    (tmp_path / "alias").symlink_to(workdir)  # a workdir reached through a link of its own
    with files.confined_to(tmp_path / "alias"):
        files.write_text(tmp_path / "alias" / "results" / "final_results.csv", "kept\n")
        with files.staged_dir(tmp_path / "alias" / "results" / "libs") as staging:
            (staging / "a.yaml").write_text("a\n")
    assert (workdir / "real" / "final_results.csv").read_text() == "kept\n"
    assert (workdir / "real" / "libs" / "a.yaml").read_text() == "a\n"


def test_a_file_in_the_way_is_one_line_naming_it(tmp_path):
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / "results").write_text("not a directory\n")
    with files.confined_to(workdir), pytest.raises(NotADirectoryError) as refused:
        files.write_text(workdir / "results" / "final_results.csv", "x\n")
    assert refused.value.filename == str(workdir / "results")
