"""Which GEMMs cost the most: per-GEMM share of workload time and the keep_thr filter.

``summary.csv`` has one row per GEMM (the identity columns of hipblaslt-bench output, lowercase
m/n/k). With baseline timings it adds ``call_count``, ``total (us) = call_count * us`` and
``% of total = 100 * total / sum(total)``, sorted by total time, and keeps the GEMMs whose share
is >= keep_thr (a percent: 0.1 keeps GEMMs worth at least 0.1 % of GEMM time). keep_thr == 0
means no benchmarking: the summary is identity + call_count. ``gemms.csv`` is the unique identity
rows of the kept summary.

Unlike the original, timings are joined to workload rows by GEMM identity, not by row position,
and workload rows that differ only in leading dimensions or epilogue flags are summed into one
GEMM (they share one kernel choice).
"""

from __future__ import annotations

import logging

import pandas as pd

from ..errors import GekoError
from ..gemm import GEMM_FIELDS, normalize_compute_type
from ..log_setup import LOGGER


class SummaryError(GekoError, ValueError):
    """Bad keep threshold or baseline timings for the summary."""

log = logging.getLogger(LOGGER)

TOTAL = "total (us)"
PCT = "% of total"


def normalized(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose compute_type carries the c_ prefix (hipblaslt-bench prints f32_r, logs
    c_f32_r), so tables from different sources join on GEMM identity."""
    return frame.assign(compute_type=frame["compute_type"].map(normalize_compute_type))


def gemm_identity(workload: pd.DataFrame) -> pd.DataFrame:
    """Workload rows -> GEMM identity columns + call_count, one row per GEMM, first-seen order."""
    frame = normalized(workload.rename(columns={"M": "m", "N": "n", "K": "k"}))
    for col in ("scaleA", "scaleB"):
        if col not in frame:
            frame[col] = 0
    grouped = frame.groupby(list(GEMM_FIELDS), sort=False, as_index=False)["call_count"].sum()
    return grouped[list(GEMM_FIELDS) + ["call_count"]]


def summarize(workload: pd.DataFrame, baseline: pd.DataFrame | None,
              keep_thr: float, *, refuse_empty: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, gemms) tables; ``baseline`` (one timing per GEMM) is required when keep_thr > 0.
    ``refuse_empty``: a keep_thr that leaves no GEMM raises (naming the largest share) instead of
    returning empty tables, as a campaign needs."""
    if keep_thr < 0:
        raise SummaryError(f"keep_thr must be >= 0 (a percent), got {keep_thr}")
    identity = gemm_identity(workload)
    if keep_thr == 0 and baseline is None:
        return identity, identity[list(GEMM_FIELDS)].copy()
    if baseline is None:
        raise SummaryError("keep_thr > 0 needs baseline timings")
    timings = normalized(baseline).drop_duplicates(subset=list(GEMM_FIELDS))
    summary = identity.merge(timings.drop(columns=["call_count"], errors="ignore"),
                             on=list(GEMM_FIELDS), how="left", validate="one_to_one")
    missing = summary["us"].isna()
    if missing.any():
        raise SummaryError(f"baseline has no timing for {int(missing.sum())} GEMM(s), e.g. "
                         f"{summary.loc[missing, list(GEMM_FIELDS)].iloc[0].to_dict()}")
    summary[TOTAL] = summary["call_count"] * summary["us"]
    grand_total = summary[TOTAL].sum()
    summary[PCT] = 100.0 * summary[TOTAL] / grand_total if grand_total > 0 else 0.0
    summary = summary.sort_values(TOTAL, ascending=False, kind="stable").reset_index(drop=True)
    keep = summary[PCT] >= keep_thr
    if refuse_empty and not keep.any():  # say so now, not as an empty table failing downstream
        raise SummaryError(f"keep_thr={keep_thr}% leaves no GEMM: the largest share of GEMM time "
                           f"is {summary[PCT].max():.3g}% ({len(summary)} GEMMs); lower keep_thr")
    log.info("Removed %d out of %d GEMMs after filtering (keep_thr=%s%%)", int((~keep).sum()),
             len(summary), keep_thr)  # the original's line
    summary = summary[keep].reset_index(drop=True)
    columns = list(GEMM_FIELDS) + ["call_count"] + [c for c in summary.columns
                                                   if c not in GEMM_FIELDS and c != "call_count"]
    summary = summary[columns]
    return summary, summary[list(GEMM_FIELDS)].copy()


# --- the baseline's fan-out: one part per device, never a part without a GEMM ----------------

def part_names(n_gemms: int, n_devices: int) -> list[str]:
    """The baseline's parts: one per device, but no more than there are GEMMs (a part without
    a GEMM would be a GPU job benchmarking nothing, which hipblaslt-bench answers with no
    result), so ``part_<i>_of_<n>`` with n = min(GEMMs, devices); none for no GEMM."""
    count = min(max(int(n_gemms), 0), max(int(n_devices), 1))
    return [f"part_{i}_of_{count}" for i in range(count)]


def part_of(name: str) -> tuple[int, int]:
    """``part_<i>_of_<n>`` -> (i, n): part i holds every n-th GEMM starting at GEMM i."""
    _, index, _, count = name.split("_")
    index, count = int(index), int(count)
    if not 0 <= index < count:
        raise SummaryError(f"baseline part {name!r}: index must be in 0..{count - 1}")
    return index, count


def part_positions(name: str, n_gemms: int) -> list[int]:
    """The workload positions of part ``name``'s GEMMs; a part of another deal that would hold
    none (``part_5_of_8`` of a 2-GEMM workload) is refused, never benchmarked empty."""
    index, count = part_of(name)
    positions = list(range(index, n_gemms, count))
    if not positions:
        raise SummaryError(f"baseline part {name} holds no GEMM: the workload has {n_gemms} "
                           f"(parts are {', '.join(part_names(n_gemms, count)) or 'none'})")
    return positions


def part_problems(problems: list, name: str) -> list:
    """The GEMMs of part ``name`` of ``problems`` (the workload's, in order)."""
    return [problems[i] for i in part_positions(name, len(problems))]


def merge_parts(parts: list[pd.DataFrame], n_gemms: int) -> pd.DataFrame:
    """The rows of the parts (part i: GEMMs i, i+n, i+2n, ...) back in workload order."""
    count = len(parts)
    if count > n_gemms:
        raise SummaryError(f"{count} baseline parts for {n_gemms} GEMM(s): a part would hold no "
                           f"GEMM (parts are {', '.join(part_names(n_gemms, count))})")
    for index, part in enumerate(parts):
        expected = len(range(index, n_gemms, count))
        if len(part) != expected:
            raise SummaryError(f"baseline part {index} of {count} has {len(part)} rows, "
                             f"expected {expected}")
    placed = [part.assign(_position=list(range(index, n_gemms, count)))
              for index, part in enumerate(parts)]
    merged = pd.concat(placed, ignore_index=True).sort_values("_position", kind="stable")
    return merged.drop(columns="_position").reset_index(drop=True)
