"""The original's configure-phase log lines and the files it writes, through geko's own entry
points (the Python API, the workflow's phases run in process as Snakemake runs them, the
geko terminal's summary)."""

import logging
from pathlib import Path

import pandas as pd
import pytest

from geko_lib import gpu_jobs, jobs, optim, terminal
from geko_lib.campaign import integrity, layout, rules, state
from geko_lib.schemas import GemmConfig, GemmType

ROOT = Path(__file__).resolve().parents[1]
BBS_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "f32_r")
SIZES = [[128, 128, 1, 128], [256, 128, 1, 64]]
CONFIGURE_LINES = ["Starting configuration phase...",
                   "Found 2 unique GEMMs after filtering",
                   f"{BBS_TN!r} with 2 sizes",
                   "Generated {n} configuration files in '{out}'",
                   "Configuration phase completed successfully!"]


def _gemms_csv(path: Path) -> None:
    pd.DataFrame([{"transA": "T", "transB": "N", "batch_count": b, "m": m, "n": n, "k": k,
                   "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r",
                   "d_type": "bf16_r", "compute_type": "c_f32_r", "scaleA": 0, "scaleB": 0,
                   "call_count": 1} for m, n, b, k in SIZES]).to_csv(path, index=False)


def _expected(n: int, out) -> list[str]:
    return [line.format(n=n, out=out) for line in CONFIGURE_LINES]


def _info(records) -> list[str]:
    return [r.getMessage() for r in records if r.name == "GEKO" and r.levelno == logging.INFO]


def test_api_configure_logs_the_original_configuration_phase_lines(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="GEKO")
    out = tmp_path / "optimizations"
    paths = optim.configure(gemm_configs=[GemmConfig(BBS_TN, SIZES)], output_dir=out,
                            arch="gfx950", platform="sim")
    assert paths and all(p.is_file() for p in paths)
    assert _info(caplog.records) == _expected(len(paths), out)


def _config(tmp_path, **extra) -> dict:
    return state.with_defaults({"platform": "sim", "arch": "gfx950", "mode": "tune",
                                "devices": [0], "lock_dir": str(tmp_path / "locks"), **extra})


def configure_workdir(tmp_path, run_phase, settings=None, **tune_options) -> tuple[Path, dict]:
    """A workdir whose configure phase ran in process, as the workflow's checkpoint runs it."""
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    _gemms_csv(workdir / layout.GEMMS)
    config = _config(tmp_path, tune_options=tune_options, **(settings or {}))
    run_phase("configure", workdir, config,
              given={"workload_kind": "list", "workload_value": "sizes.yaml"})
    return workdir, config


def test_workflow_configure_phase_logs_them_and_the_terminal_shows_the_counts(
        tmp_path, monkeypatch, capsys, run_phase):
    workdir, config = configure_workdir(tmp_path, run_phase)
    yamls = terminal.tuning_yamls(workdir)
    assert yamls
    job_log = (workdir / rules.rule_log("configure")).read_text().splitlines()
    messages = [line.split("] ", 1)[1] for line in job_log if line.startswith("GEKO:INFO")]
    assert [m for m in messages if m in _expected(len(yamls), layout.TUNING_DIR)] == \
        _expected(len(yamls), layout.TUNING_DIR)
    capsys.readouterr()
    terminal.run_summary(workdir, config, target="final_libs", until="configure", code=0)
    shown = capsys.readouterr().out.splitlines()
    assert "geko: Found 2 unique GEMMs after filtering" in shown
    assert (f"geko: Generated {len(yamls)} configuration files in "
            f"'{workdir / layout.TUNING_DIR}' (for review):") in shown
    # the original's closing line, then (on sim, as after every run) the reminder of what
    # sim numbers are
    assert shown[-2:] == ["geko: Configuration phase completed successfully!",
                          "geko: these numbers are model predictions of the sim platform, "
                          "not measurements"]


# a gfx950 kernel name as hipblaslt-bench prints it (fixtures/hipblaslt_bench, bench_100200_...)
REFERENCE_KERNEL = ("Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x32_MI16x16x1_SN_"
                    "LDSB1_GSU0_ISA950_WG32_8_1")
TUNED_KERNEL = "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI32x32x8_SN_ISA950"


def _bench_table(path: Path, side: str) -> str:
    rows = []
    for i, (m, n, b, k) in enumerate(SIZES):
        tuned = side == "tuned"
        # the first GEMM gains 20% from a new kernel, the second keeps the default one
        rows.append({"transA": "T", "transB": "N", "batch_count": b, "m": m, "n": n, "k": k,
                     "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r",
                     "d_type": "bf16_r", "compute_type": "c_f32_r", "scaleA": 0, "scaleB": 0, "lib": "BBS_TN",
                     "us": 10.0 / (1.2 if tuned and i == 0 else 1.0), "gflops": 1.0,
                     "solution_index": 7 + (100 if tuned and i == 0 else 0),
                     "solution_name": f"sol{i}{'t' if tuned and i == 0 else ''}",
                     "kernel": TUNED_KERNEL if tuned and i == 0 else REFERENCE_KERNEL})
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def test_analyze_phase_writes_the_original_columns_and_dashboard_data(
        tmp_path, monkeypatch, run_phase):
    workdir = tmp_path / "workdir"
    (workdir / "results").mkdir(parents=True)
    monkeypatch.chdir(workdir)
    _gemms_csv(workdir / layout.SUMMARY)
    config = _config(tmp_path, verify=False)
    for table, kind in ((layout.BENCH_SHARE_REFERENCE, "reference"),
                        (layout.BENCH_SHARE_TUNED, "tuned")):
        (workdir / layout.fill(table, share="part_0_of_1")).parent.mkdir(parents=True,
                                                                         exist_ok=True)
        _bench_table(workdir / layout.fill(table, share="part_0_of_1"), kind)
    run_phase("analyze", workdir, config)
    raw = pd.read_csv(layout.RAW_RESULTS)
    assert list(raw["MT_reference"]) == ["256x128x32"] * 2
    assert list(raw["MI_reference"]) == ["16x16x1"] * 2
    assert list(raw["MT_tuned"]) == ["128x128x64", "256x128x32"]
    assert list(raw["MI_tuned"]) == ["32x32x8", "16x16x1"]
    assert list(raw["solution_changed"]) == [True, False]
    assert list(raw["kept"]) == [True, False]
    dashboard = pd.read_csv(layout.DASHBOARD)
    assert len(dashboard) == 1 and dashboard.loc[0, "m"] == SIZES[0][0]
    assert not [c for c in dashboard.columns if "reference" in c or c.endswith("_tuned")]
    assert not {"lib", "ratio", "error_tuned"} & set(dashboard.columns)
    assert dashboard.loc[0, "solution_name"] == TUNED_KERNEL  # the original's kernel column
    assert dashboard.loc[0, "solution_index"] == 107 and dashboard.loc[0, "solution"] == "sol0t"
    assert dashboard.loc[0, "us"] == pytest.approx(10.0 / 1.2)


def _watch_running_jobs(monkeypatch, tuning_dir: Path, seen: Path) -> Path:
    """``seen``: every line running_jobs.log holds right after the GA reports a generation
    (a file: the workflow's job runs in a child process)."""
    from geko_lib.tuning import running_jobs

    report = running_jobs.generation
    monkeypatch.setattr(running_jobs, "REFRESH_S", 0.0)

    def spy(n_gen):
        report(n_gen)
        with open(seen, "a") as handle:
            handle.write((tuning_dir / running_jobs.FILE).read_text())
    monkeypatch.setattr(running_jobs, "generation", spy)
    return seen


def _short_ga(monkeypatch) -> None:
    """Four generations where a tuning YAML names none (the GA's default is longer)."""
    from geko_lib.tuning import ga

    monkeypatch.setattr(ga.GAConfig, "n_gen", 4)


def _running_lines(seen: Path, device: str, log: str) -> None:
    fields = [_line_fields(line) for line in seen.read_text().splitlines()]
    assert fields and {f["device"] for f in fields} == {device}
    assert {f["log"] for f in fields} == {f"'{log}'"}
    generations = [int(f["n_gen"]) for f in fields]
    assert generations == sorted(generations) and generations[0] >= 1 and generations[-1] == 4


def _line_fields(line: str) -> dict:
    return dict(part.split("=", 1) for part in line.split(" | "))


def test_api_optimize_keeps_running_jobs_log(tmp_path, monkeypatch):
    out = tmp_path / "optimizations"
    yamls = optim.configure(gemm_configs=[GemmConfig(BBS_TN, SIZES[:1])], output_dir=out,
                            arch="gfx950", platform="sim")
    _short_ga(monkeypatch)
    seen = _watch_running_jobs(monkeypatch, out, tmp_path / "seen")
    finished = optim.run(tuning_dir=out, devices=[3], n_slots=2, platform="sim",
                         lock_dir=str(tmp_path / "locks"))
    assert len(finished) == len(yamls) == 1
    # its line names the API job's own log (beside the tuning dir, where the workflow's is)
    _running_lines(seen, "3", tmp_path / "logs" / "optimize" / f"{yamls[0].stem}.log")
    assert (out / "running_jobs.log").read_text() == ""  # nothing runs any more


def test_workflow_optimize_phase_keeps_running_jobs_log(tmp_path, monkeypatch, run_phase):
    workdir, config = configure_workdir(tmp_path, run_phase)
    yamls = terminal.tuning_yamls(workdir)[:1]
    _short_ga(monkeypatch)
    seen = _watch_running_jobs(monkeypatch, Path(layout.TUNING_DIR), tmp_path / "seen")
    name = yamls[0].stem
    run_phase("optimize", workdir, dict(config, devices=[5]), wildcards={"cfg": name})
    assert any((workdir / layout.fill(layout.BUILD_LOGIC, cfg=name)).iterdir())
    _running_lines(seen, "5", f"logs/optimize/{name}.log")
    assert (workdir / layout.TUNING_DIR / "running_jobs.log").read_text() == ""


def test_search_processed_csv_from_both_doors(tmp_path, monkeypatch, run_phase):
    """search/processed.csv: the GEMMs searched, GEMM_FIELDS only, from search.run as from the
    workflow's search_share + winners phases (test_one_engine runs both on the same GEMMs); a
    GEMM whose search failed is not in it."""
    from geko_lib import search
    from geko_lib.gemm import GEMM_FIELDS, GemmProblem
    from tests.test_one_engine import CRASH, GEMMS, _api, _workflow

    _, api_dir = _api(tmp_path)
    _, flow_dir = _workflow(tmp_path, run_phase)
    processed = (flow_dir / search.PROCESSED).read_text()
    assert processed == (api_dir / search.PROCESSED).read_text()
    table = pd.read_csv(flow_dir / search.PROCESSED)
    assert list(table.columns) == list(GEMM_FIELDS)
    assert [GemmProblem.from_row(r).name for r in table.to_dict("records")] == \
        [GemmProblem.from_row(r).name for r in GEMMS.to_dict("records")
         if CRASH not in GemmProblem.from_row(r).name]


# --- newer revisions' inputs: refused by name, one line, exit 2, nothing written -------------

MX_ROW = ("- {function: matmul, M: 1024, N: 4096, K: 8192, transA: N, transB: T, batch_count: 1, "
          "scaleA: %d, scaleB: %d, a_type: f8_r, b_type: f8_r, c_type: bf16_r, d_type: bf16_r, "
          "scale_type: f32_r, compute_type: c_f32_r, call_count: 1}\n")
BF16_ROW = MX_ROW.replace("f8_r", "bf16_r").replace("transB: T", "transB: N") % (0, 0)
INLINE = ["--inline", "128", "128", "1", "128", "B", "B", "S", "T", "N", "--platform", "sim"]


def _refused(capsys, tmp_path, code: int, *names: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("geko: error: "), err
    for name in names:
        assert name in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(WRITTEN_BY_TEST), \
        "a refused command wrote something"
    return err[0]


WRITTEN_BY_TEST = ("workload.yaml",)


@pytest.mark.parametrize("flag", ["--custom-lib-src", "--custom-lib-dir"])
@pytest.mark.parametrize("door", ["geko", "configure.py", "search.py"])
def test_custom_lib_flags_are_refused_by_name(tmp_path, monkeypatch, capsys, flag, door):
    from geko_lib import cli, launchers

    monkeypatch.chdir(tmp_path)
    (tmp_path / "workload.yaml").write_text(MX_ROW % (0, 0))
    if door == "geko":
        code = cli.main(["--bench", *INLINE, flag, "lib_dir"])
    else:
        code = launchers.main(Path(door).stem, ["workload.yaml", f"{flag}=lib_dir"])
    _refused(capsys, tmp_path, code, flag, "not supported by geko")


@pytest.mark.parametrize("arch", ["gfx1250", "gfx1250_96cu", "gfx1250_192cu", "gfx1250-strict"])
def test_gfx1250_family_is_refused_by_name(tmp_path, monkeypatch, capsys, arch):
    from geko_lib import cli, newer_revisions

    monkeypatch.chdir(tmp_path)
    (tmp_path / "workload.yaml").write_text(MX_ROW % (0, 0))
    code = cli.main(["--tune", *INLINE, "-a", arch, "--until", "configure"])
    _refused(capsys, tmp_path, code, f"--arch: {arch!r}", "gfx1250 family")
    with pytest.raises(newer_revisions.NewerRevisionInput, match="gfx1250 family"):
        optim.configure(gemm_configs=[GemmConfig(BBS_TN, SIZES)], arch=arch,
                        output_dir=tmp_path / "optimizations", platform="sim")
    assert not (tmp_path / "optimizations").exists() or \
        not any((tmp_path / "optimizations").iterdir())


@pytest.mark.parametrize("scales, field", [((3, 3), "scaleA"), ((0, 1001), "scaleB")])
def test_mx_workload_rows_are_refused_naming_line_and_field(tmp_path, monkeypatch, capsys,
                                                             scales, field):
    from geko_lib import cli
    from geko_lib.bench import log as bench_log
    from geko_lib.workload import WorkloadError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "workload.yaml").write_text(MX_ROW % (1, 1) + MX_ROW % scales)
    code = cli.main(["--bench", "--workload-log", "workload.yaml", "--platform", "sim"])
    line = _refused(capsys, tmp_path, code, f"workload.yaml:2: {field}: ", "MX", "MXE8B32")
    with pytest.raises(WorkloadError) as refused:  # the API reads workloads alike
        bench_log.parse(tmp_path / "workload.yaml")
    assert str(refused.value) in line


def test_mx_keys_of_a_list_yaml_are_refused(tmp_path, monkeypatch, capsys):
    from geko_lib import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "workload.yaml").write_text(
        "TRANSA: T\nTRANSB: N\nDataType: F8\nDestDataType: B\nComputeDataType: S\n"
        "MX: true\nMX_BLOCK: 32\nSizes:\n  - [128, 128, 1, 128]\n")
    code = cli.main(["--tune", "--list", "workload.yaml", "-a", "gfx950", "--platform", "sim",
                     "--until", "configure"])
    _refused(capsys, tmp_path, code, "workload.yaml:6: MX: True: ", "MX (block-scaled)")


def test_workflow_configure_writes_mi_finder_log_when_mi_log_is_on(
        tmp_path, monkeypatch, run_phase):
    workdir, _ = configure_workdir(tmp_path, run_phase, MI_LOG=True)
    mi_dir = workdir / layout.TUNING_DIR / "MI_finder_log" / "BBS_TN"
    assert sorted(p.name for p in mi_dir.iterdir()) == sorted(
        f"BBS_TN_M{m}_N{n}_B{b}_K{k}.log" for m, n, b, k in SIZES)
    assert all("selected:" in p.read_text() for p in mi_dir.iterdir())


def test_no_mi_finder_log_without_mi_log(tmp_path, monkeypatch, run_phase):
    workdir, _ = configure_workdir(tmp_path, run_phase)
    assert terminal.tuning_yamls(workdir)
    assert not list(workdir.rglob("MI_finder_log"))


# --- the .out files as the tool printed them (rocm) -----------------------------------------

def _rocm_workdir(tmp_path, monkeypatch):
    from tests.conftest import FIXTURES
    from tests.rocm_fake import build_fake_hipblaslt, fixture_logic

    if not (FIXTURES / "tensile_logic").is_dir():
        pytest.skip("tests/fixtures is not here")
    fake = build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx950"))
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    return fake, _config(tmp_path, platform="rocm", mode="search",
                         rocm={"hipblaslt_path": str(fake)})


def _tool_outputs(directory: Path) -> dict[str, str]:
    """What hipblaslt-bench printed into a job's directory (the rocm platform's raw outputs),
    by file name, the probe passes aside."""
    return {p.name: p.read_text() for p in directory.glob("bench*.out") if "_probe" not in p.name}


def test_rocm_bench_out_is_the_tools_output_through_the_api(tmp_path, monkeypatch):
    from geko_lib import bench
    from geko_lib.bench_formats import text as bench_text

    fake, _ = _rocm_workdir(tmp_path, monkeypatch)
    (tmp_path / "workload.yaml").write_text(BF16_ROW)
    rows = bench.log.update(bench.log.parse(tmp_path / "workload.yaml"))
    bench_file = bench.log.dump_rows(bench.log.records(rows), tmp_path / "run" / "w.yaml")
    frame = bench.run(hipblaslt_path=str(fake), bench_file=bench_file,
                      output_file=tmp_path / "run" / "w.out")
    (printed,) = _tool_outputs(tmp_path / "run").values()  # bench_<...>.out: the tool's
    assert (tmp_path / "run" / "w.out").read_text() == printed
    assert not bench_text.is_rendered(printed) and "--kernel name:" in printed
    assert len(frame) == 1


def test_rocm_workflow_baseline_and_comparison_outs_are_the_tools_output(
        tmp_path, monkeypatch, run_phase):
    from geko_lib.bench_formats import text as bench_text

    _, config = _rocm_workdir(tmp_path, monkeypatch)
    Path(layout.WORKLOAD).write_text(BF16_ROW + BF16_ROW.replace("K: 8192", "K: 512"))
    part = "part_0_of_1"
    part_csv = layout.fill(layout.BASELINE_PART, part=part)
    part_out = str(bench_text.out_beside(part_csv))
    run_phase("baseline_part", ".", config, wildcards={"part": part})
    (printed,) = _tool_outputs(Path(part_csv).parent).values()
    assert Path(part_out).read_text() == printed and not bench_text.is_rendered(printed)
    stem = "workload"
    run_phase("baseline", ".", config, given={"stem": stem}, over={"part": [part]})
    assert Path(layout.fill(layout.BENCH_OUT, stem=stem)).read_text() == printed
    # the comparison's reference bench: its .out beside its table, as the tool printed it
    Path(layout.BENCH_INPUT.format(lib="L")).parent.mkdir(parents=True, exist_ok=True)
    Path(layout.BENCH_INPUT.format(lib="L")).write_text(
        Path(layout.fill(layout.BENCH_LOG, stem=stem)).read_text())
    reference = layout.BENCH_REFERENCE.format(lib="L")
    lib = gpu_jobs.LibraryBench("L", Path(layout.BENCH_INPUT.format(lib="L")), None,
                                Path(layout.TENSILE), None)
    full = state.with_defaults(config)
    campaign = state.identity(full)
    with jobs.on_device(full) as (platform, device):  # the reference step of bench_libs' job
        gpu_jobs.bench_step(lib, "reference", platform, device, lambda path: (
            integrity.expected_provenance(campaign, full["mode"], path)))
    (compared,) = _tool_outputs(Path(reference).parent).values()
    assert bench_text.out_beside(reference).read_text() == compared
    assert not bench_text.is_rendered(compared)


def test_sim_outs_are_rendered_tables_saying_so(tmp_path, monkeypatch, run_phase):
    from geko_lib.bench_formats import text as bench_text

    workdir = tmp_path / "workdir"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    Path(layout.WORKLOAD).write_text(BF16_ROW)
    part_csv = layout.fill(layout.BASELINE_PART, part="part_0_of_1")
    part_out = str(bench_text.out_beside(part_csv))
    run_phase("baseline_part", workdir, _config(tmp_path), wildcards={"part": "part_0_of_1"})
    text = Path(part_out).read_text()
    assert bench_text.is_rendered(text) and "model predictions" in text.splitlines()[0]


def test_api_search_refuses_a_reference_library(tmp_path):
    from geko_lib import newer_revisions, search
    from tests.test_one_engine import _rows

    with pytest.raises(newer_revisions.NewerRevisionInput, match="custom_lib_dir: a reference"):
        search.run(configs=_rows()[:1], output_dir=tmp_path / "s", devices=[0], platform="sim",
                   custom_lib_dir=str(tmp_path / "lib"), lock_dir=str(tmp_path / "locks"))
    assert not (tmp_path / "s").exists()


def test_a_job_killed_by_the_stall_watchdog_leaves_no_running_line(
        tmp_path, monkeypatch, run_phase):
    workdir, config = configure_workdir(tmp_path, run_phase, settings={
        "stall_timeout": 1, "tune_retries": 0, "sim": {"stall_on": ["M128_N128"]}})
    name = terminal.tuning_yamls(workdir)[0].stem
    # its last attempt: skipped, the campaign goes on
    job = run_phase("optimize", workdir, config, wildcards={"cfg": name})
    assert "no progress in" in (workdir / job.log[0]).read_text()
    assert (workdir / layout.TUNING_DIR / "running_jobs.log").read_text() == ""


def test_the_out_files_read_a_table_as_pandas_records_do():
    """bench_formats.text builds a table's rows column by column (a search's candidates are
    tens of thousands of rows): the same dicts, types and NaN cells as to_dict('records'), and
    a search/<GEMM>.out that names each GEMM's own candidates only."""
    from geko_lib.bench_formats import text as bench_text
    from geko_lib.phases import search_share

    frame = pd.DataFrame({"transA": ["T", "T", "N"], "transB": ["N"] * 3,
                          "batch_count": [1, 1, 1], "m": [64, 64, 128], "n": [2, 2, 4],
                          "k": [256, 256, 512], "a_type": ["bf16_r"] * 3,
                          "b_type": ["bf16_r"] * 3, "c_type": ["bf16_r"] * 3,
                          "d_type": ["bf16_r"] * 3, "compute_type": ["c_f32_r"] * 3,
                          "us": [3.5, float("nan"), 7.25], "eligible": [True, False, True],
                          "solution_name": ["a", "b", "c"]})
    rows = bench_text.table_rows(frame)
    expected = frame.to_dict("records")
    assert [list(r) for r in rows] == [list(r) for r in expected]
    for got, want in zip(rows, expected):
        for key in want:
            assert type(got[key]) is type(want[key]), key
            assert got[key] == want[key] or (got[key] != got[key] and want[key] != want[key])
    assert bench_text.format_rows(rows, "p") == bench_text.format_results(frame, "p")
    grouped = search_share.by_gemm_name(rows)
    assert [len(v) for v in grouped.values()] == [2, 1]
    assert [r["solution_name"] for r in grouped["BBS_TN_M64_N2_B1_K256"]] == ["a", "b"]
