"""Where results came from: platform, architecture and vendor-library version, recorded beside
every library directory (``provenance.json``) and checked before the results are used again, so
libraries made for one GPU or library version are never benchmarked or shipped for another (as
TunableOp's Validator lines and hipBLASLt's tuning-file version header do)."""

from __future__ import annotations

import json
from pathlib import Path

from . import files
from .errors import GekoError

FILE = "provenance.json"


class StaleResultsError(GekoError, ValueError):
    """Results were made for another platform, architecture or library version."""


def stamp(config: dict, platform) -> dict:
    return {"platform": platform.name, "arch": config.get("arch"),
            "library_version": getattr(platform, "library_version", None)}


def write(directory, config: dict, platform) -> Path:
    return files.write_json(Path(directory) / FILE, stamp(config, platform))


def check(directory, config: dict, platform) -> None:
    """Refuse a directory whose recorded provenance differs from this run's."""
    path = Path(directory) / FILE
    if not path.is_file():
        raise StaleResultsError(f"{directory} has no {FILE}: it was not made by this geko "
                                "campaign; delete it to rebuild")
    recorded = json.loads(path.read_text())
    expected = stamp(config, platform)
    different = {k: (recorded.get(k), v) for k, v in expected.items() if recorded.get(k) != v}
    if different:
        what = ", ".join(f"{k} {old!r} (this run: {new!r})" for k, (old, new) in different.items())
        raise StaleResultsError(f"{directory} was made for {what}: refusing to use it; delete "
                                f"it (or run with the matching config) to rebuild")
