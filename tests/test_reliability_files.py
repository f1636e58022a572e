"""Atomic outputs leave nothing behind when a write fails (issue 16: "ENOSPC leaves a
.<name>.tmp<pid> behind forever"), and a failure never removes the previous good output."""

import errno
import os

import pandas as pd
import pytest

from geko_lib import files


def _disk_full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


@pytest.fixture
def full_disk(monkeypatch):
    """Data reaches the page cache, then the flush to disk fails as on a full filesystem."""
    monkeypatch.setattr(files.os, "fsync", _disk_full)


@pytest.mark.parametrize("write", [
    lambda p: files.write_text(p, "a,b\n1,2\n"),
    lambda p: files.write_bytes(p, b"\x89PNG"),
    lambda p: files.write_csv(p, pd.DataFrame({"a": [1]})),
    lambda p: files.write_json(p, {"a": 1}),
], ids=["text", "bytes", "csv", "json"])
def test_enospc_removes_the_temporary_and_keeps_the_old_file(tmp_path, full_disk, write):
    target = tmp_path / "winners.csv"
    target.write_text("previous\n")
    with pytest.raises(OSError) as caught:
        write(target)
    assert caught.value.errno == errno.ENOSPC
    assert _leftovers(tmp_path) == []
    assert target.read_text() == "previous\n"


def test_interrupt_mid_write_removes_the_temporary(tmp_path, monkeypatch):
    def interrupted(_fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_text(tmp_path / "summary.csv", "x\n")
    assert list(tmp_path.iterdir()) == []


def test_a_failing_rename_removes_the_temporary(tmp_path, monkeypatch):
    monkeypatch.setattr(files.os, "replace", _disk_full)
    with pytest.raises(OSError):
        files.write_text(tmp_path / "gemms.csv", "x\n")
    assert list(tmp_path.iterdir()) == []


def test_failed_staged_dir_keeps_the_previous_output(tmp_path, full_disk):
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "old.yaml").write_text("old\n")
    with pytest.raises(OSError):
        with files.staged_dir(libs) as staging:
            (staging / "new.yaml").write_text("half")
            files.write_text(staging / "other.yaml", "never\n")
    assert _leftovers(tmp_path) == []
    assert sorted(p.name for p in libs.iterdir()) == ["old.yaml"]


def test_staged_dir_whose_swap_fails_keeps_the_previous_output(tmp_path, monkeypatch):
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "old.yaml").write_text("old\n")
    real_replace = os.replace

    def refuse_staging(src, dst, **where):  # where: the directory descriptors of the names
        if ".staging" in str(src):
            _disk_full()
        real_replace(src, dst, **where)

    monkeypatch.setattr(files.os, "replace", refuse_staging)
    with pytest.raises(OSError):
        with files.staged_dir(libs) as staging:
            (staging / "new.yaml").write_text("new\n")
    assert _leftovers(tmp_path) == []
    assert (libs / "old.yaml").read_text() == "old\n"


def test_staged_dir_replaces_the_previous_output_when_it_succeeds(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "old.yaml").write_text("old\n")
    with files.staged_dir(libs) as staging:
        files.write_text(staging / "new.yaml", "new\n")
    assert sorted(p.name for p in libs.iterdir()) == ["new.yaml"]
    assert _leftovers(tmp_path) == []
