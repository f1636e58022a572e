"""Where a library directory came from, checked before it is used again: the directory's
manifest (``provenance.json``, written by ``geko_lib.campaign.integrity``) records the campaign's platform,
architecture, vendor-library version, workload and options, and every file's digest; libraries
made for another GPU, library version or campaign, or edited since, are never benchmarked or
shipped (as TunableOp's Validator lines and hipBLASLt's tuning-file version header do).

The scripts call ``write`` on a staging directory and ``check`` on the directories they read;
``jobs.run`` restamps every output when the job finishes, with the digests of its inputs."""

from __future__ import annotations

import re
from pathlib import Path

from . import state as campaign_state, integrity
from .integrity import MANIFEST as FILE, IntegrityError

StaleResultsError = IntegrityError  # the name callers have always caught


def expected(config: dict, directory) -> dict:
    # a staging directory (files.staged_dir: ".<name>.staging<pid>") stands for <name>
    name = re.sub(r"^\.(.+)\.staging\d+$", r"\1", Path(directory).name)
    campaign = campaign_state.identity(config)
    return integrity.expected_provenance(campaign, config.get("mode", "search"), name)


def write(directory, config: dict, platform=None) -> Path:
    """Stamp a directory output as it stands (its inputs are added when the job finishes)."""
    return integrity.stamp(directory, expected(config, directory), {})


def check(directory, config: dict, platform=None) -> None:
    """Refuse a directory that is damaged, unstamped or made for another campaign."""
    integrity.require(Path(directory), expected(config, directory), Path(directory).parent)


__all__ = ["FILE", "StaleResultsError", "write", "check", "expected"]
