"""results/ (+ tuning logs) -> report/: the campaign's figures and tables (geko_lib.report)."""
import json
import re
from pathlib import Path

from .. import files, jobs, platforms, report
from ..campaign import headline


def optimize_log(build_dir) -> Path:
    """optimizations/build_<cfg>/3_LibraryLogic -> logs/optimize/<cfg>.log"""
    cfg = re.sub(r"^build_", "", Path(build_dir).parent.name)
    return Path("logs", "optimize", f"{cfg}.log")


def run(job):
    out = job.output
    metrics = json.loads(Path(job.input.metrics).read_text())
    platform = metrics.get("platform")
    raw = jobs.read_table(job.input.raw)
    report.pareto(jobs.read_table(job.input.summary), out.pareto, platform=platform, raw_df=raw)
    report.uplift_bars(raw, job.params.up_thr, out.uplift, platform=platform)
    report.roofline(raw, platforms.ceilings(job.config), out.roofline, platform=platform)
    files.write_text(out.table, report.results_table_html(raw, metrics=metrics,
                                                          up_thr=job.params.up_thr))
    for source, target in ((job.input.raw, out.raw), (job.input.final, out.final)):
        files.write_text(target, Path(source).read_text())  # downloadable from the report
    files.write_text(out.landing, headline.landing_page(
        Path(job.params.landing_template).read_text(), metrics,
        model=not report.is_measured(platform)))
    if "ga_convergence" in out.keys():
        logs = {optimize_log(b).stem: optimize_log(b) for b in job.input.builds}
        report.ga_convergence({name: p.read_text() if p.is_file() else ""
                               for name, p in logs.items()}, out.ga_convergence,
                              platform=platform)
