"""Test stand-in for a hipBLASLt checkout's ``tensilelite/tasks.py`` (its invoke tasks).

Where it stands in a fake hipBLASLt checkout: ``tensilelite/tasks.py``, run as ``python -m
invoke build-client --build-dir <dir> --gpu-targets <arch>`` in ``tensilelite/`` (the invoke
stand-in is tests/rocm_replay/python/invoke). The real task configures and compiles the C++
client with cmake for the given GPU targets; this one writes what that build leaves behind,
``<dir>/tensilelite/client/tensilelite-client``, as a small script that says what it is.

Test hook: ``GEKO_REPLAY_RECORD=<file>`` appends one JSON line per build (build dir, targets).
"""

import json
import os
import stat
from pathlib import Path

from invoke import task


@task
def build_client(c, build_dir="build_tmp", gpu_targets=None):
    """tensilelite-client in ``build_dir`` for ``gpu_targets``."""
    client = Path(build_dir, "tensilelite", "client", "tensilelite-client")
    client.parent.mkdir(parents=True, exist_ok=True)
    client.write_text("#!/bin/sh\necho 'tensilelite-client (geko test stand-in, not a real "
                      f"client; targets {gpu_targets})'\n")
    client.chmod(client.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    print(f"built {client} for {gpu_targets}")
    record = os.environ.get("GEKO_REPLAY_RECORD")
    if record:
        with open(record, "a") as handle:
            handle.write(json.dumps({"tool": "invoke build-client", "build_dir": str(build_dir),
                                     "gpu_targets": gpu_targets, "cwd": os.getcwd()}) + "\n")
