# gemms.csv -> search/chunks/*.yaml (checkpoint) -> search/parts/<share>.csv (one job per
# device over its share of the chunks, each chunk's search/data/<chunk>.csv stamped as it
# finishes) -> winners.csv (each job also writes search/<GEMM>.yaml/.out; failed GEMMs:
# search/failed_jobs.log)
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


rule search_share:
    input:
        **rule_input("search_share"),
    output:
        **rule_output("search_share"),
    params:
        **rule_params("search_share"),
    resources:
        **rule_resources("search_share"),
    log:
        rule_log("search_share"),
    script:
        rule_script("search_share")


rule winners:
    input:
        **rule_input("winners"),
    output:
        **rule_output("winners"),
    log:
        rule_log("winners"),
    run:
        in_process("winners", input, output, params, wildcards, threads, resources, log)
