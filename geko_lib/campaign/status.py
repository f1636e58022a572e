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

Outputs are believed only as far as their stamps (``geko_lib.campaign.integrity``) prove them:
every existing output is checked as a run would check it (content against its stamp, provenance
against the campaign ``run_state.json`` records, inputs unchanged), and the damaged or stale
ones, with what is made from them, are reported as what a plain rerun recomputes; a campaign
with any of them is not "finished", and a damaged ``results/metrics.json`` gives no figures.

Busy devices: ``devices.busy()`` on the config's devices, slots and lock dir for the platform's
namespace. Locks are host-wide, so a busy slot may belong to another campaign; a holder whose
working directory is this workdir is marked as this campaign's.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import yaml

from .. import devices as devmod, log_setup
from . import layout as L, rules as table
from .uplift import job_details, uplift
from ..errors import GekoError
from .snakemake_records import incomplete_outputs, proc_cwd, snakemake_locks, snakemake_processes

LEASE_RE = re.compile(r"leased (\S+) device (\d+) slot (\d+)")


class StatusError(GekoError, ValueError):
    pass


# --- config --------------------------------------------------------------------------------------

def _defaults() -> dict:
    """Every key's default, from the config schema (the one place defaults live)."""
    from ..config_schema import schema_defaults

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


# --- job logs --------------------------------------------------------------------------------

def log_error(path: Path) -> str | None:
    """The first GEKO:ERROR message of a job log (its last attempt failed), else None."""
    return log_setup.first_error(path)


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
    from ..tuning.build_dir import build_state

    layout = L.Layout(workdir)
    failed_names = set(layout.failed_jobs("tune"))
    jobs = []
    for cfg in layout.tuning_configs():
        output = L.fill(L.BUILD_LOGIC, cfg=cfg)
        log = table.rule_log("optimize", cfg)
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


def _listed(rule, workdir: Path, config: dict) -> bool:
    """Whether the campaign has (or will have) the rule's jobs: its mode's rules; a rule under a
    condition (the baseline: keep_thr > 0; verification) where it holds, or where a run made
    its jobs all the same (the bench target times the baseline whatever keep_thr says); an
    optional target's rule once it was asked for (its output's directory or its log exists)."""
    if rule.mode and rule.mode != (config.get("mode") or "search"):
        return False
    if rule.condition and not table.holds(rule.condition, config):
        return _made(rule, workdir)
    if rule.optional:
        top = Path(rule.output).parts[0]
        return (workdir / top).exists() or (workdir / table.rule_log(rule.name)).exists()
    return True


def _made(rule, workdir: Path) -> bool:
    """Whether a run made jobs of the rule: its output or log, or a fan-out's job logs."""
    if rule.over:
        return any((workdir / table.rule_log(rule.name, "x")).parent.glob("*.log"))
    return (workdir / rule.output).exists() or (workdir / table.rule_log(rule.name)).exists()


def collect_jobs(workdir: Path, config: dict, active: bool, incomplete: dict) -> list[dict]:
    """Every job the workflow has (or will have, as far as the checkpoints tell) with its state:
    done, running, interrupted, failed or pending; the rules, their outputs and what they fan
    out over come from the rule table (campaign.rules)."""
    jobs = []
    layout = L.Layout(workdir)
    values = {"part": lambda: _baseline_parts(workdir, config), "chunk": layout.search_chunks,
              "lib": layout.lib_stems, "rest": layout.uncompared,
              "share": lambda: _shares(workdir, config, "bench_libs", layout.lib_shares),
              "search_share": lambda: _shares(workdir, config, "search_share",
                                              layout.search_shares)}

    def add(rule, output, name=None):
        log = table.rule_log(rule, name)
        state, error = _state(workdir, output, log, active, incomplete)
        jobs.append(_job(rule, name, output, log, state, error))

    for rule in table.RULES:
        if not _listed(rule, workdir, config):
            continue
        if rule.over == "cfg":  # tuning jobs: their build directories tell more than outputs
            jobs.extend(_optimize_jobs(workdir, active, incomplete))
        elif rule.over:
            for value in values[rule.over]():
                add(rule.name, L.fill(rule.output, **{rule.over: value}), value)
        else:
            add(rule.name, rule.output)
    return jobs


def _baseline_parts(workdir: Path, config: dict) -> list[str]:
    """The baseline's parts: those the run made (outputs or logs), else those workload.yaml
    deals over the configured devices (one per device, no more than GEMMs; a config inferred
    from the logs may know fewer devices than the run had)."""
    made = {p.stem for p in (workdir / L.BASELINE_PART).parent.glob("part_*_of_*.csv")}
    made |= _parts_logged(workdir, "baseline_part")
    if made:
        return sorted(made)
    return L.Layout(workdir).baseline_parts(_device_count(config))


def _shares(workdir: Path, config: dict, rule: str, dealt) -> list[str]:
    """The shares of a rule of one job per device (the comparison's, the search's): those the
    run made (logs), else those ``dealt`` (Layout.lib_shares, Layout.search_shares) deals over
    the configured devices (a config inferred from the logs may know fewer devices than the run
    had, as for the baseline's parts)."""
    return sorted(_parts_logged(workdir, rule)) or dealt(_device_count(config))


def _parts_logged(workdir: Path, rule: str) -> set[str]:
    """The parts (``part_<i>_of_<n>``) whose jobs of ``rule`` wrote a log."""
    return {p.stem for p in (workdir / table.rule_log(rule, "x")).parent.glob(
        "part_*_of_*.log")}


def _device_count(config: dict) -> int:
    return len(config.get("devices") or [0])


def _count(jobs: list[dict]) -> dict:
    counts = {s: 0 for s in ("done", "running", "interrupted", "failed", "pending")}
    for job in jobs:
        counts[job["state"]] += 1
    counts["total"] = len(jobs)
    return counts


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
    from .. import platforms

    platform = platforms.name_of(config)
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
        holder["this_campaign"] = bool(pid) and proc_cwd(pid) == target
        out["busy"].append({"device": device, "slot": slot} | holder)
    return out


# --- the report --------------------------------------------------------------------------------

# the rules in DAG order, as the rule table declares them (a fan-out's parts under its rule)
RULE_ORDER = tuple(rule.name for rule in table.RULES if rule.name != "baseline_part")


def _campaign(workdir: Path, config: dict, source: str) -> dict | None:
    """The identity outputs must record: the one run_state.json holds, else the config's (where
    the run's own config was found), else None (only content is judged)."""
    from . import ownership, state as campaign_state

    try:
        recorded = ownership.read_run_state(workdir)
    except GekoError:
        recorded = None
    if recorded and recorded.get("identity"):
        return recorded["identity"]
    if source.startswith("inferred"):
        return None
    try:
        return campaign_state.identity(campaign_state.with_defaults(config))
    except GekoError:
        return None


def outputs_to_redo(workdir: Path, config: dict, source: str, jobs: list[dict]) -> dict:
    """{"damaged": [{output, reason}], "follows": [{output, reason}]}: the outputs a plain rerun
    removes and recomputes (``geko_lib.campaign.start.untrustworthy``), judged as the run
    judges them."""
    from .start import untrustworthy

    outputs = sorted({j["output"] for j in jobs if (workdir / j["output"]).exists()})
    found, follows = untrustworthy(workdir, outputs, _campaign(workdir, config, source),
                                   config.get("mode", "search"))
    return {"damaged": [{"output": str(rel), "reason": why} for rel, why in found],
            "follows": [{"output": str(rel), "reason": why} for rel, why in follows]}


def rerun_refusal(workdir: Path, config: dict, source: str) -> str | None:
    """Why a plain rerun with the workdir's config would be refused (None: it would run), by
    the check that decides it (``start.refuse_start``); without the run's config nothing is
    predicted."""
    from . import start, state as campaign_state

    if source.startswith("inferred"):
        return None

    def identity(config: dict) -> dict | None:
        try:
            return campaign_state.identity(campaign_state.with_defaults(config))
        except GekoError:
            return None  # the platform is not here: the rerun's own message tells

    try:
        start.refuse_start(workdir, config | {"discard_results": False}, identity)
    except GekoError as exc:
        return str(exc)
    return None


def collect(workdir, config_path=None) -> dict:
    """Everything ``geko status`` reports, as a JSON-able mapping."""
    from .lock import command_running

    workdir = Path(workdir).resolve()
    if not workdir.is_dir():
        raise StatusError(f"{workdir} is not a directory")
    config, source = load_config(workdir, config_path)
    processes = snakemake_processes(workdir)
    locks = snakemake_locks(workdir)
    active = (bool(processes) if processes is not None else bool(locks)) or \
        command_running(workdir)
    incomplete = incomplete_outputs(workdir)
    jobs = collect_jobs(workdir, config, active, incomplete)
    redo = {"damaged": [], "follows": []} if active else \
        outputs_to_redo(workdir, config, source, jobs)
    refused = None if active else rerun_refusal(workdir, config, source)
    redone = {r["output"] for r in redo["damaged"] + redo["follows"]}
    rules = rule_counts(workdir, config, jobs)
    counts = _count(jobs)
    mode = config.get("mode", "search")
    if active:
        state = "running"
        detail = (f"{len(processes)} snakemake process(es) in the workdir" if processes
                  else "a geko command holds the workdir" if command_running(workdir)
                  else "a snakemake lock is present (no process list on this system)")
    else:
        state, detail = idle_state(workdir, mode, jobs, rules, counts, redo, refused)
    if locks and not active:
        detail += ("; a snakemake lock is left in .snakemake/locks by a killed run: a plain "
                   "rerun (geko, or the same snakemake command) clears it and resumes")
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
        "redo": redo,
        "uplift": ({"note": f"no figures: {L.METRICS} is damaged or stale"
                            + ("" if refused else " (a plain rerun recomputes it)")}
                   if L.METRICS in redone else uplift(workdir, config)),
        "devices": device_status(workdir, config),
    }


def rule_counts(workdir: Path, config: dict, jobs: list[dict]) -> dict:
    """Per rule: its jobs by state, their total, and what the rule's outputs tell besides (the
    tuning jobs' build dirs and failed_jobs.log)."""
    details = job_details(workdir, config)
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
    return rules


def idle_state(workdir: Path, mode: str, jobs: list[dict], rules: dict, counts: dict,
               redo: dict, refused: str | None) -> tuple[str, str]:
    """(state, detail) of a campaign nothing runs in: refused, damaged, finished, failed, not
    started or stopped, and what a rerun would do."""
    finished = (workdir / L.FINAL_LIBS).is_dir() and (workdir / L.METRICS).is_file()
    if refused:
        return "refused", f"a plain rerun is refused: {refused}"
    if redo["damaged"]:
        first = redo["damaged"][0]
        return "damaged", (f"{len(redo['damaged'])} output(s) damaged or stale "
                           f"({first['output']}: {first['reason']}); a plain rerun recomputes "
                           "them" + (f" and the {len(redo['follows'])} made from them"
                                     if redo["follows"] else ""))
    if finished and not (counts["failed"] or counts["pending"] or counts["interrupted"]):
        return "finished", "final_libs/ and results/metrics.json written"
    if counts["failed"]:
        return "failed", f"{counts['failed']} job(s) failed; rerun to retry them"
    if not any(j["state"] != "pending" for j in jobs):
        return "not started", "no outputs yet"
    if mode == "tune" and rules.get("configure", {}).get("done") and not any(
            j["rule"] == "optimize" and j["state"] != "pending" for j in jobs):
        detail = ("after configure: review optimizations/*.yaml, then run again without "
                  "--until to tune")
    elif (workdir / L.SUMMARY).is_file() and not (workdir / L.SEARCH_DIR).exists() and \
            not (workdir / L.TUNING_DIR).exists():
        detail = "after the bench phase (summary.csv)"
    elif counts["interrupted"]:
        detail = (f"{counts['interrupted']} job(s) interrupted; a plain rerun (the same "
                  "command) resumes them")
    else:
        detail = "incomplete; a rerun continues from the outputs present"
    return "stopped", ("final_libs/ written; " + detail) if finished else detail


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
    for entry in report["redo"]["damaged"]:
        lines.append(f"  damaged:   {entry['output']}: {entry['reason']}")
    if report["redo"]["damaged"] and report["state"] != "refused":
        redo = [e["output"] for e in report["redo"]["damaged"] + report["redo"]["follows"]]
        lines.append(f"  a rerun:   recomputes {', '.join(redo)}")
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
