"""What a performance engineer looks at after a campaign: figures (PNG) and tables (HTML) for the
Snakemake HTML report (`snakemake --report report.html`).

Pure functions: tables and dicts in, one file out (written atomically), and a dict back saying what
was drawn (so tests and callers can check the numbers without reading pixels). Figures are drawn
with matplotlib's object API on the Agg canvas: no display, no pyplot global state.

Every figure made from predictions (the sim platform: ``measured`` false) says "model predictions"
in its title and carries the platform note as a footer and in the PNG's ``Description`` text.
"""

from __future__ import annotations

import html
import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from . import files
from .gemm import GemmProblem

MODEL_PREDICTIONS = "model predictions"
DEFAULT_NOTE = "times are model predictions, not measurements"

KEPT, REJECTED, INVALID = "kept", "rejected", "invalid"
COLOURS = {KEPT: "#2e7d32", REJECTED: "#9e9e9e", INVALID: "#c62828"}
REFERENCE_COLOUR, TUNED_COLOUR = "#1f5fa8", "#e07b00"
CEILING_COLOURS = ("#6a1b9a", "#00838f", "#8d6e63", "#ad1457", "#283593")

# names of the ceilings' input classes (platforms.peak_class)
CLASS_NAMES = {"4": "4-bit (fp4)", "8": "8-bit (fp8/bf8)", "16": "16-bit (bf16/f16)",
               "tf32": "tf32", "32": "f32", "64": "f64", "i8": "int8"}

MAX_PARETO_BARS = 40  # the rest of the workload is one "others" bar
MAX_TICK_LABELS = 80  # beyond this many bars, labels are unreadable and left out

# one row of the GA's per-generation table: gen | n_evals | best | mean | best score per size
_GA_ROW = re.compile(r"(?:^|\s)(?P<job>[^\s|]+) \|\s*(?P<gen>\d+) \|\s*(?P<evals>\d+) \|"
                     r"\s*(?P<best>\S+) \|\s*(?P<mean>\S+) \|(?P<sizes>[^|]*)$")


# --- shared helpers ------------------------------------------------------------------------------


def gemm_label(row) -> str:
    """``BBS_TN 4096x16x4096`` (type, M x N x K; `` b<batch>`` when batched)."""
    problem = GemmProblem.from_row(row)
    label = f"{problem.type.name} {problem.m}x{problem.n}x{problem.k}"
    return label + (f" b{problem.batch}" if problem.batch > 1 else "")


def is_measured(platform: dict | None = None, frame: pd.DataFrame | None = None) -> bool:
    """Whether the numbers are measurements: from metrics.json's ``platform`` when given, else
    from a results table's ``measured`` column; unknown counts as not measured."""
    if platform is not None and "measured" in platform:
        return bool(platform["measured"])
    if frame is not None and "measured" in frame.columns and len(frame):
        return bool(frame["measured"].map(_truthy).all())
    return False


def prediction_note(platform: dict | None = None, frame: pd.DataFrame | None = None) -> str:
    """The footer of a figure: "" for measurements, else a line that says "model predictions"."""
    if is_measured(platform, frame):
        return ""
    note = (platform or {}).get("note") or DEFAULT_NOTE
    return note if MODEL_PREDICTIONS in note else f"{MODEL_PREDICTIONS}: {note}"


def _truthy(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value) if value is not None and not pd.isna(value) else False


def _title(text: str, note: str) -> str:
    return f"{text} [{MODEL_PREDICTIONS}]" if note else text


FOOTER_INCHES = 0.3


def _figure(width: float, height: float, note: str = ""):
    """A figure with constrained layout; with a note, a strip at the bottom is kept free for it."""
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    fig = Figure(figsize=(width, height), dpi=100)
    bottom = FOOTER_INCHES / height if note else 0.0
    fig.set_layout_engine(ConstrainedLayoutEngine(rect=(0.0, bottom, 1.0, 1.0 - bottom)))
    return fig


def _save(fig, path, title: str, note: str) -> Path:
    """Write the figure as PNG under a hidden temporary name, then rename."""
    if note:
        fig.text(0.995, 0.08 / fig.get_figheight(), note, ha="right", va="bottom", fontsize=8,
                 color="#b00020", style="italic")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Title": title, "Description": note or "measured",
                                                "Software": "geko"})
    return files.write_bytes(path, buffer.getvalue())


def _empty(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=12,
            color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])


def _tick_labels(ax, labels: list[str], axis_label: str) -> None:
    positions = np.arange(len(labels))
    if len(labels) <= MAX_TICK_LABELS:
        ax.set_xticks(positions, labels, rotation=60, ha="right", rotation_mode="anchor",
                      fontsize=8 if len(labels) <= 40 else 6)
    else:
        ax.set_xticks([])
    ax.set_xlabel(axis_label)
    ax.set_xlim(-0.7, len(labels) - 0.3)


# --- contribution Pareto -------------------------------------------------------------------------


def pareto(summary_df: pd.DataFrame, path, *, platform: dict | None = None,
           raw_df: pd.DataFrame | None = None, max_bars: int = MAX_PARETO_BARS) -> dict:
    """Where the workload's GEMM time goes: one bar per GEMM (% of total, largest first) and the
    cumulative share. GEMMs past ``max_bars`` are one "others" bar. Without baseline timings
    (keep_thr = 0: no ``% of total`` in summary.csv) the time is call_count x the reference time
    of ``raw_df`` (raw_results) when given, else the shares are of calls."""
    note = prediction_note(platform, summary_df)
    frame = summary_df.copy()
    source = "baseline"
    if "% of total" in frame.columns:
        share = pd.to_numeric(frame["% of total"], errors="coerce").fillna(0.0)
    elif raw_df is not None and {"us_reference", "call_count"} <= set(raw_df.columns) \
            and len(raw_df):
        frame, source = raw_df.copy(), "reference"
        total = pd.to_numeric(frame["call_count"], errors="coerce").fillna(0.0) * \
            pd.to_numeric(frame["us_reference"], errors="coerce").fillna(0.0)
        share = 100.0 * total / total.sum() if total.sum() > 0 else total * 0.0
    else:
        source = "calls"
        calls = pd.to_numeric(frame.get("call_count", pd.Series(1, index=frame.index)),
                              errors="coerce").fillna(0.0)
        share = 100.0 * calls / calls.sum() if calls.sum() > 0 else calls * 0.0
    by_time = source != "calls"
    frame = frame.assign(_share=share.to_numpy()).sort_values("_share", ascending=False,
                                                              kind="stable")
    labels = [gemm_label(r) for r in frame.to_dict("records")]
    shares = [float(s) for s in frame["_share"]]
    if len(labels) > max_bars:
        rest = len(labels) - (max_bars - 1)
        labels = labels[:max_bars - 1] + [f"others ({rest} GEMMs)"]
        shares = shares[:max_bars - 1] + [sum(shares[max_bars - 1:])]
    cumulative = list(np.cumsum(shares)) if shares else []

    what = {"baseline": "GEMM time", "reference": "GEMM time (reference kernels' timings)",
            "calls": "GEMM calls (no timings)"}[source]
    title = _title(f"Workload contribution Pareto: share of {what}, {len(frame)} GEMMs", note)
    fig = _figure(max(8.0, 0.3 * len(labels) + 3.0), 5.5, note)
    ax = fig.add_subplot()
    if not labels:
        _empty(ax, "no GEMMs in summary.csv")
    else:
        x = np.arange(len(labels))
        colours = ["#4c72b0"] * len(labels)
        if labels[-1].startswith("others ("):
            colours[-1] = "#9e9e9e"
        ax.bar(x, shares, color=colours)
        ax.set_ylabel(f"% of total {'GEMM time' if by_time else 'calls'} per GEMM (bars)")
        _tick_labels(ax, labels, "GEMM (type M x N x K)")
        cum_ax = ax.twinx()
        cum_ax.plot(x, cumulative, color="#dd8452", marker="o", markersize=3)
        cum_ax.axhline(80.0, color="#dd8452", linestyle=":", linewidth=1)
        cum_ax.set_ylim(0, 105)
        cum_ax.set_ylabel("cumulative % (line; dotted: 80 %)")
        ax.grid(axis="y", alpha=0.3)
    ax.set_title(title, fontsize=11)
    _save(fig, path, title, note)
    return {"labels": labels, "pct": shares, "cumulative": [float(c) for c in cumulative],
            "by_time": by_time, "source": source, "title": title, "note": note}


# --- per-GEMM uplift -----------------------------------------------------------------------------


def gemm_status(raw_df: pd.DataFrame) -> pd.Series:
    """kept / rejected / invalid per row of raw_results (invalid: failed the numerical check)."""
    def flag(column, default):
        if column in raw_df:
            return raw_df[column].map(_truthy).to_numpy(dtype=bool)
        return np.full(len(raw_df), default)

    status = np.where(flag("kept", False), KEPT,
                      np.where(~flag("valid", True), INVALID, REJECTED))
    return pd.Series(status, index=raw_df.index)


def uplift_bars(raw_df: pd.DataFrame, up_thr: float, path, *,
                platform: dict | None = None) -> dict:
    """Uplift of the tuned kernel per GEMM (%), largest first: kept, rejected (slower than up_thr or
    the same kernel) and invalid (failed verification, hatched and marked x) in their colours, with
    the up_thr line."""
    note = prediction_note(platform, raw_df)
    frame = raw_df.assign(_status=gemm_status(raw_df),
                          _uplift=pd.to_numeric(raw_df.get("uplift_pct"), errors="coerce"))
    frame = frame.sort_values("_uplift", ascending=False, kind="stable", na_position="last")
    labels = [gemm_label(r) for r in frame.to_dict("records")]
    uplift = [float(u) for u in frame["_uplift"]]
    status = list(frame["_status"])
    same = [not _truthy(v) for v in frame["kernel_changed"]] if "kernel_changed" in frame \
        else [False] * len(labels)
    threshold = (float(up_thr) - 1.0) * 100.0
    counts = {s: status.count(s) for s in (KEPT, REJECTED, INVALID)}

    title = _title(f"Uplift per GEMM: {counts[KEPT]} of {len(labels)} kept "
                   f"(up_thr {up_thr:g} = {threshold:+.1f} %)", note)
    fig = _figure(max(8.0, 0.3 * len(labels) + 3.0), 5.5, note)
    ax = fig.add_subplot()
    if not labels:
        _empty(ax, "no GEMMs in raw_results.csv")
    else:
        _draw_uplift_bars(ax, labels, uplift, status, same, up_thr)
    ax.set_title(title, fontsize=11)
    _save(fig, path, title, note)
    return {"labels": labels, "uplift_pct": uplift, "status": status, "same_kernel": same,
            "threshold_pct": threshold, "counts": counts, "title": title, "note": note}


def _draw_uplift_bars(ax, labels: list, uplift: list, status: list, same: list,
                      up_thr: float) -> None:
    """uplift_bars' bars (invalid ones hatched and marked x, n/a where no uplift), the
    same-kernel markers, the up_thr line and the legend."""
    from matplotlib.patches import Patch

    threshold = (float(up_thr) - 1.0) * 100.0
    counts = {s: status.count(s) for s in (KEPT, REJECTED, INVALID)}
    x = np.arange(len(labels))
    heights = [0.0 if math.isnan(u) else u for u in uplift]
    bars = ax.bar(x, heights, color=[COLOURS[s] for s in status], edgecolor="#333333",
                  linewidth=0.4)
    span = max([abs(h) for h in heights] + [abs(threshold), 1.0])
    for bar, s, u in zip(bars, status, uplift):
        if s == INVALID:
            bar.set_hatch("///")
            ax.plot(bar.get_x() + bar.get_width() / 2, max(bar.get_height(), 0) + 0.03 * span,
                    marker="x", color=COLOURS[INVALID], markersize=7, mew=2)
        if math.isnan(u):
            ax.text(bar.get_x() + bar.get_width() / 2, 0.02 * span, "n/a", ha="center",
                    va="bottom", fontsize=7, rotation=90)
    unchanged = [i for i, flag in enumerate(same) if flag]
    if unchanged:
        ax.plot(unchanged, [0.0] * len(unchanged), linestyle="none", marker="o",
                markersize=5, markerfacecolor="white", markeredgecolor="#616161")
    ax.axhline(threshold, color="#000000", linestyle="--", linewidth=1.2)
    ax.axhline(0.0, color="#333333", linewidth=0.6)
    ax.set_ylim(min(heights + [0.0]) - 0.06 * span,
                max(heights + [threshold, 0.0]) + 0.1 * span)
    _tick_labels(ax, labels, "GEMM (type M x N x K), by uplift")
    ax.set_ylabel("uplift of tuned over reference (%)")
    ax.grid(axis="y", alpha=0.3)
    handles = [Patch(facecolor=COLOURS[KEPT], label=f"kept ({counts[KEPT]})"),
               Patch(facecolor=COLOURS[REJECTED], label=f"rejected ({counts[REJECTED]})"),
               Patch(facecolor=COLOURS[INVALID], hatch="///",
                     label=f"invalid: failed verification ({counts[INVALID]})"),
               _line_handle(f"up_thr {up_thr:g} ({threshold:+.1f} %)")]
    if unchanged:
        handles.append(_line_handle(f"same kernel as reference ({len(unchanged)})",
                                    linestyle="none", marker="o", markerfacecolor="white",
                                    markeredgecolor="#616161", color="#616161"))
    ax.legend(handles=handles, loc="upper right")


def _line_handle(label: str, **style):
    from matplotlib.lines import Line2D

    style = {"color": "#000000", "linestyle": "--", "linewidth": 1.2} | style
    return Line2D([], [], label=label, **style)


# --- roofline ------------------------------------------------------------------------------------


def roofline_points(raw_df: pd.DataFrame) -> pd.DataFrame:
    """Per GEMM: label, input class, arithmetic intensity (FLOP/byte of the minimum traffic) and
    achieved TFLOP/s of the reference and the tuned kernel."""
    from . import platforms

    def tflops(flops, us):
        try:
            us = float(us)
        except (TypeError, ValueError):
            return float("nan")
        return flops / us / 1e6 if us > 0 else float("nan")

    rows = []
    for row, status in zip(raw_df.to_dict("records"), gemm_status(raw_df)):
        problem = GemmProblem.from_row(row)
        rows.append({"label": gemm_label(row), "peak_class": platforms.peak_class(problem.type),
                     "ai": problem.flops / problem.min_bytes,
                     "tflops_reference": tflops(problem.flops, row.get("us_reference")),
                     "tflops_tuned": tflops(problem.flops, row.get("us_tuned")),
                     "status": status})
    return pd.DataFrame(rows, columns=["label", "peak_class", "ai", "tflops_reference",
                                       "tflops_tuned", "status"])


def roofline(raw_df: pd.DataFrame, ceilings: dict | None, path, *,
             platform: dict | None = None) -> dict:
    """Achieved TFLOP/s of reference and tuned kernels against arithmetic intensity (log-log),
    with the compute ceiling of every input class present and the memory-bandwidth roof.
    ``ceilings`` is :func:`geko_lib.platforms.ceilings` (None: the platform knows none). The
    title says whether the ceilings are modelled or measured (a ``measured: true`` entry)."""
    note = prediction_note(platform, raw_df)
    points = roofline_points(raw_df)
    classes = list(dict.fromkeys(points["peak_class"]))
    compute, bandwidth, modelled, source = {}, None, True, ""
    if ceilings:
        peaks = ceilings.get("peak_tflops") or {}
        compute = {c: float(peaks[c]) for c in classes if c in peaks}
        bandwidth = ceilings.get("hbm_tbps")
        bandwidth = float(bandwidth) if bandwidth else None
        modelled = not ceilings.get("measured", False)
        source = ceilings.get("source", "")
    arch = (ceilings or {}).get("arch") or (platform or {}).get("arch") or ""
    if ceilings is None:
        kind = "no ceilings known for this platform"
    else:
        kind = f"{'modelled' if modelled else 'measured'} ceilings"
        kind += f": {source}" if source else ""
    title = _title(f"Roofline{', ' + arch if arch else ''}, {kind}", note)

    fig = _figure(10.0, 7.0, note)
    ax = fig.add_subplot()
    if points.empty:
        _empty(ax, "no GEMMs in raw_results.csv")
    else:
        _draw_roofline(ax, points.replace([np.inf, -np.inf], np.nan), compute, bandwidth)
    ax.set_title(title, fontsize=10)
    _save(fig, path, title, note)
    return {"compute_tflops": compute, "bandwidth_tbps": bandwidth, "modelled": modelled,
            "source": source, "classes": classes, "n_points": int(len(points)), "title": title,
            "note": note}


def _draw_roofline(ax, finite: pd.DataFrame, compute: dict, bandwidth: float | None) -> None:
    """roofline's roofs (the memory roof up to the highest compute ceiling, each class's
    compute ceiling), each GEMM's reference and tuned points joined, on log-log axes."""
    ai = finite["ai"].dropna()
    ridges = [p / bandwidth for p in compute.values()] if bandwidth else []
    lo = min([float(ai.min()) / 2.0] + [r / 100.0 for r in ridges])
    hi = max([float(ai.max()) * 2.0] + [r * 2.0 for r in ridges])
    if bandwidth:  # the memory roof rises until the highest compute ceiling
        top = max(compute.values()) if compute else bandwidth * hi
        ax.plot([lo, top / bandwidth], [bandwidth * lo, top], color="#37474f", linewidth=1.8,
                label=f"memory bandwidth {bandwidth:g} TB/s")
    for n, (cls, peak) in enumerate(sorted(compute.items(), key=lambda kv: -kv[1])):
        start = max(peak / bandwidth, lo) if bandwidth else lo
        ax.plot([start, hi], [peak, peak], linestyle="--", linewidth=1.6,
                color=CEILING_COLOURS[n % len(CEILING_COLOURS)],
                label=f"{CLASS_NAMES.get(cls, cls)} compute peak {peak:g} TFLOP/s")
    for row in finite.itertuples():
        if not (math.isnan(row.tflops_reference) or math.isnan(row.tflops_tuned)):
            ax.plot([row.ai, row.ai], [row.tflops_reference, row.tflops_tuned],
                    color="#bdbdbd", linewidth=0.8, zorder=1)
    ax.scatter(finite["ai"], finite["tflops_reference"], s=40, facecolors="none",
               edgecolors=REFERENCE_COLOUR, linewidths=1.3, label="reference kernel", zorder=3)
    for status, colour in ((KEPT, COLOURS[KEPT]), (REJECTED, TUNED_COLOUR),
                           (INVALID, COLOURS[INVALID])):
        part = finite[finite["status"] == status]
        if len(part):
            ax.scatter(part["ai"], part["tflops_tuned"], s=24, color=colour, marker="D",
                       label=f"tuned kernel, {status} ({len(part)})", zorder=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    achieved = pd.concat([finite["tflops_reference"], finite["tflops_tuned"]]).dropna()
    ymin = min([float(achieved.min()) / 3.0 if len(achieved) else 1.0]
               + ([bandwidth * lo] if bandwidth else []))
    ymax = max([float(achieved.max()) * 3.0 if len(achieved) else 10.0]
               + [2.0 * p for p in compute.values()])
    ax.set_ylim(ymin, ymax)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of A, B read and D written once)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.grid(which="both", alpha=0.25)
    ax.legend(loc="upper left", fontsize=8)


# --- GA convergence ------------------------------------------------------------------------------


def parse_ga_log(text: str) -> pd.DataFrame:
    """The per-generation table of a tuning job's log: columns ``generation, n_evals,
    best_fitness, mean_fitness, best_scores`` (a list, one score per size). A generation logged
    twice (a resumed job) keeps its last line."""
    rows = {}
    for line in text.splitlines():
        match = _GA_ROW.search(line.rstrip())
        if not match:
            continue
        try:
            scores = [float(s) for s in match["sizes"].split()]
            rows[int(match["gen"])] = {
                "generation": int(match["gen"]), "n_evals": int(match["evals"]),
                "best_fitness": float(match["best"]), "mean_fitness": float(match["mean"]),
                "best_scores": scores}
        except ValueError:
            continue
    frame = pd.DataFrame([rows[g] for g in sorted(rows)],
                         columns=["generation", "n_evals", "best_fitness", "mean_fitness",
                                  "best_scores"])
    return frame


def ga_convergence(logs: dict[str, str], path, *, platform: dict | None = None) -> dict:
    """Convergence of every tuning job from its log: best and mean fitness per generation (left),
    and the best score of every size (GFLOP/s, as % of the job's final best: right); one colour per
    job, one line per size."""
    note = prediction_note(platform)
    tables = {name: parse_ga_log(text) for name, text in sorted(logs.items())}
    tables = {name: t for name, t in tables.items() if not t.empty}
    title = _title(f"GA convergence: {len(tables)} tuning job{'s' if len(tables) != 1 else ''}",
                   note)
    fig = _figure(13.0, 5.5, note)
    fitness_ax, size_ax = fig.subplots(1, 2)
    info = {}
    if not tables:
        _empty(fitness_ax, "no generation table in the tuning logs")
        _empty(size_ax, "")
    palette = [f"C{i}" for i in range(10)]
    show_legend = len(tables) <= 20
    for n, (name, table) in enumerate(tables.items()):
        colour = palette[n % len(palette)]
        gens = table["generation"].to_numpy()
        fitness_ax.plot(gens, table["best_fitness"], color=colour, linewidth=1.6,
                        label=f"{name} best" if show_legend else None)
        fitness_ax.plot(gens, table["mean_fitness"], color=colour, linewidth=1.2, linestyle="--",
                        label=f"{name} mean" if show_legend else None)
        width = max(len(s) for s in table["best_scores"])
        scores = np.full((len(table), width), np.nan)
        for i, row in enumerate(table["best_scores"]):
            scores[i, :len(row)] = row
        final = scores[-1]
        styles = ["-", "--", ":", "-."]
        for size in range(width):
            if not np.isfinite(final[size]) or final[size] <= 0:
                continue
            label = None
            if show_legend and size == 0:
                finals = ", ".join(f"{v / 1e3:.1f}" for v in final if np.isfinite(v))
                label = f"{name}: {width} size{'s' if width != 1 else ''}, final {finals} TFLOP/s"
            size_ax.plot(gens, 100.0 * scores[:, size] / final[size], color=colour,
                         linestyle=styles[size % len(styles)], linewidth=1.3, label=label)
        info[name] = {"generations": int(len(table)), "n_evals": int(table["n_evals"].iloc[-1]),
                      "final_best_scores": [float(v) for v in final]}
    if tables:
        fitness_ax.set_xlabel("generation")
        fitness_ax.set_ylabel("fitness (score / best so far; solid best, dashed mean)")
        fitness_ax.set_title("best and mean fitness", fontsize=10)
        fitness_ax.grid(alpha=0.3)
        size_ax.set_xlabel("generation")
        size_ax.set_ylabel("best score per size, % of the job's final best")
        size_ax.set_title("best kernel per size (GFLOP/s score)", fontsize=10)
        size_ax.grid(alpha=0.3)
        if show_legend:
            fitness_ax.legend(fontsize=7, loc="lower right", ncol=2 if len(tables) > 6 else 1)
            size_ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=11)
    _save(fig, path, title, note)
    return {"jobs": info, "title": title, "note": note}


# --- tables --------------------------------------------------------------------------------------

TABLE_COLUMNS = {  # raw_results column -> report heading
    "call_count": "calls", "pct_of_total": "% of total", "us_reference": "reference us",
    "us_tuned": "tuned us", "ratio": "ratio", "uplift_pct": "uplift %", "error_tuned": "error",
    "weighted_uplift_contribution_pct": "e2e contribution %",
    "kernel_reference": "reference kernel", "kernel_tuned": "tuned kernel", "lib": "library",
}


def keep_decision(raw_df: pd.DataFrame, up_thr: float | None = None) -> pd.Series:
    """Why each GEMM was kept or not: kept, invalid (failed verification), same kernel, below
    up_thr."""
    status = gemm_status(raw_df)
    same = ~raw_df["kernel_changed"].map(_truthy) if "kernel_changed" in raw_df \
        else pd.Series(False, index=raw_df.index)
    below = f"below up_thr {up_thr:g}" if up_thr is not None else "below up_thr"
    return pd.Series(np.where(status != REJECTED, status,
                              np.where(same, "same kernel", below)), index=raw_df.index)


def results_table(raw_df: pd.DataFrame, up_thr: float | None = None) -> pd.DataFrame:
    """raw_results for reading: one row per GEMM (label and keep decision first), the columns
    that decide the keep rule, largest share of the workload first."""
    frame = raw_df.copy()
    order = "pct_of_total" if "pct_of_total" in frame else "uplift_pct"
    if order in frame:
        frame = frame.sort_values(order, ascending=False, kind="stable")
    table = pd.DataFrame({"GEMM": [gemm_label(r) for r in frame.to_dict("records")]},
                         index=frame.index)
    table["decision"] = keep_decision(frame, up_thr)
    for column, heading in TABLE_COLUMNS.items():
        if column in frame:
            table[heading] = frame[column]
    return table.reset_index(drop=True)


# each column's number format in the HTML table
HTML_FORMATS = {"% of total": "{:.2f}", "reference us": "{:.3f}", "tuned us": "{:.3f}",
                "ratio": "{:.4f}", "uplift %": "{:+.2f}", "error": "{:.2e}",
                "e2e contribution %": "{:.3f}"}


def _table_rows(table: pd.DataFrame) -> list[str]:
    """The results table's rows as HTML, each classed by its decision (kept, invalid or
    rejected), numbers in HTML_FORMATS, missing values empty."""
    body = []
    for row in table.to_dict("records"):
        cells = []
        for column in table.columns:
            value = row[column]
            if column in HTML_FORMATS and isinstance(value, (int, float)) and not pd.isna(value):
                text = HTML_FORMATS[column].format(value)
            else:
                text = "" if value is None or (isinstance(value, float) and pd.isna(value)) \
                    else str(value)
            cells.append(f"<td>{html.escape(text)}</td>")
        kind = row["decision"] if row["decision"] in (KEPT, INVALID) else REJECTED
        body.append(f'<tr class="{kind}">{"".join(cells)}</tr>')
    return body


def _headline_facts(metrics: dict, platform: dict | None, threshold) -> list[str]:
    """The page's headline: platform, GEMMs kept (and invalid), up_thr, the time saved and
    covered, from metrics.json."""
    facts = []
    counts, e2e = metrics.get("counts", {}), metrics.get("e2e", {})
    if platform:
        facts.append(f"platform {platform.get('name')} ({platform.get('arch')})")
    if counts:
        facts.append(f"{counts.get('n_kept')} of {counts.get('n_attempted')} GEMMs kept")
        if counts.get("n_invalid") is not None:
            facts.append(f"{counts.get('n_invalid')} invalid")
    if threshold is not None:
        facts.append(f"up_thr {threshold:g}")
    for key, text in (("e2e_uplift_pct", "end-to-end GEMM time saved"),
                      ("coverage_pct", "coverage of GEMM time")):
        if e2e.get(key) is not None:
            facts.append(f"{text} {e2e[key]:.2f} %")
    return facts


def results_table_html(raw_df: pd.DataFrame, *, metrics: dict | None = None,
                       up_thr: float | None = None) -> str:
    """A self-contained HTML page: the campaign's headline numbers (from metrics.json) and the
    results table, kept rows green, invalid rows red."""
    metrics = metrics or {}
    platform = metrics.get("platform")
    note = prediction_note(platform, raw_df)
    config = metrics.get("config", {})
    threshold = up_thr if up_thr is not None else config.get("up_thr")
    table = results_table(raw_df, threshold)
    body = _table_rows(table)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    facts = _headline_facts(metrics, platform, threshold)
    warning = f'<p class="note">{html.escape(note)}</p>' if note else ""
    title = "geko results" + (f" ({MODEL_PREDICTIONS})" if note else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; font-size: 13px; margin: 12px; }}
p.note {{ color: #b00020; font-style: italic; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #cccccc; padding: 2px 6px; text-align: right; white-space: nowrap; }}
th {{ background: #eeeeee; position: sticky; top: 0; text-align: center; }}
td:nth-child(1), td:nth-child(2), td:nth-last-child(-n+3) {{ text-align: left; }}
tr.kept {{ background: #e8f5e9; }}
tr.invalid {{ background: #ffebee; }}
</style></head>
<body>
<h2>{html.escape(title)}</h2>
{warning}
<p>{html.escape("; ".join(facts))}</p>
<p>{len(table)} GEMMs, largest share of the workload first. Green: kept (a different kernel,
ratio &ge; up_thr, verified); red: failed verification; white: rejected.</p>
<table>
<thead><tr>{head}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody>
</table>
</body></html>
"""
