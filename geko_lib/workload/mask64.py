"""hipBLASLt ``HIPBLASLT_LOG_MASK=64`` logs: the fast line parser over distinct lines, and PyYAML
over the whole file (the reference)."""

from __future__ import annotations

import logging
from array import array
from collections import Counter
from itertools import islice

import yaml


from .errors import WorkloadError
from .parsing import (_DuplicateKey, _FlowParser, _LINE_YAML, _Loader, _NOT_FLOW,
                      _TRUNCATED, _check_not_trace, _decode, _duplicate_key_error,
                      _parse_line_yaml, _yaml_error_line, _yaml_problem, cleanup_mangled_pairs)
from .table import _Rows
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


# --------------------------------------------------------------------------------------------
# mask-64 YAML logs


_BLOCK = 1 << 16  # lines counted at a time
_CHUNK = 1 << 8  # lines parsed together (more: slower, the parts fall out of the CPU's cache)


def _distinct_blocks(path):
    """(lines, their first line numbers, how often each occurs) of the distinct lines of a
    block of lines at a time, in the order lines first occur (a line may recur in later
    blocks)."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise WorkloadError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None
    with handle:
        start = 1
        while True:
            block = list(islice(handle, _BLOCK))
            if not block:
                return
            # each line's first offset (the last written wins, walking backwards), and its
            # count in the order lines first occur: both counted in C
            first = dict(zip(reversed(block), range(start + len(block) - 1, start - 1, -1)))
            counts = Counter(block)
            lines = list(counts)
            yield lines, list(map(first.__getitem__, lines)), list(counts.values())
            start += len(block)


def _same_row(result, keys: tuple, values: list) -> bool:
    """Whether a parsed line is the row (keys, values): the same keys, and values equal and
    of the same types (``1`` and ``true`` compare equal, yet only one is a valid size)."""
    return result[0] == keys and result[1] == values and \
        list(map(type, result[1])) == list(map(type, values))


_SKIP = "skip"  # a line that holds no row


def _parse_line(raw: bytes, number: int, repeat: int, parse, skipped: set, started: bool, path):
    """(keys, values) of one line; ``_SKIP`` for a blank or comment line or the document start
    (added to ``skipped``); None where the file is not one row per line (PyYAML reads it)."""
    if raw in skipped:
        if raw.strip() == b"---":
            return None  # a second document start: PyYAML says what it is
        return _SKIP
    try:
        s = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        _decode(raw, path, lambda: number)  # raises with the line number
    if "\0" in s:
        _decode(raw, path, lambda: number)  # raises (NUL byte)
    if number == 1 and s[:1] == "\ufeff":  # byte-order mark
        s = s[1:].strip()
    if not s or s[0] == "#" or (s == "---" and not started and repeat == 1):
        skipped.add(raw)
        return _SKIP
    result = parse(s)
    if result.__class__ is not tuple:
        if result == _NOT_FLOW:
            _check_not_trace(s, path, number)
            return None  # block-style YAML or another layout: PyYAML reads the file
        if result == _TRUNCATED:
            raise WorkloadError(path, number, "syntax", "truncated row: '{' is never "
                                                        "closed (was the log cut off?)")
        # mangled ': , : ,' pairs: the original's cleanup, then the fast parser again;
        # anything else unusual: PyYAML for this line (raw, then cleaned)
        cleaned = cleanup_mangled_pairs(s)
        result = parse(cleaned) if cleaned != s else _LINE_YAML
        if result.__class__ is not tuple:
            result = _parse_line_yaml(s, path, number)
    return result


def _read_yaml_fast(path) -> _Rows | None:
    """Each distinct line through the flow parser as the file is read, a block of lines at a
    time (a few hundred of its rows together), in the order lines first occur; None where the
    file is not one-row-per-line YAML. A line is not kept once parsed (a 1M-row log of
    distinct lines is 0.5 GB of text): it is known again in a later block by its hash, and
    told from another line of the same hash by what it parses to (the same keys, values and
    types make the same row)."""
    numbers = array("q")  # each row's first line number
    rows = _Rows(path, numbers.__getitem__)
    rows.warn_unknown_fields = True
    rows.repeats = repeats = []  # call_count is multiplied by these after validation
    parser = _FlowParser()
    add_keys, add_values, add_repeat, add_number = rows.keys.append, rows.values.append, \
        repeats.append, numbers.append
    by_hash: dict[int, int] = {}  # hash of a line -> its row
    collided: dict[tuple, int] = {}  # (hash, the row's repr) -> its row, for lines sharing a hash
    skipped: set[bytes] = set()  # blank and comment lines, the document start
    started = False  # a row was seen (a '---' document start is allowed only before, once)
    for lines, first_numbers, counts in _distinct_blocks(path):
        for at in range(0, len(lines), _CHUNK):
            chunk = lines[at:at + _CHUNK]
            chunk_numbers, chunk_counts = first_numbers[at:at + _CHUNK], counts[at:at + _CHUNK]
            # a chunk of plain rows is parsed together; any other line by line, so that its
            # errors come in the order of its lines
            parsed = parser.parse_rows(chunk)
            if parsed is not None:
                keys, values = parsed
                hashes = list(map(hash, chunk))
                if by_hash.keys().isdisjoint(hashes) and len(set(hashes)) == len(hashes):
                    # all new rows (the usual case): added together
                    by_hash.update(zip(hashes, range(len(numbers), len(numbers) + len(chunk))))
                    rows.keys.extend([keys] * len(chunk))
                    rows.values.extend(values)
                    repeats.extend(chunk_counts)
                    numbers.extend(chunk_numbers)
                    started = True
                    continue
                parsed = [(keys, row) for row in values]
            for raw, number, repeat, result in zip(chunk, chunk_numbers, chunk_counts,
                                                   parsed or [None] * len(chunk)):
                if result is None:
                    result = _parse_line(raw, number, repeat, parser.parse, skipped, started, path)
                    if result is _SKIP:
                        continue
                    if result is None:
                        return None
                started = True
                key = hash(raw)
                row = by_hash.get(key)
                if row is not None and not _same_row(result, rows.keys[row], rows.values[row]):
                    told = (key, repr(result))  # repr tells 1, 1.0 and True apart
                    row = collided.get(told)
                    if row is None:
                        collided[told] = len(numbers)
                if row is not None:  # the line met in an earlier block
                    repeats[row] += repeat
                    continue
                by_hash.setdefault(key, len(numbers))
                add_keys(result[0])
                add_values(result[1])
                add_repeat(repeat)
                add_number(number)
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
