"""One progress bar for the whole campaign, as the original draws it::

    Search in progress: 100%|##########| 2/2 [00:41<00:00, 20.85s/it] n_completed: 2, n_failed: 0

The original's runner draws one tqdm bar over the phase's jobs: the GEMMs of the dense search,
the tuning configs of tune mode. geko's jobs are Snakemake's, so the ``geko`` command draws the
bar while Snakemake runs, from what the workdir shows (:mod:`geko_lib.layout`): a search GEMM
is done when its chunk's results are written (failed if it is listed in the chunk's failures),
a tuning job when its build dir holds library logic (failed if ``optimizations/failed_jobs.log``
lists it). The total is known once the phase's checkpoint (search chunks, tuning configs) is
written; before that no bar is drawn. The bench mode has no phase jobs and no bar.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import layout as L

LABELS = {"search": "Search in progress", "tune": "Optimization in progress"}
BAR = ("{{l_bar}}{{bar}}| {{n_fmt}}/{{total_fmt}} [{{elapsed}}<{{remaining}}, {{rate_fmt}}] "
       "n_completed: {done}, n_failed: {failed}")


@dataclass(frozen=True)
class Counts:
    total: int | None  # None until the phase's checkpoint is written
    completed: int
    failed: int


def _rows(path: Path) -> list:
    try:
        return yaml.safe_load(path.read_text()) or []
    except (OSError, yaml.YAMLError):
        return []  # a file being written: counted on the next look


def search_counts(workdir: Path) -> Counts:
    layout = L.Layout(workdir)
    chunks = layout.search_chunks()
    if not chunks:
        return Counts(None, 0, 0)
    total = completed = failed = 0
    for chunk in chunks:
        gemms = len(_rows(layout.path(L.SEARCH_CHUNK, chunk=chunk)))
        total += gemms
        if layout.path(L.SEARCH_DATA, chunk=chunk).is_file():
            lost = len(_rows(layout.path(L.SEARCH_CHUNK_FAILED, chunk=chunk)))
            completed, failed = completed + gemms - lost, failed + lost
    return Counts(total, completed, failed)


def tune_counts(workdir: Path) -> Counts:
    layout = L.Layout(workdir)
    configs = layout.tuning_configs()
    if not configs:
        return Counts(None, 0, 0)
    listed = set(layout.failed_jobs("tune"))
    completed = failed = 0
    for cfg in configs:
        logic = layout.path(L.BUILD_LOGIC, cfg=cfg)
        if any(logic.glob("*.yaml")):
            completed += 1
        elif cfg in listed and logic.is_dir():  # skipped after its last attempt
            failed += 1
    return Counts(len(configs), completed, failed)


COUNTERS = {"search": search_counts, "tune": tune_counts}


class CampaignBar:
    """The bar of one phase; :meth:`refresh` reads the workdir again."""

    def __init__(self, workdir, phase: str, stream=None):
        self.workdir, self.phase = Path(workdir), phase
        self.stream = stream if stream is not None else sys.stderr
        self._bar = None

    def refresh(self) -> Counts:
        counts = COUNTERS[self.phase](self.workdir)
        if counts.total is None:
            return counts
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=counts.total, desc=LABELS[self.phase], file=self.stream,
                             dynamic_ncols=True, leave=True)
        bar = self._bar
        bar.total = counts.total
        bar.bar_format = BAR.format(done=counts.completed, failed=counts.failed)
        bar.n = counts.completed + counts.failed
        bar.refresh()
        return counts

    def close(self) -> None:
        self.refresh()
        if self._bar is not None:
            self._bar.close()


def phase_of(config: dict, target: str) -> str | None:
    """The phase whose jobs the bar counts: None for targets without one (bench)."""
    if target == "bench":
        return None
    return config.get("mode") if config.get("mode") in COUNTERS else None


def call(command, *, workdir, phase: str | None, interval: float = 1.0, stream=None,
         **popen) -> int:
    """``subprocess.call(command, **popen)`` with the campaign bar drawn meanwhile."""
    if phase is None:
        return subprocess.call(command, **popen)
    bar, stop = CampaignBar(workdir, phase, stream), threading.Event()

    def watch():
        while not stop.wait(interval):
            bar.refresh()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        return subprocess.call(command, **popen)
    finally:
        stop.set()
        watcher.join()
        bar.close()
