"""Exports carry the library build and arch they were measured on, and `geko coverage` refuses
one of another build or arch by name (issue 22, item 4)."""
from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from geko_lib import cli
from geko_lib.library import exports
from geko_lib.library.exports import measured

WORKLOAD_ROWS = [  # a decode linear the exports serve, and one they do not
    "- {function: matmul, M: 8192, N: 16, K: 1024, transA: T, transB: N, batch_count: 1, "
    "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, "
    "call_count: 80}",
    "- {function: matmul, M: 4096, N: 16, K: 4096, transA: T, transB: N, batch_count: 1, "
    "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, "
    "call_count: 20}",
]
WINNERS = pd.DataFrame([{"transA": "T", "transB": "N", "batch_count": 1, "m": 8192, "n": 16,
                         "k": 1024, "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r",
                         "d_type": "bf16_r", "compute_type": "c_f32_r", "solution_index": 4211,
                         "solution_name": "Cijk_Alik_Bljk_BBS_MT64x16", "us": 9.5}])
BUILD = "a6254b89"
GCN = "gfx942:sramecc+:xnack-"


def write(kind, tmp_path, **where):
    path = tmp_path / {"override": "override.txt", "tunableop": "tunableop.csv",
                       "aiter": "aiter.csv"}[kind]
    if kind == "override":
        exports.write_tuning_override(WINNERS, path, version=where.get("version"),
                                      arch=where.get("gcn", GCN))
    elif kind == "tunableop":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            validators = exports.default_validators(where.get("gcn", GCN),
                                                    hipblaslt_version=where.get("version"),
                                                    torch_version="2.7.0", rocm_version="6.4")
        exports.write_tunableop(WINNERS, path, validators=validators)
    else:
        exports.write_aiter_tuned(WINNERS, path, gfx=where.get("gfx", "gfx942"),
                                  cu_num=where.get("cu_num", 80))
    return path


def coverage(tmp_path, library, *flags):
    log = tmp_path / "app.yaml"
    log.write_text("\n".join(WORKLOAD_ROWS) + "\n")
    return cli.main(["coverage", "--library", str(library), "--workload", str(log), "--json",
                     *flags])


@pytest.mark.parametrize("kind, arch_field", [("override", "gcnArchName"),
                                              ("tunableop", "GCN_ARCH_NAME"), ("aiter", "gfx")])
def test_each_export_reads_back_the_arch_it_was_measured_on(tmp_path, kind, arch_field):
    path = write(kind, tmp_path, version=BUILD)
    found, table, recorded = measured.read_export(path)
    assert found == kind and len(table) == 1
    assert recorded["arch_field"] == arch_field and recorded["arch"].startswith("gfx942")
    if kind != "aiter":  # aiter's format has no build column
        assert recorded["library_version"] == BUILD


@pytest.mark.parametrize("kind", ["override", "tunableop", "aiter"])
def test_coverage_of_an_export_of_this_arch_and_build_lists_its_gemms(tmp_path, capsys, kind):
    path = write(kind, tmp_path, version=BUILD)
    flags = ["--arch", "gfx942_80cu"] + (["--library-version", BUILD] if kind != "aiter" else [])
    assert coverage(tmp_path, path, *flags) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["served"]["n_gemms"] == 1 and report["served"]["n_calls"] == 80
    assert report["library_files"] == [path.name]


@pytest.mark.parametrize("kind, where, words", [
    ("override", {"gcn": "gfx950:sramecc+:xnack-"}, "gcnArchName: measured on gfx950"),
    ("tunableop", {"gcn": "gfx950:sramecc+:xnack-"}, "GCN_ARCH_NAME: measured on gfx950"),
    ("aiter", {"gfx": "gfx950", "cu_num": 256}, "gfx: measured on gfx950"),
    ("aiter", {"cu_num": 304}, "cu_num: measured on 304 CUs, gfx942_80cu has 80"),
])
def test_coverage_refuses_an_export_of_another_arch_by_name(tmp_path, capsys, kind, where, words):
    path = write(kind, tmp_path, **where)
    assert coverage(tmp_path, path, "--arch", "gfx942_80cu") == 2
    err = capsys.readouterr().err
    assert f"{path}: {words}" in err and "geko coverage: error:" in err


@pytest.mark.parametrize("kind, field", [("override", "Git Version"),
                                         ("tunableop", "HIPBLASLT_VERSION")])
def test_coverage_refuses_an_export_of_another_build_by_name(tmp_path, capsys, kind, field):
    path = write(kind, tmp_path, version="0ddba11")
    assert coverage(tmp_path, path, "--library-version", BUILD) == 2
    assert (f"{path}: {field}: measured with library build 0ddba11, not {BUILD}"
            in capsys.readouterr().err)


def test_an_export_recording_no_build_cannot_pass_a_build_check(tmp_path, capsys):
    path = write("aiter", tmp_path)
    assert coverage(tmp_path, path, "--library-version", BUILD) == 2
    assert f"{path}: records no library build" in capsys.readouterr().err


def test_the_stamp_beside_an_export_supplies_what_the_file_lacks(tmp_path, capsys):
    path = write("aiter", tmp_path)
    stamp = path.with_name(path.name + ".stamp.json")
    stamp.write_text(json.dumps({"library_version": "hipblaslt-0ddba11", "arch": "gfx942_80cu"}))
    _, _, recorded = measured.read_export(path)
    assert recorded["library_version"] == "hipblaslt-0ddba11"
    assert recorded["library_version_field"] == "aiter.csv.stamp.json library_version"
    assert coverage(tmp_path, path, "--library-version", "hipblaslt-0ddba11") == 0
    capsys.readouterr()
    assert coverage(tmp_path, path, "--library-version", f"hipblaslt-{BUILD}") == 2
    assert "aiter.csv.stamp.json library_version: measured with library build" in \
        capsys.readouterr().err
