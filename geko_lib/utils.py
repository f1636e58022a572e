"""The original's utilities (``geko.utils``): run a command silently, build tensilelite-client
(cached by the checkout's git revision), parse a device list."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .errors import GekoError


def run_silent_command(command, cwd=None, env=None) -> None:
    """Run ``command`` (an argv list; never a shell string) with its output hidden; a failure
    raises GekoError with the command and the tail of what it printed."""
    argv = [str(a) for a in command]
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as exc:
        raise GekoError(f"cannot run {' '.join(argv)}: {exc.strerror or exc}") from None
    if done.returncode != 0:
        tail = "\n".join(done.stdout.splitlines()[-15:])
        raise GekoError(f"{' '.join(argv)} failed (exit code {done.returncode}):\n{tail}")


def build_tensilelite_client(hipblaslt_path, build_dir="build_tmp", arch: str = "gfx950",
                             python: str = sys.executable) -> Path:
    """tensilelite-client built from the checkout's invoke task into ``build_dir`` (reused
    while the checkout's git revision is the one it was built from). Returns its path."""
    from .platforms.rocm.install import locate
    from .platforms.rocm.tensilelite import ensure_client

    if hipblaslt_path is None:
        raise GekoError("build_tensilelite_client needs a hipBLASLt checkout (hipblaslt_path): "
                        "the client is built from its tensilelite/")
    from .config_schema import set_key
    from .platforms import CHECKOUT

    config: dict = {}
    set_key(config, CHECKOUT.key, str(hipblaslt_path))
    install = locate(config, environ={})
    return ensure_client(install.tensilelite, Path(build_dir), install.git_hash, arch,
                         python=python)


def parse_devices(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``: distinct non-negative device ids."""
    try:
        devices = [int(part) for part in str(text).split(",") if part.strip() != ""]
    except ValueError:
        raise GekoError(f"expected comma-separated integers, got {text!r}") from None
    if not devices or any(d < 0 for d in devices) or len(set(devices)) != len(devices):
        raise GekoError(f"expected distinct non-negative ids, got {text!r}")
    return devices
