"""What every workflow job shares: logging to the job's log file, clean failure messages, and
running on a leased device of the configured platform. Scripts stay pure I/O around geko_lib."""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path

import pandas as pd
import yaml

from . import devices, platforms
from .gemm import GemmError, GemmProblem
from .library import LibraryError
from .platforms import PlatformError
from .workload import WorkloadError

log = logging.getLogger("geko")

USER_ERRORS = (WorkloadError, GemmError, LibraryError, PlatformError, ValueError)


def run(main, smk) -> None:
    """Run ``main(smk)`` with logging to the job log; user errors end the job with one clear
    line (exit 1) instead of a traceback."""
    handlers = [logging.StreamHandler(sys.stderr)]
    if smk.log:
        Path(smk.log[0]).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(smk.log[0], mode="w"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="GEKO:%(levelname)s [%(name)s] %(message)s")
    try:
        main(smk)
    except USER_ERRORS as exc:
        log.error("%s", exc)
        sys.exit(1)


@contextlib.contextmanager
def on_device(config: dict):
    """(platform, device id) for the duration of a GPU job."""
    platform = platforms.get(config)
    with devices.lease(config["devices"], lock_dir=config.get("lock_dir") or None,
                       namespace=platform.name) as lease:
        log.info("leased %s device %d slot %d", platform.name, lease.device, lease.slot)
        yield platform, lease.device


def read_table(path) -> pd.DataFrame:
    """A results / summary CSV with identity columns typed as the workflow writes them."""
    return pd.read_csv(path, dtype={"transA": str, "transB": str}, keep_default_na=False,
                       na_values=[""])


def problems_in_rows(path) -> list[GemmProblem]:
    """Unique problems of a YAML file of hipblaslt-bench rows, in order."""
    rows = yaml.safe_load(Path(path).read_text()) or []
    return list(dict.fromkeys(GemmProblem.from_row(row) for row in rows))
