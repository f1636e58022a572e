"""rocm platform, TensileLite side: client build caching, the tuning command per form, the
per-job YAML, Ductile progress, build-dir states and resume, TensileCreateLibrary and
TensileMergeLibrary command lines, all against the replay tools in tests/rocm_replay/."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from geko_lib import library as liblogic
from geko_lib.platforms import PlatformError
from geko_lib.platforms.rocm import library_build as lb
from geko_lib.platforms.rocm import tensilelite as tl
from geko_lib.tuning import build_dir as build_dirs
from tests.conftest import ROOT, FIXTURES
from tests.rocm_fake import TENSILE_TOOLS

REPLAY = Path(__file__).resolve().parent / "rocm_replay"
TUNING_YAML = Path(__file__).resolve().parent / "data" / "tuning" / "BBS_TN_128_gfx950_tensile.yaml"
LOGIC_FIXTURES = FIXTURES / "tensile_logic"
PY = sys.executable


# --- a fake checkout's TensileLite ----------------------------------------------------------

def make_tensilelite(root: Path, form: str = "bin", client_form: str = "invoke") -> Path:
    """``root/tensilelite`` with the replay tools where a checkout of that form has its tools:
    Tensile/bin/<tool> (bin) or a ``python -m tensilelite`` dispatcher (module)."""
    tensilelite = root / "tensilelite"
    tensilelite.mkdir(parents=True)
    (tensilelite / "tasks.py").write_text("def build_client(c, build_dir=None, gpu_targets=None):"
                                          "\n    pass\n")
    if client_form == "editable":
        (tensilelite / "tensilelite_configure_client.py").write_text("# binding\n")
    tools = {script: where for script, where in TENSILE_TOOLS.items() if where[1]}
    if form == "bin":
        for script, (path, _) in tools.items():
            target = tensilelite / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REPLAY / script, target)
    else:
        package = tensilelite / "tensilelite"
        package.mkdir()
        (package / "__init__.py").write_text("")
        scripts = {sub: str(REPLAY / script) for script, (_, sub) in tools.items()}
        (package / "__main__.py").write_text(
            "import runpy, sys\n"
            f"SCRIPTS = {scripts!r}\n"
            "sub = sys.argv[1]\n"
            "sys.argv = [sub] + sys.argv[2:]\n"
            "runpy.run_path(SCRIPTS[sub], run_name='__main__')\n")
    return tensilelite


def make_client(client_dir: Path) -> Path:
    client = tl.client_path(client_dir)
    client.parent.mkdir(parents=True, exist_ok=True)
    client.write_text("#!/bin/sh\nexit 0\n")
    client.chmod(client.stat().st_mode | stat.S_IXUSR)
    return client


def ductile_yaml(tmp_path: Path, name: str = "BBS_TN_0", n_gen: int = 3) -> Path:
    """The stored tuning YAML with the Ductile backend and a small population."""
    text = TUNING_YAML.read_text().replace(
        "Backend:\n  Name: Tensile\n",
        f"Backend:\n  Name: Ductile\n  Config:\n    n_gen: {n_gen}\n    pop_size: 8\n")
    assert "Ductile" in text
    path = tmp_path / "configs" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def records(path: Path, tool: str | None = None) -> list[dict]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in rows if tool is None or r["tool"] == tool]


@pytest.fixture
def record(tmp_path, monkeypatch):
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("GEKO_REPLAY_RECORD", str(path))
    monkeypatch.delenv("GEKO_REPLAY_TENSILE_FAIL", raising=False)
    return path


@pytest.fixture
def tool_calls(monkeypatch):
    """Every run_tool call of library_build (argv, cwd, env), still run for real."""
    calls, real = [], tl.run_tool

    def recording(argv, log_path, *, cwd, env=None, what):
        calls.append({"argv": list(argv), "cwd": Path(cwd), "env": env, "what": what})
        return real(argv, log_path, cwd=cwd, env=env, what=what)

    monkeypatch.setattr(lb, "run_tool", recording)
    return calls


@pytest.fixture
def tuning(tmp_path, record):
    """A bin-form checkout, its client, a Ductile tuning YAML and a build dir."""
    tensilelite = make_tensilelite(tmp_path / "hip")
    client_dir = tmp_path / "client"
    make_client(client_dir)
    tuning_dir = tmp_path / "optimizations"
    return {"tensilelite": tensilelite, "client_dir": client_dir, "lock_dir": tuning_dir,
            "yaml": ductile_yaml(tmp_path), "build": tuning_dir / "build_BBS_TN_0",
            "record": record}


def run_optimize(t: dict, device: int = 2, progress=None) -> Path:
    """tl.optimize as both doors call it: the build dir prepared first (tuning.build_dir)."""
    build_dirs.prepare_build_dir(t["build"], t["yaml"].stem, t["yaml"])
    return tl.optimize(t["tensilelite"], t["yaml"], t["build"], device, python=PY,
                       client_dir=t["client_dir"], lock_dir=t["lock_dir"], progress=progress)


# --- command forms --------------------------------------------------------------------------

def test_command_form_is_read_from_the_checkout_files(tmp_path):
    assert tl.detect_command_form(make_tensilelite(tmp_path / "a", "bin"), PY) == "bin"
    assert tl.detect_command_form(make_tensilelite(tmp_path / "b", "module"), PY) == "module"
    empty = tmp_path / "c" / "tensilelite"
    empty.mkdir(parents=True)
    with pytest.raises(PlatformError, match="not a TensileLite checkout"):
        tl.detect_command_form(empty, PY)


def test_installed_tensilelite_package_means_the_module_form(tmp_path, monkeypatch):
    empty = tmp_path / "checkout" / "tensilelite"
    (empty / "tensilelite").mkdir(parents=True)  # a bare directory is no package
    monkeypatch.chdir(empty)
    with pytest.raises(PlatformError):
        tl.detect_command_form(empty, PY)
    (tmp_path / "site" / "tensilelite").mkdir(parents=True)
    (tmp_path / "site" / "tensilelite" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    assert tl.detect_command_form(empty, PY) == "module"


def test_tuning_argv_and_env_of_the_bin_form(tmp_path):
    tensilelite = tmp_path / "tensilelite"
    argv = tl.tuning_argv("bin", tensilelite=tensilelite, python="py",
                          tuning_yaml=Path("/t/a.yaml"), build_dir=Path("/t/build_a"),
                          client=Path("/c/tensilelite-client"), client_lock=Path("/t/gpulock_3"))
    assert argv == ["py", str(tensilelite / "Tensile" / "bin" / "Tensile"), "/t/a.yaml",
                    "/t/build_a", "--prebuilt-client", "/c/tensilelite-client",
                    "--client-lock", "/t/gpulock_3"]
    env = tl.tool_env("bin", tensilelite, {"PYTHONPATH": "/x", "HOME": "/h"})
    assert env["PYTHONPATH"] == f"{tensilelite}:/x" and env["HOME"] == "/h"
    assert tl.tool_env("bin", tensilelite, {})["PYTHONPATH"] == str(tensilelite)


def test_tuning_argv_and_env_of_the_module_form(tmp_path):
    argv = tl.tuning_argv("module", tensilelite=tmp_path, python="py",
                          tuning_yaml=Path("/t/a.yaml"), build_dir=Path("/t/build_a"),
                          client=Path("/c/client"), client_lock=Path("/t/gpulock_0"))
    assert argv == ["py", "-m", "tensilelite", "run", "/t/a.yaml", "/t/build_a",
                    "--client-lock", "/t/gpulock_0"]
    assert tl.tool_env("module", tmp_path, {"PATH": "/bin"}) == {"PATH": "/bin"}
    with pytest.raises(PlatformError, match="form"):
        tl.tuning_argv("shell", tensilelite=tmp_path, python="py", tuning_yaml=Path("a"),
                       build_dir=Path("b"), client=Path("c"), client_lock=Path("d"))


# --- the job's copy of the tuning YAML ------------------------------------------------------

def test_device_is_rewritten_in_global_parameters_only():
    text = TUNING_YAML.read_text()
    edited = tl.with_device(text, 5)
    data = yaml.safe_load(edited)
    assert data["GlobalParameters"]["Device"] == 5
    original = yaml.safe_load(text)
    assert data["LibraryLogic"]["DeviceNames"] == original["LibraryLogic"]["DeviceNames"]
    # only that line changed: comments and the writer's layout survive for TensileLite
    changed = [(a, b) for a, b in zip(text.splitlines(), edited.splitlines()) if a != b]
    assert changed == [("  Device: 0", "  Device: 5")]


def test_device_line_is_added_when_absent_and_comments_kept():
    text = ("GlobalParameters:\n  NumWarmups: 3  # warm\n  Device: 1  # per job\n"
            "BenchmarkProblems: []\n")
    assert "  Device: 7  # per job\n" in tl.with_device(text, 7)
    added = tl.with_device("GlobalParameters:\n  NumWarmups: 3\nLibraryLogic: {}\n", 4)
    assert yaml.safe_load(added)["GlobalParameters"] == {"NumWarmups": 3, "Device": 4}


@pytest.mark.parametrize("device", [True, -1, "0", 1.0, None])
def test_device_must_be_a_non_negative_int(device):
    with pytest.raises(PlatformError, match="device"):
        tl.with_device(TUNING_YAML.read_text(), device)


def test_malformed_global_parameters_are_refused():
    with pytest.raises(PlatformError, match="GlobalParameters"):
        tl.with_device("BenchmarkProblems: []\n", 0)
    with pytest.raises(PlatformError, match="several"):
        tl.with_device("GlobalParameters:\n  Device: 0\n  Device: 1\n", 0)


def test_job_yaml_errors_name_the_tuning_yaml(tmp_path):
    bad = tmp_path / "BBS_TN_3.yaml"
    bad.write_text("BenchmarkProblems: []\n")
    with pytest.raises(PlatformError, match=r"BBS_TN_3\.yaml: tuning YAML has no block"):
        tl.write_device_yaml(bad, tmp_path / "out" / bad.name, 0)
    assert not (tmp_path / "out" / bad.name).exists()


# --- Ductile's table ------------------------------------------------------------------------

DUCTILE_LOG = """\
# DuctileBackend: Starting GA optimization
GA:INFO Starting optimization...
=========================================================
 n_gen | n_evals | diversity |  f_avg   | f_max
---------------------------------------------------------
   1   |   512   |   0.953   | 1234.567 | 0.871
=========================================================
# DuctileBackend: Generated 498 valid solutions from 512 candidates
a | b | c
=========================================================
 n_gen | n_evals | diversity |  f_avg   | f_max
---------------------------------------------------------
   2   |  1010   |   0.9     |   -1     | 0.9
"""


def test_ductile_table_rows_are_parsed():
    assert tl.parse_ductile_progress(DUCTILE_LOG) == [
        {"n_gen": 1, "n_evals": 512, "diversity": 0.953, "f_avg": 1234.567, "f_max": 0.871},
        {"n_gen": 2, "n_evals": 1010, "diversity": 0.9, "f_avg": -1, "f_max": 0.9}]
    assert tl.parse_ductile_progress("no table here\n| |\n") == []


def test_ductile_table_fed_in_pieces_gives_the_same_rows():
    table, lines = tl.DuctileTable(), DUCTILE_LOG.splitlines()
    rows = [row for i in range(0, len(lines), 3) for row in table.feed(lines[i:i + 3])]
    assert rows == tl.parse_ductile_progress(DUCTILE_LOG)


# --- the client -----------------------------------------------------------------------------

@pytest.fixture
def fake_tools(monkeypatch):
    """run_tool recorded instead of run; a client build makes the executable."""
    calls = []

    def fake_run_tool(argv, log_path, *, cwd, env=None, what):
        calls.append({"argv": argv, "cwd": Path(cwd), "what": what, "env": env})
        if "build-client" in argv:
            make_client(Path(argv[argv.index("--build-dir") + 1]))

    monkeypatch.setattr(tl, "run_tool", fake_run_tool)
    return calls


def test_client_is_built_once_per_checkout_revision(tmp_path, fake_tools):
    tensilelite = make_tensilelite(tmp_path / "hip")
    client_dir = tmp_path / "client"
    client = tl.ensure_client(tensilelite, client_dir, "a" * 40, "gfx950", python="py")
    assert client == tl.client_path(client_dir.resolve()) and client.is_file()
    assert fake_tools == [{"argv": ["py", "-m", "invoke", "build-client", "--build-dir",
                                    str(client_dir.resolve()), "--gpu-targets", "gfx950"],
                           "cwd": tensilelite.resolve(), "what": "tensilelite-client build",
                           "env": None}]
    assert (client_dir / "hash.txt").read_text() == "a" * 40 + "\n"
    tl.ensure_client(tensilelite, client_dir, "a" * 40, "gfx950", python="py")
    assert len(fake_tools) == 1  # same revision: cached
    tl.ensure_client(tensilelite, client_dir, "b" * 40, "gfx950", python="py")
    assert len(fake_tools) == 2 and (client_dir / "hash.txt").read_text() == "b" * 40 + "\n"
    tl.client_path(client_dir).unlink()
    tl.ensure_client(tensilelite, client_dir, "b" * 40, "gfx950", python="py")
    assert len(fake_tools) == 3  # the client went missing: rebuilt


def test_current_client_needs_no_invoke_tasks(tmp_path, fake_tools):
    tensilelite = make_tensilelite(tmp_path / "hip")
    (tensilelite / "tasks.py").unlink()
    client_dir = tmp_path / "client"
    make_client(client_dir)
    (client_dir / "hash.txt").write_text("a" * 40 + "\n")
    assert tl.ensure_client(tensilelite, client_dir, "a" * 40, "gfx950", python="py").is_file()
    assert fake_tools == []
    with pytest.raises(PlatformError, match="tasks.py"):
        tl.ensure_client(tensilelite, client_dir, "b" * 40, "gfx950", python="py")


def test_older_tasks_get_no_gpu_targets(tmp_path, fake_tools):
    tensilelite = make_tensilelite(tmp_path / "hip")
    (tensilelite / "tasks.py").write_text("def build_client(c, build_dir=None):\n    pass\n")
    tl.ensure_client(tensilelite, tmp_path / "client", "c" * 40, "gfx942", python="py")
    assert fake_tools[0]["argv"][-2:] == ["--build-dir", str((tmp_path / "client").resolve())]


def test_editable_form_installs_and_binds_the_client(tmp_path, fake_tools, monkeypatch):
    monkeypatch.setenv("TENSILELITE_ROCM_VERSION", "7.2.4")
    tensilelite = make_tensilelite(tmp_path / "hip", client_form="editable").resolve()
    client = tl.ensure_client(tensilelite, tmp_path / "client", "d" * 40, "gfx950", python="py")
    assert [c["what"] for c in fake_tools] == ["tensilelite-client build",
                                               "TensileLite editable install",
                                               "tensilelite-client binding"]
    assert fake_tools[1]["argv"] == ["py", "-m", "pip", "install", "--no-build-isolation",
                                     "--no-deps", "--editable", str(tensilelite)]
    assert fake_tools[1]["env"]["TENSILELITE_ROCM_VERSION"] == "7.2.4"
    assert fake_tools[2]["argv"] == ["py", "-m", "tensilelite_configure_client",
                                     "--ensure-client", str(client)]
    tl.ensure_client(tensilelite, tmp_path / "client", "d" * 40, "gfx950", python="py")
    # cached client, but the environment is (re)bound every time, as the original does
    assert [c["what"] for c in fake_tools[3:]] == ["TensileLite editable install",
                                                   "tensilelite-client binding"]


def test_failed_client_build_is_never_cached(tmp_path, monkeypatch):
    def failing(argv, log_path, *, cwd, env=None, what):
        raise PlatformError(f"{what} failed")

    monkeypatch.setattr(tl, "run_tool", failing)
    tensilelite = make_tensilelite(tmp_path / "hip")
    with pytest.raises(PlatformError, match="build failed"):
        tl.ensure_client(tensilelite, tmp_path / "client", "e" * 40, "gfx950", python="py")
    assert not (tmp_path / "client" / "hash.txt").exists()


def test_concurrent_jobs_build_the_client_once(tmp_path, fake_tools):
    tensilelite = make_tensilelite(tmp_path / "hip")
    errors = []

    def job():
        try:
            tl.ensure_client(tensilelite, tmp_path / "client", "f" * 40, "gfx950", python="py")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=job) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(fake_tools) == 1


@pytest.mark.parametrize("git_hash, arch", [("", "gfx950"), ("a b", "gfx950"),
                                            ("a" * 40, "gfx950; rm"), ("a" * 40, "mi300")])
def test_client_inputs_are_validated(tmp_path, fake_tools, git_hash, arch):
    tensilelite = make_tensilelite(tmp_path / "hip")
    with pytest.raises(PlatformError):
        tl.ensure_client(tensilelite, tmp_path / "client", git_hash, arch, python="py")
    assert fake_tools == []


def test_client_build_runs_the_invoke_task_for_real(tmp_path, monkeypatch):
    """run_tool itself: a stand-in ``invoke`` module answers ``python -m invoke``."""
    fake = tmp_path / "pkgs" / "invoke"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(
        "import os, pathlib, sys\n"
        "args = sys.argv[1:]\n"
        "assert args[0] == 'build-client' and os.path.isfile('tasks.py'), args\n"
        "exe = pathlib.Path(args[args.index('--build-dir') + 1], 'tensilelite', 'client',"
        " 'tensilelite-client')\n"
        "exe.parent.mkdir(parents=True, exist_ok=True)\n"
        "exe.write_text('#!/bin/sh\\n'); exe.chmod(0o755)\n"
        "print('built', exe)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "pkgs"))
    tensilelite = make_tensilelite(tmp_path / "hip")
    client = tl.ensure_client(tensilelite, tmp_path / "client", "1" * 40, "gfx950", python=PY)
    assert client.is_file()
    assert "built" in (tmp_path / "client" / "build-client.log").read_text()


# --- tuning runs against the replay tuner ---------------------------------------------------

def test_optimize_end_to_end_bin_form(tuning):
    rows = []
    logic_dir = run_optimize(tuning, device=2, progress=rows.append)
    build = tuning["build"].resolve()
    assert logic_dir == build / "3_LibraryLogic"
    libs = sorted(logic_dir.glob("*.yaml"))
    assert [p.name for p in libs] == ["gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml"]
    lib = liblogic.load(libs[0])
    assert lib.architecture_name == "gfx950" and lib.library_type == "Equality"
    assert [size for size, _, _ in lib.size_entries()] == [(128, 128, 1, 128)]
    assert [r["n_gen"] for r in rows] == [1, 2, 3]
    assert set(rows[0]) == {"n_gen", "n_evals", "diversity", "f_avg", "f_max"}
    # the job's YAML copy (same name: TensileLite names its logs after it) holds the device
    job_yaml = build / "BBS_TN_0.yaml"
    assert yaml.safe_load(job_yaml.read_text())["GlobalParameters"]["Device"] == 2
    [call] = records(tuning["record"], "Tensile")
    lock = (tuning["lock_dir"] / "gpulock_2").resolve()
    client = tl.client_path(tuning["client_dir"].resolve())
    assert call["argv"] == [str(job_yaml), str(build), "--prebuilt-client", str(client),
                            "--client-lock", str(lock)]
    assert call["device"] == 2 and call["cwd"] == str(build)
    assert call["PYTHONPATH"].split(":")[0] == str(tuning["tensilelite"].resolve())
    log_text = (build / "BBS_TN_0-tensilelite.log").read_text()
    assert log_text.startswith(f"$ {PY} ") and f"#  Client lock: {lock}" in log_text
    assert [r["n_gen"] for r in tl.parse_ductile_progress(log_text)] == [1, 2, 3]
    assert (build / "2_BenchmarkData" / "BBS_TN_0.csv").is_file()
    assert not (build / "1_BenchmarkProblems").exists()  # kernel sources removed on success
    assert (build / "step-00__ductile.checkpoint").is_file()
    assert "Time taken for BBS_TN_0:" in (tuning["lock_dir"] / "timing.log").read_text()
    assert build_dirs.build_state(build) == "completed"


def test_optimize_module_form_with_the_tensile_backend(tmp_path, record, monkeypatch):
    tensilelite = make_tensilelite(tmp_path / "hip", "module")
    monkeypatch.setenv("PYTHONPATH", str(tensilelite))  # what the editable install provides
    text = TUNING_YAML.read_text()
    for name, values in (("DepthU", "[64]"), ("WorkGroupMapping", "[8]")):
        text = "\n".join(f"    - {name}: {values}" if line.startswith(f"    - {name}:") else line
                         for line in text.splitlines())
    yaml_path = tmp_path / "BBS_TN_1.yaml"
    yaml_path.write_text(text)
    logic_dir = tl.optimize(tensilelite, yaml_path, tmp_path / "build_BBS_TN_1", 0, python=PY,
                            client_dir=tmp_path / "no-client", lock_dir=tmp_path)
    assert any(logic_dir.glob("*.yaml"))
    [call] = records(record, "Tensile")
    assert call["argv"] == [str((tmp_path / "build_BBS_TN_1" / "BBS_TN_1.yaml").resolve()),
                            str((tmp_path / "build_BBS_TN_1").resolve()),
                            "--client-lock", str((tmp_path / "gpulock_0").resolve())]


def test_failed_run_names_command_and_log_then_retries_clean(tuning, monkeypatch):
    monkeypatch.setenv("GEKO_REPLAY_TENSILE_FAIL", "start")
    with pytest.raises(PlatformError) as err:
        run_optimize(tuning)
    message = str(err.value)
    assert "exit code 2" in message and "BBS_TN_0-tensilelite.log" in message
    assert "--client-lock" in message and "failing at start" in message
    assert build_dirs.build_state(tuning["build"]) == "failed"
    monkeypatch.delenv("GEKO_REPLAY_TENSILE_FAIL")
    assert any(run_optimize(tuning).glob("*.yaml"))
    log_text = (tuning["build"] / "BBS_TN_0-tensilelite.log").read_text()
    assert "failing at start" not in log_text  # the failed attempt's files were cleaned


def test_interrupted_ductile_run_resumes_from_its_checkpoint(tuning, monkeypatch):
    monkeypatch.setenv("GEKO_REPLAY_TENSILE_FAIL", "gen:2")
    with pytest.raises(PlatformError, match="exit code 3"):
        run_optimize(tuning)
    build = tuning["build"]
    assert build_dirs.build_state(build) == "resumable"
    (build / ".failcount").write_text("1\n")
    monkeypatch.delenv("GEKO_REPLAY_TENSILE_FAIL")
    rows = []
    run_optimize(tuning, progress=rows.append)
    assert [r["n_gen"] for r in rows] == [3]  # generations 1-2 came from the checkpoint
    assert "resuming" in (build / "BBS_TN_0-tensilelite.log").read_text()
    assert (build / ".failcount").read_text() == "1\n"


def test_completed_build_dir_is_not_run_again(tuning):
    run_optimize(tuning)
    assert len(records(tuning["record"], "Tensile")) == 1
    run_optimize(tuning)
    assert len(records(tuning["record"], "Tensile")) == 1


def test_optimize_refuses_a_bad_device_before_running(tuning):
    with pytest.raises(PlatformError, match="device"):
        run_optimize(tuning, device=True)
    assert records(tuning["record"]) == []


def test_bin_form_needs_the_built_client(tuning):
    tl.client_path(tuning["client_dir"]).unlink()
    with pytest.raises(PlatformError, match="ensure_client"):
        run_optimize(tuning)


def test_default_progress_logs_each_generation(tuning, caplog):
    caplog.set_level("INFO")
    run_optimize(tuning)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("BBS_TN_0 | ")]
    assert len(lines) == 3 and lines[0].startswith("BBS_TN_0 | n_gen 1 | n_evals ")


# --- TensileCreateLibrary -------------------------------------------------------------------

def tuned_libs(tmp_path: Path, arch_of: dict | None = None) -> Path:
    """A libs dir of real logic files (the gfx950 fixtures), optionally relabelled."""
    libs = tmp_path / "libs"
    libs.mkdir(exist_ok=True)
    for source in sorted(LOGIC_FIXTURES.glob("gfx950_*.yaml")):
        lib = liblogic.load(source)
        if arch_of and source.name in arch_of:
            lib.architecture = arch_of[source.name]
        liblogic.dump(lib, libs / source.name)
    (libs / "provenance.json").write_text("{}\n")
    return libs


@pytest.mark.parametrize("form", ["bin", "module"])
def test_create_library_argv_and_output(tmp_path, tool_calls, monkeypatch, form):
    tensilelite = make_tensilelite(tmp_path / "hip", form)
    if form == "module":
        monkeypatch.setenv("PYTHONPATH", str(tensilelite))
    libs, out = tuned_libs(tmp_path), tmp_path / "tensile"
    result = lb.create_library(tensilelite, libs, out, code_object_version="5",
                               library_format="msgpack", python=PY)
    assert result == out.resolve()
    # per base architecture, as the current TensileCreateLibrary writes it
    assert (out / "library" / "gfx950" / "TensileLibrary_lazy_gfx950.dat").is_file()
    assert (out / "library" / "gfx950" / "TensileLiteLibrary_lazy_gfx950_Mapping.dat").is_file()
    assert (out / "MatchTable.yaml").is_file()  # written in the tool's cwd: the output dir
    [call] = tool_calls
    prefix = [PY, str(tensilelite.resolve() / "Tensile" / "bin" / "TensileCreateLibrary")] \
        if form == "bin" else [PY, "-m", "tensilelite", "create-library"]
    assert call["argv"] == prefix + ["--code-object-version=5", "--library-format=msgpack",
                                     "--architecture=gfx950", str(libs.resolve()),
                                     str(out.resolve()), "HIP"]
    assert call["cwd"] == out.resolve()
    if form == "bin":
        assert call["env"]["PYTHONPATH"].split(":")[0] == str(tensilelite.resolve())
    else:
        assert call["env"].get("PYTHONPATH") == os.environ.get("PYTHONPATH")


def test_create_library_yaml_format(tmp_path):
    tensilelite = make_tensilelite(tmp_path / "hip")
    out = lb.create_library(tensilelite, tuned_libs(tmp_path), tmp_path / "t",
                            code_object_version="4", library_format="yaml", python=PY)
    assert (out / "library" / "gfx950" / "TensileLibrary_lazy_gfx950.yaml").is_file()


def test_mixed_architectures_are_refused_by_name(tmp_path, tool_calls):
    tensilelite = make_tensilelite(tmp_path / "hip")
    first = sorted(LOGIC_FIXTURES.glob("gfx950_*.yaml"))[0].name
    libs = tuned_libs(tmp_path, {first: "gfx942"})
    with pytest.raises(PlatformError, match=f"several architectures.*gfx942: {first}"):
        lb.create_library(tensilelite, libs, tmp_path / "t", code_object_version="5",
                          library_format="msgpack", python=PY)
    assert tool_calls == []


def test_architecture_dict_form_is_read(tmp_path):
    first = sorted(LOGIC_FIXTURES.glob("gfx950_*.yaml"))[0].name
    libs = tuned_libs(tmp_path, {first: {"Architecture": "gfx950", "CUCount": 256}})
    assert lb.logic_architecture(libs) == "gfx950"


@pytest.mark.parametrize("cov, fmt, match", [("3", "msgpack", "code object"),
                                             ("6", "msgpack", "code object"),  # 4 and 5 only
                                             ("5", "json", "library format"),
                                             ("5;x", "msgpack", "code object")])
def test_create_library_options_are_validated(tmp_path, cov, fmt, match):
    tensilelite = make_tensilelite(tmp_path / "hip")
    with pytest.raises(PlatformError, match=match):
        lb.create_library(tensilelite, tuned_libs(tmp_path), tmp_path / "t",
                          code_object_version=cov, library_format=fmt, python=PY)


def test_empty_libs_dir_is_refused(tmp_path):
    (tmp_path / "libs").mkdir()
    with pytest.raises(PlatformError, match="no library logic"):
        lb.logic_architecture(tmp_path / "libs")


def test_failed_create_library_names_command_and_log(tmp_path):
    tensilelite = make_tensilelite(tmp_path / "hip")
    script = tensilelite / "Tensile" / "bin" / "TensileCreateLibrary"
    script.write_text("import sys\nprint('boom')\nsys.exit(4)\n")
    with pytest.raises(PlatformError, match=r"(?s)exit code 4.*TensileCreateLibrary.*boom"):
        lb.create_library(tensilelite, tuned_libs(tmp_path), tmp_path / "t",
                          code_object_version="5", library_format="msgpack", python=PY)


# --- integration into the checkout ----------------------------------------------------------

def checkout_with_logic(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "hipblaslt"
    tensilelite = make_tensilelite(root)
    equality = root / lb.LOGIC_SUBDIR / "gfx950" / "Equality"
    equality.mkdir(parents=True)
    for source in LOGIC_FIXTURES.glob("gfx950_*.yaml"):
        shutil.copyfile(source, equality / source.name)
    (root / "tasks.py").write_text("# invoke tasks\n")
    return root, tensilelite, equality


def final_libs_from_fixture(tmp_path: Path, size=(4096, 4096, 1, 4096)) -> Path:
    """final_libs: one fixture library whose first solution now serves one new size."""
    source = LOGIC_FIXTURES / "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"
    lib = liblogic.load(source)
    lib.exact_logic = [[list(size), [lib.solutions.index_of(0), 1234.5]]]
    final = tmp_path / "final_libs"
    final.mkdir()
    liblogic.dump(lib, final / source.name)
    (final / "provenance.json").write_text("{}\n")
    return final


def test_integrate_merges_into_equality_and_returns_the_rebuild(tmp_path, tool_calls, caplog):
    caplog.set_level("INFO")
    root, tensilelite, equality = checkout_with_logic(tmp_path)
    final = final_libs_from_fixture(tmp_path)
    name = "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"
    before = {s for s, _, _ in liblogic.load(equality / name).size_entries()}
    rebuild = lb.integrate(tensilelite, root, final, "gfx950", python=PY)
    assert rebuild == ["invoke", "build", "--install-deps", "--clients", "--architecture",
                       "gfx950", "--skip-rocroller"]
    [call] = tool_calls
    assert call["argv"] == [PY, str(tensilelite.resolve() / "Tensile" / "bin" /
                                    "TensileMergeLibrary"),
                            "--no_eff", "--force_merge", "True", str(equality.resolve()),
                            str(final.resolve()), str(equality.resolve())]
    assert call["cwd"] == root.resolve()
    assert call["env"]["PYTHONPATH"].split(":")[0] == str(tensilelite.resolve())
    merged = liblogic.load(equality / "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml")
    sizes = {s: eff for s, _, eff in merged.size_entries()}
    assert set(sizes) == before | {(4096, 4096, 1, 4096)} and sizes[(4096, 4096, 1, 4096)] == 0.0
    assert any("invoke build --install-deps" in r.getMessage() for r in caplog.records)
    assert (tmp_path / "tensile-merge-library.log").is_file()


def test_gfx942_logic_lives_under_its_schedule(tmp_path):
    nested = tmp_path / lb.LOGIC_SUBDIR / "aquavanjaram" / "gfx942" / "Equality"
    nested.mkdir(parents=True)
    assert lb.equality_logic_dir(tmp_path, "gfx942") == nested
    direct = tmp_path / lb.LOGIC_SUBDIR / "gfx950" / "Equality"
    direct.mkdir(parents=True)
    assert lb.equality_logic_dir(tmp_path, "gfx950") == direct


def test_merge_argv_of_the_module_form(tmp_path):
    assert lb.merge_argv("module", tmp_path, "py", Path("/eq"), Path("/final")) == [
        "py", "-m", "tensilelite", "merge-library", "--no_eff", "--force_merge", "True", "/eq",
        "/final", "/eq"]


def test_rebuild_falls_back_to_the_install_script(tmp_path):
    assert lb.rebuild_argv(tmp_path, "gfx942") == ["./install.sh", "--dependencies", "--clients",
                                                   "--architecture", "gfx942"]
    assert lb.rebuild_instructions(Path("/h b"), ["invoke", "build"]) == "cd '/h b' && invoke build"


def test_integrate_refuses_logic_it_cannot_merge(tmp_path, tool_calls):
    root, tensilelite, _ = checkout_with_logic(tmp_path)
    final = final_libs_from_fixture(tmp_path)
    with pytest.raises(PlatformError, match="one gfx942 Equality logic directory"):
        lb.integrate(tensilelite, root, final, "gfx942", python=PY)
    path = final / "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"
    lib = liblogic.load(path)
    lib.library_type = "GridBased"
    liblogic.dump(lib, path)
    with pytest.raises(PlatformError, match="only Equality"):
        lb.integrate(tensilelite, root, final, "gfx950", python=PY)
    lib.library_type, lib.architecture = "Equality", "gfx942"
    liblogic.dump(lib, path)
    with pytest.raises(PlatformError, match="not gfx950"):
        lb.integrate(tensilelite, root, final, "gfx950", python=PY)
    assert tool_calls == []


def test_integrate_target_is_rocm_only(tmp_path):
    with pytest.raises(PlatformError, match="needs platform: rocm"):
        lb.integrate_campaign({"platform": "sim", "arch": "gfx950"}, tmp_path)


def test_integrate_campaign_uses_the_platforms_checkout(tmp_path, monkeypatch):
    import geko_lib.platforms as platforms

    root, tensilelite, _ = checkout_with_logic(tmp_path)
    final = final_libs_from_fixture(tmp_path)
    rocm = SimpleNamespace(install=SimpleNamespace(tensilelite=tensilelite, root=root),
                           python=PY, arch="gfx950")
    monkeypatch.setattr(platforms, "get", lambda config: rocm)
    line = lb.integrate_campaign({"platform": "rocm", "arch": "gfx950"}, final,
                                 log_path=tmp_path / "integrate" / "merge.log")
    assert line == (f"cd {root.resolve()} && invoke build --install-deps --clients "
                    "--architecture gfx950 --skip-rocroller")
    assert (tmp_path / "integrate" / "merge.log").is_file()


def test_integrate_target_fails_fast_off_rocm(campaign):
    run = campaign(platform="sim")
    proc = run.snakemake("-n", "integrate", check=False)
    assert proc.returncode != 0
    assert "needs platform: rocm" in proc.stdout + proc.stderr


def test_base_arch_of_cu_variants():
    assert lb.base_arch("gfx942_80cu") == "gfx942" and lb.base_arch("gfx950") == "gfx950"
    with pytest.raises(PlatformError):
        lb.base_arch("h200")


def test_integrate_rule_is_a_target_outside_the_default(tmp_path):
    text = (ROOT / "workflow" / "rules" / "integrate.smk").read_text()
    assert "rule integrate:" in text and "default_target" not in text
    assert 'include: "rules/integrate.smk"' in (ROOT / "workflow" / "Snakefile").read_text()


# --- TensileLite's own readers, where they can be had ---------------------------------------

def test_tensilelite_reads_our_files(tuning):
    """Only where TensileLite's Python package is importable (it is on no package registry;
    see docs/FORMATS.md): its reader loads the job YAML and the tuned library logic."""
    library_io = pytest.importorskip("Tensile.LibraryIO")
    logic_dir = run_optimize(tuning)
    config = library_io.read(str(tuning["build"] / "BBS_TN_0.yaml"))
    assert config["GlobalParameters"]["Device"] == 2
    data = library_io.read(str(next(logic_dir.glob("*.yaml"))))
    assert isinstance(data, list) and len(data) >= 12


def test_heartbeat_only_while_the_watched_log_grows(tmp_path, caplog):
    """A client build (or the wait for another job's) keeps the job's log growing only while
    the build's log does, so the stall watchdog still stops a hung tool."""
    caplog.set_level("INFO")
    watched = tmp_path / "build-client.log"
    beats = lambda: [r for r in caplog.records if r.getMessage().startswith("building:")]  # noqa: E731
    with tl.heartbeat(watched, "building", every=0.02):
        for _ in range(500):
            with open(watched, "a") as handle:
                handle.write("compiling\n")
            if beats():
                break
            threading.Event().wait(0.01)
    assert beats() and "build-client.log is" in beats()[0].getMessage()
    caplog.clear()
    with tl.heartbeat(watched, "building", every=0.02):
        threading.Event().wait(0.2)  # ten intervals, the log unchanged
    assert not beats()
