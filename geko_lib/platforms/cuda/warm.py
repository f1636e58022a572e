"""Warm start of the cuda tune mode: a persistent cache of tuned decode winners.

Every decode GEMM a tune campaign measures on a GPU leaves its winner (config and GFLOP/s) in
``<cache>/cuda-warm/<environment>.json``, where ``<cache>`` is ``$GEKO_CACHE_DIR``, else
``$XDG_CACHE_HOME/geko``, else ``~/.cache/geko``, and ``<environment>`` names the GPU model, the
CUDA driver, cuBLASLt and Triton versions: nothing measured with other software is read back.
A later campaign's tuning of a GEMM starts from the cached winners of the same GEMM type, the
exact shape first, then the nearest shapes. They are seeds only: every one is measured again
and checked, so the cache can make a campaign faster but never decides what it ships. Where the
exact shape is cached, the per-GEMM GA is skipped and of the rule seeds only the first of each
template is measured beside the cached winners (then the finalists side by side).
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path

from ...gemm import GemmProblem
from . import triton_gemm as tg

CACHE_ENV = "GEKO_CACHE_DIR"
NEAREST = 4


def cache_dir() -> Path:
    base = os.environ.get(CACHE_ENV)
    if base:
        return Path(base) / "cuda-warm"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "geko" / "cuda-warm"


def environment(device: int) -> str:
    """The software and GPU a measurement depends on, as a file name."""
    import torch
    import triton

    from . import cublaslt

    driver = getattr(torch.cuda, "driver_version", None)
    parts = [torch.cuda.get_device_name(device), f"cuda{torch.version.cuda}",
             f"driver{driver() if callable(driver) else _driver_version()}",
             f"cublaslt{cublaslt.version()}", f"triton{triton.__version__}"]
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", "_".join(parts))


def _driver_version() -> str:
    try:
        from cuda.bindings import driver  # cuda-python, beside nvmath

        err, version = driver.cuDriverGetVersion()
        return str(version) if int(err) == 0 else "unknown"
    except Exception:  # no cuda-python: the other parts still separate the environments
        return "unknown"


def shape_distance(a, b) -> float:
    """log-distance of two [M, N, batch, K] sizes (tokens weigh double: they pick the mode)."""
    logs = [math.log2(max(1, int(v))) for v in (a[0], a[1], a[3], b[0], b[1], b[3])]
    return abs(logs[0] - logs[3]) + 2 * abs(logs[1] - logs[4]) + abs(logs[2] - logs[5])


def _path(env: str) -> Path:
    return cache_dir() / f"{env}.json"


def _read(env: str) -> dict:
    path = _path(env)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def store(env: str, problem: GemmProblem, cfg: tg.TritonConfig, gflops: float) -> Path:
    """Keep ``cfg`` as ``problem``'s cached winner unless a faster one is there; written
    atomically (tune jobs of one campaign may run side by side)."""
    data = _read(env)
    entry = data.get(problem.name)
    if entry is None or float(entry.get("gflops", 0)) < gflops:
        data[problem.name] = {"type": problem.type.name, "size": list(problem.size),
                              "config": cfg.to_params(), "gflops": round(float(gflops), 3)}
    path = _path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as out:
        json.dump(data, out, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return path


def seeds(env: str, problem: GemmProblem, nearest: int = NEAREST) -> tuple[list[dict], bool]:
    """Cached winners of ``problem``'s GEMM type that can run it, the exact shape first then
    the ``nearest`` closest; and whether the exact shape was cached."""
    entries = [e for e in _read(env).values() if e.get("type") == problem.type.name]
    entries.sort(key=lambda e: shape_distance(e["size"], problem.size))
    out, exact = [], False
    for e in entries[:nearest]:
        try:
            cfg = tg.TritonConfig.from_params(dict(e["config"]))
        except (tg.TritonConfigError, KeyError, TypeError):
            continue  # an entry of another geko version: not a seed
        if tg.infeasible_reason(cfg, problem) is None:
            out.append(cfg.to_params())
            exact = exact or list(e["size"]) == list(problem.size)
    return out, exact
