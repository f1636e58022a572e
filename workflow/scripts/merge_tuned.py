"""optimizations/build_*/3_LibraryLogic -> libs/: tuned libraries merged by file name, trimmed,
with epilogues."""
from geko_lib import files, jobs, library, platforms
from geko_lib.campaign import provenance


def main(smk):
    platform = platforms.get(smk.config)
    # a platform whose kernels have no epilogue variants (cuda) gets none added
    epilogues = smk.config["epilogues"] and platforms.capabilities(smk.config).epilogues
    merged = library.merge_solutions("optimizations", epilogues=epilogues,
                                     pattern="build_*/3_LibraryLogic/*.yaml")
    with files.staged_dir(smk.output[0]) as staging:
        library.write_collection(merged, staging, header=platform.note or None)
        provenance.write(staging, smk.config, platform)


jobs.run(main, snakemake)  # noqa: F821
