"""Reading workload text: file access and decoding, plain-scalar and flow-mapping parsing (the
fast path of mask-64 logs), YAML error positions, duplicate keys."""

from __future__ import annotations


import logging
import re
from collections import Counter
from pathlib import Path
from typing import Callable

import yaml


from .errors import WorkloadError
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


class _DuplicateKey(Exception):
    """A mapping names ``key`` twice (``line`` is 1-based within the parsed text)."""

    def __init__(self, key: str, line: int):
        super().__init__(key)
        self.key, self.line = key, line


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """PyYAML's safe loader, refusing a mapping that repeats a key: YAML silently keeps the last
    value, so a row naming M twice would be tuned for one of the two sizes unnoticed."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    raise _DuplicateKey(key_node.value, key_node.start_mark.line + 1)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep)


def _duplicate_key_error(path, line: int | None, dup: _DuplicateKey) -> "WorkloadError":
    return WorkloadError(path, line, dup.key, f"key {dup.key!r} appears twice in one row; "
                                              "which value is meant?")


# --------------------------------------------------------------------------------------------
# scalars: the YAML 1.1 (PyYAML safe_load) reading of the plain scalars found in these logs

_FALLBACK = object()  # "the fast parser cannot read this"
_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_INTS_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\n-?(?:0|[1-9][0-9]*))*")  # _INT_RE's, a line each
_FLOAT_RE = re.compile(r"-?[0-9]+\.[0-9]*\Z")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORDS = {
    **{w: True for w in ("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
    **{w: False for w in ("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
    **{w: None for w in ("null", "Null", "NULL", "~")},
}
# characters that make a plain flow scalar unusual (structure, quotes, anchors, tags, comments)
_UNUSUAL_CHARS = frozenset(",:{}[]\"'#&*!|>%@`\t\r\n\\")


def _scalar(token: str):
    """Value of a plain flow scalar as PyYAML's safe loader would read it, or ``_FALLBACK``."""
    t = token.strip(" ")
    if _INT_RE.match(t):
        return int(t)
    if _FLOAT_RE.match(t):
        return float(t)
    word = _WORDS.get(t, _FALLBACK)
    if word is not _FALLBACK:
        return word
    if _IDENT_RE.match(t):
        return t
    # rare forms (1.0e+5, 0x10, 1_000, .inf, a-b.c ...): let YAML's resolver decide
    if not t or not _UNUSUAL_CHARS.isdisjoint(t) or t[0] in "-?" and (len(t) == 1 or t[1] == " "):
        return _FALLBACK
    try:
        value = yaml.load("{k: " + t + "}", Loader=_Loader)
    except yaml.YAMLError:
        return _FALLBACK
    if not isinstance(value, dict) or list(value) != ["k"]:
        return _FALLBACK
    return value["k"]


def _key(token: str):
    t = token.strip(" ")
    if _IDENT_RE.match(t) and t not in _WORDS:
        return t
    return _FALLBACK


def cleanup_mangled_pairs(text: str) -> str:
    """The original tool's repair of the ``: , : ,`` empty pairs some hipBLASLt builds log.

    Removes ``": ,"`` then collapses ``",  ,"`` and ``", ,"`` to ``","``; the original applies it
    after a YAML parse error.
    """
    return text.replace(": ,", "").replace(",  ,", ",").replace(", ,", ",")


# --------------------------------------------------------------------------------------------
# the fast flow-mapping line parser

_NOT_FLOW = "not-flow"  # not a "- {...}" line
_TRUNCATED = "truncated"  # "- {" that never closes
_LINE_YAML = "line-yaml"  # a flow row the fast parser cannot read: ask PyYAML


class _FlowParser:
    """Parses ``- {k: v, ...}`` lines into (keys, values).

    The line body is split on ``", "`` into ``"key: value"`` parts; each distinct part is checked
    and converted once (exactly one ``": "``, an identifier key, a plain scalar value without
    ``,``/``:``) and cached, so a line whose parts were all seen before costs one ``split`` and
    three ``map`` calls. A part that fails the check sends the line to PyYAML.
    """

    def __init__(self):
        self.keys: dict[str, str] = {}  # part -> key
        # key -> {part -> converted value}: a column of parts is looked up in its key's parts
        # alone, so that one lookup both converts it and checks it holds that key
        self.by_key: dict[str, dict[str, object]] = {}
        self.bad: set[str] = set()  # parts the fast parser cannot read
        self.key_tuples: dict[tuple, tuple] = {}  # one shared tuple object per key sequence

    def parse(self, s: str):
        """``s`` is a stripped line. Returns (keys, values) or one of the status strings."""
        if s[:3] == "- {" and s[-1] == "}":  # the usual layout
            inner = s[3:-1]
        else:
            if s[:1] != "-":
                return _NOT_FLOW
            body = s[1:].lstrip()
            if body[:1] != "{":
                return _NOT_FLOW
            if body[-1:] != "}":
                return _TRUNCATED if "}" not in body else _LINE_YAML
            inner = body[1:-1]
        parts = inner.split(", ")
        keys = self._keys(parts)
        if keys is None:
            return _LINE_YAML
        values = list(map(dict.__getitem__, map(self.by_key.__getitem__, keys), parts))
        return keys, values

    def parse_rows(self, raws: list[bytes]) -> tuple[tuple, list[list]] | None:
        """The keys of the raw lines and each one's values, parsed a column at a time; None
        unless every line is UTF-8 text in the usual ``- {...}`` layout, all of one key
        sequence, and every part is one the fast parser reads (then :meth:`parse` reads each
        line and says why not).

        On a log of distinct rows nearly every line holds a part not seen before (``N: 4711``):
        line by line, each such line pays a failed lookup, a set difference and a second
        lookup of all its parts; here only a column holding new parts pays, once for the
        rows together."""
        if b"\0" in b"".join(raws):
            return None
        try:
            texts = [raw.decode("utf-8").strip() for raw in raws]
        except UnicodeDecodeError:
            return None
        parts = [s[3:-1].split(", ") for s in texts if s[:3] == "- {" and s[-1:] == "}"]
        if len(parts) != len(texts) or len(set(map(len, parts))) != 1:
            return None
        keys = self._keys(parts[0])
        if keys is None:
            return None
        values = []
        for key, column in zip(keys, zip(*parts)):
            known = self.by_key[key]
            try:
                values.append(list(map(known.__getitem__, column)))
            except KeyError:
                if not self._learn_column(key, column):
                    return None
                values.append(list(map(known.__getitem__, column)))
        return keys, list(map(list, zip(*values)))

    def _learn_column(self, key: str, column) -> bool:
        """Check and convert a column's parts not seen before; False if one is not ``key``'s
        (rows of several key sequences) or needs :meth:`_learn`'s checks or PyYAML."""
        known = self.by_key[key]
        new = list(set(column).difference(known))
        prefix = key + ": "  # a key holds no ': ', so this is where partition would split
        tokens = [part[len(prefix):] for part in new if part.startswith(prefix)]
        if len(tokens) != len(new):
            return False
        # a column of new sizes (the usual case): checked by one match, converted by int()
        if _INTS_RE.fullmatch("\n".join(tokens)):
            converted = list(map(int, tokens))
        else:
            converted = list(map(_scalar, tokens))
            if any(value is _FALLBACK for value in converted):
                return False
        self.keys.update(dict.fromkeys(new, key))
        known.update(zip(new, converted))
        return True

    def _keys(self, parts: list[str]) -> tuple | None:
        """The keys of a line's parts (one shared tuple per key sequence); None where a part
        needs PyYAML or a key is repeated (PyYAML then names it)."""
        try:
            keys = tuple(map(self.keys.__getitem__, parts))
        except KeyError:
            if not self._learn(parts):
                return None
            keys = tuple(map(self.keys.__getitem__, parts))
        shared = self.key_tuples.get(keys)
        if shared is None:
            if len(set(keys)) != len(keys):
                return None
            shared = self.key_tuples[keys] = keys
        return shared

    def _learn(self, parts) -> bool:
        """Check and convert the parts not seen before; False if one needs PyYAML."""
        new = set(parts).difference(self.keys)
        if not new.isdisjoint(self.bad):
            return False
        ok = True
        for part in new:
            key, sep, token = part.partition(": ")
            key = _key(key) if sep else _FALLBACK
            value = _scalar(token) if key is not _FALLBACK else _FALLBACK
            if value is _FALLBACK:
                self.bad.add(part)
                ok = False
            else:
                self.keys[part] = key
                self.by_key.setdefault(key, {})[part] = value
        return ok


def _yaml_error_line(exc: yaml.YAMLError) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    context = getattr(exc, "context", None) or ""
    if "flow" in context and getattr(exc, "context_mark", None) is not None:
        mark = exc.context_mark  # an unclosed flow collection: report where it starts
    if mark is None:
        mark = getattr(exc, "context_mark", None)
    return None if mark is None else mark.line + 1


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    return f"{context}: {problem}" if context else problem


def _parse_line_yaml(s: str, path, line: int):
    """One ``- {...}`` line through PyYAML (raw, then after the mangled-pairs cleanup)."""
    try:
        data = yaml.load(s, Loader=_Loader)
    except _DuplicateKey as dup:
        raise _duplicate_key_error(path, line, dup) from None
    except yaml.YAMLError as exc:
        cleaned = cleanup_mangled_pairs(s)
        try:
            if cleaned == s:
                raise
            data = yaml.load(cleaned, Loader=_Loader)
        except _DuplicateKey as dup:
            raise _duplicate_key_error(path, line, dup) from None
        except yaml.YAMLError:
            raise WorkloadError(path, line, "syntax", f"cannot parse row: {_yaml_problem(exc)}") from None
    if not (isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict)):
        raise WorkloadError(path, line, "syntax",
                            "expected exactly one mapping '- {key: value, ...}' per line")
    row = data[0]
    return tuple(row), list(row.values())


# --------------------------------------------------------------------------------------------
# file access


def _missing_file(path) -> WorkloadError | None:
    p = Path(path)
    if not p.exists():
        return WorkloadError(path, None, "file", "no such file")
    if not p.is_file():
        return WorkloadError(path, None, "file", "not a regular file")
    return None


class _FirstLines:
    """Lazily maps each distinct raw line (bytes, with its newline) to its first line number."""

    def __init__(self, path):
        self.path = path
        self._index: dict[bytes, int] | None = None

    def __getitem__(self, raw: bytes) -> int | None:
        if self._index is None:
            index: dict[bytes, int] = {}
            with open(self.path, "rb") as f:
                for number, line in enumerate(f, 1):
                    index.setdefault(line, number)
            self._index = index
        return self._index.get(raw)


def _count_lines(path) -> Counter:
    try:
        with open(path, "rb") as f:
            return Counter(f)
    except OSError as exc:
        raise WorkloadError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None


def _decode(raw: bytes, path, line_of: Callable[[], int | None]) -> str:
    if b"\0" in raw:
        raise WorkloadError(path, line_of(), "encoding", "binary data (NUL byte); not a text workload log")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkloadError(path, line_of(), "encoding",
                            f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); binary file?") from None


def _read_text(path) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise WorkloadError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
        bad = None
    except UnicodeDecodeError as exc:
        bad = exc.start
    if bad is not None and (nul < 0 or bad < nul):
        raise WorkloadError(path, data.count(b"\n", 0, bad) + 1, "encoding",
                            f"not UTF-8 text (byte 0x{data[bad]:02x}); binary file?")
    if nul >= 0:
        raise WorkloadError(path, data.count(b"\n", 0, nul) + 1, "encoding",
                            "binary data (NUL byte); not a text workload log")
    return text[1:] if text.startswith("\ufeff") else text


def _meaningful(s: str) -> bool:
    return bool(s) and s[0] != "#"


_TRACE_RE = re.compile(r"\[[^\]]*\]\s*\[(?:HIPBLASLT|hipblaslt|rocblaslt|ROCBLASLT)\]")


def _check_not_trace(s: str, path, line):
    """Reject a HIPBLASLT_LOG_LEVEL trace line; ``line``: its number or a callable giving it."""
    if s.startswith("[") and (_TRACE_RE.match(s) or "[Trace]" in s or "[Info]" in s):
        raise WorkloadError(
            path, line() if callable(line) else line, "format",
            "this is a HIPBLASLT_LOG_LEVEL trace log, not a workload; capture the workload with "
            "HIPBLASLT_LOG_MASK=64 (YAML rows) or HIPBLASLT_LOG_MASK=32 (hipblaslt-bench lines)")


def _is_bench_line(s: str) -> bool:
    first = s.split(None, 1)[0] if s else ""
    return first == "hipblaslt-bench" or first.endswith("/hipblaslt-bench")
