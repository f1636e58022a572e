"""Library operations with the original tool's semantics: trim, epilogues, merge, extract,
shipping kept results (final_libs) and the full library (full_libs)."""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from .. import files
from ..gemm import GemmProblem
from .codec import load_yaml
from .collection import LibraryCollection, load_dir
from .edits import (BIAS_TAG, NO_EPILOGUE_TYPES, add_epilogues, epilogue_file_name, epilogue_tag,
                    trim, with_epilogue_tag)
from .logic import LibraryError, LibraryLogic, build, dump, load, problems_of
from ..log_setup import LOGGER



# --- load and create -------------------------------------------------------------------------------

log = logging.getLogger(LOGGER)


def load_library(path) -> LibraryLogic:
    """One library-logic YAML (list or dict layout)."""
    log.debug("Loading library file: %s", path)
    return load(path)


def load_collection(directory) -> LibraryCollection:
    """Every ``*.yaml`` library of a directory, by file name."""
    if not Path(directory).is_dir():
        raise LibraryError(f"{directory}: no such library directory")
    return load_dir(directory)


def create(hipblaslt_path=None, lib_dir=None, out_dir="build", version: str = "5", *,
           platform=None, **config) -> Path:
    """What the platform loads at run time, made from the libraries of ``lib_dir`` into
    ``out_dir``: on rocm TensileCreateLibrary (``version``: code-object version) writing
    ``out_dir/library/``; the sim and cuda platforms' equivalents elsewhere."""
    from .. import platforms

    if lib_dir is None:
        raise TypeError("create() needs lib_dir")
    # the code-object version is a setting of the checkout's platform; the others have none
    section = platforms.CHECKOUT.platform
    config[section] = dict(config.get(section) or {}, code_object_version=str(version))
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    return plat.create_library(Path(lib_dir), Path(out_dir))


def _clean_appended(solution: dict) -> dict:
    solution.pop("ProblemType", None)
    if solution.get("StaggerU") == 0:
        for key in ("StaggerUMapping", "StaggerUStride", "_staggerStrideShift"):
            solution[key] = 0
    return solution


def merge_solutions(input_dir, epilogues: bool = True, pattern: str = "**/3_LibraryLogic/*.yaml",
                    trim_size: bool = True) -> LibraryCollection:
    """Merge tuning outputs: files with the same name are one library. The first (by path) is
    the base; every other file's referenced solutions are appended with new indices and its
    sizes re-pointed. Then trim and (optionally) epilogues. Returns {file name: library}."""
    if not Path(input_dir).is_dir():
        raise LibraryError(f"{input_dir}: no such directory to merge libraries from")
    paths = sorted(Path(input_dir).glob(pattern), key=lambda p: (p.name, str(p)))
    merged: dict[str, LibraryLogic] = {}
    for path in paths:
        lib = load(path)
        if trim_size:
            lib.exact_logic = [[list(size[:4]), entry] for size, entry in lib.exact_logic]
        base = merged.get(path.name)
        if base is None:
            merged[path.name] = lib
            continue
        if base.problem_type != lib.problem_type:
            raise LibraryError(f"{path}: ProblemType differs from the first {path.name}; "
                               "files with one name must hold one problem type")
        if base.default_solution != lib.default_solution:
            raise LibraryError(f"{path}: DefaultSolution differs from the first {path.name}; "
                               "geko cannot merge those, use TensileMergeLibrary")
        position = lib.solution_position()
        next_index = max(base.solution_position(), default=-1) + 1
        new_index: dict[int, int] = {}
        for size, (index, gflops) in lib.exact_logic:
            index = int(index)
            if index not in new_index:
                new_index[index] = next_index
                next_index += 1
                solution = _clean_appended(copy.deepcopy(lib.solutions[position[index]]))
                solution["SolutionIndex"] = new_index[index]
                base.solutions.append(solution)
            base.exact_logic.append([list(size), [new_index[index], gflops]])
    out = LibraryCollection()
    for name, lib in merged.items():
        trim(lib)
        if epilogues:
            add_epilogues(lib)
            name = epilogue_file_name(name, lib)
        out[name] = lib
    return out


def write_collection(libs: dict[str, LibraryLogic], out_dir, header: str | None = None) -> list[Path]:
    return [dump(lib, Path(out_dir) / name, header=header) for name, lib in sorted(libs.items())]


# --- MatchTable and extract -------------------------------------------------------------------------

def load_match_table(path) -> dict[int, tuple[Path, int]]:
    """hipBLASLt's MatchTable.yaml: global solution index -> (logic file, local SolutionIndex).
    Written as a list indexed by the global index, or as a mapping; relative paths are taken
    relative to the MatchTable's directory."""
    path = Path(path)
    data = load_yaml(path.read_text())
    items = enumerate(data) if isinstance(data, list) else (data or {}).items()
    table = {}
    for key, value in items:
        if value is None:
            continue
        if not (isinstance(value, list) and len(value) == 2):
            raise LibraryError(f"{path}: entry {key} must be [logic file, solution index]")
        logic = Path(value[0])
        table[int(key)] = (logic if logic.is_absolute() else path.parent / logic, int(value[1]))
    return table


def _index_column(frame: pd.DataFrame, side: str = "") -> str:
    for name in (f"solution_index{side}", f"solutionIdx{side}"):
        if name in frame:
            return name
    raise LibraryError(f"results have no solution_index{side} column")


def extract_solutions(winners: pd.DataFrame, match_table=None, *, platform=None,
                      **config) -> LibraryCollection:
    """Dense-search winners -> one Equality library per source logic file name, holding the
    winning solutions (copied from the vendor's logic files through hipBLASLt's MatchTable) and
    the winners' sizes. Without a MatchTable the platform (``platform=``) extracts its own
    solutions (the sim and cuda platforms have no MatchTable)."""
    if match_table is None:
        return _extract_on_platform(winners, platform, config)
    table = match_table if isinstance(match_table, dict) else load_match_table(match_table)
    column = _index_column(winners)
    ordered = winners.sort_values(["m", "n", "batch_count", "k"], kind="stable")
    loaded: dict[Path, LibraryLogic] = {}
    chosen: dict[str, list] = {}
    templates: dict[str, LibraryLogic] = {}
    for row in ordered.to_dict("records"):
        index = int(row[column])
        if index not in table:
            raise LibraryError(f"solution index {index} is not in the MatchTable")
        logic, local = table[index]
        if logic not in loaded:
            loaded[logic] = load(logic)
        source = loaded[logic]
        solution = source.solutions[source.solution_position()[local]]
        templates.setdefault(logic.name, source)
        problem = GemmProblem(source.gemm_type, row["m"], row["n"], row["batch_count"], row["k"])
        chosen.setdefault(logic.name, []).append((problem, solution, 0.0))
    out = LibraryCollection()
    for name, entries in chosen.items():
        template = copy.copy(templates[name])
        template.index_order, template.perf_metric = [2, 3, 0, 1], "DeviceEfficiency"
        template.library_type = "Equality"
        out[name] = build(template, entries)
    return out


def _extract_on_platform(winners: pd.DataFrame, platform, config: dict) -> LibraryCollection:
    import tempfile

    from .. import platforms

    plat = platforms.resolve(None, platform, **config)
    with tempfile.TemporaryDirectory() as tmp:
        plat.extract(winners, Path(tmp))
        return load_dir(tmp)


# --- final_libs and full_libs ------------------------------------------------------------------------

def _size_of(row) -> tuple[int, int, int, int]:
    return (int(row["m"]), int(row["n"]), int(row["batch_count"]), int(row["k"]))


def from_dataframe(df: pd.DataFrame, lib_dir, type_override: str | None = "Equality"
                   ) -> LibraryCollection:
    """Libraries holding exactly the rows of ``df`` (grouped by its ``lib`` column), each
    with the solution its library has for that size. Every row must find its size."""
    frame, out = df, LibraryCollection()
    if "lib" not in frame:
        raise LibraryError("results have no lib column (the library file each row came from)")
    for name, rows in frame.groupby("lib", sort=True):
        if not (Path(lib_dir) / name).is_file():
            raise LibraryError(f"results name library {name}, which {lib_dir} does not have")
        lib = load(Path(lib_dir) / name)
        by_size = {size: index for size, index, _ in lib.size_entries()}
        positions = lib.solution_position()
        gflops = {size: g for size, _, g in lib.size_entries()}
        chosen = []
        for row in rows.to_dict("records"):
            size = _size_of(row)
            if size not in by_size:
                raise LibraryError(f"{name}: has no entry for size {list(size)}")
            chosen.append((GemmProblem(lib.gemm_type, *size),
                           lib.solutions[positions[by_size[size]]], gflops[size]))
        result = build(lib, chosen)
        if type_override:
            result.library_type = type_override
        out[name] = result
    return out


def ship_kept(libs_dir, kept: pd.DataFrame, out_dir, header: str = "") -> list[Path]:
    """final_libs: the kept rows' GEMMs with their tuned solutions, one file per library;
    libraries with nothing kept are not written."""
    return write_collection(from_dataframe(kept, libs_dir), out_dir, header=header or None)


def full_libs(frame: pd.DataFrame, lib_dir, reference_solution: Callable[[dict], dict],
              type_override: str | None = "Equality") -> LibraryCollection:
    """Every GEMM with its winner: the tuned solution where ``winner == "tuned"``, otherwise
    the reference solution (``reference_solution(row)`` returns its parameters)."""
    out = LibraryCollection()
    for name, rows in frame.groupby("lib", sort=True):
        lib = load(Path(lib_dir) / name)
        by_size = {size: index for size, index, _ in lib.size_entries()}
        positions = lib.solution_position()
        chosen = []
        for row in rows.to_dict("records"):
            size = _size_of(row)
            if row.get("winner") == "tuned":
                solution = lib.solutions[positions[by_size[size]]]
                gflops = row.get("gflops_tuned", 0.0)
            else:
                solution = copy.deepcopy(reference_solution(row))
                gflops = row.get("gflops_reference", 0.0)
            chosen.append((GemmProblem(lib.gemm_type, *size), solution, float(gflops or 0.0)))
        result = build(lib, chosen, key=_content)  # tuned and reference indices may collide
        if type_override:
            result.library_type = type_override
        out[name] = result
    return out


def from_full_dataframe(df: pd.DataFrame, lib_dir, match_table_path=None,
                        type_override: str | None = "Equality", *, platform=None,
                        **config) -> LibraryCollection:
    """The original's full library: every GEMM of ``df`` (analyze's results, with ``winner``)
    with its winning solution, the tuned one from ``lib_dir`` or the reference one, found
    through hipBLASLt's MatchTable (``match_table_path``, rocm) or, without one, asked of the
    platform (``platform=``; the sim and cuda platforms have no MatchTable)."""
    if "lib" not in df or "winner" not in df:
        raise LibraryError("results need lib and winner columns (optim.analyze's raw results)")
    if match_table_path is not None:
        reference = match_table_reference(match_table_path)
    else:
        from .. import platforms

        plat = platforms.resolve(None, platform, **config)
        column = _index_column(df, "_reference")

        def reference(row: dict) -> dict:
            return plat.reference_solution(GemmProblem.from_row(row), int(row[column]))
    return full_libs(df, lib_dir, reference, type_override)


def merge(hipblaslt_path, orig_dir, inc_dir, output_dir, eff: bool = False,
          force: bool = True, **config) -> Path:
    """TensileMergeLibrary of the checkout: the libraries of ``inc_dir`` merged into those of
    ``orig_dir``, written to ``output_dir`` (the same as ``orig_dir`` updates it in place, as
    the README's integration step); ``eff`` keeps efficiency calculations (``--no_eff``
    otherwise), ``force`` replaces sizes both hold (``--force_merge True``). Needs a
    hipBLASLt checkout (rocm): it is that checkout's tool."""
    from .. import platforms
    from ..platforms.rocm import library_build

    if hipblaslt_path is None:
        raise LibraryError("merge() runs TensileMergeLibrary of a hipBLASLt checkout: give "
                           "hipblaslt_path")
    plat = platforms.resolve(hipblaslt_path, platforms.CHECKOUT.platform, **config)
    for directory in (orig_dir, inc_dir):
        _refuse_model_libraries(Path(directory), plat.name)
    return library_build.merge_libraries(plat.install.tensilelite, Path(orig_dir),
                                         Path(inc_dir), Path(output_dir), python=plat.python,
                                         eff=eff, force=force)


def _refuse_model_libraries(directory: Path, platform: str) -> None:
    """A library a campaign of another platform made (its provenance.json, or the sim
    platform's note heading its files) names kernels never measured on this one: refused."""
    from ..campaign import integrity
    from ..platforms.sim import MODEL_NOTE

    try:
        found = integrity.find_stamp(directory) if directory.is_dir() else None
    except integrity.IntegrityError:
        found = None
    made_on = (found.record.get("platform") if found else None) or platform
    if made_on != platform:
        raise LibraryError(f"{directory}: made on the {made_on} platform "
                           f"({integrity.MANIFEST}), not {platform}: its kernels were never "
                           f"measured there; merge a {platform} campaign's libraries")
    for path in sorted(directory.glob("*.yaml")) if directory.is_dir() else []:
        with open(path, encoding="utf-8", errors="replace") as handle:
            if handle.readline().strip() == f"# {MODEL_NOTE}":
                raise LibraryError(f"{path}: a sim platform library (its first line says so), "
                                   f"not {platform}: its kernels were never measured there")


def _content(solution: dict) -> str:
    """A solution's identity by its parameters, whatever its index."""
    return repr(sorted((k, repr(v)) for k, v in solution.items() if k != "SolutionIndex"))


def match_table_reference(match_table) -> Callable[[dict], dict]:
    """A reference-solution lookup through hipBLASLt's MatchTable (rocm)."""
    table = match_table if isinstance(match_table, dict) else load_match_table(match_table)
    cache: dict[Path, LibraryLogic] = {}

    def lookup(row: dict) -> dict:
        logic, local = table[int(row[_index_column(pd.DataFrame([row]), "_reference")])]
        if logic not in cache:
            cache[logic] = load(logic)
        lib = cache[logic]
        return lib.solutions[lib.solution_position()[local]]

    return lookup


def normalize(path, out_path) -> Path:
    """Rewrite a list-layout library in the dict layout (or a dict-layout one as a list)."""
    lib = load(path)
    lib.layout = "dict" if lib.layout == "list" else "list"
    return files.write_text(out_path, lib.text())


# --- prune -------------------------------------------------------------------------------------------

def prune_library(*args, **kwargs):
    """Two forms. The original's: ``prune_library(hipblaslt_path, base_lib, workdir=".",
    cluster=True, devices=None, tol=0.02, scale_tol=True, other_keys=None)`` returns the pruned
    library (the sweeps run on the platform ``hipblaslt_path`` or ``platform=`` selects, on the
    first of ``devices``, their files under ``workdir/<lib stem>/``); geko's: ``prune_library(
    lib, sweep, tol, scale_tol, method, time_limit)`` with a sweep callable returns the pruned
    library and one report row per cluster. Both choose with ``method="ilp"`` (an exact ILP
    with the greedy cover as its bound, the default: never more solutions than the original's
    greedy set cover) or ``method="greedy"`` (the original's)."""
    if args and isinstance(args[0], LibraryLogic) or "sweep" in kwargs:
        return prune_with_sweep(*args, **kwargs)
    return _prune_original(*args, **kwargs)


def _prune_original(hipblaslt_path=None, base_lib=None, workdir=".", cluster: bool = True,
                    devices=None, tol: float = 0.02, scale_tol: bool = True, other_keys=None,
                    *, method: str = "ilp", time_limit: float = 10.0, platform=None,
                    **config) -> LibraryLogic:
    from .. import platforms
    from . import prune

    if not isinstance(base_lib, LibraryLogic):
        raise TypeError("prune_library(hipblaslt_path, base_lib, ...): base_lib must be a "
                        "Library (library.operations.load_library)")
    if not base_lib.exact_logic:
        raise LibraryError("prune_library needs a library with size-solution mappings "
                           "(Equality or GridBased logic)")
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    device = int(list(devices)[0]) if devices else 0
    work = Path(workdir) / Path(base_lib.source or "library.yaml").stem
    work.mkdir(parents=True, exist_ok=True)
    keys = (tuple(prune.CLUSTER_KEYS) + tuple(other_keys or ())) if cluster else ()

    def sweep(cluster_lib):
        path = dump(cluster_lib, work / "cluster.yaml")
        return plat.sweep(problems_of(cluster_lib), path, work, device)

    pruned, report = prune_with_sweep(base_lib, sweep, tol=tol, scale_tol=scale_tol,
                                      method=method, time_limit=time_limit, keys=keys)
    before = sum(r["solutions_before"] for r in report)
    after = sum(r["solutions_after"] for r in report)
    for row in report:
        log.info("'%s': removed %d solutions out of %d", row["cluster"],
                 row["solutions_before"] - row["solutions_after"], row["solutions_before"])
    log.info("Final lib: removed %d solutions out of %d", before - after, before)
    return pruned


def prune_with_sweep(lib: LibraryLogic, sweep: Callable[[LibraryLogic], pd.DataFrame],
                     tol: float = 0.02, scale_tol: bool = True, method: str = "ilp",
                     time_limit: float = 10.0, keys=None) -> tuple[LibraryLogic, list[dict]]:
    """Fewer solutions, every size within ``tol`` of its best: solutions are clustered by
    (MacroTile0, MacroTile1, DepthU); every solution of a cluster is measured on every size the
    cluster serves (``sweep(cluster_library)`` -> rows m, n, batch_count, k, SolutionIndex,
    gflops) and a minimum set of solutions covering all sizes is chosen (an exact ILP; the
    original's greedy cover where the ILP cannot prove better). Returns the pruned library and
    one report row per cluster."""
    from . import prune

    positions = lib.solution_position()
    serving: dict[int, list] = {}
    for size, index, gflops in lib.size_entries():
        serving.setdefault(positions[index], []).append(size)
    chosen, report = [], []
    groups = prune.clusters(list(lib.solutions), *(() if keys is None else (keys,)))
    for key, members in groups.items():
        sizes = [size for p in members for size in serving.get(p, [])]
        if not sizes:
            continue
        solutions = {lib.solutions.index_of(p): lib.solutions[p] for p in members}
        row = {"cluster": "x".join(map(str, key)) or "all", "sizes": len(sizes),
               "solutions_before": len(members)}
        if len(members) < 2:
            index = next(iter(solutions))
            chosen.extend((GemmProblem(lib.gemm_type, *s), solutions[index], 0.0) for s in sizes)
            report.append(row | {"solutions_after": 1, "method": "single", "status": "trivial"})
            continue
        cluster = copy.copy(lib)
        cluster.solutions = [solutions[i] for i in sorted(solutions)]
        cluster.exact_logic = [[list(s), [sorted(solutions)[0], 0.0]] for s in sizes]
        table = sweep(cluster)
        size_id = {size: n for n, size in enumerate(sizes)}  # plain ids: tuples make MultiIndexes
        table["size"] = [size_id.get(s) for s in zip(table["m"], table["n"],
                                                      table["batch_count"], table["k"])]
        gflops = table.dropna(subset=["size"]).pivot_table(
            index="size", columns="SolutionIndex", values="gflops", aggfunc="max"
        ).reindex(index=range(len(sizes)))
        flops = [2.0 * m * n * b * k for m, n, b, k in sizes]
        selection = prune.select(gflops, flops, tol=tol, scale_tol=scale_tol, method=method,
                                 time_limit=time_limit)
        for n, size in enumerate(sizes):
            best = selection.assignment[n]
            chosen.append((GemmProblem(lib.gemm_type, *size), solutions[best],
                           float(gflops.at[n, best])))
        report.append(row | {"solutions_after": len(selection.chosen),
                             "greedy_would_keep": selection.n_greedy,
                             "method": selection.method, "status": selection.status,
                             "tolerance": selection.tolerance,
                             "solve_seconds": selection.solve_seconds})
    return build(lib, chosen), report
