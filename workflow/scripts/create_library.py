"""libs/ -> tensile/: the library the platform loads for the tuned runs."""
from geko_lib import files, jobs, platforms
from geko_lib.campaign import provenance


def main(smk):
    platform = platforms.get(smk.config)
    provenance.check(smk.input[0], smk.config, platform)
    with files.staged_dir(smk.output[0]) as staging:
        platform.create_library(smk.input[0], staging)
        provenance.write(staging, smk.config, platform)


jobs.run(main, snakemake)  # noqa: F821
