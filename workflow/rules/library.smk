# winners.csv (search) or tuned 3_LibraryLogic (tune) -> libs/*.yaml -> the loadable library
# (tensile/) and the benchmark inputs of every library


checkpoint libs:
    input:
        phase_outputs,
    output:
        directory(layout.LIBS),
    log:
        layout.rule_log("libs"),
    script:
        "../scripts/extract.py" if MODE == "search" else "../scripts/merge_tuned.py"


rule create_library:
    input:
        layout.LIBS,
    output:
        directory(layout.TENSILE),
    log:
        layout.rule_log("create_library"),
    script:
        "../scripts/create_library.py"


rule bench_input:
    input:
        layout.LIB_LOGIC,
    output:
        bench=layout.BENCH_INPUT,
        verify=layout.VERIFY_INPUT,
    params:
        duration=config["compare_duration"],
        rotating_mb=config["rotating_mb"],
    log:
        layout.log_pattern("bench_input", "lib"),
    script:
        "../scripts/bench_input.py"


rule bench_reference:
    input:
        rows=layout.BENCH_INPUT,
    output:
        layout.BENCH_REFERENCE,
        out=str(bench_text.out_beside(layout.BENCH_REFERENCE)),
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        layout.log_pattern("bench_reference", "lib"),
    script:
        "../scripts/bench_library.py"


rule bench_tuned:
    input:
        rows=layout.BENCH_INPUT,
        library=layout.TENSILE,
    output:
        layout.BENCH_TUNED,
        out=str(bench_text.out_beside(layout.BENCH_TUNED)),
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        layout.log_pattern("bench_tuned", "lib"),
    script:
        "../scripts/bench_library.py"


rule verify_tuned:
    input:
        rows=layout.VERIFY_INPUT,
        library=layout.TENSILE,
    output:
        layout.VERIFY_TUNED,
        out=str(bench_text.out_beside(layout.VERIFY_TUNED)),
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        layout.log_pattern("verify_tuned", "lib"),
    script:
        "../scripts/verify_library.py"


rule prune_libs:
    """Optional (target `prune`): fewer solutions in final_libs, each size within prune_tol of
    its best among the solutions of its tile cluster, every candidate measured on every size."""
    input:
        layout.FINAL_LIBS,
    output:
        libs=directory(layout.PRUNED_LIBS),
        report=layout.PRUNE_REPORT,
    params:
        tol=config["prune_tol"],
        scale_tol=config["prune_scale_tol"],
        time_limit=config["prune_time_limit"],
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        layout.rule_log("prune_libs"),
    script:
        "../scripts/prune.py"
