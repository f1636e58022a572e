"""Workload readers: every workload source -> one canonical pandas table.

Sources
-------
* hipBLASLt ``HIPBLASLT_LOG_MASK=64`` logs: a YAML list of flow mappings, one GEMM call signature
  per line (``- {function: matmul, M: 16032, ..., call_count: 1}``); blank and ``#`` lines allowed.
* hipBLASLt ``HIPBLASLT_LOG_MASK=32`` logs: ``hipblaslt-bench ...`` command lines, one per call.
* CSV files (``.csv`` suffix) with the same fields (lowercase ``m, n, k`` accepted), or PyTorch
  TunableOp's ``tunableop_untuned<device>.csv`` / results files (:mod:`geko_lib.workload.tunableop`).
* the generator ``--list`` YAML (:func:`read_list`) and the ``--inline`` spec (:func:`read_inline`).
* a model's Hugging Face ``config.json`` (``--model``, :func:`read_model`: the linears of one
  tensor-parallel GPU at chosen token counts; :mod:`geko_lib.workload.model_config`).

The canonical table has the columns of :data:`geko_lib.gemm.LOG_FIELDS` that the source provides
(in that order), never a null, one row per distinct call signature with ``call_count`` summed over
duplicates. Every rejection raises :class:`WorkloadError` naming file, line and field. This module
never writes anything except in :func:`write`.

Fast path
---------
Real mask-64 logs have millions of lines and few distinct rows. :func:`read` therefore counts
identical raw lines first (``collections.Counter`` over the binary file, C speed), then parses each
*distinct* line once with a hand-written flow-mapping parser and multiplies its ``call_count`` by the
line's repeat count. The parser splits the body of ``- {...}`` on ``", "`` into ``"key: value"``
parts and converts each distinct part once, through a cache: ``"M: 16384" -> ("M", 16384)``,
``"alpha: 1.000000" -> 1.0``, ``"flush: false" -> False`` (YAML 1.1 / ``safe_load`` rules for plain
scalars; forms it does not know, like ``1.0e+5`` or ``0x10``, are resolved by PyYAML and cached).
A line whose parts were all seen before costs one ``split`` and two ``map`` calls. The mangled
``: , : ,`` pairs get the original tool's cleanup; lines the parser cannot read (quotes, nested
collections, a comment after the row...) go to PyYAML one line at a time. The cyclic garbage
collector is paused while parsing (it would rescan the row lists over and over).
Rows are then built column-wise from the distinct rows only.

``fast=False`` parses the whole file with PyYAML (retrying after the cleanup on a parse error, as the
original): the reference the fast path is tested against. One documented difference: the original
cleans the *whole* file once any line fails, the fast path cleans only lines that fail; they differ
only for a file that mixes mangled lines with valid ``key: ,`` (null) values.

Line numbers of the fast path are found lazily: a second scan of the file maps each distinct raw line
to its first line number, only when an error or warning needs one. The fast path expects one row per
line (as hipBLASLt writes them): a ``- {`` line without its ``}`` is rejected as truncated; a file
in another YAML layout (block style) is read by PyYAML as a whole.

The package holds one module per source: ``mask64``, ``mask32``, ``csv_log``, ``size_list``,
``inline``, ``tunableop`` (PyTorch TunableOp files), ``aiter``, ``model_config`` (``linear``:
F.linear as hipBLASLt logs it), over the shared ``parsing``
of text and the canonical ``table``; ``reader`` picks the source of a file, ``writer`` writes
``workload.yaml``; ``support`` applies a platform's limits (what its library and devices run),
which the readers are handed as a value (``geko_lib.platforms.gemm_support``).
"""

from .errors import WorkloadError  # noqa: F401
from .inline import INLINE_PATH, INLINE_TOKENS, read_inline  # noqa: F401
from .mask32 import read_bench_commands  # noqa: F401
from .model_config import read_model  # noqa: F401
from .parsing import cleanup_mangled_pairs  # noqa: F401
from .reader import read  # noqa: F401
from .size_list import read_list, rows_of  # noqa: F401
from .writer import problems, rows_text, write  # noqa: F401

# the workload sources, each a config key workload_<kind> (exactly one is set)
SOURCE_KINDS = ("log", "list", "inline", "model")

__all__ = [
    "WorkloadError", "read", "read_bench_commands", "read_list", "read_inline", "read_model",
    "write", "problems", "SOURCE_KINDS",
    "cleanup_mangled_pairs", "rows_of", "rows_text",
]
