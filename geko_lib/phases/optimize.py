"""optimizations/<cfg>.yaml -> optimizations/build_<cfg>/3_LibraryLogic: the workflow's door to
the tuning job (geko_lib.gpu_jobs: supervision, attempts, retirement, failure streak, skipping,
failed_jobs.log and running_jobs.log). Here only what is the workflow's own: the job's files as
the rule table names them, Snakemake's attempt, and a device slot leased inside the job."""
from pathlib import Path

from .. import gpu_jobs, jobs
from ..campaign import layout


def run(job):
    config = job.config
    gpu_jobs.tune(gpu_jobs.TuningJob(
        tuning_yaml=Path(job.input[0]), build=Path(job.output[0]).parent,
        tuning_dir=Path(layout.TUNING_DIR), log=Path(job.log[0]), config=config,
        attempt=job.resources.attempt),
        lambda: jobs.on_lease(config, n_slots=config["n_slots"]))
