"""bench/campaign_times.py reads where a campaign's time went from Snakemake's own log."""

from tests.conftest import load_bench

# the form Snakemake 9 writes (an excerpt of a sim search campaign's log)
LOG = """\
Execute 1 jobs...
[Sat Dec  5 23:22:33 2026]
localcheckpoint ingest:
    input: workload_log.yaml
    output: workload.yaml
    jobid: 7
[Sat Dec  5 23:22:35 2026]
Finished jobid: 7 (Rule: ingest)
[Sat Dec  5 23:22:35 2026]
rule search_chunk:
    jobid: 20
    wildcards: chunk=0
[Sat Dec  5 23:22:36 2026]
rule search_chunk:
    jobid: 21
    wildcards: chunk=1
[Sat Dec  5 23:22:41 2026]
Finished jobid: 20 (Rule: search_chunk)
[Sat Dec  5 23:22:44 2026]
Finished jobid: 21 (Rule: search_chunk)
[Sat Dec  5 23:22:45 2026]
localrule winners:
    jobid: 8
"""


def test_each_rule_s_jobs_sum_and_span_and_the_whole_run():
    times = load_bench("campaign_times")
    result = times.summary(times.job_spans(LOG.splitlines()))
    assert result["rules"] == {
        "ingest": {"jobs": 1, "sum_s": 2.0, "span_s": 2.0, "starts_at_s": 0.0},
        "search_chunk": {"jobs": 2, "sum_s": 14.0, "span_s": 9.0, "starts_at_s": 2.0}}
    assert result["span_s"] == 11.0  # an unfinished job (winners) counts nowhere
