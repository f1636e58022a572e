"""A workload from a model's Hugging Face config.json (issue 22, item 5): geko --model CONFIG --tp
--tokens. Shapes are the published dimensions of each family, sharded by hand below."""
from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from geko_lib import cli, platforms, workload
from geko_lib.campaign import state
from geko_lib.config_schema import merged, schema_defaults
from geko_lib.workload import WorkloadError
from tests.conftest import FIXTURES

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

MODELS = FIXTURES / "models"
BENCH_TRACE = Path(__file__).parent.parent / "bench" / "configs" / "llama3_70b_tp8_serving.yaml"


def shapes(table) -> set[tuple[int, int]]:
    """(M = out features, K = in features) of every row."""
    return set(zip(table["M"].tolist(), table["K"].tolist()))


def read(name, *, support=ANY, **options):
    return workload.read_model(MODELS / name, support=support, **options)


# (fixture, tp) -> the (out, in) features of qkv, o-proj, gate/up, down, lm-head on one GPU
FAMILIES = {
    ("llama3_8b.json", 1): {(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
                            (128256, 4096)},
    # 32/8 query heads + 2 x 8/8 KV heads of 128
    ("llama3_8b.json", 8): {(768, 4096), (4096, 512), (3584, 4096), (4096, 1792),
                            (16032, 4096)},
    ("llama3_70b.json", 8): {(1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584),
                             (16032, 8192)},
    # 16 GPUs, 8 KV heads: each GPU holds one replicated KV head
    ("llama3_70b.json", 16): {(768, 8192), (8192, 512), (3584, 8192), (8192, 1792),
                              (8016, 8192)},
    # 28/4 = 7 query heads, 4/4 = 1 KV head
    ("qwen2_5_7b.json", 4): {(1152, 3584), (3584, 896), (9472, 3584), (3584, 4736),
                             (38016, 3584)},
    ("qwen2_5_7b.json", 2): {(2304, 3584), (3584, 1792), (18944, 3584), (3584, 9472),
                             (76032, 3584)},
    ("mistral_7b_v0_3.json", 8): {(768, 4096), (4096, 512), (3584, 4096), (4096, 1792),
                                  (4096, 4096)},
    # MoE: the experts are routed; attention and lm-head only
    ("mixtral_8x7b.json", 8): {(768, 4096), (4096, 512), (4000, 4096)},
    # DeepSeek LLM 7B (dense, multi-head: 32 KV heads -> 4 per GPU)
    ("deepseek_llm_7b.json", 8): {(1536, 4096), (4096, 512), (2752, 4096), (4096, 1376),
                                  (12800, 4096)},
}


@pytest.mark.parametrize("name, tp", list(FAMILIES))
def test_each_family_gives_its_sharded_linears_as_tn_gemms(name, tp):
    table = read(name, tp=tp, tokens=[1, 64])
    assert shapes(table) == FAMILIES[name, tp]
    assert set(table["N"]) == {1, 64}  # N = tokens
    assert len(table) == 2 * len(FAMILIES[name, tp])
    assert set(table["transA"]) == {"T"} and set(table["transB"]) == {"N"}
    assert (table["lda"] == table["K"]).all() and (table["ldc"] == table["M"]).all()
    assert set(table["a_type"]) == set(table["d_type"]) == {"bf16_r"}
    assert set(table["compute_type"]) == {"c_f32_r"}


def test_the_llama3_70b_tp8_rows_are_the_bench_trace_rows():
    trace = workload.read(BENCH_TRACE, support=ANY)
    tokens = sorted(set(trace["N"].tolist()))
    table = read("llama3_70b.json", tp=8, tokens=tokens, token_weights="equal")
    key = [c for c in trace.columns if c != "call_count" and c in table.columns]

    def rows(frame, lm_head: bool):
        return set(map(tuple, frame[(frame["M"] == 16032) == lm_head][key].astype(str)
                       .values.tolist()))

    assert rows(table, False) == rows(trace, False)
    # the trace runs the lm-head on every token; at prefill (more tokens than the 256
    # sequences of a batch) it runs once per sequence, so N = 256 there
    assert sorted(set(table[table["M"] == 16032]["N"])) == sorted({min(t, 256) for t in tokens})
    # the trace's lm-head runs once per step, each layer linear 80 times
    at_one = trace[trace["N"] == 1].set_index("M")["call_count"]
    assert at_one[1280] == 80 * at_one[16032]


def test_call_count_is_layers_times_the_weight_of_the_token_count():
    table = read("llama3_8b.json", tp=8, tokens=[1, 16, 64, 512, 4096])
    counts = {(m, n): c for m, n, c in zip(table["M"], table["N"], table["call_count"])}
    serving = {1: 64, 16: 16, 64: 8, 512: 3, 4096: 1}  # round(sqrt(4096 / T))
    for tokens, weight in serving.items():
        assert counts[768, tokens] == 32 * weight  # q/k/v: 32 layers
        if tokens <= 256:  # a decode step: the lm-head once per forward pass
            assert counts[16032, tokens] == weight
    # the prefills of 512 and 4096 tokens run it once per sequence of the batch (256)
    assert counts[16032, 256] == serving[512] + serving[4096]
    equal = read("llama3_8b.json", tp=8, tokens=[1, 4096], token_weights="equal")
    assert set(equal[equal["M"] == 768]["call_count"]) == {32}
    given = read("llama3_8b.json", tp=8, tokens=[1, 4096], token_weights=[5, 2])
    assert sorted(given[given["M"] == 16032]["call_count"]) == [2, 5]


def test_o_proj_and_down_of_one_shape_are_one_row_summed(tmp_path):
    # hidden 4096 and intermediate 4096: o-proj and down are the same GEMM, counted twice
    config = json.loads((MODELS / "llama3_8b.json").read_text()) | {"intermediate_size": 4096,
                                                                  "num_key_value_heads": 32}
    path = tmp_path / "same.json"
    path.write_text(json.dumps(config))
    table = workload.read_model(path, tp=1, tokens=[1], token_weights="equal", support=ANY)
    assert table[(table["M"] == 4096) & (table["K"] == 4096)]["call_count"].tolist() == [64]


@pytest.mark.parametrize("dtype", ["bf16_r", "f16_r", "f32_r"])
@pytest.mark.parametrize("platform", ["sim", "rocm", "cuda"])
def test_every_platform_takes_the_rows_in_each_dtype(platform, dtype):
    table = read("llama3_8b.json", tp=8, tokens=[1], dtype=dtype,
                 support=platforms.gemm_support(platform))
    assert set(table["a_type"]) == set(table["b_type"]) == set(table["c_type"]) == {dtype}


def test_moe_experts_are_left_out_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="geko"):
        read("mixtral_8x7b.json", tp=8, tokens=[1])
    assert "num_local_experts 8: the experts' GEMMs are not included" in caplog.text


def write_config(tmp_path, **changes) -> Path:
    config = json.loads((MODELS / "llama3_8b.json").read_text()) | changes
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in config.items() if v != "-"}, indent=2))
    return path


def line_of(path: Path, key: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if f'"{key}"' in line)


@pytest.mark.parametrize("changes, tp, field, words", [
    ({"hidden_size": "-"}, 1, "hidden_size", "missing required field"),
    ({"vocab_size": 0}, 1, "vocab_size", "expected a positive integer, got 0"),
    ({"num_hidden_layers": "32"}, 1, "num_hidden_layers", "expected a positive integer"),
    ({"intermediate_size": 14000}, 32, "intermediate_size",
     "14000 is not divisible by the tensor-parallel degree 32"),
    ({}, 3, "num_attention_heads", "32 is not divisible by the tensor-parallel degree 3"),
    ({"num_attention_heads": 64, "num_key_value_heads": 12}, 16, "num_key_value_heads",
     "12 KV heads cannot be replicated evenly"),
    ({"kv_lora_rank": 512}, 1, "kv_lora_rank", "multi-head latent attention"),
])
def test_a_bad_config_is_refused_naming_file_line_and_field(tmp_path, changes, tp, field, words):
    path = write_config(tmp_path, **changes)
    with pytest.raises(WorkloadError) as info:
        workload.read_model(path, tp=tp, tokens=[1], support=ANY)
    assert info.value.field == field and words in info.value.message
    assert info.value.path == str(path)
    if "missing" not in words:
        assert info.value.line == line_of(path, field)


def test_qwen_7b_is_refused_at_tp8_naming_its_heads():
    with pytest.raises(WorkloadError, match=r"qwen2_5_7b.json:\d+: num_attention_heads: 28 is "
                                            r"not divisible by the tensor-parallel degree 8"):
        read("qwen2_5_7b.json", tp=8)


def test_bad_json_and_bad_options_are_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "hidden_size": 4096,\n  oops\n}\n')
    with pytest.raises(WorkloadError, match=r"bad.json:3: json: "):
        workload.read_model(bad, support=ANY)
    for options, field in (({"tokens": [1, 0]}, "model_tokens"), ({"tokens": []}, "model_tokens"),
                           ({"tp": 0}, "model_tp"), ({"dtype": "f8_r"}, "model_dtype"),
                           ({"token_weights": [1]}, "model_token_weights"),
                           ({"token_weights": "zipf"}, "model_token_weights")):
        with pytest.raises(WorkloadError) as info:
            read("llama3_8b.json", **({"tokens": [1, 2]} | options))
        assert info.value.field == field and "llama3_8b.json" in info.value.path


@pytest.mark.parametrize("text", ['{"a": ' * 100_000 + "1" + "}" * 100_000,
                                  "[" * 100_000 + "]" * 100_000])
def test_a_json_nested_too_deeply_is_refused_naming_the_file(tmp_path, text, capsys):
    """Issue 41, item 4: json's parser recurses once per level, so 100,000 levels ended in a
    RecursionError traceback; it is refused as any malformed config, in one line."""
    deep = tmp_path / "deep.json"
    deep.write_text(text)
    with pytest.raises(WorkloadError) as info:
        workload.read_model(deep, support=ANY)
    assert (info.value.path, info.value.field) == (str(deep), "json")
    assert "nested too deeply" in info.value.message
    code = cli.main(["--search", "--model", str(deep), "--platform", "sim",
                     "-w", str(tmp_path / "run")])
    said = capsys.readouterr().err.splitlines()
    assert code == 2 and said == [f"geko: error: {deep}: json: {info.value.message}"], said
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("changes, options, key, words", [
    ({"intermediate_size": 10**12}, {}, "intermediate_size",
     "gate_up_proj's M: 2000000000000 is beyond what"),
    ({"intermediate_size": 10**30}, {}, "intermediate_size",
     "gate_up_proj's M: out of the 64-bit integer range"),
    ({"vocab_size": 2**40}, {}, "vocab_size", "lm_head's M: 1099511627776 is beyond what"),
    ({"head_dim": 2**40}, {}, "head_dim", "qkv_proj's M: "),
    ({"hidden_size": 2**40}, {}, "hidden_size", "qkv_proj's M: "),
    ({"intermediate_size": 2**27}, {}, "intermediate_size",  # fits 32 bits, not a device
     "gate_up_proj's M: 268435456 makes the operands (A, B, C, D)"),
    ({"num_hidden_layers": 10**30}, {}, "num_hidden_layers",
     "qkv_proj's call_count: out of the 64-bit integer range"),
    ({}, {"tokens": [2**33]}, "model_tokens", "qkv_proj's N: 8589934592 is beyond what"),
])
def test_a_size_no_device_runs_is_named_by_its_config_key(tmp_path, changes, options, key,
                                                          words):
    """Issue 41 (WEAK): the refusal named the GEMM's M, which the config.json does not have;
    it names the key the size comes from, on that key's line."""
    path = write_config(tmp_path, **changes)
    with pytest.raises(WorkloadError) as info:
        workload.read_model(path, support=platforms.gemm_support(None),
                            **({"tokens": [1, 4096]} | options))
    assert info.value.field == key and words in info.value.message, str(info.value)
    assert info.value.line == (line_of(path, key) if key in changes else None)


# --- the geko command and the campaign --------------------------------------------------------

def build(tmp_path, *args):
    argv = ["--bench", "-w", str(tmp_path / "run"), *args]
    return cli.build_config(cli.parser().parse_args(argv), environ={})[0]


def test_geko_flags_set_the_model_keys(tmp_path):
    config = build(tmp_path, "--model", str(MODELS / "llama3_70b.json"), "--tp", "8",
                   "--tokens", "1,16,64,512,4096", "--token-weights", "equal", "--dtype", "f16_r")
    assert config["workload_model"] == str(MODELS / "llama3_70b.json")
    assert (config["model_tp"], config["model_tokens"], config["model_token_weights"],
            config["model_dtype"]) == (8, [1, 16, 64, 512, 4096], "equal", "f16_r")
    assert config["workload_log"] == config["workload_list"] == config["workload_inline"] == ""
    defaults = build(tmp_path, "--model", str(MODELS / "llama3_8b.json"))
    assert defaults["model_tp"] == 1 and defaults["model_token_weights"] == "serving"


@pytest.mark.parametrize("args, words", [
    (["--inline", *"8 8 1 8 B B S N T".split(), "--tp", "8"], "--tp: options of a --model"),
    (["--model", str(MODELS / "llama3_8b.json"), "--tokens", "1,-4"],
     "--tokens: expected a positive integer, got '-4'"),
    (["--model", str(MODELS / "llama3_8b.json"), "--token-weights", "heavy"],
     "--token-weights: expected serving or equal"),
    (["--model", str(MODELS / "qwen2_5_7b.json"), "--tp", "8"],
     "qwen2_5_7b.json:6: num_attention_heads: 28 is not divisible"),
])
def test_geko_refuses_a_bad_model_command_before_writing(tmp_path, args, words):
    with pytest.raises(cli.GekoError, match=words.replace("(", r"\(")):
        build(tmp_path, *args)
    assert not (tmp_path / "run").exists()


def full(**config):
    return merged(schema_defaults(), {"workload_log": ""} | config)


def test_the_config_bytes_and_the_options_are_the_workload_identity(tmp_path):
    path = write_config(tmp_path)
    base = state.workload_identity(full(workload_model=str(path), model_tp=8))
    assert base["kind"] == "model" and base["input_path"] == str(path)
    assert base == state.workload_identity(full(workload_model=str(path), model_tp=8))
    for option in ({"model_tp": 4}, {"model_tokens": [1, 2]}, {"model_dtype": "f16_r"},
                   {"model_token_weights": "equal"}):
        changed = {"model_tp": 8} | option
        other = state.workload_identity(full(workload_model=str(path), **changed))
        assert other["workload_sha256"] != base["workload_sha256"], option
    write_config(tmp_path, vocab_size=32000)
    edited = state.workload_identity(full(workload_model=str(path), model_tp=8))
    assert edited["input_sha256"] != base["input_sha256"]


def test_the_ingest_phase_writes_the_model_workload(tmp_path, run_phase):
    config = full(workload_model=str(MODELS / "llama3_70b.json"), model_tp=8,
                  model_tokens=[1, 512], platform="sim")
    model = config["workload_model"]
    job = run_phase("ingest", tmp_path, config, given={  # common.smk's GIVEN for a --model
        "workload_source": [model], "workload_kind": "model", "workload_value": model,
        "model_options": workload.model_config.options(config)})
    rows = yaml.safe_load((tmp_path / job.output.workload).read_text())
    assert {(r["M"], r["K"]) for r in rows} == FAMILIES["llama3_70b.json", 8]
    # the prefill of 512 tokens runs its lm-head on the last token of each of 256 sequences
    assert {r["N"] for r in rows} == {1, 512, 256} and len(rows) == 10
    assert {r["N"] for r in rows if r["M"] == 16032} == {1, 256}


GEKO = [shutil.which("geko", path=str(Path(sys.executable).parent)) or sys.executable]


@pytest.mark.slow
def test_geko_bench_model_end_to_end_on_sim(tmp_path):
    command = GEKO if GEKO[0] != sys.executable else [sys.executable, "-m", "geko_lib.cli"]
    proc = subprocess.run([*command, "--bench", "--platform", "sim", "--model",
                           str(MODELS / "llama3_70b.json"), "--tp", "8", "--tokens", "1,16,512",
                           "--workdir", "run", "--cores", "2"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    rows = yaml.safe_load((run / "workload.yaml").read_text())
    assert {(r["M"], r["K"]) for r in rows} == FAMILIES["llama3_70b.json", 8] and len(rows) == 15
    summary = (run / "summary.csv").read_text().splitlines()
    assert len(summary) == 16  # header + one line per GEMM
    recorded = json.loads((run / "run_state.json").read_text())
    assert recorded["identity"]["kind"] == "model"
    # the same campaign with another --tp is another workload: refused in that workdir
    again = subprocess.run([*command, "--bench", "--platform", "sim", "--model",
                            str(MODELS / "llama3_70b.json"), "--tp", "4", "--tokens", "1,16,512",
                            "--workdir", "run", "--cores", "2"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode != 0 and "workload_sha256" in again.stderr


def test_the_lm_head_runs_once_per_sequence_at_prefill():
    """A decode step of T sequences runs every linear, the lm-head too, with N = T; a prefill
    step of more tokens than --sequences runs the lm-head once per sequence (N = sequences)."""
    table = read("llama3_8b.json", tp=8, tokens=[1, 16, 4096], token_weights="equal",
                 sequences=8)
    lm_head = table[table["M"] == 16032]
    assert dict(zip(lm_head["N"], lm_head["call_count"])) == {1: 1, 8: 2}  # 16 and 4096 tokens
    assert set(table[table["M"] == 768]["N"]) == {1, 16, 4096}  # q/k/v: once per token


def test_geko_sequences_sets_the_lm_head_columns(tmp_path):
    config = build(tmp_path, "--model", str(MODELS / "llama3_8b.json"), "--tp", "8",
                   "--tokens", "1,512", "--sequences", "4")
    assert config["model_sequences"] == 4
    rows = workload.read_model(config["workload_model"], support=ANY,
                               **workload.model_config.options(config))
    assert set(rows[rows["M"] == 16032]["N"]) == {1, 4}


def test_qwen2_has_a_bias_epilogue_on_its_fused_qkv_gemm():
    """Qwen2's attention has q/k/v biases (no attention_bias key says so): the fused q/k/v GEMM
    carries a bias epilogue, the others none; Llama's attention_bias true puts one on o-proj too."""
    table = read("qwen2_5_7b.json", tp=4, tokens=[16])
    bias = dict(zip(table["M"], table["bias_vector"]))
    assert bias[1152] and not any(v for m, v in bias.items() if m != 1152)
    llama = read("llama3_8b.json", tp=8, tokens=[16])
    assert not llama["bias_vector"].any()


def test_llama_attention_bias_puts_one_on_qkv_and_o_proj(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(json.loads((MODELS / "llama3_8b.json").read_text())
                               | {"attention_bias": True}))
    table = workload.read_model(path, tp=8, tokens=[16], support=ANY)
    bias = dict(zip(zip(table["M"], table["K"]), table["bias_vector"]))
    assert bias[768, 4096] and bias[4096, 512]  # q/k/v, o-proj
    assert not bias[3584, 4096] and not bias[4096, 1792] and not bias[16032, 4096]
    path.write_text(json.dumps(json.loads((MODELS / "llama3_8b.json").read_text())
                               | {"attention_bias": "yes"}))
    with pytest.raises(WorkloadError, match="attention_bias: expected true or false"):
        workload.read_model(path, tp=8, tokens=[16], support=ANY)


def test_the_vocabulary_is_padded_to_a_multiple_of_64_before_sharding(tmp_path):
    """vLLM pads the lm-head's vocabulary to a multiple of 64, then shards it: 32001 tokens
    at TP 2 are 32064 / 2 = 16032 rows per GPU, not ceil(32001 / 2) = 16001."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(json.loads((MODELS / "llama3_8b.json").read_text())
                               | {"vocab_size": 32001}))
    table = workload.read_model(path, tp=2, tokens=[1], support=ANY)
    assert 16032 in set(table["M"]) and 16001 not in set(table["M"])
    five = {"vocab_size": 32001, "num_attention_heads": 40, "num_key_value_heads": 40,
            "head_dim": 128, "intermediate_size": 14340}  # every linear but the lm-head shards
    path.write_text(json.dumps(json.loads((MODELS / "llama3_8b.json").read_text()) | five))
    with pytest.raises(WorkloadError, match="vocab_size: 32001, padded to 32064"):
        workload.read_model(path, tp=5, tokens=[1], support=ANY)
