# workload source -> workload.yaml (checkpoint) -> baseline timings -> summary.csv, gemms.csv
# (files, params and resources: geko_lib.campaign.rules)


# a checkpoint: how many baseline parts there are depends on how many GEMMs it wrote
checkpoint ingest:
    input:
        **rule_input("ingest"),
    output:
        **rule_output("ingest"),
    params:
        **rule_params("ingest"),
    log:
        rule_log("ingest"),
    script:
        rule_script("ingest")


rule baseline_part:
    input:
        **rule_input("baseline_part"),
    output:
        **rule_output("baseline_part"),
    params:
        **rule_params("baseline_part"),
    resources:
        **rule_resources("baseline_part"),
    log:
        rule_log("baseline_part"),
    script:
        rule_script("baseline_part")


rule baseline:
    input:
        **rule_input("baseline"),
    output:
        **rule_output("baseline"),
    params:
        **rule_params("baseline"),
    log:
        rule_log("baseline"),
    run:
        in_process("baseline", input, output, params, wildcards, threads, resources, log)


rule summarize:
    input:
        **rule_input("summarize"),
    output:
        **rule_output("summarize"),
    params:
        **rule_params("summarize"),
    log:
        rule_log("summarize"),
    run:
        in_process("summarize", input, output, params, wildcards, threads, resources, log)
