"""winners.csv -> libs/*.yaml: library logic holding the winning solutions."""
from geko_lib import files, jobs, platforms
from geko_lib.campaign import provenance
from geko_lib.errors import GekoError


def main(smk):
    winners = jobs.read_table(smk.input[0])
    if winners.empty:
        raise GekoError(f"{smk.input[0]}: no winners (a header and no rows); rerun the search "
                        "(delete this file) instead of building an empty library")
    platform = platforms.get(smk.config)
    with files.staged_dir(smk.output[0]) as staging:
        platform.extract(winners, staging)
        provenance.write(staging, smk.config, platform)


jobs.run(main, snakemake)  # noqa: F821
