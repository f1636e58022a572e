# results/ (+ the tuning logs in tune mode) -> report/: figures and tables for the HTML report.
# final_libs depends on PLOTS, so after a run `snakemake --profile profiles/local --report
# report.html` writes the self-contained HTML report; target `plots` makes only report/.


from geko_lib.campaign import headline

# The landing page leads with the campaign's headline: the plots job writes it (report/landing.rst,
# from ../report/workflow.rst and metrics.json); until then the static page stands in.
LANDING_TEMPLATE = str(Path(workflow.basedir) / "report" / "workflow.rst")
LANDING = Path(WORKDIR) / headline.LANDING


report: str(LANDING) if LANDING.is_file() else "../report/workflow.rst"


localrules:
    plots,


def report_item(path, name, category, subcategory, what):
    """An output shown in `snakemake --report`, captioned by ../report/<name>.rst."""
    return report(path, caption=f"../report/{name}.rst", category=category,
                  subcategory=subcategory, labels={"result": what})


# in tune mode the GA convergence of every tuning job (read from logs/optimize/<cfg>.log)
GA_PLOT = {"ga_convergence": report_item("report/ga_convergence.png", "ga_convergence",
                                         "3. Tuning", "figures", "GA convergence per job")
           } if MODE == "tune" else {}

# what `plots` makes (for other rules' inputs, e.g. final_libs)
PLOTS = ["report/pareto.png", "report/uplift.png", "report/roofline.png",
         "report/results_table.html", "report/raw_results.csv", "report/final_results.csv"] + \
        (["report/ga_convergence.png"] if MODE == "tune" else [])


rule plots:
    """Figures and tables of the campaign (report/), marked for `snakemake --report`."""
    input:
        summary="summary.csv",
        raw="results/raw_results.csv",
        final="results/final_results.csv",
        metrics="results/metrics.json",
        # the tuning jobs' outputs: their logs (logs/optimize/<cfg>.log) are complete then
        builds=optimize_outputs if MODE == "tune" else [],
    output:
        pareto=report_item("report/pareto.png", "pareto", "1. Workload", "figures",
                           "contribution Pareto"),
        uplift=report_item("report/uplift.png", "uplift", "2. Results", "figures",
                           "uplift per GEMM"),
        roofline=report_item("report/roofline.png", "roofline", "2. Results", "figures",
                             "roofline"),
        table=report_item("report/results_table.html", "results_table", "2. Results", "tables",
                          "results table"),
        raw=report_item("report/raw_results.csv", "raw_results", "2. Results", "tables",
                        "raw_results.csv (download)"),
        final=report_item("report/final_results.csv", "final_results", "2. Results", "tables",
                          "final_results.csv (download)"),
        **GA_PLOT,
        landing=headline.LANDING,
    params:
        up_thr=config["up_thr"],
        landing_template=LANDING_TEMPLATE,
    log:
        "logs/plots.log",
    script:
        "../scripts/report_plots.py"
