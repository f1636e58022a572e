"""One chunk of search.run (the Python API's dense search): its rows searched on a leased
device, or its candidates reused from an earlier run.

A chunk's candidates (``data/<chunk>.csv``) are stamped with what they were measured for: the
platform, its library version, the search options and the chunk's rows. A later run reuses
them only when that stamp is whole and matches its own; anything else (no stamp, edited or
truncated content, another platform, library or options) is searched again, and the log says
why. geko_lib.runner runs the chunks over the devices; a Snakemake campaign runs the same
chunks as scheduler jobs (phases.search_chunk), and both call the platform's ``search``.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pandas as pd

from .. import failures, files, original_columns
from ..bench.utils import format_benchmark_output
from ..campaign import integrity, state as campaign_state
from ..gemm import GemmProblem
from ..library.logic import rows_text
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


def gemm_name(row: dict) -> str:
    return GemmProblem.from_row(row).name


def provenance(plat, options: dict, duration: float | None) -> dict:
    """What a chunk's candidates depend on besides its rows: the platform, its library version
    and the search options (search.run's keyword config and duration), by the campaign's rule
    (campaign.state.made_by)."""
    return campaign_state.made_by(plat, {"options": options, "duration": duration})


def search(plat, rows: list[dict], name: str, out: Path, device: int,
                duration: float | None, made_for: dict) -> pd.DataFrame:
    """One chunk on one device: its rows file, its output, its candidates table (reused where
    an earlier run's stamp says they were measured for the same rows and ``made_for``)."""
    data = out / "data" / f"{name}.csv"
    text = rows_text(rows)
    expected = {**made_for, "rows_sha256": hashlib.sha256(text.encode()).hexdigest()}
    if data.is_file():
        reason = integrity.problem(data, expected)
        if reason is None:  # a table of an older geko may lack the original's columns
            return original_columns.add(integrity.read_table(data), plat.lib_source)
        log.info("%s: searched again: %s", data, reason)
    files.write_text(out / f"{name}.yaml", text)
    problems = [GemmProblem.from_row(r) for r in rows]
    # the original's columns (solutionIdx, solution, lib_source ...), as the workflow's chunks
    # have them (phases.search_chunk), so the winners of both doors have the same columns
    frame = original_columns.add(plat.search(problems, out, device, duration=duration),
                                 plat.lib_source)
    files.write_text(out / f"{name}.out", format_benchmark_output(frame, plat))
    files.write_csv(data, frame)
    integrity.stamp(data, expected, inputs={})
    return frame


def run_chunk(plat, rows: list[dict], name: str, out: Path, device: int,
              duration: float | None, made_for: dict, retry: bool) -> tuple[list, list[dict]]:
    """One chunk job: its rows searched whole, and where that fails (with ``retry``) GEMM by
    GEMM, as the workflow's search_chunk phase does. Returns (the candidate tables, the failed
    GEMMs with their rows: failures.with_rows)."""
    retries = iter(range(len(rows)))

    def searched(items: list[dict]) -> pd.DataFrame:
        # a retried GEMM gets a chunk of its own, so a rerun resumes from it too
        label = name if len(items) == len(rows) else f"{name}_retry{next(retries)}"
        return search(plat, items, label, out, device, duration, made_for)

    found, gone = failures.run_with_retry(searched, rows, gemm_name, retry)
    return found, failures.with_rows(gone, rows, gemm_name)
