# reference vs tuned -> results/ (raw, final, metrics.json) -> what ships: final_libs/,
# full_libs/ and the integration exports
# (files, params and resources: geko_lib.campaign.rules)


rule analyze:
    input:
        **rule_input("analyze"),
    output:
        **rule_output("analyze"),
    params:
        **rule_params("analyze"),
    log:
        rule_log("analyze"),
    run:
        in_process("analyze", input, output, params, wildcards, threads, resources, log)


rule ship_final_libs:
    input:
        **rule_input("ship_final_libs"),
    output:
        **rule_output("ship_final_libs"),
    log:
        rule_log("ship_final_libs"),
    run:
        in_process("ship_final_libs", input, output, params, wildcards, threads, resources, log)


rule ship_full_libs:
    input:
        **rule_input("ship_full_libs"),
    output:
        **rule_output("ship_full_libs"),
    log:
        rule_log("ship_full_libs"),
    run:
        in_process("ship_full_libs", input, output, params, wildcards, threads, resources, log)


rule exports:
    """What applications load without rebuilding a library: a hipBLASLt tuning override file,
    a PyTorch TunableOp results file and, where the platform's rows are real hipBLASLt
    solutions (rocm), aiter's tuned-GEMM CSV, for the kept GEMMs."""
    input:
        **rule_input("exports"),
    output:
        **rule_output("exports"),
    log:
        rule_log("exports"),
    run:
        in_process("exports", input, output, params, wildcards, threads, resources, log)


rule combine_libs:
    """Optional (target `combine`): per GEMM the fastest verified kernel of this campaign's
    final_libs, the combine_with campaigns' and the platform's default, raced side by side."""
    input:
        **rule_input("combine_libs"),
    output:
        **rule_output("combine_libs"),
    params:
        **rule_params("combine_libs"),
    resources:
        **rule_resources("combine_libs"),
    log:
        rule_log("combine_libs"),
    script:
        rule_script("combine_libs")
