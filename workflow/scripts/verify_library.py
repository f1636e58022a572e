"""benchmarks/<lib>_verify.yaml -> <lib>_verify-tuned.csv: numerical error of each tuned kernel."""
from geko_lib import phases

phases.run_script(snakemake, "verify_library")  # noqa: F821
