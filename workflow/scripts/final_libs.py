"""results/final_results.csv + libs/ -> final_libs/: only the kept kernels, ready to load."""
import logging
from pathlib import Path

from geko_lib import files, jobs, library, platforms
from geko_lib.campaign import combine, integrity, provenance


def main(smk):
    kept = jobs.read_table(smk.input.final)
    platform = platforms.get(smk.config)
    provenance.check(smk.input.libs, smk.config, platform)
    with files.staged_dir(smk.output[0]) as staging:
        library.ship_kept(smk.input.libs, kept, staging, header=platform.note)
        # it parses and serves exactly the kept rows, each a GEMM of the workload
        integrity.verify_shipped(staging, kept, combine.workload_gemms(smk.input.workload))
        provenance.write(staging, smk.config, platform)
    # the original's last line, which scripts around it look for
    logging.getLogger("geko").info("Final optimized library available in: '%s'",
                                   Path(smk.output[0]).resolve())


jobs.run(main, snakemake)  # noqa: F821
