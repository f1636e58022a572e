"""hipblaslt-bench: the YAML rows geko writes, its command line and environment, and its output.

Nothing here runs a process (platform.py does); everything is a pure function of its inputs, so
the exact rows, argv and environment of every phase are contract-tested.

Rows (``hipblaslt-bench --yaml F`` reads a YAML list of flow mappings) carry every option as a
key: the GEMM (``M, N, K, batch_count``, transposes, types), ``alpha``/``beta``,
``initialization``, timing (``iters``, ``cold_iters``, ``rotating``, ``flush``,
``use_gpu_timer``) and ``print_kernel_info`` so every result names its solution and kernel.
Dense-search rows ask the heuristic for all solutions (``algo_method: 0``,
``requested_solution_num: -1``, ``skip_slow_solution_ratio``); verify rows run once with the
norm and allclose checks.

Output: a preamble (version, device, "Rotating buffer ...", "Is supported ..."), then per
benchmarked solution a CSV header (``[i]:transA,transB,...``, or without the ``[i]:`` prefix in
older builds), one value line, and with ``print_kernel_info`` the ``--Solution index:``,
``--Solution name:`` and ``--kernel name:`` lines. When several solutions ran, a ``Winner:``
line precedes a repeat of the fastest one's block. :func:`parse_bench_output` reads all of it
into the canonical results table and refuses anything it cannot read, naming the line.

Columns are read by name, never by position: builds print other performance column sets (the
classic 100200 one; the 2025 ``HIPBLASLT_BENCH_EFF=1`` set with ``num_cu's`` and ``efficiency``
between ``hipblaslt-Gflops`` and ``hipblaslt-GB/s``; the 2026 ``HIPBLASLT_BENCH_PERF=1`` set with
swizzle, granularity, memory-byte, frequency and ``efficiency`` columns before
``hipblaslt-Gflops``), and releases add columns; unknown ones are kept under their printed name.
"""

from __future__ import annotations

import csv
import math
import re
from typing import Mapping, Sequence

import pandas as pd

from ...bench_formats import rows as bench_rows
from ...gemm import (GEMM_FIELDS, GemmError, GemmProblem, dtype, normalize_compute_type,
                     normalize_transpose, scale_type_for)
from .. import PlatformError, results_frame

PROBE_ITERS, PROBE_COLD_ITERS = 10, 2  # a short first pass that measures the latency
FAILED_ERROR = 1e6  # the original's error of a failed check (atol/rtol "failed")

LIBPATH_VAR = "HIPBLASLT_TENSILE_LIBPATH"
FREQ_VAR = "HIPBLASLT_BENCH_FREQ"  # hipBLASLt checks presence only: any value turns it on
VISIBLE_VARS = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


class BenchOutputError(PlatformError):
    """hipblaslt-bench output geko cannot read: ``<source>:<line>: <what broke>``."""

    def __init__(self, source, line: int | None, message: str):
        self.source, self.line, self.message = str(source), line, message
        where = f"{source}:{line}" if line else str(source)
        super().__init__(f"{where}: {message}")


# --- rows ------------------------------------------------------------------------------------------

def base_row(problem: GemmProblem) -> dict:
    """The GEMM of a row: what every phase's rows share (keys as hipblaslt-bench names them),
    with the application's leading dimensions and strides where its log recorded them."""
    t = problem.type
    return {"function": "matmul", "transA": t.transA, "transB": t.transB,
            "M": problem.m, "N": problem.n, "K": problem.k, **dict(problem.layout),
            "batch_count": problem.batch,
            "scaleA": 0, "scaleB": 0, "a_type": t.a_type, "b_type": t.b_type,
            "c_type": t.c_type, "d_type": t.d_type, "scale_type": scale_type_for(t.compute_type),
            "compute_type": t.log_compute_type, "alpha": 1.0, "beta": 0.0,
            "initialization": "trig_float"}


def bench_row(problem: GemmProblem, iters: int, cold_iters: int, rotating_mb: int,
              flush: bool = True) -> dict:
    """One timing of the default (or HIPBLASLT_TENSILE_LIBPATH's) solution."""
    return base_row(problem) | {"rotating": int(rotating_mb), "flush": bool(flush),
                                "use_gpu_timer": True, "print_kernel_info": True,
                                "iters": int(iters), "cold_iters": int(cold_iters)}


def search_row(problem: GemmProblem, latency_us: float | None, duration: float,
               rotating_mb: int) -> dict:
    """Every solution the heuristic returns, timed (the dense search; the same rows as the
    search chunks that geko_lib.search writes from gemms.csv)."""
    fields = problem.gemm_fields() | {"scaleA": 0, "scaleB": 0}
    return bench_rows.search_row(fields, latency_us, duration, rotating_mb)


def verify_row(problem: GemmProblem) -> dict:
    """One call checked against the CPU reference (norm and allclose), no rotating/flush."""
    return base_row(problem) | {"print_kernel_info": True, "norm_check": 1,
                                "norm_check_assert": 0, "allclose_check": 1, "iters": 1,
                                "cold_iters": 0}


# --- command line and environment --------------------------------------------------------------

def command(bench, yaml_path, device: int) -> list[str]:
    """The only command line geko runs hipblaslt-bench with (options travel in the rows)."""
    return [str(bench), "--yaml", str(yaml_path), "--device", str(int(device))]


def device_ordinal(device: int, environ: Mapping[str, str]) -> int:
    """hipblaslt-bench's ``--device`` counts visible devices: where a cluster allocation pinned
    the job with HIP/ROCR_VISIBLE_DEVICES, the leased id is a position in that list."""
    for var in VISIBLE_VARS:
        ids = [part.strip() for part in environ.get(var, "").split(",") if part.strip()]
        if str(device) in ids:
            return ids.index(str(device))
    return int(device)


def environment(base: Mapping[str, str], libpath=None, bench_freq: bool = False) -> dict:
    """The child's environment: the tuned library only where asked (a reference run must never
    inherit one from the caller's shell), clock-frequency columns only where asked."""
    env = dict(base)
    env.pop(LIBPATH_VAR, None)
    env.pop(FREQ_VAR, None)
    if libpath is not None:
        env[LIBPATH_VAR] = str(libpath)
    if bench_freq:
        env[FREQ_VAR] = "1"
    return env


# --- output --------------------------------------------------------------------------------------

_BLOCK = re.compile(r"^\[(\d+)\]:(.*)$")
_SOLUTION_LINE = re.compile(r"^--(Solution index|Solution name|kernel name):(.*)$")
_ROW_START = re.compile(r"^[NTCnt]\s*,\s*[NTCnt]\s*,")  # a value line starts with transA,transB
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")  # solution and kernel names: Tensile identifiers
# header names: a letter, then anything printable but a blank, a comma or "=" (key=value text is
# not a header). Real names carry punctuation: hipblaslt-GB/s, CPU-us, HIPBLASLT_BENCH_EFF=1's num_cu's
_COLUMN = re.compile(r"^[A-Za-z][^\x00-\x20,=\x7f]*$")
_PAREN = re.compile(r"\(([^()]*)\)")  # complex scalars print as (re,im)

# output column -> canonical column (hipblaslt-bench spellings over the years)
_RENAMES = {"M": "m", "N": "n", "K": "k", "hipblaslt-Gflops": "gflops", "hipblaslt-GB/s": "gbps",
            "soulution_index": "solution_index", "solutionIdx": "solution_index",
            "solution_name": "solution_name", "kernel_name": "kernel", "norm_error_1": "norm_error",
            "lowest-avg-freq": "lowest_avg_freq", "lowest-median-freq": "lowest_median_freq",
            "avg-MCLK": "avg_MCLK", "median-MCLK": "median_MCLK"}
_SOLUTION_KEYS = {"Solution index": "solution_index", "Solution name": "solution_name",
                  "kernel name": "kernel"}
_REQUIRED = ("transA", "transB", "batch_count", "m", "n", "k", "compute_type", "us")
_SIZES = ("batch_count", "m", "n", "k")
_TYPES = ("a_type", "b_type", "c_type", "d_type")
# the original's name for each extra it keeps beside the canonical gflops/gbps
_ORIGINAL_PERF = {"gflops": "hipblaslt-Gflops", "gbps": "hipblaslt-GB/s"}


def _unquote(line: str) -> str:
    """Outputs pasted inside a diff keep their ``+`` markers; the text after it is the output."""
    if line.startswith("+ ") or line == "+":
        return line[2:]
    return line


def _split_csv(text: str) -> list[str]:
    return [f.strip() for f in next(csv.reader([text]))]


def _split_values(text: str) -> list[str]:
    """A value line's fields; complex scalars ``(re,im)`` stay one field."""
    return _split_csv(_PAREN.sub(r'"(\1)"', text))


class _Reader:
    """Line-by-line reader of one output (see the module docstring)."""

    def __init__(self, source):
        self.source = source
        self.header: list[str] | None = None
        self.printed: list[str] = []
        self.header_line = 0
        self.awaiting_row = False  # a header was read and its value line has not come yet
        self.winner_next = False
        self.rows: list[dict] = []

    def fail(self, line: int | None, message: str):
        raise BenchOutputError(self.source, line, message)

    def read(self, text: str) -> list[dict]:
        for number, raw in enumerate(text.splitlines(), 1):
            self.line(number, _unquote(raw.rstrip("\r")).strip())
        if self.awaiting_row:
            self.fail(self.header_line, "result header has no value line (truncated output?)")
        if not self.rows:
            self.fail(None, "no hipblaslt-bench result found (no 'transA,transB,...' header "
                            "followed by a value line)")
        return self.rows

    def line(self, number: int, s: str) -> None:
        if not s:
            return
        block = _BLOCK.match(s)
        if block:
            s = block.group(2).strip()
            if not s:  # "[0]:" alone: the value line follows (heuristic print)
                return
        if s.startswith("transA,"):
            self.start_header(number, s)
        elif s.startswith("Winner:"):
            self.winner_next = True
        elif s.startswith("--"):
            self.solution_line(number, s)
        elif self.header is not None and (_ROW_START.match(s) or self.looks_like_values(s)):
            self.value_line(number, s)
        # anything else is informational: version, device, "Is supported", "Skip solution", warnings

    def looks_like_values(self, s: str) -> bool:
        """A header's value line, even one whose transposes are wrong (refused by name then)."""
        return self.awaiting_row and s.count(",") >= len(self.header) - 1

    def start_header(self, number: int, s: str) -> None:
        if self.awaiting_row:
            self.fail(self.header_line, "result header has no value line before the next "
                                        f"header (line {number})")
        printed = _split_csv(s)
        odd = next((name for name in printed if not _COLUMN.match(name)), None)
        if odd is not None:
            self.fail(number, f"result header column {odd!r} is not a column name")
        names = [_RENAMES.get(name, name) for name in printed]
        missing = [c for c in _REQUIRED if c not in names]
        if not any(t in names for t in _TYPES):
            missing.append("d_type")
        if missing:
            self.fail(number, f"result header lacks column(s) {', '.join(missing)}")
        self.header, self.header_line, self.awaiting_row = names, number, True
        self.printed = printed  # the names as the output spells them, for messages

    def value_line(self, number: int, s: str) -> None:
        values = _split_values(s)
        if len(values) < len(self.header):  # a row cut short: which columns have no value
            lacking = self.printed[len(values):]
            self.fail(number, f"{len(values)} values, but the header (line {self.header_line}) "
                              f"has {len(self.header)} columns: no value for column(s) "
                              f"{', '.join(lacking)}")
        if len(values) != len(self.header):
            self.fail(number, f"{len(values)} values, but the header (line {self.header_line}) "
                              f"has {len(self.header)} columns")
        row = _typed_row(dict(zip(self.header, values)), lambda msg: self.fail(number, msg))
        row["winner"] = self.winner_next
        row["line"] = number
        self.winner_next, self.awaiting_row = False, False
        self.rows.append(row)

    def solution_line(self, number: int, s: str) -> None:
        match = _SOLUTION_LINE.match(s)
        if not match:
            return  # other "--" lines are informational
        if not self.rows or self.awaiting_row:
            self.fail(number, f"'--{match.group(1)}:' line without a result row before it")
        key, value = _SOLUTION_KEYS[match.group(1)], match.group(2).strip()
        self.rows[-1][key] = _solution_value(key, value, lambda msg: self.fail(number, msg))


def _solution_value(key: str, value: str, fail):
    if key == "solution_index":
        try:
            index = int(value)
        except ValueError:
            fail(f"solution index {value!r} is not an integer")
        if index < -1:
            fail(f"solution index {index} is negative")
        return index
    if value and not _NAME.match(value):
        fail(f"{key.replace('_', ' ')} {value!r} has characters a Tensile name never has")
    return value


def _number(value: str):
    try:
        return float(value)
    except ValueError:
        return None


def _typed_row(raw: dict, fail) -> dict:
    """Identity fields checked and typed, names checked, numbers as floats; fail(msg) raises."""
    row: dict = {}
    for key in ("transA", "transB"):
        try:
            row[key] = normalize_transpose(raw[key])
        except GemmError as exc:
            fail(f"{key}: {exc}")
    for key in _SIZES:
        value = _number(raw[key])
        if value is None or not value.is_integer() or value < 1:
            fail(f"{key} {raw[key]!r} is not a positive integer")
        row[key] = int(value)
    types = {t: raw[t] for t in _TYPES if t in raw}
    for t in _TYPES:  # the oldest builds print d_type only: one precision for all
        types.setdefault(t, types.get("d_type") or next(iter(types.values())))
    compute = normalize_compute_type(raw["compute_type"])
    for key, name in (*types.items(), ("compute_type", compute)):
        try:
            dtype(name)
        except GemmError:
            fail(f"{key} {name!r} is not a hipBLASLt data type")
    row.update(types, compute_type=compute)
    row["scaleA"], row["scaleB"] = (_scale(raw.get(k, "0"), k, fail) for k in ("scaleA", "scaleB"))
    us = _number(raw["us"])
    if us is None or not math.isfinite(us) or us <= 0:
        fail(f"us {raw['us']!r} is not a positive time")
    row["us"] = us
    for key, value in raw.items():
        if key in row or key in _TYPES:
            continue
        if key in ("solution_name", "kernel"):
            row[key] = _solution_value(key, value, fail)
        elif key == "solution_index":
            row[key] = _solution_value(key, value, fail)
        else:
            number = _number(value)
            if number is None and not value.isprintable():
                fail(f"{key} {value!r} holds control characters")
            row[key] = value if number is None else number
    return row


def _scale(value: str, key: str, fail) -> int:
    number = _number(value)
    if number is None or not number.is_integer():
        fail(f"{key} {value!r} is not an integer")
    return int(number)


def parse_bench_output(text: str, source="<hipblaslt-bench output>") -> pd.DataFrame:
    """Every result of one hipblaslt-bench output as the canonical results table: GEMM
    identity, ``us``, ``gflops``, ``gbps`` (hipblaslt-bench's own figures; gbps computed from
    the minimum bytes where the build does not print it), ``solution_index`` (-1 where not
    printed), ``solution_name``, ``kernel``, then ``winner`` (the row follows a ``Winner:``
    line), ``line`` (where the value line is), and every other printed column under its
    output name (``norm_error``, ``atol``, ``rtol``, ``CPU-us``, ``lowest_avg_freq``,
    ``efficiency`` ...; ``hipblaslt-Gflops``/``hipblaslt-GB/s`` as printed)."""
    rows = _Reader(source).read(text)
    for row in rows:
        if "gflops" in row:
            row[_ORIGINAL_PERF["gflops"]] = row["gflops"]
        else:
            row["gflops"] = _problem(row).flops / row["us"] / 1e3
        if "gbps" in row and isinstance(row["gbps"], float):
            row[_ORIGINAL_PERF["gbps"]] = row["gbps"]
        else:
            row["gbps"] = _problem(row).min_bytes / row["us"] / 1e3
        row.setdefault("solution_index", -1)
        row.setdefault("solution_name", "")
        row.setdefault("kernel", "")
    frame = results_frame(rows, (*GEMM_FIELDS, "us", "gflops", "gbps", "solution_index",
                                 "solution_name", "kernel", "winner", "line"))
    frame["solution_index"] = frame["solution_index"].astype(int)
    return frame


def _problem(row: dict) -> GemmProblem:
    return GemmProblem.from_row(row)


def read_bench_output(path) -> pd.DataFrame:
    """:func:`parse_bench_output` of a file; errors name the file."""
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError as exc:
        raise BenchOutputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return parse_bench_output(text, source=path)


# --- from results to what each phase returns -------------------------------------------------------

def problem_key(problem: GemmProblem) -> tuple:
    return (problem.type, problem.size)


def results_by_problem(frame: pd.DataFrame, problems: Sequence[GemmProblem], source) -> dict:
    """{problem key: its rows}; every requested problem must have a result (hipblaslt-bench
    prints nothing for a GEMM no solution supports)."""
    keys = [problem_key(GemmProblem.from_row(r)) for r in frame.to_dict("records")]
    groups: dict = {}
    for key, (_, row) in zip(keys, frame.iterrows()):
        groups.setdefault(key, []).append(row)
    missing = [p.name for p in problems if problem_key(p) not in groups]
    if missing:
        raise BenchOutputError(source, None, f"no result for {len(missing)} GEMM(s): "
                                             f"{', '.join(missing[:5])} (no supported solution?)")
    return groups


def candidates_only(frame: pd.DataFrame) -> pd.DataFrame:
    """A dense search prints every candidate once and then repeats the fastest after
    ``Winner:``: drop the repeats (a problem with one solution has no Winner block)."""
    if "winner" not in frame or not frame["winner"].any():
        return frame
    return frame[~frame["winner"].astype(bool)]


def chosen_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per problem: the Winner block where there is one, else the only (or fastest)
    result."""
    ordered = frame.assign(_w=~frame["winner"].astype(bool)).sort_values(["_w", "us"],
                                                                          kind="stable")
    keys = [c for c in GEMM_FIELDS if c in frame]
    chosen = ordered.drop_duplicates(subset=keys, keep="first").drop(columns="_w")
    return chosen.sort_values("line", kind="stable")  # the order of the rows asked for


def verification_error(frame: pd.DataFrame) -> pd.Series:
    """The original's per-GEMM error: ``norm_error / batch_count``; a failed allclose check
    (atol or rtol printed as "failed"), a missing or non-finite norm counts as FAILED_ERROR."""
    norm = pd.to_numeric(frame.get("norm_error", pd.Series(float("nan"), index=frame.index)),
                         errors="coerce")
    failed = pd.Series(False, index=frame.index)
    for column in ("atol", "rtol"):
        if column in frame:
            failed |= frame[column].astype(str).str.strip().str.lower().eq("failed")
    error = norm / frame["batch_count"].astype(float)
    bad = failed | ~error.apply(math.isfinite)
    return error.where(~bad, FAILED_ERROR)
