"""baseline/parts/*.csv -> baseline/workload.csv: the parts' rows back in workload order; and the
original's updated benchmark log <log>.yaml with its results <log>.out in the workdir."""
from geko_lib import phases

phases.run_script(snakemake, "baseline_merge")  # noqa: F821
