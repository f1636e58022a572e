"""One engine behind both doors: the Python API's search.run and the workflow's phases
(search_share, winners, run in process through phases.run as Snakemake runs them) give the same
winners and the same failure files for the same GEMMs; the rule table is the workflow's."""

import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from geko_lib import failures, phases, search
from geko_lib.campaign import layout
from geko_lib.gemm import GemmProblem

ROOT = Path(__file__).resolve().parents[1]
GEMMS = pd.DataFrame([
    {"transA": "T", "transB": "N", "batch_count": 1, "m": m, "n": n, "k": k,
     "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r", "d_type": "bf16_r",
     "compute_type": "c_f32_r", "scaleA": 0, "scaleB": 0, "us": us}
    for m, n, k, us in ((4096, 4096, 4096, 310.0), (1024, 8, 4096, 9.0), (8192, 1, 4096, 21.0))])
CRASH = "M1024_N8"  # the sim platform's dense search of this GEMM fails


def _rows():
    return search.configure(GEMMS, duration=0.01)


def _api(tmp_path):
    out = tmp_path / "api"
    winners = search.run(configs=_rows(), output_dir=out, devices=[0], platform="sim",
                         sim={"search_crash_on": [CRASH]}, lock_dir=str(tmp_path / "locks"))
    return winners, out


def _workflow(tmp_path, run_phase):
    """The two phases in a workdir, as the workflow's jobs run them (one chunk)."""
    workdir = tmp_path / "workdir"
    (workdir / layout.SEARCH_CHUNKS).mkdir(parents=True)
    chunk = "gemms_0-2"
    chunk_file = workdir / layout.fill(layout.SEARCH_CHUNK, chunk=chunk)
    chunk_file.write_text(yaml.safe_dump(_rows(), sort_keys=False))
    config = {"platform": "sim", "arch": "gfx950", "devices": [0],
              "lock_dir": str(tmp_path / "locks"), "sim": {"search_crash_on": [CRASH]},
              "search_duration": 0.01}
    run_phase("search_share", workdir, config, wildcards={"search_share": "part_0_of_1"})
    run_phase("winners", workdir, config)
    return pd.read_csv(layout.WINNERS), workdir / layout.SEARCH_DIR


def _choice(winners: pd.DataFrame) -> dict:
    return {GemmProblem.from_row(r).name: (r["solution_index"], r["solution_name"])
            for r in winners.to_dict("records")}


def test_api_and_workflow_pick_the_same_winners_and_write_the_same_failure_files(
        tmp_path, run_phase):
    api_winners, api_dir = _api(tmp_path)
    flow_winners, flow_dir = _workflow(tmp_path, run_phase)
    assert _choice(api_winners) == _choice(flow_winners)
    assert len(_choice(flow_winners)) == 2 and not any(CRASH in n for n in _choice(flow_winners))
    for name in (failures.FAILED_JOBS, failures.FAILED_GEMMS):
        assert (api_dir / name).read_text() == (flow_dir / name).read_text(), name
    failed_rows = yaml.safe_load((flow_dir / failures.FAILED_GEMMS).read_text())
    assert [GemmProblem.from_row(r).name for r in failed_rows] == [
        n for n in (GemmProblem.from_row(r).name for r in _rows()) if CRASH in n]


def test_api_winners_have_the_columns_and_values_of_the_workflows_winners_csv(
        tmp_path, run_phase):
    """search.run's winners carry the original's columns (solutionIdx, solution, lib_source,
    hipblaslt-Gflops ...) as winners.csv does: a script written for the original's
    search.run read winners["solutionIdx"] and got a KeyError from the API alone."""
    api_winners, _ = _api(tmp_path)
    flow_winners, _ = _workflow(tmp_path, run_phase)
    assert list(api_winners.columns) == list(flow_winners.columns)
    order = ["m", "n", "k"]
    columns = ["solutionIdx", "solution", "lib_source", "hipblaslt-Gflops", "hipblaslt-GB/s"]
    pd.testing.assert_frame_equal(
        api_winners.sort_values(order)[columns].reset_index(drop=True),
        flow_winners.sort_values(order)[columns].reset_index(drop=True), check_dtype=False)


def test_a_run_without_failures_leaves_no_failure_files(tmp_path):
    out = tmp_path / "api"
    out.mkdir()
    (out / failures.FAILED_JOBS).write_text("stale\n")
    search.run(configs=_rows()[:1], output_dir=out, devices=[0], platform="sim",
               lock_dir=str(tmp_path / "locks"))
    assert not (out / failures.FAILED_JOBS).exists()
    assert not (out / failures.FAILED_GEMMS).exists()


def _workflow_rules() -> set[str]:
    texts = [(ROOT / "workflow" / "Snakefile").read_text()]
    texts += [p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk")]
    return {m for text in texts for m in re.findall(r"^(?:rule|checkpoint) (\w+):", text, re.M)}


def test_the_rule_table_is_the_workflows_rule_list():
    assert _workflow_rules() == {r.name for r in phases.RULES} | set(phases.TARGETS)


def test_every_workflow_script_is_one_phase_call():
    for script in (ROOT / "workflow" / "scripts").glob("*.py"):
        calls = re.findall(r'phases\.run_script\(snakemake, "(\w+)"\)', script.read_text())
        assert len(calls) == 1 and calls[0] in phases.PHASES, script.name
        assert phases.function(calls[0])


def _rule_bodies() -> dict[str, str]:
    """Each workflow rule's text, by name."""
    texts = [p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk")]
    return {m.group(1): m.group(2) for text in texts for m in re.finditer(
        r"^(?:rule|checkpoint) (\w+):\n((?:[ \t]+.*\n|\n)*)", text, re.M)}


def test_each_rule_runs_its_phase_in_process_or_as_a_script_as_the_table_says():
    """The bookkeeping rules (campaign.rules: in_process) run their phase in Snakemake's
    process, every other rule as its one-line script; no script is left that no rule runs."""
    bodies = _rule_bodies()
    for rule in phases.RULES:
        body = bodies[rule.name]
        if rule.in_process:
            assert rule.local, rule.name
            assert f'in_process("{rule.name}", input, output, params, wildcards, threads, ' \
                   "resources, log)" in body and "script:" not in body, rule.name
        else:
            assert f'rule_script("{rule.name}")' in body and "run:" not in body, rule.name
    scripted = {phase for rule in phases.RULES if not rule.in_process for phase in rule.phases}
    assert {p.stem for p in (ROOT / "workflow" / "scripts").glob("*.py")} == scripted


def test_the_profiles_and_the_geko_command_run_jobs_in_threads():
    """Without --force-use-threads Snakemake starts a whole Snakemake process per run: job."""
    from geko_lib import cli

    for profile in (ROOT / "profiles").glob("*/config.yaml"):
        assert yaml.safe_load(profile.read_text()).get("force-use-threads") is True, profile
    command = cli.snakemake_command(Path("c.yaml"), {"devices": [0], "n_slots": 1},
                                    "final_libs", 1, [])
    assert "--force-use-threads" in command


def test_checking_the_rules_names_what_differs():
    with pytest.raises(RuntimeError, match="not declared \\['extra'\\]"):
        phases.check_rules([SimpleNamespace(name=name) for name in
                            [r.name for r in phases.RULES] + list(phases.TARGETS) + ["extra"]],
                           {}, {})


def test_keep_rule_is_one_function():
    from geko_lib.campaign import analysis

    assert bool(analysis.keeps(True, 1.03, 0.0, 1.03, 0.03))
    assert not bool(analysis.keeps(False, 2.0, 0.0, 1.03, 0.03)), "the same kernel is no win"
    assert not bool(analysis.keeps(True, 1.029, 0.0, 1.03, 0.03))
    assert not bool(analysis.keeps(True, 2.0, 0.03, 1.03, 0.03))
    assert not bool(analysis.keeps(True, 2.0, float("nan"), 1.03, 0.03))



def _string_constants(tree):
    """String constants of a module that are not docstrings."""
    import ast

    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docstrings]


def test_no_module_outside_platforms_knows_a_platform_by_name():
    """Platform names are what the registry answers: nothing outside geko_lib/platforms/ compares
    with one or keys a table by one (phrases that merely mention one are fine)."""
    import ast

    from geko_lib import platforms

    names = set(platforms.REGISTRY)
    found = []
    for path in sorted((ROOT / "geko_lib").rglob("*.py")):
        if "platforms" in path.relative_to(ROOT / "geko_lib").parts:
            continue
        tree = ast.parse(path.read_text())
        found += [f"{path.relative_to(ROOT)}:{n.lineno}: {n.value!r}"
                  for n in _string_constants(tree) if n.value in names]
    assert not found, "\n".join(found)
