"""search/chunks/<chunk>.yaml of one device's share of the chunks -> per chunk
search/data/<chunk>.csv (every candidate of every GEMM that ran) and
search/data/<chunk>.failed.yaml (the GEMMs that failed, retried alone first), stamped as the
chunk finishes; per GEMM search/<GEMM>.yaml (its bench rows) and search/<GEMM>.out (its
candidates' results); and the share's tables in one (search/parts/<share>.csv and
.failed.yaml), what the winners read. The job is gpu_jobs.search_share over gpu_jobs.search,
the API's search.run's chunk body too: a rerun redoes only the chunks without a current stamp
or with failed GEMMs."""
from pathlib import Path

import pandas as pd
import yaml

from ..bench_formats import text as bench_text
from .. import failures, files, gpu_jobs, jobs
from ..campaign import integrity, layout, state as campaign_state
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
    duration, retry = job.config["search_duration"], job.config["retry"]
    chunks = []
    for path in job.input.chunks:
        where = gpu_jobs.ChunkFiles(Path(path))
        rows = yaml.safe_load(where.source.read_text()) or []
        chunks.append((gpu_jobs.SearchChunk(where.name, tuple(rows), duration, retry), where))
    campaign = campaign_state.identity(job.config)

    def expected(path):
        return integrity.expected_provenance(campaign, job.config["mode"], path)

    with jobs.on_device(job.config) as (platform, device):
        found, failed = gpu_jobs.search_share(
            chunks, platform, device, expected,
            lambda chunk, candidates: write_gemm_files(list(chunk.rows), candidates, platform))
    frames = [frame for frame in found if len(frame)]
    files.write_csv(job.output.data, pd.concat(frames, ignore_index=True) if frames else found[0])
    files.write_text(job.output.failed, yaml.safe_dump(failed, sort_keys=False))
    failures.record_run(layout.SEARCH_DIR, job.wildcards.search_share, failed=bool(failed))
