"""optimizations/configs/<cfg>.yaml -> optimizations/build_<cfg>/3_LibraryLogic on a leased
device slot, supervised: a job whose log stops growing for stall_timeout seconds is killed."""
import logging
from pathlib import Path

from geko_lib import jobs
from geko_lib.tuning import optimize


def main(smk):
    config, name = smk.config, smk.wildcards.cfg
    build = Path(smk.output[0]).parent
    streak = optimize.FailureStreak(build.parent, config["max_consecutive_failures"])
    streak.check()
    state = optimize.build_state(build)
    if state in ("failed", "resumable"):
        logging.getLogger("geko").info("%s: %s build dir, retrying%s", name, state,
                                       " from its checkpoint" if state == "resumable" else "")
        optimize.clean_for_retry(build)
    build.mkdir(parents=True, exist_ok=True)

    def work():
        with jobs.on_device(config, n_slots=config["n_slots"]) as (platform, device):
            platform.optimize(Path(smk.input[0]), build, device)

    try:
        jobs.supervise(work, smk.log[0], config["stall_timeout"])
    except Exception:
        optimize.bump_failcount(build)
        streak.failed(name)
        raise
    streak.succeeded(name)


# Triton's compile workers are spawned processes, which re-run this file as "__mp_main__":
# only the job itself may run it.
if __name__ != "__mp_main__":
    jobs.run(main, snakemake)  # noqa: F821
