"""Tune mode (the original's ``geko.optim``): ``configure`` tuning YAMLs per GEMM type, ``run``
them over devices, ``analyze`` the tuned libraries against the default.

As in ``geko_lib.bench``, a ``hipblaslt_path`` first argument selects the rocm platform,
``platform=`` another, and a call with neither runs on the sim platform and says so.
"""

from .optim import analyze, configure, run, write_results  # noqa: F401

__all__ = ["configure", "run", "analyze"]
