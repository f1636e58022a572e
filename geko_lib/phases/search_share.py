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
from ..gemm import GEMM_FIELDS, GemmProblem

# what a row's GEMM name is made of (GemmProblem.from_row reads M/N/K where m/n/k are not)
GEMM_KEY_FIELDS = GEMM_FIELDS + ("M", "N", "K")


def write_gemm_files(rows: list[dict], candidates: pd.DataFrame, platform) -> None:
    """The original's per-GEMM files: search/<GEMM>.yaml and .out."""
    preamble = bench_text.preamble(platform.name, platform.measured)
    candidates_of = by_gemm_name(bench_text.table_rows(candidates))
    for name, gemm_rows in by_gemm_name(rows).items():
        stem = layout.fill(layout.SEARCH_GEMM, gemm=name)
        files.write_text(f"{stem}.yaml", yaml.safe_dump(gemm_rows, sort_keys=False,
                                                        default_flow_style=None, width=5000))
        if name in candidates_of:
            files.write_text(f"{stem}.out",
                             bench_text.format_rows(candidates_of[name], preamble))


def by_gemm_name(rows: list[dict]) -> dict[str, list[dict]]:
    """{GEMM name: its rows, in order}, each distinct GEMM's name made once."""
    names, out = {}, {}
    for row in rows:
        key = tuple(row.get(c) for c in GEMM_KEY_FIELDS)
        if key not in names:
            names[key] = GemmProblem.from_row(row).name
        out.setdefault(names[key], []).append(row)
    return out


def run(job):
    duration, retry = job.config["search_duration"], job.config["retry"]
    chunks = []
    for path in job.input.chunks:
        where = gpu_jobs.ChunkFiles(Path(path))
        rows = files.load_yaml(where.source.read_text()) or []
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
