# gemms.csv -> optimizations/<cfg>.yaml + <cfg>.sh, manifest tuning_configs.txt (checkpoint
# `configure`) -> optimizations/build_<cfg>/3_LibraryLogic (one job per YAML, n_slots per device)
# (files, params, resources and retries: geko_lib.campaign.rules)


checkpoint configure:
    input:
        **rule_input("configure"),
    output:
        **rule_output("configure"),
    params:
        **rule_params("configure"),
    log:
        rule_log("configure"),
    run:
        in_process("configure", input, output, params, wildcards, threads, resources, log)


rule optimize:
    input:
        **rule_input("optimize"),
    output:
        **rule_output("optimize"),
    params:
        **rule_params("optimize"),
    resources:
        **rule_resources("optimize"),
    retries: rule_retries("optimize")
    log:
        rule_log("optimize"),
    script:
        rule_script("optimize")
