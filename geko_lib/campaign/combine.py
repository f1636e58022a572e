"""One library from several campaigns: per GEMM the fastest verified kernel among the campaigns'
final libraries and the platform's default, raced side by side (target ``combine``).

A dense search and a tune campaign of the same workload each ship the kernels that beat the
default in their own run. ``combine_with`` names the other finished workdirs; this module finds
every kernel their final libraries (and this campaign's) serve for each size, lets the platform
time them beside its default on the same operands (``race``: replays interleaved) and check each
against its higher-precision reference, and keeps per GEMM the fastest that passes the check and
beats the default by ``up_thr``, as every other phase does. The sources must be campaigns on the
same platform, architecture and library version, of this workload or of a part of it (a tune
campaign of the decode GEMMs of a trace beside a dense search of the whole trace): a source that
serves a GEMM this workload does not have, or differs otherwise, is refused, naming the file and
what differs.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from . import state as campaign_state, integrity, layout
from .. import workload
from ..errors import GekoError
from ..gemm import GemmProblem, GemmType
from ..library import logic as liblogic
from ..library.collection import load_dir
from . import analysis

SAME = ("platform", "arch", "library_version")  # what sources must share
DEFAULT = "default"  # the source name of the platform's own choice


class CombineError(GekoError, ValueError):
    """A source campaign cannot be combined with this one."""


@dataclass(frozen=True)
class Source:
    name: str  # "this" (the campaign combining) or a short label of another workdir
    libraries: dict[str, liblogic.LibraryLogic]  # its final_libs/, by file name


def source(name: str, libs) -> Source:
    return Source(name, dict(load_dir(libs)))


@dataclass(frozen=True)
class Candidate:
    source: str
    solution: dict
    lib_name: str  # the library file of the source that serves the size


def label(workdir, taken: set[str]) -> str:
    """A short name for a source's columns (us_<label>): its workdir's name, numbered when
    another source has it."""
    name = Path(workdir).name or "source"
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    return candidate


def check_identity(workdir, campaign: dict) -> dict:
    """The run state of a campaign on the same platform, arch and library version; refused
    otherwise, naming its run_state.json and what differs. The workflow asks this while its
    Snakefile is read, so a wrong combine_with changes nothing (``check_part_of`` then checks
    the GEMMs of a campaign of another workload file)."""
    workdir = Path(workdir)
    state_file = workdir / layout.RUN_STATE
    recorded = campaign_state.read(workdir)
    if recorded is None:
        raise CombineError(f"combine_with {workdir}: no {state_file.name} there (not a geko "
                           "workdir, or a campaign that never started)")
    theirs = recorded.get("identity") or {}
    different = [f"{key} {theirs.get(key)!r} (this campaign: {campaign.get(key)!r})"
                 for key in SAME if theirs.get(key) != campaign.get(key)]
    if different:
        raise CombineError(f"{state_file}: another campaign's kernels cannot be raced for this "
                           "one: " + "; ".join(different))
    return recorded


def check_libs(workdir, recorded: dict) -> Path:
    """The campaign's final_libs/, proved whole and its own by its stamp (refused otherwise,
    naming it)."""
    workdir = Path(workdir)
    libs = workdir / layout.FINAL_LIBS
    if not libs.is_dir():
        raise CombineError(f"combine_with {workdir}: no {layout.FINAL_LIBS}/ (finish that "
                           "campaign first: snakemake final_libs there)")
    expected = integrity.expected_provenance(recorded.get("identity") or {},
                                             recorded.get("mode", "search"), layout.FINAL_LIBS)
    integrity.require(libs, expected, workdir)
    return libs


def workload_gemms(path) -> set[tuple[GemmType, tuple]]:
    """(GEMM type, size) of every GEMM of a campaign's workload.yaml."""
    from .. import platforms

    table = workload.read(path, support=platforms.gemm_support(None))
    return {(p.type, p.size) for p in workload.problems(table)}


def same_workload(recorded: dict, campaign: dict) -> bool:
    """Whether a source's run state records this campaign's workload."""
    theirs = recorded.get("identity") or {}
    return theirs.get("workload_sha256") == campaign.get("workload_sha256")


def check_part_of(workdir, recorded: dict, libs: dict,
                  gemms: set[tuple[GemmType, tuple]], campaign: dict | None = None) -> None:
    """A source only where every GEMM its final_libs serve is one of this campaign's
    (``gemms``), whatever workload file it ran: the combined library serves this workload. (A
    source of this very workload file can still serve another GEMM: one its tuning turned into
    another type.)"""
    foreign = sorted({p for lib in libs.values() for p in liblogic.problems_of(lib)
                      if (p.type, p.size) not in gemms}, key=lambda p: (str(p.type), p.size))
    if foreign:
        names = ", ".join(p.name for p in foreign[:3])
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        why = (" (this campaign's own workload file: a phase of that campaign changed their "
               "type)" if campaign is not None and same_workload(recorded, campaign) else "")
        raise CombineError(
            f"{Path(workdir) / layout.FINAL_LIBS}: serves {len(foreign)} GEMM(s) that are not in "
            f"this campaign's workload ({names}{more}); {_whose(recorded)}{why}")


def _whose(recorded: dict) -> str:
    """What a refused source's workload was, in words (never 'None')."""
    theirs = recorded.get("identity") or {}
    path = theirs.get("input_path") or recorded.get("input_path")
    if not path:
        return "its run_state.json records no workload"
    return f"its workload is {path}"


def check_not_this(workdir, this_workdir, seen: set) -> None:
    """A source must be another campaign, named once: combining a campaign with itself (or a
    source twice) races a kernel against itself and proves nothing."""
    resolved = Path(workdir).resolve()
    if this_workdir is not None and resolved == Path(this_workdir).resolve():
        raise CombineError(f"combine_with {workdir}: that is this campaign's own workdir; name "
                           "the other campaigns to combine with")
    if resolved in seen:
        raise CombineError(f"combine_with {workdir}: named twice ({resolved})")
    seen.add(resolved)


def check_source(workdir, campaign: dict, name: str,
                 gemms: set[tuple[GemmType, tuple]]) -> Source:
    """A finished campaign on the same platform, arch and library version, whose final_libs/ is
    whole and serves only GEMMs of this campaign (``gemms``); refused otherwise, naming the
    file and what differs."""
    recorded = check_identity(workdir, campaign)
    one = source(name, check_libs(workdir, recorded))
    check_part_of(workdir, recorded, one.libraries, gemms, campaign)
    return one


def candidates(sources: Sequence[Source]) -> dict[tuple[GemmType, tuple], list[Candidate]]:
    """(GEMM type, size) -> every source's kernel for it, in source order (one per source and
    distinct kernel: two sources shipping the same kernel race it once)."""
    out: dict[tuple[GemmType, tuple], list[Candidate]] = {}
    for one in sources:
        for name, lib in one.libraries.items():
            positions = lib.solution_position()
            for size, index, _ in lib.size_entries():
                solution = lib.solutions[positions[index]]
                entry = out.setdefault((lib.gemm_type, size), [])
                if not any(_same_kernel(c.solution, solution) for c in entry):
                    entry.append(Candidate(one.name, solution, name))
    return out


def _kernel(solution: dict) -> dict:
    return {k: v for k, v in solution.items() if k != "SolutionIndex"}


def _ratio(default_us: float, us: float) -> float:
    """The default's time over the entrant's (NaN where the default could not run)."""
    return default_us / us if math.isfinite(default_us) and us > 0 else math.nan


def _same_kernel(a: dict, b: dict) -> bool:
    return _kernel(a) == _kernel(b)


def choose(problem: GemmProblem, entrants: list[Candidate], raced: list[tuple[float, float]],
           up_thr: float, err_thr: float) -> dict:
    """One results row: the default's time (``raced[0]``) and each entrant's, and the winner:
    the fastest entrant whose error is under ``err_thr`` and which beats the default by
    ``up_thr`` (else the default, which the combined library leaves to the platform)."""
    default_us = raced[0][0]
    row = {**problem.gemm_fields(), "us_default": default_us}
    best = None
    for candidate, (us, error) in zip(entrants, raced[1:]):
        row[f"us_{candidate.source}"] = us
        row[f"error_{candidate.source}"] = error
        ok = math.isfinite(us) and error < err_thr
        if ok and (best is None or us < best[1]):
            best = (candidate, us, error)
    # every entrant is a kernel of its own campaign's library, never the default's choice
    kept = best is not None and bool(analysis.keeps(True, _ratio(default_us, best[1]), best[2],
                                                    up_thr, err_thr))
    row["winner"] = best[0].source if kept else DEFAULT
    row["us_combined"] = best[1] if kept else default_us
    row["ratio"] = default_us / row["us_combined"]
    row["kept"] = kept
    row["_winner"] = best[0] if kept else None
    return row


def build_libraries(rows: list[dict], sources: Sequence[Source]
                    ) -> dict[str, liblogic.LibraryLogic]:
    """The combined library files, one per GEMM type of the kept winners, each built on a
    source's library file of that type as template (its header, architecture, problem type)
    and named as that file; sets each row's ``lib`` (the file serving it, "" if none)."""
    templates: dict[str, liblogic.LibraryLogic] = {}
    for one in sources:
        for name, lib in one.libraries.items():
            templates.setdefault(name, lib)
    kept = [row for row in rows if row["_winner"] is not None]
    names: dict[GemmType, str] = {}
    for row in sorted(kept, key=lambda r: r["_winner"].lib_name):
        names.setdefault(GemmProblem.from_row(row).type, row["_winner"].lib_name)
    grouped: dict[str, list] = {}
    for row in rows:
        row["lib"] = ""
    for row in kept:
        problem = GemmProblem.from_row(row)
        row["lib"] = names[problem.type]
        grouped.setdefault(row["lib"], []).append(
            (problem, copy.deepcopy(row["_winner"].solution),
             problem.flops / row["us_combined"] / 1e3))
    return {name: liblogic.build(templates[name], entries, key=_content)
            for name, entries in sorted(grouped.items())}


def _content(solution: dict) -> str:
    return json.dumps(_kernel(solution), sort_keys=True, default=str)


def summary(results: pd.DataFrame) -> str:
    """What the combination shipped, for the job log and the terminal."""
    kept = results[results["kept"]]
    won = ", ".join(f"{n} from {s}" for s, n in sorted(kept["winner"].value_counts().items()))
    return f"{len(kept)} of {len(results)} GEMMs served ({won or 'none'})"


def results_frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{k: v for k, v in row.items() if not k.startswith("_")}
                         for row in rows])
