"""Reference vs tuned: ratio, numerical validity, the keep rule, and metrics.json.

A tuned kernel replaces the reference only if it is a different kernel, ``us_reference / us_tuned
>= up_thr`` and its verified error ``< err_thr``; a failed or missing check counts as an error of
1e6 (when verification is on).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .gemm import BY_NAME, GEMM_FIELDS
from .summary import PCT, normalized

FAILED_ERROR = 1e6
UNIQUE = ("us", "gflops", "gbps", "solution_index", "solution_name", "kernel", "device")
KEYS = list(GEMM_FIELDS)


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
    raw["ratio"] = raw["us_reference"] / raw["us_tuned"]
    raw["verified"] = verified
    raw["valid"] = raw["error_tuned"] < err_thr
    raw["kernel_changed"] = raw["kernel_reference"] != raw["kernel_tuned"]
    raw["kept"] = raw["kernel_changed"] & (raw["ratio"] >= up_thr) & raw["valid"]
    raw["winner"] = np.where(raw["kept"], "tuned", "reference")
    raw["uplift_pct"] = (raw["ratio"] - 1.0) * 100.0
    raw["us_saved"] = raw["us_reference"] - raw["us_tuned"]
    raw["arith_intensity"] = [arithmetic_intensity(r) for r in raw.to_dict("records")]
    if weights is not None:
        raw = _add_weights(raw, weights)
    return raw


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


def metrics(raw: pd.DataFrame, up_thr: float, err_thr: float, platform: dict) -> dict:
    valid = raw[raw["valid"]]
    kept = raw[raw["kept"]]
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
        "improved_cumulative": {f"ge_{p}_pct": int((uplift >= p).sum())
                                for p in (1, 3, 5, 10, 20, 50, 100)},
        "regressed_cumulative": {f"ge_{p}_pct": int((-uplift >= p).sum()) for p in (1, 3, 5, 10)},
    }
    if bool(raw["verified"].any()):
        counts["n_invalid"] = int((~raw["valid"]).sum())
    e2e = {}
    if "pct_of_total" in raw:
        pct = raw["pct_of_total"].fillna(0.0)
        top = pct.sort_values(ascending=False)
        n_top = max(1, math.ceil(0.1 * len(top)))
        e2e = {
            "e2e_uplift_pct": float(kept["weighted_uplift_contribution_pct"].sum()),
            "coverage_pct": float(kept["pct_of_total"].sum()),
            "e2e_us_saved_per_iter": float(kept["weighted_us_saved"].sum()),
            "top10pct_contribution_share": float(top.iloc[:n_top].sum()),
        }
    per_type = {}
    for (a_type, ta, tb), group in valid.groupby(["a_type", "transA", "transB"]):
        stats = _stats(group["ratio"])
        per_type[f"{a_type}_{ta}{tb}"] = {k: stats[k] for k in ("n", "geomean", "median", "max")}
    winners = kept["kernel_tuned"]
    return _finite({
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
        "e2e": e2e,
        "per_dtype_layout": per_type,
    })


def _pct(value) -> str:
    return "n/a " if value is None else f"{value:.4f}"


def summary_lines(m: dict) -> list[str]:
    """What the log says at the end, as the original prints it."""
    kept = m["uplift_kept"]
    if not kept.get("n"):
        return ["No kernels improve over the base library"]
    lines = [f"Average GEMM uplift of {_pct(kept['mean'])}% (geomean {_pct(kept['geomean'])}%) "
             f"for a total of {kept['n']} kept GEMMs"]
    if m.get("e2e"):
        lines.append(f"Weighted GEMM uplift of {_pct(m['e2e']['e2e_uplift_pct'])}% "
                     f"(GEMM time saved across the workload)")
    return lines
