"""docs/AMD.md's snakemake form for fewer GPUs than the 8-GPU profiles, as written: the
profile, its config file and one's own naming the devices, the resources on the command line
(a dry run on a fake gfx942 hipBLASLt checkout: the rocm platform's checks, the config schema
and the DAG)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, WORKLOADS
from tests.rocm_fake import build_fake_hipblaslt, fixture_logic
from tests.test_packaging import readme_commands

AMD = ROOT / "docs" / "AMD.md"


def _lines_with(text: str) -> list[list[str]]:
    return [argv for argv in readme_commands(AMD, ("sh",)) if text in " ".join(argv)]


@pytest.mark.slow
def test_the_four_gpu_form_of_the_gfx942_profile_plans(tmp_path):
    checkout = tmp_path / "checkout"
    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, checkout / name,
                        ignore=shutil.ignore_patterns("__pycache__", ".snakemake"))
    (checkout / "four_gpus.yaml").write_text("devices: [0, 1, 2, 3]\n")  # its printf line
    shutil.copy2(WORKLOADS / "llama3_8b_serving.yaml", checkout / "app_log.yaml")
    fake = build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx942"))
    (line,) = _lines_with("four_gpus.yaml --resources")
    assert line[0] == "GEKO_HIPBLASLT_PATH=~/hipBLASLt" and line[1] == "snakemake"
    env = dict(os.environ, GEKO_HIPBLASLT_PATH=str(fake))
    env.pop("HIPBLASLT_TENSILE_LIBPATH", None)
    proc = subprocess.run([sys.executable, "-m", "snakemake", *line[2:], "--dry-run"],
                          cwd=checkout, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "baseline" in proc.stdout
