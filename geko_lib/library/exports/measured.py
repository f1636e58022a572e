"""Which library build and architecture an export was measured on, and refusing one of another.

hipBLASLt solution indices mean nothing across library builds or architectures, so an export is
only good where it was measured. Each format records that in its own words, which
:func:`read_export` reads back:

* override file: the ``Git Version:`` line (the build) and ``gcnArchName`` (the arch);
* TunableOp results: the ``HIPBLASLT_VERSION`` and ``GCN_ARCH_NAME`` validators;
* aiter tuned CSV: ``gfx`` and ``cu_num`` (the arch; the format has no build column);
* ``library_index.json`` beside geko's exports: whose indices they hold; where that is geko's
  own library, its build is the build the export was measured with, whatever the file says;

and, for what the file lacks, the stamp geko writes beside every output
(``<file>.stamp.json``: the campaign's ``library_version`` and ``arch``).
:func:`check_measured_on` compares them with the build and arch a user deploys on and refuses a
mismatch naming the file and the field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...campaign.layout import EXPORT_INDEX
from .winners import ExportError

STAMP_SUFFIX = ".stamp.json"
INDEX_FILE = Path(EXPORT_INDEX).name  # the exports' build stamp (phases.exports)
# suffixes of an empty file that is no override file: the CSV exports and library logic
EMPTY_NOT_OVERRIDE = (".csv", ".yaml", ".yml")


def _lines(path, count: int = 3) -> list[str] | None:
    """The first ``count`` non-blank lines of a text file; None for a file that is no text."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = []
            for line in handle:
                if line.strip():
                    lines.append(line.rstrip("\r\n"))
                if len(lines) == count:
                    break
            return lines
    except (OSError, UnicodeDecodeError):
        return None


def _override_header(line: str) -> bool:
    """A header line of hipBLASLt's override entries: transA first and a solution index."""
    names = [c.strip() for c in line.strip().lstrip("[0123456789]:").split(",")]
    return names[:1] == ["transA"] and bool({"solution_index", "soulution_index"} & set(names))


def kind_of(path) -> str | None:
    """``override``, ``tunableop``, ``aiter`` or None (not an export), by what defines each:
    the override file's ``Git Version:`` line, or its entries of a header line each (hipBLASLt
    writes one before every value line, indented); TunableOp's ``Validator,`` lines or op
    signature; aiter's lookup and dispatch columns. A table of another kind (a geko results
    CSV also starts with ``transA,``) is None. A text file of blank lines alone is an override
    file of no entries: geko writes one for a campaign that kept nothing (without a build to
    name there is no ``Git Version:`` line), and hipBLASLt reads it as serving nothing; the
    other exports always have a line (TunableOp its validators, aiter its header) and library
    logic is YAML, so an empty ``.csv``/``.yaml`` stays refused as none of them."""
    lines = _lines(path)
    if lines == [] and Path(path).suffix.lower() not in EMPTY_NOT_OVERRIDE:
        return "override"
    if not lines:
        return None
    first = lines[0].strip()
    if first.startswith("Git Version:"):
        return "override"
    if _override_header(first):
        headers = [_override_header(line) for line in lines]
        # entry by entry: header, value, header...; a one-entry file is hipBLASLt's by its
        # indentation or its gcnArchName column
        entries = headers[0::2] == [True] * len(headers[0::2]) and not any(headers[1::2])
        one = len(lines) == 2 and (lines[0].startswith(" ") or "gcnArchName" in lines[0])
        return "override" if (entries and len(lines) > 2) or one else None
    if first.startswith("Validator,") or "TunableOp_" in first.split(",")[0]:
        return "tunableop"
    names = [c.strip() for c in first.split(",")]
    if {"M", "N", "K", "libtype", "solidx"} <= set(names):
        return "aiter"
    return None


def library_index(path: Path) -> dict:
    """exports/library_index.json beside an export geko wrote: whose indices it holds."""
    try:
        record = json.loads((path.parent / INDEX_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _stamp(path: Path) -> dict:
    sidecar = path.with_name(path.name + STAMP_SUFFIX)
    try:
        record = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return {}
    return {key: record.get(key) for key in ("library_version", "arch") if record.get(key)}


def read_export(path) -> tuple[str, pd.DataFrame, dict]:
    """(kind, winners table, measured-on) of an export; measured-on has ``library_version``,
    ``arch``, ``cu_num`` where recorded, each with ``<key>_field``: where it was read."""
    from . import read_aiter_tuned, read_tunableop, read_tuning_override

    path = Path(path)
    kind = kind_of(path)
    measured: dict = {}

    def note(key, value, field):
        if value not in (None, "", 0) and key not in measured:
            measured[key], measured[f"{key}_field"] = value, field

    index = library_index(path)  # a geko library's indices: its build before any other
    if index.get("index_of") == "geko library":
        note("library_version", index.get("library_version"), f"{INDEX_FILE} library_version "
             f"(indices of {index.get('library')})")
    if kind == "override":
        table = read_tuning_override(path)
        note("library_version", table.attrs.get("version"), "Git Version")
        archs = sorted(set(table.get("gcnArchName", pd.Series(dtype=str)).dropna()) - {""})
        if len(archs) > 1:
            raise ExportError(f"{path}: gcnArchName: entries of several archs ({', '.join(archs)})")
        note("arch", archs[0] if archs else None, "gcnArchName")
    elif kind == "tunableop":
        table = read_tunableop(path)
        validators = table.attrs.get("validators") or {}
        note("library_version", validators.get("HIPBLASLT_VERSION"), "HIPBLASLT_VERSION")
        note("arch", validators.get("GCN_ARCH_NAME"), "GCN_ARCH_NAME")
    elif kind == "aiter":
        table = read_aiter_tuned(path)
        for key, column in (("arch", "gfx"), ("cu_num", "cu_num")):
            values = sorted(set(table[column]) - {"", 0}) if column in table else []
            if len(values) > 1:
                raise ExportError(f"{path}: {column}: rows of several values "
                                  f"({', '.join(map(str, values))})")
            note(key, values[0] if values else None, column)
    else:
        raise ExportError(f"{path}: not an export geko writes (override file, TunableOp "
                          "results, aiter tuned CSV)")
    for key, value in _stamp(path).items():
        note(key, value, f"{path.name}{STAMP_SUFFIX} {key}")
    return kind, table, measured


def _base(name: str) -> str:
    """``gfx942`` of ``gfx942:sramecc+:xnack-`` or of geko's ``gfx942_80cu``."""
    from ...archs import ARCHS

    name = str(name).split(":")[0]
    return ARCHS[name].model if name in ARCHS else name


def check_measured_on(path, measured: dict, *, arch: str | None = None,
                      library_version: str | None = None) -> None:
    """Refuse an export measured on another arch (its gfx name or CU count differ from
    ``arch``'s, a geko ``--arch`` name or a gfx name) or another build (its recorded version is
    not ``library_version``; one that records none cannot be checked and is refused too)."""
    from ...archs import ARCHS

    if arch:
        recorded = measured.get("arch")
        if recorded and _base(recorded) != _base(arch):
            raise ExportError(f"{path}: {measured['arch_field']}: measured on {recorded}, not "
                              f"{arch}: its solution indices mean nothing there")
        cus = measured.get("cu_num")
        if cus and arch in ARCHS and int(cus) != ARCHS[arch].cus:
            raise ExportError(f"{path}: {measured['cu_num_field']}: measured on {cus} CUs, "
                              f"{arch} has {ARCHS[arch].cus}")
        stamped = measured.get("arch") if "stamp" in measured.get("arch_field", "") else None
        if stamped and stamped in ARCHS and arch in ARCHS and stamped != arch:
            raise ExportError(f"{path}: {measured['arch_field']}: measured on {stamped}, not "
                              f"{arch}")
    if library_version:
        recorded = measured.get("library_version")
        if recorded is None:
            raise ExportError(f"{path}: records no library build, so it cannot be checked "
                              f"against {library_version}")
        if recorded != library_version:
            raise ExportError(f"{path}: {measured['library_version_field']}: measured with "
                              f"library build {recorded}, not {library_version}: its solution "
                              "indices mean nothing there")
