"""Atomic output files: written under a temporary name in the same directory, then renamed, so an
interrupted job never leaves a file that looks complete.

Within :func:`confined_to` (every workflow job runs in it: ``jobs.run``, the workdir the job runs
in) an output under the workdir is written only inside it. The start of a run refuses a symlink
under the workdir that leads out (``campaign.bounds``), but one can be made while the run goes
on, and a write by name would follow it. So the writer opens the output's directory one part at
a time from the workdir, never following a link that leads outside (:class:`LinkOutOfWorkdir`,
naming it), and makes the temporary file and the rename in that open directory (``dir_fd``): a
link made after the check cannot redirect a write already past it, which re-checking a path
before a rename by name could not promise. Links that stay inside are the workdir's own, as at
the start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import yaml

from .errors import GekoError
from .path_errors import NO_SPACE, NoSpace


class LinkOutOfWorkdir(GekoError, ValueError):
    """A symlink under the workdir leads outside it."""


def refusal(link, target, workdir, note: str = "") -> LinkOutOfWorkdir:
    """The one line that refuses a symlink leading out of the workdir, at a run's start
    (``campaign.bounds``) or at a write (``note``: more said after the workdir)."""
    return LinkOutOfWorkdir(
        f"{link} is a symlink to {target}, outside the workdir {workdir}{note}: geko writes "
        "and deletes files only inside its workdir, and would through the link; replace it by a "
        "directory or file of its own, or use another --workdir")


# the workdir whose outputs :func:`confined_to` keeps inside it; a module value, not a context
# variable, so that a job's worker threads and forked children keep to it too
_workdir: str | None = None
_DIR = os.O_RDONLY | os.O_DIRECTORY


@contextlib.contextmanager
def confined_to(workdir):
    """Within the block, an output under ``workdir`` is written only inside it (module
    docstring); other paths as ever."""
    global _workdir
    before, _workdir = _workdir, os.path.abspath(workdir)
    try:
        yield
    finally:
        _workdir = before


def _part_of_workdir(path: Path) -> tuple[str, list[str]] | None:
    """(the workdir, the names from it to ``path``'s directory) for an output under the
    confined workdir (by its name or its real name); None for any other path."""
    if _workdir is None:
        return None
    full = os.path.abspath(path)
    for root in dict.fromkeys((_workdir, os.path.realpath(_workdir))):
        if full.startswith(root.rstrip(os.sep) + os.sep):
            return root, full[len(root.rstrip(os.sep)) + 1:].split(os.sep)[:-1]
    return None


def _open_dir(path: Path) -> int:
    """A descriptor of the directory ``path`` is written in, made where missing; under the
    confined workdir opened from it one name at a time (module docstring)."""
    found = _part_of_workdir(path)
    if found is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path.parent, _DIR)
    root, names = found
    os.makedirs(root, exist_ok=True)
    fd = os.open(root, _DIR)  # the workdir itself may be reached through a link of its own
    walk = _Walk(root, _identity(fd), path)
    where = root
    try:
        for name in names:
            where = os.path.join(where, name)
            entered = _enter(fd, name, where, walk)
            os.close(fd)
            fd = entered
    except OSError as exc:
        os.close(fd)
        raise _named(exc, where) from exc  # a name opened in a descriptor is told without it
    except BaseException:
        os.close(fd)
        raise
    return fd


class _Walk(NamedTuple):
    root: str  # the workdir, as named
    root_id: tuple[int, int]  # its (device, inode): what a directory inside it leads up to
    path: Path  # the output being written


def _identity(fd: int) -> tuple[int, int]:
    found = os.fstat(fd)
    return found.st_dev, found.st_ino


def _named(exc: OSError, path) -> OSError:
    return OSError(exc.errno, exc.strerror, os.path.abspath(path))


def _enter(fd: int, name: str, where: str, walk: _Walk) -> int:
    """The directory ``name`` of the open directory ``fd`` (at ``where``), made where missing."""
    try:
        return _enter_existing(fd, name, where, walk)
    except FileNotFoundError:
        with contextlib.suppress(FileExistsError):  # a parallel job made it
            os.mkdir(name, dir_fd=fd)
    return _enter_existing(fd, name, where, walk)


def _enter_existing(fd: int, name: str, where: str, walk: _Walk) -> int:
    """The directory ``name`` of ``fd``, opened without following a symlink unless it leads
    inside the workdir."""
    try:
        return os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
    except FileNotFoundError:
        raise
    except OSError:  # a symlink (ELOOP), or a file in the way (ENOTDIR)
        if not _is_link(fd, name):
            raise
    target, real_root = os.path.realpath(where), os.path.realpath(walk.root)
    if os.path.commonpath([target, real_root]) != real_root:
        raise refusal(where, target, walk.root, _met(walk.path))
    # where the link led is told by where the opened directory is (walking up from it), not by
    # its name resolved a moment before, which could be relinked in between
    entered = os.open(name, _DIR, dir_fd=fd)
    if not _within(entered, walk.root_id):
        os.close(entered)
        raise refusal(where, os.path.realpath(where), walk.root, _met(walk.path))
    return entered


def _met(path: Path) -> str:
    return f" (met writing {os.path.abspath(path)}: nothing written)"


def _is_link(fd: int, name: str) -> bool:
    try:
        os.readlink(name, dir_fd=fd)
    except OSError:
        return False
    return True


def _within(fd: int, root_id: tuple[int, int]) -> bool:
    """Whether the open directory ``fd`` is the workdir (``root_id``) or under it."""
    current = os.dup(fd)
    try:
        while _identity(current) != root_id:
            parent = os.open("..", _DIR, dir_fd=current)
            if _identity(parent) == _identity(current):  # the file system's root
                os.close(parent)
                return False
            os.close(current)
            current = parent
        return True
    finally:
        os.close(current)


def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def _remove_quietly(path: Path, dir_fd: int) -> None:
    """Best-effort cleanup on a path that is already failing: the original error is what matters.
    ``path``'s name is removed from the open directory ``dir_fd``, where the writer made it."""
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(path.name, dir_fd=dir_fd).st_mode):
            shutil.rmtree(path.name, ignore_errors=True, dir_fd=dir_fd)
        else:
            os.unlink(path.name, dir_fd=dir_fd)


def write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically. When anything fails (a full disk, an interrupt) the
    temporary file is removed and ``path`` keeps its previous content; an OSError names
    ``path`` (a full disk's, :class:`path_errors.NoSpace`, the bytes it needed too). Under the
    confined workdir, a symlink on the way that leads out of it is refused
    (:class:`LinkOutOfWorkdir`) and nothing is written."""
    return write_chunks(path, (data,), len(data))


def write_chunks(path, chunks, size: int | None = None) -> Path:
    """:func:`write_bytes` of the bytes ``chunks`` yields, written as they come, so a large
    output is never held whole in memory (``size``: their total, where known)."""
    path = Path(path)
    dir_fd = _open_dir(path)
    tmp = _tmp_path(path)
    try:
        _write_durably(tmp, chunks, dir_fd=dir_fd)
        os.replace(tmp.name, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as exc:
        _remove_quietly(tmp, dir_fd)
        # name the file being written (not its temporary name, nor none: a failed write(2)),
        # and on a full disk the space it needed
        if exc.errno in NO_SPACE:
            raise NoSpace(exc.errno, os.path.abspath(path), size) from exc
        raise OSError(exc.errno, exc.strerror, os.path.abspath(path)) from exc
    except BaseException:
        _remove_quietly(tmp, dir_fd)
        raise
    finally:
        os.close(dir_fd)
    return path


def _write_durably(path: Path, chunks, dir_fd: int) -> None:
    """The temporary file ``path``, made by its name in the open directory ``dir_fd``."""
    fd = os.open(path.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666,
                 dir_fd=dir_fd)
    with open(fd, "wb") as handle:
        for chunk in chunks:
            handle.write(chunk)
        handle.flush()
        os.fsync(handle.fileno())


def write_text(path, text: str) -> Path:
    return write_bytes(path, text.encode())


def write_csv(path, frame: pd.DataFrame) -> Path:
    return write_text(path, frame.to_csv(index=False))


def write_json(path, data, *, compact: bool = False) -> Path:
    """``data`` as JSON, indented for a reader, or ``compact`` (no whitespace: Python's C
    encoder, many times faster, for a large file rewritten often, as a GA checkpoint is)."""
    layout = {"separators": (",", ":")} if compact else {"indent": 2}
    return write_text(path, json.dumps(data, allow_nan=False, **layout) + "\n")


@contextlib.contextmanager
def staged_dir(path):
    """Build a directory output under a temporary name; it appears under ``path`` only when the
    block finishes without error. On any failure, the block's or the swap's, the staging directory
    is removed and a previous ``path`` is left as it was. Under the confined workdir its
    directory is checked as :func:`write_bytes` checks a file's, and again for the swap: a link
    made while the block ran is refused too."""
    path = Path(path)
    staging = path.with_name(f".{path.name}.staging{os.getpid()}")
    made_in = _open_dir(path)  # where the staging directory is made, and removed on a failure
    try:
        _remove_quietly(staging, made_in)
        try:
            os.mkdir(staging.name, dir_fd=made_in)
        except OSError as exc:
            raise _named(exc, staging) from exc
        yield staging
        swap_in = _open_dir(path)
        try:
            _swap_in(staging, path, swap_in)
        except OSError as exc:
            raise _named(exc, path) from exc
        finally:
            os.close(swap_in)
    except BaseException:
        _remove_quietly(staging, made_in)
        raise
    finally:
        os.close(made_in)


def _swap_in(staging: Path, path: Path, dir_fd: int) -> None:
    """Replace the directory ``path`` by ``staging`` (both names in the open directory
    ``dir_fd``); the old one is set aside first, so a failed rename puts it back instead of
    leaving no output at all."""
    retired = path.with_name(f".{path.name}.old{os.getpid()}")
    _remove_quietly(retired, dir_fd)

    def rename(source: Path, target: Path) -> None:
        os.replace(source.name, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)

    try:
        os.lstat(path.name, dir_fd=dir_fd)
        had_old = True
    except FileNotFoundError:
        had_old = False
    if had_old:
        rename(path, retired)
    try:
        rename(staging, path)
    except BaseException:
        if had_old:
            rename(retired, path)
        raise
    _remove_quietly(retired, dir_fd)


# libyaml where PyYAML has it: a campaign's row files (search chunks, bench rows) run to
# thousands of lines, which the pure-Python parser reads at several times libyaml's CPU (the
# README's first run: 0.7 s in one comparison job); the same safe constructor builds the data
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str):
    """``yaml.safe_load(text)``, parsed by libyaml where PyYAML has it."""
    return yaml.load(text, Loader=YAML_LOADER)


def read_yaml(path, error: type[Exception], what: str):
    """A YAML file's data, or ``error`` naming the file when it cannot be read or parsed."""
    path = Path(path)
    try:
        return load_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise error(f"{path}: cannot read {what}: {exc}") from None


def sha256_of(path) -> str:
    """One file's SHA-256, read in blocks (stamps, run_state.json, a tuning build's source)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
