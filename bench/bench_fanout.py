"""Fan-out of the real workflow over 1, 2, 4 and 8 *simulated* devices (sim platform).

    python bench/bench_fanout.py [--devices 1 2 4 8] [--modes search tune] [--scale 0.125]
                                 [--tune-job-seconds 2] [--n-slots 1] [--keep-thr 0.1] [--out DIR]

Snakemake, the device leases (flock) and the job scheduling are real; the GPU work is replaced by
sleeps. Search mode: every GEMM of a chunk job sleeps ``scale`` x (4 s + 0.35 s per ms of the
GEMM's modelled runtime on an H200), the time the cuda dense search spends per GEMM
(``sim.search_seconds_per_gemm`` / ``sim.search_seconds_per_ms``). Tune mode: every tuning job
sleeps ``--tune-job-seconds`` (``sim.job_seconds``) beside the sim GA's own CPU work.

Per run: wall time, speedup vs one device, the GPU phase's span (first lease to last release),
busy seconds per device (from the ``leased``/``freed`` lines of the job logs), the ideal speedup
the chunks allow (total modelled load / max(load / devices, largest chunk)), and an audit that no
(device, slot) was ever held by two jobs at once. Exits 1 when the audit fails or a run fails.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from geko_lib.gemm import GemmProblem  # noqa: E402
from geko_lib.platforms import sim  # noqa: E402

SNAKEFILE = ROOT / "workflow" / "Snakefile"
WORKLOAD = ROOT / "config" / "workloads" / "llama3_8b_serving.yaml"
# the cuda dense search per GEMM: a fixed screening budget plus a part growing with its runtime
CUDA_SEARCH_SECONDS_PER_GEMM = 4.0
CUDA_SEARCH_SECONDS_PER_MS = 0.35
LEASE_LINE = re.compile(r"\b(leased|freed) (\S+) device (\d+) slot (\d+) at (\d+\.\d+)")
PHASE_LOGS = {"search": "search", "tune": "optimize"}  # logs/<dir>/ of the fanned-out GPU jobs


# --- lease intervals from job logs ----------------------------------------------------------------

def lease_intervals(workdir) -> list[dict]:
    """One record per lease found in the workdir's job logs: job (log path), device, slot, start,
    end (None when the job never logged its release: killed, or still running)."""
    records = []
    logs = Path(workdir) / "logs"
    for path in sorted(logs.rglob("*.log")) if logs.is_dir() else []:
        open_leases = {}
        for line in path.read_text(errors="replace").splitlines():
            match = LEASE_LINE.search(line)
            if not match:
                continue
            kind, _, device, slot, stamp = match.groups()
            key = (int(device), int(slot))
            if kind == "leased":
                open_leases[key] = float(stamp)
            elif key in open_leases:
                records.append({"job": str(path.relative_to(logs)), "device": key[0],
                                "slot": key[1], "start": open_leases.pop(key),
                                "end": float(stamp)})
        records.extend({"job": str(path.relative_to(logs)), "device": d, "slot": s,
                        "start": start, "end": None} for (d, s), start in open_leases.items())
    return records


def audit(records, devices, n_slots: int = 1) -> list[str]:
    """Every way the leases broke the rules: two holders of one (device, slot) at once, a device
    or slot outside the configuration, a lease never released. Empty = clean."""
    problems = []
    by_slot: dict[tuple[int, int], list[dict]] = {}
    for r in records:
        if r["device"] not in devices or not 0 <= r["slot"] < n_slots:
            problems.append(f"{r['job']}: leased device {r['device']} slot {r['slot']}, outside "
                            f"devices {list(devices)} x {n_slots} slots")
        if r["end"] is None:
            problems.append(f"{r['job']}: device {r['device']} slot {r['slot']} never freed")
            continue
        by_slot.setdefault((r["device"], r["slot"]), []).append(r)
    for (device, slot), held in sorted(by_slot.items()):
        held.sort(key=lambda r: r["start"])
        for before, after in zip(held, held[1:]):
            if after["start"] < before["end"]:
                problems.append(f"device {device} slot {slot} held by {before['job']} and "
                                f"{after['job']} at once ({after['start']:.3f} < "
                                f"{before['end']:.3f})")
    return problems


def busy_seconds(records) -> dict[int, float]:
    """Seconds each device had at least one slot leased (union of its intervals)."""
    by_device: dict[int, list[tuple[float, float]]] = {}
    for r in records:
        if r["end"] is not None:
            by_device.setdefault(r["device"], []).append((r["start"], r["end"]))
    busy = {}
    for device, spans in by_device.items():
        total, cur_start, cur_end = 0.0, None, None
        for start, end in sorted(spans):
            if cur_end is None or start > cur_end:
                if cur_end is not None:
                    total += cur_end - cur_start
                cur_start, cur_end = start, end
            else:
                cur_end = max(cur_end, end)
        busy[device] = total + (cur_end - cur_start)
    return busy


def ideal_makespan(loads, parallel: int) -> float:
    """Lower bound of the phase's time with ``parallel`` jobs at once: no device can finish before
    its share of the total, nor before the largest job."""
    return max(sum(loads) / parallel, max(loads)) if loads else 0.0


# --- one run --------------------------------------------------------------------------------------

def sim_options(mode: str, scale: float, tune_job_seconds: float) -> dict:
    if mode == "search":
        return {"search_seconds_per_gemm": round(CUDA_SEARCH_SECONDS_PER_GEMM * scale, 6),
                "search_seconds_per_ms": round(CUDA_SEARCH_SECONDS_PER_MS * scale, 6)}
    return {"job_seconds": tune_job_seconds}


def campaign_config(base: Path, mode: str, n: int, n_slots: int, workload: Path,
                    sim_opts: dict, keep_thr: float) -> dict:
    # search models an H200 (the cuda search it mimics); the sim tune needs a Tensile arch
    return {"platform": "sim", "arch": "h200" if mode == "search" else "gfx950",
            "devices": list(range(n)), "n_slots": n_slots, "lock_dir": str(base / "locks"),
            "workdir": str(base / "run"), "mode": mode, "workload_log": str(workload),
            "keep_thr": keep_thr, "sim": sim_opts}


def snakemake_command(config_path: Path, target: str, n: int, n_slots: int) -> list[str]:
    # a job takes one core: enough cores for every slot; jobs sleep, so cores are not the limit
    return [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), target,
            "--configfile", str(config_path), "--cores", str(max(2, n * n_slots)),
            "--resources", f"gpu={n}", f"gpu_slot={n * n_slots}", "--scheduler", "greedy",
            "--rerun-incomplete"]


def phase_loads(config: dict, workdir: Path, mode: str) -> list[float]:
    """Modelled seconds of every fanned-out job (the sleeps the sim platform was told to do)."""
    platform_ = sim.SimPlatform.from_config(config)
    if mode == "search":
        loads = []
        for chunk in sorted((workdir / "search" / "chunks").glob("*.yaml")):
            rows = yaml.safe_load(chunk.read_text()) or []
            problems = dict.fromkeys(GemmProblem.from_row(r) for r in rows)
            loads.append(sum(platform_.search_seconds(p) for p in problems))
        return loads
    configs = list((workdir / "optimizations" / "configs").glob("*.yaml"))
    return [platform_.job_seconds] * len(configs)


def run_one(base: Path, mode: str, n: int, n_slots: int, workload: Path, sim_opts: dict,
            keep_thr: float) -> dict:
    base.mkdir(parents=True, exist_ok=True)
    config = campaign_config(base, mode, n, n_slots, workload, sim_opts, keep_thr)
    config_path = base / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    cmd = snakemake_command(config_path, mode, n, n_slots)
    start = time.time()
    with open(base / "snakemake.log", "w") as out:
        proc = subprocess.run(cmd, cwd=base, stdout=out, stderr=subprocess.STDOUT)
    wall = time.time() - start
    workdir = base / "run"
    records = lease_intervals(workdir)
    phase = [r for r in records if r["job"].startswith(PHASE_LOGS[mode] + "/")]
    finished = [r for r in phase if r["end"] is not None]
    span = (max(r["end"] for r in finished) - min(r["start"] for r in finished)) if finished else 0
    loads = phase_loads(config, workdir, mode)
    parallel = n * (n_slots if mode == "tune" else 1)
    gemms = workdir / "gemms.csv"
    n_gemms = len(gemms.read_text().splitlines()) - 1 if gemms.exists() else 0
    return {"mode": mode, "devices": n, "n_slots": n_slots, "rc": proc.returncode,
            "wall_s": wall, "gemms": n_gemms, "jobs": len(phase), "span_s": span,
            "busy_s": busy_seconds(records), "phase_busy_s": busy_seconds(phase),
            "load_s": sum(loads), "max_job_load_s": max(loads, default=0.0),
            "ideal_s": ideal_makespan(loads, parallel),
            "held_s": sum(r["end"] - r["start"] for r in finished),
            "problems": audit(records, config["devices"], n_slots),
            "used_devices": sorted({r["device"] for r in phase}),
            "command": " ".join(cmd[1:])}


# --- report ---------------------------------------------------------------------------------------

def table(results: list[dict]) -> str:
    lines = ["| mode | devices | GEMMs / jobs | wall s | speedup | GPU-phase span s "
             "| wall - span s | phase speedup | ideal speedup (chunks) "
             "| modelled load s: total / largest job | leases held s (sum) | busy s per device "
             "| double leases |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    first = {}
    for r in results:
        one = first.setdefault(r["mode"], r)
        ideal_one = one["ideal_s"] or 1.0
        busy_s = {int(d): s for d, s in r["busy_s"].items()}  # JSON keys are strings
        busy = " / ".join(f"{busy_s.get(d, 0.0):.1f}" for d in range(r["devices"]))
        overlaps = sum("at once" in p for p in r["problems"])
        lines.append(
            f"| {r['mode']} | {r['devices']} | {r['gemms']} / {r['jobs']} | {r['wall_s']:.1f} | "
            f"{one['wall_s'] / r['wall_s']:.2f} | {r['span_s']:.1f} | "
            f"{r['wall_s'] - r['span_s']:.1f} | "
            f"{one['span_s'] / r['span_s'] if r['span_s'] else math.nan:.2f} | "
            f"{ideal_one / r['ideal_s'] if r['ideal_s'] else math.nan:.2f} | "
            f"{r['load_s']:.1f} / {r['max_job_load_s']:.1f} | {r['held_s']:.1f} | {busy} | "
            f"{overlaps} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--modes", nargs="+", choices=["search", "tune"],
                        default=["search", "tune"])
    parser.add_argument("--scale", type=float, default=0.125,
                        help="fraction of the cuda search's seconds per GEMM to sleep")
    parser.add_argument("--tune-job-seconds", type=float, default=2.0)
    parser.add_argument("--n-slots", type=int, default=1, help="tuning jobs per device")
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--keep-thr", type=float, default=0.1,
                        help="geko's keep_thr (0.1 = the default: a baseline bench job runs and "
                             "search chunks are dealt by its costs; 0 = every GEMM, no bench)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write every figure here")
    args = parser.parse_args(argv)
    base = args.out or Path(tempfile.mkdtemp(prefix="geko-fanout-"))
    from machine import cpu_name

    print(f"# fan-out on simulated devices ({datetime.date.today()}, {cpu_name()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}); runs in {base}",
          flush=True)
    results = []
    for mode in args.modes:
        opts = sim_options(mode, args.scale, args.tune_job_seconds)
        for n in args.devices:
            r = run_one(base / f"{mode}_{n}", mode, n, args.n_slots, args.workload, opts,
                        args.keep_thr)
            results.append(r)
            print(f"{mode} devices={n}: rc={r['rc']} wall={r['wall_s']:.1f}s "
                  f"span={r['span_s']:.1f}s ideal={r['ideal_s']:.1f}s gemms={r['gemms']} "
                  f"jobs={r['jobs']} "
                  f"used={r['used_devices']} sim={opts} problems={len(r['problems'])}",
                  flush=True)
            for problem in r["problems"][:10]:
                print("  AUDIT:", problem)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    failed = [r for r in results if r["rc"] != 0 or r["problems"]]
    for r in failed:
        print(f"FAILED: {r['mode']} devices={r['devices']} rc={r['rc']} "
              f"({len(r['problems'])} audit problems; see {base}/{r['mode']}_{r['devices']})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
