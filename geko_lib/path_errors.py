"""Paths a user gave or a job writes, and what is wrong with one, in one line.

The operating system's refusals (a full disk, a read-only directory, a symlink loop, a part of a
path that is a file) reach geko as ``OSError`` (and, for a loop met by ``Path.resolve`` before
Python 3.13, as ``RuntimeError``). :func:`translated` is the one place that turns them into a
:class:`PathError` naming the path and what is wrong; the entry points (the ``geko`` command and
its subcommands, every workflow job through ``jobs.run``) run inside it, so no traceback reaches
a user. :func:`resolve`, :func:`check_name` and :func:`check_directory` refuse a bad path given
on the command line before anything is written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from pathlib import Path

from .errors import EnvironmentFailure, GekoError


class PathError(GekoError):
    """A path that cannot be used: its message names it and says why."""


class NoSpaceError(PathError, EnvironmentFailure):
    """A write refused for want of space or quota: once space is freed, a rerun succeeds."""


# what each refusal means, in words (others: the system's own text)
WHAT = {
    errno.EROFS: "is on a read-only file system",
    errno.EACCES: "permission denied (not writable or not readable by this user)",
    errno.EPERM: "operation not permitted",
    errno.ELOOP: "is a symlink loop (a symbolic link that leads back to itself)",
    errno.ENOTDIR: "a part of this path is a file, not a directory",
    errno.EISDIR: "is a directory, not a file",
    errno.ENOENT: "does not exist",
    errno.ENAMETOOLONG: "name too long",
    errno.EEXIST: "already exists",
}


def shown(path) -> str:
    """A path as printable text: bytes that are not UTF-8 (kept by Python as surrogates) are
    written as \\xNN escapes."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        return text.decode("utf-8", "backslashreplace")
    return os.fsencode(text).decode("utf-8", "backslashreplace")


# a full disk or quota: what it is called, and why (told with the space free and needed)
NO_SPACE = {errno.ENOSPC: ("no space left on the device", "disk full"),
            errno.EDQUOT: ("disk quota exceeded", "out of quota")}


class NoSpace(OSError):
    """A write refused for want of space, knowing how many bytes it needed."""

    def __init__(self, code: int, path, needed: int):
        super().__init__(code, os.strerror(code), path)
        self.needed = needed


def _size(n: float) -> str:
    if n < 1024:
        return f"{int(n)} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"


def free_space(path) -> int | None:
    """Bytes free to this user on the filesystem that holds ``path`` (its nearest existing
    parent); None where that cannot be told."""
    path = Path(os.path.abspath(path))
    for where in (path, *path.parents):
        try:
            return shutil.disk_usage(where).free
        except OSError:
            continue
    return None


def no_space(code: int, path=None, needed: int | None = None) -> str:
    """A full disk (or quota) in words, with the space free where ``path`` is and, where
    known, what the write needed: what a person must free before a rerun."""
    what, why = NO_SPACE[code]
    facts = [why]
    free = free_space(path) if path is not None else None
    if free is not None:
        facts.append(f"{_size(free)} free there")
    if needed:
        facts.append(f"{_size(needed)} needed to write it")
    return f"{what} ({', '.join(facts)}); free some and rerun: what was written before is kept"


def describe(exc: OSError, path=None) -> str:
    """``PATH: what is wrong`` for an OSError (``path`` where the error names none)."""
    name = exc.filename if exc.filename is not None else path
    what = no_space(exc.errno, name, getattr(exc, "needed", None)) if exc.errno in NO_SPACE \
        else WHAT.get(exc.errno) or (exc.strerror or str(exc)).lower()
    if exc.filename2 is not None:
        what += f" (with {shown(exc.filename2)})"
    return f"{shown(name)}: {what}" if name is not None else what


def from_os_error(exc: OSError, path=None) -> PathError:
    kind = NoSpaceError if exc.errno in NO_SPACE else PathError
    return kind(describe(exc, path))


def _is_loop(exc: RuntimeError) -> bool:
    return "Symlink loop" in str(exc)


@contextlib.contextmanager
def translated():
    """Run the block with the system's refusals told as a :class:`PathError` (one line naming
    the path); a non-UTF-8 name that reaches a file's text is refused too."""
    try:
        yield
    except PathError:
        raise
    except OSError as exc:
        raise from_os_error(exc) from None
    except RuntimeError as exc:
        if not _is_loop(exc):
            raise
        raise PathError(f"{str(exc).removeprefix('Symlink loop from ').strip(chr(39))}: "
                        f"{WHAT[errno.ELOOP]}") from None
    except UnicodeEncodeError as exc:
        if exc.reason != "surrogates not allowed":
            raise
        raise PathError(f"a file name that is not UTF-8 ({exc.object[max(exc.start - 40, 0):exc.end + 40]!a}): "
                        "geko records paths in UTF-8 files; rename it") from None


def _named(flag: str, path) -> str:
    return f"{flag} {shown(path)}" if flag else shown(path)


def check_name(path, flag: str = "") -> None:
    """Refuse a path whose name is not UTF-8: geko writes every path it is given into its
    config and state files, which are UTF-8."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        raise PathError(f"{_named(flag, path)}: the name is not valid UTF-8 (geko records paths "
                        "in UTF-8 files); rename it") from None


# Snakemake reads ``<name>`` in a rule's file path as one of its path variables (pathvars:
# ``<results>``, ``<logs>``, ...) and expands it, in an input function's value too, until none
# is left: no spelling of such a path reaches a rule as written.
_PATHVAR = re.compile(r"<[a-z][a-z0-9_]*>")


def check_rule_file(path, flag: str = "") -> None:
    """Refuse a file given to the workflow's rules (a workload, another campaign's workdir)
    whose path holds a ``<name>`` token: Snakemake would refuse it (an undefined pathvar) or,
    worse, read another file (``<results>`` expands to ``results``)."""
    token = _PATHVAR.search(os.fspath(path))
    if token:
        raise PathError(f"{_named(flag, path)}: Snakemake reads {token.group()} in a path as "
                        "one of its path variables, so the workflow cannot be given this file; "
                        "rename or move it (or link it from a path without <...>)")


def resolve(path, flag: str = "") -> Path:
    """``path`` made absolute with its symlinks followed; a loop or a name that is not UTF-8
    is refused naming the flag and the path."""
    check_name(path, flag)
    try:
        with translated():
            return Path(path).expanduser().resolve()
    except PathError as exc:
        raise PathError(f"{flag} {exc}" if flag else str(exc)) from None


def check_directory(path: Path, flag: str = "") -> None:
    """Refuse a directory geko is to write into that is a file, lies under a file, or cannot
    be written, before anything is written."""
    path = Path(path)
    if os.path.lexists(path) and not path.is_dir():
        raise PathError(f"{_named(flag, path)}: is a file, not a directory")
    for parent in path.parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise PathError(f"{_named(flag, path)}: {shown(parent)} is a file, not a "
                                "directory, so nothing can be created under it")
            break
    existing = path if path.is_dir() else next(p for p in path.parents if p.is_dir())
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "" if existing == path else f" ({shown(existing)}, where it would be created)"
        raise PathError(f"{_named(flag, path)}: is not writable by this user{what}")
