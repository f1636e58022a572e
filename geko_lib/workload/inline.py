"""One inline GEMM (``--inline M N batch K DataType DestDataType ComputeDataType transA
transB``)."""

from __future__ import annotations

import logging
import re

import pandas as pd


from .errors import WorkloadError
from .size_list import _gemm_type_from_codes, _synthetic_rows
from .support import GemmSupport
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


INLINE_PATH = "--inline"
INLINE_TOKENS = ("M", "N", "batch", "K", "DataType", "DestDataType", "ComputeDataType",
                 "transA", "transB")


# ---- --inline -------------------------------------------------------------------------------

def read_inline(tokens, *, support: GemmSupport, arch: str | None = None) -> pd.DataFrame:
    """``M N batch K DataType DestDataType ComputeDataType transA transB`` -> one canonical row.

    ``tokens``: 9 strings or one space-separated string, e.g. ``"1024 1024 1 1024 B B S N T"``.
    """
    path = INLINE_PATH
    if isinstance(tokens, str):
        tokens = tokens.split()
    tokens = [str(t).strip() for t in tokens]
    if len(tokens) != len(INLINE_TOKENS):
        raise WorkloadError(path, None, "tokens",
                            f"expected {len(INLINE_TOKENS)} tokens ({' '.join(INLINE_TOKENS)}), got "
                            f"{len(tokens)}: {' '.join(tokens)!r}")
    sizes = []
    for position, (name, token) in enumerate(zip(INLINE_TOKENS[:4], tokens[:4]), 1):
        if not re.fullmatch(r"[0-9]+", token) or int(token) < 1:
            raise WorkloadError(path, None, name,
                                f"token {position} must be a positive integer, got {token!r}")
        sizes.append(int(token))
    values = dict(zip(("DataType", "DestDataType", "ComputeDataType", "TRANSA", "TRANSB"), tokens[4:]))
    rename = {"TRANSA": "transA", "TRANSB": "transB"}
    try:
        gemm_type = _gemm_type_from_codes(values, path, lambda key: None)
    except WorkloadError as exc:
        field = rename.get(exc.field, exc.field)
        position = INLINE_TOKENS.index(field) + 1
        raise WorkloadError(path, None, field, f"token {position}: {exc.message}") from None
    m, n, b, k = sizes
    return _synthetic_rows(path, gemm_type, [(m, n, b, k)], [None], support, arch)
