"""Where geko's own files are: the workflow (Snakefile, rules, scripts, config schema), the
default config with the bundled workloads, and the Snakemake profiles.

A source checkout keeps them at its root beside ``geko_lib/`` (``workflow/``, ``config/``,
``profiles/``); a wheel or ``pip install .`` carries the same directories inside the package
(``geko_lib/workflow/`` ...: package data, see setup.py). The Snakefile finds the config the
same way in both (``config/`` beside its own directory), so only this module asks which one
holds them.
"""

from __future__ import annotations

import functools
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SNAKEFILE_IN_ROOT = Path("workflow") / "Snakefile"


@functools.cache
def root() -> Path:
    """The directory holding ``workflow/``, ``config/`` and ``profiles/``: the installed
    package's own (a wheel), else the checkout's root (a checkout or an editable install)."""
    for candidate in (PACKAGE_DIR, PACKAGE_DIR.parent):
        if (candidate / SNAKEFILE_IN_ROOT).is_file():
            return candidate
    return PACKAGE_DIR.parent  # neither: callers report the missing file by its path


def path(*parts: str) -> Path:
    """A file of geko's own: ``path("workflow", "Snakefile")``."""
    return root().joinpath(*parts)


def snakefile() -> Path:
    return root() / SNAKEFILE_IN_ROOT


# where the bundled workloads are: application logs, and models' Hugging Face config.json files
BUNDLED_WORKLOADS = (Path("config") / "workloads", Path("config") / "models")


def find(relative, base) -> Path | None:
    """A path a user or the config gave: under ``base`` (where the command started), else
    among geko's own files (``config/workloads/...``: the default workload is a bundled one,
    found from any directory), and a bare file name among the bundled workloads
    (``llama3_8b_serving.yaml``); None where none holds it."""
    candidates = [Path(base) / relative, root() / relative]
    if Path(relative).name == str(relative):
        candidates += [root() / folder / relative for folder in BUNDLED_WORKLOADS]
    for candidate in candidates:
        if candidate.exists():
            return candidate.resolve()
    return None
