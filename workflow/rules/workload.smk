# workload source -> workload.yaml -> baseline timings -> summary.csv, gemms.csv


rule ingest:
    input:
        [] if WORKLOAD_KIND == "inline" else [WORKLOAD_VALUE],
    output:
        "workload.yaml",
    params:
        kind=WORKLOAD_KIND,
        value=WORKLOAD_VALUE,
    log:
        "logs/ingest.log",
    script:
        "../scripts/ingest.py"


rule baseline:
    input:
        "workload.yaml",
    output:
        "baseline/workload.csv",
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        "logs/baseline.log",
    script:
        "../scripts/baseline.py"


rule summarize:
    input:
        workload="workload.yaml",
        baseline=["baseline/workload.csv"] if config["keep_thr"] > 0 else [],
    output:
        summary="summary.csv",
        gemms="gemms.csv",
    params:
        keep_thr=config["keep_thr"],
    log:
        "logs/summarize.log",
    script:
        "../scripts/summarize.py"
