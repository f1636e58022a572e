"""optimizations/<cfg>.yaml -> optimizations/build_<cfg>/3_LibraryLogic on a leased device
slot, supervised: a job whose log stops growing for stall_timeout seconds is killed. A job that
fails its last attempt (1 + tune_retries, or 1 with retry off) is skipped: an empty
3_LibraryLogic, its name in optimizations/failed_jobs.log (geko_lib.failures)."""
from geko_lib import phases

# Triton's compile workers are spawned processes, which re-run this file as "__mp_main__":
# only the job itself may run it.
if __name__ != "__mp_main__":
    phases.run_script(snakemake, "optimize")  # noqa: F821
