"""The best uplift a campaign's outputs show so far (``geko status``): ``results/metrics.json``
when the analysis is done, else an estimate from partial data: reference vs tuned benchmarks of
the libraries measured so far; dense-search winners vs the baseline; tuned library logic or GA
checkpoints vs the baseline."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from . import layout as L
from ..gemm import GEMM_FIELDS, GemmProblem
from ..bench_formats.summary import PCT, normalized
from . import analysis

KEYS = list(GEMM_FIELDS)


def _read_csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"transA": str, "transB": str}, keep_default_na=False,
                       na_values=[""])


def job_details(workdir: Path, config: dict) -> dict[str, str]:
    """rule -> one line about its output."""
    out = {}
    wl = workdir / L.WORKLOAD
    if wl.is_file():
        try:
            from .. import platforms, workload
            from ..bench_formats.summary import gemm_identity

            identity = gemm_identity(workload.read(wl, support=platforms.gemm_support(None)))
            out["ingest"] = (f"{len(identity)} GEMMs, {int(identity['call_count'].sum())} calls")
        except Exception as exc:  # a status report never fails on one unreadable file
            out["ingest"] = f"unreadable: {exc}"
    summary = workdir / L.SUMMARY
    if summary.is_file():
        try:
            frame = _read_csv(summary)
            out["summarize"] = f"{len(frame)} GEMMs to tune (keep_thr {config.get('keep_thr')})"
        except Exception as exc:
            out["summarize"] = f"unreadable: {exc}"
    layout = L.Layout(workdir)
    if (workdir / L.SEARCH_CHUNKS).is_dir():
        out["search_configure"] = f"{len(layout.search_chunks())} chunks"
    if (workdir / L.TUNING_MANIFEST).is_file():
        out["configure"] = f"{len(layout.tuning_configs())} tuning configs"
    winners = workdir / L.WINNERS
    if winners.is_file():
        try:
            out["winners"] = f"{len(_read_csv(winners))} GEMMs"
        except Exception as exc:
            out["winners"] = f"unreadable: {exc}"
        failed = layout.failed_jobs("search")
        if failed:
            out["winners"] += f"; {len(failed)} failed and skipped ({L.SEARCH_FAILED})"
    libs = L.Layout(workdir).lib_stems()
    if libs:
        out["libs"] = f"{len(libs)} libraries"
    final = workdir / L.FINAL_LIBS
    if final.is_dir():
        n_final = len(list(final.glob("*.yaml")))
        out["ship_final_libs"] = f"{n_final} libraries"
        results = workdir / L.FINAL_RESULTS
        if results.is_file():
            try:
                out["ship_final_libs"] += f", {len(_read_csv(results))} kept GEMMs"
            except Exception:
                pass
    return out


def _identity(frame: pd.DataFrame) -> pd.DataFrame:
    frame = normalized(frame)
    for col in ("scaleA", "scaleB"):
        if col not in frame:
            frame[col] = 0
    return frame


def _gemm_name(row) -> str:
    try:
        return GemmProblem.from_row(row).name
    except Exception:
        return f"M{row.get('m')}_N{row.get('n')}_K{row.get('k')}"


def _pair_uplift(pairs: pd.DataFrame, up_thr: float, weights: pd.DataFrame | None) -> dict:
    """Numbers of reference vs candidate pairs (columns us_reference, us_tuned,
    kernel_changed)."""
    ratio = pairs["us_reference"].astype(float) / pairs["us_tuned"].astype(float)
    # partial data carries no verification yet: the keep rule on time and kernel alone
    better = analysis.keeps(pairs["kernel_changed"].astype(bool), ratio.where(np.isfinite(ratio)),
                            0.0, up_thr, math.inf)
    out = {"n_compared": int(len(pairs)), "n_faster": int(better.sum())}
    if len(pairs):
        best = int(np.nanargmax(ratio.to_numpy())) if np.isfinite(ratio).any() else None
        if best is not None:
            out["best_pct"] = float((ratio.iloc[best] - 1) * 100)
            out["best_gemm"] = _gemm_name(pairs.iloc[best].to_dict())
    if better.any():
        chosen = ratio[better]
        out["mean_pct"] = float(((chosen - 1) * 100).mean())
        out["geomean_pct"] = float(100 * (math.exp(np.log(chosen).mean()) - 1))
    if weights is not None and PCT in weights:
        w = _identity(weights)[KEYS + [PCT]]
        merged = pairs.assign(_ratio=ratio, _better=better).merge(w, on=KEYS, how="left")
        kept = merged[merged["_better"]]
        saved = (kept[PCT].fillna(0) * (1 - 1 / kept["_ratio"])).sum()
        out["weighted_pct"] = float(saved)
        out["weighted_coverage_pct"] = float(merged[PCT].fillna(0).sum())
    return out


def _benchmark_pairs(workdir: Path) -> pd.DataFrame | None:
    frames = []
    for ref in sorted((workdir / L.BENCH_REFERENCE).parent.glob("*_bench-reference.csv")):
        tuned = ref.with_name(ref.name.replace("_bench-reference.csv", "_bench-tuned.csv"))
        if not tuned.is_file():
            continue
        a, b = _identity(_read_csv(ref)), _identity(_read_csv(tuned))
        merged = a[KEYS + ["us", "kernel"]].merge(b[KEYS + ["us", "kernel"]], on=KEYS,
                                                  suffixes=("_reference", "_tuned"))
        merged["kernel_changed"] = merged["kernel_reference"] != merged["kernel_tuned"]
        frames.append(merged)
    return pd.concat(frames, ignore_index=True) if frames else None


def _search_pairs(workdir: Path, baseline: pd.DataFrame) -> pd.DataFrame | None:
    winners = workdir / L.WINNERS
    if winners.is_file():
        best = _identity(_read_csv(winners))
    else:
        data = sorted((workdir / L.SEARCH_DATA).parent.glob("gemms_*.csv"))
        if not data:
            return None
        frame = _identity(pd.concat([_read_csv(p) for p in data], ignore_index=True))
        best = frame.loc[frame.groupby(KEYS, sort=False)["us"].idxmin()]
    base = baseline[KEYS + ["us", "kernel"]].drop_duplicates(subset=KEYS)
    merged = base.merge(best[KEYS + ["us", "kernel"]], on=KEYS, suffixes=("_reference", "_tuned"))
    merged["kernel_changed"] = merged["kernel_reference"] != merged["kernel_tuned"]
    return merged


def _tune_pairs(workdir: Path, baseline: pd.DataFrame) -> pd.DataFrame | None:
    """Tuned gflops (library logic of completed configs, GA checkpoints of the others) vs the
    baseline's gflops, as times of one unit of work."""
    from .. import library
    from ..tuning.build_dir import CHECKPOINT, LOGIC_DIR
    from ..tuning.problem import TuningConfig

    best: dict[tuple, float] = {}
    for build in sorted((workdir / L.TUNING_DIR).glob("build_*")):
        logic = sorted((build / LOGIC_DIR).glob("*.yaml"))
        try:
            if logic:
                lib = library.load(logic[0])
                for size, _, gflops in lib.size_entries():
                    key = (lib.gemm_type, size)
                    best[key] = max(best.get(key, 0.0), gflops)
                continue
            checkpoint = build / CHECKPOINT
            config = workdir / L.fill(L.TUNING_YAML, cfg=build.name[len("build_"):])
            if checkpoint.is_file() and config.is_file():
                cfg = TuningConfig.load(config)
                scores = json.loads(checkpoint.read_text()).get("best") or []
                for size, gflops in zip(cfg.sizes, scores):
                    if gflops and math.isfinite(gflops):
                        key = (cfg.gemm_type, tuple(size))
                        best[key] = max(best.get(key, 0.0), float(gflops))
        except Exception:
            continue  # a half-written build dir says nothing yet
    if not best:
        return None
    rows = []
    for row in baseline.to_dict("records"):
        try:
            problem = GemmProblem.from_row(row)
        except Exception:
            continue
        gflops = best.get((problem.type, problem.size))
        if gflops and float(row.get("gflops") or 0) > 0:
            rows.append({**{k: row[k] for k in KEYS}, "us_reference": 1.0 / float(row["gflops"]),
                         "us_tuned": 1.0 / gflops, "kernel_changed": True})
    return pd.DataFrame(rows) if rows else None


def uplift(workdir: Path, config: dict) -> dict:
    """Best uplift so far: final (metrics.json) or an estimate from partial data."""
    metrics = workdir / L.METRICS
    if metrics.is_file():
        try:
            m = json.loads(metrics.read_text())
        except (OSError, ValueError) as exc:
            return {"source": "results/metrics.json", "final": False, "note": f"unreadable: {exc}"}
        kept, e2e = m.get("uplift_kept") or {}, m.get("e2e") or {}
        out = {"source": "results/metrics.json", "final": True,
               "n_attempted": (m.get("counts") or {}).get("n_attempted"),
               "n_kept": kept.get("n", 0), "mean_pct": kept.get("mean"),
               "geomean_pct": kept.get("geomean"), "best_pct": kept.get("max")}
        if e2e:
            out["weighted_pct"] = e2e.get("e2e_uplift_pct")
            out["coverage_pct"] = e2e.get("coverage_pct")
        roof = m.get("roofline") or {}
        if roof.get("time_weighted_pct_roofline_shipped") is not None:
            out["pct_roofline_reference"] = roof.get("time_weighted_pct_roofline_reference")
            out["pct_roofline_shipped"] = roof.get("time_weighted_pct_roofline_shipped")
        return out
    up_thr = float(config.get("up_thr", 1.03))
    summary_path = workdir / L.SUMMARY
    try:
        weights = _read_csv(summary_path) if summary_path.is_file() else None
        pairs = _benchmark_pairs(workdir)
        if pairs is not None and len(pairs):
            return {"source": "benchmarks/ (reference vs tuned of the libraries measured so far; "
                              "not verified yet)", "final": False} | \
                _pair_uplift(pairs, up_thr, weights)
        baseline_path = workdir / L.BASELINE
        if not baseline_path.is_file():
            return {"source": None, "final": False,
                    "note": "no baseline timings (keep_thr 0): uplift is known once the "
                            "reference vs tuned benchmarks run"}
        baseline = _identity(_read_csv(baseline_path))
        if config.get("mode") == "tune":
            pairs, source = _tune_pairs(workdir, baseline), \
                "optimizations/ (tuned logic and GA checkpoints vs the baseline; model fitness)"
        else:
            pairs, source = _search_pairs(workdir, baseline), \
                "search/ (dense-search winners so far vs the baseline's default kernels)"
    except Exception as exc:  # partial files mid-write: say so, never fail
        return {"source": None, "final": False, "note": f"partial data unreadable: {exc}"}
    if pairs is None or not len(pairs):
        return {"source": None, "final": False, "note": "no results yet"}
    return {"source": source, "final": False} | _pair_uplift(pairs, up_thr, weights)
