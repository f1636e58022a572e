# gemms.csv -> search/chunks/*.yaml (checkpoint) -> search/data/*.csv -> winners.csv
# (each chunk job also writes search/<GEMM>.yaml/.out; failed GEMMs: search/failed_jobs.log)
# (files, params and resources: geko_lib.campaign.rules)


checkpoint search_configure:
    input:
        **rule_input("search_configure"),
    output:
        **rule_output("search_configure"),
    params:
        **rule_params("search_configure"),
    log:
        rule_log("search_configure"),
    run:
        in_process("search_configure", input, output, params, wildcards, threads, resources, log)


rule search_chunk:
    input:
        **rule_input("search_chunk"),
    output:
        **rule_output("search_chunk"),
    params:
        **rule_params("search_chunk"),
    resources:
        **rule_resources("search_chunk"),
    log:
        rule_log("search_chunk"),
    script:
        rule_script("search_chunk")


rule winners:
    input:
        **rule_input("winners"),
    output:
        **rule_output("winners"),
    log:
        rule_log("winners"),
    run:
        in_process("winners", input, output, params, wildcards, threads, resources, log)
