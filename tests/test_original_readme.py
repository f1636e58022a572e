"""The original GEKO README (tests/fixtures/reference/geko_README.txt), run as a GEKO user would
run it: its 12 Python blocks are taken out of the text and executed as written (``from geko
import ...``), on the sim platform and on the rocm replays (the ``env`` fixture and fake checkout
of test_readme_api.py), and its command lines run through ``./bin/geko`` and
``python scripts/*.py`` (slow tier: they start snakemake).

What is changed in a block, and only that:

- the placeholder checkout (``/path/to/rocm-libraries/projects/hipblaslt``, ``/path/to/hipblaslt``)
  becomes the fake checkout on rocm, and ``None`` on sim (no checkout: the call runs on the sim
  platform and says so), where the MatchTable, which only a hipBLASLt build has, is ``None`` too
  (``extract_solutions`` then extracts the sim platform's own solutions);
- the files a block reads but does not make (the workload log, ``optimized_libs/``, a library
  file, a bench file, earlier benchmark outputs) are put where it looks for them first;
- three bugs of the original README itself, each run as written first (the failure is checked)
  and then corrected: the optim block's ``optim.analyze(lib_dir="workdir/optimizations")`` names
  the tuning-YAML directory, which holds no library logic (the README's own Pattern 1 merges the
  tuned solutions first; so does the corrected call); the library block's ``from_dataframe(
  df=results_df, ...)`` uses a ``results_df`` it never makes (an analyze result is supplied);
  Pattern 4 calls ``library.operations.create`` with only ``bench`` imported (the import is
  added).
"""

from __future__ import annotations

import logging
import math
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import FIXTURES, ROOT
from tests.rocm_fake import fixture_logic, write_device_library
from tests.test_readme_api import BBS_NN_LIB, env  # noqa: F401 (the platforms' fixture)

README = FIXTURES / "reference" / "geko_README.txt"
LOG = FIXTURES / "workloads" / "readme_example.yaml"  # the README's own log rows
CHECKOUTS = ("/path/to/rocm-libraries/projects/hipblaslt", "/path/to/hipblaslt")
NO_MATCH_TABLE = ('Path("/path/to/hipblaslt/build/release/device-library/MatchTable.yaml")',
                  'Path(hipblaslt_path) / "build/release/device-library/MatchTable.yaml"')

pytestmark = pytest.mark.skipif(not README.is_file(), reason="tests/fixtures is not here")

# --- the README's Python blocks ----------------------------------------------------------------

_START = re.compile(r"^(from (geko|pathlib)\b|import logging$)")
_END = re.compile(r"^(---$|Pattern \d+:|Performance Tips$|[A-Z][A-Za-z ]*:$)")
_HEADING = (re.compile(r"^geko\.(\w+) - "), re.compile(r"^(Workflow Integration):$"),
            re.compile(r"^(Pattern \d+):"), re.compile(r"^(Debug Mode)$"))


def _heading(lines: list[str], at: int) -> str:
    for line in reversed(lines[:at]):
        for pattern in _HEADING:
            match = pattern.match(line)
            if match:
                return match.group(1).lower()
    raise AssertionError(f"no heading above line {at + 1}")


def python_blocks() -> dict[str, str]:
    """name (the section it is in) -> code, in README order. The text has no fences: a block
    starts at an import line and ends at the next heading or rule."""
    lines, blocks, i = README.read_text().splitlines(), {}, 0
    while i < len(lines):
        if not _START.match(lines[i]):
            i += 1
            continue
        j = i
        while j < len(lines) and not _END.match(lines[j]):
            j += 1
        name = _heading(lines, i)
        assert name not in blocks, name
        blocks[name] = "\n".join(lines[i:j]).rstrip() + "\n"
        i = j
    return blocks


BLOCKS = python_blocks()


def test_the_readme_has_twelve_python_blocks_that_compile():
    assert list(BLOCKS) == ["bench", "optim", "search", "workflow integration", "library",
                            "schemas", "utils", "pattern 1", "pattern 2", "pattern 3",
                            "pattern 4", "debug mode"]
    for name, code in BLOCKS.items():
        compile(code, name, "exec")


def _replace(code: str, old: str, new: str) -> str:
    assert old in code, f"the README no longer says {old!r}"
    return code.replace(old, new)


def on_platform(code: str, hip: str | None) -> str:
    """The block with the placeholder checkout made this platform's (see the module doc)."""
    if hip is not None:
        for placeholder in CHECKOUTS:
            code = code.replace(placeholder, hip)
    else:
        for call in NO_MATCH_TABLE:
            code = code.replace(call, "None")
        for placeholder in CHECKOUTS:
            code = code.replace(f'"{placeholder}"', "None")
    assert "/path/to" not in code
    return code


def run_block(name: str, hip: str | None, namespace: dict | None = None,
              code: str | None = None) -> dict:
    namespace = {} if namespace is None else namespace
    exec(compile(on_platform(code or BLOCKS[name], hip), f"<README {name}>", "exec"), namespace)
    return namespace


# --- what the blocks find on disk ----------------------------------------------------------------

def _retyped(source: Path, out_dir: Path, **problem_type) -> Path:
    """A copy of a real logic file for another layout/type (the fake checkout serves only the
    types of its logic files; the README's examples use others)."""
    from geko_lib import library

    lib = library.load(source)
    lib.problem_type.update(problem_type)
    lib.source = None
    path = out_dir / library.file_name(lib.schedule_name, lib.gemm_type)
    path.write_text(lib.text())
    return path


@pytest.fixture
def readme(env, tmp_path):
    """(hipblaslt_path or None, tmp dir) with the README's log (hipblaslt-log-mask64.yaml: its
    two bf16 TN GEMMs); on rocm the fake checkout also serves the README's bf16 TN and fp16 NN
    GEMMs."""
    hip, _ = env
    shutil.copy(LOG, "hipblaslt-log-mask64.yaml")
    if hip is not None:
        logic = fixture_logic("gfx950")
        extra = tmp_path / "extra_logic"
        extra.mkdir()
        bbs_nn = FIXTURES / "tensile_logic" / BBS_NN_LIB
        hhs_tt = next(p for p in logic if "HHS" in p.name)
        logic += [_retyped(bbs_nn, extra, TransposeA=True),
                  _retyped(hhs_tt, extra, TransposeA=False, TransposeB=False)]
        write_device_library(Path(hip), logic)
    return hip


def _optimized_libs() -> Path:
    Path("optimized_libs").mkdir(exist_ok=True)
    return Path(shutil.copy(FIXTURES / "tensile_logic" / BBS_NN_LIB, "optimized_libs"))


def _sizes(lib) -> list:
    return [list(size[:4]) for size, _ in lib.sizes]


# --- Module Reference ----------------------------------------------------------------------------

def test_bench_block(readme, capsys):
    _optimized_libs()
    ns = run_block("bench", readme)
    assert len(ns["df"]) == 2 and {"M", "N", "K", "call_count"} <= set(ns["df"].columns)
    assert len(pd.read_csv("workdir/summary.csv")) == len(ns["summary_df"]) == 2
    assert len(pd.read_csv("workdir/gemms.csv")) == len(ns["unique_df"]) == 2
    stem = Path(BBS_NN_LIB).stem
    assert Path(f"benchmarks/{stem}_bench-reference.out").is_file()
    assert Path(f"benchmarks/{stem}_bench-tuned.out").is_file()
    assert len(ns["results"]) > 0 and "ratio" in ns["results"]
    # the original's log lines, in its format, on stderr (import geko sets up the GEKO logger)
    err = capsys.readouterr().err
    assert re.search(r"^GEKO:INFO \[\w+:summarize\] Removed 0 out of 2 GEMMs after filtering",
                     err, re.M)
    assert re.search(r"^GEKO:INFO \[\w+:summarize\] Found 2 unique GEMMs after filtering$",
                     err, re.M)


@pytest.mark.slow  # two GA tuning jobs (test_readme_api runs a smaller one in the fast tier)
def test_optim_block(readme, capsys):
    from geko_lib.library import LibraryError

    code = BLOCKS["optim"]
    analyze = code[code.index("results = optim.analyze("):]
    ns: dict = {}
    with pytest.raises(LibraryError, match=r"workdir/optimizations/BBS_TN_0\.yaml"):
        run_block("optim", readme, ns)  # as written: lib_dir is the tuning-YAML directory
    assert [p.name for p in ns["config"]] == ["BBS_TN_0.yaml", "BBS_TN_1.yaml"]
    assert len(list(Path("workdir/optimizations").glob("build_*/3_LibraryLogic/*.yaml"))) == 2
    err = capsys.readouterr().err
    assert ("GEKO:INFO [optim:configure] GemmType(transA='T', transB='N', a_type='bf16_r', "
            "b_type='bf16_r', c_type='bf16_r', d_type='bf16_r', compute_type='f32_r') with "
            "2 sizes") in err
    fixed = ('from geko import library\nlibrary.operations.merge_solutions('
             '"workdir/optimizations").dump("workdir/libs")\n'
             + _replace(analyze, 'lib_dir="workdir/optimizations"', 'lib_dir="workdir/libs"'))
    run_block("optim", readme, ns, fixed)
    raw = pd.read_csv("workdir/results/raw_results.csv")
    assert len(raw) == 2 and len(ns["results"]) == int(raw["kept"].sum())


def test_search_block(readme):
    ns = run_block("search", readme)
    assert [c["iters"] for c in ns["configs"]] == [math.ceil(0.04e6 / 125.5)]
    assert len(ns["winners"]) == 1 and ns["winners"]["us"].iloc[0] > 0
    assert Path("search_results/gemms_0.yaml").is_file()
    assert Path("search_results/gemms_0.out").is_file()


def _check_search_flow(workdir: Path, ns: dict) -> None:
    from geko_lib import library

    assert len(ns["winners"]) == 2
    raw = pd.read_csv(workdir / "results" / "raw_results.csv")
    assert len(raw) == 2
    shipped = [library.load(p) for p in (workdir / "final_libs").glob("*.yaml")]
    assert sum(len(lib.sizes) for lib in shipped) == len(ns["results"]) == int(raw["kept"].sum())


def test_search_workflow_integration_block(readme):
    ns = run_block("workflow integration", readme)
    _check_search_flow(Path("workdir"), ns)


def test_analyze_logs_its_uplift_line_as_the_readme_shows_it(readme, capsys):
    """The README's log: ``GEKO:INFO [optim:analyze] Average GEMM uplift of X% for a total of
    N GEMMs`` (it read [optim:write_results], the helper that writes the results)."""
    run_block("workflow integration", readme)
    err = capsys.readouterr().err
    assert re.search(r"^GEKO:INFO \[optim:analyze\] (Average GEMM uplift of \d+\.\d{4}% for a "
                     r"total of \d+ GEMMs|No kernels improve over the base library)", err, re.M)


def test_library_block(readme, tmp_path):
    from geko_lib import bench, library

    shutil.copy(_retyped(FIXTURES / "tensile_logic" / BBS_NN_LIB, tmp_path, TransposeA=True),
                "gfx950_Cijk_Alik_Bljk_BBS_TN.yaml")  # the file name the block loads
    _optimized_libs()
    for job in ("build_BBS_NN_0", "build_BBS_NN_1"):
        logic = Path("workdir/optimizations", job, "3_LibraryLogic")
        logic.mkdir(parents=True)
        shutil.copy(FIXTURES / "tensile_logic" / BBS_NN_LIB, logic)
    # the README's bug: the block never makes results_df; a comparison of optimized_libs
    # against the default is one (every GEMM, kept or not: the filter is the caller's)
    results_df = bench.compare(readme, lib_dir="optimized_libs", custom_lib_dir="build_a",
                               benchmark_dir="analysis",
                               **({} if readme else {"platform": "sim"}))
    ns = run_block("library", readme, {"results_df": results_df})
    assert _sizes(ns["lib"]) and ns["lib"].gemm_type.name == "BBS_TN"
    (name,) = ns["collection"]  # add_epilogues renames it with its epilogue tags
    assert name.startswith("gfx950_Cijk_Ailk_Bljk_BBS_BH_Bias")
    assert all(lib.problem_type["UseBias"] for lib in ns["collection"].values())
    assert Path(f"benchmarks/{Path(name).stem}_bench.yaml").is_file()
    assert Path(f"benchmarks/{Path(name).stem}_verify.yaml").is_file()
    assert len(ns["merged"]) == 1
    shipped = library.load(Path("final") / BBS_NN_LIB)
    assert len(shipped.sizes) == len(results_df) > 0


def test_schemas_block():
    ns = run_block("schemas", None)
    assert ns["gemm_type"].compute_type == "f32_r"  # what the original holds
    assert ns["gemm_type"].gemm_name == "HHS_TN"
    assert [r["compute_type"] for r in ns["rows"]] == ["c_f32_r", "c_f32_r"]  # the log's form
    assert [(r["M"], r["N"], r["batch_count"], r["K"]) for r in ns["rows"]] == [
        (1024, 1024, 1, 1024), (2048, 2048, 1, 2048)]


def test_utils_block(readme):
    from geko_lib.errors import GekoError

    if readme is None:  # the client belongs to a hipBLASLt checkout, which sim has none of
        with pytest.raises(GekoError, match="needs a hipBLASLt checkout"):
            run_block("utils", readme)
        return
    run_block("utils", readme)
    assert Path("build_tmp/hash.txt").is_file()


# --- Common Usage Patterns -----------------------------------------------------------------------

@pytest.mark.slow  # GA tuning jobs
def test_pattern_1_block(readme):
    from geko_lib import library

    ns = run_block("pattern 1", readme)
    raw = pd.read_csv("workdir/results/raw_results.csv")
    assert len(raw) == 2
    shipped = [library.load(p) for p in Path("final").glob("*.yaml")]
    assert sum(len(lib.sizes) for lib in shipped) == len(ns["results_df"])
    assert all("_Bias" in p.name for p in Path("workdir/merged_libs").glob("*.yaml"))


def test_pattern_2_block(readme):
    ns = run_block("pattern 2", readme)
    _check_search_flow(Path("workdir"), ns)


def test_pattern_3_block(readme):
    from geko_lib import library

    mine = library.load(FIXTURES / "tensile_logic" / BBS_NN_LIB)
    for size, _ in mine.sizes[::2]:  # the fixture's K is 15360: half get a K the filter keeps
        size[3] = 1024
    mine.source = None
    Path("my_library.yaml").write_text(mine.text())
    ns = run_block("pattern 3", readme)
    assert Path(ns["bench_file"]).is_file() and Path(ns["verify_file"]).is_file()
    saved = library.load("modified_libs/my_library.yaml")
    assert _sizes(saved) and all(size[3] < 2048 for size in _sizes(saved))
    assert {entry[0] for _, entry in saved.sizes} == set(range(len(saved.solutions)))


def test_pattern_4_block(readme):
    from geko import bench, library

    kw = {} if readme else {"platform": "sim"}
    lib_path = _optimized_libs()
    lib = library.operations.load_library(lib_path)
    lib.sizes = lib.sizes[:2]
    lib.trim()
    lib.dump("modified_libs")
    bench_file, _ = lib.create_bench_input(output_dir=".", duration=0.1)
    shutil.copy(bench_file, "custom_bench.yaml")
    bench.compare(readme, lib_dir="optimized_libs", custom_lib_dir="build0",
                  benchmark_dir="benchmarks", device=0, **kw)  # "existing benchmark results"
    with pytest.raises(NameError, match="library"):
        run_block("pattern 4", readme)  # as written: library is not imported
    ns = run_block("pattern 4", readme, code="from geko import library\n" + BLOCKS["pattern 4"])
    n_sizes = len(library.load(lib_path).sizes)
    assert len(ns["results"]) == 2 * n_sizes  # the reference and tuned outputs of one library
    assert len(ns["benchmark_df"]) == 2 and Path("results/custom_bench.out").is_file()
    assert len(ns["comparison"]) == n_sizes and "ratio" in ns["comparison"]


def test_debug_mode_block():
    from geko import library

    logger = logging.getLogger("GEKO")
    level = logger.level
    try:
        run_block("debug mode", None)
        assert logger.getEffectiveLevel() == logging.DEBUG
        records = []
        handler = logging.Handler()
        handler.emit = records.append
        logger.addHandler(handler)
        try:
            library.operations.load_library(FIXTURES / "tensile_logic" / BBS_NN_LIB)
        finally:
            logger.removeHandler(handler)
        assert any(r.levelno == logging.DEBUG for r in records)
    finally:
        logger.setLevel(level)


# --- the README's command lines ------------------------------------------------------------------

def command_lines() -> list[str]:
    """Every ``./bin/geko`` and ``python scripts/*.py`` line of the README (continuations
    joined, comments dropped), in order; lines whose arguments the README elides (``...``) are
    left out."""
    lines, out, i = README.read_text().splitlines(), [], 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith(("./bin/geko", "python scripts/")):
            while line.endswith("\\"):
                i += 1
                line = line[:-1] + " " + lines[i].strip()
            text = " ".join(shlex.split(line, comments=True))
            if "..." not in text and not text.endswith("."):  # not elided, not prose
                out.append(text)
        i += 1
    return out


def test_the_readme_command_lines_are_found():
    lines = command_lines()
    assert len(lines) == 19 and lines[0].startswith("./bin/geko --search --workload-log")
    assert sum(line.startswith("python scripts/") for line in lines) == 10


def _argv(line: str) -> list[str]:
    words = shlex.split(line)
    if words[0] == "python":
        words[0] = sys.executable
    return words


def test_the_launchers_take_the_original_arguments_in_process(tmp_path, monkeypatch):
    """Each README line through its real entry point (runpy of bin/geko or the script), up to
    the geko command line it hands the engine (geko_lib.cli.main, replaced here)."""
    import runpy

    from geko_lib import cli

    seen = []
    monkeypatch.setattr(cli, "main", lambda argv=None: seen.append(
        list(sys.argv[1:] if argv is None else argv)) or 0)
    monkeypatch.chdir(tmp_path)
    expected = {
        "python scripts/configure.py hipblaslt-log-mask64.yaml -a gfx950 --workdir "
        "my_optimization --keep_thr 0.05 --device 0":
            ["--tune", "--workload-log", "hipblaslt-log-mask64.yaml", "--workdir",
             "my_optimization", "--devices", "0", "--keep_thr", "0.05", "--arch", "gfx950",
             "--until", "configure"],
        "python scripts/optimize.py --workdir my_optimization --devices=0,1,2,3 --up_thr 1.03":
            ["--tune", "--workdir", "my_optimization", "--devices", "0,1,2,3", "--up_thr",
             "1.03", "--client_build_dir", "build_tmp"],
        "python scripts/search.py hipblaslt-log-mask64.yaml --devices=0,1,2,3,4,5,6,7 "
        "--workdir my_search --keep_thr 0.1 --up_thr 1.03":
            ["--search", "--workload-log", "hipblaslt-log-mask64.yaml", "--workdir",
             "my_search", "--devices", "0,1,2,3,4,5,6,7", "--keep_thr", "0.1", "--up_thr",
             "1.03"],
        "python scripts/optimize.py --devices=0,1":  # the scripts' own defaults
            ["--tune", "--workdir", "workdir", "--devices", "0,1", "--client_build_dir",
             "build_tmp"],
        "python scripts/search.py log.yaml -v 2":
            ["--search", "--workload-log", "log.yaml", "--workdir", "workdir", "--devices",
             "0,1,2,3,4,5,6,7", "--verbose", "2"],
        "./bin/geko --bench --inline 1024 1024 1 1024 B B S N T --devices=0":
            ["--bench", "--inline", "1024", "1024", "1", "1024", "B", "B", "S", "N", "T",
             "--devices=0"],
    }
    assert set(expected) <= set(command_lines())
    for line, argv in expected.items():
        words = shlex.split(line)
        path = ROOT / (words[1] if words[0] == "python" else words[0])
        monkeypatch.setattr(sys, "argv", [str(path), *words[(2 if words[0] == "python" else 1):]])
        with pytest.raises(SystemExit) as done:
            runpy.run_path(str(path), run_name="__main__")
        assert done.value.code == 0
        assert seen.pop() == argv, line


# which README lines run for real (the two-step tune and the search script: tiny workloads on
# sim); the others build their DAG only (-- --dry-run: parsing, config, checks, the job graph)
REAL = {"python scripts/configure.py hipblaslt-log-mask64.yaml -a gfx950 --workdir "
        "my_optimization --keep_thr 0.05 --device 0",
        "python scripts/optimize.py --workdir my_optimization --devices=0,1,2,3 --up_thr 1.03",
        "python scripts/search.py hipblaslt-log-mask64.yaml --devices=0,1,2,3,4,5,6,7 "
        "--workdir my_search --keep_thr 0.1 --up_thr 1.03"}
# lines that continue a campaign an earlier line made (the README's order): they run in its dir
CONTINUES = {"python scripts/optimize.py --workdir my_optimization --devices=0,1,2,3 --up_thr 1.03":
             "python scripts/configure.py hipblaslt-log-mask64.yaml -a gfx950 --workdir "
             "my_optimization --keep_thr 0.05 --device 0",
             "python scripts/optimize.py --workdir workdir --no_retry":
             "python scripts/configure.py hipblaslt-log-mask64.yaml --keep_thr 0.01",
             "python scripts/optimize.py --devices=0,1":
             "python scripts/configure.py hipblaslt-log-mask64.yaml --keep_thr 0",
             "python scripts/optimize.py -v 2": "python scripts/configure.py log.yaml -v 2"}
# the list YAML the README shows for --list (my_gemm_list.yaml; my_gemm_config.yaml is the same)
LIST_YAML = """TRANSA: 'N'
TRANSB: 'T'
DataType: "B"
DestDataType: "B"
ComputeDataType: "S"
ARCH: "gfx950"
Sizes:
  - [1024, 1024, 1, 1024]
  - [2048, 2048, 1, 2048]
  - [4096, 4096, 1, 4096]
"""


def _workdir_of(line: str) -> str:
    """The workdir a README line names (the launchers' default, ``workdir``, where it names none)."""
    words = shlex.split(line)
    for i, word in enumerate(words):
        if word == "--workdir":
            return words[i + 1]
        if word.startswith("--workdir="):
            return word.split("=", 1)[1]
    return "workdir"


def _inputs(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("hipblaslt-log-mask64.yaml", "log.yaml"):
        shutil.copy(LOG, directory / name)
    for name in ("my_gemm_list.yaml", "my_gemm_config.yaml"):
        (directory / name).write_text(LIST_YAML)
    return directory


@pytest.mark.slow
def test_the_readme_command_lines_run_through_the_launchers(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("GEKO_HIPBLASLT_PATH", "HIPBLASLT_TENSILE_LIBPATH")}
    dirs: dict[str, Path] = {}
    for n, line in enumerate(command_lines()):
        cwd = dirs[CONTINUES[line]] if line in CONTINUES else _inputs(tmp_path / f"line{n}")
        dirs[line] = cwd
        dry = not (line in REAL or line.endswith("--help"))
        if dry and line in CONTINUES.values():
            # a dry run leaves behind no workdir it had to make; the line that continues this
            # campaign needs its geko_config.yaml, as after a real run: the workdir exists first
            (cwd / _workdir_of(line)).mkdir(exist_ok=True)
        argv = _argv(line) + (["--", "--dry-run"] if dry else [])
        argv[0] = str(ROOT / argv[0]) if argv[0].startswith("./") else argv[0]
        if argv[0] == sys.executable:
            argv[1] = str(ROOT / argv[1])
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        if line.endswith("--help"):
            assert "--workload-log" in done.stdout
    configured = dirs["python scripts/configure.py hipblaslt-log-mask64.yaml -a gfx950 "
                      "--workdir my_optimization --keep_thr 0.05 --device 0"] / "my_optimization"
    assert sorted(p.name for p in (configured / "optimizations").glob("*.yaml")
                  if p.name.startswith("BBS_TN_")) == ["BBS_TN_0.yaml", "BBS_TN_1.yaml"]
    assert any((configured / "final_libs").glob("*.yaml")) or \
        (configured / "results" / "raw_results.csv").is_file()
    searched = dirs["python scripts/search.py hipblaslt-log-mask64.yaml "
                    "--devices=0,1,2,3,4,5,6,7 --workdir my_search --keep_thr 0.1 "
                    "--up_thr 1.03"] / "my_search"
    assert len(pd.read_csv(searched / "winners.csv")) == 2
    assert yaml.safe_load((searched / "geko_config.yaml").read_text())["devices"] == list(range(8))
