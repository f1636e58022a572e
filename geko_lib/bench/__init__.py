"""Benchmarking (the original's ``geko.bench``): ``run`` one hipblaslt-bench file,
``standard_benchmark`` (probe, then a time budget per GEMM), ``compare`` a library against the
default, ``compare_pr`` a library against another; ``log`` (parse, update, summarize) and ``utils``
(parse_benchmark_output, parse_benchmark_output_dir).

Every function runs on the platform its first argument or ``platform=`` names: a
``hipblaslt_path`` selects rocm on that checkout, ``platform="sim"``/``"cuda"`` the others;
with neither the call runs on the sim platform (an analytic model) and says so.
"""

import importlib

__all__ = ["run", "standard_benchmark", "compare", "compare_pr", "log", "utils"]

# The API is loaded on first use: a phase importing one module of the package (bench.log) does
# not load the others. The file formats they share are geko_lib.bench_formats.
_API = {"run": "bench", "compare": "bench", "standard_benchmark": "bench",
        "compare_pr": "bench", "log": None, "utils": None}


def __getattr__(name):
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_API[name] or name}")
    value = module if _API[name] is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
