# winners.csv (search) or tuned 3_LibraryLogic (tune) -> libs/*.yaml -> the loadable library
# (tensile/) and the benchmark inputs of every library
# (files, params and resources: geko_lib.campaign.rules)


checkpoint libs:
    input:
        **rule_input("libs"),
    output:
        **rule_output("libs"),
    log:
        rule_log("libs"),
    run:
        in_process("libs", input, output, params, wildcards, threads, resources, log)


rule create_library:
    input:
        **rule_input("create_library"),
    output:
        **rule_output("create_library"),
    log:
        rule_log("create_library"),
    run:
        in_process("create_library", input, output, params, wildcards, threads, resources, log)


rule bench_input:
    input:
        **rule_input("bench_input"),
    output:
        **rule_output("bench_input"),
    params:
        **rule_params("bench_input"),
    log:
        rule_log("bench_input"),
    run:
        in_process("bench_input", input, output, params, wildcards, threads, resources, log)


rule bench_libs:
    """One job per device over its share of the libraries: each library's default and created
    library timed and checked, stamped as it finishes (a rerun resumes from them)."""
    input:
        **rule_input("bench_libs"),
    output:
        **rule_output("bench_libs"),
    resources:
        **rule_resources("bench_libs"),
    log:
        rule_log("bench_libs"),
    script:
        rule_script("bench_libs")


rule bench_uncompared:
    """keep_thr 0 (no baseline): the default kernel's time of the GEMMs whose job failed, so
    every headline figure is a share of the whole workload's GEMM time."""
    input:
        **rule_input("bench_uncompared"),
    output:
        **rule_output("bench_uncompared"),
    resources:
        **rule_resources("bench_uncompared"),
    log:
        rule_log("bench_uncompared"),
    script:
        rule_script("bench_uncompared")


rule prune_libs:
    """Optional (target `prune`): fewer solutions in final_libs, each size within prune_tol of
    its best among the solutions of its tile cluster, every candidate measured on every size."""
    input:
        **rule_input("prune_libs"),
    output:
        **rule_output("prune_libs"),
    params:
        **rule_params("prune_libs"),
    resources:
        **rule_resources("prune_libs"),
    log:
        rule_log("prune_libs"),
    script:
        rule_script("prune_libs")
