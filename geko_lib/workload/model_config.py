"""A workload from a model's Hugging Face ``config.json`` (``geko --model config.json --tp 8
--tokens 1,16,64,512,4096``): the GEMMs one GPU of a tensor-parallel deployment runs.

Fields read: ``hidden_size``, ``intermediate_size``, ``num_attention_heads``,
``num_hidden_layers``, ``vocab_size`` (required), ``num_key_value_heads`` (default: the
attention heads, Hugging Face's own default), ``head_dim`` (where given, else hidden / heads).
Per decoder layer, as Megatron-style tensor parallelism (vLLM, SGLang) shards them over ``tp``
GPUs, with ``h`` = heads, ``g`` = KV heads, ``d`` = head dim, ``I`` = intermediate size:

===========  =============================  ======================  ==================
linear       out features (M)               in features (K)         per forward pass
===========  =============================  ======================  ==================
q/k/v fused  ``(h/tp + 2 * max(1, g/tp)) d``  hidden                  layers
o-proj       hidden                         ``h d / tp``            layers
gate/up      ``2 I / tp``                   hidden                  dense layers
down         hidden                         ``I / tp``              dense layers
lm-head      ``pad64(vocab) / tp``          hidden                  1
===========  =============================  ======================  ==================

q/k/v, gate/up and the lm-head are column-parallel (their out features split), o-proj and down
row-parallel (their in features split); KV heads fewer than ``tp`` are replicated (each GPU holds
one). The vocabulary is padded to a multiple of 64 before it is sharded, as vLLM's
vocab-parallel lm-head pads it (a padded vocabulary ``tp`` does not divide is refused, as vLLM
refuses it). Mixture-of-experts configs (``num_local_experts``, ``n_routed_experts``, ``num_experts``):
the experts' GEMMs depend on the routing and are not included; their dense layers
(``first_k_dense_replace``) are. Multi-head latent attention (``kv_lora_rank``, DeepSeek-V2/V3)
is refused. Bias epilogues (``bias_vector``): ``attention_bias`` true (Llama-style configs) puts
one on q/k/v and o-proj, ``mlp_bias`` true on gate/up and down; Qwen2-family configs
(``model_type`` in ``QKV_BIAS_MODELS``, which have no ``attention_bias`` key) have one on the
fused q/k/v GEMM only.

Each linear is one ``F.linear`` per token count ``T``: a ``T`` up to ``sequences`` is a decode step of
``T`` sequences (one new token each), a larger ``T`` a prefill step of ``sequences`` sequences,
whose lm-head runs once per sequence (the logits of its last token: ``N = sequences``); every
other linear runs once per token (:mod:`geko_lib.workload.linear`:
``transA T, transB N, M = out features, N = T, K = in features``), in ``dtype`` (bf16 by
default). ``call_count`` = per-forward-pass count x the token count's weight: ``equal`` (1
each), ``serving`` (``round(sqrt(max(tokens) / T))``, at least 1: small decode batches occur
more often than large prefills) or one positive integer per token count.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import re
from pathlib import Path
from typing import NamedTuple

from .errors import WorkloadError
from .linear import linear_fields
from .support import GemmSupport
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

REQUIRED = ("hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers",
            "vocab_size")
EXPERT_KEYS = ("num_local_experts", "n_routed_experts", "num_experts")
WEIGHT_MIXES = ("serving", "equal")
DTYPES = ("bf16_r", "f16_r", "f32_r")
# config key -> the reader's keyword (the workload's options: its identity and the ingest's)
OPTION_KEYS = {"model_tp": "tp", "model_tokens": "tokens",
               "model_token_weights": "token_weights", "model_dtype": "dtype",
               "model_sequences": "sequences"}
VOCAB_PADDING = 64  # vLLM pads the lm-head's vocabulary to a multiple of this before sharding
# model types whose attention has a q/k/v bias and no attention_bias key saying so
QKV_BIAS_MODELS = ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl")
SEQUENCES = 256  # sequences per batch by default: vLLM's default max_num_seqs


def options(config: dict) -> dict:
    """The reader's keywords from a campaign config (``model_tp``, ...)."""
    return {word: config.get(key) for key, word in OPTION_KEYS.items()}


def options_digest(config: dict) -> str:
    """SHA-256 of the options (with the config file's bytes, the workload's identity)."""
    return hashlib.sha256(json.dumps(options(config), sort_keys=True).encode()).hexdigest()


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _refusing_duplicates(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object as a dict, refusing a key given twice: json keeps the last value silently,
    so a config naming hidden_size twice would be sized by one of the two unnoticed."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _Config:
    """The parsed ``config.json`` with the line of each top-level key (for errors)."""

    def __init__(self, path):
        self.path = Path(path)
        try:
            text = self.path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise WorkloadError(path, None, "encoding", f"not UTF-8 text: {exc}") from None
        self.lines = text.split("\n")
        try:
            self.data = json.loads(text, object_pairs_hook=_refusing_duplicates)
        except json.JSONDecodeError as exc:
            raise WorkloadError(path, exc.lineno, "json", exc.msg) from None
        except RecursionError:  # json recurses per level: a deep nesting ends Python's stack
            raise WorkloadError(path, None, "json", "nested too deeply to read (a model "
                                "config.json is an object of settings)") from None
        except _DuplicateKey as dup:
            raise WorkloadError(path, self.line(dup.key, occurrence=2), dup.key,
                                f"key {dup.key!r} is given twice; which value is meant?") from None
        if not isinstance(self.data, dict):
            raise WorkloadError(path, None, "json", "expected a JSON object of model settings, "
                                                    f"got {type(self.data).__name__}")

    def line(self, key: str, occurrence: int = 1) -> int | None:
        pattern = re.compile(rf'"{re.escape(key)}"\s*:')
        found = (n for n, line in enumerate(self.lines, 1) for _ in pattern.finditer(line))
        return next(itertools.islice(found, occurrence - 1, None), None)

    def error(self, key: str, message: str) -> WorkloadError:
        return WorkloadError(self.path, self.line(key), key, message)

    def integer(self, key: str, default=None) -> int:
        value = self.data.get(key)
        if value is None:
            if default is not None:
                return default
            raise self.error(key, "missing required field (a model config.json needs "
                                  f"{', '.join(REQUIRED)})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.error(key, f"expected a positive integer, got {value!r}")
        return value


def _divides(cfg: _Config, key: str, value: int, tp: int) -> int:
    if value % tp:
        raise cfg.error(key, f"{value} is not divisible by the tensor-parallel degree {tp} "
                             "(model_tp, geko --tp)")
    return value // tp


def _flag(cfg: _Config, key: str) -> bool | None:
    value = cfg.data.get(key)
    if value is not None and not isinstance(value, bool):
        raise cfg.error(key, f"expected true or false, got {value!r}")
    return value


def _biases(cfg: _Config) -> tuple[bool, bool, bool]:
    """(q/k/v, o-proj, MLP) have a bias epilogue: attention_bias / mlp_bias where the config
    says, else the model family's (Qwen2: q/k/v only)."""
    attention = _flag(cfg, "attention_bias")
    if attention is None:
        qkv, o_proj = cfg.data.get("model_type") in QKV_BIAS_MODELS, False
    else:
        qkv = o_proj = attention
    return qkv, o_proj, bool(_flag(cfg, "mlp_bias"))


def _vocab_here(cfg: _Config, vocab: int, tp: int) -> int:
    """One GPU's share of the vocabulary padded as vLLM pads it."""
    padded = -(-vocab // VOCAB_PADDING) * VOCAB_PADDING
    if padded % tp:
        raise cfg.error("vocab_size", f"{vocab}, padded to {padded} (a multiple of "
                                      f"{VOCAB_PADDING}, as vLLM pads it), is not divisible "
                                      f"by the tensor-parallel degree {tp}")
    return padded // tp


class Linear(NamedTuple):
    """One GPU's linear, with the config.json keys its sizes come from (to name in errors)."""
    name: str
    out_features: int
    in_features: int
    per_pass: int  # calls per forward pass
    bias: bool  # a bias epilogue
    out_key: str
    in_key: str
    per_pass_key: str


def _largest(values: dict[str, int]) -> str:
    """The key of the largest of ``values``: the one that makes a product of them large."""
    return max(values, key=values.get)


def linears(path, tp: int) -> list[Linear]:
    """One GPU's linears (see the module docstring)."""
    return _linears(_Config(path), tp)


def _linears(cfg: _Config, tp: int) -> list[Linear]:
    if cfg.data.get("kv_lora_rank") is not None:
        raise cfg.error("kv_lora_rank", "multi-head latent attention (DeepSeek-V2/V3) is not "
                                        "modelled; give a log of the model instead")
    hidden, heads = cfg.integer("hidden_size"), cfg.integer("num_attention_heads")
    layers, vocab = cfg.integer("num_hidden_layers"), cfg.integer("vocab_size")
    kv_heads = cfg.integer("num_key_value_heads", default=heads)
    if cfg.data.get("head_dim") is None and hidden % heads:
        raise cfg.error("hidden_size", f"{hidden} is not divisible by num_attention_heads "
                                       f"{heads}; give head_dim")
    head_dim = cfg.integer("head_dim", default=hidden // heads)
    heads_here = _divides(cfg, "num_attention_heads", heads, tp)
    if kv_heads >= tp:
        kv_here = _divides(cfg, "num_key_value_heads", kv_heads, tp)
    elif tp % kv_heads:
        raise cfg.error("num_key_value_heads", f"{kv_heads} KV heads cannot be replicated "
                                               f"evenly over tensor-parallel degree {tp}")
    else:
        kv_here = 1  # fewer KV heads than GPUs: each GPU holds a copy of one
    qkv_bias, o_bias, mlp_bias = _biases(cfg)
    head_key = "head_dim" if cfg.data.get("head_dim") is not None else "hidden_size"
    attention = {"num_attention_heads": heads_here, head_key: head_dim}
    qkv_key = _largest(attention | {"num_key_value_heads": kv_here})
    out = [Linear("qkv_proj", (heads_here + 2 * kv_here) * head_dim, hidden, layers, qkv_bias,
                  qkv_key, "hidden_size", "num_hidden_layers"),
           Linear("o_proj", hidden, heads_here * head_dim, layers, o_bias, "hidden_size",
                  _largest(attention), "num_hidden_layers")]
    experts = next((k for k in EXPERT_KEYS if cfg.data.get(k)), None)
    dense_layers = layers
    if experts:
        dense_layers = min(layers, int(cfg.data.get("first_k_dense_replace") or 0))
        log.warning("%s: %s %s: the experts' GEMMs are not included (%d of %d layers dense)",
                    cfg.path, experts, cfg.data[experts], dense_layers, layers)
    if dense_layers:
        inter = _divides(cfg, "intermediate_size", cfg.integer("intermediate_size"), tp)
        dense_key = "first_k_dense_replace" if experts else "num_hidden_layers"
        out += [Linear("gate_up_proj", 2 * inter, hidden, dense_layers, mlp_bias,
                       "intermediate_size", "hidden_size", dense_key),
                Linear("down_proj", hidden, inter, dense_layers, mlp_bias, "hidden_size",
                       "intermediate_size", dense_key)]
    out.append(Linear("lm_head", _vocab_here(cfg, vocab, tp), hidden, 1, False, "vocab_size",
                      "hidden_size", "model_token_weights"))  # once a pass: its weight counts
    return out


def weights_of(tokens: list[int], weights, path="model_token_weights") -> list[int]:
    """The weight of each token count (see the module docstring)."""
    if isinstance(weights, (list, tuple)):
        if len(weights) != len(tokens):
            raise WorkloadError(path, None, "model_token_weights",
                                f"{len(weights)} weights for {len(tokens)} token counts")
        return [int(w) for w in weights]
    if weights == "equal":
        return [1] * len(tokens)
    if weights == "serving":
        top = max(tokens)
        return [max(1, round(math.sqrt(top / t))) for t in tokens]
    raise WorkloadError(path, None, "model_token_weights",
                        f"expected {' or '.join(WEIGHT_MIXES)} or a list of integers, "
                        f"got {weights!r}")


def _check_options(path, tp, tokens, weights, dtype, sequences) -> None:
    def bad(key: str, message: str):
        return WorkloadError(path, None, key, message)

    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise bad("model_tp", f"expected a positive integer, got {tp!r}")
    if not tokens:
        raise bad("model_tokens", "expected at least one token count")
    for t in tokens:
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise bad("model_tokens", f"token counts must be positive integers, got {t!r}")
    if len(set(tokens)) != len(tokens):
        raise bad("model_tokens", f"token count given twice: {tokens}")
    if isinstance(weights, (list, tuple)) and any(
            isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in weights):
        raise bad("model_token_weights", f"weights must be positive integers, got {weights}")
    if dtype not in DTYPES:
        raise bad("model_dtype", f"expected one of {', '.join(DTYPES)}, got {dtype!r}")
    if isinstance(sequences, bool) or not isinstance(sequences, int) or sequences < 1:
        raise bad("model_sequences", f"expected a positive integer, got {sequences!r}")


def columns_of(name: str, tokens: int, sequences: int) -> int:
    """The GEMM's N (columns: tokens) of a linear in a step of ``tokens`` tokens: the lm-head of
    a prefill step (more tokens than ``sequences``) runs once per sequence, on its last token."""
    return min(tokens, sequences) if name == "lm_head" else tokens


def model_rows(path, *, tp, tokens, token_weights: object = "serving", dtype="bf16_r",
               sequences: int = SEQUENCES):
    """The mask-64 rows (dicts with ``call_count``) of the model's GEMMs."""
    return _model_rows(path, tp, tokens, token_weights, dtype, sequences)[0]


def _model_rows(path, tp, tokens, token_weights, dtype, sequences
                ) -> tuple[list[dict], list[tuple[str, dict[str, str]]], _Config]:
    """(the rows, per row its linear and the key each GEMM field's value comes from, the
    config.json)."""
    _check_options(path, tp, tokens, token_weights, dtype, sequences)
    weights = weights_of(list(tokens), token_weights, path)
    cfg = _Config(path)
    shapes = _linears(cfg, tp)
    rows, keys = [], []
    for t, w in zip(tokens, weights):
        for linear in shapes:
            rows.append(linear_fields(linear.out_features, columns_of(linear.name, t, sequences),
                                      linear.in_features, dtype, dtype, bias=linear.bias)
                        | {"call_count": linear.per_pass * w})
            counted = linear.per_pass_key if linear.per_pass >= w else "model_token_weights"
            keys.append((linear.name, {
                "M": linear.out_key, "ldc": linear.out_key, "ldd": linear.out_key,
                "K": linear.in_key, "lda": linear.in_key, "ldb": linear.in_key,
                "N": "model_tokens", "call_count": counted}))
    return rows, keys, cfg


class _RowAskedFor:
    """The line lookup of the model's rows, which have no lines: the table asks it for the row
    of a refusal just before raising it, so the last row asked for is the refused one."""

    def __init__(self):
        self.row: int | None = None

    def __call__(self, row: int) -> None:
        self.row = row


def read_model(path, *, tp=1, tokens=(1, 16, 64, 512, 4096), token_weights="serving",
               dtype="bf16_r", sequences: int = SEQUENCES,
               support: GemmSupport, arch: str | None = None):
    """A model's ``config.json`` -> the canonical workload table (one row per distinct GEMM)."""
    from .parsing import _missing_file
    from .table import _Rows, _normalize

    problem = _missing_file(path)
    if problem:
        raise problem
    parsed, keys, cfg = _model_rows(path, tp, list(tokens), token_weights, dtype, sequences)
    asked = _RowAskedFor()
    rows = _Rows(path, asked)
    for row in parsed:
        rows.add(tuple(row), list(row.values()))
    try:
        return _normalize(rows, support, arch)
    except WorkloadError as exc:
        # a size no device runs (or a call count beyond 64 bits) is named by the key it comes
        # from (intermediate_size), not by the GEMM's field (M) the config.json does not have
        linear, fields = keys[asked.row] if asked.row is not None else ("", {})
        key = fields.get(exc.field)
        if key is None:
            raise
        raise WorkloadError(path, cfg.line(key), key,
                            f"{linear}'s {exc.field}: {exc.message}") from None
