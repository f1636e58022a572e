"""final_libs/ -> pruned_libs/ + results/prune_report.csv."""
import tempfile
from pathlib import Path

import pandas as pd

from .. import files, jobs, library
from ..campaign import provenance


def run(job):
    reports = []
    with files.staged_dir(job.output.libs) as staging, \
            tempfile.TemporaryDirectory(dir=Path(job.output.libs).parent) as work, \
            jobs.on_device(job.config) as (platform, device):
        provenance.check(job.input[0], job.config, platform)
        provenance.write(staging, job.config, platform)
        for name, lib in library.load_dir(job.input[0]).items():

            def sweep(cluster, name=name):
                path = library.dump(cluster, Path(work) / f"{Path(name).stem}_cluster.yaml")
                return platform.sweep(library.problems_of(cluster), path, Path(work), device)

            pruned, report = library.prune_library(
                lib, sweep, tol=job.params.tol, scale_tol=job.params.scale_tol,
                time_limit=job.params.time_limit)
            library.dump(pruned, staging / name, header=platform.note or None)
            reports.extend({"lib": name, **row} for row in report)
    files.write_csv(job.output.report, pd.DataFrame(reports))
