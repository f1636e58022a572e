"""A tuning job's build dir (``optimizations/build_<cfg>/``), as the original keeps it: its
state (missing, completed, resumable from a GA checkpoint, failed), its preparation for a run
(a failed or interrupted one cleaned down to its checkpoint, one made from another version of
its tuning YAML started over) and its failure count. The tuning job of both doors
(geko_lib.gpu_jobs) prepares a build dir here before any platform tunes into it."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from .. import files
from ..files import sha256_of
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

CHECKPOINT = "step-00__ductile.checkpoint.json"
# TensileLite's Ductile backend pickles its GA state as step-<NN>__ductile.checkpoint (rocm)
CHECKPOINT_NAMES = (CHECKPOINT, "step-00__ductile.checkpoint")
LOGIC_DIR = "3_LibraryLogic"
FAILCOUNT = ".failcount"
TUNED_FROM = ".tuning_yaml.sha256"  # the SHA-256 of the tuning YAML the build dir is made from


def build_state(build_dir: Path) -> str:
    """missing | completed (3_LibraryLogic has a library) | resumable (a GA checkpoint and
    nothing else that matters) | failed."""
    build_dir = Path(build_dir)
    if not build_dir.is_dir():
        return "missing"
    if any((build_dir / LOGIC_DIR).glob("*.yaml")):
        return "completed"
    if any((build_dir / name).is_file() for name in CHECKPOINT_NAMES):
        return "resumable"
    leftovers = [p for p in build_dir.iterdir() if p.name not in (FAILCOUNT, TUNED_FROM)]
    return "failed" if leftovers else "missing"


def clean_for_retry(build_dir: Path) -> None:
    """Before a rerun: keep only the GA checkpoint, the failure count and the tuning YAML it
    was made from."""
    for path in Path(build_dir).iterdir() if Path(build_dir).is_dir() else []:
        if path.name in (*CHECKPOINT_NAMES, FAILCOUNT, TUNED_FROM):
            continue
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def prepare_build_dir(build_dir: Path, name: str, tuning_yaml: Path | None = None) -> str:
    """The build dir made ready for a run, as the original's worker setup: a failed or
    interrupted run is cleaned down to its GA checkpoint (kept, so the GA resumes) and its
    failure count. With ``tuning_yaml``, a build dir made from another version of it (edited
    at review after a run) starts over: its checkpoint is another search space's, which the
    GA would refuse to resume. Returns the state found."""
    build_dir = Path(build_dir)
    state = build_state(build_dir)
    if tuning_yaml is not None and state != "missing" and \
            _tuned_from_another(build_dir, tuning_yaml):
        log.info("%s: build dir made from another version of %s, starting over", name,
                 Path(tuning_yaml).name)
        shutil.rmtree(build_dir)
        state = "missing"
    if state in ("failed", "resumable"):
        log.info("%s: %s build dir, retrying%s", name, state,
                 " from its checkpoint" if state == "resumable" else "")
        clean_for_retry(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    if tuning_yaml is not None:
        files.write_text(build_dir / TUNED_FROM, sha256_of(tuning_yaml) + "\n")
    return state


def _tuned_from_another(build_dir: Path, tuning_yaml: Path) -> bool:
    """Whether the build dir records another tuning YAML than ``tuning_yaml``'s content (a
    build dir that records none, of an older geko, is taken as this one's)."""
    recorded = build_dir / TUNED_FROM
    if not recorded.is_file():
        return False
    return recorded.read_text().strip() != sha256_of(tuning_yaml)


def bump_failcount(build_dir: Path) -> int:
    path = Path(build_dir) / FAILCOUNT
    path.parent.mkdir(parents=True, exist_ok=True)
    count = int(path.read_text() or 0) + 1 if path.exists() else 1
    path.write_text(f"{count}\n")
    return count
