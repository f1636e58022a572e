"""CSV workloads: the log's fields as columns (lowercase ``m, n, k`` accepted)."""

from __future__ import annotations

import csv
import logging
import re

import pandas as pd


from .errors import WorkloadError
from .support import GemmSupport
from .table import _Rows, _normalize
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


# --------------------------------------------------------------------------------------------
# CSV


def _csv_record_lines(path) -> tuple[int, list[str], list[int]] | None:
    """(header line, header names, first line of each data record) as pandas reads the file:
    blank lines skipped, a quoted field may span lines. None where the text cannot be read."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            records, end = [], 0
            for record in reader:
                start, end = end + 1, reader.line_num
                if any(field.strip() for field in record):
                    records.append((start, record))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if not records:
        return None
    (header_line, header), data = records[0], records[1:]
    return header_line, [name.strip() for name in header], [line for line, _ in data]


def _refuse_duplicate_columns(path, layout) -> None:
    if layout is None:
        return
    header_line, names, _ = layout
    seen = set()
    for name in names:
        if name in seen:
            raise WorkloadError(path, header_line, name, f"column {name!r} appears twice in the "
                                                        "header; which one is meant?")
        seen.add(name)


def _number(value):
    """A cell of an untyped column: an int or float where its text is one, else as written."""
    if not isinstance(value, str):
        return value
    for convert in (int, float):
        try:
            return convert(value)
        except ValueError:
            continue
    return value


def _read_csv(path, support: GemmSupport, arch: str | None = None) -> pd.DataFrame:
    layout = _csv_record_lines(path)
    _refuse_duplicate_columns(path, layout)
    try:
        # only an empty cell is missing: "NA", "null", "nan" ... are what the file says, and a
        # refusal quotes them as written
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found") from None
    except UnicodeDecodeError:
        raise WorkloadError(path, None, "encoding", "not UTF-8 text; binary file?") from None
    except pd.errors.ParserError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise WorkloadError(path, int(m.group(1)) if m else None, "syntax",
                            f"cannot parse CSV: {str(exc).strip()}") from None
    except OSError as exc:
        raise WorkloadError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None
    # pandas skips blank lines, so row i is the i-th non-blank record after the header
    lines = layout[2] if layout is not None and len(layout[2]) == len(frame) else None
    rows = _Rows(path, (lambda i: lines[i]) if lines else (lambda i: i + 2))
    rows.missing_word = "an empty cell"
    cols = {}
    for name in frame.columns:
        series = frame[name]
        values = series.astype(object).where(series.notna(), None).tolist()
        if series.dtype.kind not in "iufb":  # a text column: numbers in it stay numbers
            values = [_number(v) for v in values]
        cols[str(name).strip()] = values
    keys = tuple(cols)
    for values in zip(*cols.values()):
        rows.add(keys, list(values))
    if not keys:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found")
    return _normalize(rows, support, arch)
