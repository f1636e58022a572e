# gemms.csv -> search/chunks/*.yaml (checkpoint) -> search/data/*.csv -> winners.csv


checkpoint search_configure:
    input:
        gemms="gemms.csv",
        summary="summary.csv",
    output:
        directory("search/chunks"),
    params:
        chunk_size=config["search_chunk_size"],
        duration=config["search_duration"],
        rotating_mb=config["rotating_mb"],
    log:
        "logs/search_configure.log",
    script:
        "../scripts/search_configure.py"


rule search_chunk:
    input:
        "search/chunks/{chunk}.yaml",
    output:
        "search/data/{chunk}.csv",
    resources:
        gpu=1,
        runtime=runtime(60),
        mem_mb=mem_mb(4000),
    log:
        "logs/search/{chunk}.log",
    script:
        "../scripts/search_chunk.py"


rule winners:
    input:
        search_chunk_outputs,
    output:
        "winners.csv",
    log:
        "logs/winners.log",
    script:
        "../scripts/winners.py"
