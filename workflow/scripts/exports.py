"""results/final_results.csv -> exports/: hipBLASLt tuning override file, TunableOp results."""
import logging

import pandas as pd

from geko_lib import gemm, jobs, platforms
from geko_lib.library import exports


def main(smk):
    exports.require_exportable(platforms.capabilities(smk.config), smk.config["platform"])
    settings, log = smk.config["exports"], logging.getLogger("geko")
    winners = exports.winners_from_results(jobs.read_table(smk.input[0]))
    arch = settings["gcn_arch_name"] or smk.config["arch"]
    exports.write_tuning_override(winners, smk.output.override, arch=arch,
                                  version=settings["hipblaslt_version"] or None)
    validators = exports.default_validators(
        arch, hipblaslt_version=settings["hipblaslt_version"] or None,
        torch_version=settings["torch_version"], rocm_version=settings["rocm_version"] or None)
    style = exports.tunableop_style(settings["torch_version"])
    types = [gemm.GemmProblem.from_row(r).type for r in winners.to_dict("records")]
    supported = pd.Series([exports.tunableop_supported(t, style) for t in types],
                          index=winners.index, dtype=bool)
    skipped = int((~supported).sum())
    if skipped:
        log.warning("TunableOp has no GEMM op for %d kept GEMM(s) (fp8, int8, mixed types): "
                    "left out of %s", skipped, smk.output.tunableop)
    exports.write_tunableop(winners[supported], smk.output.tunableop, validators=validators,
                            style=style)


jobs.run(main, snakemake)  # noqa: F821
