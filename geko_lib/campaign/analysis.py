"""Reference vs tuned: ratio, numerical validity, the keep rule, and metrics.json.

A tuned kernel replaces the reference only if it is a different kernel, ``us_reference / us_tuned
>= up_thr`` and its verified error ``< err_thr``; a failed or missing check counts as an error of
1e6 (when verification is on). Where the tuned table carries ``us_paired_reference`` (the
reference re-timed in the tuned job, interleaved with the tuned kernel), that time is the
ratio's numerator.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from ..gemm import BY_NAME, GEMM_FIELDS, GemmProblem
from ..library.logic import problems_of
from ..bench_formats.summary import PCT, TOTAL, normalized
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

FAILED_ERROR = 1e6
UNIQUE = ("us", "gflops", "gbps", "solution_index", "solution_name", "kernel", "device",
          "lib_source")
KEYS = list(GEMM_FIELDS)
PAIRED = "us_paired_reference"  # the reference timed beside the tuned kernel in the tuned job


def keeps(kernel_changed, ratio, error, up_thr: float, err_thr: float):
    """The keep rule (docs/ARCHITECTURE.md), the one place it is written: a different kernel, at
    least ``up_thr`` times as fast as the default and verified with an error under ``err_thr``
    (a NaN ratio or error never passes). Scalars or table columns alike."""
    return kernel_changed & (ratio >= up_thr) & (error < err_thr)


def compare(reference: pd.DataFrame, tuned: pd.DataFrame, verify: pd.DataFrame | None,
            up_thr: float = 1.03, err_thr: float = 0.03,
            weights: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per GEMM with ``*_reference`` / ``*_tuned`` columns, ratio, validity and winner.

    ``reference``/``tuned`` carry a ``lib`` column naming the library the GEMM came from;
    ``weights`` is the summary table (call_count, % of total) used for time-weighted uplift.
    """
    reference, tuned = normalized(reference), normalized(tuned)
    common = [c for c in reference.columns if c not in UNIQUE and c not in KEYS]
    ref = reference.rename(columns={c: f"{c}_reference" for c in UNIQUE})
    tun = tuned.rename(columns={c: f"{c}_tuned" for c in UNIQUE})
    tun = tun.drop(columns=[c for c in common if c != "lib"], errors="ignore")
    raw = ref.merge(tun, on=KEYS + ["lib"], how="inner", validate="one_to_one")
    if len(raw) != len(reference) or len(raw) != len(tuned):
        raise ValueError(f"reference ({len(reference)} rows) and tuned ({len(tuned)} rows) "
                         "results do not cover the same GEMMs")
    verified = verify is not None
    if verified:
        errors = normalized(verify)[KEYS + ["error"]].rename(columns={"error": "error_tuned"})
        raw = raw.merge(errors, on=KEYS, how="left", validate="one_to_one")
        raw["error_tuned"] = pd.to_numeric(raw["error_tuned"], errors="coerce").fillna(FAILED_ERROR)
    else:
        raw["error_tuned"] = 0.0
    # a platform that also timed the reference in the tuned job, interleaved with the tuned
    # kernel (cuda), gives a ratio free of drift between the two jobs: that one decides
    base = raw["us_reference"]
    if PAIRED in raw:
        base = pd.to_numeric(raw[PAIRED], errors="coerce").fillna(raw["us_reference"])
    raw["ratio"] = base / raw["us_tuned"]
    raw["verified"] = verified
    raw["valid"] = raw["error_tuned"] < err_thr
    raw["kernel_changed"] = raw["kernel_reference"] != raw["kernel_tuned"]
    raw["kept"] = keeps(raw["kernel_changed"], raw["ratio"], raw["error_tuned"], up_thr, err_thr)
    raw["winner"] = np.where(raw["kept"], "tuned", "reference")
    raw["uplift_pct"] = (raw["ratio"] - 1.0) * 100.0
    raw["us_saved"] = base - raw["us_tuned"]
    raw["arith_intensity"] = [arithmetic_intensity(r) for r in raw.to_dict("records")]
    if weights is not None:
        raw = _add_weights(raw, weights)
    return raw


def baseline_timed(summary: pd.DataFrame) -> bool:
    """summary.csv has every GEMM's share of the workload's time: a baseline timed it
    (keep_thr > 0); keep_thr 0 times none."""
    return PCT in summary and bool(summary[PCT].notna().any())


def workload_weights(summary: pd.DataFrame, reference: pd.DataFrame,
                     uncompared: pd.DataFrame | None) -> pd.DataFrame:
    """summary.csv with every GEMM's share of the whole workload's GEMM time: the baseline's
    (keep_thr > 0), else (keep_thr 0 times no baseline) ``call_count x us``, ``us`` the
    reference time of the compared GEMMs (``reference``: their reference benchmarks) and of
    the GEMMs no library holds, as their job failed (``uncompared``: the same default kernel,
    timed alone). A GEMM neither times has no share (NaN; :func:`failed_gemms` counts them)."""
    if baseline_timed(summary):
        return summary
    timed = [normalized(t)[KEYS + ["us"]] for t in (reference, uncompared)
             if t is not None and len(t)]
    out = normalized(summary).drop(columns=["us", TOTAL, PCT], errors="ignore")
    if not timed:
        return out
    us = pd.concat(timed, ignore_index=True).drop_duplicates(subset=KEYS)
    out = out.merge(us, on=KEYS, how="left", validate="one_to_one")
    out[TOTAL] = out["call_count"].astype(float) * out["us"].astype(float)
    total = out[TOTAL].sum()  # NaN (untimed) rows left out
    out[PCT] = 100.0 * out[TOTAL] / total if total > 0 else np.nan
    return out


def failed_gemms(weights: pd.DataFrame | None, raw: pd.DataFrame) -> dict:
    """What :func:`metrics` takes of the whole workload's shares (:func:`workload_weights`)
    about the GEMMs without a row in ``raw`` (their job failed): ``n_untimed``, how many have
    no share (no timing covers them), and ``failed``, those that have one, at their reference
    time (``us``, ``call_count``, ``pct_of_total``). Empty without weights."""
    if weights is None or PCT not in weights:
        return {}
    rest = normalized(weights).merge(normalized(raw)[KEYS].drop_duplicates(), on=KEYS,
                                     how="left", indicator=True)
    rest = rest[rest["_merge"] == "left_only"].drop(columns="_merge")
    timed = rest[rest[PCT].notna()]
    return {"n_untimed": int(rest[PCT].isna().sum()),
            "failed": timed[KEYS + ["call_count", "us", PCT]]
            .rename(columns={PCT: "pct_of_total"}).reset_index(drop=True)}


def arithmetic_intensity(row) -> float:
    """FLOPs per byte moved at least once: 2MNK / (sa*M*K + sb*K*N + sc*M*N)."""
    m, n, k = row["m"], row["n"], row["k"]
    sa, sb = BY_NAME[row["a_type"]].bytes, BY_NAME[row["b_type"]].bytes
    sc = BY_NAME[row["d_type"]].bytes
    return 2.0 * m * n * k / (sa * m * k + sb * k * n + sc * m * n)


def _add_weights(raw: pd.DataFrame, weights: pd.DataFrame) -> pd.DataFrame:
    cols = KEYS + ["call_count"] + ([PCT] if PCT in weights else [])
    w = weights[cols].rename(columns={PCT: "pct_of_total"})
    raw = raw.merge(w, on=KEYS, how="left", validate="one_to_one")
    if "pct_of_total" not in raw or raw["pct_of_total"].isna().all():
        # summary without timings: weight by the reference time of the compare run
        total = raw["call_count"] * raw["us_reference"]
        raw["pct_of_total"] = 100.0 * total / total.sum()
    raw["weighted_us_saved"] = np.where(raw["kept"], raw["call_count"] * raw["us_saved"], 0.0)
    raw["weighted_uplift_contribution_pct"] = np.where(
        raw["kept"], raw["pct_of_total"] * (1.0 - 1.0 / raw["ratio"]), 0.0)
    return raw


# --- metrics -----------------------------------------------------------------------------------

def _stats(ratios: pd.Series) -> dict:
    if ratios.empty:
        return {"n": 0}
    uplift = (ratios - 1.0) * 100.0
    out = {
        "n": int(len(ratios)),
        "mean": uplift.mean(),
        "geomean": 100.0 * (math.exp(np.log(ratios).mean()) - 1.0),
        "median": uplift.median(),
        "max": uplift.max(),
        "min": uplift.min(),
        "std": uplift.std(ddof=0),
    }
    for p in (25, 50, 75, 90, 95, 99):
        out[f"p{p}"] = float(np.percentile(uplift, p))
    return out


def _finite(value):
    """JSON has no NaN/inf: write null instead."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


IMPROVED_EDGES_PCT = (1, 3, 5, 10, 20, 50, 100)
REGRESSED_EDGES_PCT = (1, 3, 5, 10)


def _in_ranges(magnitude: pd.Series, edges) -> dict:
    """Disjoint buckets of positive magnitudes (percent): ``0_1_pct`` (0 < x < 1), ``1_3_pct``
    (1 <= x < 3), ..., ``ge_<last>_pct``; every value > 0 lands in exactly one."""
    magnitude = magnitude[magnitude > 0]
    out, lower = {}, 0
    for upper in edges:
        out[f"{lower}_{upper}_pct"] = int(((magnitude >= lower) & (magnitude < upper)).sum())
        lower = upper
    out[f"ge_{lower}_pct"] = int((magnitude >= lower).sum())
    return out


# --- GEMM categories ---------------------------------------------------------------------------
# geko's reading of the original's 20 shape labels (original_tool.md section 7.2): the first
# rule that matches wins. "large" = a dimension > 8192, "very small" = <= 128.

LARGE_DIM = 8192
VERY_SMALL_DIM = 128
CATEGORIES = (
    "Very large batch", "Large batch", "Medium batch", "Small batch",
    "M = 1", "N = 1", "K = 1",
    "Large M, very small N and K", "Large N, very small M and K", "Large K, very small M and N",
    "Large M", "Large N", "Large K", "Large M and N", "Large M and K", "Large N and K",
    "Large M, N and K",
    "Small GEMMs", "Large GEMMs", "Medium GEMMs",
)


def gemm_category(m: int, n: int, k: int, batch: int = 1) -> str:
    """One of CATEGORIES: batch size first (> 8192, > 1024, > 128, >= 2), then a unit
    dimension, then large dimensions (> 8192; one large with the other two <= 128 is its own
    label), then all <= 1024 small, all >= 4096 large, else medium."""
    if batch > 8192:
        return "Very large batch"
    if batch > 1024:
        return "Large batch"
    if batch > 128:
        return "Medium batch"
    if batch >= 2:
        return "Small batch"
    dims = {"M": m, "N": n, "K": k}
    for name, value in dims.items():
        if value == 1:
            return f"{name} = 1"
    large = [name for name, value in dims.items() if value > LARGE_DIM]
    if len(large) == 1:
        others = [name for name in dims if name != large[0]]
        if all(dims[o] <= VERY_SMALL_DIM for o in others):
            return f"Large {large[0]}, very small {others[0]} and {others[1]}"
        return f"Large {large[0]}"
    if len(large) == 2:
        return f"Large {large[0]} and {large[1]}"
    if len(large) == 3:
        return "Large M, N and K"
    if max(m, n, k) <= 1024:
        return "Small GEMMs"
    if min(m, n, k) >= 4096:
        return "Large GEMMs"
    return "Medium GEMMs"


# --- roofline ----------------------------------------------------------------------------------

ROOFLINE_COLUMNS = ("pct_roofline_reference", "pct_roofline_tuned")


def _gemm_type(row):
    from ..gemm import GemmType

    return GemmType(row["transA"], row["transB"], row["a_type"], row["b_type"], row["c_type"],
                    row["d_type"], row["compute_type"])


def roofline_table(raw: pd.DataFrame, ceilings: dict) -> pd.DataFrame:
    """Per GEMM: achieved TFLOP/s of both sides, arithmetic intensity, the roofline bound
    ``min(peak of the GEMM's input class, intensity * bandwidth)`` and % of it reached.

    ``ceilings`` is ``platforms.ceilings(config)``: ``peak_tflops`` by class, ``hbm_tbps``."""
    from ..platforms import peak_class

    rows = raw.to_dict("records")
    peaks = ceilings.get("peak_tflops") or {}
    bandwidth = float(ceilings["hbm_tbps"])
    out = pd.DataFrame(index=raw.index)
    flops = 2.0 * raw["m"] * raw["n"] * raw["k"] * raw["batch_count"]
    intensity = raw["arith_intensity"] if "arith_intensity" in raw else \
        pd.Series([arithmetic_intensity(r) for r in rows], index=raw.index, dtype=float)
    classes = []
    names = []
    for row in rows:
        gemm_type = _gemm_type(row)
        classes.append(peak_class(gemm_type))
        names.append(f"{gemm_type.name}_M{int(row['m'])}_N{int(row['n'])}"
                     f"_B{int(row['batch_count'])}_K{int(row['k'])}")
    out["gemm"] = names
    out["peak_class"] = classes
    out["arith_intensity"] = intensity.astype(float)
    out["peak_tflops"] = [float(peaks[c]) if c in peaks else np.nan for c in classes]
    out["memory_bound_tflops"] = out["arith_intensity"] * bandwidth
    out["roofline_tflops"] = np.fmin(out["peak_tflops"], out["memory_bound_tflops"])
    # without a peak for the class the bandwidth is the only ceiling
    out["bound"] = np.where(out["peak_tflops"] <= out["memory_bound_tflops"], "compute", "memory")
    with np.errstate(divide="ignore", invalid="ignore"):
        for side in ("reference", "tuned"):
            us = raw[f"us_{side}"].astype(float)
            out[f"tflops_{side}"] = flops / us / 1e6
            out[f"pct_roofline_{side}"] = 100.0 * out[f"tflops_{side}"] / out["roofline_tflops"]
    return out


def enrich(raw: pd.DataFrame, ceilings: dict | None = None) -> pd.DataFrame:
    """raw_results columns beyond compare(): the original's ``MT_*``, ``MI_*`` and
    ``solution_changed`` (original_columns.add_shapes), ``category`` (gemm_category) and
    ``pct_roofline_reference`` / ``pct_roofline_tuned`` (empty where the platform does not
    know its ceilings)."""
    from .. import original_columns

    raw = original_columns.add_shapes(raw)
    raw["category"] = [gemm_category(int(m), int(n), int(k), int(b)) for m, n, k, b in
                       zip(raw["m"], raw["n"], raw["k"], raw["batch_count"])]
    if ceilings and len(raw):
        table = roofline_table(raw, ceilings)
        for column in ROOFLINE_COLUMNS:
            raw[column] = table[column]
    else:
        for column in ROOFLINE_COLUMNS:
            raw[column] = np.nan
    return raw


def _time_weights(raw: pd.DataFrame) -> tuple[pd.Series, str]:
    """Share of workload time per GEMM: pct_of_total (summary.csv), else the reference time
    (call_count x us_reference where counts are known)."""
    if "pct_of_total" in raw and raw["pct_of_total"].notna().any():
        return raw["pct_of_total"].fillna(0.0).astype(float), "pct_of_total"
    time = raw["us_reference"].astype(float)
    if "call_count" in raw:
        time = time * raw["call_count"].fillna(1).astype(float)
    total = time.sum()
    return (100.0 * time / total if total > 0 else time * 0.0), "reference time"


def _weighted(values: pd.Series, weights: pd.Series):
    ok = values.notna() & np.isfinite(values.astype(float)) & (weights > 0)
    total = weights[ok].sum()
    return float((values[ok] * weights[ok]).sum() / total) if total > 0 else None


def roofline_metrics(raw: pd.DataFrame, ceilings: dict,
                     failed: pd.DataFrame | None = None) -> dict:
    """The ``roofline`` section of metrics.json: the ceilings, per-GEMM numbers and the
    workload's time-weighted % of roofline for the reference, the tuned kernels and what
    ships (tuned where kept, else reference). ``failed`` (failed_gemms): GEMMs whose job failed,
    with their reference time and share: they ship their reference kernel, no tuned one."""
    n_compared = int(len(raw))
    if failed is not None and len(failed):
        raw = pd.concat([raw, failed.rename(columns={"us": "us_reference"}).assign(
            us_tuned=np.nan, kept=False, lib=None)], ignore_index=True)
        if "arith_intensity" in raw:
            raw["arith_intensity"] = [arithmetic_intensity(r) if pd.isna(r["arith_intensity"])
                                      else r["arith_intensity"] for r in raw.to_dict("records")]
    table = roofline_table(raw, ceilings) if len(raw) else None
    weights, weight_source = _time_weights(raw) if len(raw) else (pd.Series(dtype=float), None)
    section = {
        "ceilings": {"arch": ceilings.get("arch"), "peak_tflops": dict(ceilings["peak_tflops"]),
                     "hbm_tbps": ceilings["hbm_tbps"], "source": ceilings.get("source")},
        "definition": "roofline = min(peak TFLOP/s of the GEMM's input class, arith_intensity "
                      "x bandwidth); % of roofline = achieved TFLOP/s / roofline",
        "weights": weight_source,
        "n": int(len(raw)),
        "n_failed": int(len(raw)) - n_compared,  # timed, not compared: their reference ships
    }
    if table is None:
        return _finite(section | {"gemms": []})
    kept = raw["kept"].astype(bool) if "kept" in raw else pd.Series(False, index=raw.index)
    shipped = table["pct_roofline_tuned"].where(kept, table["pct_roofline_reference"])
    section |= {
        "n_memory_bound": int((table["bound"] == "memory").sum()),
        "n_compute_bound": int((table["bound"] == "compute").sum()),
        "weight_coverage_pct": float(weights.sum()),
        "time_weighted_pct_roofline_reference": _weighted(table["pct_roofline_reference"], weights),
        "time_weighted_pct_roofline_tuned": _weighted(table["pct_roofline_tuned"], weights),
        "time_weighted_pct_roofline_shipped": _weighted(shipped, weights),
        "mean_pct_roofline_reference": float(table["pct_roofline_reference"].mean()),
        "mean_pct_roofline_tuned": float(table["pct_roofline_tuned"].mean()),
        "median_pct_roofline_reference": float(table["pct_roofline_reference"].median()),
        "median_pct_roofline_tuned": float(table["pct_roofline_tuned"].median()),
    }
    section["flaws"] = roofline_flaws(table)
    gemms = []
    for i, row in zip(table.index, table.to_dict("records")):
        gemms.append({
            "gemm": row["gemm"], "lib": raw.at[i, "lib"] if "lib" in raw else None,
            "peak_class": row["peak_class"], "arith_intensity": row["arith_intensity"],
            "peak_tflops": row["peak_tflops"], "memory_bound_tflops": row["memory_bound_tflops"],
            "roofline_tflops": row["roofline_tflops"], "bound": row["bound"],
            "tflops_reference": row["tflops_reference"], "tflops_tuned": row["tflops_tuned"],
            "pct_roofline_reference": row["pct_roofline_reference"],
            "pct_roofline_tuned": row["pct_roofline_tuned"],
            "time_share_pct": float(weights.loc[i]), "kept": bool(kept.loc[i]),
            "compared": bool(i < n_compared),
        })
    section["gemms"] = gemms
    return _finite(section)


def roofline_flaws(table: pd.DataFrame) -> list[dict]:
    """GEMMs timed faster than their roofline allows: the ceilings are then no upper bound on
    this device (a datasheet or measured peak below what the kernels reach) and every % of
    roofline above 100 is a flaw of the ceilings, reported, never hidden."""
    flaws = []
    for row in table.to_dict("records"):
        for side in ("reference", "tuned"):
            pct = row[f"pct_roofline_{side}"]
            if np.isfinite(pct) and pct > 100.0:
                flaws.append({"gemm": row["gemm"], "side": side, "pct_roofline": float(pct),
                              "tflops": float(row[f"tflops_{side}"]),
                              "roofline_tflops": float(row["roofline_tflops"])})
    if flaws:
        log.warning("%d timing(s) above 100%% of the roofline: the ceilings (%s) are below what "
                    "the kernels reach; see metrics.json roofline.flaws", len(flaws),
                    "config cuda.ceilings / the platform's datasheet figures")
    return flaws


def _categories(raw: pd.DataFrame, weights: pd.Series | None) -> dict:
    category = raw["category"] if "category" in raw else pd.Series(
        [gemm_category(int(m), int(n), int(k), int(b)) for m, n, k, b in
         zip(raw["m"], raw["n"], raw["k"], raw["batch_count"])], index=raw.index, dtype=object)
    out = {}
    for label in CATEGORIES:
        rows = raw[category == label]
        if rows.empty:
            continue
        valid = rows[rows["valid"]]
        kept = rows[rows["kept"]]
        entry = {"n": int(len(rows)), "n_valid": int(len(valid)), "n_kept": int(len(kept)),
                 "geomean_valid": _stats(valid["ratio"]).get("geomean"),
                 "geomean_kept": _stats(kept["ratio"]).get("geomean")}
        if weights is not None:
            entry["pct_of_total"] = float(weights[rows.index].sum())
            entry["e2e_uplift_pct"] = float(
                kept["weighted_uplift_contribution_pct"].sum()) \
                if "weighted_uplift_contribution_pct" in kept else None
        out[label] = entry
    return out


def metrics(raw: pd.DataFrame, up_thr: float, err_thr: float, platform: dict,
            ceilings: dict | None = None, n_workload: int | None = None,
            n_untimed: int | None = None, failed: pd.DataFrame | None = None) -> dict:
    """metrics.json (docs/FORMATS.md): everything the original computes, per GEMM category,
    and with ``ceilings`` (platforms.ceilings) a ``roofline`` section. ``n_workload``: the GEMMs
    the campaign set out to compare (summary.csv's); those without a row in ``raw`` failed
    (``counts.n_failed``) and count as not kept, their time unchanged. ``n_untimed``: the failed
    GEMMs without a timing (:func:`failed_gemms`), whose time no share includes; None: every
    failed one where the shares of ``raw`` add up to 100 % (weights of the compared GEMMs
    only). ``failed``: the timed failed GEMMs (:func:`failed_gemms`), which count in the
    roofline at their reference time, as they ship."""
    valid = raw[raw["valid"]]
    kept = raw[raw["kept"]]
    counts = _counts(raw, valid, kept, n_workload)
    winners = kept["kernel_tuned"]
    out = {
        "platform": platform,
        "config": {"up_thr": up_thr, "error_thr": err_thr,
                   "verify": bool(raw["verified"].any())},
        "counts": counts,
        "uplift_all_attempted": _stats(valid["ratio"]),
        "uplift_kept": _stats(kept["ratio"]),
        "diversity": {
            "n_unique_winning_kernels": int(winners.nunique()),
            "unique_winners_per_gemm": float(winners.nunique() / len(kept)) if len(kept) else None,
            "pct_kernel_changed_in_attempted": 100.0 * float(raw["kernel_changed"].mean())
            if len(raw) else None,
        },
        "e2e": _e2e(raw, kept, counts["n_failed"], n_untimed),
        "per_dtype_layout": _per_type(valid),
        "per_category": _categories(raw, raw["pct_of_total"].fillna(0.0)
                                    if "pct_of_total" in raw else None),
    }
    if ceilings:
        out["roofline"] = roofline_metrics(raw, ceilings, failed)
    return _finite(out)


def _counts(raw: pd.DataFrame, valid: pd.DataFrame, kept: pd.DataFrame,
            n_workload: int | None) -> dict:
    """metrics.json's ``counts``: attempted, valid, improved, regressed, kept, failed, and the
    improved and regressed GEMMs by the size of their change."""
    improved = valid["ratio"] > 1.0
    regressed = valid["ratio"] < 1.0
    uplift = (valid["ratio"] - 1.0) * 100.0
    counts = {
        "n_attempted": len(raw),
        "n_valid": len(valid),
        "n_improved": int(improved.sum()),
        "n_regressed": int(regressed.sum()),
        "n_neutral": int(len(valid) - improved.sum() - regressed.sum()),
        "n_kept": len(kept),
        "n_failed": max(0, int(n_workload) - len(raw)) if n_workload else 0,
        "improved_cumulative": {f"ge_{p}_pct": int((uplift >= p).sum())
                                for p in (1, 3, 5, 10, 20, 50, 100)},
        "regressed_cumulative": {f"ge_{p}_pct": int((-uplift >= p).sum()) for p in (1, 3, 5, 10)},
        "improved_in_ranges": _in_ranges(uplift[improved], IMPROVED_EDGES_PCT),
        "regressed_in_ranges": _in_ranges(-uplift[regressed], REGRESSED_EDGES_PCT),
    }
    if bool(raw["verified"].any()):
        counts["n_invalid"] = int((~raw["valid"]).sum())
    return counts


def _e2e(raw: pd.DataFrame, kept: pd.DataFrame, n_failed: int, n_untimed: int | None) -> dict:
    """metrics.json's ``e2e``: what the kept kernels save of the workload's GEMM time (none
    without the GEMMs' shares of it)."""
    if "pct_of_total" not in raw:
        return {}
    pct = raw["pct_of_total"].fillna(0.0)
    top = pct.sort_values(ascending=False)
    n_top = max(1, math.ceil(0.1 * len(top)))
    return {
        "e2e_uplift_pct": float(kept["weighted_uplift_contribution_pct"].sum()),
        "coverage_pct": float(kept["pct_of_total"].sum()),
        "e2e_us_saved_per_iter": float(kept["weighted_us_saved"].sum()),
        "top10pct_contribution_share": float(top.iloc[:n_top].sum()),
        # failed GEMMs that no timing covers: the shares leave their time out, and say so
        "n_untimed": min(int(n_untimed), n_failed) if n_untimed is not None else
        n_failed if n_failed and math.isclose(float(pct.sum()), 100.0, abs_tol=1e-6) else 0,
    }


def _per_type(valid: pd.DataFrame) -> dict:
    """metrics.json's ``per_dtype_layout``: the valid GEMMs' uplift by data type and layout."""
    per_type = {}
    for (a_type, ta, tb), group in valid.groupby(["a_type", "transA", "transB"]):
        stats = _stats(group["ratio"])
        entry = {k: stats[k] for k in ("n", "geomean", "median", "max")}
        entry["mean"] = stats["mean"]
        entry["n_kept"] = int(group["kept"].sum())
        per_type[f"{a_type}_{ta}{tb}"] = entry
    return per_type


def _pct(value) -> str:
    return "n/a " if value is None else f"{value:.4f}"


def summary_lines(m: dict) -> list[str]:
    """What the log says at the end: the original's two lines, each saying what it averages."""
    kept = m["uplift_kept"]
    if not kept.get("n"):
        return ["No kernels improve over the base library"]
    lines = [f"Average GEMM uplift of {_pct(kept['mean'])}% for a total of {kept['n']} GEMMs "
             f"(arithmetic mean of the kept GEMMs' uplifts, each GEMM counted once whatever its "
             f"time; geomean {_pct(kept['geomean'])}%)"]
    e2e = m.get("e2e")
    if e2e:
        untimed = e2e.get("n_untimed") or 0
        of = (f"the compared GEMMs' total GEMM time saved ({untimed} failed GEMM(s) have no "
              "timing)") if untimed else "the workload's total GEMM time saved"
        lines.append(f"Weighted GEMM uplift of {_pct(e2e['e2e_uplift_pct'])}% (share of {of}: "
                     f"each kept GEMM's saving weighted by its share of GEMM time; the kept "
                     f"GEMMs are {_share(e2e.get('coverage_pct'))} of that time)")
    return lines


def _share(value) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def uncompared_problems(summary: pd.DataFrame, libs) -> list[GemmProblem]:
    """The GEMMs of ``summary`` that no library of ``libs`` (a LibraryCollection) holds: their
    search or tuning job failed, so no comparison times them."""
    held = {p for _, lib in libs.items() for p in problems_of(lib)}
    wanted = dict.fromkeys(GemmProblem.from_row(r) for r in summary.to_dict("records"))
    return [p for p in wanted if p not in held]
