# winners.csv (search) or tuned 3_LibraryLogic (tune) -> libs/*.yaml -> the loadable library
# (tensile/) and the benchmark inputs of every library


checkpoint libs:
    input:
        phase_outputs,
    output:
        directory("libs"),
    log:
        "logs/libs.log",
    script:
        "../scripts/extract.py" if MODE == "search" else "../scripts/merge_tuned.py"


rule create_library:
    input:
        "libs",
    output:
        directory("tensile"),
    log:
        "logs/create_library.log",
    script:
        "../scripts/create_library.py"


rule bench_input:
    input:
        "libs/{lib}.yaml",
    output:
        bench="benchmarks/{lib}_bench.yaml",
        verify="benchmarks/{lib}_verify.yaml",
    params:
        duration=config["compare_duration"],
        rotating_mb=config["rotating_mb"],
    log:
        "logs/bench_input/{lib}.log",
    script:
        "../scripts/bench_input.py"


rule bench_reference:
    input:
        rows="benchmarks/{lib}_bench.yaml",
    output:
        "benchmarks/{lib}_bench-reference.csv",
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        "logs/bench_reference/{lib}.log",
    script:
        "../scripts/bench_library.py"


rule bench_tuned:
    input:
        rows="benchmarks/{lib}_bench.yaml",
        library="tensile",
    output:
        "benchmarks/{lib}_bench-tuned.csv",
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        "logs/bench_tuned/{lib}.log",
    script:
        "../scripts/bench_library.py"


rule verify_tuned:
    input:
        rows="benchmarks/{lib}_verify.yaml",
        library="tensile",
    output:
        "benchmarks/{lib}_verify-tuned.csv",
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        "logs/verify_tuned/{lib}.log",
    script:
        "../scripts/verify_library.py"


rule prune_libs:
    """Optional (target `prune`): fewer solutions in final_libs, each size within prune_tol of
    its best among the solutions of its tile cluster, every candidate measured on every size."""
    input:
        "final_libs",
    output:
        libs=directory("pruned_libs"),
        report="results/prune_report.csv",
    params:
        tol=config["prune_tol"],
        scale_tol=config["prune_scale_tol"],
        time_limit=config["prune_time_limit"],
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        "logs/prune.log",
    script:
        "../scripts/prune.py"
