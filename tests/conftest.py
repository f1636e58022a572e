import fcntl
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

# pytest started in the background of a non-interactive shell (`cmd &`) inherits SIGINT
# ignored, and Python then installs no KeyboardInterrupt handler: the Ctrl-C tests (and the
# processes they start, which inherit an ignored signal across exec) would see no Ctrl-C
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from tests.fast_tier.sitecustomize import starts_workflow

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = ROOT / "workflow" / "Snakefile"
# real recorded tool outputs the tests check against, kept in the project (tests/fixtures/SOURCES)
FIXTURES = ROOT / "tests" / "fixtures"
WORKLOADS = ROOT / "config" / "workloads"


def load_bench(name: str):
    """bench/<name>.py as a module: the benchmarks are scripts, not part of the package."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _has_gpu() -> bool:
    try:
        import torch  # noqa: F401

        return bool(torch.cuda.is_available())
    except Exception:
        return False


# fixtures that exist to run the real workflow: a test asking for one is end-to-end (slow tier)
END_TO_END_FIXTURES = frozenset({"campaign", "finished_search", "finished_trace_search",
                                 "configured_tune", "finished_tune", "finished_campaign"})


# The order the end-to-end modules start in under `-n --dist loadfile` (longest first, so the run
# ends on short ones and no worker idles while another finishes a long module): first those that
# mostly wait (on SLURM, pip, the wheel's README run), so they run beside the CPU-bound ones, then
# the CPU-bound ones by their time (2026-12-06, 2-core VM: cli_terminal 201 s down to
# status_coverage 60 s); the rest follow in file order. pytest-xdist would reorder modules by
# their number of tests instead: pytest_configure turns that off.
STARTS_FIRST = ("test_slurm.py", "test_packaging.py", "test_original_readme.py",
                "test_cli_terminal.py", "test_faults.py", "test_combine.py", "test_workflow.py",
                "test_outputs_tune.py", "test_outputs_search.py", "test_reuse_after_edits.py",
                "test_rocm_workflow.py", "test_golden_libraries.py", "test_report.py",
                "test_fault_matrix.py", "test_tune_workflow.py", "test_status_coverage.py")


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist >= 3.8
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    for item in items:
        if END_TO_END_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    first = {name: rank for rank, name in enumerate(STARTS_FIRST)}
    items.sort(key=lambda item: first.get(item.path.name, len(first)))  # stable: the rest as before
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU (none here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _terminal_bars_back():
    """A phase run in process (a job) turns progress bars on terminals off for the process:
    on again after every test, so no test depends on which ran before it."""
    yield
    from geko_lib import progress

    progress.draw_terminal_bars(True)


FAST_TIER_SITE = Path(__file__).parent / "fast_tier"  # its sitecustomize guards child processes


@pytest.fixture(autouse=True)
def _fast_tier_runs_no_workflow(request, monkeypatch):
    """The fast tier (the default) stays in process: a test outside the slow tier that starts
    snakemake (itself, or through a `geko` process) fails, naming the command, so an end-to-end
    run cannot slip in."""
    if request.node.get_closest_marker("slow") or request.node.get_closest_marker("gpu"):
        return
    real_init = subprocess.Popen.__init__

    def guarded(self, args, *rest, env=None, **kwargs):
        if starts_workflow(args):
            raise AssertionError(f"{request.node.nodeid} starts the workflow "
                                 f"({' '.join(map(str, args))[:200]}): mark it slow")
        env = dict(os.environ if env is None else env, GEKO_FAST_TIER_TEST=request.node.nodeid)
        # last on the path: what the command itself puts first stays first
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"),
                                                          str(FAST_TIER_SITE)]))
        return real_init(self, args, *rest, env=env, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


class Campaign:
    """A workflow run in a temp dir: config file + `python -m snakemake` as a user would."""

    def __init__(self, tmp_path: Path, **config):
        self.root = tmp_path
        self.workdir = tmp_path / "run"
        self.config = {"platform": "sim", "arch": "gfx950", "devices": [0, 1],
                       "lock_dir": str(tmp_path / "locks"), "workdir": str(self.workdir),
                       "workload_log": str(WORKLOADS / "mixed_types.yaml")}
        self.config.update(config)
        self.config_path = tmp_path / "config.yaml"
        self.cores = 2
        self.resources = ["gpu=2", "gpu_slot=4"]

    def snakemake(self, *args, check=True, env=None, **popen):
        self.config_path.write_text(yaml.safe_dump(self.config))
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE),
               *args, "--configfile", str(self.config_path), "--rerun-triggers", "mtime",
               "input", "params", "--cores", str(self.cores), "--scheduler", "greedy",
               "--rerun-incomplete", "--resources", *self.resources]
        proc = subprocess.run(cmd, cwd=self.root, capture_output=True, text=True,
                              env=env, **popen)
        if check and proc.returncode != 0:
            raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout}\n"
                                 f"{proc.stderr[-6000:]}")
        return proc

    def path(self, *parts) -> Path:
        return self.workdir.joinpath(*parts)

    def copy(self, root: Path) -> "Campaign":
        """This campaign's directory copied into ``root`` (mtimes kept, so Snakemake sees the
        same finished jobs) and the same config there: a test that changes a shared campaign
        works on its own copy. Workload files stay the original's: the same campaign."""
        shutil.copytree(self.root, root, symlinks=True, dirs_exist_ok=True)
        twin = Campaign(root, **{key: value for key, value in self.config.items()
                                 if key not in ("workdir", "lock_dir")})
        twin.cores, twin.resources = self.cores, list(self.resources)
        return twin


@pytest.fixture
def campaign(tmp_path):
    return lambda **config: Campaign(tmp_path, **config)


# the values the workflow works out when it starts (workflow/rules/common.smk GIVEN), for a job
# whose test names none: an --inline workload
GIVEN = {"workload_source": [], "workload_kind": "inline", "workload_value": "",
         "model_options": {}, "stem": "workload", "baseline_duration": None,
         "combine_sources": [], "landing_template": ""}


@pytest.fixture
def run_phase(monkeypatch):
    """``run_phase(rule, workdir, config, wildcards=, given=, over=, attempt=, script=)`` runs
    the phase of a rule of the table through the wrapper (phases.run) in ``workdir``, as the
    workflow runs its job: ``Job.for_rule`` with the inputs, outputs, params and log the table
    gives the rule for this campaign's config (``rules.inputs``, ``outputs``, ``params``), its
    file patterns filled with ``wildcards`` and a gathered input with the values of ``over`` (by
    default the files the workdir holds). Returns the job it ran; raises what the phase raises.
    ``script=True`` runs it through the workflow script's entry instead (``phases.run_script``:
    a failed job ends with ``SystemExit``, as the job's process does)."""
    from geko_lib import phases
    from geko_lib.campaign import rules, state

    def run(rule: str, workdir, config: dict | None = None, *, wildcards: dict | None = None,
            given: dict | None = None, over: dict | None = None, attempt: int = 1,
            script: bool = False):
        entry, wildcards = rules.BY_NAME[rule], dict(wildcards or {})
        config, given = state.with_defaults(config or {}), GIVEN | (given or {})
        monkeypatch.chdir(workdir)

        def files(value):
            if isinstance(value, list):
                return [files(each) for each in value]
            if isinstance(value, rules.Share):  # the libraries or chunks of the job's share
                from geko_lib.campaign import layout

                shared = {"lib": layout.Layout(".").share_libs,
                          "chunk": layout.Layout(".").share_chunks}[value.over]
                found = (over or {}).get(value.over) or shared(wildcards[value.by])
                return [rules.fill(value.pattern, {value.over: each}) for each in found]
            if isinstance(value, rules.Gather):
                found = (over or {}).get(value.over)
                if found is None:
                    return sorted(str(p) for p in Path().glob(
                        rules.fill(value.pattern, {value.over: "*"})))
                return [rules.fill(value.pattern, {value.over: each}) for each in found]
            if isinstance(value, rules.Directory):
                value = value.pattern
            return rules.fill(value, wildcards)

        outputs = {k: files(v) for k, v in rules.outputs(entry, config, given).items()}
        for path in outputs.values():  # as Snakemake makes them before a job runs
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        named = phases.Paths(**wildcards)
        params = {name: value(named) if callable(value) else value
                  for name, value in rules.params(entry, config, given).items()}
        inputs = {k: files(v) for k, v in rules.inputs(entry, config, given).items()}
        job = phases.Job.for_rule(
            rule, phases.Paths(**inputs),
            phases.Paths(**outputs),
            config, phases.Paths(**params), named, attempt)
        (phases.run_script if script else phases.run)(job, entry.phase(config["mode"]))
        return job

    return run


SIZES = "TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\nSizes:\n" \
        "  - [6144, 16, 1, 4096]\n  - [4096, 8, 1, 14336]\n  - [2048, 2048, 1, 2048]\n"
# one GEMM: the `geko` tune campaigns (a GA job per GEMM type and size group is CPU time)
TUNE_SIZES = SIZES.split("  - ")[0] + "  - [2048, 2048, 1, 2048]\n"


# Finished campaigns built once per test run (on first use) and shared: a test reads one, or
# works on ``.copy(tmp_path)`` of it when it changes anything in it.

def built_once(tmp_path_factory, name: str, build):
    """``build(root)``'s result for a directory ``root`` of this test run, built once per run
    even when pytest-xdist spreads the run over workers (`-n`): the first worker to ask builds
    it under a lock and saves the result beside it; the others wait, then read that. A build
    that fails leaves nothing saved, so the next one to ask builds afresh."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the directory the run's workers share
    root, saved = base / name, base / f"{name}.pickle"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if saved.exists():
            return pickle.loads(saved.read_bytes())
        shutil.rmtree(root, ignore_errors=True)  # what a failed build left
        root.mkdir()
        result = build(root)
        saved.write_bytes(pickle.dumps(result))
        return result


@pytest.fixture(scope="session")
def finished_search(tmp_path_factory) -> Campaign:
    """The default sim search campaign (mixed_types.yaml, every GEMM kept) through
    final_libs."""
    def build(root):
        c = Campaign(root, keep_thr=0.0)
        c.snakemake("final_libs")
        return c
    return built_once(tmp_path_factory, "finished_search", build)


@pytest.fixture(scope="session")
def finished_trace_search(tmp_path_factory) -> Campaign:
    """A sim search campaign on the Llama-3-8B serving trace (keep_thr 0.5: some GEMMs fall
    below it) through final_libs and its plots."""
    def build(root):
        c = Campaign(root, workload_log=str(WORKLOADS / "llama3_8b_serving.yaml"), keep_thr=0.5)
        c.snakemake("final_libs", "plots")
        return c
    return built_once(tmp_path_factory, "finished_trace_search", build)


def tune_campaign(root: Path, **config) -> Campaign:
    """A sim tune campaign of SIZES' three GEMMs (one tuning job each) in ``root``."""
    (root / "sizes.yaml").write_text(SIZES)
    settings = {"mode": "tune", "keep_thr": 0.0, "workload_log": "",
                "workload_list": str(root / "sizes.yaml"), "n_slots": 2}
    return Campaign(root, **(settings | config))


@pytest.fixture(scope="session")
def configured_tune(tmp_path_factory) -> Campaign:
    """tune_campaign run `--until configure` (the tuning YAMLs for review, no tuning job yet);
    ``.run`` is that snakemake run."""
    def build(root):
        c = tune_campaign(root)
        c.run = c.snakemake("final_libs", "--until", "configure")
        return c
    return built_once(tmp_path_factory, "configured_tune", build)


@pytest.fixture(scope="session")
def finished_tune(configured_tune, tmp_path_factory) -> Campaign:
    """configured_tune continued through final_libs (its three tuning jobs); ``.run`` is that
    snakemake run."""
    def build(root):
        c = configured_tune.copy(root)
        c.run = c.snakemake("final_libs")
        return c
    return built_once(tmp_path_factory, "finished_tune", build)


def final_lib_texts(c) -> dict:
    """What a campaign ships: its final_libs YAMLs by name."""
    return {p.name: p.read_text() for p in sorted(c.path("final_libs").glob("*.yaml"))}


class GekoRun:
    """One campaign workdir driven by the `geko` command, as a user would."""

    def __init__(self, root, mode, name):
        self.root, self.mode = root, mode
        self.workdir = root / name
        sizes = root / f"{mode}_sizes.yaml"
        sizes.write_text(SIZES if mode == "search" else TUNE_SIZES)
        self.argv = [sys.executable, "-m", "geko_lib.cli", f"--{mode}", "--list", str(sizes),
                     "-w", str(self.workdir), "-d", "0,1", "--keep_thr", "0", "-a", "gfx950",
                     "--lock-dir", str(root / "locks"), "--cores", "2"]
        if mode == "tune":
            self.argv += ["-n", "2"]

    def start(self, **popen):
        """The campaign in a session of its own (its process group is what Ctrl-C reaches)."""
        popen = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, **popen}
        return subprocess.Popen(self.argv, cwd=self.root, start_new_session=True, **popen)

    def run(self, check=True):
        proc = subprocess.run(self.argv, cwd=self.root, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"geko failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                                 f"{proc.stderr[-6000:]}")
        return proc

    def path(self, *parts):
        return self.workdir.joinpath(*parts)


@pytest.fixture(scope="session")
def finished_campaign(tmp_path_factory):
    """A finished `geko` campaign per mode (GekoRun, made once per test run on first use): its
    final_libs and how long it took. What an interrupted campaign's rerun must ship."""
    def build(root, mode):
        run = GekoRun(root, mode, "run")
        began = time.monotonic()
        run.run()
        return final_lib_texts(run), time.monotonic() - began

    def reference(mode):
        return built_once(tmp_path_factory, f"reference_{mode}", lambda root: build(root, mode))
    return reference
