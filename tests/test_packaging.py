"""`pip install .` and a wheel (issue 22, item 3; issue 33): the workflow, config schema,
default config with the bundled workloads, and the profiles travel in the wheel as package data,
so an installed geko runs from any directory; the checkout (and its editable install) keeps them
at its root, and geko_lib.resources finds either.

The wheel's tests build a wheel of the checkout, install it into a fresh venv and use it from a
directory outside the checkout, as a user does: the original README's API imports and a small
API flow, `geko --workdir W --report`, a bundled example by its short name. The venv sees this
environment's packages (a .pth line) unless ``GEKO_WHEEL_FROM_INDEX=1`` (``.ci/run`` sets it):
then the wheel is installed with its declared dependencies from the package index into a bare
venv, which is what proves that pyproject.toml names everything a user-facing feature imports
(pygments, for `--report`)."""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from geko_lib import config_schema, resources
from tests.conftest import ROOT
from tests.test_combine import _served

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: no tomllib, and geko needs 3.11 anyway
    tomllib = None

# what a wheel is built from: the packaging files and the directories setup.py names
SOURCES = ("pyproject.toml", "setup.py", "README.md", "geko_lib", "geko", "workflow", "config",
           "profiles")


def test_the_checkout_keeps_its_files_at_its_root():
    assert resources.root() == ROOT
    assert resources.snakefile() == ROOT / "workflow" / "Snakefile"
    assert config_schema.SCHEMA == ROOT / "workflow" / "schemas" / "config.schema.yaml"


def test_a_relative_path_is_the_callers_first_then_a_bundled_one(tmp_path):
    bundled = "config/workloads/mixed_types.yaml"
    assert resources.find(bundled, tmp_path) == ROOT / bundled
    (tmp_path / "config" / "workloads").mkdir(parents=True)
    (tmp_path / bundled).write_text("[]\n")
    assert resources.find(bundled, tmp_path) == tmp_path / bundled
    assert resources.find("config/workloads/no_such.yaml", tmp_path) is None
    # a bare file name: a bundled workload's, on both routes (the Snakefile asks find too)
    assert resources.find("llama3_8b.json", tmp_path) == ROOT / "config/models/llama3_8b.json"
    assert resources.find("no_such.yaml", tmp_path) is None


def test_the_alias_imports_where_nothing_imported_importlib_util_first():
    """`from geko import bench` from a wheel raised AttributeError: module 'importlib' has no
    attribute 'util' (an editable install's finder imports importlib.util at startup, so a
    checkout never saw it). Without site (-S), nothing imports it before geko does."""
    paths = [str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    code = (f"import sys; sys.path[:0] = {paths!r}; "
            "from geko import bench, search, optim, library; import geko_lib; "
            "assert bench is geko_lib.bench and library is geko_lib.library; print('ok')")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


# the declared distribution of a module whose own is not installed here, or is another
# declared one's requirement (cuda.bindings: cuda-bindings, which nvmath-python requires)
PROVIDED_BY = {"cuda": "nvmath-python", "nvmath": "nvmath-python"}


def _third_party_imports() -> set[str]:
    """Top-level modules imported by geko's own code (geko_lib, geko, the workflow's scripts)
    that are neither the standard library nor geko's."""
    found = set()
    files = [*ROOT.glob("geko_lib/**/*.py"), *ROOT.glob("geko/*.py"),
             *ROOT.glob("workflow/**/*.py"), ROOT / "workflow" / "Snakefile",
             *ROOT.glob("workflow/rules/*.smk")]
    for path in files:
        text = path.read_text()
        if path.suffix != ".py":  # Snakemake syntax: only its import lines are Python
            text = "\n".join(line.strip() for line in text.splitlines()
                             if re.match(r"\s*(import|from) \w", line))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found
            if name not in sys.stdlib_module_names and name not in ("geko", "geko_lib")}


def _requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


@pytest.mark.skipif(tomllib is None, reason="needs tomllib")
def test_every_module_geko_imports_is_a_declared_dependency():
    from importlib import metadata

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_requirement_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        declared |= {_requirement_name(r) for r in extra}
    distributions = metadata.packages_distributions()
    missing = []
    for module in sorted(_third_party_imports()):
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if module in PROVIDED_BY:
            names.add(PROVIDED_BY[module])
        if not names & declared:
            missing.append(f"{module} ({', '.join(sorted(names))})")
    assert not missing, f"imported but not in pyproject.toml: {missing}"
    # what no import names: Snakemake's report refuses to run without pygments
    assert "pygments" in {_requirement_name(r) for r in project["dependencies"]}


def _can_build_here() -> bool:
    from importlib import metadata, util

    try:
        major = int(metadata.version("setuptools").split(".")[0])
    except metadata.PackageNotFoundError:
        return False
    return major >= 68 and (major >= 71 or util.find_spec("wheel") is not None)


def _build_wheel(tmp_path: Path) -> Path:
    """A wheel of a copy of the checkout (the build writes build/ and *.egg-info beside its
    sources, so the checkout itself is left alone)."""
    src = tmp_path / "src"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".snakemake"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(path, src / name)
    # this environment's setuptools where it can build (pyproject's >= 68, and wheel for it),
    # else pip's isolated build environment (setuptools from the package index)
    isolation = ["--no-build-isolation"] if _can_build_here() else []
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                           *isolation, "-w", str(tmp_path / "dist"), "-q"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("geko-*.whl")
    return wheel


FROM_INDEX = os.environ.get("GEKO_WHEEL_FROM_INDEX") == "1"

# the original README's API, from the wheel, on sim: its imports, then its Pattern 2 (a dense
# search of a log's GEMMs, their library, the comparison) on a bundled log
API_FLOW = """
from pathlib import Path
import geko, geko_lib
from geko import bench, search, optim, library
from geko.schemas import GemmType
from geko_lib import examples
assert geko.bench is geko_lib.bench and library.Library is geko_lib.library.Library
log_file = examples.find("mixed_types").path
summary_df, unique_df = bench.log.summarize(None, log_file, output_dir="workdir", keep_thr=10,
                                            device=0, platform="sim")
configs = search.configure(summary_df, duration=0.04)
winners = search.run(None, configs=configs, output_dir="workdir/search", devices=[0],
                     platform="sim")
libs = library.operations.extract_solutions(winners, platform="sim")
libs.dump("workdir/libs")
results = optim.analyze(None, lib_dir="workdir/libs", output_dir="workdir/results", device=0,
                        up_thr=1.03, platform="sim")
print("api flow:", len(summary_df), "GEMMs summarized,", len(winners), "searched,",
      len(results), "kept")
"""


def _fresh_venv(tmp_path: Path) -> Path:
    """A new venv without geko. It sees this environment's dependencies (a .pth line naming
    its site-packages: only a path entry, so this environment's editable geko is not
    installed there); from the index (FROM_INDEX), nothing but what the wheel installs."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if FROM_INDEX:
        return venv
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "geko_test_deps.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    return venv


class Installed:
    """A wheel of the checkout installed into a fresh venv, and a directory outside the
    checkout to work in, with an environment that names neither the checkout nor this venv."""

    def __init__(self, tmp_path: Path):
        self.wheel = _build_wheel(tmp_path)
        self.venv = _fresh_venv(tmp_path)
        deps = [] if FROM_INDEX else ["--no-deps"]
        pip = subprocess.run([str(self.venv / "bin" / "python"), "-m", "pip", "install", *deps,
                              "-q", str(self.wheel)], capture_output=True, text=True)
        assert pip.returncode == 0, pip.stderr[-3000:]
        self.elsewhere = tmp_path / "elsewhere"
        self.elsewhere.mkdir()
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        self.env["PATH"] = os.pathsep.join([str(self.venv / "bin"), self.env.get("PATH", "")])

    def run(self, argv, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=kwargs.pop("cwd", self.elsewhere), env=self.env,
                              capture_output=True, text=True, **kwargs)

    def command(self, name: str) -> list[str]:
        """The venv's console script ``name``; snakemake's through the venv's python where the
        venv borrows this environment's packages (their scripts are not in the venv)."""
        script = self.venv / "bin" / name
        return [str(script)] if script.exists() else [str(self.venv / "bin" / "python"), "-m",
                                                      name]

    def geko(self, *args) -> subprocess.CompletedProcess:
        proc = self.run([str(self.venv / "bin" / "geko"), *args])
        assert proc.returncode == 0, f"geko {' '.join(args)}:\n" + \
            (proc.stdout[-3000:] + proc.stderr[-3000:])
        return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    return Installed(tmp_path_factory.mktemp("wheel"))


@pytest.mark.slow
def test_a_wheel_in_a_fresh_venv_runs_geko_outside_the_checkout(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for packaged in ("geko_lib/workflow/Snakefile", "geko_lib/workflow/rules/workload.smk",
                     "geko_lib/workflow/scripts/baseline.py",
                     "geko_lib/workflow/schemas/config.schema.yaml",
                     "geko_lib/config/config.yaml", "geko_lib/config/workloads/mixed_types.yaml",
                     "geko_lib/config/models/llama3_8b.json",
                     "geko_lib/profiles/local/config.yaml", "geko/__init__.py",
                     "geko_lib/platforms/cuda/cluster_splitk.cu"):
        assert packaged in names, packaged
    assert not any("__pycache__" in n for n in names)
    venv, elsewhere = installed.venv, installed.elsewhere

    where = installed.run([str(venv / "bin" / "python"), "-c",
                           "import geko_lib, geko_lib.resources as r; "
                           "print(geko_lib.__file__); print(r.snakefile())"])
    module, snakefile = where.stdout.split()
    assert Path(module).is_relative_to(venv) and Path(snakefile).is_relative_to(venv)

    shown = installed.geko("--help")
    assert "--bench" in shown.stdout and "--workload-log" in shown.stdout

    run = installed.geko("--bench", "--inline", "256", "256", "1", "256", "B", "B", "S", "N",
                         "T", "--platform", "sim", "--workdir", "run", "--cores", "1")
    baseline = pd.read_csv(elsewhere / "run" / "baseline" / "workload.csv")
    assert len(baseline) == 1 and (baseline["us"] > 0).all()
    assert "model predictions" in run.stdout + run.stderr

    # the campaign continued to its final library, then the HTML report (needs pygments)
    report = installed.geko("--workdir", "run", "--report", "--cores", "1")
    assert (elsewhere / "run" / "report.html").stat().st_size > 10_000
    assert f"report written to {elsewhere / 'run' / 'report.html'}" in report.stdout


@pytest.mark.slow
def test_the_original_readmes_api_runs_from_the_wheel(installed):
    proc = installed.run([str(installed.venv / "bin" / "python"), "-c", API_FLOW])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "api flow:" in proc.stdout
    assert (installed.elsewhere / "workdir" / "results" / "final_results.csv").is_file()


@pytest.mark.slow
def test_a_bundled_example_runs_by_its_short_name_from_the_wheel(installed):
    listed = installed.geko("--example", "list")
    assert "llama3_8b_serving" in listed.stdout and "llama3_70b" in listed.stdout
    installed.geko("--bench", "--example", "llama3_70b", "--tp", "8", "--tokens", "1,16",
                   "--platform", "sim", "--workdir", "model_run", "--cores", "1")
    baseline = pd.read_csv(installed.elsewhere / "model_run" / "baseline" / "workload.csv")
    assert len(baseline) == 10  # 5 linears x 2 token counts


def test_ci_never_removes_a_venv_it_did_not_make(tmp_path):
    """.ci/run removed .venv unconditionally, whoever had made it; now only one carrying the
    marker it writes into the venv it makes."""
    (tmp_path / ".ci").mkdir()
    shutil.copy2(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "mine").write_text("a user's venv\n")
    proc = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True,
                          text=True, env={**os.environ, "GEKO_CI_VENV": ""})
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert ".venv exists and was not made by .ci/run" in proc.stderr
    assert (tmp_path / ".venv" / "mine").read_text() == "a user's venv\n"


# --- README.md's guide, as written --------------------------------------------------------------

README = ROOT / "README.md"
# ```bash blocks run as written, in order (test_the_readme_runs_in_order_from_the_wheel); ```sh
# blocks need what a test machine lacks (the application, a GPU node, a fresh install) and
# their geko lines are parsed only
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def readme_commands(path: Path = README, languages=("bash",)) -> list[list[str]]:
    """The command lines of ``path``'s fenced blocks of ``languages``, in order, each as argv
    (a trailing backslash continues a line; comments dropped)."""
    commands = []
    for language, body in _FENCE.findall(path.read_text()):
        if language not in languages:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                commands.append(argv)
    return commands


def _geko_argv(argv: list[str]) -> list[str] | None:
    """A command line's geko arguments (after any VAR=value assignments), None if not geko."""
    words = [w for w in argv if not re.match(r"^[A-Z_]+=", w)] if argv else []
    return words[1:] if words and words[0] in ("geko", "./bin/geko") else None


def test_every_geko_line_of_the_guides_parses():
    from geko_lib import cli

    lines = [argv for doc in (README, ROOT / "docs" / "AMD.md")
             for argv in readme_commands(doc, ("bash", "sh"))]
    geko_lines = [_geko_argv(argv) for argv in lines if _geko_argv(argv) is not None]
    assert len(geko_lines) >= 10
    for args in geko_lines:
        own, _ = cli.split_argv(args)
        cli.parser().parse_args(own)  # argparse exits (a failure) on a flag geko lacks


def test_the_readme_states_no_test_counts():
    """Counts go stale with every test added; the README says what the tiers run instead."""
    assert not re.search(r"\b\d[\d,]* (tests|cases)\b", README.read_text())


def test_the_readmes_commands_are_geko_or_a_checkouts_snakemake():
    commands = readme_commands()
    assert {argv[0] for argv in commands} == {"geko", "snakemake"}
    assert all(argv[2].startswith("profiles/") for argv in commands if argv[0] == "snakemake")


@pytest.mark.slow
def test_the_readme_runs_in_order_from_the_wheel(installed):
    """Every ```bash line of README.md, as written, in order, from the installed wheel: geko
    lines in a directory of the user's own, snakemake lines in a copy of the checkout (the
    README says they run from one); then what the README says the lines show."""
    home = installed.elsewhere / "readme"
    home.mkdir()
    checkout = installed.elsewhere / "checkout"
    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, checkout / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".snakemake"))
    said = {}
    for argv in readme_commands():
        cwd = checkout if argv[0] == "snakemake" else home
        proc = installed.run([*installed.command(argv[0]), *argv[1:]], cwd=cwd)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"{shlex.join(argv)}:\n{out[-4000:]}"
        said[shlex.join(argv)] = out
    outputs = list(said.values())
    assert "llama3_8b_serving" in outputs[0] and "llama3_70b" in outputs[0]  # --example list
    assert re.search(r"\d+ of 45 GEMMs kept; time-weighted uplift", outputs[1])
    assert "faster GEMMs, most GEMM time saved first" in outputs[1]
    assert (home / "first_search" / "final_libs").is_dir()
    assert (home / "first_search" / "report.html").is_file()
    assert "first_tune/optimizations/BBS_TN_0.yaml" in outputs[3]
    assert "continue (optimize.py): geko --tune --workdir" in outputs[3]
    assert "Optimization workflow completed successfully!" in outputs[4]
    # the combine line prints where the combined library is and how many GEMMs it serves: those
    # its results table keeps
    combined = home / "first_search" / "combined_libs"
    served = re.search(r"combined library: (\d+) of \d+ GEMMs served", outputs[5])
    assert served and str(combined) in outputs[5], outputs[5][-2000:]
    kept = pd.read_csv(home / "first_search" / "results" / "combined_results.csv")["kept"]
    assert int(served.group(1)) == int(kept.sum()) == len(_served(combined)) > 0
    model_gemms = len(pd.read_csv(home / "model_bench" / "baseline" / "workload.csv"))
    assert f"baseline of {model_gemms} GEMMs" in outputs[6] and model_gemms >= 20
    # the snakemake route's review step says what to review and how to continue
    assert "runs/sm_tune/optimizations/BBS_TN_0.yaml" in outputs[7]
    continued = re.search(r"geko: continue: (.*)", outputs[7])
    assert continued and "--until" not in continued.group(1), outputs[7][-2000:]
    assert "Optimization workflow completed successfully!" in outputs[8]
    assert (checkout / "runs" / "sm_tune" / "final_libs").is_dir()
