"""Reading tuning YAMLs back (what the optimize phase consumes), and rejecting broken ones."""
from pathlib import Path

import pytest

from geko_lib.gemm import GemmType
from geko_lib.tuning import configure
from geko_lib.tuning.problem import TuningConfig, TuningConfigError

MALFORMED = Path(__file__).parent / "data" / "tuning" / "malformed"


def test_round_trip_of_a_written_config(tmp_path):
    gemm_type = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    (path,) = configure.configure(gemm_type, [(4096, 16, 1, 4096)], "gfx950", "ductile",
                                  out_dir=tmp_path)
    cfg = TuningConfig.load(path)
    assert cfg.gemm_type == gemm_type and cfg.sizes == [(4096, 16, 1, 4096)]
    assert cfg.backend == "Ductile" and cfg.groups and "MatrixInstruction" in cfg.groups[0][0]
    assert len(cfg.group_weights[0]) == len(cfg.groups[0])
    assert cfg.n_kernels > 1000


@pytest.mark.parametrize("name, words", [
    ("no_problem_type.yaml", "BenchmarkProblems"),
    ("bad_data_type.yaml", "ProblemType"),
    ("short_size.yaml", "Exact"),
    ("no_sizes.yaml", "no ProblemSizes"),
    ("broken_yaml.yaml", "cannot read"),
])
def test_malformed_tuning_files_are_refused_by_name(name, words):
    with pytest.raises(TuningConfigError, match=words) as info:
        TuningConfig.load(MALFORMED / name)
    assert name in str(info.value)
