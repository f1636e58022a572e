"""workload source (log, list, inline or model config) -> workload.yaml (canonical rows)."""
import logging

from .. import jobs, platforms, workload
from ..workload import model_config
from ..log_setup import LOGGER

READERS = {"log": workload.read, "list": workload.read_list, "inline": workload.read_inline,
           "model": workload.read_model}
# what a reader needs beyond the platform and arch: a model's GEMMs are drawn for its
# tensor-parallel degree, token counts, weights and dtype
EXTRA = {"model": model_config.options}


def run(job):
    # GEMMs the configured platform cannot run (its library's types, its devices' sizes) or
    # of types the campaign's arch cannot are refused here, naming file:line:field (the arch
    # also sizes a --list grid)
    extra = EXTRA.get(job.params.kind, lambda config: {})(job.config)
    support = platforms.gemm_support(job.config.get("platform"))
    table = READERS[job.params.kind](job.params.value, support=support,
                                     arch=job.config.get("arch"), **extra)
    workload.write(table, job.output[0])
    logging.getLogger(LOGGER).info("%d workload rows, %d calls", len(table),
                                   int(table["call_count"].sum()))
