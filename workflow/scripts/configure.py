"""gemms.csv -> optimizations/<GEMM>_<i>.yaml (TensileLite tuning YAMLs, one set per GEMM
type), their <GEMM>_<i>.sh (runs one job by hand), Config_<GEMM>.log, and the checkpoint's
manifest optimizations/tuning_configs.txt (written last: the configs the tune phase fans out
over)."""
import sys
from pathlib import Path

from geko_lib import files, jobs, platforms
from geko_lib.tuning import job_scripts
from geko_lib.campaign import layout
from geko_lib.tuning import configure


def main(smk):
    platform = platforms.get(smk.config)
    out = Path(layout.TUNING_DIR)
    out.mkdir(parents=True, exist_ok=True)
    options = dict(smk.params.options, backend=smk.params.backend)
    names = []
    for gemm_type, sizes in configure.configs_from_gemms(jobs.read_table(smk.input[0])):
        names += [p.stem for p in platform.configure((gemm_type, sizes), out, smk.params.arch,
                                                      options)]
    config = job_scripts.job_config(smk.config, Path.cwd(), smk.params.workload_kind,
                                    smk.params.workload_value)
    job_scripts.write_scripts(names, config, Path.cwd(), sys.executable,
                              Path(smk.scriptdir).parent / "Snakefile")
    files.write_text(smk.output[0], layout.manifest_text(names))


jobs.run(main, snakemake)  # noqa: F821
