"""TensileLite of a hipBLASLt checkout: its client build, its tuning command, and one tuning run.

A checkout's TensileLite comes in two shapes, told apart by its files (never by a version):

- **bin**: ``tensilelite/Tensile/bin/Tensile`` exists. The tuning command is
  ``<python> tensilelite/Tensile/bin/Tensile <yaml> <build> --prebuilt-client <client>
  --client-lock <lock>`` with ``PYTHONPATH=<tensilelite>`` (the scripts import ``Tensile`` from
  the checkout).
- **module**: the launchers are gone and ``tensilelite/tensilelite/__main__.py`` is the command
  dispatcher (or an installed ``tensilelite`` package): ``<python> -m tensilelite run <yaml>
  <build> --client-lock <lock>``; the client is found through a binding that
  ``tensilelite_configure_client`` records, so there is no ``--prebuilt-client``.

The client (``tensilelite-client``, the C++ program that times kernels) is built with the
checkout's invoke tasks, once per checkout revision: ``<client_dir>/hash.txt`` holds the git
hash it was built from. Checkouts that ship ``tensilelite_configure_client.py`` also get the
editable install and the client binding (the "editable" client form).

A tuning run rewrites ``GlobalParameters: Device`` in a copy of the YAML, writes the tuner's
stdout+stderr to ``<build>/<name>-tensilelite.log``, follows Ductile's per-generation table in
that log for progress, and keeps the build-dir states of ``geko_lib.tuning.build_dir``
(completed / resumable / failed) so a rerun resumes from Ductile's checkpoint.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping

import yaml

from ... import files, locks
from ... import progress as _progress
from ...tuning import build_dir as build_dirs, optimize as tune, running_jobs
from ...tuning.problem import TuningConfig
from .. import PlatformError
from ...log_setup import LOGGER

log = logging.getLogger(LOGGER)

BIN_DIR = Path("Tensile", "bin")
MODULE_MAIN = Path("tensilelite", "__main__.py")
INVOKE_TASKS = Path("tasks.py")
CONFIGURE_CLIENT = Path("tensilelite_configure_client.py")
CLIENT_EXE = Path("tensilelite", "client", "tensilelite-client")  # under the client build dir
HASH_FILE = "hash.txt"
CLIENT_LOG = "build-client.log"
DUCTILE_DEFAULT_GENERATIONS = 30  # Tensile/ductile/config/defaults.yaml n_gen
HEARTBEAT_S = 60.0  # at most one "still working" line per minute while a tool's log grows
POLL_S = 1.0
TERM_GRACE_S = 30.0  # SIGTERM, then SIGKILL after this long (as the original's runner)

_ARCH = re.compile(r"^gfx[0-9a-z]+$")
_HASH = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$")  # a git hash, or the date fallback
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


# --- validation -----------------------------------------------------------------------------

def check_arch(arch) -> str:
    """A gfx architecture name as TensileLite spells it (``gfx942``, ``gfx950``)."""
    if not isinstance(arch, str) or not _ARCH.match(arch):
        raise PlatformError(f"architecture {arch!r} is not a gfx name like gfx950")
    return arch


def check_device(device) -> int:
    """A device id: an int >= 0 (bools and numeric strings are refused: they hide mistakes)."""
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise PlatformError(f"device {device!r} must be a non-negative integer")
    return device


def check_git_hash(git_hash) -> str:
    if not isinstance(git_hash, str) or not _HASH.match(git_hash):
        raise PlatformError(f"checkout revision {git_hash!r} is not a git hash")
    return git_hash


def check_name(name: str, what: str) -> str:
    """A file stem that is safe in a file name and on a command line."""
    if not _NAME.match(name):
        raise PlatformError(f"{what} {name!r} may hold only letters, digits and . _ + -")
    return name


# --- command forms --------------------------------------------------------------------------

def _python_has_tensilelite(python: str) -> bool:
    """Whether ``python`` can import an installed ``tensilelite`` package (found, not imported:
    importing it validates the ROCm runtime)."""
    # not from the working directory, and not a bare directory named tensilelite (a namespace
    # package, as a hipBLASLt checkout's root would offer)
    probe = ("import importlib.util, sys; sys.path = [p for p in sys.path if p not in ('', '.')]; "
             "s = importlib.util.find_spec('tensilelite'); "
             "sys.exit(s is None or s.origin in (None, 'namespace'))")
    try:
        return subprocess.run([python, "-c", probe], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def tool_form(tensilelite: Path, bin_name: str, python: str) -> str:
    """``bin`` when the checkout has ``Tensile/bin/<bin_name>``, ``module`` when it has the
    ``python -m tensilelite`` dispatcher (or ``python`` has the package installed)."""
    tensilelite = Path(tensilelite)
    if (tensilelite / BIN_DIR / bin_name).is_file():
        return "bin"
    if (tensilelite / MODULE_MAIN).is_file() or _python_has_tensilelite(python):
        return "module"
    raise PlatformError(f"{tensilelite} has neither {BIN_DIR / bin_name} nor {MODULE_MAIN}, "
                        f"and {python} cannot import tensilelite: not a TensileLite checkout")


def detect_command_form(tensilelite: Path, python: str) -> str:
    """The tuning command's form: ``bin`` (Tensile/bin/Tensile) or ``module`` (-m tensilelite)."""
    return tool_form(tensilelite, "Tensile", python)


def tool_argv(form: str, tensilelite: Path, python: str, bin_name: str, subcommand: str,
              args: Iterable[str]) -> list[str]:
    """One TensileLite tool: ``<python> Tensile/bin/<bin_name> args`` or ``<python> -m
    tensilelite <subcommand> args``. The launcher runs under ``python`` rather than its shebang
    so the configured interpreter (the one with TensileLite's dependencies) is the one used."""
    if form == "bin":
        return [python, str(Path(tensilelite) / BIN_DIR / bin_name), *args]
    if form == "module":
        return [python, "-m", "tensilelite", subcommand, *args]
    raise PlatformError(f"unknown TensileLite command form {form!r} (bin or module)")


def tool_env(form: str, tensilelite: Path, environ: Mapping[str, str] | None = None) -> dict:
    """The tool's environment: the bin launchers import ``Tensile`` from the checkout."""
    env = dict(os.environ if environ is None else environ)
    if form == "bin":
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(Path(tensilelite)), env.get("PYTHONPATH", "")) if p)
    return env


def tuning_argv(form: str, *, tensilelite: Path, python: str, tuning_yaml: Path,
                build_dir: Path, client: Path, client_lock: Path) -> list[str]:
    """The tuning command (§5.3): the bin form names the prebuilt client, the module form finds
    it through its binding; both take the per-device client lock."""
    args = [str(tuning_yaml), str(build_dir)]
    if form == "bin":
        args += ["--prebuilt-client", str(client)]
    args += ["--client-lock", str(client_lock)]
    return tool_argv(form, tensilelite, python, "Tensile", "run", args)


# --- running short tools --------------------------------------------------------------------

def log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    tail = text.splitlines()[-lines:]
    return ("\n  last lines of the log:\n    " + "\n    ".join(tail)) if tail else ""


def run_tool(argv: list[str], log_path: Path, *, cwd: Path, env: Mapping[str, str] | None = None,
             what: str) -> None:
    """Run a tool to completion, stdout+stderr appended to ``log_path``; a failure names the
    command and the log."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log.info("%s: %s", what, shlex.join(argv))
    with open(log_path, "ab") as out:
        out.write(f"$ {shlex.join(argv)}\n".encode())
        out.flush()
        try:
            rc = subprocess.run(argv, cwd=cwd, env=None if env is None else dict(env),
                                stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT).returncode
        except OSError as exc:
            raise PlatformError(f"{what}: cannot run `{shlex.join(argv)}`: {exc}") from None
    if rc != 0:
        raise PlatformError(f"{what} failed (exit code {rc}): `{shlex.join(argv)}` in {cwd}; "
                            f"see {log_path}{log_tail(log_path)}")


@contextlib.contextmanager
def heartbeat(watched: Path, message: str, every: float | None = None):
    """While the block runs, a log line every ``every`` seconds (HEARTBEAT_S) in which
    ``watched`` grew. A tool's output goes to its own log, not the job's, and the stall
    watchdog follows the job's log: this keeps a working tool's job alive, and lets a tool
    whose log stopped growing be stopped as stalled."""
    every = HEARTBEAT_S if every is None else every
    stop, start = threading.Event(), time.monotonic()

    def size() -> int:
        try:
            return Path(watched).stat().st_size
        except OSError:
            return 0

    def beat() -> None:
        last = size()
        while not stop.wait(every):
            current = size()
            if current != last:
                log.info("%s: %s is %d bytes (%.0f s)", message, Path(watched).name, current,
                         time.monotonic() - start)
            last = current

    thread = threading.Thread(target=beat, name="geko-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive flock on ``path`` for the block (released by the kernel if we die)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with locks.exclusive(path):
        yield


# --- the client -----------------------------------------------------------------------------

def detect_client_form(tensilelite: Path) -> str:
    """``editable`` when the checkout ships ``tensilelite_configure_client.py`` (the build is
    followed by an editable install and the client binding), else ``invoke``."""
    tensilelite = Path(tensilelite)
    if not (tensilelite / INVOKE_TASKS).is_file():
        raise PlatformError(f"{tensilelite} has no {INVOKE_TASKS}: cannot build tensilelite-client")
    return "editable" if (tensilelite / CONFIGURE_CLIENT).is_file() else "invoke"


def client_path(client_dir: Path) -> Path:
    return Path(client_dir) / CLIENT_EXE


def _tasks_take_gpu_targets(tensilelite: Path) -> bool:
    """Newer invoke tasks build the client for given targets (``--gpu-targets``)."""
    return "gpu_targets" in (Path(tensilelite) / INVOKE_TASKS).read_text(errors="replace")


def client_build_argv(tensilelite: Path, client_dir: Path, arch: str, python: str) -> list[str]:
    argv = [python, "-m", "invoke", "build-client", "--build-dir", str(client_dir)]
    if _tasks_take_gpu_targets(tensilelite):
        argv += ["--gpu-targets", arch]
    return argv


def editable_install_argv(tensilelite: Path, python: str) -> list[str]:
    return [python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--editable",
            str(tensilelite)]


def client_binding_argv(client: Path, python: str) -> list[str]:
    return [python, "-m", "tensilelite_configure_client", "--ensure-client", str(client)]


def rocm_identity_env(environ: Mapping[str, str] | None = None) -> dict:
    """The editable install wants ``TENSILELITE_ROCM_VERSION``; ROCm records it in
    ``$ROCM_PATH/.info/version`` (ROCM_PATH defaults to /opt/rocm as in the invoke tasks)."""
    env = dict(os.environ if environ is None else environ)
    if not env.get("TENSILELITE_ROCM_VERSION"):
        version = Path(env.get("ROCM_PATH") or "/opt/rocm", ".info", "version")
        if version.is_file():
            env["TENSILELITE_ROCM_VERSION"] = version.read_text().strip()
    return env


def _client_is_current(client_dir: Path, git_hash: str) -> bool:
    hash_file = Path(client_dir) / HASH_FILE
    return (client_path(client_dir).is_file() and hash_file.is_file()
            and hash_file.read_text().strip() == git_hash)


def ensure_client(tensilelite: Path, client_dir: Path, git_hash: str, arch: str, *,
                  python: str) -> Path:
    """``tensilelite-client`` built from this checkout revision (``git_hash``), built now if it
    is missing or was built from another revision. Concurrent jobs take a file lock, so one of
    them builds and the others then find it current. Returns the client's path."""
    tensilelite = Path(tensilelite).resolve()
    client_dir = Path(client_dir).resolve()
    git_hash, arch = check_git_hash(git_hash), check_arch(arch)
    client = client_path(client_dir)
    build_log = client_dir / CLIENT_LOG
    # the build takes minutes and jobs waiting for it write nothing else: both follow its log
    with heartbeat(build_log, "tensilelite-client build"), \
            file_lock(client_dir / "build.lock"):
        current = _client_is_current(client_dir, git_hash)
        # a current client needs no invoke tasks; only a build does
        form = "editable" if (tensilelite / CONFIGURE_CLIENT).is_file() else \
            "invoke" if current else detect_client_form(tensilelite)
        if not current:
            (client_dir / HASH_FILE).unlink(missing_ok=True)  # a half build is never current
            run_tool(client_build_argv(tensilelite, client_dir, arch, python), build_log,
                     cwd=tensilelite, what="tensilelite-client build")
            if not client.is_file() or not os.access(client, os.X_OK):
                raise PlatformError(f"tensilelite-client build finished but {client} is missing "
                                    f"or not executable; see {build_log}")
            files.write_text(client_dir / HASH_FILE, f"{git_hash}\n")
        if form == "editable":
            # the environment may be new even when the client is not: always (re)bind, as the
            # original does; both steps are no-ops when nothing changed
            run_tool(editable_install_argv(tensilelite, python), build_log, cwd=tensilelite,
                     env=rocm_identity_env(), what="TensileLite editable install")
            run_tool(client_binding_argv(client, python), build_log, cwd=tensilelite,
                     what="tensilelite-client binding")
    return client


# --- the tuning YAML's device ---------------------------------------------------------------

_TOP_KEY = re.compile(r"^[^\s#]", re.M)
_GLOBAL_PARAMETERS = re.compile(r"^GlobalParameters:[ \t]*(?:#.*)?$", re.M)
_DEVICE_LINE = re.compile(
    r"^(?P<head>[ \t]+Device:[ \t]*)(?P<value>[^#\n]*?)(?P<tail>[ \t]*(?:#.*)?)$", re.M)


def with_device(text: str, device: int) -> str:
    """The tuning YAML text with ``GlobalParameters: Device`` set to ``device``; edited as text
    so comments and the writer's formatting survive (TensileLite reads the file as written)."""
    device = check_device(device)
    header = _GLOBAL_PARAMETERS.search(text)
    if header is None:
        raise PlatformError("tuning YAML has no block `GlobalParameters:` mapping")
    start = header.end()
    following = _TOP_KEY.search(text, start + 1)
    end = following.start() if following else len(text)
    block = text[start:end]
    lines = list(_DEVICE_LINE.finditer(block))
    if len(lines) > 1:
        raise PlatformError("tuning YAML has several GlobalParameters Device lines")
    if lines:
        m = lines[0]
        block = f"{block[:m.start()]}{m['head']}{device}{m['tail']}{block[m.end():]}"
    else:
        indent = re.search(r"^([ \t]+)\S", block, re.M)
        block = f"\n{indent.group(1) if indent else '  '}Device: {device}{block}"
    edited = text[:start] + block + text[end:]
    parsed = (yaml.safe_load(edited) or {}).get("GlobalParameters") or {}
    if parsed.get("Device") != device:
        raise PlatformError(f"could not set GlobalParameters Device to {device} in the tuning YAML")
    return edited


def write_device_yaml(tuning_yaml: Path, out: Path, device: int) -> Path:
    """A copy of the tuning YAML for one job, its Device set; the copy keeps the name
    (TensileLite names its Ductile log and checkpoint after the config file)."""
    try:
        text = Path(tuning_yaml).read_text()
    except OSError as exc:
        raise PlatformError(f"cannot read tuning YAML {tuning_yaml}: {exc}") from None
    try:
        edited = with_device(text, device)
    except yaml.YAMLError as exc:
        raise PlatformError(f"{tuning_yaml}: not valid YAML: {exc}") from None
    except PlatformError as exc:
        raise PlatformError(f"{tuning_yaml}: {exc}") from None
    return files.write_text(out, edited)


# --- Ductile's per-generation table ---------------------------------------------------------

def _number(cell: str):
    try:
        return int(cell)
    except ValueError:
        return float(cell)


class DuctileTable:
    """Ductile's per-generation statistics as they appear in a TensileLite log. Each generation
    prints a framed two-line table (``=``/``-`` rules around it)::

        n_gen | n_evals | diversity | f_avg | f_max
          3   |  1536   |   0.87    | 812.3 | 0.994

    ``feed(lines)`` returns the rows completed by those lines as dicts of numbers keyed by the
    header's names; it keeps the header between calls, so a log can be fed as it grows."""

    def __init__(self):
        self.keys: list[str] | None = None

    def feed(self, lines: Iterable[str]) -> list[dict]:
        rows = []
        for line in lines:
            cells = [cell.strip() for cell in line.split("|")]
            if len(cells) < 2:
                continue
            if "n_gen" in cells:
                self.keys = cells
                continue
            if self.keys is None or len(cells) != len(self.keys):
                continue
            try:
                row = {key: _number(cell) for key, cell in zip(self.keys, cells)}
            except ValueError:
                continue
            if isinstance(row["n_gen"], int):
                rows.append(row)
            self.keys = None  # one value line per header
        return rows


def parse_ductile_progress(text: str) -> list[dict]:
    """Every per-generation row (``n_gen``, ``n_evals``, ``diversity``, ``f_avg``, ``f_max``) of
    a TensileLite log's Ductile tables, in order."""
    return DuctileTable().feed(text.splitlines())


class _LogFollower:
    """The complete lines a growing log file gained since the last call."""

    def __init__(self, path: Path):
        self.path, self.offset, self.partial = Path(path), 0, b""

    def new_lines(self, final: bool = False) -> list[str]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            return []
        self.offset += len(chunk)
        data = self.partial + chunk
        lines = data.split(b"\n")
        self.partial = b"" if final else lines.pop()
        return [line.decode(errors="replace").rstrip("\r") for line in lines]


def generation_logger(name: str, total: int | None) -> Callable[[dict], None]:
    """The default progress callback: one log line per Ductile generation and a generation count
    (``progress.close()`` writes the last count)."""
    bar = _progress.Progress(total, f"{name} generations", unit="gen")

    def on_row(row: dict) -> None:
        log.info("%s | %s", name, " | ".join(f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}"
                                             for k, v in row.items()))
        bar.set(int(row["n_gen"]))
        running_jobs.generation(int(row["n_gen"]))

    on_row.close = bar.close
    return on_row


def expected_generations(cfg: TuningConfig) -> int | None:
    """Generations a Ductile run makes at most (None for the exhaustive Tensile backend)."""
    if cfg.backend.lower() != "ductile":
        return None
    return int(cfg.backend_config.get("n_gen", DUCTILE_DEFAULT_GENERATIONS))


# --- the tuning process ---------------------------------------------------------------------

def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Have the kernel kill the tuner if this job dies first (the stall watchdog SIGKILLs the
    job's process group, which the tuner, in its own group, is not part of)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _terminate_group(proc: subprocess.Popen) -> None:
    """SIGTERM the tuner's process group, SIGKILL it after TERM_GRACE_S."""
    for sig, wait in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_tuner(argv: list[str], *, cwd: Path, env: Mapping[str, str], log_path: Path,
              on_row: Callable[[dict], None], name: str) -> int:
    """Run the tuner in its own process group, stdout+stderr to ``log_path``; Ductile rows go to
    ``on_row`` as they appear, and while the log grows a line at most every HEARTBEAT_S keeps
    the job's own log growing (so the stall watchdog sees the tuner's progress). Returns the
    exit code; the tuner's process group is ended if this is interrupted."""
    table, follower = DuctileTable(), _LogFollower(log_path)
    with open(log_path, "wb") as out:
        out.write(f"$ {shlex.join(argv)}\n".encode())
        out.flush()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=_die_with_parent)
        except OSError as exc:
            raise PlatformError(f"{name}: cannot run `{shlex.join(argv)}`: {exc}") from None
    try:
        with heartbeat(log_path, f"{name}: TensileLite running"):
            while True:
                try:
                    rc = proc.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                for row in table.feed(follower.new_lines()):
                    on_row(row)
    finally:
        if proc.poll() is None:
            _terminate_group(proc)
    for row in table.feed(follower.new_lines(final=True)):
        on_row(row)
    return rc


def _record_time(timing_log: Path, name: str, seconds: float) -> None:
    """``timing.log`` beside the build dirs, one line per finished job (as the original)."""
    hours, rest = divmod(int(seconds), 3600)
    with open(timing_log, "a") as handle:
        handle.write(f"Time taken for {name}: {hours}h {rest // 60}m {rest % 60}s\n")


def lock_id(device: int, environ: Mapping[str, str] | None = None) -> str:
    """Which GPU a ``gpulock_<id>`` file stands for: the leased device id on a node geko
    leases itself; under a SLURM allocation ``<host>_<device>`` (the tuning directory is on
    a shared file system, and device 0 of two nodes is not one GPU)."""
    device = check_device(device)
    environ = os.environ if environ is None else environ
    if not environ.get("SLURM_JOB_ID"):
        return str(device)
    host = socket.gethostname().split(".")[0]
    return f"{check_name(host, 'host name')}_{device}"


def optimize(tensilelite: Path, tuning_yaml: Path, build_dir: Path, device: int, *, python: str,
             client_dir: Path, lock_dir: Path, progress: Callable[[dict], None] | None = None,
             lock_id: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Run TensileLite on one tuning YAML with ``GlobalParameters: Device`` set to ``device``
    (an ordinal among the devices the tuner sees); returns ``build_dir/3_LibraryLogic``.

    A completed build dir is returned as is. A failed or interrupted one is the caller's to
    prepare (tuning.build_dir.prepare_build_dir: both doors do it before any platform's
    optimize; preparing it here again logged its retry line twice per job). Jobs on one GPU share ``lock_dir/gpulock_<lock_id>``
    (default: the device; TensileLite's ``--client-lock``): they compile kernels at the same
    time but time them one after another. ``progress(row)`` gets each Ductile generation row
    (default: a log line and a generation count). ``environ`` is the tuner's environment
    (default: this process's). Failures raise PlatformError naming the command and the log."""
    tensilelite = Path(tensilelite).resolve()
    tuning_yaml, build_dir = Path(tuning_yaml).resolve(), Path(build_dir).resolve()
    device = check_device(device)
    lock_id = check_name(str(device) if lock_id is None else lock_id, "client lock id")
    name = check_name(tuning_yaml.stem, "tuning YAML name")
    logic_dir = build_dir / tune.LOGIC_DIR
    if build_dirs.build_state(build_dir) == "completed":
        log.info("%s: %s already holds library logic", name, logic_dir)
        return logic_dir
    build_dir.mkdir(parents=True, exist_ok=True)
    cfg = TuningConfig.load(tuning_yaml)
    job_yaml = write_device_yaml(tuning_yaml, build_dir / tuning_yaml.name, device)
    form = detect_command_form(tensilelite, python)
    client = client_path(Path(client_dir).resolve())
    if form == "bin" and not client.is_file():
        raise PlatformError(f"{name}: no tensilelite-client at {client}; build it first "
                            "(ensure_client)")
    lock = Path(lock_dir).resolve() / f"gpulock_{lock_id}"
    lock.parent.mkdir(parents=True, exist_ok=True)
    argv = tuning_argv(form, tensilelite=tensilelite, python=python, tuning_yaml=job_yaml,
                       build_dir=build_dir, client=client, client_lock=lock)
    log_path = build_dir / f"{name}-tensilelite.log"
    on_row = progress or generation_logger(name, expected_generations(cfg))
    log.info("%s: device %d: %s", name, device, shlex.join(argv))
    start = time.monotonic()
    try:
        rc = run_tuner(argv, cwd=build_dir, env=tool_env(form, tensilelite, environ),
                       log_path=log_path, on_row=on_row, name=name)
    finally:
        getattr(on_row, "close", lambda: None)()
    if rc != 0:
        raise PlatformError(f"{name}: TensileLite failed (exit code {rc}): `{shlex.join(argv)}`; "
                            f"see {log_path}{log_tail(log_path)}")
    if not any(logic_dir.glob("*.yaml")):
        raise PlatformError(f"{name}: TensileLite exited 0 but wrote no library logic to "
                            f"{logic_dir}: `{shlex.join(argv)}`; see {log_path}")
    # the generated kernel sources and code objects are many GB over a campaign and no later
    # phase reads them (the original's run scripts removed them too)
    shutil.rmtree(build_dir / "1_BenchmarkProblems", ignore_errors=True)
    _record_time(build_dir.parent / "timing.log", name, time.monotonic() - start)
    return logic_dir


__all__ = ["check_arch", "check_device", "detect_command_form", "detect_client_form",
           "tuning_argv", "tool_argv", "tool_env", "ensure_client", "client_path", "with_device",
           "write_device_yaml", "parse_ductile_progress", "DuctileTable", "optimize", "lock_id",
           "run_tool", "PlatformError"]
