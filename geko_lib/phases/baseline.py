"""workload.yaml -> baseline/parts/part_<i>_of_<n>.csv: what the application gets today, for
every n-th GEMM starting at i (one part per device, as many as there are GEMMs at most, so the
baseline fans out too and no part is without work)."""
from pathlib import Path

from ..bench.utils import format_benchmark_output
from .. import files, jobs, original_columns, platforms, progress, workload
from ..bench_formats import rows as bench_rows, summary
from ..campaign import progress as campaign_progress


def run(job):
    table = workload.read(job.input[0], support=platforms.gemm_support(None))
    problems = summary.part_problems(workload.problems(table), job.wildcards.part)
    with jobs.on_device(job.config) as (platform, device):
        # progress lines in the job log: the geko command's bar reads them (campaign.progress)
        results = progress.run_with_progress(
            platform.bench, problems, campaign_progress.baseline_label(job.wildcards.part),
            Path(job.output[0]).parent, device,
            duration=bench_rows.baseline_duration(job.config))
    files.write_csv(job.output[0], original_columns.add(results, platform.lib_source))
    # the tool's output as it printed it (rocm), else the table in its layout
    files.write_text(job.output.out, format_benchmark_output(results, platform))
