"""``geko status WORKDIR``: where a running or finished campaign stands, from its workdir alone.

What it reads (docs/FORMATS.md): the config the run used (``geko_config.yaml``, written by the
``geko`` command, or ``--config``; without either, platform and devices are taken from the job
logs' ``leased <platform> device <d> slot <s>`` lines), the phase outputs, the job logs
(``GEKO:ERROR`` lines: the job's last attempt failed), tune mode's build dirs and
``failed_jobs.log``, and Snakemake's own records in ``<workdir>/.snakemake``: ``locks/`` (a run
holds the workdir) and ``incomplete/`` (outputs of jobs that started and did not finish: running,
or interrupted when no run is active). A run is *active* when a process whose working directory
is the workdir runs snakemake (Linux ``/proc``; elsewhere a lock counts as active).

Best uplift so far: ``results/metrics.json`` when the analysis is done, else an estimate from
partial data (reference vs tuned benchmarks of the libraries measured so far; dense-search
winners vs the baseline; tuned library logic or GA checkpoints vs the baseline).

Busy devices: ``devices.busy()`` on the config's devices, slots and lock dir for the platform's
namespace. Locks are host-wide, so a busy slot may belong to another campaign; a holder whose
working directory is this workdir is marked as this campaign's.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from . import devices as devmod
from . import layout as L
from .errors import GekoError
from .gemm import GEMM_FIELDS, GemmProblem
from .summary import PCT, normalized

KEYS = list(GEMM_FIELDS)
LEASE_RE = re.compile(r"leased (\S+) device (\d+) slot (\d+)")
ERROR_PREFIX = "GEKO:ERROR"


class StatusError(GekoError, ValueError):
    pass


# --- config --------------------------------------------------------------------------------------

def _defaults() -> dict:
    """Every key's default, from the config schema (the one place defaults live)."""
    from .config_schema import schema_defaults

    return schema_defaults()


def _logs_leases(workdir: Path) -> tuple[str | None, list[int]]:
    platform, found = None, set()
    logs = workdir / L.LOG_DIR
    for path in sorted(logs.rglob("*.log")) if logs.is_dir() else []:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for match in LEASE_RE.finditer(text):
            platform = match.group(1)
            found.add(int(match.group(2)))
    return platform, sorted(found)


def load_config(workdir: Path, config_path=None) -> tuple[dict, str]:
    """(config with defaults filled in, where it came from)."""
    config = _defaults()
    candidates = [Path(config_path)] if config_path else [workdir / L.CONFIG_COPY]
    for path in candidates:
        if path.is_file():
            try:
                data = yaml.safe_load(path.read_text()) or {}
            except yaml.YAMLError as exc:
                raise StatusError(f"{path}: not valid YAML: {exc}") from None
            if not isinstance(data, dict):
                raise StatusError(f"{path}: not a config mapping")
            source = path.name if path.parent == workdir else str(path)
            return config | data, source
        if config_path:
            raise StatusError(f"--config: {path} does not exist")
    # no config file: what the workdir shows
    platform, used = _logs_leases(workdir)
    if platform:
        config["platform"] = platform
    if used:
        config["devices"] = used
    if (workdir / L.TUNING_DIR).is_dir():
        config["mode"] = "tune"
    config["keep_thr"] = 0.1 if (workdir / L.BASELINE).is_file() else 0.0
    return config, ("inferred from the workdir (no geko_config.yaml): devices from the job "
                    "logs, default lock dir")


# --- snakemake's records -------------------------------------------------------------------------

def _decode_marker(relative: Path) -> str | None:
    parts = relative.parts
    encoded = "".join(p[1:] if p.startswith("@") else p for p in parts)
    try:
        return base64.urlsafe_b64decode(encoded.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def incomplete_outputs(workdir: Path) -> dict[str, float]:
    """Outputs Snakemake marked incomplete (job started, not finished) -> when it started."""
    root = workdir / ".snakemake" / "incomplete"
    out = {}
    if not root.is_dir():
        return out
    for path in root.rglob("*"):
        if not path.is_file() or path.name == "migration_underway":
            continue
        key = _decode_marker(path.relative_to(root))
        if key is None:
            continue
        key_path = Path(key)
        if key_path.is_absolute():
            try:
                key = str(key_path.resolve().relative_to(workdir))
            except ValueError:
                pass
        out[key.rstrip("/")] = path.stat().st_mtime
    return out


def snakemake_locks(workdir: Path) -> list[str]:
    root = workdir / ".snakemake" / "locks"
    return sorted(p.name for p in root.glob("*.lock")) if root.is_dir() else []


def _proc_cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def snakemake_processes(workdir: Path) -> list[dict] | None:
    """Processes running snakemake (or a job script of it) in the workdir; None where the
    platform does not show other processes' working directories (no /proc)."""
    proc = Path("/proc")
    if not (proc / "self" / "cwd").exists():
        return None
    target = str(workdir.resolve())
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if _proc_cwd(int(entry.name)) != target:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
        except OSError:
            continue
        if "snakemake" in cmdline:
            found.append({"pid": int(entry.name), "command": cmdline[:200]})
    return sorted(found, key=lambda p: p["pid"])


# --- job logs --------------------------------------------------------------------------------

def log_error(path: Path) -> str | None:
    """The first GEKO:ERROR message of a job log (its last attempt failed), else None."""
    try:
        with open(path, errors="replace") as handle:
            for line in handle:
                if line.startswith(ERROR_PREFIX):
                    text = line[len(ERROR_PREFIX):].strip()
                    return re.sub(r"^\[[^\]]*\]\s*", "", text)
    except OSError:
        return None
    return None


# --- jobs ------------------------------------------------------------------------------------

def _lib_stems(workdir: Path) -> list[str]:
    return L.Layout(workdir).lib_stems()


def _job(rule, name, output, log, state, detail=None, **extra) -> dict:
    job = {"rule": rule, "name": name, "output": output, "log": log, "state": state}
    if detail:
        job["detail"] = detail
    return job | extra


def _state(workdir: Path, output: str, log: str, active: bool, incomplete: dict,
           done: bool | None = None) -> tuple[str, str | None]:
    exists = (workdir / output).exists() if done is None else done
    marked = output in incomplete
    if marked:
        return ("running" if active else "interrupted"), None
    if exists:
        return "done", None
    error = log_error(workdir / log)
    if error:
        return "failed", error
    return "pending", None


def _optimize_jobs(workdir: Path, active: bool, incomplete: dict) -> list[dict]:
    from .tuning.optimize import build_state

    layout = L.Layout(workdir)
    failed_names = set(layout.failed_jobs("tune"))
    jobs = []
    for cfg in layout.tuning_configs():
        output = L.fill(L.BUILD_LOGIC, cfg=cfg)
        log = L.rule_log("optimize", cfg)
        build = layout.path(L.BUILD_DIR, cfg=cfg)
        state = build_state(build)
        failcount = build / ".failcount"
        extra = {"build_state": state}
        if failcount.is_file():
            extra["failures"] = int(failcount.read_text().strip() or 0)
        error = None
        if state == "completed":
            job_state = "done"
        elif output in incomplete:
            job_state = "running" if active else "interrupted"
        elif cfg in failed_names or log_error(workdir / log):
            job_state, error = "failed", log_error(workdir / log) or "listed in failed_jobs.log"
        elif state in ("resumable", "failed"):
            job_state = "interrupted"
        else:
            job_state = "pending"
        jobs.append(_job("optimize", cfg, output, log, job_state, error, **extra))
    return jobs


def collect_jobs(workdir: Path, config: dict, active: bool, incomplete: dict) -> list[dict]:
    """Every job the workflow has (or will have, as far as the checkpoints tell) with its state:
    done, running, interrupted, failed or pending."""
    jobs = []

    def add(rule, output, name=None):
        log = L.rule_log(rule, name)
        state, error = _state(workdir, output, log, active, incomplete)
        jobs.append(_job(rule, name, output, log, state, error))

    layout = L.Layout(workdir)
    add("ingest", L.WORKLOAD)
    if float(config.get("keep_thr", 0)) > 0 or (workdir / L.BASELINE).exists() \
            or (workdir / L.rule_log("baseline")).exists():
        for part in _baseline_parts(workdir, config):  # one GPU job per device
            add("baseline_part", L.fill(L.BASELINE_PART, part=part), part)
        add("baseline", L.BASELINE)
    add("summarize", L.SUMMARY)
    if config.get("mode") == "tune":
        add("configure", L.TUNING_MANIFEST)
        jobs.extend(_optimize_jobs(workdir, active, incomplete))
    else:
        add("search_configure", L.SEARCH_CHUNKS)
        for chunk in layout.search_chunks():
            add("search_chunk", L.fill(L.SEARCH_DATA, chunk=chunk), chunk)
        add("winners", L.WINNERS)
    add("libs", L.LIBS)
    add("create_library", L.TENSILE)
    for lib in layout.lib_stems():
        add("bench_input", L.fill(L.BENCH_INPUT, lib=lib), lib)
        add("bench_reference", L.fill(L.BENCH_REFERENCE, lib=lib), lib)
        add("bench_tuned", L.fill(L.BENCH_TUNED, lib=lib), lib)
        if config.get("verify", True):
            add("verify_tuned", L.fill(L.VERIFY_TUNED, lib=lib), lib)
    add("analyze", L.METRICS)
    add("ship_final_libs", L.FINAL_LIBS)
    add("ship_full_libs", L.FULL_LIBS)
    add("exports", L.EXPORT_OVERRIDE)
    # optional targets: listed once they have been asked for
    if (workdir / "report").exists() or (workdir / L.rule_log("plots")).exists():
        add("plots", L.REPORT_TABLE)
    if (workdir / L.PRUNED_LIBS).exists() or (workdir / L.rule_log("prune_libs")).exists():
        add("prune_libs", L.PRUNED_LIBS)
    return jobs


def _baseline_parts(workdir: Path, config: dict) -> list[str]:
    """The baseline's parts: those the run made (outputs or logs), else one per configured
    device (a config inferred from the logs may know fewer devices than the run had)."""
    made = {p.stem for p in (workdir / L.BASELINE_PART).parent.glob("part_*_of_*.csv")}
    made |= {p.stem for p in (workdir / L.rule_log("baseline_part", "x")).parent.glob(
        "part_*_of_*.log")}
    if made:
        return sorted(made)
    count = len(config.get("devices") or [0])
    return [f"part_{i}_of_{count}" for i in range(count)]


def _count(jobs: list[dict]) -> dict:
    counts = {s: 0 for s in ("done", "running", "interrupted", "failed", "pending")}
    for job in jobs:
        counts[job["state"]] += 1
    counts["total"] = len(jobs)
    return counts


# --- what the outputs say ------------------------------------------------------------------

def _read_csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"transA": str, "transB": str}, keep_default_na=False,
                       na_values=[""])


def _details(workdir: Path, config: dict) -> dict[str, str]:
    """rule -> one line about its output."""
    out = {}
    wl = workdir / L.WORKLOAD
    if wl.is_file():
        try:
            from . import workload
            from .summary import gemm_identity

            identity = gemm_identity(workload.read(wl))
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
    libs = _lib_stems(workdir)
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
    better = (ratio >= up_thr) & pairs["kernel_changed"].astype(bool) & np.isfinite(ratio)
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
    from . import library
    from .tuning.optimize import CHECKPOINT, LOGIC_DIR
    from .tuning.problem import TuningConfig

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


# --- devices -----------------------------------------------------------------------------------

def _lock_holder(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError:
        return {}
    out = {}
    for key, value in re.findall(r"(\w+)=(\S+)", text):
        if key == "pid" and value.isdigit():
            out["pid"] = int(value)
        elif key == "since":
            try:
                out["since"] = dt.datetime.fromtimestamp(float(value)).isoformat(
                    timespec="seconds")
            except (ValueError, OverflowError, OSError):
                pass
    return out


def device_status(workdir: Path, config: dict) -> dict:
    platform = str(config.get("platform") or "sim")
    lock_dir = config.get("lock_dir") or ""
    # jobs run in the workdir, so a relative lock_dir is relative to it
    lock_dir = workdir / Path(lock_dir).expanduser() if lock_dir else devmod.default_lock_dir()
    try:
        device_ids = [int(d) for d in config.get("devices") or []]
    except (TypeError, ValueError):
        device_ids = []
    n_slots = max(int(config.get("n_slots") or 1), 1)
    out = {"platform": platform, "devices": device_ids, "n_slots": n_slots,
           "lock_dir": str(lock_dir), "busy": []}
    if not device_ids:
        return out
    target = str(workdir.resolve())
    for device, slot in devmod.busy(device_ids, n_slots=n_slots, lock_dir=lock_dir,
                                    namespace=platform):
        holder = _lock_holder(lock_dir / f"{platform}-dev{device}-slot{slot}.lock")
        pid = holder.get("pid")
        holder["this_campaign"] = bool(pid) and _proc_cwd(pid) == target
        out["busy"].append({"device": device, "slot": slot} | holder)
    return out


# --- the report --------------------------------------------------------------------------------

RULE_ORDER = ("ingest", "baseline", "summarize", "search_configure", "search_chunk", "winners",
              "configure", "optimize", "libs", "create_library", "bench_input", "bench_reference",
              "bench_tuned", "verify_tuned", "analyze", "ship_final_libs", "ship_full_libs",
              "exports", "plots", "prune_libs")


def collect(workdir, config_path=None) -> dict:
    """Everything ``geko status`` reports, as a JSON-able mapping."""
    workdir = Path(workdir).resolve()
    if not workdir.is_dir():
        raise StatusError(f"{workdir} is not a directory")
    config, source = load_config(workdir, config_path)
    processes = snakemake_processes(workdir)
    locks = snakemake_locks(workdir)
    active = bool(processes) if processes is not None else bool(locks)
    incomplete = incomplete_outputs(workdir)
    jobs = collect_jobs(workdir, config, active, incomplete)
    details = _details(workdir, config)
    rules = {}
    for job in jobs:
        entry = rules.setdefault(job["rule"], {"rule": job["rule"]} | {
            s: 0 for s in ("done", "running", "interrupted", "failed", "pending")} | {"total": 0})
        entry[job["state"]] += 1
        entry["total"] += 1
    for rule, entry in rules.items():
        if rule in details:
            entry["detail"] = details[rule]
    if "optimize" in rules:
        states: dict[str, int] = {}
        for job in jobs:
            if job["rule"] == "optimize":
                states[job["build_state"]] = states.get(job["build_state"], 0) + 1
        detail = "build dirs: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
        failed = L.Layout(workdir).failed_jobs("tune")
        if failed:
            detail += f"; failed_jobs.log: {' '.join(failed)}"
        rules["optimize"]["detail"] = detail
    counts = _count(jobs)
    mode = config.get("mode", "search")
    finished = (workdir / L.FINAL_LIBS).is_dir() and (workdir / L.METRICS).is_file()
    any_output = any(j["state"] != "pending" for j in jobs)
    if active:
        state = "running"
        detail = (f"{len(processes)} snakemake process(es) in the workdir" if processes
                  else "a snakemake lock is present (no process list on this system)")
    elif finished and not (counts["failed"] or counts["pending"] or counts["interrupted"]):
        state, detail = "finished", "final_libs/ and results/metrics.json written"
    elif counts["failed"]:
        state = "failed"
        detail = f"{counts['failed']} job(s) failed; rerun to retry them"
    elif not any_output:
        state, detail = "not started", "no outputs yet"
    else:
        state = "stopped"
        if mode == "tune" and rules.get("configure", {}).get("done") and not any(
                j["rule"] == "optimize" and j["state"] != "pending" for j in jobs):
            detail = ("after configure: review optimizations/*.yaml, then run again without "
                      "--until to tune")
        elif (workdir / L.SUMMARY).is_file() and not (workdir / L.SEARCH_DIR).exists() and \
                not (workdir / L.TUNING_DIR).exists():
            detail = "after the bench phase (summary.csv)"
        elif counts["interrupted"]:
            detail = f"{counts['interrupted']} job(s) interrupted; a rerun resumes them"
        else:
            detail = "incomplete; a rerun continues from the outputs present"
        if finished:
            detail = "final_libs/ written; " + detail
    if locks and not active:
        detail += ("; a snakemake lock is left in .snakemake/locks (a killed run): "
                   "`snakemake --unlock` (or rerun with --rerun-incomplete)")
    return {
        "workdir": str(workdir),
        "config": {"source": source, "mode": mode, "platform": config.get("platform"),
                   "arch": config.get("arch"), "devices": config.get("devices"),
                   "n_slots": config.get("n_slots"), "keep_thr": config.get("keep_thr"),
                   "up_thr": config.get("up_thr"), "err_thr": config.get("err_thr")},
        "state": state, "state_detail": detail,
        "snakemake": {"active": active, "processes": processes, "locks": locks,
                      "incomplete": sorted(incomplete)},
        "counts": counts,
        "rules": [rules[r] for r in RULE_ORDER if r in rules],
        "jobs": jobs,
        "uplift": uplift(workdir, config),
        "devices": device_status(workdir, config),
    }


def _num(value, digits=2, suffix="%") -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{suffix}"


def _uplift_line(u: dict) -> str:
    if u.get("final"):
        line = (f"{u.get('n_kept', 0)} kept of {u.get('n_attempted')} GEMMs: mean "
                f"{_num(u.get('mean_pct'))}, geomean {_num(u.get('geomean_pct'))}, best "
                f"{_num(u.get('best_pct'))}")
        if u.get("weighted_pct") is not None:
            line += (f"; weighted {_num(u['weighted_pct'])} of GEMM time saved (kept GEMMs "
                     f"cover {_num(u.get('coverage_pct'))})")
        if u.get("pct_roofline_shipped") is not None:
            line += (f"; time-weighted roofline {_num(u['pct_roofline_reference'], 1)} -> "
                     f"{_num(u['pct_roofline_shipped'], 1)}")
        return line + "  [results/metrics.json]"
    if not u.get("source"):
        return u.get("note", "no results yet")
    line = f"so far {u.get('n_faster', 0)} of {u.get('n_compared', 0)} GEMMs faster by >= up_thr"
    if u.get("best_pct") is not None:
        line += f"; best {_num(u['best_pct'])} ({u.get('best_gemm')})"
    if u.get("geomean_pct") is not None:
        line += f"; geomean of those {_num(u['geomean_pct'])}"
    if u.get("weighted_pct") is not None:
        line += f"; weighted estimate {_num(u['weighted_pct'])} of GEMM time"
    return line + f"  [{u['source']}]"


def format_text(report: dict) -> str:
    cfg = report["config"]
    devices = ",".join(str(d) for d in cfg.get("devices") or []) or "?"
    lines = [f"geko status: {report['workdir']}",
             f"  config:    {cfg['source']}: {cfg['mode']} mode, {cfg['platform']} "
             f"{cfg.get('arch') or ''}, devices {devices}, keep_thr {cfg.get('keep_thr')}, "
             f"up_thr {cfg.get('up_thr')}",
             f"  state:     {report['state']} ({report['state_detail']})"]
    c = report["counts"]
    lines.append(f"  jobs:      {c['done']} done, {c['running']} running, {c['failed']} failed, "
                 f"{c['interrupted']} interrupted, {c['pending']} pending "
                 f"(of {c['total']} known so far)")
    lines.append(f"  uplift:    {_uplift_line(report['uplift'])}")
    d = report["devices"]
    busy = d["busy"]
    if not d["devices"]:
        lines.append("  devices:   unknown (no config with devices)")
    else:
        held = ", ".join(
            f"dev{b['device']} slot{b['slot']} (pid {b.get('pid', '?')}"
            f"{', this campaign' if b.get('this_campaign') else ''}"
            f"{', since ' + b['since'] if b.get('since') else ''})" for b in busy) or "none busy"
        lines.append(f"  devices:   {d['platform']} {','.join(map(str, d['devices']))} "
                     f"x {d['n_slots']} slots, lock dir {d['lock_dir']}: {held}")
    lines.append("")
    lines.append(f"  {'step':<17}{'done':>9} {'running':>8} {'failed':>7} {'interrupted':>12} "
                 f"{'pending':>8}  detail")
    for r in report["rules"]:
        done = f"{r['done']}/{r['total']}"
        lines.append(f"  {r['rule']:<17}{done:>9} {r['running']:>8} {r['failed']:>7} "
                     f"{r['interrupted']:>12} {r['pending']:>8}  {r.get('detail', '')}".rstrip())
    notable = [j for j in report["jobs"] if j["state"] in ("running", "failed", "interrupted")]
    if notable:
        lines.append("")
        for j in notable:
            name = f"{j['rule']} {j['name']}" if j["name"] else j["rule"]
            extra = f": {j['detail']}" if j.get("detail") else ""
            lines.append(f"  {j['state']:<11} {name} (log {j['log']}){extra}")
    return "\n".join(lines)
