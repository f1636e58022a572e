"""A phase's job (phases.Job) has every attribute a phase reads, built from Snakemake's object
or from the rule table; phases.run raises a failure in process (said once, in the job log) and
only the workflow script's entry (phases.run_script) turns it into exit 1."""

import types
from pathlib import Path

import pytest

from geko_lib import phases
from geko_lib.campaign import layout, state
from geko_lib.errors import GekoError
from geko_lib.phases import Job, Paths


def _bad_ingest(tmp_path) -> Job:
    config = state.with_defaults({"platform": "sim", "arch": "gfx950",
                                  "workload_inline": "256 512 x"})
    return Job("ingest", Paths(), Paths(str(tmp_path / "workload.yaml")), config,
               params=Paths(kind="inline", value="256 512 x"), log=[str(tmp_path / "ingest.log")])


def test_a_failed_phase_raises_in_process_and_its_log_says_why_once(tmp_path):
    job = _bad_ingest(tmp_path)
    with pytest.raises(GekoError, match="--inline"):
        phases.run(job, "ingest")
    errors = [line for line in Path(job.log[0]).read_text().splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "--inline" in errors[0]
    assert not Path(job.output[0]).exists()


def test_the_workflow_scripts_entry_turns_a_failure_into_exit_1(tmp_path, capsys):
    with pytest.raises(SystemExit) as ended:
        phases.run_script(_bad_ingest(tmp_path), "ingest")
    assert ended.value.code == 1
    assert "Traceback" not in capsys.readouterr().err


def test_an_in_process_job_logs_only_its_own_lines_and_leaves_the_process_logging_as_it_was(
        tmp_path, monkeypatch):
    """Snakemake's process (an in-process rule): the job's log takes none of the lines other
    threads log meanwhile (Snakemake's scheduler logs through the root logger), and the root
    logger's handlers are Snakemake's again after the job; a failure is one line, no
    traceback of geko's."""
    import logging
    import threading

    root = logging.getLogger()
    before = list(root.handlers)
    job = _bad_ingest(tmp_path)
    scheduler_said = threading.Event()

    def scheduler():
        logging.getLogger("snakemake.logging").error("Select jobs to execute...")
        scheduler_said.set()

    def failing(job):  # the scheduler logs while the job runs
        threading.Thread(target=scheduler).start()
        scheduler_said.wait(5)
        raise GekoError("a refused row\nand its detail")

    phases.jobs.run(lambda j: None, job)  # any earlier job of the process: its handlers stay
    root.handlers[:] = before
    monkeypatch.setattr(phases, "function", lambda phase: failing)
    with pytest.raises(phases.JobFailed, match="^a refused row$"):
        phases.run_in_snakemake(job, "ingest")
    text = Path(job.log[0]).read_text()
    assert "a refused row" in text and "Select jobs" not in text
    assert root.handlers == before


def test_a_job_of_the_table_has_its_log_where_the_table_says_and_a_first_attempt():
    chunk = Job.for_rule("search_share", Paths("c.yaml"), Paths("c.csv"), {},
                         wildcards=Paths(search_share="part_0_of_1"))
    assert chunk.log == [layout.job_log("search", "part_0_of_1")]
    assert chunk.resources.attempt == 1 and chunk.threads == 1
    assert (Path(chunk.scriptdir).parent / "Snakefile").is_file()  # the configure phase's
    winners = Job.for_rule("winners", Paths(), Paths(layout.WINNERS), {})
    assert winners.log == [layout.job_log("winners")]
    assert Job.for_rule("optimize", Paths(), Paths(), {}, wildcards=Paths(cfg="A_0"),
                        attempt=2).resources.attempt == 2


def test_a_job_from_snakemakes_object_keeps_what_phases_read():
    smk = types.SimpleNamespace(
        rule="optimize", input=Paths("a.yaml"), output=Paths("b"), config={"x": 1},
        params=Paths(token="t"), wildcards=Paths(cfg="A_0"), log=Paths("logs/optimize/A_0.log"),
        resources=Paths(attempt=3), scriptdir="/s/workflow/scripts", threads=2)
    job = Job.from_snakemake(smk)
    assert (job.rule, job.input, job.output) == ("optimize", ["a.yaml"], ["b"])
    assert job.config == {"x": 1}
    assert job.params.token == "t" and job.wildcards.cfg == "A_0"
    assert job.log == ["logs/optimize/A_0.log"] and job.resources.attempt == 3
    assert (job.scriptdir, job.threads) == ("/s/workflow/scripts", 2)
