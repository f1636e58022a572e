"""Where the hipBLASLt checkout is, and what a usable one has.

The checkout is found, first match wins, from: the ``geko --hipblaslt PATH`` flag (the command
passes it to the workflow as ``GEKO_HIPBLASLT_PATH`` and in the config), the
``GEKO_HIPBLASLT_PATH`` environment variable, then the config key ``rocm: {hipblaslt_path}``.
A usable checkout has ``tensilelite/`` (it is a hipBLASLt source tree), ``build/release/`` (it
was built) and the ``hipblaslt-bench`` client under ``build/release/clients/staging/`` or
``build/release/clients/``. Nothing here runs a command: the git revision is read from the
``.git`` files directly.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .. import PlatformError

ENV_VAR = "GEKO_HIPBLASLT_PATH"
BUILD_DIR = Path("build", "release")
# where the bench client lands: staging/ in current builds, clients/ in older ones
BENCH_CANDIDATES = (BUILD_DIR / "clients" / "staging" / "hipblaslt-bench",
                    BUILD_DIR / "clients" / "hipblaslt-bench")
MATCH_TABLE = BUILD_DIR / "device-library" / "MatchTable.yaml"
UNKNOWN_HASH = "unknown"
_HASH = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class RocmInstall:
    root: Path  # the hipBLASLt project directory
    bench: Path  # the hipblaslt-bench executable
    tensilelite: Path  # <root>/tensilelite
    git_hash: str  # commit of the checkout, or "unknown"

    @property
    def match_table(self) -> Path:
        """hipBLASLt's own MatchTable: global solution index -> (logic file, local index)."""
        return self.root / MATCH_TABLE


def requested_path(config: dict, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(path, where it came from) of the checkout the user asked for; ("", "") if none."""
    environ = os.environ if environ is None else environ
    if environ.get(ENV_VAR, "").strip():
        return environ[ENV_VAR].strip(), f"environment variable {ENV_VAR}"
    configured = str(((config or {}).get("rocm") or {}).get("hipblaslt_path") or "").strip()
    if configured:
        return configured, "config key rocm.hipblaslt_path"
    return "", ""


def locate(config: dict, environ: Mapping[str, str] | None = None) -> RocmInstall:
    """The checkout named by the flag, the environment or the config, checked to be usable."""
    text, origin = requested_path(config, environ)
    if not text:
        raise PlatformError(
            "platform rocm needs a built hipBLASLt checkout: pass `geko --hipblaslt PATH`, set "
            f"{ENV_VAR}, or set rocm: {{hipblaslt_path: PATH}} in the config")
    return checkout(text, origin)


def checkout(text: str, origin: str) -> RocmInstall:
    """The checkout at ``text`` checked to be usable; errors name ``origin`` (where the path
    came from: the environment, the config, an API call's argument)."""
    root = Path(text).expanduser().resolve()
    if not root.is_dir():
        raise PlatformError(f"hipBLASLt checkout {root} (from {origin}) does not exist")
    if not (root / "tensilelite").is_dir():
        raise PlatformError(f"{root} (from {origin}) is not a hipBLASLt checkout: it has no "
                            "tensilelite/ directory")
    if not (root / BUILD_DIR).is_dir():
        raise PlatformError(f"hipBLASLt checkout {root} (from {origin}) is not built: "
                            f"{root / BUILD_DIR} is missing; build hipBLASLt with its clients")
    bench = next((root / c for c in BENCH_CANDIDATES if (root / c).is_file()), None)
    if bench is None:
        tried = " or ".join(str(root / c) for c in BENCH_CANDIDATES)
        raise PlatformError(f"hipBLASLt checkout {root} has no hipblaslt-bench ({tried}); build "
                            "it with the clients enabled")
    if not os.access(bench, os.X_OK):
        raise PlatformError(f"{bench} is not executable")
    return RocmInstall(root, bench, root / "tensilelite", git_hash(root))


# --- the git revision, read from .git without running git ---------------------------------------

def git_dir(start: Path) -> Path | None:
    """The git directory of the repository holding ``start`` (hipBLASLt alone, or inside the
    rocm-libraries monorepo two levels up); follows a ``.git`` file's ``gitdir:`` line."""
    for directory in (start, *start.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():
            line = dot_git.read_text(errors="replace").strip()
            if line.startswith("gitdir:"):
                target = Path(line.split(":", 1)[1].strip())
                return target if target.is_absolute() else (directory / target).resolve()
    return None


def _packed_ref(gdir: Path, ref: str) -> str | None:
    packed = gdir / "packed-refs"
    if not packed.is_file():
        return None
    for line in packed.read_text(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == ref:
            return parts[0]
    return None


def _common_dir(gdir: Path) -> Path:
    """Worktrees keep refs in the main repository's git dir (named by ``commondir``)."""
    common = gdir / "commondir"
    if common.is_file():
        target = Path(common.read_text().strip())
        return target if target.is_absolute() else (gdir / target).resolve()
    return gdir


def git_hash(root: Path) -> str:
    """The commit checked out at ``root``: HEAD, a branch ref, or a packed ref; "unknown"."""
    gdir = git_dir(Path(root))
    if gdir is None or not (gdir / "HEAD").is_file():
        return UNKNOWN_HASH
    head = (gdir / "HEAD").read_text(errors="replace").strip()
    value: str | None = head
    if head.startswith("ref:"):
        ref = head.split(":", 1)[1].strip()
        value = None
        for base in dict.fromkeys((gdir, _common_dir(gdir))):
            path = base / ref
            if path.is_file():
                value = path.read_text(errors="replace").strip()
                break
            value = _packed_ref(base, ref)
            if value:
                break
    value = (value or "").lower()
    return value if _HASH.match(value) else UNKNOWN_HASH
