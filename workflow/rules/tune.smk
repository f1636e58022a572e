# gemms.csv -> optimizations/configs/*.yaml (checkpoint `configure`) ->
# optimizations/build_<cfg>/3_LibraryLogic (one job per YAML, n_slots jobs per device)


checkpoint configure:
    input:
        "gemms.csv",
    output:
        directory("optimizations/configs"),
    params:
        arch=config["arch"],
        backend=config["backend"],
        options=config["tune_options"],
    log:
        "logs/configure.log",
    script:
        "../scripts/configure.py"


rule optimize:
    input:
        "optimizations/configs/{cfg}.yaml",
    output:
        directory("optimizations/build_{cfg}/3_LibraryLogic"),
    resources:
        gpu_slot=1,
        runtime=runtime(240),
        mem_mb=mem_mb(8000),
    retries: config["tune_retries"]
    log:
        "logs/optimize/{cfg}.log",
    script:
        "../scripts/optimize.py"
