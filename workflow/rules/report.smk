# results/ (+ the tuning logs in tune mode) -> report/: figures and tables for the HTML report.
# final_libs depends on PLOTS, so after a run `snakemake --profile profiles/local --report
# report.html` writes the self-contained HTML report; target `plots` makes only report/.


from geko_lib.campaign import headline

# The landing page leads with the campaign's headline: the plots job writes it (report/landing.rst,
# from ../report/workflow.rst and metrics.json); until then the static page stands in.
LANDING = Path(WORKDIR) / headline.LANDING


report: str(LANDING) if LANDING.is_file() else "../report/workflow.rst"


def report_item(path, name, category, subcategory, what):
    """An output shown in `snakemake --report`, captioned by ../report/<name>.rst."""
    return report(path, caption=f"../report/{name}.rst", category=category,
                  subcategory=subcategory, labels={"result": what})


# the plots outputs `snakemake --report` shows: output -> (caption, category, subcategory, label)
SHOWN = {
    "pareto": ("pareto", "1. Workload", "figures", "contribution Pareto"),
    "uplift": ("uplift", "2. Results", "figures", "uplift per GEMM"),
    "roofline": ("roofline", "2. Results", "figures", "roofline"),
    "table": ("results_table", "2. Results", "tables", "results table"),
    "raw": ("raw_results", "2. Results", "tables", "raw_results.csv (download)"),
    "final": ("final_results", "2. Results", "tables", "final_results.csv (download)"),
    "ga_convergence": ("ga_convergence", "3. Tuning", "figures", "GA convergence per job"),
}

# what `plots` shows (for other rules' inputs, e.g. final_libs)
PLOTS = [path for key, path in rule_output("plots").items() if key in SHOWN]


rule plots:
    """Figures and tables of the campaign (report/), marked for `snakemake --report`."""
    input:
        **rule_input("plots"),
    output:
        **rule_output("plots", {key: lambda path, shown=shown: report_item(path, *shown)
                                for key, shown in SHOWN.items()}),
    params:
        **rule_params("plots"),
    log:
        rule_log("plots"),
    run:
        in_process("plots", input, output, params, wildcards, threads, resources, log)
