"""Atomic output files: written under a temporary name in the same directory, then renamed, so an
interrupted job never leaves a file that looks complete."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import yaml

from .path_errors import NO_SPACE, NoSpace


def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def _remove_quietly(path: Path) -> None:
    """Best-effort cleanup on a path that is already failing: the original error is what matters."""
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()


def write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically. When anything fails (a full disk, an interrupt) the
    temporary file is removed and ``path`` keeps its previous content; an OSError names
    ``path`` (a full disk's, :class:`path_errors.NoSpace`, the bytes it needed too)."""
    return write_chunks(path, (data,), len(data))


def write_chunks(path, chunks, size: int | None = None) -> Path:
    """:func:`write_bytes` of the bytes ``chunks`` yields, written as they come, so a large
    output is never held whole in memory (``size``: their total, where known)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_path(path)
    try:
        _write_durably(tmp, chunks)
        os.replace(tmp, path)
    except OSError as exc:
        _remove_quietly(tmp)
        # name the file being written (not its temporary name, nor none: a failed write(2)),
        # and on a full disk the space it needed
        if exc.errno in NO_SPACE:
            raise NoSpace(exc.errno, os.path.abspath(path), size) from exc
        raise OSError(exc.errno, exc.strerror, os.path.abspath(path)) from exc
    except BaseException:
        _remove_quietly(tmp)
        raise
    return path


def _write_durably(path: Path, chunks) -> None:
    with open(path, "wb") as handle:
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
    is removed and a previous ``path`` is left as it was."""
    path = Path(path)
    staging = path.with_name(f".{path.name}.staging{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        yield staging
        _swap_in(staging, path)
    except BaseException:
        _remove_quietly(staging)
        raise


def _swap_in(staging: Path, path: Path) -> None:
    """Replace the directory ``path`` by ``staging``; the old one is set aside first, so a
    failed rename puts it back instead of leaving no output at all."""
    retired = path.with_name(f".{path.name}.old{os.getpid()}")
    _remove_quietly(retired)
    had_old = os.path.lexists(path)
    if had_old:
        os.replace(path, retired)
    try:
        os.replace(staging, path)
    except BaseException:
        if had_old:
            os.replace(retired, path)
        raise
    _remove_quietly(retired)


def read_yaml(path, error: type[Exception], what: str):
    """A YAML file's data, or ``error`` naming the file when it cannot be read or parsed."""
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise error(f"{path}: cannot read {what}: {exc}") from None


def sha256_of(path) -> str:
    """One file's SHA-256, read in blocks (stamps, run_state.json, a tuning build's source)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
