"""search/chunks/<chunk>.yaml -> search/data/<chunk>.csv (every candidate of every GEMM that
ran), search/data/<chunk>.failed.yaml (the GEMMs that failed, retried alone first) and, per GEMM,
search/<GEMM>.yaml (its bench rows) and search/<GEMM>.out (its candidates' results)."""
from pathlib import Path

import pandas as pd
import yaml

from ..bench_formats import text as bench_text
from .. import failures, files, jobs, original_columns, progress
from ..campaign import layout
from ..gemm import GemmProblem
from ..platforms import RESULT_COLUMNS


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
    problems = jobs.problems_in_rows(job.input[0])
    out_dir = Path(job.output.data).parent
    with jobs.on_device(job.config) as (platform, device):
        with progress.Progress(len(problems), f"search {job.wildcards.chunk}",
                               unit="GEMM") as bar:
            def search(items):
                # per-GEMM progress on the whole chunk; a retry of one GEMM counts at the end
                whole = len(items) == len(problems) and progress.accepts_progress(platform.search)
                return platform.search(items, out_dir, device,
                                       duration=job.config["search_duration"],
                                       **({"progress": bar.update} if whole else {}))

            results, failed = failures.run_with_retry(search, problems, lambda p: p.name,
                                                      job.config["retry"])
            bar.finish()
    frames = [r for r in results if len(r)]
    candidates = pd.concat(frames, ignore_index=True) if frames else \
        pd.DataFrame(columns=list(RESULT_COLUMNS))
    write_gemm_files(rows, candidates, platform)
    files.write_csv(job.output.data, original_columns.add(candidates, platform.lib_source))
    failed = failures.with_rows(failed, rows, lambda row: GemmProblem.from_row(row).name)
    files.write_text(job.output.failed, yaml.safe_dump(failed, sort_keys=False))
    failures.record_run(layout.SEARCH_DIR, job.wildcards.chunk, failed=bool(failed))
