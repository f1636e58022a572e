"""Progress bars on a shared terminal: a workflow job (logging to its job log) draws none, so
parallel jobs cannot garble the terminal; its log still gets the plain progress lines."""
import io
import logging
import pathlib
import sys

import pytest

from geko_lib import interrupt, jobs, progress
from geko_lib.campaign import progress as campaign_progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_a_bar_outside_jobs():
    stream = Terminal()
    with progress.Progress(3, "search gemms_0-2", stream=stream, interval=0) as bar:
        bar.update(3)
    assert "search gemms_0-2" in stream.getvalue() and "3/3" in stream.getvalue()


def test_a_job_draws_no_bar_and_logs_plain_lines(tmp_path):
    log_path = tmp_path / "logs" / "search" / "gemms_0-2.log"
    try:
        jobs.setup_logging(log_path, 1)
        stream = Terminal()
        with progress.Progress(3, "search gemms_0-2", stream=stream, interval=0) as bar:
            bar.update(3)
        assert stream.getvalue() == ""
        for handler in logging.getLogger().handlers:
            handler.flush()
        assert "search gemms_0-2: 3/3 (100%)" in log_path.read_text()
    finally:
        progress.draw_terminal_bars(True)
        logging.basicConfig(force=True, handlers=[logging.NullHandler()])
        logging.captureWarnings(False)


def test_job_logging_keeps_library_warnings_off_the_terminal(tmp_path, capsys):
    import warnings

    log_path = tmp_path / "job.log"
    try:
        jobs.setup_logging(log_path, 0)
        warnings.warn("a library said something", UserWarning)
        logging.getLogger("geko").warning("the job's own warning")
        logging.getLogger("geko").info("an info line")  # below verbosity 0
        for handler in logging.getLogger().handlers:
            handler.flush()
        text = log_path.read_text()
        terminal = capsys.readouterr().err
    finally:
        progress.draw_terminal_bars(True)
        logging.basicConfig(force=True, handlers=[logging.NullHandler()])
        logging.captureWarnings(False)
    assert "a library said something" in text and "the job's own warning" in text
    assert "an info line" not in text
    assert "the job's own warning" in terminal and "a library said something" not in terminal


# --- the campaign bar (issue 41): the original's format, and nothing after `interrupted` -------

def _baseline_log(workdir, done: int, total: int):
    logs = workdir / campaign_progress.L.LOG_DIR / \
        campaign_progress.rules.log_name(campaign_progress.BASELINE_RULE)
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "part_0_of_1.log").write_text(f"baseline part_0_of_1: {done}/{total} (x)\n")
    return logs / "part_0_of_1.log"


def test_the_bar_keeps_its_counters_inside_its_brackets_as_the_original(tmp_path):
    """The original's bar: `... 2/2 [10:25<00:00, 20.85s/it, n_completed: 2, n_failed: 0]`."""
    _baseline_log(tmp_path, 3, 4)
    plain = io.StringIO()
    campaign_progress.CampaignBar(tmp_path, "baseline", plain).close()
    assert plain.getvalue() == "Baseline in progress: 3/4 [n_completed: 3, n_failed: 0]\n"
    drawn = Terminal()
    bar = campaign_progress.CampaignBar(tmp_path, "baseline", drawn)
    bar.refresh()
    bar.close()
    assert ", n_completed: 3, n_failed: 0]" in drawn.getvalue()


def test_no_progress_line_prints_after_the_interrupted_line(tmp_path):
    """At Ctrl-C the bar draws its last count, then the command's `interrupted` line (printed
    by Snakemake's onerror hook while it winds down) is the last line."""
    log = _baseline_log(tmp_path, 1, 4)
    # the child: a line, then (while the command winds down) more work and the last line
    child = ("import sys, time\nprint('started', flush=True)\ntime.sleep(0.5)\n"
             f"open({str(log)!r}, 'w').write('baseline part_0_of_1: 2/4 (x)\\n')\n"
             f"print('geko: {interrupt.MESSAGE}', flush=True)\n")
    stream, pressed = io.StringIO(), []

    def on_line(line, write):
        write(line.rstrip("\n"), file=stream)
        if not pressed:  # Ctrl-C as the first line arrives
            pressed.append(True)
            raise KeyboardInterrupt

    with pytest.raises(interrupt.Interrupted):
        campaign_progress.call([sys.executable, "-c", child], workdir=tmp_path,
                               phase="baseline", interval=60, stream=stream, on_line=on_line)
    lines = stream.getvalue().splitlines()
    assert lines[-1] == f"geko: {interrupt.MESSAGE}", lines
    assert not any(line.startswith("Baseline in progress: 2/4") for line in lines), lines


def _counting_opens(monkeypatch) -> dict:
    """Every file the bar opens, with how many times (Path.read_text and read_bytes open
    through Path.open)."""
    opened: dict = {}
    real = pathlib.Path.open

    def counted(self, *args, **kwargs):
        opened[self.name] = opened.get(self.name, 0) + 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", counted)
    return opened


def test_the_bar_reads_a_file_again_only_once_it_changed(tmp_path, monkeypatch):
    """The bar looks every second for the whole run: an unchanged chunk YAML, failure list or
    job log is read once, not at every look (issue 40), and a change is still seen."""
    log = _baseline_log(tmp_path, 1, 2)
    chunks, data = tmp_path / "search" / "chunks", tmp_path / "search" / "data"
    chunks.mkdir(parents=True)
    data.mkdir(parents=True)
    (chunks / "gemms_0-2.yaml").write_text("- {M: 1}\n- {M: 2}\n- {M: 3}\n")
    (data / "gemms_0-2.csv").write_text("M\n1\n")
    (data / "gemms_0-2.failed.yaml").write_text("- {M: 2}\n")
    opened = _counting_opens(monkeypatch)
    stream = io.StringIO()
    bar = campaign_progress.CampaignBar(tmp_path, ("baseline", "search"), stream)
    for _ in range(5):
        assert bar.refresh() == campaign_progress.Counts(3, 2, 1)
    assert opened == {"gemms_0-2.yaml": 1, "gemms_0-2.failed.yaml": 1}
    (data / "gemms_0-2.failed.yaml").write_text("- {M: 2}\n- {M: 3}\n")
    opened.clear()  # the write above opened it too
    assert bar.refresh() == campaign_progress.Counts(3, 1, 2)
    assert opened == {"gemms_0-2.failed.yaml": 1}
    bar.close()
    assert log.name not in opened  # the search's total is known: the baseline's log not read


class _Reading:
    """A file the bar opened, noting the bytes each of its reads to the end returned."""

    def __init__(self, f, read: list):
        self._f, self._read = f, read

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def read(self, *args):
        data = self._f.read(*args)
        if not args:  # not the check of the bytes before where the last look ended
            self._read.append(data)
        return data

    def __getattr__(self, name):
        return getattr(self._f, name)


def test_a_growing_job_log_is_read_from_where_the_bar_left_it(tmp_path, monkeypatch):
    log = _baseline_log(tmp_path, 1, 4)
    reads = campaign_progress.Reads()
    assert campaign_progress.baseline_counts(tmp_path, reads).completed == 1
    with open(log, "a") as f:  # a line, then one half written
        f.write("baseline part_0_of_1: 2/4 (x)\nbaseline part_0_of_1: 3/")
    read: list = []
    real = pathlib.Path.open
    monkeypatch.setattr(pathlib.Path, "open",
                        lambda self, *a, **k: _Reading(real(self, *a, **k), read))
    assert campaign_progress.baseline_counts(tmp_path, reads).completed == 2
    with open(log, "a") as f:
        f.write("4 (x)\n")
    assert campaign_progress.baseline_counts(tmp_path, reads).completed == 3
    # each look reads on from its last whole line (a few bytes before it are checked)
    assert read == [b"baseline part_0_of_1: 2/4 (x)\nbaseline part_0_of_1: 3/",
                     b"baseline part_0_of_1: 3/4 (x)\n"]
    with open(log, "w") as f:  # a new attempt rewrote it
        f.write("baseline part_0_of_1: 1/4 (y)\n")
    assert campaign_progress.baseline_counts(tmp_path, reads).completed == 1
