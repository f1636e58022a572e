"""libs/ -> tensile/: the library the platform loads for the tuned runs."""
from geko_lib import files, jobs, platforms


def main(smk):
    platform = platforms.get(smk.config)
    with files.staged_dir(smk.output[0]) as staging:
        platform.create_library(smk.input[0], staging)


jobs.run(main, snakemake)  # noqa: F821
