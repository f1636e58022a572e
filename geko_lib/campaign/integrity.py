"""What proves an output whole and where it came from: integrity and provenance stamps.

Every output a workflow job writes is stamped when the job finishes (``jobs.run``):

* a file output gets a sidecar ``<name>.stamp.json`` beside it;
* a directory output gets a manifest ``<dir>/provenance.json`` listing every file inside.

A stamp records the content's SHA-256 and row count (data rows of a CSV, items of a YAML list),
the provenance of the campaign that made it (workload digest, platform, arch, library version,
the options that shape results; the mode for mode-dependent outputs), and the SHA-256 of every
input the job read. The output files keep their formats: downstream users read them as before.

Readers check (``check``): a file whose content no longer matches its stamp is damaged, one whose
provenance differs from the current campaign's, or whose inputs have changed since, is stale.
Before the DAG is built the workflow removes every damaged or stale output (``audit``), so
Snakemake recomputes it; a job refuses an input that fails the check, naming the file. Reuse is
decided by content and provenance, never by mtimes alone.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from .. import files
from ..errors import GekoError
from ..files import sha256_of

STAMP_SUFFIX = ".stamp.json"
MANIFEST = "provenance.json"
FORMAT = 1

# top-level workdir entries whose content depends on the mode: a search campaign's libraries,
# benchmarks and results are stale for tune, and the other way round
MODE_DEPENDENT = frozenset({"libs", "tensile", "benchmarks", "results", "final_libs", "full_libs",
                            "exports", "report", "pruned_libs", "integrate",
                            "combined_libs"})


class IntegrityError(GekoError, ValueError):
    """An input is damaged (its content differs from its stamp) or stale (made for another
    campaign, or from inputs that changed since)."""


# --- digests and row counts ----------------------------------------------------------------------

file_sha256 = sha256_of  # one file's SHA-256 (the original's run_state digest)


def directory_files(directory) -> dict[str, str]:
    """relative path -> SHA-256 of every file under ``directory`` except its manifest and
    hidden names (Snakemake's ``.snakemake_timestamp``, temporaries)."""
    root = Path(directory)
    return {str(p.relative_to(root)): file_sha256(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root) != Path(MANIFEST)
            and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def json_sha256(value) -> str:
    """The SHA-256 of a value's canonical JSON (keys sorted; what JSON cannot hold as text)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def listing_sha256(listing: dict[str, str]) -> str:
    """One digest for a directory: its files' names and digests, in name order."""
    text = "".join(f"{name}\0{digest}\n" for name, digest in sorted(listing.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def content_sha256(path) -> str:
    """A file's SHA-256, or a directory's (its files but not its manifest)."""
    path = Path(path)
    return listing_sha256(directory_files(path)) if path.is_dir() else file_sha256(path)


def count_rows(path) -> int | None:
    """Data rows of a CSV, items of a top-level YAML list or mapping; None for other files (or
    content that does not parse: the digest already says it is damaged)."""
    path = Path(path)
    try:
        if path.suffix == ".csv":
            return max(sum(1 for row in csv.reader(io.StringIO(path.read_text())) if row) - 1,
                       0)
        if path.suffix in (".yaml", ".yml"):
            rows = _flow_rows(path)
            if rows is not None:
                return rows
            data = files.load_yaml(path.read_text())
            return len(data) if isinstance(data, (list, dict)) else None
    except (OSError, UnicodeDecodeError, csv.Error, yaml.YAMLError):
        return None
    return None


def _flow_rows(path: Path) -> int | None:
    """Items of a YAML list written one flow mapping a line (workload.yaml, bench inputs: what
    geko writes), counted without parsing them (a parse takes minutes at 100k rows; the
    digest proves the content) and a line at a time (a 1M-row file is 0.5 GB of text); None
    for any other layout."""
    count = 0
    with open(path, "rb") as handle:
        for raw in handle:
            line = raw[:-1] if raw.endswith(b"\n") else raw
            if not (line.startswith(b"- {") and line.endswith(b"}")):
                return None
            count += 1
    return count or None


# --- stamps --------------------------------------------------------------------------------------

def sidecar(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + STAMP_SUFFIX)


def is_stamp(path) -> bool:
    path = Path(path)
    return path.name.endswith(STAMP_SUFFIX) or path.name == MANIFEST


def expected_provenance(campaign: dict, mode: str, relpath) -> dict:
    """What an output at ``relpath`` (relative to the workdir) must record: the campaign's
    identity, plus the mode where the output depends on it."""
    provenance = {key: campaign.get(key) for key in
                  ("workload_sha256", "platform", "arch", "library_version", "options_sha256")}
    parts = Path(relpath).parts
    if parts and parts[0] in MODE_DEPENDENT:
        provenance["mode"] = mode
    return provenance


def stamp(path, provenance: dict, inputs: dict[str, str], rule: str | None = None,
          companion_of: str | None = None, outputs: list[str] | None = None) -> Path:
    """Write the stamp of a finished output (a file's sidecar, a directory's manifest).
    ``companion_of`` names the declared output a file was written beside (a checkpoint's
    tuning YAMLs beside its manifest): a damaged companion is recomputed with that output."""
    path = Path(path)
    record = {"geko_stamp": FORMAT, "rule": rule, "provenance": provenance,
              "inputs": dict(sorted(inputs.items()))}
    if companion_of:
        record["companion_of"] = companion_of
    if outputs:
        record["outputs"] = sorted(outputs)  # what the same job wrote: recomputed together
    # the provenance keys at the top level too, as provenance.json always had them
    record.update({k: provenance.get(k) for k in ("platform", "arch", "library_version")})
    if path.is_dir():
        listing = directory_files(path)
        record.update(kind="directory", sha256=listing_sha256(listing),
                      files={name: {"sha256": digest, "rows": count_rows(path / name)}
                             for name, digest in listing.items()})
        return files.write_json(path / MANIFEST, record)
    record.update(kind="file", name=path.name, sha256=file_sha256(path), rows=count_rows(path),
                  bytes=path.stat().st_size)
    return files.write_json(sidecar(path), record)


@dataclass(frozen=True)
class Stamp:
    """A stamp as read back: where it is, what it records, and the part that covers ``path``
    (a whole file or directory, or one entry of the enclosing directory's manifest)."""

    where: Path
    record: dict
    entry: dict  # {"sha256": ..., "rows": ...} of the stamped path

    @property
    def provenance(self) -> dict:
        return self.record.get("provenance") or {}


def _read_record(where: Path) -> dict:
    try:
        record = json.loads(where.read_text())
    except (OSError, ValueError) as exc:
        raise IntegrityError(f"{where}: unreadable stamp ({exc})") from None
    if not isinstance(record, dict) or record.get("geko_stamp") != FORMAT:
        raise IntegrityError(f"{where}: not a geko stamp (format {FORMAT})")
    return record


def find_stamp(path, root=None) -> Stamp | None:
    """The stamp covering ``path``: its sidecar, its own manifest (a directory), or the manifest
    of an enclosing directory output (at or below ``root``) that lists it; None if none does."""
    path = Path(path)
    if path.is_dir():
        where = path / MANIFEST
        if where.is_file():
            record = _read_record(where)
            if "files" in record:  # a provenance.json of an older geko lists no files
                return Stamp(where, record, record)
        return None
    if sidecar(path).is_file():
        return Stamp(sidecar(path), (record := _read_record(sidecar(path))), record)
    stop = Path(root).resolve() if root else None
    for parent in path.resolve().parents:
        where = parent / MANIFEST
        if where.is_file():
            record = _read_record(where)
            entry = (record.get("files") or {}).get(str(path.resolve().relative_to(parent)))
            return Stamp(where, record, entry) if entry else None
        if parent == stop:
            break
    return None


def damage(path, found: Stamp) -> str | None:
    """Why ``path`` is not the content its stamp recorded (None: it is)."""
    path = Path(path)
    actual = content_sha256(path)
    if actual != found.entry.get("sha256"):
        rows, recorded = count_rows(path), found.entry.get("rows")
        counted = f" ({recorded} rows recorded, {rows} now)" if recorded != rows else ""
        return f"content differs from its stamp {found.where.name}{counted}: damaged or edited"
    return None


def staleness(found: Stamp, expected: dict) -> str | None:
    """Why a stamp's provenance is not the current campaign's (None: it is)."""
    recorded = found.provenance
    different = [f"{key} {recorded.get(key)!r} (this run: {value!r})"
                 for key, value in expected.items() if recorded.get(key) != value]
    return "made for " + ", ".join(different) if different else None


def changed_inputs(found: Stamp, root, digest_of) -> str | None:
    """Why the inputs a stamp recorded are not what the workdir holds now (None: they are).
    An input that is missing now is left to Snakemake: it reruns what depends on it."""
    changed = []
    for name, recorded in (found.record.get("inputs") or {}).items():
        path = Path(name) if Path(name).is_absolute() else Path(root) / name
        if path.exists() and digest_of(path) != recorded:
            changed.append(name)
    return ("made from another version of " + ", ".join(changed)) if changed else None


def problem(path, expected: dict, root=None, digest_of=content_sha256,
            check_inputs: bool = False) -> str | None:
    """Why the output at ``path`` must not be used (None: it is whole and current)."""
    try:
        found = find_stamp(path, root)
    except IntegrityError as exc:
        return str(exc)
    if found is None:
        return "has no stamp: not written whole by a geko job (interrupted, edited or copied in)"
    reason = damage(path, found) or staleness(found, expected)
    if reason is None and check_inputs:
        reason = changed_inputs(found, root or Path(path).parent, digest_of)
    return reason


def require(path, expected: dict, root=None) -> None:
    """Refuse an input that is damaged or stale, naming it."""
    reason = problem(path, expected, root)
    if reason:
        raise IntegrityError(f"{path}: {reason}; delete it (or rerun geko, which recomputes "
                             "damaged and stale outputs) instead of using it")


def check_rows(path, n_rows: int) -> None:
    """A table read back must have the rows its stamp recorded (where it has a stamp)."""
    try:
        found = find_stamp(path)
    except IntegrityError:
        return  # the job's input check already names an unreadable stamp
    recorded = found.entry.get("rows") if found else None
    if recorded is not None and recorded != n_rows:
        raise IntegrityError(f"{path}: {n_rows} rows read, its stamp {found.where.name} "
                             f"recorded {recorded}: damaged")


# --- the audit before the DAG is built -----------------------------------------------------------

def remove_output(path) -> None:
    """Remove an output and its stamp, so that Snakemake sees it missing and recomputes it."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
        sidecar(path).unlink(missing_ok=True)


def audit(root, outputs, expected_for) -> list[tuple[Path, str]]:
    """(output, why) for every existing output that is damaged or stale: unstamped, content
    differing from its stamp, made for another campaign, or made from inputs that changed.
    ``outputs`` are paths relative to ``root``; ``expected_for(relpath)`` is the provenance each
    must record. Digests are computed once per path."""
    root = Path(root)
    cache: dict[Path, str] = {}

    def digest_of(path: Path) -> str:
        key = Path(path).resolve()
        if key not in cache:
            cache[key] = content_sha256(key)
        return cache[key]

    found = []
    for rel in sorted(set(outputs)):
        path = root / rel
        if not path.exists():
            continue
        reason = problem(path, expected_for(rel), root, digest_of, check_inputs=True)
        if reason:
            found.append((Path(rel), reason))
    return found


def input_digests(paths, root) -> dict[str, str]:
    """name -> SHA-256 of every existing input (names relative to ``root`` where inside it)."""
    root = Path(root).resolve()
    out = {}
    for name in paths:
        path = Path(name)
        full = path if path.is_absolute() else root / path
        if not full.exists():
            continue
        try:
            key = str(full.resolve().relative_to(root))
        except ValueError:
            key = str(full.resolve())
        out[key] = content_sha256(full)
    return out


# --- what ships -----------------------------------------------------------------------------------

def verify_shipped(directory, kept, workload_gemms=None) -> None:
    """Refuse a final_libs directory that does not serve exactly the kept GEMMs: every library
    parses, every kept (library, GEMM type, size) is served by a library of that type and
    nothing else is; with ``workload_gemms`` ((GemmType, size) of the campaign's workload),
    every kept GEMM is one of the workload's, so a GEMM that a phase turned into another type
    (a TF32 GEMM tuned as plain f32) is never counted as kept nor shipped. (The kernel a size is
    served by is the kept one by construction; kernel names are platform-formatted, e.g.
    hipblaslt-bench reports a shorter name than the logic file's SolutionNameMin.)"""
    from ..gemm import GemmProblem
    from ..library.collection import load_dir
    from ..library.logic import LibraryError

    try:
        libs = load_dir(directory)
    except LibraryError as exc:
        raise IntegrityError(f"{directory}: a shipped library does not load: {exc}") from None
    served = Counter((name, lib.gemm_type, size) for name, lib in libs.items()
                     for size, _, _ in lib.size_entries())
    rows = kept.to_dict("records")
    wanted = Counter((row["lib"], problem.type, problem.size)
                     for row, problem in zip(rows, map(GemmProblem.from_row, rows)))
    for what, keys in (("kept but not served", sorted(wanted - served, key=str)),
                       ("served but not kept", sorted(served - wanted, key=str))):
        if keys:
            name, gemm_type, size = keys[0]
            raise IntegrityError(f"{directory}: {len(keys)} GEMM(s) {what}, e.g. {name} "
                                 f"{_type_text(gemm_type)} size {list(size)}: refusing to ship "
                                 "it")
    if workload_gemms is None:
        return
    foreign = sorted({(t, size) for _, t, size in wanted} - set(workload_gemms), key=str)
    if foreign:
        gemm_type, size = foreign[0]
        alike = sorted(_type_text(t) for t, s in workload_gemms if s == size)
        hint = (f"; the workload has that size as {', '.join(alike)}: a phase changed its type"
                if alike else "")
        raise IntegrityError(f"{directory}: {len(foreign)} kept GEMM(s) not in the workload, "
                             f"e.g. {_type_text(gemm_type)} size {list(size)}{hint}: refusing to "
                             "ship it")


def _type_text(gemm_type) -> str:
    """A GEMM type with every field a library tells apart: 'SS_TN (f32_r x f32_r -> f32_r/f32_r,
    compute c_xf32_r)'."""
    t = gemm_type
    return (f"{t.name} ({t.a_type} x {t.b_type} -> {t.c_type}/{t.d_type}, compute "
            f"{t.compute_type})")


def read_table(path) -> pd.DataFrame:
    """A results / summary CSV with identity columns typed as the workflow writes them; a table
    with a stamp must have the rows the stamp recorded."""
    frame = pd.read_csv(path, dtype={"transA": str, "transB": str}, keep_default_na=False,
                        na_values=[""])
    check_rows(path, len(frame))
    return frame
