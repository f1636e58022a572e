"""`geko coverage` reads only what it understands and checks an export by its consumer's own
lookup key (issues 32 and 34): a table of another kind is refused by name, a broken timings
table or logic file ends in one line naming the file, never a traceback, and an export row
answers a call only where the consumer's key (aiter's bias/scaleAB, TunableOp's leading
dimensions, the build of geko's own library) is the call's."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from geko_lib import cli
from geko_lib.library import exports
from tests.conftest import FIXTURES

# one bf16 T N GEMM, called plain, with a bias and with another lda (aiter's and TunableOp's keys)
CALL = ("- {{function: matmul, M: 8192, N: 16, K: 1024, lda: {lda}, ldb: 1024, ldc: 8192, "
        "transA: T, transB: N, batch_count: 1, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, "
        "d_type: bf16_r, compute_type: c_f32_r, bias_vector: {bias}, call_count: {calls}}}\n")
WINNERS = pd.DataFrame([{"transA": "T", "transB": "N", "batch_count": 1, "m": 8192, "n": 16,
                         "k": 1024, "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r",
                         "d_type": "bf16_r", "compute_type": "c_f32_r", "solution_index": 4211,
                         "solution_name": "Cijk_Alik_Bljk_BBS_MT64x16", "us": 9.5}])
LOGIC = FIXTURES / "tensile_logic" / "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"


def run(capsys, *argv):
    code = cli.main(["coverage", *map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def app(tmp_path):
    path = tmp_path / "app.yaml"
    path.write_text(CALL.format(lda=1024, bias="false", calls=70)
                    + CALL.format(lda=1024, bias="true", calls=20)
                    + CALL.format(lda=2048, bias="false", calls=10))
    return path


def test_a_results_table_starting_with_transA_is_refused_by_name(tmp_path, capsys, app):
    summary = tmp_path / "summary.csv"
    WINNERS.assign(call_count=100).to_csv(summary, index=False)
    code, out, err = run(capsys, "--library", summary, "--workload", app)
    assert code == 2 and not out
    assert f"--library: {summary} is none of the files coverage reads" in err


@pytest.mark.parametrize("content, words", [
    (b"\x00\x01\xff\xfe\x80", "is not a UTF-8 text table"),
    ("transA,m,us\nT,1,\xe9\n".encode("latin-1"), "is not a UTF-8 text table"),
    (b"", "is empty"),
    (b"transA,transB,batch_count,m,n,k,a_type,b_type,c_type,d_type,compute_type,us\n"
     b"T,N,1,8192,16,1024,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r,fast\n", ":2: us: expected a number"),
])
def test_a_timings_table_it_cannot_read_ends_in_one_line(tmp_path, capsys, app, content, words):
    timings = tmp_path / "timings.csv"
    timings.write_bytes(content)
    code, _, err = run(capsys, "--library", LOGIC, "--workload", app, "--timings", timings)
    assert code == 2 and f"--timings: {timings}" in err and words in err
    assert len(err.strip().splitlines()) == 1


def test_a_logic_file_with_a_quoted_size_is_refused_naming_the_file(tmp_path, capsys, app):
    logic = tmp_path / LOGIC.name
    logic.write_text(LOGIC.read_text().replace("- - - [8, 32, 1, 15360]",
                                               '- - - [8, 32, 1, "15360"]'))
    code, _, err = run(capsys, "--library", logic, "--workload", app)
    assert code == 2 and f"{logic}: ExactLogic entry 0" in err and "'15360'" in err


def test_an_aiter_table_serves_only_the_calls_of_its_key(tmp_path, capsys, app):
    """aiter looks (M, N, K, bias, dtype, outdtype, scaleAB, bpreshuffle) up: its bias=False row
    serves the plain calls (both lda: aiter's key has none), not the bias call."""
    table = tmp_path / "aiter.csv"
    exports.write_aiter_tuned(WINNERS, table, gfx="gfx942", cu_num=80)
    code, out, _ = run(capsys, "--library", table, "--workload", app, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["export"] == "aiter"
    served = {g["key"]["bias"]: g["served"] for g in report["gemms"]}
    assert served == {False: True, True: False}
    assert report["served"]["n_calls"] == 80 and report["not_served"]["n_calls"] == 20
    (bias,) = [g for g in report["gemms"] if not g["served"]]
    assert bias["reason"].startswith("aiter's key differs") and "bias=True" in bias["reason"]


def test_a_tunableop_file_serves_only_the_calls_of_its_leading_dimensions(tmp_path, capsys, app):
    """PyTorch >= 2.7 looks a GEMM up with its lda/ldb/ldc: the packed line serves the calls
    with lda 1024, not the one with lda 2048 nor the bias call (GemmAndBiasTunableOp)."""
    results = tmp_path / "tunableop.csv"
    exports.write_tunableop(WINNERS, results, validators={"PT_VERSION": "2.7.0"})
    code, out, _ = run(capsys, "--library", results, "--workload", app, "--json")
    assert code == 0
    report = json.loads(out)
    served = {(g["key"]["bias"], g["key"]["lda"]): g["served"] for g in report["gemms"]}
    assert served == {(False, 1024): True, (True, 1024): False, (False, 2048): False}
    assert report["served"]["n_calls"] == 70


def test_an_export_of_geko_library_indices_is_refused_for_the_stock_build(tmp_path, capsys, app):
    """library_index.json beside a tune campaign's exports says their indices are geko's own
    library's: checking them against the stock build is refused, naming that file."""
    override = tmp_path / "hipblaslt_tuning_override.txt"
    exports.write_tuning_override(WINNERS, override, version="hipblaslt-0ddba11")
    (tmp_path / "library_index.json").write_text(json.dumps({
        "index_of": "geko library", "library": "tensile/library", "library_version": "geko-12ab"}))
    code, _, err = run(capsys, "--library", override, "--workload", app,
                       "--library-version", "hipblaslt-0ddba11")
    assert code == 2 and "library_index.json library_version" in err and "geko-12ab" in err
    code, out, _ = run(capsys, "--library", override, "--workload", app,
                       "--library-version", "geko-12ab")
    assert code == 0 and "served:" in out


def test_an_aiter_table_with_preshuffled_hipblaslt_rows_is_read(tmp_path, capsys, app):
    """aiter also tunes hipBLASLt for pre-shuffled weights (bpreshuffle True): those rows answer
    calls no workload of geko has; the table is read, its other rows checked as usual."""
    table = tmp_path / "aiter.csv"
    exports.write_aiter_tuned(WINNERS, table, gfx="gfx942", cu_num=80)
    rows = table.read_text().splitlines()
    preshuffled = rows[1].replace("False,False,hipblaslt", "False,True,hipblaslt")
    table.write_text("\n".join([*rows, preshuffled.replace(",8192,", ",4096,", 1)]) + "\n")
    code, out, err = run(capsys, "--library", table, "--workload", app, "--json")
    assert code == 0, err
    assert json.loads(out)["served"]["n_calls"] == 80


def test_the_bundled_workload_is_found_by_its_relative_path_from_any_directory(
        tmp_path, capsys, monkeypatch):
    """`--workload config/workloads/<name>.yaml` finds the bundled log, as `--workload-log`
    and `--example` do (issue 41), from a directory that has no such path."""
    monkeypatch.chdir(tmp_path)
    for given in ("config/workloads/mixed_types.yaml", "mixed_types.yaml"):
        code, out, err = run(capsys, "--library", LOGIC, "--workload", given, "--json")
        assert code == 0, err
        assert json.loads(out)["workload"].endswith("config/workloads/mixed_types.yaml")
    code, _, err = run(capsys, "--library", LOGIC, "--workload", "config/workloads/none.yaml")
    assert code == 2 and "none.yaml" in err


def test_gekos_empty_override_export_serves_no_gemm(tmp_path, capsys, app):
    """A campaign that kept nothing writes an override file of no entries (no build named:
    no Git Version line either); coverage reads it as 0 GEMMs served (issue 41)."""
    override = tmp_path / "exports" / "hipblaslt_tuning_override.txt"
    exports.write_tuning_override(WINNERS.iloc[:0], override, arch="gfx942")
    assert not override.read_text().strip()
    code, out, err = run(capsys, "--library", override, "--workload", app, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["export"] == "override" and report["n_library_sizes"] == 0
    assert report["served"]["n_gemms"] == 0 and report["not_served"]["n_calls"] == 100
    assert {g["reason"] for g in report["gemms"]} == {f"{override.name} lists no GEMM"}
    # an empty CSV or YAML is still none of the files coverage reads
    for name in ("empty.csv", "empty.yaml"):
        (tmp_path / name).write_text("")
        code, _, err = run(capsys, "--library", tmp_path / name, "--workload", app)
        assert code == 2 and len(err.strip().splitlines()) == 1
