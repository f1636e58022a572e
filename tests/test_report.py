"""The campaign report: every figure and table of geko_lib.report on small hand-made tables, then
a real sim campaign through `plots` and `snakemake --report`, opened in headless Chromium."""
import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from geko_lib import platforms, report
from geko_lib.tuning import ga


pytestmark = pytest.mark.slow

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SIM = {"name": "sim", "arch": "gfx950", "measured": False,
       "note": "sim platform: analytic GPU model; times are model predictions, not measurements"}
MEASURED = {"name": "rocm", "arch": "gfx950", "measured": True, "note": ""}
CEILINGS = platforms.ceilings({"platform": "sim", "arch": "gfx950"})

BF16 = dict(transA="T", transB="N", a_type="bf16_r", b_type="bf16_r", c_type="bf16_r",
            d_type="bf16_r", compute_type="c_f32_r", scaleA=0, scaleB=0)
FP8 = dict(BF16, a_type="f8_r", b_type="f8_r")


def gemm(types, m, n, k, batch=1, **columns):
    return dict(types, m=m, n=n, k=k, batch_count=batch, **columns)


def summary_table():
    rows = [gemm(BF16, 28672, 1, 4096, call_count=100, us=40.0),
            gemm(BF16, 4096, 16, 4096, call_count=500, us=9.0),
            gemm(FP8, 4096, 8, 14336, call_count=50, us=12.0),
            gemm(BF16, 1024, 1024, 1024, batch=4, call_count=10, us=30.0)]
    frame = pd.DataFrame(rows)
    frame["total (us)"] = frame["call_count"] * frame["us"]
    frame["% of total"] = 100 * frame["total (us)"] / frame["total (us)"].sum()
    return frame.assign(measured=False)


def raw_table():
    """kept, below up_thr, same kernel, failed verification, and a kept fp8 GEMM."""
    rows = [gemm(BF16, 4096, 16, 4096, us_reference=10.0, us_tuned=8.0, kernel_changed=True,
                 valid=True, kept=True, error_tuned=1e-3, pct_of_total=40.0),
            gemm(BF16, 28672, 1, 4096, us_reference=40.0, us_tuned=39.5, kernel_changed=True,
                 valid=True, kept=False, error_tuned=1e-3, pct_of_total=30.0),
            gemm(BF16, 1024, 1024, 1024, batch=4, us_reference=30.0, us_tuned=30.0,
                 kernel_changed=False, valid=True, kept=False, error_tuned=1e-3,
                 pct_of_total=5.0),
            gemm(BF16, 6144, 8, 4096, us_reference=12.0, us_tuned=6.0, kernel_changed=True,
                 valid=False, kept=False, error_tuned=1e6, pct_of_total=10.0),
            gemm(FP8, 4096, 8, 14336, us_reference=12.0, us_tuned=10.0, kernel_changed=True,
                 valid=True, kept=True, error_tuned=2e-2, pct_of_total=15.0)]
    frame = pd.DataFrame(rows)
    frame["ratio"] = frame["us_reference"] / frame["us_tuned"]
    frame["uplift_pct"] = (frame["ratio"] - 1) * 100
    frame["kernel_reference"] = "Cijk_ref_<MT64>"
    frame["kernel_tuned"] = np.where(frame["kernel_changed"], "Cijk_tuned", "Cijk_ref_<MT64>")
    frame["lib"] = "gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml"
    return frame.assign(measured=False, call_count=1, weighted_uplift_contribution_pct=1.0)


def assert_png(path, min_bytes=10_000) -> Image.Image:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    assert len(data) > min_bytes, f"{path}: only {len(data)} bytes"
    assert not list(path.parent.glob(f".{path.name}.tmp*"))  # written atomically
    image = Image.open(path)
    image.load()
    assert image.width >= 600 and image.height >= 400
    assert np.asarray(image.convert("L"), dtype=float).std() > 5  # something is drawn
    return image


def says_model_predictions(image, info):
    return "model predictions" in info["title"] and "model predictions" in info["note"] \
        and "model predictions" in image.info["Description"]


# --- each figure ---------------------------------------------------------------------------------


def test_gemm_label():
    assert report.gemm_label(gemm(BF16, 4096, 16, 4096)) == "BBS_TN 4096x16x4096"
    assert report.gemm_label(gemm(FP8, 64, 8, 128, batch=3)) == "F8BS_TN 64x8x128 b3"


def test_pareto(tmp_path):
    path = tmp_path / "report" / "pareto.png"
    info = report.pareto(summary_table(), path, platform=SIM)
    image = assert_png(path)
    assert info["by_time"]
    assert info["pct"] == sorted(info["pct"], reverse=True)
    assert info["labels"][0] == "BBS_TN 4096x16x4096"  # 500 calls x 9 us: the largest share
    assert "BBS_TN 1024x1024x1024 b4" in info["labels"]
    assert info["cumulative"][-1] == pytest.approx(100.0)
    assert np.all(np.diff(info["cumulative"]) >= 0)
    assert says_model_predictions(image, info)


def test_pareto_many_gemms_and_no_baseline(tmp_path):
    rows = [gemm(BF16, 16 * (i + 1), 8, 4096, call_count=i + 1) for i in range(60)]
    info = report.pareto(pd.DataFrame(rows), tmp_path / "p.png", platform=MEASURED, max_bars=20)
    image = assert_png(tmp_path / "p.png")
    assert not info["by_time"] and "calls" in info["title"]  # keep_thr 0: no timings
    assert len(info["labels"]) == 20 and info["labels"][-1] == "others (41 GEMMs)"
    assert info["cumulative"][-1] == pytest.approx(100.0)
    assert "model predictions" not in info["title"] and info["note"] == ""
    assert image.info["Description"] == "measured"

    # without baseline timings the reference kernels' times of raw_results weigh the calls
    raw = raw_table().assign(call_count=[1, 1, 1, 1, 10])
    info = report.pareto(pd.DataFrame(rows[:5]), tmp_path / "q.png", raw_df=raw, platform=SIM)
    assert info["source"] == "reference" and info["by_time"]
    assert info["labels"][0] == "F8BS_TN 4096x8x14336"  # 10 calls x 12 us
    assert info["pct"][0] == pytest.approx(100 * 120 / (10 + 40 + 30 + 12 + 120))


def test_uplift_bars(tmp_path):
    path = tmp_path / "uplift.png"
    info = report.uplift_bars(raw_table(), 1.03, path, platform=SIM)
    image = assert_png(path)
    assert info["threshold_pct"] == pytest.approx(3.0)
    assert info["uplift_pct"] == sorted(info["uplift_pct"], reverse=True)
    assert info["counts"] == {"kept": 2, "rejected": 2, "invalid": 1}
    by_label = dict(zip(info["labels"], info["status"]))
    assert by_label["BBS_TN 6144x8x4096"] == "invalid"  # fastest, but failed verification
    assert by_label["BBS_TN 28672x1x4096"] == "rejected"  # +1.3 %: below up_thr
    assert info["labels"][0] == "BBS_TN 6144x8x4096"
    assert sum(info["same_kernel"]) == 1
    assert says_model_predictions(image, info)


def test_roofline_modelled_ceilings(tmp_path):
    path = tmp_path / "roofline.png"
    info = report.roofline(raw_table(), CEILINGS, path, platform=SIM)
    image = assert_png(path)
    # one compute ceiling per input class present (bf16 and fp8), the platform's values
    assert info["compute_tflops"] == {"16": CEILINGS["peak_tflops"]["16"],
                                      "8": CEILINGS["peak_tflops"]["8"]}
    assert info["bandwidth_tbps"] == CEILINGS["hbm_tbps"]
    assert info["modelled"] and "modelled ceilings" in info["title"]
    assert info["n_points"] == 5
    assert says_model_predictions(image, info)

    points = report.roofline_points(raw_table())
    first = points.iloc[0]  # 4096x16x4096 bf16: 2mnk / (2 (mk + kn + mn)) bytes, 8 us tuned
    flops = 2 * 4096 * 16 * 4096
    assert first["ai"] == pytest.approx(flops / (2 * (4096 * 4096 + 4096 * 16 + 4096 * 16)))
    assert first["tflops_tuned"] == pytest.approx(flops / 8.0 / 1e6)


def test_roofline_measured_and_unknown_ceilings(tmp_path):
    measured = dict(CEILINGS, measured=True, source="rocblas-bench peak and a stream copy")
    raw = raw_table().assign(measured=True)
    info = report.roofline(raw, measured, tmp_path / "a.png", platform=MEASURED)
    assert_png(tmp_path / "a.png")
    assert not info["modelled"] and "measured ceilings" in info["title"]
    assert "model predictions" not in info["title"]

    info = report.roofline(raw, None, tmp_path / "b.png", platform=MEASURED)
    assert_png(tmp_path / "b.png")
    assert info["compute_tflops"] == {} and info["bandwidth_tbps"] is None
    assert "no ceilings" in info["title"]


def ga_log(name, rows, prefix="GEKO:INFO [geko_lib.tuning.optimize] "):
    return "\n".join(f"{prefix}{name} | {ga.format_row(r)}" for r in rows)


def test_ga_convergence(tmp_path):
    def row(gen, best_scores, mean):
        return {"generation": gen, "n_evals": 64 * (gen + 1), "best_fitness": 1.0,
                "mean_fitness": mean, "best_scores": best_scores}

    one = [row(g, [50000.0 + 100 * g], 0.5 + 0.05 * g) for g in range(8)]
    two = [row(g, [1000.0 + g, 2000.0 + 10 * g], 0.6 + 0.04 * g) for g in range(5)]
    resumed = [row(g, [1000.0 + g, 2000.0 + 10 * g], 0.6) for g in range(3, 6)]  # gens 3-5 again
    logs = {"BBS_TN_0": "GEKO:INFO [geko] leased sim device 0 slot 0\n" + ga_log("BBS_TN_0", one),
            "BBS_TN_1": ga_log("BBS_TN_1", two) + "\nGEKO:WARNING [geko] stalled\n"
            + ga_log("BBS_TN_1", resumed),
            "F8BS_TN_0": "GEKO:ERROR [geko] crashed before the first generation\n"}
    table = report.parse_ga_log(logs["BBS_TN_1"])
    assert list(table["generation"]) == [0, 1, 2, 3, 4, 5]
    assert table["best_scores"].iloc[-1] == [1005.0, 2050.0]
    assert table["mean_fitness"].iloc[3] == pytest.approx(0.6)  # the resumed line wins

    path = tmp_path / "ga.png"
    info = report.ga_convergence(logs, path, platform=SIM)
    image = assert_png(path)
    assert info["jobs"]["BBS_TN_0"] == {"generations": 8, "n_evals": 512,
                                        "final_best_scores": [50700.0]}
    assert info["jobs"]["BBS_TN_1"]["generations"] == 6
    assert "F8BS_TN_0" not in info["jobs"]  # no table in its log
    assert says_model_predictions(image, info)


def test_empty_inputs_still_give_a_figure(tmp_path):
    empty = raw_table().iloc[0:0]
    report.uplift_bars(empty, 1.03, tmp_path / "u.png", platform=SIM)
    report.roofline(empty, CEILINGS, tmp_path / "r.png", platform=SIM)
    report.pareto(summary_table().iloc[0:0], tmp_path / "p.png", platform=SIM)
    info = report.ga_convergence({"BBS_TN_0": "no table here"}, tmp_path / "g.png")
    for name in ("u", "r", "p", "g"):
        assert_png(tmp_path / f"{name}.png", min_bytes=5_000)
    assert info["jobs"] == {}


def test_results_table_html():
    metrics = {"platform": SIM, "config": {"up_thr": 1.03},
               "counts": {"n_attempted": 5, "n_kept": 2, "n_invalid": 1},
               "e2e": {"e2e_uplift_pct": 12.5, "coverage_pct": 55.0}}
    table = report.results_table(raw_table(), 1.03)
    assert list(table["GEMM"])[0] == "BBS_TN 4096x16x4096"  # largest share first
    assert list(table["decision"]) == ["kept", "below up_thr 1.03", "kept", "invalid",
                                       "same kernel"]
    text = report.results_table_html(raw_table(), metrics=metrics)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "model predictions" in text and "2 of 5 GEMMs kept" in text and "12.50 %" in text
    assert text.count('<tr class="kept">') == 2 and text.count('<tr class="invalid">') == 1
    assert "Cijk_ref_&lt;MT64&gt;" in text and "<MT64>" not in text  # escaped
    assert "BBS_TN 1024x1024x1024 b4" in text and "+25.00" in text


# --- the workflow: plots, snakemake --report, Chromium -------------------------------------------

FIGURES = ("pareto.png", "uplift.png", "roofline.png")


@pytest.fixture(scope="module")
def search_report(finished_trace_search, tmp_path_factory):
    """A sim search campaign on the Llama-3-8B trace through final_libs and plots, then
    `snakemake --report` (the default target's DAG: final_libs)."""
    root = tmp_path_factory.mktemp("report")
    c = finished_trace_search.copy(root)
    html = root / "report.html"
    c.snakemake("--report", str(html))
    return c, html


def test_plots_target_and_html_report(search_report):
    c, html = search_report
    raw = pd.read_csv(c.path("results", "raw_results.csv"))
    metrics = json.loads(c.path("results", "metrics.json").read_text())
    assert metrics["platform"]["measured"] is False
    for name in FIGURES:
        image = assert_png(c.path("report", name))
        assert "model predictions" in image.info["Description"]
        assert "model predictions" in image.info["Title"]
    assert not c.path("report", "ga_convergence.png").exists()  # search mode
    table = c.path("report", "results_table.html").read_text()
    assert table.count("<tr class=") == len(raw) > 10
    assert c.path("report", "raw_results.csv").read_text() == \
        c.path("results", "raw_results.csv").read_text()

    text = html.read_text()
    assert len(text) > 500_000
    embedded = set(re.findall(r"data:[a-z/]+;charset=utf8;filename=([\w.]+);base64", text))
    missing = {*FIGURES, "results_table.html", "raw_results.csv", "final_results.csv"} - embedded
    assert not missing, (f"not in the report: {sorted(missing)} (final_libs must depend on the "
                         "plots outputs: PLOTS in its input)")
    assert "model prediction" in text  # the workflow description says what the numbers are
    assert not re.search(r"<(script|img|link)[^>]+(src|href)=\"https?:", text)  # self-contained


@pytest.fixture(scope="module")
def chromium():  # module scope: checked before the campaign of search_report runs
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")
    return path


def screenshot(chromium, html, png, profile, width=1400, height=2000):
    """Render ``html`` in headless Chromium and save a screenshot."""
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=5000",
         f"--screenshot={png}", f"--window-size={width},{height}", html.as_uri()],
        capture_output=True, text=True, timeout=180)
    assert png.is_file(), f"no screenshot ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return np.asarray(Image.open(png).convert("RGB"), dtype=float)


def test_html_report_renders_in_chromium(chromium, search_report, tmp_path):
    c, html = search_report
    landing = screenshot(chromium, html, c.root / "report.png", tmp_path / "profile")
    assert landing.shape == (2000, 1400, 3)
    assert landing.std() > 10, "blank screenshot"
    assert len(np.unique(landing.reshape(-1, 3), axis=0)) > 50  # text, the rule graph, the menu

    # the roofline inside the report: open it as the report's own menu does
    text = html.read_text()
    show = ('<script>window.addEventListener("load", () => setTimeout(() => {'
            'app.setView({content: "img", '
            'contentPath: results["report/roofline.png"].data_uri, '
            'resultPath: "report/roofline.png"}); }, 200));</script>')
    at = text.rindex("</body>")
    view = c.root / "report_roofline.html"
    view.write_text(text[:at] + show + text[at:])
    figure = screenshot(chromium, view, c.root / "report_roofline.png", tmp_path / "profile",
                        height=1000)
    assert figure.std() > 10
    assert np.abs(figure - landing[:1000]).mean() > 5, "the roofline view is the landing page"


def test_tune_mode_plots_ga_convergence(finished_tune, tmp_path):
    c = finished_tune.copy(tmp_path)
    plots = c.snakemake("plots")  # made with final_libs (its input): nothing left to do
    assert "Nothing to be done" in plots.stdout + plots.stderr
    image = assert_png(c.path("report", "ga_convergence.png"))
    assert "3 tuning jobs" in image.info["Title"] and "model predictions" in image.info["Title"]
    for name in FIGURES:
        assert_png(c.path("report", name))
