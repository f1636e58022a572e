"""GPU architectures as the sim model and the roofline know them: datasheet peak rates and
memory bandwidth, compute units, last-level cache, and the model's own per-arch constants
(launch overhead, the best fraction of peak a real kernel reaches).

The sim platform models these GPUs; the rocm platform takes its roofline ceilings (datasheet
figures) from the AMD entries. Neither borrows the other's code.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import PlatformError

# --------------------------------------------------------------------------------------------
# architectures


@dataclass(frozen=True)
class SimArch:
    name: str
    schedule_name: str
    device_names: tuple[str, ...]
    cus: int  # compute units / streaming multiprocessors
    clock_ghz: float
    peak_tflops: dict  # dense matrix peak by input class (platforms.peak_class)
    hbm_tbps: float
    llc_mb: float  # last-level cache (Infinity Cache / L2)
    launch_us: float
    efficiency: float  # best fraction of peak a real kernel reaches


MODELS = {
    # AMD Instinct MI300X
    "gfx942": SimArch("gfx942", "aquavanjaram", ("Device 0049", "Device 0050"), 304, 2.1,
                      {"16": 1307.4, "8": 2614.9, "tf32": 653.7, "32": 163.4, "64": 163.4,
                       "i8": 2614.9, "4": 2614.9}, 5.3, 256, 4.0, 0.80),
    # AMD Instinct MI355X
    "gfx950": SimArch("gfx950", "gfx950", ("Device 75a0",), 256, 2.4,
                      {"16": 2516.6, "8": 5033.2, "tf32": 1258.3, "32": 157.3, "64": 78.6,
                       "i8": 5033.2, "4": 10066.3}, 8.0, 256, 4.0, 0.80),
    # NVIDIA H200 SXM
    "h200": SimArch("h200", "h200", ("NVIDIA H200",), 132, 1.98,
                    {"16": 989.4, "8": 1978.9, "tf32": 494.7, "32": 66.9, "64": 66.9,
                     "i8": 1978.9, "4": 1978.9}, 4.8, 50, 3.0, 0.81),
}


@dataclass(frozen=True)
class Arch:
    """One architecture a campaign can name (``--arch``): the device model it runs as, and the
    compute units and XCDs of that configuration (a partitioned or binned part has fewer)."""

    name: str
    model: str  # key of MODELS: the device, its datasheet figures and tuning family
    cus: int
    xcc: int


# every --arch name, declared once: the tuning configs, the sim model, the roofline and the
# `geko` command's choices all read this table
ARCHS = {a.name: a for a in (
    Arch("gfx950", "gfx950", 256, 8),
    Arch("gfx950_128cu", "gfx950", 128, 4),
    Arch("gfx942", "gfx942", 304, 8),
    Arch("gfx942_80cu", "gfx942", 80, 4),
    Arch("gfx942_38cu", "gfx942", 38, 8),
    Arch("gfx942_20cu", "gfx942", 20, 4),
    Arch("gfx942_228cu", "gfx942", 228, 6),
    Arch("h200", "h200", 132, 1),
)}
# the names that are a configuration of another model (the sim model runs them as that model)
ARCH_ALIASES = {a.name: a.model for a in ARCHS.values() if a.name != a.model}


def arch_by_name(name: str) -> SimArch:
    """The device model an arch name runs as."""
    from .newer_revisions import refuse_arch

    refuse_arch(name)
    try:
        return MODELS[ARCH_ALIASES.get(name, name)]
    except KeyError:
        raise PlatformError(f"no model of arch {name!r} "
                            f"(known: {', '.join(ARCHS)})") from None


def datasheet_ceilings(name: str) -> dict:
    """Peak rates by input class (TFLOP/s) and HBM bandwidth (TB/s) from the datasheet."""
    arch = arch_by_name(name)
    return {"arch": arch.name, "peak_tflops": dict(arch.peak_tflops), "hbm_tbps": arch.hbm_tbps}
