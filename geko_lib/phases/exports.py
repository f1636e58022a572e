"""results/final_results.csv -> exports/: hipBLASLt tuning override file, TunableOp results,
aiter's tuned-GEMM CSV (where the platform lists it: rocm)."""
import logging

import pandas as pd

from .. import gemm, jobs, platforms
from ..library import exports
from ..platforms.archs import ARCHS
from ..log_setup import LOGGER


def run(job):
    exports.require_exportable(platforms.capabilities(job.config), job.config["platform"])
    settings, log = job.config["exports"], logging.getLogger(LOGGER)
    winners = exports.winners_from_results(jobs.read_table(job.input[0]))
    arch = settings["gcn_arch_name"] or job.config["arch"]
    exports.write_tuning_override(winners, job.output.override, arch=arch,
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
                    "left out of %s", skipped, job.output.tunableop)
    exports.write_tunableop(winners[supported], job.output.tunableop, validators=validators,
                            style=style)
    aiter = getattr(job.output, "aiter", None)  # declared where the platform lists the format
    if aiter is None:
        log.info("no aiter tuned CSV: platform %s has no hipBLASLt solution indices a runtime "
                 "could dispatch to", job.config["platform"])
        return
    target = ARCHS[job.config["arch"]]  # the lookup key: the GPU the campaign ran on
    left_out = exports.write_aiter_tuned(winners, aiter, gfx=target.model, cu_num=target.cus)
    if left_out:
        log.warning("aiter's table keys F.linear calls only (T N, batch 1, f32 accumulation): "
                    "%d kept GEMM(s) left out of %s", left_out, aiter)
