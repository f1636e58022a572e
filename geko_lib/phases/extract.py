"""winners.csv -> libs/*.yaml: library logic holding the winning solutions."""
from .. import files, jobs, platforms
from ..campaign import provenance
from ..errors import GekoError


def run(job):
    winners = jobs.read_table(job.input[0])
    if winners.empty:
        raise GekoError(f"{job.input[0]}: no winners (a header and no rows); rerun the search "
                        "(delete this file) instead of building an empty library")
    platform = platforms.get(job.config)
    with files.staged_dir(job.output[0]) as staging:
        platform.extract(winners, staging)
        provenance.write(staging, job.config, platform)
