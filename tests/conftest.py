import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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
END_TO_END_FIXTURES = frozenset({"campaign", "finished_search", "finished_tune"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if END_TO_END_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
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


@pytest.fixture
def campaign(tmp_path):
    return lambda **config: Campaign(tmp_path, **config)
