"""The rocm platform: a built hipBLASLt checkout (hipblaslt-bench, TensileLite).

``install`` finds and checks the checkout, ``bench`` writes hipblaslt-bench's YAML rows and reads
its output, ``platform`` runs the phases; ``tensilelite`` (tuning) and ``library_build``
(TensileCreateLibrary) are used by the platform for tune mode and the tuned library.
"""

from .bench import BenchOutputError, parse_bench_output, read_bench_output  # noqa: F401
from .install import RocmInstall, locate  # noqa: F401


def __getattr__(name):
    # the platform class imports the library and tuning packages: loaded on first use only
    if name == "RocmPlatform":
        from .platform import RocmPlatform

        return RocmPlatform
    raise AttributeError(name)
