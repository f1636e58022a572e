"""``geko coverage``: which GEMMs of an application's log a library serves, and what share of the
application's calls and GEMM time that is.

A library serves a GEMM when one of its files has the GEMM's type (layout and data types) and an
ExactLogic entry of its exact size [M, N, batch, K] (how hipBLASLt matches an Equality library).
The library may also be one export (override file, TunableOp results, aiter tuned CSV): it
serves the GEMMs it lists, and one measured on another arch (``--arch``) or library build
(``--library-version``) is refused by name (``geko_lib.library.exports.measured``).
Time per GEMM = call_count x us, with ``us`` from a timings table (``baseline/workload.csv`` or
``summary.csv`` of a campaign: GEMM identity columns and ``us``) or, without one, from the sim
platform's model of the architecture (an estimate, and the report says so).
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pandas as pd

from .. import library, workload
from ..errors import GekoError
from ..gemm import GEMM_FIELDS, GemmProblem
from ..bench_formats.summary import gemm_identity, normalized
from ..library.exports import sources

KEYS = list(GEMM_FIELDS)


class CoverageError(GekoError, ValueError):
    pass


# what each consumer looks a call up by beyond the GEMM (sources.CALL_KEY), from an export's rows
def _aiter_key(row: dict) -> dict:
    return {"bias": bool(row["bias"]), "scaleAB": bool(row["scaleAB"])}


def _tunableop_key(row: dict) -> dict:
    key = {"bias": row.get("op") == "GemmAndBiasTunableOp"}
    key.update({f: int(row[f]) for f in ("lda", "ldb", "ldc") if not pd.isna(row.get(f))})
    return key


CONSUMER_KEYS = {"aiter": _aiter_key, "tunableop": _tunableop_key,
                 "override": lambda row: {}}  # hipBLASLt's override parser: the GEMM only


def export_entries(path, arch: str | None, library_version: str | None):
    """The GEMMs an export (override file, TunableOp results, aiter tuned CSV) serves, each
    with the call key its consumer looks it up by, after refusing one measured on another arch
    or build than the given ones (exports.measured)."""
    from ..library.exports import measured

    kind, table, recorded = measured.read_export(path)
    measured.check_measured_on(path, recorded, arch=arch, library_version=library_version)
    entries: dict = {}
    for row in table.to_dict("records"):
        problem = GemmProblem.from_row(row)
        key = CONSUMER_KEYS[kind](row)
        found = entries.setdefault((problem.type, problem.size), [])
        if (key, path.name) not in found:
            found.append((key, path.name))
    return entries, [path.name], recorded.get("arch"), kind


def library_entries(path, arch: str | None = None, library_version: str | None = None
                    ) -> tuple[dict, list[str], str | None, str | None]:
    """((GemmType, size) -> [(call key, file name)], file names, architecture of the first
    file, export kind or None); ``path`` may also be one export file, checked against ``arch``
    and ``library_version``, whose entries carry its consumer's call key (library logic's an
    empty one: hipBLASLt matches an Equality library by the GEMM)."""
    from ..library.exports import measured

    path = Path(path)
    if path.is_file() and measured.kind_of(path):
        return export_entries(path, arch, library_version)
    if library_version:
        raise CoverageError("--library-version: checks an export file (override, TunableOp, "
                            f"aiter CSV); {path} is library logic")
    if path.is_dir():
        libs = library.load_dir(path)
    elif path.is_file():
        if path.suffix.lower() not in (".yaml", ".yml"):
            raise CoverageError(f"--library: {path} is none of the files coverage reads: "
                                "library logic (*.yaml), a hipBLASLt override file, TunableOp "
                                "results or an aiter tuned CSV")
        libs = {path.name: library.load(path)}
    else:
        raise CoverageError(f"--library: {path} does not exist")
    if not libs:
        raise CoverageError(f"--library: no library logic (*.yaml) in {path}")
    entries, arch = {}, None
    for name, lib in sorted(libs.items()):
        arch = arch or lib.architecture_name or None
        gemm_type = lib.gemm_type
        for size, _, _ in lib.size_entries():
            entries.setdefault((gemm_type, size), [({}, name)])
    return entries, sorted(libs), arch, None


def _timings_table(path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise CoverageError(f"--timings: {path} does not exist")
    try:
        frame = pd.read_csv(path, dtype={"transA": str, "transB": str}, keep_default_na=False,
                            na_values=[""], encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CoverageError(f"--timings: {path} is not a UTF-8 text table (byte "
                            f"{exc.start}: {exc.reason})") from None
    except pd.errors.EmptyDataError:
        raise CoverageError(f"--timings: {path} is empty (expected a CSV table with GEMM "
                            "identity columns and us)") from None
    except pd.errors.ParserError as exc:
        raise CoverageError(f"--timings: {path}: not a CSV table ({exc})") from None
    frame = frame.rename(columns={"M": "m", "N": "n", "K": "k"})
    if "us" not in frame and "us_reference" in frame:  # results/raw_results.csv
        frame = frame.rename(columns={"us_reference": "us"})
    missing = [c for c in KEYS + ["us"] if c not in frame and c not in ("scaleA", "scaleB")]
    if missing:
        raise CoverageError(f"--timings: {path} lacks column(s) {', '.join(missing)} (expected "
                            "a baseline/workload.csv, a summary.csv with timings or "
                            "results/raw_results.csv: GEMM identity and us)")
    for col in ("scaleA", "scaleB"):
        if col not in frame:
            frame[col] = 0
    for col in ("batch_count", "m", "n", "k", "scaleA", "scaleB", "us"):
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = values.isna() if col == "us" else values.isna() | (values != values.round())
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise CoverageError(f"--timings: {path}:{row + 2}: {col}: expected a number, got "
                                f"{frame[col].iloc[row]!r}")
        frame[col] = values if col == "us" else values.astype(int)
    frame = normalized(frame)
    return frame[KEYS + ["us"]].drop_duplicates(subset=KEYS)


def _model_times(problems: list[GemmProblem], arch: str) -> dict[GemmProblem, float]:
    from .. import platforms

    platform = platforms.get({"platform": platforms.MODEL, "arch": arch})
    unique = list(dict.fromkeys(problems))
    times = {}
    with tempfile.TemporaryDirectory(prefix="geko-coverage-") as tmp:
        try:
            table = platform.bench(unique, Path(tmp), 0)
            times = dict(zip(unique, table["us"].astype(float)))
        except Exception:  # one type the model does not know: time the others one by one
            for problem in unique:
                try:
                    times[problem] = float(platform.bench([problem], Path(tmp), 0)["us"].iloc[0])
                except Exception:
                    continue
    return times


def _model_arch(requested: str | None, library_arch: str | None) -> str:
    from ..platforms import PlatformError
    from ..platforms.sim import arch_by_name

    for name in (requested, library_arch):
        if not name:
            continue
        try:
            return arch_by_name(name.split(":")[0]).name
        except PlatformError:
            if name is requested:
                raise CoverageError(f"--arch: the sim model does not know {name!r}") from None
    return "gfx950"


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def _lookup(found: list | None, call: dict, kind: str | None) -> tuple[str | None, str | None]:
    """(file serving the call, None) or (None, why not): an entry serves a call when every
    field of its consumer key has the call's value."""
    if not found:
        return None, None
    for key, name in found:
        if all(call.get(f) == v for f, v in key.items()):
            return name, None
    have = "; ".join(", ".join(f"{f}={v}" for f, v in key.items()) for key, _ in found)
    return None, (f"{kind}'s key differs: the export has this GEMM for {have}, the call is "
                  + ", ".join(f"{f}={call.get(f)}" for f in found[0][0]))


def _call_words(call: dict, kind: str | None) -> str:
    """What sets a call apart from the other calls of its GEMM, for the report's rows."""
    if not kind:
        return ""
    words = [f for f in ("bias", "scaleAB") if call.get(f)]
    if kind == "tunableop":
        words.append(f"ld {call.get('lda')},{call.get('ldb')},{call.get('ldc')}")
    return "".join(f" {w}" for w in words)


def _pct(part: float, whole: float):
    return 100.0 * part / whole if whole else None


def coverage(library_path, workload_path, timings=None, arch: str | None = None,
             library_version: str | None = None) -> dict:
    """The coverage report as a JSON-able mapping (see format_text). An export given as the
    library is refused where it was measured on another ``arch`` or ``library_version``."""
    from .. import platforms

    entries, lib_files, lib_arch, kind = library_entries(library_path, arch, library_version)
    # the user's workload file, checked against every platform's limits (the union: the
    # report runs no platform's kernels)
    table = workload.read(workload_path, support=platforms.gemm_support(None))
    # an export is looked up call by call (its consumer's key); library logic GEMM by GEMM
    identity = sources.call_table(table) if kind else gemm_identity(table)
    problems = [GemmProblem.from_row(r) for r in identity.to_dict("records")]
    us, time_source, model_arch = _times(identity, problems, timings, arch, lib_arch)
    gemms = _gemm_rows(identity, problems, us, entries, lib_files, kind)
    total_calls, total_time = _add_shares(gemms)

    def share(rows):
        calls = sum(g["call_count"] for g in rows)
        timed = [g["time_us"] for g in rows if g["time_us"] is not None]
        return {"n_gemms": len(rows), "pct_gemms": _pct(len(rows), len(gemms)),
                "n_calls": calls, "pct_calls": _pct(calls, total_calls),
                "time_us": sum(timed), "pct_time": _pct(sum(timed), total_time)}

    in_workload = {(p.type, p.size) for p in problems}
    unused = sorted(k for k in entries if k not in in_workload)
    return {"export": kind,
        "library": str(library_path), "library_files": lib_files,
        "n_library_sizes": len(entries),
        "workload": str(workload_path), "n_gemms": len(gemms), "n_calls": total_calls,
        "time_source": time_source, "estimate": not timings, "model_arch": model_arch,
        "n_without_time": sum(g["time_us"] is None for g in gemms),
        "served": share([g for g in gemms if g["served"]]),
        "not_served": share([g for g in gemms if not g["served"]]),
        "library_sizes_not_in_workload": [
            {"type": t.name, "size": list(size), "lib": entries[(t, size)][0][1]}
            for t, size in unused],
        "gemms": gemms,
    }


def _times(identity, problems, timings, arch, lib_arch):
    """(us per call of each GEMM, where they come from, the modelled arch or None): the
    timings table's where one is given, else the sim model's estimates."""
    if timings:
        merged = identity.merge(_timings_table(timings), on=KEYS, how="left")
        us = [None if pd.isna(v) else float(v) for v in merged["us"]]
        return us, f"timings table {timings}", None
    model_arch = _model_arch(arch, lib_arch)
    model = _model_times(problems, model_arch)
    return ([model.get(p) for p in problems],
            f"sim model estimate ({model_arch}): predicted kernel times, not measurements",
            model_arch)


def _gemm_rows(identity, problems, us, entries, lib_files, kind) -> list[dict]:
    """One row per GEMM (per call key, for an export): served by which library file, or why
    not."""
    lib_types = {t for t, _ in entries}
    gemms = []
    for row, problem, t in zip(identity.to_dict("records"), problems, us):
        key = (problem.type, problem.size)
        call = {f: _plain(row[f]) for f in sources.CALL_KEY if f in row}
        lib, reason = _lookup(entries.get(key), call, kind)
        if lib is None and reason is None and kind and not entries:  # an export of nothing kept
            reason = f"{lib_files[0]} lists no GEMM"
        elif lib is None and reason is None:
            reason = ("size not in the library" if problem.type in lib_types
                      else f"type {problem.type.name} not in the library")
        calls = int(row["call_count"])
        gemms.append({"gemm": problem.name + _call_words(call, kind), "type": problem.type.name,
                      "m": problem.m, "n": problem.n, "batch_count": problem.batch,
                      "k": problem.k, **({"key": call} if kind else {}),
                      "call_count": calls, "us": t,
                      "time_us": None if t is None else calls * t,
                      "served": lib is not None, "lib": lib, "reason": reason})
    return gemms


def _add_shares(gemms: list[dict]) -> tuple[int, float]:
    """Each GEMM's share of the calls and of the time, the GEMMs sorted by time (the untimed
    last); (total calls, total time)."""
    total_calls = sum(g["call_count"] for g in gemms)
    total_time = sum(g["time_us"] for g in gemms if g["time_us"] is not None)
    for g in gemms:
        g["pct_calls"] = _pct(g["call_count"], total_calls)
        g["pct_time"] = None if g["time_us"] is None else _pct(g["time_us"], total_time)
    gemms.sort(key=lambda g: (g["time_us"] is None, -(g["time_us"] or 0.0), -g["call_count"]))
    return total_calls, total_time


def _p(value, digits=1) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.{digits}f}%"


def format_text(report: dict, top: int = 30) -> str:
    s, ns = report["served"], report["not_served"]
    lines = [
        f"geko coverage: {report['library']} ({len(report['library_files'])} libraries, "
        f"{report['n_library_sizes']} sizes) vs {report['workload']} ({report['n_gemms']} GEMMs, "
        f"{report['n_calls']} calls)",
        f"time per GEMM: {report['time_source']}",
        f"served:     {s['n_gemms']} of {report['n_gemms']} GEMMs ({_p(s['pct_gemms'])}), "
        f"{s['n_calls']} of {report['n_calls']} calls ({_p(s['pct_calls'])}), "
        f"{_p(s['pct_time'])} of GEMM time{' (estimate)' if report['estimate'] else ''}",
        f"not served: {ns['n_gemms']} GEMMs ({_p(ns['pct_gemms'])}), {ns['n_calls']} calls "
        f"({_p(ns['pct_calls'])}), {_p(ns['pct_time'])} of GEMM time",
    ]
    if report["n_without_time"]:
        lines.append(f"no time for {report['n_without_time']} GEMM(s): time shares are of the "
                     "GEMMs with a time")
    unused = report["library_sizes_not_in_workload"]
    lines.append(f"library sizes the workload never runs: {len(unused)}")
    lines.append("")
    lines.append(f"  {'served':<7}{'calls':>9}{'% calls':>9}{'time (us)':>13}{'% time':>8}  "
                 f"{'GEMM':<36}library / why not")
    rows = report["gemms"] if not top or top <= 0 else report["gemms"][:top]
    for g in rows:
        time = "n/a" if g["time_us"] is None else f"{g['time_us']:.1f}"
        lines.append(f"  {'yes' if g['served'] else 'no':<7}{g['call_count']:>9}"
                     f"{_p(g['pct_calls']):>9}{time:>13}{_p(g['pct_time']):>8}  "
                     f"{g['gemm'] + ' ':<36}{g['lib'] if g['served'] else g['reason']}")
    if len(rows) < len(report["gemms"]):
        lines.append(f"  ... {len(report['gemms']) - len(rows)} more (--top 0 lists all)")
    if unused:
        lines.append("")
        lines.append("library sizes the workload never runs:")
        for u in unused[: top if top and top > 0 else len(unused)]:
            lines.append(f"  {u['type']} {u['size']}  ({u['lib']})")
        if top and 0 < top < len(unused):
            lines.append(f"  ... {len(unused) - top} more")
    return "\n".join(lines)
