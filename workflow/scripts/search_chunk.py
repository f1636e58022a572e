"""search/chunks/<chunk>.yaml -> search/data/<chunk>.csv: every candidate of every GEMM."""
from pathlib import Path

from geko_lib import files, jobs, progress


def main(smk):
    problems = jobs.problems_in_rows(smk.input[0])
    with jobs.on_device(smk.config) as (platform, device):
        candidates = progress.run_with_progress(
            platform.search, problems, f"search {smk.wildcards.chunk}",
            Path(smk.output[0]).parent, device, duration=smk.config["search_duration"])
    files.write_csv(smk.output[0], candidates)


jobs.run(main, snakemake)  # noqa: F821
