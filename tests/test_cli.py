"""The geko command with each workload source, run for real (it drives snakemake)."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import WORKLOADS

GEKO = [shutil.which("geko", path=str(Path(sys.executable).parent)) or "", ]
GEKO = GEKO if GEKO[0] else [sys.executable, "-m", "geko_lib.cli"]


def geko(*args, cwd):
    return subprocess.run([*GEKO, *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.slow
def test_bench_inline(tmp_path):
    proc = geko("--bench", "--inline", "1024", "1024", "1", "1024", "B", "B", "S", "N", "T",
                "--workdir", "run", "--cores", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = yaml.safe_load((tmp_path / "run" / "workload.yaml").read_text())
    assert rows == [dict(rows[0], M=1024, N=1024, K=1024, transA="N", transB="T")]
    assert rows[0]["a_type"] == "bf16_r" and rows[0]["compute_type"] == "c_f32_r"
    baseline = (tmp_path / "run" / "baseline" / "workload.csv").read_text().splitlines()
    assert len(baseline) == 2 and "us" in baseline[0].split(",")
    config = yaml.safe_load((tmp_path / "run" / "geko_config.yaml").read_text())
    assert config["keep_thr"] == 0.0 and config["platform"] == "sim"


@pytest.mark.slow
def test_search_list_on_two_devices(tmp_path):
    (tmp_path / "sizes.yaml").write_text(
        "TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
        "Sizes:\n  - [6144, 16, 1, 4096]\n  - [4096, 8, 1, 14336]\n  - [28672, 512, 1, 4096]\n")
    proc = geko("--search", "--list", "sizes.yaml", "-d", "0,1", "--workdir", "run",
                "--keep_thr", "0", "--cores", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "results" / "metrics.json").read_text())
    assert metrics["counts"]["n_attempted"] == 3
    assert "geko: " in proc.stdout and (tmp_path / "run" / "final_libs").is_dir()
    config = yaml.safe_load((tmp_path / "run" / "geko_config.yaml").read_text())
    assert config["devices"] == [0, 1]


@pytest.mark.slow
def test_search_workload_log_dry_run(tmp_path):
    proc = geko("--search", "--workload-log", str(WORKLOADS / "mixed_types.yaml"),
                "--workdir", "run", "--", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "baseline" in proc.stdout + proc.stderr
    assert not (tmp_path / "run" / "workload.yaml").exists()


def test_cuda_platform_defaults_to_the_h200_arch():
    from geko_lib import cli

    args = cli.parser().parse_args(["--search", "--platform", "cuda", "--workload-log",
                                    str(WORKLOADS / "mixed_types.yaml")])
    config, _ = cli.build_config(args)
    assert config["platform"] == "cuda" and config["arch"] == "h200"


@pytest.mark.parametrize("args, message", [
    (["--bench", "--inline", "0", "1024", "1", "1024", "B", "B", "S", "N", "T"], "M"),
    (["--bench", "--inline", "16", "16", "1", "16", "Q", "B", "S", "N", "T"], "DataType"),
    (["--bench", "--inline", "16", "16", "1", "16", "B", "B", "S", "N", "X"], "transB"),
    (["--search", "--workload-log", "missing.yaml"], "does not exist"),
    (["--search", "--workload-log", "w.yaml", "-d", "0,0"], "--devices"),
    (["--search", "--workload-log", "w.yaml", "--up_thr", "0"], "--up_thr"),
    (["--search", "--workload-log", "w.yaml", "--keep_thr", "150"], "--keep_thr"),
    (["--tune", "--workload-log", "w.yaml"], "--tune"),
])
def test_bad_arguments_exit_2_and_write_nothing(tmp_path, args, message):
    shutil.copy(WORKLOADS / "mixed_types.yaml", tmp_path / "w.yaml")
    proc = geko(*args, "--workdir", "run", cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "run").exists()


def test_bad_workload_file_names_line_and_field(tmp_path):
    (tmp_path / "w.yaml").write_text(
        "- {function: matmul, M: 16, N: 16, K: 16, transA: T, transB: N, batch_count: 1, "
        "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r}\n"
        "- {function: matmul, M: 16, N: -4, K: 16, transA: T, transB: N, batch_count: 1, "
        "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r}\n")
    proc = geko("--search", "--workload-log", "w.yaml", "--workdir", "run", cwd=tmp_path)
    assert proc.returncode == 2
    assert "w.yaml:2" in proc.stderr and "N" in proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_tune_list_with_tensile_backend(tmp_path):
    (tmp_path / "sizes.yaml").write_text(
        "TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
        "Sizes:\n  - [128, 128, 1, 128]\n")
    proc = geko("--tune", "--arch", "gfx942", "--backend", "tensile", "-n", "2", "--list",
                "sizes.yaml", "-d", "0,1", "--workdir", "run", "--up_thr", "1.01",
                "--cores", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    config = yaml.safe_load((tmp_path / "run" / "geko_config.yaml").read_text())
    assert (config["mode"], config["backend"], config["n_slots"], config["arch"]) == \
        ("tune", "tensile", 2, "gfx942")
    tuned = (tmp_path / "run" / "optimizations" / "BBS_TN_0.yaml").read_text()
    assert "Name: Tensile" in tuned and 'ArchitectureName: "gfx942"' in tuned
    metrics = json.loads((tmp_path / "run" / "results" / "metrics.json").read_text())
    assert metrics["config"]["up_thr"] == 1.01  # honoured for tune too (the original ignored it)
