#!/usr/bin/env python3
"""scripts/configure.py: the original's configure script with its arguments and defaults, a thin door into
the `geko` command (geko_lib.launchers translates the arguments; geko_lib.cli runs them). Runs
from a checkout without installing: it puts the repository root on sys.path."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geko_lib import launchers  # noqa: E402

sys.exit(launchers.main("configure"))
