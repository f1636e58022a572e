"""libs/ -> tensile/: the library the platform loads for the tuned runs."""
from .. import files, jobs, platforms
from ..campaign import provenance


def run(job):
    platform = platforms.get(job.config)
    provenance.check(job.input[0], job.config, platform)
    with files.staged_dir(job.output[0]) as staging:
        platform.create_library(job.input[0], staging)
        provenance.write(staging, job.config, platform)
