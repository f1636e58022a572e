# gemms.csv -> search/chunks/*.yaml (checkpoint) -> search/data/*.csv -> winners.csv
# (each chunk job also writes search/<GEMM>.yaml/.out; failed GEMMs: search/failed_jobs.log)


checkpoint search_configure:
    input:
        gemms=layout.GEMMS,
        summary=layout.SUMMARY,
    output:
        directory(layout.SEARCH_CHUNKS),
    params:
        chunk_size=config["search_chunk_size"],
        duration=config["search_duration"],
        rotating_mb=config["rotating_mb"],
    log:
        layout.rule_log("search_configure"),
    script:
        "../scripts/search_configure.py"


rule search_chunk:
    input:
        layout.SEARCH_CHUNK,
    output:
        data=layout.SEARCH_DATA,
        failed=layout.SEARCH_CHUNK_FAILED,
    params:
        # changes after a run in which GEMMs of the chunk failed, so a rerun tries them again
        # (not with retry off; until they are retired, where retire_after is set: geko_lib.failures)
        failed_runs=lambda wildcards: failures.rerun_token(
            layout.SEARCH_DIR, wildcards.chunk, config["retire_after"],
            config["retry"]),
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        layout.log_pattern("search", "chunk"),
    script:
        "../scripts/search_chunk.py"


rule winners:
    input:
        data=search_chunk_outputs,
        failed=search_chunk_failures,
    output:
        layout.WINNERS,
        processed=layout.SEARCH_PROCESSED,
    log:
        layout.rule_log("winners"),
    script:
        "../scripts/winners.py"
