"""The TensileLite tuning YAML, written line by line (not by a YAML dumper) in the original
generator's layout: header comment, GlobalParameters, BenchmarkProblems (ProblemType, then the
solution parameters with ForkParameters, Groups and BenchmarkFinalParameters), LibraryLogic,
Backend, footer comment.

Formatting rules: Python booleans of GlobalParameters and Backend as ``true``/``false``;
ProblemType flags as ``True``/``False`` (the original writes strings there); booleans inside fork
lists and groups as ``True``/``False``; strings in fork lists double-quoted; inactive fork
parameters written commented out (``#     - Name: [...]``); single-value group entries unwrapped to
scalars (``GlobalSplitU: 4``); ``Exact`` sizes as ``[ M, N, B, K ]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..files import write_text
from ..gemm import BY_NAME, GemmType
from .params import PARAM_META, ParamSpace

VERSION = "2.01"
_FP8 = {"F8", "B8", "F8N", "B8N"}
NO_EPILOGUE_FAMILIES = ("D", "C", "Z")  # DGEMM and complex: epilogue keys commented out


@dataclass
class TuningYamlSpec:
    """Everything one tuning YAML holds, before it is written (``tuning.problem.TuningConfig``
    is a tuning YAML read back)."""

    name: str  # entity, e.g. BBS_TN_0 (the file is <name>.yaml)
    gemm_type: GemmType
    sizes: list[tuple[int, int, int, int]]  # [M, N, B, K]
    space: ParamSpace
    enqueues_per_sync: int
    num_warmups: int
    schedule_name: str
    architecture_name: str
    device_names: list[str]
    backend: str = "Ductile"  # "Ductile" | "Tensile"
    sleep_percent: int = 50
    epilogues: bool = True
    mi_family: str = "B"
    ductile: dict = field(default_factory=dict)  # soo, n_elements_to_validate, pop_size, weights

    @property
    def kernels(self) -> int:
        return self.space.count_kernels()


# --------------------------------------------------------------------------------------------
# value formatting


def fmt(value) -> str:
    """A value inside fork lists and groups."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


def lower_bool(value: bool) -> str:
    return "true" if value else "false"


def cap_bool(value: bool) -> str:
    return "True" if value else "False"


def abbreviate(values: list) -> str:
    """``[0, 1, ..., 8, 9]`` for long ranges."""
    if len(values) <= 6:
        return fmt(list(values))
    return "[" + ", ".join(fmt(v) for v in values[:2]) + ", ..., " + \
        ", ".join(fmt(v) for v in values[-2:]) + "]"


def param_comment(name: str) -> str:
    meta = PARAM_META.get(name)
    if meta is None:
        return ""
    default, valid = meta
    return f" # Default Value: {fmt(default)} # Range: {abbreviate(valid)}"


# --------------------------------------------------------------------------------------------
# ProblemType


# geko's code of mixed FNUZ fp8 inputs -> TensileLite's spelling in a tuning YAML
MIXED_FNUZ = {"F8NB8N": "F8B8N", "B8NF8N": "B8F8N"}


def problem_data_types(gemm_type: GemmType) -> tuple[str, str, str]:
    """(DataType, DestDataType, ComputeDataType) as the tuning YAML spells them: TF32 is S with
    F32XdlMathOp X; mixed FNUZ fp8 is TensileLite's F8B8N/B8F8N."""
    if gemm_type.is_tf32:
        return "S", "S", "S"
    data = gemm_type.data_type
    data = MIXED_FNUZ.get(data, data)
    return data, gemm_type.dest_data_type, gemm_type.compute_data_type


def _is_fp8(code: str) -> bool:
    return any(code.startswith(p) for p in _FP8) or code in ("F8B8", "B8F8", "F8B8N", "B8F8N")


def bias_type_args(gemm_type: GemmType) -> list[str]:
    """[DataType]; DestDataType when DataType is fp8; S when both are fp8 (and for TF32)."""
    data, dest, _ = problem_data_types(gemm_type)
    if gemm_type.is_tf32:
        return ["S"]
    if _is_fp8(data):
        return ["S"] if _is_fp8(dest) else [dest]
    return [data]


def epilogues_on(cfg: TuningYamlSpec) -> bool:
    return cfg.epilogues and cfg.mi_family not in NO_EPILOGUE_FAMILIES


def _problem_type(cfg: TuningYamlSpec) -> list[str]:
    t = cfg.gemm_type
    data, dest, compute = problem_data_types(t)
    ta, tb = t.transA == "T", t.transB == "T"
    ep = "" if epilogues_on(cfg) else "#"
    lines = [
        "- - OperationType: GEMM",
        f"    DataType: {data}",
        f"    DestDataType: {dest}",
        f"    ComputeDataType: {compute}",
        f"    HighPrecisionAccumulate: {lower_bool(t.high_precision_accumulate)}",
        f"    TransposeA: {cap_bool(ta)}",
        f"    TransposeB: {cap_bool(tb)}",
        f"    #ComplexConjugateA: {cap_bool(ta)}",
        f"    #ComplexConjugateB: {cap_bool(tb)}",
        "    UseBeta: True",
        f"    {ep}Activation: True",
        f"    {ep}ActivationHPA: True",
        f"    {ep}ActivationType: hipblaslt_all",
        f"    {ep}UseScaleAlphaVec: 1",
        f"    {ep}UseBias: 1",
    ]
    if _is_fp8(data) or _is_fp8(dest):
        lines.append("    UseScaleAB: Scalar")
    lines.append("    Batched: True")
    if t.is_tf32:
        lines.append("    F32XdlMathOp: X")
    if t.d_type != t.c_type:  # geko's key, as in library logic: a D type other than C's
        lines.append(f"    DataTypeD: {BY_NAME[t.d_type].tensile}")
    return lines


# --------------------------------------------------------------------------------------------
# sections


def _global_parameters(cfg: TuningYamlSpec) -> list[str]:
    int8 = BY_NAME[cfg.gemm_type.a_type].tensile == "I8"
    return [
        "GlobalParameters:",
        "  MinimumRequiredVersion: 5.0.0",
        f"  SleepPercent: {cfg.sleep_percent}",
        f"  EnqueuesPerSync: {cfg.enqueues_per_sync}",
        f"  NumWarmups: {cfg.num_warmups}",
        "  KernelTime: true",
        "  NumElementsToValidate: 0",
        "  DataInitTypeBeta: 1",
        "  DataInitTypeAlpha: 1",
        f"  DataInitTypeA: {3 if int8 else 12}",
        f"  DataInitTypeB: {3 if int8 else 13}",
        "  DataInitTypeC: 12",
        "  DataInitTypeD: 12",
        "  DataInitTypeScaleAlphaVec: 12",
        "  CSVExportWinner: true",
        "  CSVMergeSameProblemID: true",
        "  PreciseKernelTime: false",
        "  Device: 0",
        "  SkipSlowSolutionRatio: 0.0",
        "  #PrintSolutionRejectionReason: true",
        "  KeepBuildTmp: false",
        "  RotatingBufferSize: 1024",
        "  UseEffLike: false",
    ]


def _fork_parameters(space: ParamSpace) -> list[str]:
    lines = ["    ForkParameters:"]
    for p in space.params:
        if p.active:
            lines.append(f"    - {p.name}: {fmt(p.values)}{param_comment(p.name)}")
        else:
            note = f" # inactive: {p.note}" if p.note else " # inactive"
            lines.append(f"#     - {p.name}: {fmt(p.values)}{note}")
    lines.append("    - Groups:")
    for g in space.groups:
        if not g.active:
            lines.append(f"      # inactive group: {g.label or ' x '.join(g.names)}")
            continue
        for i, entry in enumerate(g.entries):
            for j, (name, value) in enumerate(entry.items()):
                prefix = ("      - - " if i == 0 else "        - ") if j == 0 else "          "
                text = f"{prefix}{name}: {fmt(_unwrap(value, name))}"
                if j == 0 and g.is_mi and g.meta is not None and g.meta[i] is not None:
                    text += f" #{g.meta[i].comment()} "
                lines.append(text)
    return lines


def _unwrap(value, name):
    """Single-value group entries are scalars (MatrixInstruction and WorkGroup are lists)."""
    if isinstance(value, (list, tuple)) and len(value) == 1 and name not in (
            "MatrixInstruction", "WorkGroup"):
        return value[0]
    return value


def _backend(cfg: TuningYamlSpec) -> list[str]:
    lines = ["Backend:", f"  Name: {cfg.backend}"]
    if cfg.backend != "Ductile":
        return lines
    d = cfg.ductile
    lines += ["  Config:",
              f"    soo: {lower_bool(bool(d.get('soo', False)))}",
              f"    n_elements_to_validate: {int(d.get('n_elements_to_validate', 0))}"]
    if d.get("pop_size") is not None:
        lines.append(f"    pop_size: {int(d['pop_size'])}")
    weights = d.get("weights")
    if weights:
        lines.append("    weights:")
        for group_name, values in weights.items():
            lines.append(f"      - {group_name}: [{', '.join(repr(float(v)) for v in values)}]")
    return lines


def render(cfg: TuningYamlSpec) -> str:
    """The text of one tuning YAML."""
    t = cfg.gemm_type
    out = [
        "#==================================",
        "# This yaml is auto-generated by geko_lib.tuning (layout of geko.config_generator).",
        f"# Version: {VERSION}",
        f"# GEMM Type: {t.name}",
        f"# Total #kernels: {cfg.kernels}",
        "#==================================",
        "",
    ]
    out += _global_parameters(cfg)
    out.append("BenchmarkProblems:")
    out += _problem_type(cfg)
    out += ["  - InitialSolutionParameters: ",
            "    BenchmarkCommonParameters:",
            "    - KernelLanguage: [Assembly]"]
    out += _fork_parameters(cfg.space)
    out += ["    BenchmarkJoinParameters: ",
            "    BenchmarkFinalParameters:",
            "    - ProblemSizes:"]
    for m, n, b, k in cfg.sizes:
        out.append(f"      - Exact: [ {m}, {n}, {b}, {k} ]")
    if epilogues_on(cfg):
        out.append(f"    - BiasTypeArgs: {fmt_plain(bias_type_args(t))}")
    out += ["LibraryLogic:",
            f'  ScheduleName: "{cfg.schedule_name}"',
            f'  ArchitectureName: "{cfg.architecture_name}"',
            "  DeviceNames: [" + ", ".join(f'"{d}"' for d in cfg.device_names) + "]",
            "#LibraryClient: "]
    out += _backend(cfg)
    out.append(f"# End of {cfg.name}.yaml ")
    return "\n".join(out) + "\n"


def fmt_plain(values: list[str]) -> str:
    return "[" + ", ".join(values) + "]"


def write(path, cfg: TuningYamlSpec) -> Path:
    """Write one tuning YAML atomically."""
    return write_text(Path(path), render(cfg))
