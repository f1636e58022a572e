"""Where a campaign's wall time goes, read from Snakemake's own log of the run.

    python bench/campaign_times.py WORKDIR [--json FILE]

Snakemake stamps each job's start (a ``[date]`` line before ``rule NAME:``) and its end (a
``[date]`` line before ``Finished jobid: N``); this prints, per rule, its jobs, the sum of their
durations, and the span from the first job's start to the last job's end, with the run's whole
span. Reads the newest ``.snakemake/log/*.snakemake.log`` of WORKDIR (or the log file given).
"""
import argparse
import json
import re
import sys
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]")
RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):")
JOBID = re.compile(r"^\s+jobid: (\d+)")
FINISHED = re.compile(r"^Finished job(?:id:)? (\d+)")


def job_spans(lines) -> list[dict]:
    """One entry per finished job: rule, start and end (datetimes)."""
    now, rule, started, jobs = None, None, {}, []
    for line in lines:
        if match := STAMP.match(line):
            now = datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y")
        elif match := RULE.match(line):
            rule = match.group(1)
        elif (match := JOBID.match(line)) and rule is not None:
            started[match.group(1)] = (rule, now)
            rule = None
        elif (match := FINISHED.match(line)) and match.group(1) in started:
            name, start = started.pop(match.group(1))
            jobs.append({"rule": name, "start": start, "end": now})
    return jobs


def summary(jobs: list[dict]) -> dict:
    rules: dict[str, dict] = {}
    for job in jobs:
        entry = rules.setdefault(job["rule"], {"jobs": 0, "sum_s": 0.0, "first": job["start"],
                                               "last": job["end"]})
        entry["jobs"] += 1
        entry["sum_s"] += (job["end"] - job["start"]).total_seconds()
        entry["first"], entry["last"] = min(entry["first"], job["start"]), max(entry["last"],
                                                                                job["end"])
    begin = min((j["start"] for j in jobs), default=None)
    end = max((j["end"] for j in jobs), default=None)
    out = {name: {"jobs": e["jobs"], "sum_s": round(e["sum_s"], 1),
                  "span_s": round((e["last"] - e["first"]).total_seconds(), 1),
                  "starts_at_s": round((e["first"] - begin).total_seconds(), 1)}
           for name, e in sorted(rules.items(), key=lambda kv: kv[1]["first"])}
    return {"rules": out, "span_s": round((end - begin).total_seconds(), 1) if jobs else 0.0}


def newest_log(path: Path) -> Path:
    if path.is_file():
        return path
    logs = sorted((path / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        sys.exit(f"campaign_times: no Snakemake log under {path}/.snakemake/log")
    return logs[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    log = newest_log(args.workdir)
    result = {"log": log.name, **summary(job_spans(log.read_text(errors="replace").splitlines()))}
    for name, entry in result["rules"].items():
        print(f"{name:24s} {entry['jobs']:4d} jobs  sum {entry['sum_s']:7.1f} s  "
              f"span {entry['span_s']:7.1f} s  from {entry['starts_at_s']:6.1f} s")
    print(f"{'whole run':24s}            span {result['span_s']:7.1f} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
