"""A full disk ends the run in one line (issue 34). On a filesystem that filled, 5 of 6
``geko --search`` runs never exited: the geko command's copy of Snakemake's output
(logs/snakemake.log) failed to write, the command stopped reading Snakemake's pipe and waited
for it, and Snakemake, its output gone, waited in its scheduler for ever. Now the command reads
Snakemake's output to its end whatever its log can hold, and ends with one line naming the path
and the space free there (and, for geko's own writes, the space the write needed).

The fast cases inject the full disk (no privileges needed); the slow ones fill a real tmpfs,
which needs mount privileges, and skip where there are none."""

import errno
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from geko_lib import cli, files, path_errors
from geko_lib.campaign import snakemake_output

from .test_cli import GEKO

INLINE = ["--inline", "1024", "1024", "1", "1024", "B", "B", "S", "N", "T"]
NO_SPACE = "no space left on the device (disk full, "


class _FillingLog(io.StringIO):
    """A log file on a disk that fills after ``room`` characters."""

    def __init__(self, room: int):
        super().__init__()
        self.room = room

    def write(self, text):
        if self.tell() + len(text) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(text)


def test_geko_reads_snakemakes_output_to_its_end_when_its_log_fills(tmp_path, monkeypatch,
                                                                     capsys):
    done = tmp_path / "snakemake_ended"
    # Snakemake's part: more output than a pipe holds, then its end (a reader that stops early
    # leaves it writing into a pipe nobody reads)
    child = ("import sys\nfor i in range(20000): print('Snakemake line', i, 'x' * 60)\n"
             f"open({str(done)!r}, 'w').close()\nsys.exit(1)\n")
    monkeypatch.setattr(cli, "snakemake_command",
                        lambda *args, **kwargs: [sys.executable, "-c", child])
    monkeypatch.setattr(snakemake_output, "open",
                        lambda *args, **kwargs: _FillingLog(4096), raising=False)
    workdir = tmp_path / "w"
    code = cli.main(["--search", "--platform", "sim", *INLINE, "-w", str(workdir)])
    err = capsys.readouterr().err
    assert done.exists()  # Snakemake ran to its end
    assert code == 1  # its exit code
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(
        f"geko: error: {workdir / snakemake_output.LOG}: {NO_SPACE}")


def test_a_full_disk_write_names_the_file_the_space_free_and_the_space_needed(
        tmp_path, monkeypatch):
    def full(_fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)
    with pytest.raises(OSError) as caught:
        files.write_text(tmp_path / "summary.csv", "x" * 3000)
    message = path_errors.describe(caught.value)
    assert message.startswith(f"{tmp_path / 'summary.csv'}: {NO_SPACE}")
    assert " free there, 2.9 KiB needed to write it); free some and rerun" in message


def _no_space(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as os.write says it: no file named


@pytest.mark.parametrize("call", ["write", "open", "mkdir"])
def test_a_full_lock_dir_disk_is_told_naming_the_lock_file(tmp_path, monkeypatch, call):
    """A full disk under --lock-dir: one line naming the lock file (or the lock directory it
    could not create) and the space free there, never an errno without a path (issue 41)."""
    from geko_lib import devices
    from geko_lib.errors import GekoError

    lock_dir = tmp_path / "locks"
    if call != "mkdir":
        lock_dir.mkdir(mode=0o700)
    monkeypatch.setattr(devices.os, call, _no_space)
    with pytest.raises(GekoError) as caught:
        with devices.lease([0], lock_dir=lock_dir, namespace="t", timeout=1):
            pass
    message = str(caught.value)
    named = (f"lock directory {lock_dir}" if call == "mkdir"
             else f"lock file {lock_dir / 't-dev0-slot0.lock'}")
    assert message.startswith(f"{named}: {NO_SPACE}") and " free there" in message
    assert "\n" not in message
    monkeypatch.undo()
    if call == "write":  # the lock was let go with its descriptor: the slot is free
        assert devices.busy([0], lock_dir=lock_dir, namespace="t") == []


def test_snakemakes_own_full_disk_line_is_told_naming_its_directory(tmp_path):
    line = ("Error recording metadata for finished job ([Errno 28] No space left on device). "
            f"Please ensure write permissions for the directory {tmp_path}/.snakemake")
    told = snakemake_output.full_disk(line, tmp_path)
    assert told.startswith(f"{tmp_path}/.snakemake: {NO_SPACE}")
    job = f"GEKO:ERROR [jobs:run] {tmp_path}/gemms.csv: {NO_SPACE}0 bytes free there)"
    assert snakemake_output.full_disk(job, tmp_path) == job.split("] ", 1)[1]
    assert snakemake_output.full_disk("GEKO:ERROR [jobs:run] no space left", tmp_path) is None


def _fills_the_disk():
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/w/optimizations/build_A/x.json")


def _fails_its_work():
    raise path_errors.PathError("bad tuning yaml")


def test_a_supervised_job_stopped_by_a_full_disk_is_told_from_a_failed_one(tmp_path):
    """The environment's failure is an EnvironmentFailure (phases.optimize counts none of
    them toward the failure streak or retirement); the job's own failure is not."""
    from geko_lib import jobs
    from geko_lib.errors import EnvironmentFailure

    with pytest.raises(jobs.JobStoppedByEnvironment, match="free some and rerun"):
        jobs.supervise(_fills_the_disk, tmp_path / "a.log", stall_timeout=60, poll=0.05)
    with pytest.raises(jobs.JobFailed, match="exit code 1") as failed:
        jobs.supervise(_fails_its_work, tmp_path / "b.log", stall_timeout=60, poll=0.05)
    assert not isinstance(failed.value, EnvironmentFailure)
    assert isinstance(path_errors.from_os_error(OSError(errno.EDQUOT, "quota")),
                      EnvironmentFailure)


# --- a real full filesystem (slow: real runs; needs mount privileges) -------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A directory on a tmpfs of ``size`` KiB, made by the returned function."""
    mounted = []

    def make(size_kib: int) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs",
                               str(where)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()[:80]})")
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _ends_in_one_line(proc, started: float, workdir: Path) -> None:
    assert time.monotonic() - started < 60, "a full disk took over a minute to end the run"
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text and "--- Logging error ---" not in text, text[-3000:]
    assert f"{workdir}" in text and NO_SPACE in text, text[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("size_kib", [110, 130])  # where 5 of 6 runs hung
def test_geko_on_a_disk_that_fills_ends_in_one_line_within_a_minute(tmp_path, small_disk,
                                                                     size_kib):
    workdir = small_disk(size_kib) / "w"
    started = time.monotonic()
    proc = subprocess.run([*GEKO, "--search", "--platform", "sim", *INLINE, "-w", str(workdir),
                           "--lock-dir", str(tmp_path / "locks"), "--cores", "2"],
                          capture_output=True, text=True, timeout=120)
    _ends_in_one_line(proc, started, workdir)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"geko: error: {workdir}") and NO_SPACE in last, proc.stderr


@pytest.mark.slow
def test_the_snakemake_route_on_a_disk_that_fills_ends_naming_the_file(campaign, small_disk):
    c = campaign(workload_log="", workload_inline=" ".join(INLINE[1:]), mode="search")
    c.workdir = small_disk(90) / "w"
    c.config["workdir"] = str(c.workdir)
    started = time.monotonic()
    proc = c.snakemake("final_libs", check=False, timeout=120)
    _ends_in_one_line(proc, started, c.workdir)
    assert f"GEKO:ERROR [jobs:run] {c.workdir}/" in proc.stderr
