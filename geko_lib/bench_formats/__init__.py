"""The benchmark files every platform and phase shares, below the bench API (``geko_lib.bench``)
that runs them: the hipblaslt-bench YAML rows of a search or baseline (``rows``), result tables
as hipblaslt-bench prints them (``text``, the ``.out`` files) and the per-GEMM share of
workload time (``summary``, ``summary.csv``)."""
