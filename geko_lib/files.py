"""Atomic output files: written under a temporary name in the same directory, then renamed, so an
interrupted job never leaves a file that looks complete."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import yaml


def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def write_text(path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_path(path)
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


def write_csv(path, frame: pd.DataFrame) -> Path:
    return write_text(path, frame.to_csv(index=False))


def write_json(path, data) -> Path:
    return write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


@contextlib.contextmanager
def staged_dir(path):
    """Build a directory output under a temporary name; it appears under ``path`` only when the
    block finishes without error."""
    path = Path(path)
    staging = path.with_name(f".{path.name}.staging{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(path, ignore_errors=True)
    os.replace(staging, path)


def read_yaml(path, error: type[Exception], what: str):
    """A YAML file's data, or ``error`` naming the file when it cannot be read or parsed."""
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise error(f"{path}: cannot read {what}: {exc}") from None
