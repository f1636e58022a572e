"""The API's dense-search chunks kept between runs (search.run): a part's candidates
(``data/<part>.csv``) are stamped with what they were measured for: the platform, its library
version, the search options and the part's rows. A later run reuses them only when that stamp
is whole and matches its own; anything else (no stamp, edited or truncated content, another
platform, library or options) is searched again, and the log says why. The job that measures
them is gpu_jobs.search, the workflow's search chunks' too."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pandas as pd

from .. import files, gpu_jobs, original_columns
from ..bench.utils import format_benchmark_output
from ..campaign import integrity, state as campaign_state
from ..library.logic import rows_text
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


def provenance(plat, options: dict, duration: float | None) -> dict:
    """What a chunk's candidates depend on besides its rows: the platform, its library version
    and the search options (search.run's keyword config and duration), by the campaign's rule
    (campaign.state.made_by)."""
    return campaign_state.made_by(plat, {"options": options, "duration": duration})


class StampedChunks(gpu_jobs.Reuse):
    """``out/<part>.yaml`` (the part's rows, written before it is measured, as the original's
    bench input), ``out/<part>.out`` (its results) and ``out/data/<part>.csv`` (its candidates,
    stamped with ``made_for`` and the rows' digest)."""

    def __init__(self, plat, out: Path, made_for: dict):
        self.plat, self.out, self.made_for = plat, Path(out), made_for

    def _data(self, label: str) -> Path:
        return self.out / "data" / f"{label}.csv"

    def _expected(self, rows: list[dict]) -> dict:
        digest = hashlib.sha256(rows_text(rows).encode()).hexdigest()
        return {**self.made_for, "rows_sha256": digest}

    def reused(self, label: str, rows: list[dict]) -> pd.DataFrame | None:
        data = self._data(label)
        if data.is_file():
            reason = integrity.problem(data, self._expected(rows))
            if reason is None:  # a table of an older geko may lack the original's columns
                return original_columns.add(integrity.read_table(data), self.plat.lib_source)
            log.info("%s: searched again: %s", data, reason)
        files.write_text(self.out / f"{label}.yaml", rows_text(rows))
        return None

    def keep(self, label: str, rows: list[dict], frame: pd.DataFrame) -> None:
        files.write_text(self.out / f"{label}.out", format_benchmark_output(frame, self.plat))
        data = self._data(label)
        files.write_csv(data, frame)
        integrity.stamp(data, self._expected(rows), inputs={})
