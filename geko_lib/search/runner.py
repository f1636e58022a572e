"""search.run's job runner: search chunks dealt over devices (one chunk per device at a
time), resumable from the chunks' saved candidates, failed chunks retried GEMM by GEMM.

A chunk's candidates (``data/<chunk>.csv``) are stamped with what they were measured for: the
platform, its library version, the search options and the chunk's rows. A later run reuses
them only when that stamp is whole and matches its own; anything else (no stamp, edited or
truncated content, another platform, library or options) is searched again, and the log says
why.

This is the Python API's runner; a Snakemake campaign runs the same chunks as scheduler jobs
(workflow/rules/search.smk), and both call the platform's ``search`` on each chunk.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import queue
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from .. import failures, files, jobs, original_columns
from ..bench.utils import format_benchmark_output
from ..campaign import integrity, state as campaign_state
from ..errors import GekoError
from ..gemm import GemmProblem
from ..library.logic import rows_text
from .chunks import chunk_bounds, chunk_name
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


def _gemm_name(row: dict) -> str:
    return GemmProblem.from_row(row).name


def provenance(plat, options: dict, duration: float | None) -> dict:
    """What a chunk's candidates depend on besides its rows: the platform, its library version
    and the search options (search.run's keyword config and duration), by the campaign's rule
    (campaign.state.made_by)."""
    return campaign_state.made_by(plat, {"options": options, "duration": duration})


def _search_one(plat, rows: list[dict], name: str, out: Path, device: int,
                duration: float | None, made_for: dict) -> pd.DataFrame:
    """One chunk on one device: its rows file, its output, its candidates table (reused where
    an earlier run's stamp says they were measured for the same rows and ``made_for``)."""
    data = out / "data" / f"{name}.csv"
    text = rows_text(rows)
    expected = {**made_for, "rows_sha256": hashlib.sha256(text.encode()).hexdigest()}
    if data.is_file():
        reason = integrity.problem(data, expected)
        if reason is None:  # a table of an older geko may lack the original's columns
            return original_columns.add(jobs.read_table(data), plat.lib_source)
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


def run_chunks(plat, rows: list[dict], out: Path, devices: list[int], max_chunk_size: int,
               retry: bool, duration: float | None, options: dict | None = None
               ) -> pd.DataFrame:
    """Every candidate of every GEMM that could be searched (``options``: what else the
    candidates depend on, recorded in their stamps)."""
    from tqdm import tqdm

    if not devices:
        raise GekoError("search.run() needs at least one device")
    out.mkdir(parents=True, exist_ok=True)
    bounds = chunk_bounds(len(rows), max_chunk_size, len(devices))
    free: queue.Queue = queue.Queue()
    for device in devices:
        free.put(device)
    failed: list[dict] = []
    made_for = provenance(plat, options or {}, duration)
    # the original's bar: the completed and failed counts after the timing brackets
    bar_format = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
    bar = tqdm(total=len(rows), desc="Search in progress",
               bar_format=bar_format + " n_completed: 0, n_failed: 0")

    def work(chunk_rows: list[dict], name: str) -> list[pd.DataFrame]:
        device = free.get()
        retries = itertools.count()

        def search(items: list[dict]) -> pd.DataFrame:
            # a retried GEMM gets a chunk of its own, so a rerun resumes from it too
            label = name if len(items) == len(chunk_rows) else f"{name}_retry{next(retries)}"
            return _search_one(plat, items, label, out, device, duration, made_for)

        try:
            found, gone = failures.run_with_retry(search, chunk_rows, _gemm_name, retry)
        finally:
            free.put(device)
        failed.extend(failures.with_rows(gone, chunk_rows, _gemm_name))
        bar.bar_format = (f"{bar_format} n_completed: {bar.n + len(chunk_rows) - len(failed)},"
                          f" n_failed: {len(failed)}")
        bar.update(len(chunk_rows))
        return found

    with ThreadPoolExecutor(max_workers=len(devices)) as pool:
        results = list(pool.map(lambda b: work(rows[b[0]:b[1] + 1], chunk_name(*b)), bounds))
    bar.close()
    failures.write_failure_files(out, failed)
    frames = [f for chunk in results for f in chunk]
    if not frames:
        raise GekoError(f"dense search: every GEMM failed; see {out / failures.FAILED_JOBS}")
    return pd.concat(frames, ignore_index=True)
