"""final_libs/ -> pruned_libs/ + results/prune_report.csv."""
import tempfile
from pathlib import Path

import pandas as pd

from geko_lib import files, jobs, library
from geko_lib.campaign import provenance


def main(smk):
    reports = []
    with files.staged_dir(smk.output.libs) as staging, \
            tempfile.TemporaryDirectory(dir=Path(smk.output.libs).parent) as work, \
            jobs.on_device(smk.config) as (platform, device):
        provenance.check(smk.input[0], smk.config, platform)
        provenance.write(staging, smk.config, platform)
        for name, lib in library.load_dir(smk.input[0]).items():

            def sweep(cluster, name=name):
                path = library.dump(cluster, Path(work) / f"{Path(name).stem}_cluster.yaml")
                return platform.sweep(library.problems_of(cluster), path, Path(work), device)

            pruned, report = library.prune_library(
                lib, sweep, tol=smk.params.tol, scale_tol=smk.params.scale_tol,
                time_limit=smk.params.time_limit)
            library.dump(pruned, staging / name, header=platform.note or None)
            reports.extend({"lib": name, **row} for row in report)
    files.write_csv(smk.output.report, pd.DataFrame(reports))


jobs.run(main, snakemake)  # noqa: F821
