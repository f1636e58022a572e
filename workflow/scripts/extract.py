"""winners.csv -> libs/*.yaml: library logic holding the winning solutions."""
from geko_lib import files, jobs, platforms, provenance


def main(smk):
    winners = jobs.read_table(smk.input[0])
    platform = platforms.get(smk.config)
    with files.staged_dir(smk.output[0]) as staging:
        platform.extract(winners, staging)
        provenance.write(staging, smk.config, platform)


jobs.run(main, snakemake)  # noqa: F821
