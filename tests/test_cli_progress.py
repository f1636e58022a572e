"""Progress bars on a shared terminal: a workflow job (logging to its job log) draws none, so
parallel jobs cannot garble the terminal; its log still gets the plain progress lines."""
import io
import logging

from geko_lib import jobs, progress


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
