"""bench/decode_ablation.py (issue 23: where the shipped shard kernels lose time) compiles for
sm_90 without a GPU, and its ablations take out what they say: ``noreduce`` has no atomics, ``atomics_only`` no arrival counter, ``sync_only`` no fp32 adds,
``onex`` keeps one token panel instead of a pipeline of them. Its measurements are in
bench/RESULTS.md; nothing it builds is shipped."""
import pytest

from .conftest import load_bench

pytest.importorskip("triton")


def load_probe():
    return load_bench("decode_ablation")


@pytest.mark.parametrize("gemm", [(1280, 16), (8192, 1)], ids=["split16", "unsplit"])
def test_the_ablations_take_out_what_they_name(gemm):
    probe = load_probe()
    shape = probe.kernel_shape(probe.SHIPPED[gemm])
    full = probe.compile_variant(shape, probe.SHIPPED_REDUCE, x_once=False)
    noreduce = probe.compile_variant(shape, probe.NO_REDUCE, x_once=False)
    onex = probe.compile_variant(shape, probe.SHIPPED_REDUCE, x_once=True)
    split = shape["SPLIT_K"] > 1
    assert ("atom.global" in full.asm["ptx"]) == split
    assert "atom.global" not in noreduce.asm["ptx"]
    if split:
        data = probe.compile_variant(shape, probe.DATA_ONLY, x_once=False).asm["ptx"]
        sync = probe.compile_variant(shape, probe.SYNC_ONLY, x_once=False).asm["ptx"]
        assert "add.v4.f32" in data and "add.u32" not in data
        assert "add.v4.f32" not in sync and "acq_rel.add.u32" in sync
    assert "wgmma.mma_async" in full.asm["ptx"] and "wgmma.mma_async" in onex.asm["ptx"]
    # the pipeline holds num_stages token panels; onex holds one
    token_panel = shape["BLOCK_M"] * shape["BLOCK_K"] * 2
    assert full.metadata.shared - onex.metadata.shared >= (shape["num_stages"] - 1) * token_panel


def test_every_gemm_has_its_shipped_shape_and_it_fits():
    probe = load_probe()
    for (m, n), name in probe.SHIPPED.items():
        problem = probe.parse_gemm(f"{m}x{n}x{8192 if m == 1280 else 1024}")
        for shape in [probe.kernel_shape(name)]:
            stages = shape["num_stages"]
            assert stages * (shape["BLOCK_M"] + shape["BLOCK_N"]) * shape["BLOCK_K"] * 2 \
                <= 227 * 1024
            assert shape["SPLIT_K"] <= -(-problem.k // shape["BLOCK_K"])
