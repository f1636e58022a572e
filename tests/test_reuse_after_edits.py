"""After a finished campaign a user edits what it was made from and reruns through the `geko`
command: the edit is honoured (everything made from it is redone) or refused on the terminal
with what to do, never a failed job nor a stale result."""
from pathlib import Path

import pandas as pd
import pytest

from .test_api_resume import one_matrix_instruction
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


@pytest.mark.slow
def test_a_tuning_yaml_edited_at_review_or_after_its_build_is_tuned_as_edited(tmp_path):
    """--until configure stops for review: the edited YAML is tuned as edited on the next run
    (one line names it, the build records its hash); edited again after its build ran, it is
    tuned again. Never rewritten, never refused."""
    import hashlib

    gemm = ["--inline", "1024", "1024", "1", "1024", "B", "B", "S", "N", "T"]
    configured = geko("--tune", "--arch", "gfx950", *gemm, "-w", "run", "--until", "configure",
                      cwd=tmp_path)
    assert configured.returncode == 0, configured.stderr[-3000:]
    optimizations = tmp_path / "run" / "optimizations"
    (tuning_yaml,) = [p for p in optimizations.glob("*_0.yaml")]
    build = optimizations / f"build_{tuning_yaml.stem}"
    for review in (one_matrix_instruction, lambda text: text.replace("[0, 8, 16]", "[0, 8]")):
        edited = review(tuning_yaml.read_text())
        assert edited != tuning_yaml.read_text()
        tuning_yaml.write_text(edited)
        tuned = geko("--tune", "-w", "run", cwd=tmp_path)
        said = tuned.stdout + tuned.stderr
        assert tuned.returncode == 0, said[-3000:]
        assert f"tuning YAML(s) edited since configure, tuned as edited: {tuning_yaml}" in said
        assert tuning_yaml.read_text() == edited  # never rewritten
        assert (build / ".tuning_yaml.sha256").read_text().strip() == \
            hashlib.sha256(edited.encode()).hexdigest()
        assert not (optimizations / "failed_jobs.log").exists(), said[-3000:]
        assert len(list((build / "3_LibraryLogic").glob("*.yaml"))) == 1
        assert len(pd.read_csv(tmp_path / "run" / "results" / "raw_results.csv")) == 1


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
