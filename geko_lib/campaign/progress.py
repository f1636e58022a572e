"""One progress bar for the whole campaign, as the original draws it::

    Search in progress: 100%|##########| 2/2 [00:41<00:00, 20.85s/it, n_completed: 2, n_failed: 0]

The original's runner draws one tqdm bar over the phase's jobs: the GEMMs of the dense search,
the tuning configs of tune mode. geko's jobs are Snakemake's, so the ``geko`` command draws the
bar while Snakemake runs, from what the workdir shows (:mod:`geko_lib.campaign.layout`): a search GEMM
is done when its chunk's results are written (failed if it is listed in the chunk's failures),
a tuning job when its build dir holds library logic (failed if ``optimizations/failed_jobs.log``
lists it). The total is known once the phase's checkpoint (search chunks, tuning configs) is
written; before that no bar is drawn. Before them (and in the bench mode alone) the baseline
draws its bar over the GEMMs it benchmarks, from the progress lines its jobs write into their
logs (``baseline part_0_of_2: 1200/50000 ...``; a part whose table is written is done). Where the
stream is no terminal (a log, a pipe) the bar is a plain line per change instead, with the rate
once a job is done: ``Search in progress: 1/2 [00:21, 21.0 s/GEMM, n_completed: 1, n_failed: 0]``.
The bar looks every second for the whole run, so it reads a file again only once it changed
(:class:`Reads`: a chunk's YAML once, a job log from where the last look left it).
The counters sit inside the brackets, as the original's (its tqdm postfix). At Ctrl-C the bar is
closed before the command's ``interrupted`` line, which is the last.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import layout as L, rules
from .. import files, interrupt

LABELS = {"baseline": "Baseline in progress", "search": "Search in progress",
          "tune": "Optimization in progress"}
UNITS = {"baseline": "GEMM", "search": "GEMM", "tune": "job"}
BASELINE_RULE = "baseline_part"  # its jobs' logs carry the baseline's progress lines
BAR = ("{{l_bar}}{{bar}}| {{n_fmt}}/{{total_fmt}} [{{elapsed}}<{{remaining}}, {{rate_fmt}}, "
       "n_completed: {done}, n_failed: {failed}]")


@dataclass(frozen=True)
class Counts:
    total: int | None  # None until the phase's checkpoint is written
    completed: int
    failed: int


def _signature(path: Path) -> tuple | None:
    """What tells a file changed without reading it (None: it is not there)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


# the bytes before where a log was read up to that must still be there for it to have grown
# (not been rewritten) since
TAIL = 64


def _same_tail(f, size: int, offset: int, tail: bytes) -> bool:
    """Whether the open file ``f`` of ``size`` bytes still holds ``tail`` just before
    ``offset``: it grew since it was read up to there, it was not written anew."""
    if offset == 0:
        return True
    if size < offset:
        return False
    f.seek(offset - len(tail))
    return f.read(len(tail)) == tail


class Reads:
    """What the bar read of each file, kept while the file is unchanged: the bar looks every
    second for the whole run, and re-parsing every chunk's YAML and re-reading every job log
    at each look cost the command as much CPU as all its imports (issue 40). A file is read again
    only once its inode, size or mtime changed; a growing job log only from where it was read
    up to (its last complete line)."""

    def __init__(self):
        self._rows: dict[Path, tuple[tuple, int]] = {}
        self._logs: dict[Path, tuple[int, int, bytes, tuple | None]] = {}

    def row_count(self, path: Path) -> int:
        """The rows of a YAML list (0 where it is missing or being written)."""
        signature = _signature(path)
        kept = self._rows.get(path)
        if signature is not None and kept is not None and kept[0] == signature:
            return kept[1]
        try:
            count = len(files.load_yaml(path.read_text()) or [])
        except (OSError, yaml.YAMLError):
            return 0  # a file being written: counted on the next look, so not kept
        if signature is not None:
            self._rows[path] = (signature, count)
        return count

    def last_match(self, path: Path, pattern: re.Pattern) -> tuple | None:
        """The last match of ``pattern`` in a job log (a line at most), reading only what
        was appended since the last look; a log rewritten (a new attempt) is read whole."""
        inode, offset, tail, found = self._logs.get(path, (None, 0, b"", None))
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            if st.st_ino != inode or not _same_tail(f, st.st_size, offset, tail):
                offset, found = 0, None
            f.seek(offset)
            data = f.read()
        inode = st.st_ino
        end = data.rfind(b"\n") + 1  # a line still being written is read at the next look
        matches = pattern.findall(data[:end].decode(errors="replace"))
        found = matches[-1] if matches else found
        offset += end
        self._logs[path] = (inode, offset, data[max(end - TAIL, 0):end] if end else tail, found)
        return found


def search_counts(workdir: Path, reads: Reads | None = None) -> Counts:
    reads = Reads() if reads is None else reads
    layout = L.Layout(workdir)
    chunks = layout.search_chunks()
    if not chunks:
        return Counts(None, 0, 0)
    total = completed = failed = 0
    for chunk in chunks:
        gemms = reads.row_count(layout.path(L.SEARCH_CHUNK, chunk=chunk))
        total += gemms
        if layout.path(L.SEARCH_DATA, chunk=chunk).is_file():
            lost = reads.row_count(layout.path(L.SEARCH_CHUNK_FAILED, chunk=chunk))
            completed, failed = completed + gemms - lost, failed + lost
    return Counts(total, completed, failed)


def tune_counts(workdir: Path, reads: Reads | None = None) -> Counts:
    """``reads`` is not needed: the manifest and failed_jobs.log are a line per job, and a
    build's library logic is looked for, not read."""
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


def baseline_label(part: str) -> str:
    """The label of a baseline part's progress lines in its job log (geko_lib.progress)."""
    return f"baseline {part}"


_BASELINE_LINE = re.compile(r"baseline (part_\d+_of_\d+): (\d+)/(\d+) ")


def baseline_counts(workdir: Path, reads: Reads | None = None) -> Counts:
    """The baseline's GEMMs benchmarked so far, from the last progress line of each part's
    job log (None until a part has written one)."""
    reads = Reads() if reads is None else reads
    layout = L.Layout(workdir)
    logs = Path(workdir, L.LOG_DIR, rules.log_name(BASELINE_RULE))
    total = done = 0
    seen = False
    for log in sorted(logs.glob("part_*.log")) if logs.is_dir() else []:
        try:
            found = reads.last_match(log, _BASELINE_LINE)
        except OSError:
            continue
        if not found:
            continue
        part, n, of = found[0], int(found[1]), int(found[2])
        seen = True
        total += of
        done += of if layout.path(L.BASELINE_PART, part=part).is_file() else n
    return Counts(total if seen else None, done, 0)


COUNTERS = {"baseline": baseline_counts, "search": search_counts, "tune": tune_counts}


class CampaignBar:
    """The bar of the phase under way (``phase``: one, or the campaign's phases in order: the
    latest whose total is known is drawn); :meth:`refresh` reads the workdir again."""

    def __init__(self, workdir, phase: str | tuple[str, ...] | None, stream=None):
        self.workdir = Path(workdir)
        self.phases = () if phase is None else (phase,) if isinstance(phase, str) \
            else tuple(phase)
        self.phase = self.phases[0] if self.phases else None
        self.stream = stream if stream is not None else sys.stderr
        self.plain = not getattr(self.stream, "isatty", lambda: False)()
        self._bar = None
        self._shown: Counts | None = None
        self._started = time.monotonic()
        # jobs already done when the bar first saw its phase (a rerun's earlier work): the
        # rate counts this run's jobs alone, not a finished campaign's over a second
        self._done_before: int | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._reads = Reads()  # what it read of the workdir, kept while a file is unchanged

    def write(self, line: str, file=None) -> None:
        """A line for the terminal (stdout unless told) that leaves the bar intact below it."""
        file = sys.stdout if file is None else file
        with self._lock:
            if self._bar is not None:
                self._bar.write(line, file=file)
            else:
                print(line, file=file, flush=True)

    def _plain_line(self, counts: Counts) -> None:
        if counts == self._shown:
            return
        self._shown = counts
        done = counts.completed + counts.failed
        if self._done_before is None:
            self._done_before = done
        new = done - self._done_before
        timing = ""
        if new > 0:
            elapsed = time.monotonic() - self._started
            minutes, seconds = divmod(int(elapsed), 60)
            unit = UNITS[self.phase]
            rate = f"{elapsed / new:.1f} s/{unit}" if elapsed >= 0.1 * new \
                else f"{new / max(elapsed, 1e-9):,.0f} {unit}/s"
            timing = f"{minutes:02d}:{seconds:02d}, {rate}, "
        print(f"{LABELS[self.phase]}: {done}/{counts.total} [{timing}n_completed: "
              f"{counts.completed}, n_failed: {counts.failed}]", file=self.stream, flush=True)

    def _under_way(self) -> tuple[str | None, Counts | None]:
        """The latest phase whose total is known, with its counts."""
        counts = None
        for phase in reversed(self.phases):
            counts = COUNTERS[phase](self.workdir, self._reads)
            if counts.total is not None:
                return phase, counts
        return None, counts

    def _switch(self, phase: str) -> None:
        """The next phase began: the last bar stays as it ended, a new one starts."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
            self._bar, self._shown, self.phase = None, None, phase
            self._started, self._done_before = time.monotonic(), None

    def refresh(self) -> Counts | None:
        if not self.phases or self._closed:
            return None
        phase, counts = self._under_way()
        if phase is None:
            return counts
        if phase != self.phase:
            self._switch(phase)
        if self.plain:
            with self._lock:
                self._plain_line(counts)
            return counts
        if self._bar is None:
            from tqdm import tqdm

            # initial: the jobs an earlier run did, left out of the rate
            self._bar = tqdm(total=counts.total, desc=LABELS[self.phase], file=self.stream,
                             dynamic_ncols=True, leave=True,
                             initial=counts.completed + counts.failed)
        with self._lock:
            bar = self._bar
            bar.total = counts.total
            bar.bar_format = BAR.format(done=counts.completed, failed=counts.failed)
            bar.n = counts.completed + counts.failed
            bar.refresh()
        return counts

    def close(self) -> None:
        """The last count drawn, then no more (a second close does nothing): lines written
        after it print plainly."""
        if self._closed:
            return
        self.refresh()
        with self._lock:
            self._closed = True
            if self._bar is not None:
                self._bar.close()
            self._bar = None


def phase_of(config: dict, target: str, until=None) -> tuple[str, ...]:
    """The phases whose work the bar counts, in order: the baseline's GEMMs, then the mode's
    jobs (search GEMMs, tuning jobs); the bench target, and a run stopping after the tuning
    YAMLs (``--until configure``: no tuning job runs), have the baseline alone."""
    mode = config.get("mode")
    if target == "bench" or until == "configure" or mode not in COUNTERS:
        return ("baseline",)
    return ("baseline", mode)


def call(command, *, workdir, phase: str | None, interval: float = 1.0, stream=None,
         on_line=None, **popen) -> int:
    """``subprocess.call(command, **popen)`` with the campaign bar drawn meanwhile; with
    ``on_line``, the command's output (stdout and stderr) goes line by line to
    ``on_line(line, write)`` instead of the terminal, ``write`` printing above the bar. At
    Ctrl-C the command is let end (``interrupt.wind_down``), then ``interrupt.Interrupted``
    is raised."""
    bar, stop = CampaignBar(workdir, phase, stream), threading.Event()

    def watch():
        while not stop.wait(interval):
            bar.refresh()

    def end_bar():
        stop.set()
        watcher.join()
        bar.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        piped = {} if on_line is None else {
            "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True,
            "errors": "replace", "bufsize": 1}
        with subprocess.Popen(command, **piped, **popen) as child:
            def drain():
                for line in child.stdout if on_line is not None else ():
                    on_line(line, bar.write)
            try:
                drain()
                return child.wait()
            except KeyboardInterrupt:  # the command got it too: it ends, then this does
                # the bar's last line now: the command's "interrupted" line, printed while it
                # winds down, must be the last the terminal gets
                end_bar()
                interrupt.wind_down(child, drain)
                raise interrupt.Interrupted() from None
    finally:
        end_bar()
