"""workload source (log, list or inline) -> workload.yaml (canonical rows)."""
from geko_lib import phases

phases.run_script(snakemake, "ingest")  # noqa: F821
