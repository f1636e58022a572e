"""search/parts/*.csv -> winners.csv: the fastest candidate of every GEMM; the GEMMs whose
search failed (search/parts/*.failed.yaml) -> search/failed_jobs.log and
search/failed_gemms.yaml (failures.write_failure_files, as search.run writes them), skipped;
the GEMMs searched -> search/processed.csv (search.write_processed, as search.run)."""
from pathlib import Path

import pandas as pd

from .. import failures, files, jobs, original_columns, search
from ..campaign import layout
from ..errors import GekoError


def run(job):
    frames = [jobs.read_table(p) for p in job.input.data]
    candidates = pd.concat([f for f in frames if len(f)] or frames, ignore_index=True)
    failed = [entry for path in job.input.failed
              for entry in files.load_yaml(Path(path).read_text()) or []]
    failed_log = Path(layout.SEARCH_FAILED)
    failures.write_failure_files(failed_log.parent, failed)
    search.write_processed(failed_log.parent, candidates)
    winners = search.winners(candidates)
    if winners.empty:  # an empty library would only fail later, far from the cause
        raise GekoError(f"{job.output[0]}: no GEMM has a winning kernel: the dense search failed "
                        f"for all {len(failed)} GEMM(s) (see {failed_log}); nothing to ship")
    files.write_csv(job.output[0], original_columns.add(winners))
