"""The original's data structures (``geko.schemas``): GemmType, GemmConfig and RunState.

``GemmType`` is geko's one GEMM-type record (``geko_lib.gemm``): it takes the original's six
fields ``(transA, transB, a_type, b_type, c_type, compute_type)`` with ``d_type`` defaulting to
``c_type``, and its factories ``from_hipblaslt`` and ``from_tensile``.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import pandas as pd

from . import files
from .files import sha256_of
from .errors import GekoError
from .gemm import GemmError, GemmProblem, GemmType  # noqa: F401 (re-exported API)

__all__ = ["GemmType", "GemmConfig", "RunState", "RunStateError"]


@dataclass
class GemmConfig:
    """One GEMM type and its sizes, each ``[M, N, batch_count, K]`` (the original's order)."""

    gemm_type: GemmType
    sizes: list

    def __post_init__(self):
        if not isinstance(self.gemm_type, GemmType):
            raise GemmError(f"gemm_type must be a GemmType, got {type(self.gemm_type).__name__}")
        if not self.sizes:
            raise GemmError("GemmConfig needs at least one size [M, N, batch_count, K]")
        checked = []
        for size in self.sizes:
            if len(size) != 4:
                raise GemmError(f"size {list(size)!r} must be [M, N, batch_count, K]")
            checked.append(list(GemmProblem(self.gemm_type, *size).size))
        self.sizes = checked

    @property
    def name(self) -> str:
        return self.gemm_type.name

    def problems(self) -> list[GemmProblem]:
        return [GemmProblem(self.gemm_type, *size) for size in self.sizes]

    def workload_log_rows(self) -> list[dict]:
        """One hipBLASLt mask-64 log row per size (GEMM_LOG_FIELDS, ``function``, ``call_count``),
        as ``--inline`` and ``--list`` workloads are written."""
        from . import workload

        frame = workload.rows_of(self.gemm_type, [tuple(s) for s in self.sizes])
        return [{k: v for k, v in row.items() if not pd.isna(v)}
                for row in frame.to_dict("records")]


class RunStateError(GekoError):
    """A workdir belongs to another input, or that input changed."""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


@dataclass
class RunState:
    """A workdir's identity, as the original's ``run_state.json``: the input it was made from
    (path and SHA-256) and how far the campaign got."""

    input_sha256: str
    input_path: str
    created_at: str = field(default_factory=_now)
    last_modified: str = field(default_factory=_now)
    configured: bool = False
    optimized: bool = False

    FILE = "run_state.json"

    @classmethod
    def for_input(cls, input_path) -> "RunState":
        return cls(input_sha256=sha256_of(input_path), input_path=str(input_path))

    @classmethod
    def load(cls, path) -> "RunState":
        """Read a run_state.json; keys this version does not know are ignored."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise RunStateError(f"{path}: cannot read the run state ({exc})") from None
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise RunStateError(f"{path}: not a run state ({exc})") from None

    def dump(self, path) -> Path:
        self.last_modified = _now()
        return files.write_text(path, json.dumps(asdict(self), indent=4) + "\n")

    def verify(self, input_path) -> None:
        """Refuse an input other than the one this workdir was made from."""
        if str(input_path) != self.input_path:
            raise RunStateError(f"Workdir belongs to input {self.input_path!r}, not "
                                f"{str(input_path)!r}: use another workdir, or delete this one "
                                "to start over")
        if sha256_of(input_path) != self.input_sha256:
            raise RunStateError(f"{input_path}: contents changed (hash mismatch) since this "
                                "workdir was made: use another workdir, or delete this one to "
                                "start over")
