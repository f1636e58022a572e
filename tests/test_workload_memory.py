"""A large log is read and ingested within bounded memory (issue 34: a 1M-row log in hipBLASLt's
real 36-key row form peaked at 1.28 GB read and 2.23-2.31 GB in the ingest job). The reader
lets each line go once parsed, the duplicate check hashes rows instead of holding every column's
codes, workload.yaml is written and counted a chunk at a time; what they give is the reference
reader's table and the same bytes."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from geko_lib import platforms, workload
from geko_lib.workload import mask64, table, writer

from .conftest import ROOT

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

ROW = ("- {{function: matmul, M: {m}, N: {n}, K: {k}, lda: {k}, ldb: {k}, ldc: {m}, ldd: {m}, "
       "stride_a: 0, stride_b: 0, stride_c: 0, stride_d: 0, alpha: 1.0, beta: 0.0, transA: T, "
       "transB: N, batch_count: 1, scaleA: 0, scaleB: 0, scaleAlpha_vector: false, "
       "gradient: false, use_e: false, bias_vector: {bias}, bias_source: d, a_type: bf16_r, "
       "b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, bias_type: f32_r, "
       "compute_type: c_f32_r, activation_type: none, flush: false, rotating: 512, "
       "cold_iters: 0, iters: 0}}\n")  # hipBLASLt's own row: 36 keys, no call_count


def _log(tmp_path, lines):
    path = tmp_path / "app.yaml"
    path.write_text("".join(lines))
    return path


def _rows(n, bias="false"):
    return [ROW.format(m=4096, n=1 + i, k=4096, bias=bias) for i in range(n)]


def _same_as_reference(path):
    fast = workload.read(path, support=ANY)
    pd.testing.assert_frame_equal(fast, workload.read(path, fast=False, support=ANY))
    return fast


def test_lines_met_again_in_later_blocks_count_as_repeats(tmp_path, monkeypatch):
    monkeypatch.setattr(mask64, "_BLOCK", 2)
    lines = ["---\n", "# a comment\n"] + _rows(3) * 3 + ["# a comment\n"] + _rows(2)
    table_ = _same_as_reference(_log(tmp_path, lines))
    assert table_["call_count"].tolist() == [4, 4, 3]


def test_lines_sharing_a_hash_are_told_apart_by_what_they_parse_to(tmp_path, monkeypatch):
    monkeypatch.setattr(mask64, "_BLOCK", 3)
    monkeypatch.setattr(mask64, "hash", lambda raw: 7, raising=False)  # every line collides
    lines = _rows(4) + _rows(4) + [_rows(1, bias="true")[0]] * 2
    table_ = _same_as_reference(_log(tmp_path, lines))
    assert table_["call_count"].tolist() == [2, 2, 2, 2, 2]
    assert table_["bias_vector"].tolist() == [False] * 4 + [True]


def test_a_second_document_start_in_a_later_block_goes_to_pyyaml(tmp_path, monkeypatch):
    monkeypatch.setattr(mask64, "_BLOCK", 2)
    path = _log(tmp_path, ["---\n"] + _rows(3) + ["---\n"] + _rows(1))
    with pytest.raises(workload.WorkloadError):
        workload.read(path, support=ANY)


def test_rows_parsed_a_chunk_at_a_time_are_the_reference_table(tmp_path, monkeypatch):
    monkeypatch.setattr(mask64, "_BLOCK", 5)
    monkeypatch.setattr(mask64, "_CHUNK", 2)  # chunks of plain rows, and chunks of others
    rows = _rows(6)
    other_keys = rows[1].replace("}\n", ", call_count: 3}\n")
    pyyaml_value = rows[2].replace("M: 4096", "M: 0x1000")  # YAML 1.1's hex: PyYAML reads it
    lines = (["# a comment\n"] + rows[:4] + [other_keys, pyyaml_value] + rows[4:] + rows[:3]
             + ["\n"] + [rows[5].replace("K: 4096", "K: 4096 ")])
    table_ = _same_as_reference(_log(tmp_path, lines))
    assert len(table_) == 6


def test_errors_in_a_chunk_of_rows_name_its_first_bad_line(tmp_path):
    rows = _rows(4)
    truncated = rows[1][:-2] + "\n"
    path = tmp_path / "bad.yaml"
    path.write_bytes("".join(rows[:1] + [truncated] + rows[2:3]).encode() + b"M: \xff\n")
    with pytest.raises(workload.WorkloadError) as caught:
        workload.read(path, support=ANY)
    assert (caught.value.line, caught.value.field) == (2, "syntax")
    path.write_bytes("".join(rows[:2]).encode() + b"- {M: \0}\n" + truncated.encode())
    with pytest.raises(workload.WorkloadError) as caught:
        workload.read(path, support=ANY)
    assert (caught.value.line, caught.value.field) == (3, "encoding")


def test_the_duplicate_check_agrees_with_pandas():
    df = pd.DataFrame({"a": [1, 1, 2, 1, 2], "f": [0.0, -0.0, np.nan, 0.0, np.nan],
                       "s": ["x", "x", "y", "x", "y"], "b": [True, True, False, False, False]})
    keys = list(df.columns)
    assert table._duplicated(df, keys).tolist() == df.duplicated(subset=keys).tolist()


def test_workload_yaml_written_in_chunks_is_the_same_bytes(tmp_path, monkeypatch):
    rows = workload.read(_log(tmp_path, _rows(7) + _rows(1, bias="true")), support=ANY)
    whole = writer.write(rows, tmp_path / "whole.yaml").read_bytes()
    monkeypatch.setattr(writer, "ROWS_A_CHUNK", 3)
    assert writer.write(rows, tmp_path / "chunks.yaml").read_bytes() == whole


INGEST = """
import os, re, sys
from pathlib import Path
from geko_lib import jobs, phases, platforms, workload  # imported before the measure
from geko_lib.campaign import integrity, layout, state
from geko_lib.phases import ingest
log, work = sys.argv[1], Path(sys.argv[2])
work.mkdir()
os.chdir(work)
config = state.with_defaults({"platform": "sim", "arch": "gfx950", "devices": [0],
                              "mode": "search", "workload_log": log})
state.identity(config)


def peak_kb():  # this process's own high-water mark (ru_maxrss keeps the forking parent's)
    with open("/proc/self/status") as status:
        return int(re.search(r"VmHWM:\\s+(\\d+)", status.read()).group(1))


before = peak_kb()
phases.run(phases.Job("ingest", phases.Paths(log), phases.Paths(layout.WORKLOAD), config,
                      params=phases.Paths(kind="log", value=log), log=["logs/ingest.log"]),
           "ingest")
print((peak_kb() - before) / 1024)
"""


@pytest.mark.slow  # the rows it takes for the per-row cost to show over the fixed one
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_the_ingest_job_of_distinct_real_rows_stays_within_a_kilobyte_a_row(tmp_path):
    n = 100_000
    log = tmp_path / "big.yaml"
    with open(log, "w") as out:
        for i in range(n):
            out.write(ROW.format(m=64 + 16 * (i % 500), n=1 + i // 500, k=4096, bias="false"))
    grown = float(subprocess.run([sys.executable, "-c", INGEST, str(log), str(tmp_path / "w")],
                                 cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout.split()[-1])
    # was 2.2 kB a row (1M rows: 2.23 GB); now under 1 kB
    assert grown < n * 1.5 / 1024, f"the ingest job grew {grown:.0f} MB for {n:,} rows"
