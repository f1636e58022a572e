"""optimizations/build_*/3_LibraryLogic -> libs/: tuned libraries merged by file name, trimmed,
with epilogues."""
from .. import files, jobs, library, platforms
from ..campaign import provenance


def run(job):
    platform = platforms.get(job.config)
    # a platform whose kernels have no epilogue variants (cuda) gets none added
    epilogues = job.config["epilogues"] and platforms.capabilities(job.config).epilogues
    merged = library.merge_solutions("optimizations", epilogues=epilogues,
                                     pattern="build_*/3_LibraryLogic/*.yaml")
    with files.staged_dir(job.output[0]) as staging:
        library.write_collection(merged, staging, header=platform.note or None)
        provenance.write(staging, job.config, platform)
