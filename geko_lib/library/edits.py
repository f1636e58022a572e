"""Edits of a library in place, the original's ``trim`` and ``add_epilogues``: duplicate
sizes and unused solutions removed; bias, activation and scale-vector epilogues turned on (and
the names that say so). They work on any library-logic model and import none."""

from __future__ import annotations

import re

from .codec import Solutions

# Tensile data-type enums without epilogue support (f64, complex)
NO_EPILOGUE_TYPES = {1, 2, 3}
BIAS_TAG = {0: "S", 4: "H", 7: "B"}
_EPILOGUE_TAGS = re.compile(r"(?:_Bias[A-Z]+)?(?:_HAS)?(?:_SABV?)?(?:_SAV)?_UserArgs")


# --- trim ----------------------------------------------------------------------------------------

def trim(lib):
    """Duplicate sizes keep the entry with the highest gflops; unreferenced solutions go;
    solutions are renumbered 0..n-1 in their order and sizes re-pointed. In place."""
    best: dict[tuple, int] = {}
    for i, (size, entry) in enumerate(lib.exact_logic):
        key = tuple(size)
        if key not in best or entry[1] > lib.exact_logic[best[key]][1][1]:
            best[key] = i
    entries = [lib.exact_logic[i] for i in sorted(best.values())]
    referenced = {int(entry[0]) for _, entry in entries}
    positions = [p for p in range(len(lib.solutions)) if lib.solutions.index_of(p) in referenced]
    new_index = {lib.solutions.index_of(p): n for n, p in enumerate(positions)}
    kept = Solutions(lib.solutions.copy_entry(p) for p in positions)
    for n in range(len(kept)):
        kept.set_index(n, n)
    lib.solutions = kept
    lib.exact_logic = [[list(size), [new_index[int(entry[0])], entry[1]]] for size, entry in entries]
    return lib


# --- epilogues -------------------------------------------------------------------------------------

def epilogue_tag(problem_type: dict) -> str:
    """``_BiasSB_HAS_SAV`` for bf16, ``_BiasSHB_HAS_SAB_SAV`` for fp8 outputs."""
    types = "".join(BIAS_TAG.get(t, "") for t in problem_type.get("BiasDataTypeList", []))
    scale_ab = {"Scalar": "_SAB", "Vector": "_SABV"}.get(problem_type.get("UseScaleAB"), "")
    return f"_Bias{types}_HAS{scale_ab}_SAV"


def with_epilogue_tag(name: str, tag: str) -> str:
    if "_UserArgs" not in name:
        return name
    return _EPILOGUE_TAGS.sub(tag + "_UserArgs", name, count=1)


def add_epilogues(lib):
    """Turn on bias, activation and scale-alpha-vector epilogues (what applications call with),
    as the original does; f64 and complex libraries are left alone. In place."""
    pt = lib.problem_type
    data, dest = int(pt.get("DataType", 0)), int(pt.get("DestDataType", 0))
    if data in NO_EPILOGUE_TYPES:
        return lib
    pt["Activation"] = True
    pt["ActivationType"] = "hipblaslt_all"
    pt["UseBias"] = 1
    pt["BiasDataTypeList"] = [0, 4, 7] if dest > 10 else sorted({0, dest})
    pt["UseScaleAlphaVec"] = 1
    if data > 10 or dest > 10:
        pt["UseScaleAB"] = "Scalar"
    tag = epilogue_tag(pt)
    for i in range(len(lib.solutions)):
        solution = lib.solutions[i]
        solution["ActivationFuncCall"] = False
        for key in ("BaseName", "KernelNameMin", "SolutionNameMin"):
            if isinstance(solution.get(key), str):
                solution[key] = with_epilogue_tag(solution[key], tag)
    return lib


def epilogue_file_name(name: str, lib) -> str:
    return with_epilogue_tag(name, epilogue_tag(lib.problem_type))


# --- merge ---------------------------------------------------------------------------------------
