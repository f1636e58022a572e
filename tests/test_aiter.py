"""aiter's GEMM CSVs (issue 22, item 3): its untuned CSV as a workload (x[M,K] @ W[N,K]^T as
hipBLASLt's column-major T N GEMM, M and N swapped), and a campaign's kept winners as its tuned
CSV, stamped with the arch and CU count the campaign ran on so the runtime's lookup key matches.
The CSVs here are written from aiter's documented headers (no recorded file is kept)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from geko_lib import platforms, search, workload
from geko_lib.campaign import layout
from geko_lib.library import exports
from geko_lib.workload import WorkloadError
from tests.conftest import FIXTURES
from tests.rocm_fake import INVOKE_PATH, build_fake_hipblaslt, fixture_logic

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

UNTUNED = "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle\n"
# decode and prefill linears of a bf16 model at 2 token counts (aiter writes each shape once)
SHAPES = ["1,2048,15360,False,torch.bfloat16,torch.bfloat16,False,False",
          "16,2048,15360,False,torch.bfloat16,torch.bfloat16,False,False",
          "512,512,512,True,torch.bfloat16,torch.bfloat16,False,False"]
# the documented example row of aiter's bf16_tuned_gemm.csv (an asm kernel, f32 output)
TUNED = ("gfx,cu_num,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,"
         "kernelName,err_ratio,tflops,bw\n"
         "gfx950,256,1,2048,6144,False,torch.bfloat16,torch.float32,False,False,asm,1,6,12.8405,"
         "bf16gemm_kernel,0.0,1.96,1961.15\n")


def write(tmp_path, text: str, name="bf16_untuned_gemm.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the untuned CSV as a workload --------------------------------------------------------------

def test_an_untuned_csv_is_the_column_major_linear_gemm(tmp_path):
    table = workload.read(write(tmp_path, UNTUNED + "\n".join(SHAPES) + "\n"), support=ANY)
    rows = table.to_dict("records")
    assert [(r["transA"], r["transB"], r["M"], r["N"], r["K"]) for r in rows] == [
        ("T", "N", 2048, 1, 15360), ("T", "N", 2048, 16, 15360), ("T", "N", 512, 512, 512)]
    assert {(r["a_type"], r["b_type"], r["d_type"], r["compute_type"]) for r in rows} == {
        ("bf16_r", "bf16_r", "bf16_r", "c_f32_r")}
    assert [r["bias_vector"] for r in rows] == [False, False, True]
    assert table["call_count"].tolist() == [1, 1, 1]  # every row counts once


def test_a_count_column_weights_the_rows_and_repeats_add_up(tmp_path):
    text = UNTUNED.replace("\n", ",count\n") + f"{SHAPES[0]},7\n{SHAPES[1]},3\n{SHAPES[0]},1\n"
    table = workload.read(write(tmp_path, text), support=ANY)
    assert sorted(zip(table["N"], table["call_count"])) == [(1, 8), (16, 3)]


def test_a_header_with_both_count_columns_is_refused(tmp_path):
    """Issue 41: both were taken silently, the first winning."""
    text = UNTUNED.replace("\n", ",count,call_count\n") + f"{SHAPES[0]},7,2\n"
    path = write(tmp_path, text)
    with pytest.raises(WorkloadError) as err:
        workload.read(path, support=ANY)
    assert f"{path}:1" in str(err.value) and "both count and call_count" in str(err.value)


def test_a_tuned_csv_reads_as_a_workload_too(tmp_path):
    tuned = write(tmp_path, TUNED, "bf16_tuned_gemm.csv")
    (row,) = workload.read(tuned, support=ANY).to_dict("records")
    assert (row["M"], row["N"], row["K"], row["d_type"]) == (2048, 1, 6144, "f32_r")


@pytest.mark.parametrize("line, field, words", [
    ("1,2048,6144,False,torch.bfloat16,torch.bfloat16,False,True", "bpreshuffle",
     "pre-shuffled weights"),
    ("1,2048,6144,False,torch.bfloat17,torch.bfloat16,False,False", "dtype", "torch.bfloat17"),
    ("0,2048,6144,False,torch.bfloat16,torch.bfloat16,False,False", "M", "positive integer"),
    ("1,2048,6144,maybe,torch.bfloat16,torch.bfloat16,False,False", "bias", "True or False"),
])
def test_a_bad_row_is_refused_naming_line_and_column(tmp_path, line, field, words):
    path = write(tmp_path, UNTUNED + SHAPES[0] + "\n" + line + "\n")
    with pytest.raises(WorkloadError) as err:
        workload.read(path, support=ANY)
    assert f"{path}:3" in str(err.value) and field in str(err.value) and words in str(err.value)


def test_a_bare_mnk_file_names_no_data_type(tmp_path):
    with pytest.raises(WorkloadError, match="names no data type"):
        workload.read(write(tmp_path, "M,N,K\n1,2048,6144\n"), support=ANY)


# --- the tuned CSV export ------------------------------------------------------------------------

@pytest.fixture
def rocm(tmp_path, monkeypatch):
    if not (FIXTURES / "tensile_logic").is_dir():
        pytest.skip("tests/fixtures is not here")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HIPBLASLT_TENSILE_LIBPATH", raising=False)
    # the gfx942 logic fixture is bf16 T N: the linear layers' type
    hip = build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx942"))
    monkeypatch.setenv("GEKO_HIPBLASLT_PATH", str(hip))
    monkeypatch.setenv("GEKO_REPLAY_ARCH", "gfx942")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(INVOKE_PATH), os.environ.get("PYTHONPATH")) if p))
    return platforms.get({"platform": "rocm", "arch": "gfx942", "devices": [0]})


def kept_results(winners: pd.DataFrame) -> pd.DataFrame:
    """results/final_results.csv's tuned side, as the analyze phase writes it: the comparison
    benchmarked geko's library built from the winners, which numbers its kernels 0, 1, ..."""
    identity = [c for c in exports.IDENTITY if c in winners]
    return winners[identity].assign(solution_index_tuned=range(len(winners)),
                                    solution_name_tuned=winners["solution_name"],
                                    us_tuned=winners["us"], error_tuned=0.001)


def run_exports(run_phase, tmp_path, winners, untuned, *, searched=True):
    """The ingest and exports phases of a campaign in ``tmp_path`` over ``untuned`` whose kept
    kernels are ``winners`` (searched: winners.csv is the dense search's; else the kernels are
    tuned ones), as the workflow runs their jobs; the exports job's outputs."""
    config = {"platform": "rocm", "arch": "gfx942_80cu",
              "mode": "search" if searched else "tune"}
    run_phase("ingest", tmp_path, config, given={
        "workload_source": [str(untuned)], "workload_kind": "log", "workload_value": str(untuned)})
    final = tmp_path / layout.FINAL_RESULTS
    final.parent.mkdir(exist_ok=True)
    kept_results(winners).to_csv(final, index=False)
    if searched:
        winners.to_csv(tmp_path / layout.WINNERS, index=False)
    return run_phase("exports", tmp_path, config).output


def test_the_exported_rows_match_the_lookup_of_the_untuned_rows(rocm, tmp_path, run_phase):
    """aiter's untuned CSV -> the rocm dense search (replay) -> the exports phase: every row's
    (M, N, K, bias, dtype, outdtype, scaleAB, bpreshuffle) is the key aiter logged, with the
    campaign's gfx/cu_num, and solidx the index the stock library has the winner under."""
    untuned = write(tmp_path, UNTUNED + "\n".join(SHAPES[:2]) + "\n")
    problems = workload.problems(workload.read(untuned, support=ANY))
    winners = search.winners(rocm.search(problems, tmp_path / "search", 0))
    assert (winners["solution_index"] > 300000).all()  # the fake numbers its library so
    out = run_exports(run_phase, tmp_path, winners, untuned)

    tuned = pd.read_csv(out.aiter)
    assert list(tuned.columns) == list(exports.AITER_TUNED_COLUMNS)
    logged = pd.read_csv(untuned)
    key = ["M", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle"]
    assert tuned[key].values.tolist() == logged[key].values.tolist()
    assert set(tuned["gfx"]) == {"gfx942"} and set(tuned["cu_num"]) == {80}
    assert set(tuned["libtype"]) == {"hipblaslt"}
    assert tuned["solidx"].tolist() == winners["solution_index"].tolist()
    back = exports.read_aiter_tuned(out.aiter)
    assert back[["m", "n", "k", "solution_index"]].values.tolist() == \
        winners[["m", "n", "k", "solution_index"]].values.tolist()
    # the override and TunableOp files hold the same stock indices, and say whose they are
    override = exports.read_tuning_override(out.override)
    assert override["solution_index"].tolist() == winners["solution_index"].tolist()
    tunableop = exports.read_tunableop(out.tunableop)
    assert tunableop["solution_index"].tolist() == winners["solution_index"].tolist()
    index = json.loads(Path(out.library_index).read_text())
    assert index["index_of"] == "stock hipBLASLt library"
    assert index["library_version"] == rocm.library_version


def test_a_bias_call_keeps_its_key_or_is_left_out_by_name(rocm, tmp_path, run_phase, capfd):
    """The untuned CSV logs one GEMM with and without a bias: the kernel geko timed (no bias
    epilogue) answers the bias=False key only; the bias=True call is left out, with a line."""
    bias = SHAPES[1].replace(",False,torch", ",True,torch", 1)
    untuned = write(tmp_path, UNTUNED + "\n".join([SHAPES[1], bias]) + "\n")
    problems = workload.problems(workload.read(untuned, support=ANY))
    winners = search.winners(rocm.search(problems, tmp_path / "search", 0))
    assert len(winners) == 1  # one GEMM: hipBLASLt's identity has no bias
    out = run_exports(run_phase, tmp_path, winners, untuned)
    tuned = pd.read_csv(out.aiter)
    assert tuned["bias"].tolist() == [False] and tuned["M"].tolist() == [16]
    said = capfd.readouterr().err
    # each line names the GEMMs whose bias calls it leaves out, not only how many
    assert "1 kept GEMM(s) or call(s) left out of " in said and \
        "bias epilogue: BBS_TN_M2048_N16_B1_K15360\n" in said, said
    assert "1 bias call(s) left out of " in said and \
        "(GemmAndBiasTunableOp): BBS_TN_M2048_N16_B1_K15360\n" in said, said
    # the override key has no bias: the entry stays for the plain call, and says the bias
    # call will use it too
    assert len(exports.read_tuning_override(out.override)) == 1
    assert "1 GEMM(s) of " in said and "also have bias calls, which will use the entry too" \
        in said and "epilogue): BBS_TN_M2048_N16_B1_K15360\n" in said, said


def test_an_override_entry_whose_calls_are_all_bias_calls_is_left_out(rocm, tmp_path, capfd,
                                                                      run_phase):
    """hipBLASLt's override key has no bias field: an entry for a GEMM the workload calls only
    with a bias would serve those calls with a kernel geko timed without the bias epilogue. It
    is left out with a line naming the GEMM, as aiter's table and TunableOp's file leave such
    calls out, and `geko coverage` of the override says the bias call is not served."""
    from geko_lib.campaign import coverage

    bias = SHAPES[1].replace(",False,torch", ",True,torch", 1)
    untuned = write(tmp_path, UNTUNED + "\n".join([SHAPES[0], bias]) + "\n")
    problems = workload.problems(workload.read(untuned, support=ANY))
    winners = search.winners(rocm.search(problems, tmp_path / "search", 0))
    assert len(winners) == 2
    out = run_exports(run_phase, tmp_path, winners, untuned)
    override = exports.read_tuning_override(out.override)
    assert override[["m", "n", "k"]].values.tolist() == [[2048, 1, 15360]]
    said = capfd.readouterr().err
    assert "1 kept GEMM(s) left out of " in said and "every call of them is a bias call" in \
        said and "without the bias epilogue: BBS_TN_M2048_N16_B1_K15360\n" in said, said
    report = coverage.coverage(Path(out.override), untuned)
    served = {g["n"]: g["served"] for g in report["gemms"]}
    assert served == {1: True, 16: False}


def test_the_arch_the_exports_name_is_a_gfx_name_not_gekos_alias(rocm, tmp_path, run_phase):
    """An MI308X campaign (--arch gfx942_80cu): TunableOp's GCN_ARCH_NAME validator and the
    override's gcnArchName are compared with what the GPU reports (gfx942...), never with
    geko's arch alias; they said gfx942_80cu, which no GPU reports."""
    untuned = write(tmp_path, UNTUNED + SHAPES[0] + "\n")
    problems = workload.problems(workload.read(untuned, support=ANY))
    winners = search.winners(rocm.search(problems, tmp_path / "search", 0))
    out = run_exports(run_phase, tmp_path, winners, untuned)
    validators = dict(line.split(",")[1:3] for line in Path(out.tunableop).read_text()
                      .splitlines() if line.startswith("Validator,"))
    assert validators["GCN_ARCH_NAME"] == "gfx942"
    assert set(exports.read_tuning_override(out.override)["gcnArchName"]) == {"gfx942"}
    assert set(pd.read_csv(out.aiter)["gfx"]) == {"gfx942"}


def test_tuned_kernels_carry_geko_library_indices_and_name_that_library(
        rocm, tmp_path, run_phase, capfd):
    """Tune mode: the kept kernels exist only in geko's library. The override and TunableOp
    files hold that library's indices and library_index.json names it and its build; aiter's
    table, which has no field to name a library, leaves them out with a line."""
    untuned = write(tmp_path, UNTUNED + "\n".join(SHAPES[:2]) + "\n")
    problems = workload.problems(workload.read(untuned, support=ANY))
    winners = search.winners(rocm.search(problems, tmp_path / "search", 0))
    out = run_exports(run_phase, tmp_path, winners, untuned, searched=False)
    # index 0 is left out of the override file: hipBLASLt ignores entries with index <= 0
    assert exports.read_tuning_override(out.override)["solution_index"].tolist() == [1]
    assert exports.read_tunableop(out.tunableop)["solution_index"].tolist() == [0, 1]
    assert pd.read_csv(out.aiter).empty
    said = capfd.readouterr().err
    assert "left out of" in said and "geko's library" in said
    index = json.loads(Path(out.library_index).read_text())
    assert index["index_of"] == "geko library" and index["library"] == "tensile/library"
    assert index["library_version"].startswith("geko")


@pytest.mark.slow
def test_a_rocm_campaigns_exports_answer_the_consumers_lookup(rocm, tmp_path):
    """Through the command: `geko --search` on the rocm replay of an aiter untuned CSV (two
    shapes with and without a bias), then `geko coverage` of its exports against that CSV. The
    aiter rows carry the key aiter looks up (gfx942's 304 CUs, bias as the call had it) and
    the stock library's index the search measured (winners.csv), as does the override file;
    coverage, by aiter's key, serves the plain calls and not the bias ones."""
    from tests.test_cli import geko

    untuned = write(tmp_path, UNTUNED + "\n".join(
        [SHAPES[0], SHAPES[1], SHAPES[1].replace(",False,torch", ",True,torch", 1)]) + "\n")
    run = geko("--search", "--platform", "rocm", "--arch", "gfx942", "--workload-log",
               str(untuned), "--keep_thr", "0", "--workdir", "run", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    workdir = tmp_path / "run"
    stock = dict(zip(zip(*(pd.read_csv(workdir / "winners.csv")[c] for c in ("m", "n", "k"))),
                     pd.read_csv(workdir / "winners.csv")["solution_index"]))
    kept = pd.read_csv(workdir / "results" / "final_results.csv")
    assert len(kept) == 2 and min(stock.values()) > 300000
    tuned = pd.read_csv(workdir / "exports" / "aiter_bf16_tuned_gemm.csv")
    key = ["M", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle"]
    assert tuned[key].values.tolist() == pd.read_csv(untuned)[key].values.tolist()[:2]
    assert set(tuned["gfx"]) == {"gfx942"} and set(tuned["cu_num"]) == {304}
    assert tuned["solidx"].tolist() == [stock[(r.N, r.M, r.K)] for r in tuned.itertuples()]
    override = exports.read_tuning_override(workdir / "exports" /
                                            "hipblaslt_tuning_override.txt")
    assert override["solution_index"].tolist() == [stock[(r.m, r.n, r.k)]
                                                   for r in override.itertuples()]
    coverage = geko("coverage", "--library",
                    str(workdir / "exports" / "aiter_bf16_tuned_gemm.csv"), "--workload",
                    str(untuned), "--json", cwd=tmp_path)
    assert coverage.returncode == 0, coverage.stderr[-3000:]
    served = {(g["n"], g["key"]["bias"]): g["served"]
              for g in json.loads(coverage.stdout)["gemms"]}
    assert served == {(1, False): True, (16, False): True, (16, True): False}


def test_gemms_that_are_no_linear_call_are_left_out_and_counted(tmp_path):
    from geko_lib.gemm import GemmProblem, GemmType

    nn = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", compute_type="f32_r")
    tn = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", compute_type="f32_r")
    winners = pd.DataFrame([GemmProblem(t, 64, 64, b, 64).gemm_fields() | {
        "solution_index": 5, "solution_name": "Cijk_X", "us": 2.0}
        for t, b in ((nn, 1), (tn, 4), (tn, 1))])
    assert exports.write_aiter_tuned(winners, tmp_path / "a.csv", gfx="gfx950",
                                     cu_num=256) == {"linear": 2}
    assert len(pd.read_csv(tmp_path / "a.csv")) == 1
    with pytest.raises(exports.ExportError, match="gfx .* cu_num"):
        exports.write_aiter_tuned(winners, tmp_path / "b.csv", gfx="", cu_num=256)


@pytest.mark.parametrize("name, listed", [("rocm", True), ("sim", False), ("cuda", False)])
def test_only_a_platform_of_real_hipblaslt_indices_lists_the_aiter_table(name, listed):
    caps = platforms.capabilities({"platform": name, "arch": "gfx950" if name != "cuda"
                                   else "h200"})
    assert ("aiter_tuned" in caps.exports) is listed


def test_tunableop_lines_carry_each_calls_leading_dimensions(rocm, tmp_path, run_phase, capfd):
    """TunableOp (PyTorch >= 2.7) looks a call up with its lda/ldb/ldc: a GEMM the application
    calls with two leading dimensions of A gets one line per call key, not one packed line;
    its bias call (GemmAndBiasTunableOp, not timed with the epilogue) is left out, with a line."""
    row = ("- {{function: matmul, M: 2048, N: 16, K: 15360, lda: {lda}, ldb: 15360, ldc: 2048, "
           "ldd: 2048, transA: T, transB: N, batch_count: 1, a_type: bf16_r, b_type: bf16_r, "
           "c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, bias_vector: {bias}, "
           "call_count: 3}}\n")
    log = write(tmp_path, row.format(lda=15360, bias="false") + row.format(lda=16384,
                                                                           bias="false")
                + row.format(lda=15360, bias="true"), "app.yaml")
    problems = workload.problems(workload.read(log, support=ANY))
    winners = search.winners(rocm.search(problems, tmp_path / "search", 0))
    out = run_exports(run_phase, tmp_path, winners, log)
    lines = exports.read_tunableop(out.tunableop)
    assert lines["params_signature"].tolist() == ["tn_2048_16_15360_ld_15360_15360_2048",
                                                  "tn_2048_16_15360_ld_16384_15360_2048"]
    assert "1 bias call(s) left out of" in capfd.readouterr().err


@pytest.mark.parametrize("line, column", [
    ("4,99999999999,6144,False,torch.bfloat16,torch.bfloat16,False,False", "N"),
    ("99999999999,16,6144,False,torch.bfloat16,torch.bfloat16,False,False", "M"),
    ("16,16,99999999999,False,torch.bfloat16,torch.bfloat16,False,False", "K"),
])
def test_a_size_refused_by_the_common_checks_names_the_files_column(tmp_path, capsys, line,
                                                                     column):
    # issue 34: aiter's N is hipBLASLt's M (and M its N); the error named hipBLASLt's field
    from geko_lib import cli

    path = write(tmp_path, UNTUNED + SHAPES[0] + "\n" + line + "\n")
    with pytest.raises(WorkloadError) as err:
        workload.read(path, support=platforms.gemm_support("sim"))
    assert str(err.value).startswith(f"{path}:3: {column}: 99999999999 is beyond what")
    assert cli.main(["--bench", "--platform", "sim", "--workload-log", str(path),
                     "-w", str(tmp_path / "w")]) == 2
    assert f"geko: error: {path}:3: {column}: 99999999999" in capsys.readouterr().err
