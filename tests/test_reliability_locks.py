"""Device leases on a multi-user machine: the lock directory is private and checked on every use,
and lock files are never opened through a symlink (issue 16, "Locks that follow symlinks")."""

import os
import stat

import pytest

from geko_lib import devices
from geko_lib.errors import GekoError


def _lease_once(lock_dir, **kw):
    with devices.lease([0], lock_dir=lock_dir, namespace="t", timeout=1, **kw) as held:
        return held.device


def test_missing_lock_dir_is_created_private(tmp_path):
    lock_dir = tmp_path / "parent" / "locks"
    old = os.umask(0)  # even a permissive umask must not widen it
    try:
        assert _lease_once(lock_dir) == 0
    finally:
        os.umask(old)
    info = os.lstat(lock_dir)
    assert stat.S_IMODE(info.st_mode) == 0o700
    lock_file = lock_dir / "t-dev0-slot0.lock"
    assert stat.S_IMODE(os.lstat(lock_file).st_mode) & 0o077 == 0


def test_symlinked_lock_dir_is_refused_naming_it(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    link = tmp_path / "locks"
    link.symlink_to(elsewhere)
    with pytest.raises(devices.UnsafeLockError, match=f"{link} is a symlink"):
        _lease_once(link)
    assert not list(elsewhere.iterdir())


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_group_or_world_writable_lock_dir_is_refused(tmp_path, mode):
    lock_dir = tmp_path / "locks"
    lock_dir.mkdir()
    lock_dir.chmod(mode)
    with pytest.raises(GekoError, match=rf"{lock_dir} is writable by group or others \(mode {mode:04o}\)"):
        _lease_once(lock_dir)
    with pytest.raises(GekoError, match="writable by group or others"):
        devices.busy([0], lock_dir=lock_dir, namespace="t")
    assert not list(lock_dir.iterdir())


def test_someone_elses_lock_dir_is_refused(tmp_path, monkeypatch):
    lock_dir = tmp_path / "locks"
    lock_dir.mkdir(mode=0o700)
    real_uid = os.getuid()
    monkeypatch.setattr(devices.os, "getuid", lambda: real_uid + 1)
    with pytest.raises(devices.UnsafeLockError, match=f"{lock_dir} is owned by uid {real_uid}, not by this user"):
        _lease_once(lock_dir)


def test_a_lock_dir_that_is_a_file_is_refused(tmp_path):
    not_a_dir = tmp_path / "locks"
    not_a_dir.write_text("x")
    with pytest.raises(devices.UnsafeLockError, match="is not a directory"):
        _lease_once(not_a_dir)


def test_planted_symlink_lock_file_is_refused_and_its_target_untouched(tmp_path):
    lock_dir = tmp_path / "locks"
    lock_dir.mkdir(mode=0o700)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    planted = lock_dir / "t-dev0-slot0.lock"
    planted.symlink_to(victim)
    with pytest.raises(devices.UnsafeLockError, match=f"{planted} is a symlink"):
        _lease_once(lock_dir)
    with pytest.raises(devices.UnsafeLockError, match="is a symlink"):
        devices.busy([0], lock_dir=lock_dir, namespace="t")
    assert victim.read_text() == "keep me\n"


def test_dangling_symlink_lock_file_creates_nothing(tmp_path):
    lock_dir = tmp_path / "locks"
    lock_dir.mkdir(mode=0o700)
    target = tmp_path / "would-be-created"
    (lock_dir / "t-dev0-slot0.lock").symlink_to(target)
    with pytest.raises(devices.UnsafeLockError):
        _lease_once(lock_dir)
    assert not os.path.lexists(target)


def test_default_lock_dir_is_checked_too(tmp_path, monkeypatch):
    monkeypatch.setattr(devices.tempfile, "gettempdir", lambda: str(tmp_path))
    shared = devices.default_lock_dir()
    shared.mkdir(mode=0o755)
    shared.chmod(0o777)  # as if another user had made it first, world-writable
    with pytest.raises(devices.UnsafeLockError, match=str(shared)):
        _lease_once(None)


def test_busy_does_not_create_the_lock_dir(tmp_path):
    assert devices.busy([0, 1], lock_dir=tmp_path / "never", namespace="t") == []
    assert not (tmp_path / "never").exists()
