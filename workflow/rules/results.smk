# reference vs tuned -> results/ (raw, final, metrics.json) -> what ships: final_libs/,
# full_libs/ and the integration exports


rule analyze:
    input:
        reference=per_library("benchmarks/{lib}_bench-reference.csv"),
        tuned=per_library("benchmarks/{lib}_bench-tuned.csv"),
        verify=per_library("benchmarks/{lib}_verify-tuned.csv") if config["verify"] else [],
        summary="summary.csv",
    output:
        raw="results/raw_results.csv",
        final="results/final_results.csv",
        dashboard=layout.DASHBOARD,
        metrics="results/metrics.json",
    params:
        up_thr=config["up_thr"],
        err_thr=config["err_thr"],
    log:
        "logs/analyze.log",
    script:
        "../scripts/analyze.py"


rule ship_final_libs:
    input:
        final="results/final_results.csv",
        libs="libs",
        workload=layout.WORKLOAD,
    output:
        directory("final_libs"),
    log:
        "logs/final_libs.log",
    script:
        "../scripts/final_libs.py"


rule ship_full_libs:
    input:
        raw="results/raw_results.csv",
        libs="libs",
    output:
        directory("full_libs"),
    log:
        "logs/full_libs.log",
    script:
        "../scripts/full_libs.py"


rule exports:
    """What applications load without rebuilding a library: a hipBLASLt tuning override file,
    a PyTorch TunableOp results file and, where the platform's rows are real hipBLASLt
    solutions (rocm), aiter's tuned-GEMM CSV, for the kept GEMMs."""
    input:
        "results/final_results.csv",
        **export_sources(),
    output:
        override="exports/hipblaslt_tuning_override.txt",
        tunableop="exports/tunableop_results.csv",
        library_index="exports/library_index.json",
        **aiter_export(),
    log:
        "logs/exports.log",
    script:
        "../scripts/exports.py"


rule combine_libs:
    """Optional (target `combine`): per GEMM the fastest verified kernel of this campaign's
    final_libs, the combine_with campaigns' and the platform's default, raced side by side."""
    input:
        final=layout.FINAL_LIBS,
        workload=layout.WORKLOAD,
        others=combine_sources(),
    output:
        libs=directory(layout.COMBINED_LIBS),
        results=layout.COMBINED_RESULTS,
    params:
        up_thr=config["up_thr"],
        err_thr=config["err_thr"],
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(8000),
    log:
        layout.rule_log("combine_libs"),
    script:
        "../scripts/combine.py"
