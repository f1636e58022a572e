"""libs/ -> tensile/: the library the platform loads for the tuned runs."""
from geko_lib import phases

phases.run_script(snakemake, "create_library")  # noqa: F821
