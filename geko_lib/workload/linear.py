"""PyTorch's ``F.linear`` as hipBLASLt logs it: the one mapping the aiter and model readers share.

``F.linear(x, W)`` with ``x`` ``[T, K]`` (T = tokens) and ``W`` ``[N, K]`` computes ``x @ W^T``
(``[T, N]``). In hipBLASLt's column-major terms that is ``transA = T, transB = N``, m = N (out
features), n = T (tokens), k = K, batch 1, ``lda = ldb = K``, ``ldc = ldd = N``, f32 accumulation.
"""

from __future__ import annotations


def linear_fields(out_features: int, tokens: int, k: int, a_type: str, d_type: str, *,
                  scaled: bool = False, bias: bool = False) -> dict:
    """The mask-64 log fields (without ``call_count``) of one ``F.linear`` call."""
    return {"function": "matmul", "transA": "T", "transB": "N", "M": out_features,
            "N": tokens, "K": k, "batch_count": 1, "lda": k, "ldb": k, "ldc": out_features,
            "ldd": out_features, "a_type": a_type, "b_type": a_type, "c_type": d_type,
            "d_type": d_type, "compute_type": "c_f32_r", "scaleA": int(scaled),
            "scaleB": int(scaled), "bias_vector": bias}
