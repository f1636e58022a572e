"""After a finished campaign a user edits what it was made from and reruns through the `geko`
command: the edit is honoured (everything made from it is redone) or refused on the terminal
with what to do, never a failed job nor a stale result."""
from pathlib import Path

import pandas as pd
import pytest

from .test_cli_terminal import geko

ROW = ("- {function: matmul, M: 4096, N: %d, K: 4096, lda: 4096, ldb: 4096, ldc: 4096, "
       "ldd: 4096, stride_a: 0, stride_b: 0, stride_c: 0, stride_d: 0, alpha: 1.0, beta: 0.0, "
       "transA: T, transB: N, batch_count: 1, scaleA: 0, scaleB: 0, scaleAlpha_vector: false, "
       "gradient: false, use_e: false, bias_vector: false, bias_source: d, a_type: bf16_r, "
       "b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, bias_type: f32_r, "
       "compute_type: c_f32_r, activation_type: none, flush: false, rotating: 512, "
       "cold_iters: 0, iters: 0, call_count: 1}\n")


@pytest.mark.slow
def test_an_edited_workload_with_discard_results_is_recomputed(tmp_path):
    log = tmp_path / "app_log.yaml"
    log.write_text(ROW % 64)
    first = geko("--search", "--workload-log", str(log), "-w", "run", "--keep_thr", "0",
                 cwd=tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    log.write_text(ROW % 96)  # the application's log, recorded again
    refused = geko("--search", "--workload-log", str(log), "-w", "run", "--keep_thr", "0",
                   cwd=tmp_path)
    assert refused.returncode != 0 and "--discard-results" in refused.stderr
    again = geko("--search", "--workload-log", str(log), "-w", "run", "--keep_thr", "0",
                 "--discard-results", cwd=tmp_path)
    # snakemake's --config read discard_results=true as a string, which the schema refused
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    for table in ("summary.csv", "winners.csv", "results/raw_results.csv"):
        assert pd.read_csv(tmp_path / "run" / table)["n"].tolist() == [96], table


def test_an_error_reading_the_workflow_is_shown_where_no_job_failed(tmp_path):
    from geko_lib.campaign import snakemake_output

    said = ['IntegrityError in file "/x/workflow/Snakefile", line 51:',
            "/w/optimizations/BBS_TN_0.yaml: changed since the job that wrote it",
            '  File "/x/workflow/Snakefile", line 51, in <module>',
            '  File "/x/geko_lib/campaign/start.py", line 129, in remove_untrustworthy_outputs']
    output = snakemake_output.Output(tmp_path, ["snakemake"])
    for line in said:
        output.feed(line, say=lambda line: None)
    output.close()
    assert output.failure_lines() == said[:2]  # the header and the message, no traceback


def test_a_failed_jobs_script_error_is_left_to_its_log(tmp_path):
    from geko_lib.campaign import snakemake_output

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "optimize.log").write_text("GEKO:ERROR the reason\n")
    output = snakemake_output.Output(tmp_path, ["snakemake"])
    for line in ["RuleException:", 'CalledProcessError in file "/x/tune.smk", line 43:',
                 "Command 'python optimize.py' returned non-zero exit status 1.",
                 "Error in rule optimize:", "    log: logs/optimize.log (check log file(s) for "
                 "error details)"]:
        output.feed(line, say=lambda line: None)
    output.close()
    log = tmp_path / "logs" / "optimize.log"
    assert output.failure_lines() == [f"failed job optimize: its log {log}:",
                                      "    GEKO:ERROR the reason"]
