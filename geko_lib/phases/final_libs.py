"""results/final_results.csv + libs/ -> final_libs/: only the kept kernels, ready to load."""
import logging
from pathlib import Path

from .. import files, jobs, library, platforms, terminal
from ..campaign import combine, integrity, provenance
from ..log_setup import LOGGER


def run(job):
    kept = jobs.read_table(job.input.final)
    platform = platforms.get(job.config)
    provenance.check(job.input.libs, job.config, platform)
    with files.staged_dir(job.output[0]) as staging:
        library.ship_kept(job.input.libs, kept, staging, header=platform.note)
        # it parses and serves exactly the kept rows, each a GEMM of the workload
        integrity.verify_shipped(staging, kept, combine.workload_gemms(job.input.workload))
        provenance.write(staging, job.config, platform)
    # the original's last line, which scripts around it look for
    logging.getLogger(LOGGER).info(terminal.final_library_line(job.config["mode"],
                                                               Path(job.output[0]).resolve()))
