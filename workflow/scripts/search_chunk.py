"""search/chunks/<chunk>.yaml -> search/data/<chunk>.csv (every candidate of every GEMM that
ran), search/data/<chunk>.failed.yaml (the GEMMs that failed, retried alone first) and, per GEMM,
search/<GEMM>.yaml (its bench rows) and search/<GEMM>.out (its candidates' results)."""
from geko_lib import phases

phases.run_script(snakemake, "search_chunk")  # noqa: F821
