"""The three numbers a campaign is judged by, read from ``results/metrics.json``: GEMMs kept,
the time-weighted uplift, and how close the shipped kernels get to the roofline floor.

The end of a ``geko`` run prints them (:func:`text`); the HTML report's landing page leads with
them (:func:`landing_page`, written by the ``plots`` job into ``report/landing.rst``).
"""

from __future__ import annotations

# the comment line in workflow/report/workflow.rst that the headline replaces
MARKER = ".. geko-headline"
LANDING = "report/landing.rst"  # workdir-relative: the landing page with the headline in


def numbers(m: dict) -> dict:
    """GEMMs kept of those compared, the time-weighted uplift (% of the workload's GEMM time
    saved) and the shipped kernels' time-weighted % of the roofline floor (the fastest time
    the platform's ceilings allow: tuned where kept, else reference); None where unknown."""
    roofline = m.get("roofline") or {}
    failed = int(m["counts"].get("n_failed") or 0)  # counted as not kept
    return {"n_kept": int(m["counts"]["n_kept"]),
            "n_attempted": int(m["counts"]["n_attempted"]) + failed, "n_failed": failed,
            "n_untimed": int((m.get("e2e") or {}).get("n_untimed") or 0),
            "weighted_uplift_pct": (m.get("e2e") or {}).get("e2e_uplift_pct"),
            "pct_of_floor": roofline.get("time_weighted_pct_roofline_shipped"),
            "pct_of_floor_reference": roofline.get("time_weighted_pct_roofline_reference")}


def _pct(value, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}%"


def text(m: dict) -> str:
    """One line: ``12 of 30 GEMMs kept; time-weighted uplift 4.12% ...; 63.2% of the floor``."""
    h = numbers(m)
    failed = f" ({h['n_failed']} failed)" if h["n_failed"] else ""
    of = (f"of the compared GEMMs' time saved ({h['n_untimed']} failed GEMM(s) untimed)"
          if h["n_untimed"] else "of the workload's GEMM time saved")
    return (f"{h['n_kept']} of {h['n_attempted']} GEMMs kept{failed}; time-weighted uplift "
            f"{_pct(h['weighted_uplift_pct'])} {of}; shipped kernels "
            f"at {_pct(h['pct_of_floor'], 1)} of the roofline floor (reference "
            f"{_pct(h['pct_of_floor_reference'], 1)})")


def rst(m: dict, model: bool) -> str:
    """The headline as reStructuredText: a bullet per number, then the sim caveat."""
    h = numbers(m)
    lines = [
        f"- **GEMMs kept: {h['n_kept']}** of {h['n_attempted']} compared (a different kernel, "
        "fast enough and verified)",
        f"- **Time-weighted uplift: {_pct(h['weighted_uplift_pct'])}** of the workload's GEMM "
        "time saved (each kept GEMM's saving weighted by its share of GEMM time)",
        f"- **{_pct(h['pct_of_floor'], 1)} of the floor**: the shipped kernels' time-weighted "
        "share of the roofline bound (min of compute peak and intensity x bandwidth; "
        f"reference {_pct(h['pct_of_floor_reference'], 1)})",
    ]
    if model:
        lines += ["", "*These are model predictions of the sim platform, not measurements.*"]
    return "\n".join(lines) + "\n"


def landing_page(template: str, m: dict, model: bool) -> str:
    """The report's landing page: ``template`` (workflow/report/workflow.rst, still a Jinja
    template for snakemake) with its headline marker replaced by :func:`rst`."""
    if MARKER not in template:
        raise ValueError(f"the landing page template has no {MARKER!r} line")
    return template.replace(MARKER, rst(m, model), 1)
