"""search/chunks/<chunk>.yaml of one device's share -> search/data/<chunk>.csv and .failed.yaml
per chunk (stamped as each finishes), search/parts/<share>.csv and .failed.yaml, and per GEMM
search/<GEMM>.yaml (its bench rows) and search/<GEMM>.out (its candidates' results)."""
from geko_lib import phases

phases.run_script(snakemake, "search_share")  # noqa: F821
