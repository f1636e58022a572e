# gemms.csv -> optimizations/<cfg>.yaml + <cfg>.sh, manifest tuning_configs.txt (checkpoint
# `configure`) -> optimizations/build_<cfg>/3_LibraryLogic (one job per YAML, n_slots per device)


checkpoint configure:
    input:
        layout.GEMMS,
    output:
        layout.TUNING_MANIFEST,
    params:
        arch=config["arch"],
        backend=config["backend"],
        options=config["tune_options"],
        # what the <cfg>.sh scripts need to run a job from the workdir
        workload_kind=WORKLOAD_KIND,
        workload_value=WORKLOAD_VALUE,
    log:
        layout.rule_log("configure"),
    script:
        "../scripts/configure.py"


rule optimize:
    input:
        layout.TUNING_YAML,
    output:
        directory(layout.BUILD_LOGIC),
    params:
        # changes after a run in which the job failed, so a rerun tries it again (not with
        # retry off; until it is retired, where retire_after is set: geko_lib.failures)
        failed_runs=lambda wildcards: failures.rerun_token(
            layout.TUNING_DIR, wildcards.cfg, config["retire_after"],
            config["retry"]),
    resources:
        gpu_slot=1,
        runtime=runtime(240),
        mem_mb=mem_mb(8000),
        attempt=lambda wildcards, attempt: attempt,  # the job skips itself after the last one
    retries: config["tune_retries"] if config["retry"] else 0
    log:
        layout.log_pattern("optimize", "cfg"),
    script:
        "../scripts/optimize.py"
