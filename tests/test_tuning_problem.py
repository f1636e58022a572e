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


def test_a_fork_parameter_some_group_entries_also_set_folds_into_the_group(tmp_path):
    """gfx950 big-tile MI entries carry MIArchVgpr: False while the fork also lists
    MIArchVgpr: the entry's own value wins, the other entries get each fork value."""
    from geko_lib.tuning import optimize

    cfg = TuningConfig(path=tmp_path / "X_TN_0.yaml", gemm_type=GemmType(
        "T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r"), sizes=[(64, 64, 1, 64)],
        fork={"MIArchVgpr": [False, True], "DepthU": [32, 64]},
        groups=[[{"MatrixInstruction": [1], "MIArchVgpr": False}, {"MatrixInstruction": [2]}]],
        backend="Ductile",
        backend_config={"weights": [{"group_0": [3.0, 1.0]}]})
    space = optimize.space_of(cfg)
    assert set(space.names) == {"DepthU", "group_0"}
    entries = list(dict(zip(space.names, space.values))["group_0"])
    assert entries == [{"MatrixInstruction": [1], "MIArchVgpr": False},
                       {"MatrixInstruction": [2], "MIArchVgpr": False},
                       {"MatrixInstruction": [2], "MIArchVgpr": True}]
    assert space.size == 2 * 3
