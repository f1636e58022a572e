"""benchmarks/<lib>_verify.yaml -> <lib>_verify-tuned.csv: numerical error of each tuned kernel."""
from pathlib import Path

from geko_lib import files, jobs, original_columns, progress


def main(smk):
    problems = jobs.problems_in_rows(smk.input.rows)
    with jobs.on_device(smk.config) as (platform, device):
        results = progress.run_with_progress(
            platform.verify, problems, f"verify {smk.wildcards.lib}",
            Path(smk.output[0]).parent, device, library=smk.input.library)
    results["lib"] = f"{smk.wildcards.lib}.yaml"
    files.write_csv(smk.output[0], original_columns.add(results))


jobs.run(main, snakemake)  # noqa: F821
