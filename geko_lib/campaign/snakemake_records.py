"""What Snakemake's own records in ``<workdir>/.snakemake`` say: which outputs are incomplete (jobs
that started and did not finish), which locks are held, and which snakemake processes run in
the workdir (Linux ``/proc``; None where that cannot be seen)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

def _decode_marker(relative: Path) -> str | None:
    parts = relative.parts
    encoded = "".join(p[1:] if p.startswith("@") else p for p in parts)
    try:
        return base64.urlsafe_b64decode(encoded.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def incomplete_outputs(workdir: Path) -> dict[str, float]:
    """Outputs Snakemake marked incomplete (job started, not finished) -> when it started."""
    root = workdir / ".snakemake" / "incomplete"
    out = {}
    if not root.is_dir():
        return out
    for path in root.rglob("*"):
        if not path.is_file() or path.name == "migration_underway":
            continue
        key = _decode_marker(path.relative_to(root))
        if key is None:
            continue
        key_path = Path(key)
        if key_path.is_absolute():
            try:
                key = str(key_path.resolve().relative_to(workdir))
            except ValueError:
                pass
        out[key.rstrip("/")] = path.stat().st_mtime
    return out


def snakemake_locks(workdir: Path) -> list[str]:
    root = workdir / ".snakemake" / "locks"
    return sorted(p.name for p in root.glob("*.lock")) if root.is_dir() else []


def proc_cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def snakemake_processes(workdir: Path) -> list[dict] | None:
    """Processes running snakemake (or a job script of it) in the workdir; None where the
    platform does not show other processes' working directories (no /proc)."""
    proc = Path("/proc")
    if not (proc / "self" / "cwd").exists():
        return None
    target = str(workdir.resolve())
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if proc_cwd(int(entry.name)) != target:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
        except OSError:
            continue
        if "snakemake" in cmdline:
            found.append({"pid": int(entry.name), "command": cmdline[:200]})
    return sorted(found, key=lambda p: p["pid"])
