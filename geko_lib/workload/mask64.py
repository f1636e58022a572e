"""hipBLASLt ``HIPBLASLT_LOG_MASK=64`` logs: the fast line parser over distinct lines, and PyYAML
over the whole file (the reference)."""

from __future__ import annotations

import logging
from array import array
from collections import Counter

import yaml


from .errors import WorkloadError
from .parsing import (_DuplicateKey, _FirstLines, _FlowParser, _LINE_YAML, _Loader, _NOT_FLOW,
                      _TRUNCATED, _check_not_trace, _decode, _duplicate_key_error,
                      _parse_line_yaml, _yaml_error_line, _yaml_problem, cleanup_mangled_pairs)
from .table import _Rows
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


# --------------------------------------------------------------------------------------------
# mask-64 YAML logs


def _read_yaml_fast(path, counts: Counter) -> _Rows | None:
    """Distinct lines through the flow parser; None where the file is not one-row-per-line YAML."""
    first = _FirstLines(path)
    # each row's distinct line by its position among them, for its line number (not the line
    # itself: a 1M-row log's lines would stay alive through the whole normalization)
    ordinals = array("q")
    rows = _Rows(path, lambda i: first.nth(ordinals[i]))
    rows.warn_unknown_fields = True
    rows.repeats = []  # call_count is multiplied by these after validation, in _normalize
    parse = _FlowParser().parse
    add_keys, add_values, add_repeat, add_ordinal = rows.keys.append, rows.values.append, \
        rows.repeats.append, ordinals.append
    first_raw = next(iter(counts), b"")
    started = False  # a row was seen (a '---' document start is allowed only before)
    for ordinal, (raw, repeat) in enumerate(counts.items()):
        try:
            s = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            _decode(raw, path, lambda: first[raw])  # raises with the line number
        if "\0" in s:
            _decode(raw, path, lambda: first[raw])  # raises (NUL byte)
        if raw is first_raw and s[:1] == "\ufeff":  # byte-order mark
            s = s[1:].strip()
        if not s or s[0] == "#":
            continue
        if s == "---" and not started and repeat == 1:
            continue
        started = True
        result = parse(s)
        if result.__class__ is not tuple:
            if result == _NOT_FLOW:
                _check_not_trace(s, path, lambda: first[raw])
                return None  # block-style YAML or another layout: PyYAML reads the whole file
            if result == _TRUNCATED:
                raise WorkloadError(path, first[raw], "syntax",
                                    "truncated row: '{' is never closed (was the log cut off?)")
            # mangled ': , : ,' pairs: the original's cleanup, then the fast parser again;
            # anything else unusual: PyYAML for this line (raw, then cleaned)
            cleaned = cleanup_mangled_pairs(s)
            result = parse(cleaned) if cleaned != s else _LINE_YAML
            if result.__class__ is not tuple:
                result = _parse_line_yaml(s, path, first[raw])
        add_keys(result[0])
        add_values(result[1])
        add_repeat(repeat)
        add_ordinal(ordinal)
    return rows


def _read_yaml_reference(path, text: str) -> _Rows:
    """The whole file through PyYAML (retrying after the mangled-pairs cleanup, as the original)."""
    def load(source: str):
        loader = _Loader(source)
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
        return node, data

    try:
        node, data = load(text)
    except _DuplicateKey as dup:
        raise _duplicate_key_error(path, dup.line, dup) from None
    except yaml.YAMLError as exc:
        try:
            node, data = load(cleanup_mangled_pairs(text))
        except _DuplicateKey as dup:
            raise _duplicate_key_error(path, dup.line, dup) from None
        except yaml.YAMLError:
            line = _yaml_error_line(exc)
            if line is not None:
                lines = text.split("\n")
                if line <= len(lines):
                    _check_not_trace(lines[line - 1].strip(), path, line)
            raise WorkloadError(path, line, "syntax", f"cannot parse YAML: {_yaml_problem(exc)}") from None
    if data is None or data == []:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found")
    if not isinstance(data, list):
        raise WorkloadError(
            path, node.start_mark.line + 1, "format",
            "not a workload: expected a HIPBLASLT_LOG_MASK=64 log (a YAML list of mappings, "
            "'- {function: matmul, M: ..., ...}' one per line), hipblaslt-bench command lines "
            "(HIPBLASLT_LOG_MASK=32) or a .csv file")
    item_lines = [item.start_mark.line + 1 for item in node.value]
    rows = _Rows(path, lambda i: item_lines[i])
    rows.warn_unknown_fields = True
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise WorkloadError(path, item_lines[i], "format",
                                f"each row must be a mapping of fields, got {type(item).__name__}")
        rows.add(tuple(item), list(item.values()))
    return rows
