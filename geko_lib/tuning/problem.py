"""Reading a TensileLite tuning YAML back: the GEMM type, its sizes, the fork parameters and
groups (the search space), the backend and the target architecture."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import files
from ..errors import GekoError
from ..gemm import GemmError, GemmType, dtype, split_codes
from .yaml_writer import MIXED_FNUZ


class TuningConfigError(GekoError, ValueError):
    pass


def _truth(value) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "1")


def gemm_type_of(problem_type: dict) -> GemmType:
    """The GEMM type a tuning YAML's ProblemType names, every field of it: TF32 math
    (``F32XdlMathOp: X`` on S data) and a D type other than C (geko's ``DataTypeD``), as
    ``yaml_writer.problem_type_lines`` writes them; a type read back as another would be
    tuned, and shipped, as the wrong GEMM."""
    data = str(problem_type["DataType"])
    data = {v: k for k, v in MIXED_FNUZ.items()}.get(data, data)
    gemm_type = GemmType.from_tensile(
        "T" if _truth(problem_type.get("TransposeA", False)) else "N",
        "T" if _truth(problem_type.get("TransposeB", False)) else "N",
        data, str(problem_type["DestDataType"]), str(problem_type["ComputeDataType"]))
    math_op = problem_type.get("F32XdlMathOp")
    if math_op not in (None, 0, "0", ""):
        if str(math_op) not in ("X", str(dtype("xf32_r").enum)):
            raise GemmError(f"F32XdlMathOp {math_op!r}: only X (TF32 math on f32 data) is known")
        gemm_type = dataclasses.replace(gemm_type, compute_type="c_xf32_r")
    if problem_type.get("DataTypeD") is not None:
        (d_type,) = split_codes(str(problem_type["DataTypeD"]))
        gemm_type = dataclasses.replace(gemm_type, d_type=d_type.hipblaslt)
    return gemm_type


@dataclass
class TuningConfig:
    path: Path
    gemm_type: GemmType
    sizes: list[tuple[int, int, int, int]]
    fork: dict[str, list]  # parameter -> candidate values
    groups: list[list[dict]]  # correlated groups: each a list of alternative entries
    backend: str  # "Ductile" or "Tensile"
    backend_config: dict = field(default_factory=dict)
    global_parameters: dict = field(default_factory=dict)
    library_logic: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def group_weights(self) -> dict[int, list[float]]:
        """Sampling weights per group position (Backend.Config.weights: group_<i>: [...])."""
        out = {}
        for entry in self.backend_config.get("weights") or []:
            for key, values in (entry or {}).items():
                match = re.fullmatch(r"group_(\d+)", str(key))
                if match:
                    out[int(match.group(1))] = [float(v) for v in values]
        return out

    @property
    def n_kernels(self) -> int:
        total = 1
        for values in self.fork.values():
            total *= len(values)
        for group in self.groups:
            total *= len(group)
        return total

    @classmethod
    def load(cls, path) -> "TuningConfig":
        path = Path(path)
        data = files.read_yaml(path, TuningConfigError, "tuning YAML")
        try:
            problem_type, body = data["BenchmarkProblems"][0]
        except (KeyError, IndexError, TypeError, ValueError):
            raise TuningConfigError(f"{path}: BenchmarkProblems must hold [ProblemType, "
                                    "parameters]") from None
        try:
            gemm_type = gemm_type_of(problem_type)
        except (KeyError, GemmError) as exc:
            raise TuningConfigError(f"{path}: ProblemType: {exc}") from None
        fork, groups = {}, []
        for entry in body.get("ForkParameters") or []:
            for name, values in (entry or {}).items():
                if name == "Groups":
                    groups = [[e for e in group] for group in values or []]
                else:
                    fork[name] = list(values) if isinstance(values, list) else [values]
        sizes = []
        for entry in body.get("BenchmarkFinalParameters") or []:
            for item in (entry or {}).get("ProblemSizes") or []:
                exact = item.get("Exact") if isinstance(item, dict) else None
                if not (isinstance(exact, list) and len(exact) >= 4):
                    raise TuningConfigError(f"{path}: ProblemSizes entry {item!r} is not "
                                            "Exact: [M, N, B, K]")
                sizes.append(tuple(int(v) for v in exact[:4]))
        if not sizes:
            raise TuningConfigError(f"{path}: no ProblemSizes")
        backend = data.get("Backend") or {}
        return cls(path, gemm_type, sizes, fork, groups, str(backend.get("Name", "Tensile")),
                   backend.get("Config") or {}, data.get("GlobalParameters") or {},
                   data.get("LibraryLogic") or {})
