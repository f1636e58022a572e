"""combine's checks on its sources, in process (issue 24): a source of this very workload file
that serves a GEMM the workload lacks (one its tuning turned into another type) is refused as a
source of another workload is; a refusal says what the source's workload was (never "None");
this campaign's own workdir, or a source named twice, is refused."""

import pytest

from geko_lib.campaign import combine
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.library import logic
from geko_lib.platforms import get, sim

TF32 = GemmType("T", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_xf32_r")
PLAIN = GemmType("T", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r")
SIZE = (1024, 512, 1, 2048)


def library_of(gemm_type):
    platform = get({"platform": "sim", "arch": "gfx950"})
    lib = logic.build(platform.library_template(gemm_type),
                      [(GemmProblem(gemm_type, *SIZE), sim.catalogue(gemm_type).params(0), 1.0)])
    return {logic.file_name("gfx950", gemm_type): lib}


def test_a_source_of_the_same_workload_serving_another_type_is_refused(tmp_path):
    campaign = {"workload_sha256": "abc"}
    recorded = {"identity": {"workload_sha256": "abc", "input_path": "/data/log.yaml"}}
    with pytest.raises(combine.CombineError) as refused:
        combine.check_part_of(tmp_path / "tune", recorded, library_of(PLAIN), {(TF32, SIZE)},
                              campaign)
    text = str(refused.value)
    assert "serves 1 GEMM(s) that are not in this campaign's workload" in text
    assert "its workload is /data/log.yaml" in text and "changed their type" in text
    combine.check_part_of(tmp_path / "tune", recorded, library_of(TF32), {(TF32, SIZE)},
                          campaign)  # the right type is a source


def test_a_refusal_names_a_missing_workload_in_words(tmp_path):
    with pytest.raises(combine.CombineError) as refused:
        combine.check_part_of(tmp_path / "x", {"identity": {}}, library_of(PLAIN), set())
    assert "None" not in str(refused.value)
    assert "records no workload" in str(refused.value)


def test_this_workdir_and_a_source_named_twice_are_refused(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(combine.CombineError, match="this campaign's own workdir"):
        combine.check_not_this(tmp_path / "." / "", tmp_path, set())
    seen = set()
    combine.check_not_this(other, tmp_path, seen)
    with pytest.raises(combine.CombineError, match="named twice"):
        combine.check_not_this(tmp_path / "other" / ".." / "other", tmp_path, seen)
