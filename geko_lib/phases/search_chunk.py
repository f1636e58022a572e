"""search/chunks/<chunk>.yaml -> search/data/<chunk>.csv (every candidate of every GEMM that
ran), search/data/<chunk>.failed.yaml (the GEMMs that failed, retried alone first) and, per GEMM,
search/<GEMM>.yaml (its bench rows) and search/<GEMM>.out (its candidates' results). The job
itself is gpu_jobs.search, the API's search.run's too."""
from pathlib import Path

import pandas as pd
import yaml

from ..bench_formats import text as bench_text
from .. import failures, files, gpu_jobs, jobs, progress
from ..campaign import layout
from ..gemm import GemmProblem


def write_gemm_files(rows: list[dict], candidates: pd.DataFrame, platform) -> None:
    """The original's per-GEMM files: search/<GEMM>.yaml and .out."""
    preamble = bench_text.preamble(platform.name, platform.measured)
    by_name = {}
    for row in rows:
        by_name.setdefault(GemmProblem.from_row(row).name, []).append(row)
    names = [GemmProblem.from_row(r).name for r in candidates.to_dict("records")]
    for name, gemm_rows in by_name.items():
        stem = layout.fill(layout.SEARCH_GEMM, gemm=name)
        files.write_text(f"{stem}.yaml", yaml.safe_dump(gemm_rows, sort_keys=False,
                                                        default_flow_style=None, width=5000))
        mine = candidates[[n == name for n in names]]
        if len(mine):
            files.write_text(f"{stem}.out", bench_text.format_results(mine, preamble))


def run(job):
    rows = yaml.safe_load(Path(job.input[0]).read_text()) or []
    chunk = gpu_jobs.SearchChunk(job.wildcards.chunk, tuple(rows),
                                 job.config["search_duration"], job.config["retry"])
    with jobs.on_device(job.config) as (platform, device):
        with progress.Progress(len(chunk.problems()), f"search {chunk.name}",
                               unit="GEMM") as bar:
            candidates, failed = gpu_jobs.search(chunk, platform, device,
                                                 Path(job.output.data).parent,
                                                 progress=bar.update)
            bar.finish()
    write_gemm_files(rows, candidates, platform)
    files.write_csv(job.output.data, candidates)
    files.write_text(job.output.failed, yaml.safe_dump(failed, sort_keys=False))
    failures.record_run(layout.SEARCH_DIR, chunk.name, failed=bool(failed))
