"""``optimizations/running_jobs.log``: the tuning jobs running now, one line each, as the
original's runner writes it::

    device=0 | slot=1 | n_gen=12 | log='logs/optimize/BBS_TN_0.log'

Each running job registers itself (:func:`entry`, around the job on its leased device slot)
and is dropped when it ends; while it runs its line follows the generations the GA has made
(the GA's progress callbacks report them: :func:`generation`; rewritten at most every
REFRESH_S seconds). Jobs of the workflow run in their own
processes (also on other hosts sharing the workdir), so the entries live in a JSON file beside
the log (``.running_jobs.json``), edited under a lock; an entry whose process is gone (a job
killed with SIGKILL) is dropped at the next rewrite. With no job running the log is empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from pathlib import Path

from .. import locks

FILE = "running_jobs.log"
_STATE = ".running_jobs.json"
_LOCK = ".running_jobs.lock"
REFRESH_S = 5.0

_current = threading.local()  # the job this thread runs: (tuning_dir, name, record)


def generation(n_gen: int) -> None:
    """Called by the GA's progress callbacks (every platform's): the running job has made
    ``n_gen`` generations; its line says so (rewritten at most every REFRESH_S seconds)."""
    job = getattr(_current, "job", None)
    if job is None:
        return
    tuning_dir, name, record = job
    record["n_gen"] = max(record["n_gen"], int(n_gen))
    now = time.monotonic()
    if now - record["_written"] >= REFRESH_S:
        record["_written"] = now
        _rewrite(tuning_dir, _set(name, record))


def line(device: int, slot: int, n_gen: int, log_path) -> str:
    return f"device={device} | slot={slot} | n_gen={n_gen} | log='{log_path}'"


def _set(name: str, record: dict):
    def change(entries):
        entries[name] = {k: v for k, v in record.items() if not k.startswith("_")}
    return change


def _alive(entry: dict) -> bool:
    if entry.get("host") != socket.gethostname():
        return True  # another host's job: it removes its own line
    try:
        os.kill(int(entry["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _rewrite(tuning_dir: Path, change) -> None:
    tuning_dir.mkdir(parents=True, exist_ok=True)
    with locks.exclusive(tuning_dir / _LOCK):
        state_path = tuning_dir / _STATE
        try:
            entries = json.loads(state_path.read_text())
        except (OSError, ValueError):
            entries = {}
        change(entries)
        entries = {k: e for k, e in entries.items() if _alive(e)}
        text = "".join(line(e["device"], e["slot"], e["n_gen"], e["log"]) + "\n"
                       for _, e in sorted(entries.items(),
                                          key=lambda kv: (kv[1]["device"], kv[1]["slot"])))
        for path, content in ((state_path, json.dumps(entries, indent=1)),
                              (tuning_dir / FILE, text)):
            tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
            tmp.write_text(content)
            os.replace(tmp, path)


def forget(tuning_dir, name: str) -> None:
    """``name``'s line removed (its job was killed before it could remove it)."""
    _rewrite(Path(tuning_dir), lambda entries: entries.pop(name, None))


@contextlib.contextmanager
def entry(tuning_dir, name: str, device: int, slot: int, log_path):
    """``name``'s line in ``tuning_dir/running_jobs.log`` while the block runs, removed when it
    ends (also when it fails)."""
    tuning_dir = Path(tuning_dir)
    record = {"device": int(device), "slot": int(slot), "n_gen": 0, "log": str(log_path),
              "pid": os.getpid(), "host": socket.gethostname(), "_written": time.monotonic()}
    _rewrite(tuning_dir, _set(name, record))
    _current.job = (tuning_dir, name, record)
    try:
        yield
    finally:
        _current.job = None
        forget(tuning_dir, name)
