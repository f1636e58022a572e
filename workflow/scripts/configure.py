"""gemms.csv -> optimizations/configs/<GEMM>_<i>.yaml (TensileLite tuning YAMLs, one set per GEMM
type) and optimizations/Config_<GEMM>.log."""
from pathlib import Path

from geko_lib import jobs, platforms
from geko_lib.tuning import configure


def main(smk):
    platform = platforms.get(smk.config)
    out = Path(smk.output[0])
    out.mkdir(parents=True, exist_ok=True)
    options = dict(smk.params.options, backend=smk.params.backend)
    for gemm_type, sizes in configure.configs_from_gemms(jobs.read_table(smk.input[0])):
        platform.configure((gemm_type, sizes), out, smk.params.arch, options)


jobs.run(main, snakemake)  # noqa: F821
