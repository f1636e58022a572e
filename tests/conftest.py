import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = ROOT / "workflow" / "Snakefile"
# real recorded tool outputs the tests check against, kept in the project (tests/fixtures/SOURCES)
FIXTURES = ROOT / "tests" / "fixtures"
WORKLOADS = ROOT / "config" / "workloads"


def _has_gpu() -> bool:
    try:
        import torch  # noqa: F401

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU (none here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


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
