"""gemms.csv -> optimizations/<GEMM>_<i>.yaml (TensileLite tuning YAMLs, one set per GEMM
type), their <GEMM>_<i>.sh (runs one job by hand), Config_<GEMM>.log, and the checkpoint's
manifest optimizations/tuning_configs.txt (written last: the configs the tune phase fans out
over)."""
import sys
from pathlib import Path

from .. import files, jobs, platforms
from ..optim.optim import configure_phase
from ..schemas import GemmConfig
from ..campaign import job_scripts, layout
from ..tuning import configure


def run(job):
    platform = platforms.get(job.config)
    out = Path(layout.TUNING_DIR)
    out.mkdir(parents=True, exist_ok=True)
    options = dict(job.params.options, backend=job.params.backend)
    configs = [GemmConfig(gemm_type, [list(s) for s in sizes]) for gemm_type, sizes in
               configure.configs_from_gemms(jobs.read_table(job.input[0]))]
    # the API's configuration phase (optim.configure), with the original's INFO lines
    names = [p.stem for p in configure_phase(platform, configs, out, job.params.arch, options)]
    config = job_scripts.job_config(job.config, Path.cwd(), job.params.workload_kind,
                                    job.params.workload_value)
    job_scripts.write_scripts(names, config, Path.cwd(), sys.executable,
                              Path(job.scriptdir).parent / "Snakefile")
    files.write_text(job.output[0], layout.manifest_text(names))
