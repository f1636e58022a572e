"""hipblaslt-bench's three performance header forms (issue 22): the classic 100200 set, the
older HIPBLASLT_BENCH_EFF=1 set (``num_cu's`` ...) and the 2026 HIPBLASLT_BENCH_PERF=1 set
(swizzle, granularity, memory bytes, frequency and efficiency columns). The replay prints each
exactly as the recorded demos do, and the rocm platform's phases read all three by column
name; a row that lacks a required field is refused naming the column."""

from __future__ import annotations

import os
import re

import pytest

from geko_lib import platforms
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.platforms.rocm.bench import BenchOutputError, parse_bench_output, read_bench_output
from tests.conftest import FIXTURES
from tests.rocm_fake import INVOKE_PATH, build_fake_hipblaslt, fixture_logic

BENCH = FIXTURES / "hipblaslt_bench"
# the recorded output of each header form (tests/fixtures/SOURCES)
RECORDED = {"classic": BENCH / "bench_100200_gfx950_bf16_NN_m3584_n2048_k512.txt",
            "eff": BENCH / "bench_readme_eff_env_f16_efficiency_columns.txt",
            "perf": BENCH / "bench_readme_perf_env_bf16_efficiency_columns.txt"}
# constructed from the documented PERF format (no complete recorded dense search exists)
PERF_SEARCH = BENCH / "bench_constructed_perf_env_dense_search_winner.txt"
ENV = {"classic": {}, "eff": {"HIPBLASLT_BENCH_EFF": "1"}, "perf": {"HIPBLASLT_BENCH_PERF": "1"}}

BF16_NN = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", compute_type="f32_r")
PROBLEMS = [GemmProblem(BF16_NN, 512, 512, 1, 512), GemmProblem(BF16_NN, 16, 2048, 1, 15360)]

pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="tests/fixtures is not here")


def header_of(text: str) -> list[str]:
    """The first result header of an output, without its ``[i]:`` marker."""
    line = next(s.strip() for s in text.splitlines() if "transA,transB," in s)
    return re.sub(r"^\[\d+\]:", "", line).split(",")


@pytest.fixture
def rocm(tmp_path, monkeypatch):
    """A rocm platform on the fake checkout; ``rocm(form)`` sets that form's variable."""
    monkeypatch.chdir(tmp_path)
    for var in ("HIPBLASLT_TENSILE_LIBPATH", "HIPBLASLT_BENCH_EFF", "HIPBLASLT_BENCH_PERF",
                "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    hip = build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx950"))
    monkeypatch.setenv("GEKO_HIPBLASLT_PATH", str(hip))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(INVOKE_PATH), os.environ.get("PYTHONPATH")) if p))

    def make(form: str):
        for var, value in ENV[form].items():
            monkeypatch.setenv(var, value)
        return platforms.get({"platform": "rocm", "arch": "gfx950", "devices": [0]})
    return make


@pytest.mark.parametrize("form", sorted(RECORDED))
def test_the_replay_prints_the_recorded_header_of_each_form(rocm, tmp_path, form):
    platform = rocm(form)
    platform.bench(PROBLEMS[:1], tmp_path / "bench", 0)
    (out,) = (tmp_path / "bench").glob("*.out")
    assert header_of(out.read_text()) == header_of(RECORDED[form].read_text())


@pytest.mark.parametrize("form", ["eff", "perf"])
def test_every_phase_reads_each_form_as_the_classic_one(rocm, tmp_path, form):
    """bench, the dense search (several solutions and a Winner block) and verify give the same
    timings, solutions and errors whichever columns the build prints."""
    classic = rocm("classic")  # the platforms read the environment when they run
    library = classic.create_library(_libs(classic, tmp_path), tmp_path / "tensile")
    phases = {"bench": lambda p, out: p.bench(PROBLEMS, out, 0),
              "search": lambda p, out: p.search(PROBLEMS, out, 0),
              "verify": lambda p, out: p.verify(PROBLEMS, out, 0, library)}
    before = {name: run(classic, tmp_path / "classic" / name) for name, run in phases.items()}
    other = rocm(form)
    for name, run in phases.items():
        after = run(other, tmp_path / form / name)
        keys = ["m", "n", "k", "solution_index", "solution_name",
                "error" if name == "verify" else "us"]
        assert after[keys].values.tolist() == before[name][keys].values.tolist(), name
        if name != "verify":
            assert (after["efficiency"] > 0).all() and "efficiency" not in before[name]


def _libs(platform, tmp_path):
    from geko_lib import search
    winners = search.winners(platform.search(PROBLEMS, tmp_path / "libsearch", 0))
    platform.extract(winners, tmp_path / "libs")
    return tmp_path / "libs"


# --- the parser, on the recorded and the constructed outputs --------------------------------------

def test_the_perf_columns_are_read_by_name():
    (row,) = read_bench_output(RECORDED["perf"]).to_dict("records")
    assert (row["num_cu"], row["tiles_per_cu"], row["mem_read_bytes"]) == (256, 0, 13312511180)
    assert (row["swizzle_a"], row["swizzle_b"], row["aux_type"]) == (0, 0, "bf16_r")
    assert (row["gflops"], row["gbps"], row["us"]) == (1.08405e+06, 484.741, 1209.14)


def test_the_eff_order_puts_efficiency_between_gflops_and_bandwidth():
    (row,) = read_bench_output(RECORDED["eff"]).to_dict("records")
    assert (row["gflops"], row["efficiency"], row["gbps"]) == (555009.0, 81.3366, 248.176)
    assert row["num_cu's"] == 0 and row["tile_0_granularity"] == 0


def test_a_constructed_perf_dense_search_with_a_winner_block():
    frame = read_bench_output(PERF_SEARCH)
    assert frame["solution_index"].tolist() == [300582, 300590, 300590]
    assert frame["winner"].tolist() == [False, False, True]
    assert frame["us"].tolist() == [21.4, 19.83, 19.83]
    assert frame["efficiency"].tolist() == [63.1, 68.1, 68.1]


@pytest.mark.parametrize("position", [0.2, 0.6, 0.99])
def test_a_column_added_anywhere_changes_nothing(position):
    """Releases add columns between the known ones: every known field keeps its value."""
    text = RECORDED["perf"].read_text()
    lines = text.splitlines()
    h = next(i for i, s in enumerate(lines) if "transA,transB," in s)
    names, values = lines[h].split(","), lines[h + 1].split(",")
    at = int(len(names) * position)
    lines[h] = ",".join(names[:at] + ["new_metric_2027"] + names[at:])
    lines[h + 1] = ",".join(values[:at] + ["7"] + values[at:])
    (before,) = parse_bench_output(text).to_dict("records")
    (after,) = parse_bench_output("\n".join(lines)).to_dict("records")
    assert after.pop("new_metric_2027") == 7
    assert {k: v for k, v in after.items() if v == v} == {k: v for k, v in before.items()
                                                            if v == v}


@pytest.mark.parametrize("column", ["us", "m", "compute_type", "transB"])
def test_a_row_with_an_empty_required_field_is_refused_naming_the_column(column):
    text = RECORDED["perf"].read_text()
    lines = text.splitlines()
    h = next(i for i, s in enumerate(lines) if "transA,transB," in s)
    names = re.sub(r"^\[\d+\]:", "", lines[h]).split(",")
    values = lines[h + 1].split(",")
    values[names.index(column)] = ""
    lines[h + 1] = ",".join(values)
    with pytest.raises(BenchOutputError, match=rf"out\.txt:{h + 2}: .*\b{column}\b"):
        parse_bench_output("\n".join(lines), source="out.txt")


def test_a_short_row_is_refused_naming_the_columns_without_a_value():
    text = RECORDED["perf"].read_text()
    lines = text.splitlines()
    h = next(i for i, s in enumerate(lines) if "transA,transB," in s)
    lines[h + 1] = lines[h + 1].rsplit(",", 2)[0]  # the build died after "efficiency"
    with pytest.raises(BenchOutputError,
                       match=r"no value for column\(s\) hipblaslt-GB/s, us"):
        parse_bench_output("\n".join(lines), source="out.txt")
