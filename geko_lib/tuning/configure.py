"""Tuning-config generation: GEMM type + sizes -> TensileLite tuning YAMLs.

Per size: MI candidates (``mi_designer``), the arch/search-space parameter profile and its
post-processing (``params``). Sizes without any MI candidate get no config; they are logged.
Then sizes are clustered (``ONE_SIZE_PER_CONFIG`` / ``CLUSTER``), merged under the kernel-count cap
``MAX_NUM_KERNELS_PER_CONFIG`` and written as ``<gemm_name>_<idx>.yaml`` (``yaml_writer``), with
``Config_<gemm_name>.log`` in the parent of the output directory and, on request (``MI_LOG``),
``MI_finder_log/<gemm_name>/<gemm_name>_M<M>_N<N>_B<B>_K<K>.log`` in the output directory,
beside the YAMLs (the original's workdir layout: ``optimizations/MI_finder_log/``).

Backends: ``tensile`` (exhaustive benchmark of the fork cross-product; default search space
``heuristic``) and ``ductile`` (genetic algorithm; default search space ``generic``; the MI group
gets sampling ``weights`` from the granularity cost model).

Custom main-loop schedule (CMS) kernels are queried from TensileLite in the original; TensileLite
is not available here, so CMS groups are never added (the ``CMS`` option is accepted and reported
but has no effect; ``UseCustomMainLoopSchedule`` is written as ``[0]`` on gfx950). Environment
overrides of the original (``StreamK``, ``MI_FILTER``, ``DUCTILE_VALIDATION_PROFILE`` env vars) are
not read: options come only from the ``options`` argument.
"""

from __future__ import annotations

import logging
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import GekoError
from ..files import write_text
from ..gemm import BY_NAME, GemmError, GemmProblem, GemmType
from .. import archs
from .. import newer_revisions
from . import mi_designer as md
from . import params as pm
from . import yaml_writer as yw
from ..log_setup import LOGGER


class ConfigureError(GekoError, ValueError):
    """An unsupported arch, backend, option, size or data type for tuning configs."""

log = logging.getLogger(LOGGER)

# --------------------------------------------------------------------------------------------
# architectures


@dataclass(frozen=True)
class ArchSpec:
    name: str
    family: str  # "gfx950" | "gfx942": selects MFMAs and parameter profiles
    cus: int
    xcc: int
    schedule_name: str
    architecture_name: str
    device_names: tuple[str, ...]


# the families TensileLite tuning configs are written for (MFMAs, parameter profiles)
TUNING_FAMILIES = ("gfx950", "gfx942")


def _spec(arch: archs.Arch) -> ArchSpec:
    model = archs.MODELS[arch.model]
    return ArchSpec(arch.name, arch.model, arch.cus, arch.xcc, model.schedule_name, arch.model,
                    model.device_names)


# the --arch names tuning configs can be written for: archs.ARCHS of those families
TUNING_ARCHS: dict[str, ArchSpec] = {name: _spec(a) for name, a in archs.ARCHS.items()
                                     if a.model in TUNING_FAMILIES}

HEURISTIC_KERNEL_CAP = 180_000_000
BACKENDS = {"ductile": "Ductile", "tensile": "Tensile"}
DEFAULT_SEARCH_SPACE = {"ductile": "generic", "tensile": "heuristic"}
VALIDATION_ELEMENTS = {0: 0, 1: 128, 2: -1}

# option name -> default (None: depends on arch or search space, see ``arch_defaults``)
OPTION_DEFAULTS: dict[str, object] = {
    "StreamK": None,  # True on gfx950, False on the gfx942 family
    "CMS": None,  # True on gfx950, False on gfx942 (no effect here: see module docstring)
    "CMS_PRIORITY": False,
    "MI_FILTER": 2,
    "EPILOGUES": True,
    "ONE_SIZE_PER_CONFIG": True,
    "CLUSTER": 0,
    "MAX_NUM_KERNELS_PER_CONFIG": None,  # 180,000,000 heuristic; unlimited generic
    "GA_VALIDATION_PROFILE": 1,
    "MACROTILE_OPT": False,
    "MT_DU": None,
    "USE_HEURISTICS": False,  # accepted, no effect
    "search_space": None,  # heuristic | generic; default from the backend
    "MFMA": None,  # override of the arch MFMA allow-list
    "CUs": None,
    "XCC": None,
    "WGMUnit": None,  # default XCC
    "MI_LOG": False,  # write MI_finder_log/
}
_ALIASES = {"DUCTILE_VALIDATION_PROFILE": "GA_VALIDATION_PROFILE"}
MI_LOG_DIR = "MI_finder_log"  # in the output dir, with MI_LOG on
_BY_LOWER = {k.lower(): k for k in OPTION_DEFAULTS} | {k.lower(): v for k, v in _ALIASES.items()}


def arch_spec(arch: str) -> ArchSpec:
    newer_revisions.refuse_arch(arch)
    try:
        return TUNING_ARCHS[str(arch)]
    except KeyError:
        raise md.UnsupportedError(
            f"unsupported architecture {arch!r} for tuning configs "
            f"(supported: {', '.join(TUNING_ARCHS)})") from None


def arch_defaults(arch: str, search_space: str = "heuristic") -> dict:
    """The per-arch defaults of every option (the original's CONFIG_DEFAULTS_BY_ARCH)."""
    spec = arch_spec(arch)
    out = dict(OPTION_DEFAULTS)
    out["StreamK"] = spec.family == "gfx950"
    out["CMS"] = spec.family == "gfx950"
    out["MAX_NUM_KERNELS_PER_CONFIG"] = (HEURISTIC_KERNEL_CAP if search_space == "heuristic"
                                         else sys.maxsize)
    out["CUs"], out["XCC"], out["WGMUnit"] = spec.cus, spec.xcc, spec.xcc
    out["search_space"] = search_space
    return out


def _bool(name, value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigureError(f"option {name} must be a boolean, got {value!r}")


def _int(name, value, choices=None) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ConfigureError(f"option {name} must be an integer, got {value!r}")
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ConfigureError(f"option {name} must be an integer, got {value!r}") from None
    if choices is not None and out not in choices:
        raise ConfigureError(f"option {name} must be one of {sorted(choices)}, got {value!r}")
    return out


@dataclass(frozen=True)
class Settings:
    arch: ArchSpec
    backend: str  # "ductile" | "tensile"
    search_space: str
    stream_k: bool
    cms: bool  # as requested; CMS groups are never added
    mi_filter: int
    epilogues: bool
    one_size_per_config: bool
    cluster: int
    max_kernels: int
    validation_profile: int
    macrotile_opt: bool
    mt_du: tuple[int, int, int] | None
    mfma: tuple | None
    cus: int
    xcc: int
    wgm_unit: int
    mi_log: bool


def resolve_settings(arch: str, backend: str, options: dict | None = None) -> Settings:
    """Defaults + options, validated. Option names are case-insensitive."""
    spec = arch_spec(arch)
    backend_key = str(backend).strip().lower()
    if backend_key not in BACKENDS:
        raise ConfigureError(f"backend must be 'ductile' or 'tensile', got {backend!r}")
    given: dict[str, object] = {}
    for key, value in (options or {}).items():
        canon = _BY_LOWER.get(str(key).lower())
        if canon is None:
            raise ConfigureError(f"unknown tuning-config option {key!r} "
                             f"(known: {', '.join(OPTION_DEFAULTS)})")
        given[canon] = value
    space = given.get("search_space") or DEFAULT_SEARCH_SPACE[backend_key]
    space = str(space).strip().lower()
    if space not in ("heuristic", "generic"):
        raise ConfigureError(f"search_space must be 'heuristic' or 'generic', got {space!r}"
                         + (" (subtile is not supported)" if space == "subtile" else ""))
    if space == "generic" and backend_key == "tensile":
        log.warning("generic search space with the Tensile backend: the exhaustive search "
                    "will most likely fail")
    o = arch_defaults(arch, space)
    o.update({k: v for k, v in given.items() if v is not None or k in ("MT_DU", "MFMA")})
    cluster = _int("CLUSTER", o["CLUSTER"])
    if cluster not in (0, 1):
        log.warning("CLUSTER %r unknown: using 1", cluster)
        cluster = 1
    mt_du = o["MT_DU"]
    if mt_du is not None:
        if not isinstance(mt_du, (list, tuple)) or len(mt_du) != 3:
            raise ConfigureError(f"MT_DU must be [MT0, MT1, DU], got {mt_du!r}")
        mt_du = tuple(_int("MT_DU", v) for v in mt_du)
    mfma = o["MFMA"]
    if mfma is not None:
        mfma = tuple(tuple(_int("MFMA", v) for v in m) for m in mfma)
    cap = _int("MAX_NUM_KERNELS_PER_CONFIG", o["MAX_NUM_KERNELS_PER_CONFIG"])
    if cap < 1:
        raise ConfigureError("MAX_NUM_KERNELS_PER_CONFIG must be positive")
    if space == "generic":
        cap = sys.maxsize  # the cap applies to the heuristic search space only
    cus, xcc = _int("CUs", o["CUs"]), _int("XCC", o["XCC"])
    wgm_unit = _int("WGMUnit", o["WGMUnit"])
    if min(cus, xcc, wgm_unit) < 1:
        raise ConfigureError("CUs, XCC and WGMUnit must be positive")
    return Settings(
        arch=spec, backend=backend_key, search_space=space,
        stream_k=_bool("StreamK", o["StreamK"]), cms=_bool("CMS", o["CMS"]),
        mi_filter=_int("MI_FILTER", o["MI_FILTER"], {0, 1, 2}),
        epilogues=_bool("EPILOGUES", o["EPILOGUES"]),
        one_size_per_config=_bool("ONE_SIZE_PER_CONFIG", o["ONE_SIZE_PER_CONFIG"]),
        cluster=cluster, max_kernels=cap,
        validation_profile=_int("GA_VALIDATION_PROFILE", o["GA_VALIDATION_PROFILE"], {0, 1, 2}),
        macrotile_opt=_bool("MACROTILE_OPT", o["MACROTILE_OPT"]), mt_du=mt_du, mfma=mfma,
        cus=cus, xcc=xcc, wgm_unit=wgm_unit, mi_log=_bool("MI_LOG", o["MI_LOG"]))


# --------------------------------------------------------------------------------------------
# benchmark timing: EnqueuesPerSync / NumWarmups


def enqueues_base(size, in_bytes: float, mt_max: int, cus: int) -> int:
    """EnqueuesPerSync of one size by its volume, x3.5 (1-byte) / x2 (2-byte) for small outputs."""
    m, n, b, k = size
    vol = m * n * k * b
    if vol < 64 * 64 * 8192:
        enq = 200
    elif vol < 256 * 256 * 8192:
        enq = 30
    elif vol < 1024 * 1024 * 8192:
        enq = 20
    else:
        enq = 10
    if m * n * b < mt_max * cus * 10:
        if in_bytes == 1:
            enq = math.ceil(enq * 3.5)
        elif in_bytes == 2:
            enq *= 2
    return enq


def ductile_iters(size) -> int:
    m, n, b, k = size
    return max(round((-(m + n + k) * 0.015 + 431) / b), 5)


def timing(sizes, backend: str, in_bytes: float, mt_max: int, cus: int) -> tuple[int, int, int]:
    """(EnqueuesPerSync, NumWarmups, SleepPercent) of a config: maxima over its sizes."""
    enq = max(enqueues_base(s, in_bytes, mt_max, cus) for s in sizes)
    if backend == "tensile":
        return enq, enq, 0
    iters = max(ductile_iters(s) for s in sizes)
    eps = int(0.75 * max(iters, enq))
    return eps, int(0.75 * max(iters, eps)), 50


# --------------------------------------------------------------------------------------------
# Ductile backend config


def mi_costs(meta: list[md.MIEntry], size, cus: int) -> list[float]:
    """Cost of every MI entry at one size: ceil(TPC) + (ceil(TPC) - TPC)
    + 1e-3 (1 - totalGranularity) + 1e-11 (1 - (GSU - GSUmin) / span), TPC = TilesPerCU."""
    gsus = [e.gsu for e in meta]
    gmin = min(gsus)
    span = (max(gsus) - gmin) or 1
    out = []
    for e in meta:
        g = e.at(size, cus)
        r = math.ceil(g.tiles_per_cu)
        out.append(r + (r - g.tiles_per_cu) + 1e-3 * (1 - g.total)
                   + 1e-11 * (1 - (e.gsu - gmin) / span))
    return out


def mi_weights(meta: list[md.MIEntry], sizes, cus: int) -> list[float]:
    """Per-entry costs normalized per size by the minimum, averaged over sizes."""
    total = [0.0] * len(meta)
    for size in sizes:
        costs = mi_costs(meta, size, cus)
        low = min(costs)
        for i, c in enumerate(costs):
            total[i] += c / low
    return [round(t / len(sizes), 6) for t in total]


def pop_size(permutations: int) -> int | None:
    """512 for large spaces; None (omitted) below 3 permutations; else min(n, max(3, n - 1))."""
    if permutations >= 512:
        return 512
    if permutations < 3:
        return None
    return min(permutations, max(3, permutations - 1))


# --------------------------------------------------------------------------------------------
# per-size spaces, clustering, merging


@dataclass
class SizePlan:
    size: tuple[int, int, int, int]
    design: md.MIDesign
    space: pm.ParamSpace | None  # None: no MI candidate

    @property
    def n_mis(self) -> int:
        return 0 if self.space is None else len(self.space.mi_group.entries)


def plan_size(gemm_type: GemmType, size, settings: Settings, mis: list[md.MI],
              family: str) -> SizePlan:
    """MI design and parameter space of one size."""
    cbytes = md.compute_bytes(gemm_type)
    design = md.design(mis, size, family=family, cus=settings.cus, stream_k=settings.stream_k,
                       mi_filter=settings.mi_filter, cbytes=cbytes)
    if not design.entries:
        return SizePlan(tuple(size), design, None)
    ctx = pm.SizeContext(gemm_type, tuple(size), settings.arch.family, settings.cus,
                         settings.xcc, settings.wgm_unit, settings.stream_k, family)
    space = pm.build_space(ctx, settings.search_space, design.entries)
    if settings.mt_du is not None:
        pm.apply_mt_du(space, settings.mt_du)
        if not space.mi_group.entries:
            return SizePlan(tuple(size), design, None)
    return SizePlan(tuple(size), design, space)


def cluster_key(plan: SizePlan) -> tuple[int, int, int, int]:
    """(MT0, MT1, WorkGroup LSU, GlobalSplitU) of the top MI entry; (0, 0, 0, 0) without one."""
    if plan.space is None or not plan.space.mi_group.entries:
        return (0, 0, 0, 0)
    entry = plan.space.mi_group.entries[0]
    meta = plan.space.mi_group.meta[0]
    wg = entry.get("WorkGroup")
    lsu = wg[2] if isinstance(wg, (list, tuple)) and len(wg) == 3 else 1
    gsu = entry.get("GlobalSplitU", 1)
    gsu = gsu[0] if isinstance(gsu, (list, tuple)) else gsu
    return (meta.mi.mt0, meta.mi.mt1, int(lsu), int(gsu))


def cluster(plans: list[SizePlan], settings: Settings) -> list[list[SizePlan]]:
    """ONE_SIZE_PER_CONFIG: one cluster per size; else CLUSTER 0: one cluster; CLUSTER 1: by the
    top MI's (MT0, MT1, LSU, GSU), sizes ordered by (M*N, M, N). Clusters keep the order of their
    first size."""
    if settings.one_size_per_config:
        return [[p] for p in plans]
    if settings.cluster == 0:
        return [list(plans)] if plans else []
    groups: dict[tuple, list[SizePlan]] = {}
    for p in plans:
        groups.setdefault(cluster_key(p), []).append(p)
    return [sorted(g, key=lambda p: (p.size[0] * p.size[1], p.size[0], p.size[1]))
            for g in groups.values()]


def _close(sizes, space: pm.ParamSpace, cap: int) -> tuple[list, pm.ParamSpace]:
    rest = space.count_without_mi()
    if rest > cap:
        log.warning("parameters without MatrixInstruction give %d kernels, above the cap %d",
                    rest, cap)
    keep = max(1, cap // rest)
    mi = space.mi_group
    if len(mi.entries) > keep:
        mi.entries, mi.meta = mi.entries[:keep], mi.meta[:keep]
    return sizes, space


def merge(cluster_plans: list[SizePlan], cap: int) -> list[tuple[list, pm.ParamSpace]]:
    """Merge a cluster's spaces incrementally; a merge that would exceed ``cap`` kernels closes
    the current config and starts a new one. Closing truncates the MI group to
    max(1, cap // kernels_without_MI) entries."""
    out = []
    cur, sizes = None, []
    for p in cluster_plans:
        if cur is None:
            cur, sizes = p.space.copy(), [p.size]
            continue
        tentative = cur.merged(p.space)
        if tentative.count_kernels() > cap:
            out.append(_close(sizes, cur, cap))
            cur, sizes = p.space.copy(), [p.size]
        else:
            cur, sizes = tentative, sizes + [p.size]
    if cur is not None:
        out.append(_close(sizes, cur, cap))
    return out


# --------------------------------------------------------------------------------------------
# entry points


def tuning_sizes(gemm_type: GemmType, sizes) -> list[tuple[int, int, int, int]]:
    """Sizes ``[M, N, B, K]`` checked to be positive integers, duplicates dropped, order kept."""
    out: list[tuple[int, int, int, int]] = []
    for s in sizes:
        if isinstance(s, (str, bytes)) or not hasattr(s, "__len__") or len(s) != 4:
            raise ConfigureError(f"a size must be [M, N, B, K], got {s!r}")
        m, n, b, k = (x.item() if hasattr(x, "item") else x for x in s)
        size = GemmProblem(gemm_type, m, n, b, k).size  # validates positive integers
        if size not in out:
            out.append(size)
    if not out:
        raise ConfigureError("no sizes given")
    return out


def configure(gemm_type: GemmType, sizes, arch: str, backend: str = "ductile",
              options: dict | None = None, out_dir: Path | str | None = None) -> list[Path]:
    """Write the tuning YAMLs of one GEMM type; returns their paths in index order.

    ``sizes``: ``[M, N, B, K]`` each (duplicates dropped, order kept). ``backend``: ``ductile`` or
    ``tensile``. ``options``: the original generator's keys (``StreamK``, ``MI_FILTER``,
    ``EPILOGUES``, ``ONE_SIZE_PER_CONFIG``, ``CLUSTER``, ``MAX_NUM_KERNELS_PER_CONFIG``,
    ``GA_VALIDATION_PROFILE``, ``MACROTILE_OPT``, ``MT_DU``, ``search_space``, ``MFMA``, ``CUs``,
    ``XCC``, ``WGMUnit``, ``CMS``, ``CMS_PRIORITY``, ``USE_HEURISTICS``) plus ``MI_LOG``.
    Writes ``<out_dir>/<gemm_name>_<i>.yaml`` (stale ``<gemm_name>_<j>.yaml`` of an earlier run are
    removed), ``<out_dir>/../Config_<gemm_name>.log`` and, with ``MI_LOG``,
    ``<out_dir>/MI_finder_log/<gemm_name>/*.log``. Raises ``ValueError`` for an unsupported
    arch, backend, option or data type."""
    if out_dir is None:
        raise TypeError("configure() needs out_dir")
    out_dir = Path(out_dir)
    settings = resolve_settings(arch, backend, options)
    family = md.mi_family(gemm_type, settings.arch.family)
    sizes = tuning_sizes(gemm_type, sizes)
    cbytes = md.compute_bytes(gemm_type)
    mis = md.enumerate_mis(family, settings.arch.family, settings.mfma, cbytes)
    name = gemm_type.name

    plans = [plan_size(gemm_type, s, settings, mis, family) for s in sizes]
    usable = [p for p in plans if p.space is not None]
    for p in plans:
        if p.space is None:
            log.warning("%s: no MatrixInstruction candidate for size %s; no tuning config",
                        name, list(p.size))
    configs = []
    for c in cluster(usable, settings):
        configs.extend(merge(c, settings.max_kernels))

    paths, log_lines = [], []
    by_size = {p.size: p for p in plans}
    for idx, (csizes, space) in enumerate(configs):
        cfg = _yaml_spec(f"{name}_{idx}", gemm_type, csizes, space, settings, family)
        paths.append(yw.write(out_dir / f"{cfg.name}.yaml", cfg))
        log_lines += [cfg.name, f"#kernels {cfg.kernels}"]
        log_lines += [f"# MIs for {tuple(s)}: {by_size[s].n_mis}" for s in csizes]
        log_lines.append("")
    _remove_stale(out_dir, name, {p.name for p in paths})
    _write_config_log(out_dir.parent / f"Config_{name}.log", name, settings, len(sizes), plans,
                      log_lines, len(paths))
    if settings.mi_log:
        mi_dir = out_dir / MI_LOG_DIR / name
        for p in plans:
            write_text(mi_dir / md.mi_log_name(name, p.size), p.design.log_text(name))
    return paths


def _yaml_spec(entity: str, gemm_type: GemmType, csizes, space: pm.ParamSpace, settings,
               family: str) -> yw.TuningYamlSpec:
    """One tuning YAML's content: its sizes and space, their timing and DUCTILE settings."""
    in_bytes = 4 if gemm_type.is_tf32 else BY_NAME[gemm_type.a_type].bytes
    eps, warm, sleep = timing(csizes, settings.backend, in_bytes, md.MT_MAX[family],
                              settings.cus)
    ductile = {}
    if settings.backend == "ductile":
        meta = space.mi_group.meta
        ductile = {"soo": settings.macrotile_opt,
                   "n_elements_to_validate": VALIDATION_ELEMENTS[settings.validation_profile],
                   "pop_size": pop_size(space.permutations())}
        if len(meta) > 1:
            ductile["weights"] = {"group_0": mi_weights(meta, csizes, settings.cus)}
    return yw.TuningYamlSpec(
        name=entity, gemm_type=gemm_type, sizes=list(csizes), space=space,
        enqueues_per_sync=eps, num_warmups=warm, sleep_percent=sleep,
        schedule_name=settings.arch.schedule_name,
        architecture_name=settings.arch.architecture_name,
        device_names=list(settings.arch.device_names), backend=BACKENDS[settings.backend],
        epilogues=settings.epilogues, mi_family=family, ductile=ductile)


def _write_config_log(path: Path, name: str, settings, n_sizes: int, plans, log_lines: list,
                      n_configs: int) -> None:
    """Config_<gemm>.log: the settings, then each config's kernels and MI counts, then the
    sizes left without a config."""
    missing = [p for p in plans if p.space is None]
    if missing:
        log_lines = log_lines + ["# sizes without a MatrixInstruction candidate (no tuning "
                                 "config):"] + [f"# MIs for {p.size}: 0" for p in missing] + [""]
    header = [f"# {name} on {settings.arch.name}, backend {settings.backend}, search space "
              f"{settings.search_space}, StreamK {settings.stream_k}, CMS groups not added",
              f"# configs {n_configs}, sizes {n_sizes}, sizes without MI {len(missing)}", ""]
    write_text(path, "\n".join(header + log_lines))


def _remove_stale(out_dir: Path, name: str, keep: set[str]):
    if not out_dir.is_dir():
        return
    pattern = re.compile(rf"^{re.escape(name)}_\d+\.yaml$")
    for path in out_dir.iterdir():
        if pattern.match(path.name) and path.name not in keep:
            path.unlink()


def configs_from_gemms(gemms_df) -> list[tuple[GemmType, list[tuple[int, int, int, int]]]]:
    """Group a gemms.csv table (transA, transB, batch_count, m, n, k, a_type, b_type, c_type,
    d_type, compute_type) by GEMM type, in order of first appearance; sizes ``(m, n, batch, k)``,
    duplicates dropped."""
    out: dict[GemmType, list] = {}
    for row in gemms_df.to_dict("records"):
        try:
            problem = GemmProblem.from_row(row)
        except GemmError as err:
            raise ConfigureError(f"gemms table row {row}: {err}") from None
        sizes = out.setdefault(problem.type, [])
        if problem.size not in sizes:
            sizes.append(problem.size)
    return list(out.items())


def configure_for(gemm_config, out_dir, arch: str, options: dict | None = None) -> list[Path]:
    """The Platform.configure of every platform that tunes with TensileLite YAMLs (rocm runs
    them, the sim models them): ``gemm_config`` is (GemmType, sizes) or a GemmConfig;
    ``options`` holds ``backend`` plus the generator's keys of ``configure``."""
    if hasattr(gemm_config, "gemm_type"):
        gemm_type, sizes = gemm_config.gemm_type, gemm_config.sizes
    else:
        gemm_type, sizes = gemm_config
    options = dict(options or {})
    backend = options.pop("backend", "ductile")
    return configure(gemm_type, sizes, arch, backend, options or None, out_dir=out_dir)

