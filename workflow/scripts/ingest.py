"""workload source (log, list or inline) -> workload.yaml (canonical rows)."""
import logging

from geko_lib import jobs, workload

READERS = {"log": workload.read, "list": workload.read_list, "inline": workload.read_inline}
# what a reader needs beyond the platform: a --list grid is drawn for the campaign's arch
EXTRA = {"list": lambda config: {"arch": config.get("arch")}}


def main(smk):
    # types the configured platform's library cannot run are refused here, naming file:line:field
    extra = EXTRA.get(smk.params.kind, lambda config: {})(smk.config)
    table = READERS[smk.params.kind](smk.params.value, platform=smk.config.get("platform"),
                                     **extra)
    workload.write(table, smk.output[0])
    logging.getLogger("geko").info("%d workload rows, %d calls", len(table),
                                   int(table["call_count"].sum()))


jobs.run(main, snakemake)  # noqa: F821 (provided by Snakemake)
