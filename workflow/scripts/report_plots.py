"""results/ (+ tuning logs) -> report/: the campaign's figures and tables (geko_lib.report)."""
import json
import re
from pathlib import Path

from geko_lib import files, jobs, platforms, report
from geko_lib.campaign import headline


def optimize_log(build_dir) -> Path:
    """optimizations/build_<cfg>/3_LibraryLogic -> logs/optimize/<cfg>.log"""
    cfg = re.sub(r"^build_", "", Path(build_dir).parent.name)
    return Path("logs", "optimize", f"{cfg}.log")


def main(smk):
    out = smk.output
    metrics = json.loads(Path(smk.input.metrics).read_text())
    platform = metrics.get("platform")
    raw = jobs.read_table(smk.input.raw)
    report.pareto(jobs.read_table(smk.input.summary), out.pareto, platform=platform, raw_df=raw)
    report.uplift_bars(raw, smk.params.up_thr, out.uplift, platform=platform)
    report.roofline(raw, platforms.ceilings(smk.config), out.roofline, platform=platform)
    files.write_text(out.table, report.results_table_html(raw, metrics=metrics,
                                                          up_thr=smk.params.up_thr))
    for source, target in ((smk.input.raw, out.raw), (smk.input.final, out.final)):
        files.write_text(target, Path(source).read_text())  # downloadable from the report
    files.write_text(out.landing, headline.landing_page(
        Path(smk.params.landing_template).read_text(), metrics,
        model=not report.is_measured(platform)))
    if "ga_convergence" in out.keys():
        logs = {optimize_log(b).stem: optimize_log(b) for b in smk.input.builds}
        report.ga_convergence({name: p.read_text() if p.is_file() else ""
                               for name, p in logs.items()}, out.ga_convergence,
                              platform=platform)


jobs.run(main, snakemake)  # noqa: F821
