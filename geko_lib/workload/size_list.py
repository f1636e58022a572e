"""The generator ``--list`` YAML: one GEMM type and its sizes (or a grid), and the synthetic rows
of sizes (also used by ``--inline`` and ``GemmConfig.workload_log_rows``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
import yaml

from .. import gemm, newer_revisions
from . import grid_sizes

from .errors import WorkloadError, _Bad
from .parsing import (_DuplicateKey, _Loader, _missing_file, _read_text, _yaml_error_line,
                      _yaml_problem)
from .support import UNCHECKED, GemmSupport, Unchecked
from .table import _Rows, _convert_transpose, _describe, _normalize
from ..log_setup import LOGGER



log = logging.getLogger(LOGGER)


# ---- generator --list YAML ------------------------------------------------------------------

def _list_int(value, path, line, key, minimum=1, maximum=None) -> int:
    if type(value) is not int or value < minimum or (maximum is not None and value > maximum):
        rng = f"an integer in {minimum}..{maximum}" if maximum is not None else \
            ("a positive integer" if minimum == 1 else f"an integer >= {minimum}")
        raise WorkloadError(path, line, key, f"must be {rng}, got {_describe(value)}")
    return value


def _gemm_type_from_codes(values: dict, path, line_of_key: Callable[[str], int | None]) -> gemm.GemmType:
    """Tensile codes -> GemmType, with errors naming the offending key."""
    for key in ("TRANSA", "TRANSB", "DataType", "DestDataType", "ComputeDataType"):
        if key not in values or values[key] is None:
            raise WorkloadError(path, line_of_key(key), key, "missing required key")
    for key in ("TRANSA", "TRANSB"):
        try:
            _convert_transpose(values[key])
        except _Bad as bad:
            raise WorkloadError(path, line_of_key(key), key, bad.message) from None
    for key, single in (("DataType", False), ("DestDataType", True), ("ComputeDataType", True)):
        code = values[key]
        if not isinstance(code, str):
            raise WorkloadError(path, line_of_key(key), key,
                                f"must be a Tensile type code, got {_describe(code)}")
        try:
            parts = gemm.split_codes(code)
        except gemm.GemmError as exc:
            raise WorkloadError(path, line_of_key(key), key, str(exc)) from None
        if (single and len(parts) != 1) or not 1 <= len(parts) <= 2:
            raise WorkloadError(path, line_of_key(key), key,
                                f"{code!r} must be {'one' if single else 'one or two'} Tensile type code(s)")
    try:
        return gemm.GemmType.from_tensile(values["TRANSA"], values["TRANSB"], values["DataType"],
                                          values["DestDataType"], values["ComputeDataType"])
    except gemm.GemmError as exc:
        raise WorkloadError(path, line_of_key("DataType"), "DataType", str(exc)) from None


def rows_of(gemm_type: gemm.GemmType, sizes: Sequence[tuple[int, int, int, int]]) -> pd.DataFrame:
    """Canonical workload rows, one call each, for one GEMM type's sizes [M, N, batch, K]: the
    log rows of ``GemmConfig.workload_log_rows`` (the original's API), which names no platform
    to check them against; the reader that takes a log of them in does (``support.UNCHECKED``
    says so by name)."""
    return _synthetic_rows("<sizes>", gemm_type, sizes, [], UNCHECKED)


def _synthetic_rows(path, gemm_type: gemm.GemmType, sizes: Sequence[tuple[int, int, int, int]],
                    lines: Sequence[int | None], support: GemmSupport | Unchecked,
                    arch: str | None = None) -> pd.DataFrame:
    rows = _Rows(path, lambda i: lines[i] if i < len(lines) else None)
    type_fields = gemm_type.log_fields()
    keys = ("function", "M", "N", "K", "transA", "transB", "batch_count", "a_type", "b_type",
            "c_type", "d_type", "compute_type", "call_count")
    for m, n, b, k in sizes:
        rows.add(keys, ["matmul", m, n, k, type_fields["transA"], type_fields["transB"], b,
                        type_fields["a_type"], type_fields["b_type"], type_fields["c_type"],
                        type_fields["d_type"], type_fields["compute_type"], 1])
    return _normalize(rows, support, arch)


def read_list(path, *, support: GemmSupport, arch: str | None = None) -> pd.DataFrame:
    """The generator ``--list`` YAML -> canonical rows (call_count 1, no ld/strides).

    ``TRANSA``, ``TRANSB``, ``DataType``, ``DestDataType``, ``ComputeDataType`` (Tensile codes);
    generator options are ignored here. ``SIZE_OPTION: 0`` (default): ``Sizes: [[M, N, B, K],
    ...]`` (duplicates dropped, order kept); ``1``: the original's grid for the compute units of
    ``arch`` (the campaign's; else the file's ``ARCH``), ``GRID_DENSITY`` 1..5, default 4
    (:mod:`geko_lib.workload.grid_sizes`); ``2``: ``GEMM_LOG_PATH``, a workload file read with
    :func:`read`, relative to the list file. The GEMMs' types are checked for that arch too.

    A file may hold several such mappings as YAML documents (``---`` between them), one GEMM
    type each: the original README's "multiple GEMM problems per file"; their rows are read in
    order, a GEMM listed twice read once (as a size listed twice in one document).
    ``SIZE_OPTION 2`` (a whole workload log) is its file's only document.
    """
    problem = _missing_file(path)
    if problem:
        raise problem
    text = _read_text(path)
    try:
        nodes = list(yaml.compose_all(text, Loader=_Loader))
        documents = list(yaml.load_all(text, Loader=_Loader))
    except _DuplicateKey as dup:
        raise WorkloadError(path, dup.line, dup.key, f"key {dup.key!r} is given twice") from None
    except yaml.YAMLError as exc:
        raise WorkloadError(path, _yaml_error_line(exc), "syntax",
                            f"cannot parse YAML: {_yaml_problem(exc)}") from None
    given = [(data, node) for data, node in zip(documents, nodes) if data is not None]
    if not given:
        raise WorkloadError(path, None, "file", "empty list file")
    if len(given) == 1:
        return _read_document(path, *given[0], support, arch)
    frames = []
    for data, node in given:
        line = node.start_mark.line + 1
        if isinstance(data, dict) and data.get("SIZE_OPTION") == 2:
            raise WorkloadError(path, line, "SIZE_OPTION",
                                "SIZE_OPTION 2 (a workload log) must be its list file's only "
                                "document; give the log's GEMMs with --workload-log")
        frames.append(_read_document(path, data, node, support, arch, line))
    table = pd.concat(frames, ignore_index=True)
    keys = [c for c in table.columns if c != "call_count"]
    return table.drop_duplicates(subset=keys).reset_index(drop=True)


def _named_log(path, data, line_of_key) -> Path:
    """The workload log a SIZE_OPTION 2 list names (relative to the list), which must exist."""
    log_path = data.get("GEMM_LOG_PATH")
    if not isinstance(log_path, str) or not log_path.strip():
        raise WorkloadError(path, line_of_key("GEMM_LOG_PATH"), "GEMM_LOG_PATH",
                            "SIZE_OPTION 2 needs GEMM_LOG_PATH, the path of a workload log")
    target = Path(os.path.expanduser(log_path.strip()))
    if not target.is_absolute():
        target = Path(path).parent / target
    if not target.exists():
        raise WorkloadError(path, line_of_key("GEMM_LOG_PATH"), "GEMM_LOG_PATH",
                            f"workload log {str(target)!r} does not exist")
    return target


def _listed_sizes(path, data, key_nodes, line_of_key) -> dict[tuple, int | None]:
    """A SIZE_OPTION 0 list's [M, N, B, K] sizes, each once, with the line it is first on."""
    sizes_value = data.get("Sizes")
    if not isinstance(sizes_value, list) or not sizes_value:
        raise WorkloadError(path, line_of_key("Sizes"), "Sizes",
                            "SIZE_OPTION 0 needs Sizes: a non-empty list of [M, N, B, K]")
    sizes: dict[tuple, int | None] = {}
    for item, item_node in zip(sizes_value, key_nodes["Sizes"][1].value):
        line = item_node.start_mark.line + 1
        if not isinstance(item, list) or len(item) != 4:
            raise WorkloadError(path, line, "Sizes",
                                f"each size must be [M, N, B, K], got {item!r}")
        for name, value in zip(("M", "N", "B", "K"), item):
            if type(value) is not int or value < 1:
                raise WorkloadError(path, line, "Sizes",
                                    f"{name} must be a positive integer, got {_describe(value)}")
        sizes.setdefault(tuple(item), line)
    return sizes


def _read_document(path, data, node, support: GemmSupport, arch: str | None,
                   line: int | None = None) -> pd.DataFrame:
    """One mapping of a --list file (``line``: where its document starts, in a file of
    several)."""
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        what = "a --list file" if line is None else f"each document of a --list file (the one " \
            f"on line {line} is not)"
        raise WorkloadError(path, line, "file",
                            f"{what} must be a YAML mapping (TRANSA, TRANSB, DataType, ...)")
    key_nodes = {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}

    def line_of_key(key):
        return key_nodes[key][0].start_mark.line + 1 if key in key_nodes else None

    for key in newer_revisions.MX_LIST_KEYS:  # the newest generator's MX keys
        if data.get(key) not in (None, False, 0, "", "none", "None"):
            raise WorkloadError(path, line_of_key(key), key,
                                f"{data[key]!r}: {newer_revisions.MX_WHY}")
    file_arch = data.get("ARCH") if isinstance(data.get("ARCH"), str) else None
    types_arch = arch or file_arch  # the arch the GEMMs are for: their types must run on it
    option = data.get("SIZE_OPTION", 0)
    option = 0 if option is None else option
    if type(option) is not int or option not in (0, 1, 2):
        raise WorkloadError(path, line_of_key("SIZE_OPTION"), "SIZE_OPTION",
                            f"must be 0 (Sizes), 1 (grid) or 2 (GEMM_LOG_PATH), got {_describe(option)}")
    if option == 2:
        from .reader import read  # a list may name a workload log (SIZE_OPTION 2)

        return read(_named_log(path, data, line_of_key), support=support, arch=types_arch)

    gemm_type = _gemm_type_from_codes(data, path, line_of_key)
    if option == 0:
        sizes = _listed_sizes(path, data, key_nodes, line_of_key)
        return _synthetic_rows(path, gemm_type, list(sizes), list(sizes.values()), support,
                               types_arch)

    density = _list_int(data.get("GRID_DENSITY", grid_sizes.DEFAULT_DENSITY), path,
                        line_of_key("GRID_DENSITY"), "GRID_DENSITY", 1, 5)
    target = arch or data.get("ARCH")
    try:
        sizes_grid = grid_sizes.grid(grid_sizes.compute_units(target), density)
    except ValueError as exc:
        raise WorkloadError(path, line_of_key("ARCH"), "ARCH",
                            f"SIZE_OPTION 1 sizes the grid by the GPU's compute units: {exc}") \
            from None
    line = line_of_key("SIZE_OPTION")
    return _synthetic_rows(path, gemm_type, sizes_grid, [line] * len(sizes_grid), support,
                           types_arch)
