"""Triton templates and Triton tune mode of the cuda platform.

CPU tests: configs, feasibility rules, the tuning YAML and the GA with a fake evaluator. With
triton installed (no GPU needed) every template is also compiled for sm_90. GPU tests (marker
``gpu``) run the kernels against the float32 reference.
"""

import numpy as np
import pytest
import yaml

from geko_lib import library as liblogic
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.platforms.cuda import triton_gemm as tg
from geko_lib.platforms.cuda import tune as ctune
from geko_lib.tuning import build_dir as build_dirs

BF16 = dict(a_type="bf16_r", b_type="bf16_r", c_type="bf16_r", d_type="bf16_r",
            compute_type="c_f32_r")


def gtype(ta="T", tb="N", **types):
    return GemmType(ta, tb, **{**BF16, **types})


def problem(m, n, k, ta="T", tb="N", batch=1, **types):
    return GemmProblem(gtype(ta, tb, **types), m, n, batch, k)


LLAMA_DECODE = problem(4096, 16, 4096)  # 16 tokens x 4096 x 4096
LLAMA_PREFILL = problem(4096, 2048, 4096)


# --- configs ----------------------------------------------------------------------------------

def test_config_name_params_round_trip():
    cfg = tg.TritonConfig("tiled", 128, 128, 64, 8, 1, 8, 3)
    assert cfg.name == "triton_tiled_128x128x64_g8_k1_w8_s3"
    assert tg.TritonConfig.from_params(cfg.to_params()) == cfg
    assert tg.TritonConfig.from_name(cfg.name) == cfg
    assert cfg.to_params() == {"template": "tiled", "block_m": 128, "block_n": 128,
                               "block_k": 64, "group_m": 8, "split_k": 1, "num_warps": 8,
                               "num_stages": 3}
    tma = tg.TritonConfig("persistent_tma", 128, 256, 64, num_warps=8)
    assert tg.TritonConfig.from_name(tma.name) == tma
    # YAML round trip, as library logic stores it
    assert tg.TritonConfig.from_params(yaml.safe_load(yaml.safe_dump(tma.to_params()))) == tma


@pytest.mark.parametrize("params, message", [
    ({"template": "cutlass", "block_m": 64, "block_n": 64, "block_k": 32}, "unknown Triton"),
    ({"template": "tiled", "block_m": 64, "block_n": 64}, "lacks block_k"),
    ({"template": "tiled", "block_m": 64, "block_n": 64, "block_k": "x"}, "integer"),
    ({"template": "tiled", "block_m": 64, "block_n": 64, "block_k": 32, "swizzle": 1},
     "unknown Triton config keys"),
])
def test_config_rejects_bad_params(params, message):
    with pytest.raises(tg.TritonConfigError, match=message):
        tg.TritonConfig.from_params(params)


# --- feasibility --------------------------------------------------------------------------------

def reason(cfg, prob=LLAMA_PREFILL, **kw):
    return tg.infeasible_reason(cfg, prob, **kw)


def test_shared_memory_rule_hand_computed():
    # persistent: 3 x (128x64 + 64x256) x 2 B = 147456, + 128x256x2 B output tile = 212992,
    # + 1024 reserve = 214016 <= 232448
    ok = tg.TritonConfig("persistent_tma", 128, 256, 64, num_warps=8, num_stages=3)
    assert tg.smem_bytes(ok, 2, 2) == 214016
    assert reason(ok) is None
    # 4 stages: 196608 + 65536 + 1024 = 263168 > 232448
    big = tg.TritonConfig("persistent_tma", 128, 256, 64, num_warps=8, num_stages=4)
    assert tg.smem_bytes(big, 2, 2) == 263168
    assert "shared memory 263168 B" in reason(big)
    assert reason(big, smem_limit=300_000) is None
    # tiled: 4 x (128x128 + 128x128) x 2 B = 262144 + 1024 (epilogue reuses the buffers)
    tiled = tg.TritonConfig("tiled", 128, 128, 128, num_warps=8, num_stages=4)
    assert tg.smem_bytes(tiled, 2, 2) == 263168
    assert "shared memory" in reason(tiled)
    # fp8 halves the pipeline: 4 x 32768 x 1 + 1024
    assert tg.smem_bytes(tiled, 1, 2) == 132096


def test_register_rule_hand_computed():
    # 256 x 128 fp32 accumulators over 4 warps = 256 per thread > 192
    cfg = tg.TritonConfig("tiled", 256, 128, 32, num_warps=4, num_stages=2)
    assert tg.acc_registers(cfg) == 256
    assert "256 fp32 registers" in reason(cfg)
    # over 8 warps: 128 per thread
    assert reason(tg.TritonConfig("tiled", 256, 128, 32, num_warps=8, num_stages=2)) is None


def test_block_sizes_against_the_problem():
    decode = LLAMA_DECODE
    assert "block_m 64 exceeds N" in reason(tg.TritonConfig("tiled", 64, 64, 64), decode)
    assert reason(tg.TritonConfig("tiled", 16, 64, 64), decode) is None
    one_token = problem(4096, 1, 4096)
    assert reason(tg.TritonConfig("tiled", 16, 64, 64), one_token) is None  # 16 is the floor
    assert "block_k 256 exceeds K" in reason(tg.TritonConfig("tiled", 16, 64, 256),
                                             problem(4096, 16, 100))
    assert "power of two" in reason(tg.TritonConfig("tiled", 48, 64, 64))
    assert "fp8" in reason(tg.TritonConfig("tiled", 64, 64, 16),
                           problem(4096, 2048, 4096, a_type="f8_r", b_type="f8_r"))


def test_split_k_rules():
    assert "use tiled" in reason(tg.TritonConfig("splitk", 16, 64, 128, split_k=1), LLAMA_DECODE)
    # K 4096 / 128 = 32 blocks: 32 slices fine, 64 not
    assert reason(tg.TritonConfig("splitk", 16, 64, 128, split_k=32), LLAMA_DECODE) is None
    assert "some slices would be empty" in reason(
        tg.TritonConfig("splitk", 16, 64, 128, split_k=64), LLAMA_DECODE)
    assert "split_k 2 != 1" in reason(tg.TritonConfig("tiled", 16, 64, 128, split_k=2),
                                      LLAMA_DECODE)
    # workspace: 1 x 64 tiles x 4 slices x 16 x 64 x 4 B
    assert tg.workspace_bytes(tg.TritonConfig("splitk", 16, 64, 128, split_k=4),
                              LLAMA_DECODE) == 64 * 4 * 16 * 64 * 4


def test_tma_alignment_and_types():
    cfg = tg.TritonConfig("persistent_tma", 128, 128, 64, num_warps=8, num_stages=3)
    # K = 4100 bf16: X rows 8200 B, not a multiple of 16
    odd_k = problem(4096, 2048, 4100)
    assert "16-byte aligned" in reason(cfg, odd_k)
    assert reason(tg.TritonConfig("tiled", 128, 128, 64, num_warps=8), odd_k) is None
    # every transpose is fine when aligned (descriptors on the stored tensors)
    for ta in "NT":
        for tb in "NT":
            assert reason(cfg, problem(4096, 2048, 4096, ta, tb)) is None
    fp8 = dict(a_type="f8_r", b_type="f8_r")
    assert reason(cfg, problem(4096, 2048, 4096, "T", "N", **fp8)) is None
    assert "TN" in reason(cfg, problem(4096, 2048, 4096, "N", "T", **fp8))
    assert "batch_count 2" in reason(cfg, problem(4096, 2048, 4096, batch=2))
    assert "mixed input" in reason(cfg, problem(4096, 2048, 4096, a_type="f8_r", b_type="bf8_r"))
    i8 = problem(4096, 2048, 4096, a_type="i8_r", b_type="i8_r", c_type="i32_r",
                 d_type="i32_r", compute_type="c_i32_r")
    assert "input type i8_r" in reason(cfg, i8)
    assert reason(cfg, problem(4096, 2048, 4096, d_type="f32_r", c_type="f32_r")) is None


def test_geometry_matches_the_operand_layout():
    # X = op(B)^T (N x K), Y = op(A)^T (K x M), D_mem (N x M) as timing.make_operands lays out
    g = tg.geometry(problem(300, 20, 40, "T", "N"))
    assert (g["R"], g["C"], g["K"]) == (20, 300, 40)
    assert g["sx"] == (40, 1) and g["sy"] == (1, 40) and g["sd"] == (300, 1)
    g = tg.geometry(problem(300, 20, 40, "N", "T"))
    assert g["sx"] == (1, 20) and g["sy"] == (300, 1)
    bases = tg.tma_bases(problem(300, 20, 40, "N", "T"))
    assert bases["x"] == {"shape": (40, 20), "k_major": False}
    assert bases["y"] == {"shape": (40, 300), "k_major": False}


def test_inductor_like_configs():
    configs = tg.inductor_like_configs()
    assert len(configs) == 28 and len({c.name for c in configs}) == 28
    assert sum(c.template == "persistent_tma" for c in configs) == 8
    assert all(c.group_m == 8 and c.split_k == 1 for c in configs)
    shrunk = tg.inductor_like_configs(LLAMA_DECODE)
    assert shrunk and all(c.block_m == 16 for c in shrunk)
    assert all(tg.infeasible_reason(c, LLAMA_DECODE) is None for c in shrunk)
    assert len(set(shrunk)) == len(shrunk)


def test_compile_all_reports_infeasible_without_compiling():
    bad = tg.TritonConfig("tiled", 256, 256, 64, num_warps=4)
    out = tg.compile_all([bad], LLAMA_PREFILL, device=0, workers=1)
    assert out[bad].startswith("infeasible: ")


def test_decode_config_names_round_trip():
    for template in tg.DECODE_TEMPLATES:
        cfg = tg.TritonConfig(template, 16, 64, 128, 1, 4, 4, 3)
        assert tg.TritonConfig.from_name(cfg.name) == cfg
        assert tg.TritonConfig.from_params(cfg.to_params()) == cfg
    assert tg.TritonConfig.from_name("triton_decode_mmaw_16x64x128_g1_k4_w4_s3").template == \
        "decode_mmaw"


def test_decode_feasibility_rules_hand_computed():
    one = problem(4096, 1, 4096)
    fma = tg.TritonConfig("decode_fma", 1, 8, 512, 1, 1, 4, 3)
    assert reason(fma, one) is None
    # 8 tokens x 8 rows x 512 K = 32768 products over 128 threads = 256 registers > 128
    assert "256 fp32 registers" in reason(tg.TritonConfig("decode_fma", 8, 8, 512, 1, 1, 4, 3),
                                          problem(4096, 8, 4096))
    assert reason(tg.TritonConfig("decode_fma", 8, 8, 512, 1, 1, 8, 3),
                  problem(4096, 8, 4096)) is None
    # tokens per pass: 1..8 on the CUDA cores, 16..128 through tl.dot, never past N padded
    assert "block_m 16 is not a power of two in [1, 8]" in reason(
        tg.TritonConfig("decode_fma", 16, 8, 256, 1, 1, 4, 3), LLAMA_DECODE)
    assert "block_m 8 is not a power of two in [16, 128]" in reason(
        tg.TritonConfig("decode_mmaw", 8, 64, 128, 1, 1, 4, 3), LLAMA_DECODE)
    assert "block_m 4 exceeds N" in reason(tg.TritonConfig("decode_fma", 4, 8, 256, 1), one)
    assert reason(tg.TritonConfig("decode_mmaw", 16, 64, 128, 1, 4, 4, 3), one) is None
    assert "group_m 8 != 1" in reason(tg.TritonConfig("decode_mma", 16, 64, 128, 8, 1), one)
    # shared memory of the dot modes: 3 x (16 + 128) x 256 x 2 B + 1024 = 222208 fits, 4 not
    assert reason(tg.TritonConfig("decode_mmaw", 16, 128, 256, 1, 1, 8, 3), one) is None
    assert "shared memory 295936 B" in reason(
        tg.TritonConfig("decode_mmaw", 16, 128, 256, 1, 1, 8, 4), one)
    # split_k 1 is the plain decode kernel; slices may not be empty
    assert "some slices would be empty" in reason(
        tg.TritonConfig("decode_fma", 1, 8, 1024, 1, 8, 4, 3), problem(4096, 1, 4096 + 3072))
    assert tg.workspace_bytes(tg.TritonConfig("decode_fma", 1, 8, 512, 1, 4), one) == \
        512 * 4 * 1 * 8 * 4
    assert tg.workspace_bytes(fma, one) == 0
    fp8 = problem(4096, 16, 4096, a_type="f8_r", b_type="f8_r")
    assert "only decode_fma" in reason(tg.TritonConfig("decode_mma", 16, 64, 128, 1), fp8)
    assert reason(tg.TritonConfig("decode_fma", 2, 16, 128, 1), fp8) is None


def test_rule_seeds_are_feasible_and_fill_the_gpu():
    for n in (1, 5, 8, 16, 64, 128):
        prob = problem(4096, n, 4096)
        seeds = ctune.rule_seeds(prob)
        assert len(seeds) >= 4 and len(set(seeds)) == len(seeds)
        assert all(tg.infeasible_reason(c, prob) is None for c in seeds)
        assert all(c.template in tg.DECODE_TEMPLATES for c in seeds)
        assert (any(c.template == "decode_fma" for c in seeds)) == (n <= 8)
    # 1280 rows of 8 per program are 160 programs: split-K raises that past two per SM (one
    # wave, at least, for the shard seeds: fewer slices to reduce)
    small = ctune.rule_seeds(problem(1280, 1, 8192))
    for cfg in small:
        programs = -(-1280 // cfg.block_n) * cfg.split_k
        wanted = tg.H200_SMS if cfg.template in ctune.SHARD_TEMPLATES else 2 * tg.H200_SMS
        assert programs >= wanted or cfg.split_k == 16
    # a tensor-parallel shard gets TMA and atomic-reduction seeds, split-K in both
    shard = ctune.rule_seeds(problem(1280, 48, 8192))
    for template in ctune.SHARD_TEMPLATES:
        assert any(c.template == template and c.split_k > 1 for c in shard), template


def test_tma_and_atomic_decode_rules_hand_computed():
    shard = problem(1280, 96, 8192)
    tma = tg.TritonConfig("decode_tma", 128, 64, 128, 1, 8, 8, 3)
    assert reason(tma, shard) is None
    assert "TN, a linear layer" in reason(tma, problem(1280, 96, 8192, "N", "N"))
    assert "16-byte aligned rows: K = 1001" in reason(
        tg.TritonConfig("decode_tma", 16, 64, 128, 1, 1, 4, 3), problem(1280, 16, 1001))
    assert "split_k 1 < 2 for decode_tma_atomic (without split-K it is decode_tma)" in reason(
        tg.TritonConfig("decode_tma_atomic", 16, 64, 128, 1, 1, 4, 3), shard)
    assert reason(tg.TritonConfig("decode_mmaw_atomic", 16, 64, 128, 1, 1, 4, 3), shard) \
        .startswith("split_k 1 < 2")
    # ordered split-K parks one partial per slice; the atomic one a single zeroed tile
    tiles = 1 * (1280 // 64)
    assert tg.workspace_bytes(tma, shard) == tiles * 8 * 128 * 64 * 4
    assert tg.workspace_bytes(tg.TritonConfig("decode_tma_atomic", 128, 64, 128, 1, 8, 8, 3),
                              shard) == tiles * 128 * 64 * 4


def test_seeds_from_an_earlier_tuning_come_first(tmp_path):
    sizes = [[4096, 16, 1, 4096]]
    paths, _, evaluate = run_fake(tmp_path, sizes)
    logic = ctune.optimize(paths[0], tmp_path / "b", 0, evaluate=evaluate)
    lib = liblogic.load(next(logic.glob("*.yaml")))
    (size, index, _), = lib.size_entries()
    won = ctune.config_of(lib.solutions[lib.solution_position()[index]])
    # a similar shape (same tokens, other M) is seeded with that winner first
    out = ctune.configure(gtype(), [[6144, 16, 1, 4096]], tmp_path / "again",
                          {"seed_library": str(logic)})
    seeds = ctune.TritonTuning.load(out[0]).seeds[0]
    assert tg.TritonConfig.from_params(seeds[0]) == won
    with pytest.raises(ctune.TuningFileError, match="seed_library"):
        ctune.configure(gtype(), sizes, tmp_path / "x", {"seed_library": str(tmp_path / "no")})


def test_shipped_seed_library_is_found_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a campaign's workdir
    out = ctune.configure(gtype(), [[4096, 1, 1, 4096]], tmp_path / "c",
                          {"seed_library": "profiles/h200/decode_seeds"})
    seeds = ctune.TritonTuning.load(out[0]).seeds[0]
    shipped = dict(ctune.seed_winners("profiles/h200/decode_seeds", gtype()))
    assert tg.TritonConfig.from_params(seeds[0]) == shipped[(4096, 1, 1, 4096)]


def test_tuning_file_seed_errors_name_the_file(tmp_path):
    path = ctune.configure(gtype(), SIZES[:1], tmp_path)[0]
    data = yaml.safe_load(path.read_text())
    data["Seeds"] = [[{"template": "decode_fma", "block_m": 1, "block_n": 8}]]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ctune.TuningFileError, match=f"{path.name}.*Seeds.*lacks block_k"):
        ctune.TritonTuning.load(path)
    data["Seeds"] = []
    data["Sizes"].append([4096, 8, 1, 4096])
    data["Seeds"] = [[]]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ctune.TuningFileError, match="Seeds has 1 lists for 2 Sizes"):
        ctune.TritonTuning.load(path)


# --- compile for sm_90 without a GPU (needs triton, not torch or a GPU) ---------------------

COMPILE_CASES = [
    (tg.TritonConfig("tiled", 64, 128, 64, 8, 1, 4, 3), problem(4096, 2048, 4096, "N", "N")),
    (tg.TritonConfig("tiled", 128, 128, 32, 8, 1, 8, 3), problem(4000, 2048, 4000, "T", "T")),
    (tg.TritonConfig("splitk", 16, 64, 128, 8, 4, 4, 4), LLAMA_DECODE),
    (tg.TritonConfig("persistent_tma", 128, 256, 64, 8, 1, 8, 3), LLAMA_PREFILL),
    (tg.TritonConfig("persistent_tma", 128, 128, 64, 8, 1, 8, 4),
     problem(4096, 2048, 4096, "N", "T")),
]


@pytest.mark.parametrize("cfg, prob", COMPILE_CASES, ids=lambda v: getattr(v, "name", None))
def test_templates_compile_for_sm90(cfg, prob):
    pytest.importorskip("triton")
    compiled = tg.compile_offline(cfg, prob)
    shared = compiled.metadata.shared
    assert 0 < shared <= tg.smem_bytes(cfg, prob.type.input_bytes, prob.type.output_bytes)
    if cfg.template == "persistent_tma":
        assert "cp.async.bulk.tensor" in compiled.asm["ptx"]


@pytest.mark.parametrize("cfg, prob, wanted", [
    # weights in 16-byte loads marked evict_first, no tensor cores
    (tg.TritonConfig("decode_fma", 1, 8, 512, 1, 1, 4, 3), problem(4096, 1, 4096),
     "ld.global.L1::evict_first.L2::cache_hint.v4"),
    (tg.TritonConfig("decode_fma", 4, 8, 128, 1, 4, 4, 3), problem(4096, 4, 4096), "atom"),
    (tg.TritonConfig("decode_mma", 16, 64, 256, 1, 4, 4, 3), LLAMA_DECODE, "mma.sync"),
    # the weights as the MMA's rows: Hopper's warpgroup MMA
    (tg.TritonConfig("decode_mmaw", 16, 128, 128, 1, 2, 4, 4), LLAMA_DECODE, "wgmma"),
    # panels by the tensor memory accelerator; split-K by 16-byte vector atomics
    (tg.TritonConfig("decode_tma", 16, 64, 128, 1, 8, 4, 4), problem(1280, 16, 8192),
     "cp.async.bulk.tensor"),
    (tg.TritonConfig("decode_tma_atomic", 128, 64, 128, 1, 8, 8, 3), problem(1280, 96, 8192),
     "add.v4.f32"),
    (tg.TritonConfig("decode_mmaw_atomic", 16, 64, 256, 1, 8, 4, 3), problem(1280, 16, 8192),
     "add.v4.f32"),
], ids=lambda v: getattr(v, "name", None) if not isinstance(v, str) else v)
def test_decode_templates_compile_for_sm90(cfg, prob, wanted):
    pytest.importorskip("triton")
    compiled = tg.compile_offline(cfg, prob)
    assert wanted in compiled.asm["ptx"]
    assert compiled.metadata.shared <= tg.smem_bytes(cfg, 2, 2)


# --- tuning YAML ------------------------------------------------------------------------------

SIZES = [[4096, 16, 1, 4096], [4096, 2048, 1, 4096], [14336, 128, 1, 4096],
         [4096, 8192, 1, 14336], [4096, 16, 1, 4096], [4096, 64, 4, 4096]]


def test_configure_writes_one_yaml_per_cluster(tmp_path):
    out = tmp_path / "configs"
    (out).mkdir()
    (out / "BBS_TN_7.yaml").write_text("stale")
    paths = ctune.configure(gtype(), SIZES, out, {"backend": "ductile", "n_gen": 5, "seed": 3})
    assert [p.name for p in paths] == ["BBS_TN_0.yaml", "BBS_TN_1.yaml"]
    assert ctune.names_ok(paths)
    assert not (out / "BBS_TN_7.yaml").exists()
    decode = yaml.safe_load(paths[0].read_text())
    assert decode["Format"] == "geko-triton-tuning" and decode["Cluster"] == "decode"
    assert decode["Sizes"] == [[4096, 16, 1, 4096], [14336, 128, 1, 4096]]  # batch 4 dropped
    assert decode["GemmType"]["transA"] == "T" and decode["GemmType"]["a_type"] == "bf16_r"
    # decode GEMMs get a GA each (per_size); the prefill cluster shares one
    assert decode["GA"] == {"n_gen": 3, "population": 12, "seed": 3, "per_size": True,
                            "finalists": 4, "warm_start": True, "cuda_kernels": True}
    assert {"template": "splitk", "split_k": 8} in decode["Space"]["kernel"]
    assert decode["Space"]["kernel"][0]["template"] == "decode_fma"  # decode family first
    assert set(decode["Space"]) == set(ctune.SPACE_KEYS)
    assert len(decode["Seeds"]) == 2 and all(decode["Seeds"])
    for size, seeds in zip(decode["Sizes"], decode["Seeds"]):
        prob = GemmProblem(gtype(), *size)
        assert all(tg.infeasible_reason(tg.TritonConfig.from_params(p), prob) is None
                   for p in seeds)
    prefill = ctune.TritonTuning.load(paths[1])
    assert prefill.ga == {"n_gen": 5, "population": 32, "seed": 3}
    assert prefill.seeds == []
    assert prefill.cluster == "prefill"
    assert prefill.sizes == [(4096, 2048, 1, 4096), (4096, 8192, 1, 14336)]
    assert prefill.library["ArchitectureName"] == "sm_90"


def test_configure_splits_large_clusters(tmp_path):
    sizes = [[4096, n, 1, 4096] for n in range(1, 11)]
    paths = ctune.configure(gtype(), sizes, tmp_path, {"max_sizes_per_config": 4})
    assert [len(ctune.TritonTuning.load(p).sizes) for p in paths] == [4, 4, 2]


def test_tuning_file_errors(tmp_path):
    bad = tmp_path / "BBS_TN_0.yaml"
    bad.write_text("Format: something-else\n")
    with pytest.raises(ctune.TuningFileError, match="not a Triton tuning file"):
        ctune.TritonTuning.load(bad)
    path = ctune.configure(gtype(), SIZES[:1], tmp_path)[0]
    data = yaml.safe_load(path.read_text())
    del data["Space"]["block_k"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ctune.TuningFileError, match="lacks block_k"):
        ctune.TritonTuning.load(path)


# --- optimize with a fake evaluator -----------------------------------------------------------

def fake_gflops(cfg, prob):
    """A smooth landscape: decode likes split-K with narrow rows, prefill likes big tiles."""
    score = 100.0 + cfg.block_n / 8 + cfg.num_stages
    if prob.n <= 128:
        score += 40 * (cfg.template == "splitk") + 10 * cfg.split_k - cfg.block_m
    else:
        score += cfg.block_m / 4 + 20 * (cfg.template == "persistent_tma")
    return score


def run_fake(tmp_path, sizes, n_gen=4, population=12, **options):
    paths = ctune.configure(gtype(), sizes, tmp_path / "configs",
                            {"n_gen": n_gen, "population": population, **options})
    calls = []

    def evaluate(configs, problems):
        for cfg in configs:  # never handed a config that no size can run
            assert any(tg.infeasible_reason(cfg, p) is None for p in problems)
        calls.append(len(configs))
        return np.array([[fake_gflops(c, p) for c in configs] for p in problems])

    return paths, calls, evaluate


def test_optimize_with_fake_evaluator_writes_library_logic(tmp_path):
    sizes = [[4096, 16, 1, 4096], [6144, 32, 1, 4096]]
    paths, calls, evaluate = run_fake(tmp_path, sizes, decode_n_gen=4, decode_population=12)
    build = tmp_path / "build_BBS_TN_0"
    logic_dir = ctune.optimize(paths[0], build, device=0, evaluate=evaluate)
    assert logic_dir == build / "3_LibraryLogic"
    # per size: the seeds, then at most 4 generations of 12, nothing measured twice
    tuning = ctune.TritonTuning.load(paths[0])
    seeds = tuning.seeds
    assert [tuning.one_size(i).ga["seed"] for i in (0, 1)] == [0, 1]  # own first populations
    assert calls[0] == len(seeds[0]) and sum(calls) <= len(seeds[0]) + len(seeds[1]) + 2 * 48
    assert sum(calls) > len(seeds[0]) + len(seeds[1]) + 12
    (path,) = logic_dir.glob("*.yaml")
    assert path.name == "h200_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml"
    assert path.read_text().startswith("# cuda platform")
    lib = liblogic.load(path)
    assert lib.gemm_type == gtype()
    assert sorted(size for size, _, _ in lib.size_entries()) == [(4096, 16, 1, 4096),
                                                          (6144, 32, 1, 4096)]
    for size, index, gflops in lib.size_entries():
        sol = lib.solutions[lib.solution_position()[index]]
        assert sol["Backend"] == "triton"
        cfg = ctune.config_of(sol)
        assert sol["SolutionNameMin"] == cfg.name
        prob = GemmProblem(lib.gemm_type, *size)
        assert tg.infeasible_reason(cfg, prob) is None
        assert gflops == pytest.approx(fake_gflops(cfg, prob), rel=1e-3)
    assert (build / "size0" / build_dirs.CHECKPOINT).exists()
    assert (build / "size1" / build_dirs.CHECKPOINT).exists()
    assert build_dirs.build_state(build) == "completed"


def test_prefill_cluster_shares_one_ga(tmp_path):
    paths, calls, evaluate = run_fake(tmp_path, [[4096, 2048, 1, 4096], [4096, 512, 1, 4096]])
    ctune.optimize(paths[0], tmp_path / "b", device=0, evaluate=evaluate)
    assert len(calls) == 4 and all(n == 12 for n in calls)
    assert (tmp_path / "b" / build_dirs.CHECKPOINT).exists()


def test_optimize_resumes_from_checkpoint(tmp_path):
    sizes = [[4096, 2048, 1, 4096]]
    paths, calls, evaluate = run_fake(tmp_path, sizes, n_gen=3)
    first = ctune.optimize(paths[0], tmp_path / "a", 0, evaluate=evaluate)
    text = next(first.glob("*.yaml")).read_text()
    n_first = len(calls)
    # a rerun over the finished checkpoint evaluates nothing and writes the same library
    for p in first.glob("*.yaml"):
        p.unlink()
    again = ctune.optimize(paths[0], tmp_path / "a", 0, evaluate=evaluate)
    assert len(calls) == n_first
    assert next(again.glob("*.yaml")).read_text() == text


def test_optimize_zeroes_infeasible_sizes_and_fails_when_nothing_runs(tmp_path):
    sizes = [[4096, 16, 1, 4096]]
    paths, _, _ = run_fake(tmp_path, sizes, n_gen=2)

    def lying(configs, problems):  # claims speed for everything, including impossible sizes
        return np.full((len(problems), len(configs)), 50.0)

    logic = ctune.optimize(paths[0], tmp_path / "b", 0, evaluate=lying)
    lib = liblogic.load(next(logic.glob("*.yaml")))
    (size, index, _), = lib.size_entries()
    cfg = ctune.config_of(lib.solutions[lib.solution_position()[index]])
    assert tg.infeasible_reason(cfg, GemmProblem(lib.gemm_type, *size)) is None

    def broken(configs, problems):
        return np.zeros((len(problems), len(configs)))

    with pytest.raises(RuntimeError, match="no Triton config ran correctly"):
        ctune.optimize(paths[0], tmp_path / "c", 0, evaluate=broken)


def test_measurer_quarantines_the_config_a_crash_left_in_flight(tmp_path):
    path = ctune.configure(gtype(), SIZES[:1], tmp_path / "configs")[0]
    build = tmp_path / "build"
    build.mkdir()
    (build / ctune.IN_FLIGHT).write_text("triton_splitk_16x64x128_g8_k4_w4_s4\n")
    measurer = ctune.Measurer(ctune.TritonTuning.load(path), build, device=0)
    assert "triton_splitk_16x64x128_g8_k4_w4_s4" in measurer.quarantine
    assert not (build / ctune.IN_FLIGHT).exists()
    assert "triton_splitk_16x64x128_g8_k4_w4_s4" in (build / ctune.QUARANTINE).read_text()
    assert ctune.error_threshold(gtype()) == 1e-2
    exact = GemmType("T", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r")
    assert ctune.error_threshold(exact) == 1e-4


# --- GPU ----------------------------------------------------------------------------------------

def gpu_ops(prob, seed=0):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from geko_lib.platforms.cuda import timing

    return timing, timing.make_operands(prob, 0, seed, count=1)[0]


def check(cfg, prob, threshold=1e-2):
    timing, ops = gpu_ops(prob)
    assert tg.infeasible_reason(cfg, prob) is None, tg.infeasible_reason(cfg, prob)
    error = timing.checked_error(tg.launcher(cfg, ops), ops)
    assert error < threshold, f"{cfg.name} on {prob.name}: relative error {error}"


SMALL = [problem(192, 48, 160), problem(200, 40, 72, "N", "T"), problem(64, 16, 48, "N", "N")]
GPU_CASES = (
    [(tg.TritonConfig("tiled", 32, 64, 32, 8, 1, 4, 3), problem(320, 96, 224, ta, tb))
     for ta in "NT" for tb in "NT"]
    + [(tg.TritonConfig("tiled", 64, 128, 64, 8, 1, 4, 3), problem(4096, 2048, 4096, ta, tb))
       for ta in "NT" for tb in "NT"]
    + [(tg.TritonConfig("tiled", 16, 64, 128, 8, 1, 4, 4), LLAMA_DECODE)]
    + [(tg.TritonConfig("splitk", 16, 32, 32, 4, 2, 4, 3), p) for p in SMALL]
    + [(tg.TritonConfig("splitk", 16, 64, 128, 8, 8, 4, 4), LLAMA_DECODE),
       (tg.TritonConfig("splitk", 16, 64, 128, 8, 4, 4, 4), problem(4096, 16, 4000, "T", "T")),
       (tg.TritonConfig("splitk", 64, 128, 64, 8, 2, 4, 3), LLAMA_PREFILL)]
    + [(tg.TritonConfig("persistent_tma", 64, 64, 32, 8, 1, 4, 3), problem(192, 48, 160, ta, tb))
       for ta in "NT" for tb in "NT"]
    + [(tg.TritonConfig("persistent_tma", 128, 256, 64, 8, 1, 8, 3), LLAMA_PREFILL),
       (tg.TritonConfig("persistent_tma", 16, 128, 128, 8, 1, 4, 4), LLAMA_DECODE),
       (tg.TritonConfig("persistent_tma", 128, 128, 64, 8, 1, 8, 4),
        problem(4096, 2048, 4096, "N", "T"))]
)


# the decode family on every layout, odd sizes (K not a multiple of block_k, a split count
# that does not divide the K blocks, tokens not a multiple of block_m) and Llama decode shapes
DECODE_GPU_CASES = (
    [(tg.TritonConfig("decode_fma", 4, 8, 64, 1, 3, 4, 2), problem(300, 5, 1000, ta, tb))
     for ta in "NT" for tb in "NT"]
    + [(tg.TritonConfig("decode_mma", 16, 32, 64, 1, 3, 4, 3), problem(300, 20, 1000, ta, tb))
       for ta in "NT" for tb in "NT"]
    + [(tg.TritonConfig("decode_mmaw", 32, 64, 64, 1, 2, 4, 3), problem(300, 40, 1000, ta, tb))
       for ta in "NT" for tb in "NT"]
    + [(tg.TritonConfig("decode_fma", 1, 8, 512, 1, 1, 4, 3), problem(4096, 1, 4096)),
       (tg.TritonConfig("decode_fma", 1, 4, 512, 1, 1, 8, 1), problem(4096, 1, 4096)),
       (tg.TritonConfig("decode_fma", 8, 2, 256, 1, 3, 4, 2), problem(301, 5, 1000, "N", "N")),
       (tg.TritonConfig("decode_fma", 8, 8, 256, 1, 4, 4, 3), problem(1280, 8, 8192)),
       (tg.TritonConfig("decode_mma", 16, 64, 256, 1, 4, 4, 3), LLAMA_DECODE),
       (tg.TritonConfig("decode_mmaw", 128, 128, 128, 1, 2, 8, 3), problem(4096, 128, 4096)),
       (tg.TritonConfig("decode_mmaw", 16, 64, 128, 1, 1, 4, 4), problem(6144, 1, 4096))]
    # the shard kernels: atomic split-K on every layout and odd sizes, TMA on TN (odd sizes:
    # rows, tokens and K past the last box are zero-filled), tensor-parallel shard shapes
    + [(tg.TritonConfig("decode_mmaw_atomic", 32, 64, 64, 1, 3, 4, 3),
        problem(300, 40, 1000, ta, tb)) for ta in "NT" for tb in "NT"]
    + [(tg.TritonConfig("decode_tma", 32, 64, 64, 1, 3, 4, 3), problem(300, 40, 1000)),
       (tg.TritonConfig("decode_tma_atomic", 16, 64, 128, 1, 5, 4, 3), problem(300, 5, 1000)),
       (tg.TritonConfig("decode_tma", 16, 64, 128, 1, 1, 4, 4), problem(8192, 1, 1024)),
       (tg.TritonConfig("decode_tma", 16, 64, 128, 1, 8, 4, 4), problem(1280, 16, 8192)),
       (tg.TritonConfig("decode_tma_atomic", 128, 64, 128, 1, 8, 8, 3),
        problem(1280, 96, 8192)),
       (tg.TritonConfig("decode_mmaw_atomic", 64, 64, 128, 1, 16, 4, 3),
        problem(1280, 48, 8192)),
       (tg.TritonConfig("decode_mmaw", 128, 64, 128, 1, 8, 8, 3), problem(1280, 96, 8192))]
)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg, prob", GPU_CASES + DECODE_GPU_CASES,
                         ids=[f"{c.name}-{p.name}" for c, p in GPU_CASES + DECODE_GPU_CASES])
def test_gpu_template_matches_reference(cfg, prob):
    check(cfg, prob)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [tg.TritonConfig("decode_fma", 2, 16, 128, 1, 4, 4, 3),
                                 tg.TritonConfig("decode_mmaw", 16, 64, 64, 1, 8, 4, 3)],
                         ids=lambda c: c.name)
def test_gpu_decode_split_k_is_deterministic(cfg):
    """The last-arriving program sums the slices in split order: the same bits every call."""
    timing, ops = gpu_ops(problem(2048, 2, 4096), seed=4)
    torch = timing.torch()
    call = tg.launcher(cfg, ops)
    outs = []
    for _ in range(3):
        ops.d.fill_(float("nan"))
        call()
        torch.cuda.synchronize()
        outs.append(ops.d.clone())
    assert all(torch.equal(outs[0], o) for o in outs[1:])
    assert timing.relative_error(outs[0], timing.reference(ops)) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("types", [dict(d_type="f32_r", c_type="f32_r"),
                                   dict(a_type="f16_r", b_type="f16_r", c_type="f16_r",
                                        d_type="f16_r"),
                                   dict(a_type="f8_r", b_type="f8_r")])
def test_gpu_other_types(types):
    prob = problem(512, 64, 256, **types)
    for cfg in (tg.TritonConfig("tiled", 64, 64, 64, 8, 1, 4, 3),
                tg.TritonConfig("splitk", 64, 64, 64, 8, 2, 4, 3),
                tg.TritonConfig("persistent_tma", 64, 64, 64, 8, 1, 4, 3),
                tg.TritonConfig("decode_fma", 4, 16, 64, 1, 2, 4, 3),
                tg.TritonConfig("decode_mmaw", 64, 64, 64, 1, 2, 4, 3)):
        if tg.infeasible_reason(cfg, prob) is None or not cfg.template.startswith("decode"):
            check(cfg, prob)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg, prob", [
    (tg.TritonConfig("splitk", 16, 64, 128, 8, 8, 4, 4), LLAMA_DECODE),
    (tg.TritonConfig("tiled", 64, 128, 64, 8, 1, 4, 3), LLAMA_PREFILL),
    (tg.TritonConfig("persistent_tma", 128, 128, 64, 8, 1, 8, 3), LLAMA_PREFILL),
    (tg.TritonConfig("decode_fma", 8, 8, 128, 1, 4, 4, 3), problem(4096, 8, 4096)),
    (tg.TritonConfig("decode_mmaw", 16, 64, 128, 1, 4, 4, 4), LLAMA_DECODE),
    # the atomic reduction leaves its accumulator zeroed for the next replay
    (tg.TritonConfig("decode_tma_atomic", 32, 64, 128, 1, 8, 4, 3), problem(1280, 24, 8192)),
    (tg.TritonConfig("decode_mmaw_atomic", 16, 64, 128, 1, 4, 4, 3), LLAMA_DECODE),
], ids=lambda v: getattr(v, "name", None))
def test_gpu_graph_replay(cfg, prob):
    timing, ops = gpu_ops(prob)
    torch = timing.torch()
    call = tg.launcher(cfg, ops)
    ref = timing.reference(ops)
    call()  # compile and load outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    for replay in range(3):
        ops.d.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        error = timing.relative_error(ops.d, ref)
        assert error < 1e-2, f"replay {replay}: error {error}"
    # new inputs in the same buffers: the replay computes the new product
    ops.b.copy_(torch.randn_like(ops.b, dtype=torch.float32).to(ops.b.dtype))
    graph.replay()
    torch.cuda.synchronize()
    assert timing.relative_error(ops.d, timing.reference(ops)) < 1e-2


@pytest.mark.gpu
def test_gpu_check_catches_a_kernel_right_only_on_its_first_call():
    """A reduction that leaves its accumulator dirty is right once and wrong after: the numerical
    check runs consecutive calls, so it fails such a kernel."""
    timing, ops = gpu_ops(problem(256, 16, 128))
    ref = timing.reference(ops)
    calls = []

    def dirty():
        calls.append(1)
        ops.d.copy_(ref if len(calls) == 1 else ref * 1.05)

    assert timing.checked_error(dirty, ops, ref) > 0.04 and len(calls) == timing.CHECKED_CALLS
    assert timing.checked_error(lambda: ops.d.copy_(ref), ops, ref) < 1e-2


@pytest.mark.gpu
def test_gpu_compile_all_in_workers():
    gpu_ops(LLAMA_DECODE)
    good = tg.TritonConfig("splitk", 16, 64, 128, 8, 4, 4, 4)
    tiled = tg.TritonConfig("tiled", 16, 64, 64, 8, 1, 4, 3)
    bad = tg.TritonConfig("tiled", 256, 256, 64, 8, 1, 4, 3)
    out = tg.compile_all([good, tiled, bad], LLAMA_DECODE, device=0, workers=2)
    assert out[good] is None and out[tiled] is None
    assert out[bad].startswith("infeasible")


def test_a_tie_of_finalists_is_won_by_a_deterministic_kernel_then_by_name():
    ordered = tg.TritonConfig("decode_tma", 16, 64, 128, 1, 8, 4, 3)
    atomic = tg.TritonConfig("decode_tma_atomic", 16, 64, 128, 1, 8, 4, 3)
    other = tg.TritonConfig("decode_mmaw", 16, 64, 128, 1, 8, 4, 3)
    # the atomic kernel measures 0.5% faster: a tie, and the ordered reduction wins it
    assert ctune._tie_winner([1005.0, 1000.0], [atomic, ordered]) == (1000.0, ordered)
    # two deterministic kernels within the band: the lower name, whatever the order measured
    assert ctune._tie_winner([1000.0, 1008.0], [ordered, other])[1] == other
    assert ctune._tie_winner([1008.0, 1000.0], [ordered, other])[1] == other
    # outside the band the faster one wins; nothing correct: nothing wins
    assert ctune._tie_winner([1030.0, 1000.0], [atomic, ordered]) == (1030.0, atomic)
    assert ctune._tie_winner([0.0, 0.0], [atomic, ordered])[0] == 0.0


def test_tune_ships_the_tie_winner(tmp_path, monkeypatch):
    """Through optimize: the fake evaluator scores an atomic kernel 0.5% above everything
    else; the tuned library holds the deterministic kernel of the tie instead."""
    sizes = [[1280, 16, 1, 8192]]
    paths = ctune.configure(gtype(), sizes, tmp_path / "configs",
                            {"decode_n_gen": 1, "decode_population": 4})
    seeds = [tg.TritonConfig.from_params(p) for p in ctune.TritonTuning.load(paths[0]).seeds[0]]
    atomic = next(c for c in seeds if c.template == "decode_tma_atomic")
    ordered = next(c for c in seeds if c.template == "decode_tma")

    def evaluate(configs, problems):
        return np.array([[1005.0 if c == atomic else 1000.0 if c == ordered else 10.0
                          for c in configs] for _ in problems])

    logic = ctune.optimize(paths[0], tmp_path / "b", 0, evaluate=evaluate)
    lib = liblogic.load(next(logic.glob("*.yaml")))
    (size, index, _), = lib.size_entries()
    assert ctune.config_of(lib.solutions[lib.solution_position()[index]]) == ordered


# --- warm start (a persistent cache of decode winners) ---------------------------------------

def test_warm_cache_keeps_the_fastest_winner_per_shape_and_seeds_nearest_first(tmp_path,
                                                                             monkeypatch):
    from geko_lib.platforms.cuda import warm

    monkeypatch.setenv(warm.CACHE_ENV, str(tmp_path))
    shard, near = problem(1280, 16, 8192), problem(1280, 24, 8192)
    fast = tg.TritonConfig("decode_tma_atomic", 16, 64, 128, 1, 16, 4, 3)
    slow = tg.TritonConfig("decode_tma", 16, 64, 128, 1, 8, 4, 4)
    path = warm.store("H200_env1", shard, fast, 3000.0)
    assert path.parent == tmp_path / "cuda-warm"
    warm.store("H200_env1", shard, slow, 2000.0)  # slower: the cached winner stays
    warm.store("H200_env1", problem(8192, 1, 1024), slow, 1500.0)
    assert warm.seeds("H200_env1", shard) == ([fast.to_params(), slow.to_params()], True)
    cached, exact = warm.seeds("H200_env1", near)
    assert cached[0] == fast.to_params() and not exact  # nearest shape first
    # another environment (GPU, driver, cuBLASLt or Triton) reads nothing
    assert warm.seeds("H200_env2", shard) == ([], False)
    # another GEMM type, and configs that cannot run the shape, are no seeds
    assert warm.seeds("H200_env1", problem(1280, 16, 8192, "N", "N"))[0] == []


def test_warm_start_of_a_cached_shape_measures_the_seeds_and_skips_the_ga(tmp_path,
                                                                          monkeypatch):
    from geko_lib.platforms.cuda import warm

    monkeypatch.setenv(warm.CACHE_ENV, str(tmp_path / "cache"))
    paths = ctune.configure(gtype(), [[1280, 16, 1, 8192]], tmp_path / "configs",
                            {"decode_n_gen": 2, "decode_population": 6})
    tuning = ctune.TritonTuning.load(paths[0])
    assert tuning.ga["warm_start"] is True
    won = tg.TritonConfig("decode_tma_atomic", 16, 64, 64, 1, 32, 4, 4)
    calls = []

    def evaluate(configs, problems):
        calls.append(len(configs))
        return np.array([[5000.0 if c == won else 100.0 for c in configs] for _ in problems])

    cold = tuning.one_size(0)
    ctune._warm_seeds(cold, "env")  # nothing cached yet: the rule seeds, then the GA
    assert cold.ga["n_gen"] == 2
    ctune._tune_one_size(cold, tmp_path / "cold", evaluate, None)
    cold_calls, calls[:] = sum(calls), []
    warm.store("env", cold.problems[0], won, 5000.0)
    again = tuning.one_size(0)
    ctune._warm_seeds(again, "env")
    assert again.seeds[0][0] == won.to_params() and again.ga["n_gen"] == 0
    # besides the cached winners, one rule seed per template: a fraction of the cold seeds
    others = [p["template"] for p in again.seeds[0][1:]]
    assert len(others) == len(set(others))
    assert set(others) == {p["template"] for p in cold.seeds[0]}
    assert len(again.seeds[0]) < len(cold.seeds[0]) / 4
    picked = ctune._tune_one_size(again, tmp_path / "warm", evaluate, None)
    assert ctune.config_of(picked[1]) == won
    assert sum(calls) == len(again.seeds[0]) < cold_calls  # the seeds alone, once each
