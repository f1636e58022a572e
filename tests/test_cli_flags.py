"""The original tool's flags through the real `geko` command: each sets the config key of the
same meaning, with the original's defaults, and bad values are refused before anything runs.

Most runs are `-- --dry-run`: geko validates, writes geko_config.yaml (what the workflow runs
with) and snakemake only plans the DAG, so the config is what a real run would get."""
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT, WORKLOADS
from .test_cli import GEKO

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
SEVEN = ("gfx950", "gfx950_128cu", "gfx942", "gfx942_80cu", "gfx942_38cu", "gfx942_20cu",
         "gfx942_228cu")  # the original README's --arch choices
LIST = ("TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n{arch}"
        "Sizes:\n  - [128, 128, 1, 128]\n  - [256, 64, 1, 512]\n")


def geko(*args, cwd, env=None):
    full_env = {k: v for k, v in os.environ.items() if k != "GEKO_HIPBLASLT_PATH"}
    full_env.update(env or {})  # the shell's GEKO_HIPBLASLT_PATH would pick the platform
    return subprocess.run([*GEKO, *args], cwd=cwd, capture_output=True, text=True, env=full_env)


def dry_config(tmp_path, *args, env=None) -> dict:
    (tmp_path / "run").mkdir(exist_ok=True)  # a dry run removes a workdir it made itself
    proc = geko(*args, "--workdir", "run", "--", "--dry-run", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return yaml.safe_load((tmp_path / "run" / "geko_config.yaml").read_text())


def write_list(tmp_path, arch_line="") -> Path:
    path = tmp_path / "sizes.yaml"
    path.write_text(LIST.format(arch=arch_line))
    return path


def schema_default(key):
    entry = yaml.safe_load(SCHEMA.read_text())
    for part in key.split("."):
        entry = entry["properties"][part]
    return entry["default"]


def test_every_original_flag_sets_its_config_key(tmp_path):
    write_list(tmp_path)
    config = dry_config(tmp_path, "--search", "--list", "sizes.yaml", "--duration", "0.02",
                        "--benchmark-duration", "0.3", "--compare-duration", "2",
                        "--bench-freq", "--no_retry", "--err_thr", "0.05",
                        "--client_build_dir", "cb", "-n", "3", "--up_thr", "1.05",
                        "--keep_thr", "0.5", "-v", "2", "-d", "0,1", "--lock-dir", "locks")
    assert config["search_duration"] == 0.02  # --duration: dense search per GEMM, as the original
    assert config["bench_duration"] == 0.3  # --benchmark-duration: the baseline benchmark
    assert config["compare_duration"] == 2.0
    assert config["rocm"]["bench_freq"] is True
    # --no_retry holds for this invocation (--config retry=False), it is not saved
    assert config["retry"] is True
    assert (config["err_thr"], config["up_thr"], config["keep_thr"]) == (0.05, 1.05, 0.5)
    assert config["rocm"]["client_dir"] == str(tmp_path / "cb")  # relative to where geko ran
    assert config["lock_dir"] == str(tmp_path / "locks")
    assert (config["n_slots"], config["verbosity"], config["devices"]) == (3, 2, [0, 1])


def test_defaults_are_the_schema_defaults_and_the_originals(tmp_path):
    write_list(tmp_path)
    config = dry_config(tmp_path, "--search", "--list", "sizes.yaml")
    for key in ("search_duration", "bench_duration", "compare_duration", "up_thr", "err_thr",
                "n_slots", "verbosity", "retry", "verify", "backend", "devices", "platform"):
        assert config[key] == schema_default(key), key
    assert config["rocm"]["bench_freq"] is schema_default("rocm.bench_freq") is False
    # the original README's defaults
    assert (config["search_duration"], config["bench_duration"]) == (0.04, 0.5)
    assert (config["up_thr"], config["err_thr"], config["n_slots"]) == (1.03, 0.03, 4)
    assert config["keep_thr"] == 0.1 and config["retry"] is True and config["verbosity"] == 1


@pytest.mark.parametrize("mode, keep_thr", [("--search", 0.1), ("--tune", 0.0), ("--bench", 0.0)])
def test_keep_thr_default_per_mode(tmp_path, mode, keep_thr):
    write_list(tmp_path, 'ARCH: "gfx942"\n')
    assert dry_config(tmp_path, mode, "--list", "sizes.yaml")["keep_thr"] == keep_thr


def test_arch_comes_from_the_list_yaml(tmp_path):
    write_list(tmp_path, 'ARCH: "gfx942_80cu"\n')
    config = dry_config(tmp_path, "--tune", "--list", "sizes.yaml")
    assert (config["mode"], config["arch"]) == ("tune", "gfx942_80cu")
    assert dry_config(tmp_path, "--tune", "--list", "sizes.yaml", "--arch", "gfx950")["arch"] \
        == "gfx950"  # the flag wins over the file


@pytest.mark.parametrize("arch", SEVEN)
def test_the_seven_original_archs_are_accepted(arch):
    from geko_lib import cli

    assert arch in cli.arch_choices("rocm") and arch in cli.arch_choices("sim")


def test_unknown_arch_is_refused_before_anything_runs(tmp_path):
    write_list(tmp_path)
    start = time.monotonic()
    proc = geko("--tune", "--arch", "gfx999", "--list", "sizes.yaml", "--workdir", "run",
                cwd=tmp_path)
    assert proc.returncode == 2 and time.monotonic() - start < 20
    assert "'gfx999'" in proc.stderr and all(a in proc.stderr for a in SEVEN)
    assert "snakemake" not in proc.stdout + proc.stderr.replace("geko: error", "")
    assert not (tmp_path / "run").exists()


def test_unknown_arch_in_the_list_yaml_names_file_and_line(tmp_path):
    write_list(tmp_path, "ARCH: gfx999\n")
    proc = geko("--tune", "--list", "sizes.yaml", "--workdir", "run", cwd=tmp_path)
    assert proc.returncode == 2
    assert "sizes.yaml:6: ARCH: 'gfx999'" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_tune_without_any_arch_is_refused(tmp_path):
    write_list(tmp_path)
    proc = geko("--tune", "--list", "sizes.yaml", "--workdir", "run", cwd=tmp_path)
    assert proc.returncode == 2 and "--tune needs --arch (or ARCH: in the --list YAML)" \
        in proc.stderr


@pytest.mark.parametrize("flag, value, message", [
    ("--duration", "0", "--duration (config key search_duration)"),
    ("--benchmark-duration", "-1", "--benchmark-duration (config key bench_duration)"),
    ("--err_thr", "0", "--err_thr (config key err_thr)"),
    ("-n", "0", "--n_slots (config key n_slots)"),
])
def test_out_of_range_values_name_the_flag(tmp_path, flag, value, message):
    write_list(tmp_path)
    proc = geko("--search", "--list", "sizes.yaml", flag, value, "--workdir", "run",
                cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr
    assert not (tmp_path / "run").exists()


def test_no_retry_is_recognized_and_the_old_meanings_are_gone(tmp_path):
    write_list(tmp_path)
    help_text = geko("--help", cwd=tmp_path).stdout
    assert "--no_retry" in help_text and "--client_build_dir" in help_text
    assert "dense-search benchmark seconds per GEMM" in help_text  # --duration's meaning


def test_no_retry_holds_for_one_invocation(tmp_path):
    """As in the original, --no_retry is this run's: snakemake gets retry=False, the campaign's
    geko_config.yaml keeps retry on, so a later plain run retries again."""
    from geko_lib import cli

    write_list(tmp_path)
    first = geko("--search", "--list", "sizes.yaml", "--no_retry", "-v", "2", "--workdir",
                 "run", "--", "--dry-run", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    running = next(line for line in (first.stdout + first.stderr).splitlines()
                   if "running:" in line)
    assert "retry=False" in running
    argv = ["--search", "--list", str(tmp_path / "sizes.yaml"), "-w", str(tmp_path / "run")]
    once = cli.build_config(cli.parser().parse_args([*argv, "--no_retry"]), environ={})[0]
    assert once["retry"] is False and cli.saved_config(once)["retry"] is True
    plain = cli.build_config(cli.parser().parse_args(argv), environ={})[0]
    assert plain["retry"] is True and "retry=False" not in cli.config_overrides(plain)


@pytest.fixture
def fake_hipblaslt(tmp_path):
    from tests.rocm_fake import build_fake_hipblaslt, fixture_logic

    return build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx950"))


def test_hipblaslt_environment_variable_selects_rocm(tmp_path, fake_hipblaslt):
    write_list(tmp_path)
    env = {"GEKO_HIPBLASLT_PATH": str(fake_hipblaslt)}
    assert dry_config(tmp_path, "--bench", "--list", "sizes.yaml", env=env)["platform"] == "rocm"
    assert dry_config(tmp_path, "--bench", "--list", "sizes.yaml", "--platform", "sim",
                      env=env)["platform"] == "sim"  # unless --platform says otherwise
    config = dry_config(tmp_path, "--bench", "--list", "sizes.yaml", "--hipblaslt",
                        str(fake_hipblaslt))
    assert config["platform"] == "rocm"
    assert config["rocm"]["hipblaslt_path"] == str(fake_hipblaslt)


def test_hipblaslt_with_another_platform_is_refused(tmp_path, fake_hipblaslt):
    write_list(tmp_path)
    proc = geko("--bench", "--list", "sizes.yaml", "--hipblaslt", str(fake_hipblaslt),
                "--platform", "cuda", "--workdir", "run", cwd=tmp_path)
    assert proc.returncode == 2 and "--hipblaslt is for the rocm platform" in proc.stderr


def test_unbuilt_hipblaslt_from_the_environment_is_refused_by_path(tmp_path):
    write_list(tmp_path)
    proc = geko("--bench", "--list", "sizes.yaml", "--workdir", "run", cwd=tmp_path,
                env={"GEKO_HIPBLASLT_PATH": str(tmp_path / "nowhere")})
    assert proc.returncode == 2
    assert f"{tmp_path / 'nowhere'} (from environment variable GEKO_HIPBLASLT_PATH)" in \
        proc.stderr
    assert not (tmp_path / "run").exists()


def test_the_first_line_on_sim_says_the_run_is_a_model(tmp_path):
    write_list(tmp_path)
    proc = geko("--search", "--list", "sizes.yaml", "--workdir", "run", "--", "--dry-run",
                cwd=tmp_path)
    first = proc.stdout.splitlines()[0]
    assert first.startswith("geko: platform sim: an analytic GPU model")
    assert "model prediction" in first


@pytest.mark.slow
def test_rocm_bench_through_the_replay_tools(tmp_path, fake_hipblaslt):
    """--hipblaslt runs the checkout's hipblaslt-bench (the replay): a measured platform, so
    no line says 'model'."""
    (tmp_path / "sizes.yaml").write_text(
        "TRANSA: N\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
        "Sizes:\n  - [1024, 1024, 1, 1024]\n")
    proc = geko("--bench", "--list", "sizes.yaml", "--hipblaslt", str(fake_hipblaslt),
                "--workdir", "run", "--cores", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.splitlines()[0].startswith("geko: platform rocm, arch gfx950")
    assert "model prediction" not in proc.stdout
    assert "BBS_NN_M1024_N1024_B1_K1024" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("verbosity, present, absent", [
    ("0", (), ("GEKO:INFO", "GEKO:DEBUG")),
    ("1", ("GEKO:INFO",), ("GEKO:DEBUG",)),
    ("2", ("GEKO:INFO", "GEKO:DEBUG"), ()),
])
def test_verbosity_reaches_the_job_logs(tmp_path, verbosity, present, absent):
    proc = geko("--bench", "--workload-log", str(WORKLOADS / "mixed_types.yaml"), "-v",
                verbosity, "--workdir", "run", "--cores", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    logs = "".join(p.read_text() for p in sorted((tmp_path / "run" / "logs").rglob("*.log")))
    for text in present:
        assert text in logs
    for text in absent:
        assert text not in logs
    # the driver's snakemake command line is a DEBUG line (Snakemake's own output goes to its log)
    assert ("GEKO:DEBUG [cli:run_workflow] running:" in proc.stderr) == (verbosity == "2")


@pytest.mark.slow
def test_snakemake_takes_the_same_keys(campaign):
    """What `geko -v 0` sets, a snakemake run sets by the same key (verbosity)."""
    c = campaign(verbosity=0, keep_thr=0.0)
    c.snakemake("bench")
    logs = "".join(p.read_text() for p in c.path("logs").rglob("*.log"))
    assert c.path("baseline", "workload.csv").is_file()
    assert "GEKO:INFO" not in logs
