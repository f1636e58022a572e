# workload source -> workload.yaml (checkpoint) -> baseline timings -> summary.csv, gemms.csv


# a checkpoint: how many baseline parts there are depends on how many GEMMs it wrote
checkpoint ingest:
    input:
        [] if WORKLOAD_KIND == "inline" else [WORKLOAD_VALUE],
    output:
        "workload.yaml",
    params:
        kind=WORKLOAD_KIND,
        value=WORKLOAD_VALUE,
        # a model's GEMMs depend on these too: a change re-runs the ingest
        options=workload.model_config.options(config) if WORKLOAD_KIND == "model" else {},
    log:
        "logs/ingest.log",
    script:
        "../scripts/ingest.py"


# The baseline fans out like the search: one part per device, but never more parts than GEMMs
# (a part without work would be a GPU job benchmarking nothing), GEMMs dealt round-robin,
# merged in workload order.
def baseline_parts(wildcards):
    checkpoints.ingest.get()
    parts = layout.Layout(".").baseline_parts(len(config["devices"]))  # jobs run in the workdir
    return expand(layout.BASELINE_PART, part=parts)


def baseline_part_outs(wildcards):
    """The parts' .out files (the tool's output as printed, beside each part's table)."""
    return [str(bench_text.out_beside(p)) for p in baseline_parts(wildcards)]


rule baseline_part:
    input:
        "workload.yaml",
    output:
        layout.BASELINE_PART,
        out=str(bench_text.out_beside(layout.BASELINE_PART)),
    params:
        # --bench times for bench_duration, the search/tune baseline with fixed iterations
        timing=config["bench_timing"],
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        "logs/baseline/{part}.log",
    script:
        "../scripts/baseline.py"


BENCH_STEM = layout.benchmark_stem(WORKLOAD_KIND, WORKLOAD_VALUE)


rule baseline:
    input:
        workload="workload.yaml",
        parts=baseline_parts,
        part_outs=baseline_part_outs,
    output:
        table="baseline/workload.csv",
        # the original's updated benchmark log and its results (geko_lib.bench.benchmark_log)
        bench_log=layout.fill(layout.BENCH_LOG, stem=BENCH_STEM),
        bench_out=layout.fill(layout.BENCH_OUT, stem=BENCH_STEM),
    params:
        duration=bench_rows.baseline_duration(config),
        rotating_mb=config["rotating_mb"],
    log:
        "logs/baseline.log",
    script:
        "../scripts/baseline_merge.py"


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
