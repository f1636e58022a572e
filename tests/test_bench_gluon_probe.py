"""bench/gluon_decode_probe.py (issue 23's warp-specialized decode probe) still compiles for
sm_90 without a GPU: its kernel is warp-specialized (a loader partition that gives registers
back: setmaxnreg) and issues wgmma, unsplit and with the atomic split-K reduction. The probe's
measurements are in bench/RESULTS.md; it is not a template."""
import pytest

from .conftest import load_bench

pytest.importorskip("triton.experimental.gluon.language.nvidia.hopper")


def load_probe():
    return load_bench("gluon_decode_probe")


@pytest.mark.parametrize("cfg", [(16, 64, 128, 13, 4, 80), (64, 64, 64, 1, 4, 128)],
                         ids=["split13", "unsplit"])
def test_the_probe_kernel_compiles_warp_specialized_for_sm90(cfg):
    probe = load_probe()
    compiled = probe.compile_config(cfg)
    ptx = compiled.asm["ptx"]
    assert "setmaxnreg" in ptx and "wgmma.mma_async" in ptx
    assert ("atom.global" in ptx) == (cfg[3] > 1)
    block_m, block_n, block_k, _, stages, _ = cfg
    assert compiled.metadata.shared >= stages * (block_m + block_n) * block_k * 2


def test_the_probe_configs_fit_the_shared_memory():
    probe = load_probe()
    for gemm in ("1280x1x8192", "1280x96x8192", "8192x16x1024"):
        configs = probe.configs_for(probe.parse_gemm(gemm))
        assert configs
        for block_m, block_n, block_k, split, stages, _ in configs:
            assert stages * (block_m + block_n) * block_k * 2 <= 220 * 1024 and split >= 1
