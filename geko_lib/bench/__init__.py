"""Benchmarking (the original's ``geko.bench``): ``run`` one hipblaslt-bench file, ``compare``
a library against the default; ``log`` (parse, update, summarize) and ``utils``
(parse_benchmark_output, parse_benchmark_output_dir).

Every function runs on the platform its first argument or ``platform=`` names: a
``hipblaslt_path`` selects rocm on that checkout, ``platform="sim"``/``"cuda"`` the others;
with neither the call runs on the sim platform (an analytic model) and says so.
"""

from . import log, utils  # noqa: F401
from .bench import compare, run  # noqa: F401

__all__ = ["run", "compare", "log", "utils"]
