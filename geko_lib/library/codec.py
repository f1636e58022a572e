"""Reading and writing library-logic text quickly, without losing its style.

A logic file is mostly solutions: a 10 MB file holds thousands of ~200-line mappings, and PyYAML
(even its C loader) needs seconds for them. TensileLite writes the list layout in one fixed block
style, so this module splits the text into its top-level entries and the solutions into one text
block each; blocks are parsed only when someone reads them and written back verbatim when nobody
changed them. Only the solution index of an untouched block is rewritten in place (renumbering is
the common edit). The sizes table is parsed with a regular expression. Anything that does not
look like TensileLite's layout (flow style, dict layout, odd spacing) goes through PyYAML whole.
"""

from __future__ import annotations

import math
import re
from collections.abc import MutableSequence

import yaml

from .. import files

Loader = files.YAML_LOADER
Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_INDEX_LINE = re.compile(r"^SolutionIndex: (-?\d+)$", re.M)
_SIZE_PAIR = re.compile(r"(?:- |  )- - \[([^\]\n]*)\]\n    - \[([^\]\n]*)\]\n")


class NotBlockLayout(Exception):
    """The text is not in TensileLite's block layout; parse it with PyYAML instead."""


def load_yaml(text: str):
    return yaml.load(text, Loader=Loader)


def dump_yaml(data) -> str:
    return yaml.dump(data, Dumper=Dumper, default_flow_style=None, sort_keys=False)


# --- solutions -------------------------------------------------------------------------------


class Solutions(MutableSequence):
    """Solution mappings, kept as text until read. Reading an entry gives a dict that stays
    (edits to it are written); ``index_of``/``set_index`` work on the text without parsing."""

    def __init__(self, items=()):
        self._items: list = list(items)  # str (a dedented YAML mapping) or dict

    def __len__(self):
        return len(self._items)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        item = self._items[i]
        if isinstance(item, str):
            item = load_yaml(item)
            if not isinstance(item, dict):
                raise NotBlockLayout(f"solution {i} is not a mapping")
            self._items[i] = item
        return item

    def __setitem__(self, i, value):
        self._items[i] = value

    def __delitem__(self, i):
        del self._items[i]

    def insert(self, i, value):
        self._items.insert(i, value)

    def __eq__(self, other):
        return list(self) == list(other)

    def __repr__(self):
        return f"Solutions({len(self)} entries)"

    def index_of(self, i) -> int:
        item = self._items[i]
        if isinstance(item, str):
            match = _INDEX_LINE.search(item)
            if match:
                return int(match.group(1))
            item = self[i]
        return int(item["SolutionIndex"])

    def set_index(self, i, value: int) -> None:
        item = self._items[i]
        if isinstance(item, str) and _INDEX_LINE.search(item):
            self._items[i] = _INDEX_LINE.sub(f"SolutionIndex: {int(value)}", item, count=1)
        else:
            self[i]["SolutionIndex"] = int(value)

    def copy_entry(self, i):
        """An independent copy of entry i (text stays text)."""
        item = self._items[i]
        return item if isinstance(item, str) else load_yaml(dump_yaml(item))

    def text(self) -> str:
        """The solutions as entry 5 of a top-level list."""
        if not self._items:
            return "- []\n"
        out = []
        for n, item in enumerate(self._items):
            block = item if isinstance(item, str) else dump_yaml(item)
            lines = block.splitlines()
            out.append(("- - " if n == 0 else "  - ") + lines[0] + "\n")
            out.extend("    " + line + "\n" if line else "\n" for line in lines[1:])
        return "".join(out)


# --- splitting a file ----------------------------------------------------------------------------


def top_level_entries(text: str) -> list[str]:
    """The text of each entry of a top-level block list (comments and '---' dropped)."""
    entries: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if not entries and (not line.strip() or line.startswith(("#", "---", "%"))):
            continue
        if line.startswith("-") and (len(line) == 1 or line[1] in " \n"):
            entries.append([line])
        elif entries and (line.startswith(" ") or not line.strip()):
            entries[-1].append(line)
        else:
            raise NotBlockLayout("not a block-style top-level list")
    return ["".join(e) for e in entries]


def parse_entry(text: str):
    value = load_yaml(text)
    if not isinstance(value, list) or len(value) != 1:
        raise NotBlockLayout("unexpected top-level entry")
    return value[0]


def split_solutions(text: str) -> Solutions:
    """Entry 5's text -> one dedented mapping text per solution."""
    if text.strip() in ("- []", "-"):
        return Solutions()
    blocks: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith(("- - ", "  - ")):
            blocks.append([line[4:]])
        elif line.startswith("    ") and blocks:
            blocks[-1].append(line[4:])
        elif not line.strip() and blocks:
            blocks[-1].append("\n")
        elif blocks:
            raise NotBlockLayout("unexpected line in solutions")
        elif not blocks:
            raise NotBlockLayout("solutions entry is not a block list of mappings")
    return Solutions("".join(b) for b in blocks)


def _number(token: str):
    token = token.strip()
    try:
        return int(token)
    except ValueError:
        value = load_yaml(token)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise NotBlockLayout(f"not a number: {token!r}") from None
        return value


def _size(token: str) -> int:
    """A size of the sizes table: a plain integer, else the whole-file parse decides (and
    names the file and entry of a size that is no integer, e.g. a quoted "15360")."""
    token = token.strip()
    if not token.isdigit():
        raise NotBlockLayout(f"not an integer size: {token!r}")
    return int(token)


def parse_sizes(text: str) -> list:
    """Entry 7 (ExactLogic) as [[size], [index, gflops]] pairs."""
    if text.strip() in ("- []", "- null", "-"):
        return parse_entry(text) or []
    pairs, position = [], 0
    for match in _SIZE_PAIR.finditer(text):
        if match.start() != position:
            raise NotBlockLayout("sizes table has unexpected text")
        size = [_size(v) for v in match.group(1).split(",")]
        entry = [_number(v) for v in match.group(2).split(",")]
        pairs.append([size, entry])
        position = match.end()
    if position != len(text) or not text.startswith("- - - "):
        raise NotBlockLayout("sizes table is not in block layout")
    return pairs


def scalar_text(value) -> str:
    """A number as YAML writes it (floats keep a '.', like PyYAML)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return dump_yaml(value).removesuffix("\n...\n").strip()
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def entry_text(value) -> str:
    """One entry of the top-level block list."""
    if isinstance(value, (dict, list)):
        return dump_yaml([value])
    return "- " + scalar_text(value) + "\n"


def sizes_text(pairs: list) -> str:
    if not pairs:
        return "- []\n"
    out = []
    for n, (size, entry) in enumerate(pairs):
        out.append(("- - - [" if n == 0 else "  - - [") + ", ".join(map(str, size)) + "]\n")
        out.append("    - [" + ", ".join(scalar_text(v) for v in entry) + "]\n")
    return "".join(out)
