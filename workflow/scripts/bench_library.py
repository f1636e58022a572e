"""benchmarks/<lib>_bench.yaml -> <lib>_bench-reference.csv (default library) or
<lib>_bench-tuned.csv (with the created library)."""
from pathlib import Path

from geko_lib import files, jobs, original_columns, platforms
from geko_lib.campaign import provenance


def main(smk):
    problems = jobs.problems_in_rows(smk.input.rows)
    library = smk.input.get("library")
    if library:
        provenance.check(library, smk.config, platforms.get(smk.config))
    with jobs.on_device(smk.config) as (platform, device):
        results = platform.bench(problems, Path(smk.output[0]).parent, device, library=library,
                                 duration=smk.config["compare_duration"])
    results["lib"] = f"{smk.wildcards.lib}.yaml"
    # the vendor's own solutions (the reference run) are found in its MatchTable
    files.write_csv(smk.output[0], original_columns.add(
        results, None if library else platform.lib_source))


jobs.run(main, snakemake)  # noqa: F821
