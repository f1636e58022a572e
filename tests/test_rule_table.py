"""The rule table (geko_lib.campaign.rules) wires the workflow: the .smk rules take their files,
params, resources and logs from it, localrules comes from it alone, and a rule whose files
differ from it fails when Snakemake reads the workflow."""

import re
import shutil
import subprocess
import sys

import pytest

from geko_lib import config_schema
from geko_lib.campaign import rules, snakemake_output
from tests.conftest import ROOT

SMK = sorted((ROOT / "workflow" / "rules").glob("*.smk"))


def _blocks() -> dict[str, str]:
    """Each rule's or checkpoint's text in the .smk files, by name."""
    found = {}
    for path in SMK:
        text = path.read_text()
        for m in re.finditer(r"^(?:rule|checkpoint) (\w+):\n((?:[ \t]+.*\n|\n)*)", text, re.M):
            found[m[1]] = m[2]
    return found


def test_every_rule_takes_its_files_and_log_from_the_table():
    blocks = _blocks()
    smk_text = "\n".join(p.read_text() for p in SMK)
    assert set(blocks) == set(rules.BY_NAME)
    for name, body in blocks.items():
        rule = rules.BY_NAME[name]
        assert f'rule_output("{name}"' in body and f'rule_log("{name}")' in body, name
        # integrate's inputs come through the function that refuses a platform without a checkout
        assert f'rule_input("{name}")' in body or name == "integrate", name
        assert (f'rule_params("{name}")' in body) == bool(rule.params), name
        assert (f'rule_resources("{name}")' in body) == bool(rule.gpu), name
        assert (f'rule_retries("{name}")' in body) == bool(rule.retries), name
        assert (f"checkpoint {name}:" in smk_text) == rule.checkpoint, name
        # no file restated beside the table's
        assert not re.search(r'^\s+\w+=?"[\w/{}.-]+\.(csv|yaml|log|json|txt)"', body, re.M), name


def test_localrules_come_from_the_table_alone():
    texts = [p.read_text() for p in SMK]
    assert not any(re.search(r"^\s*localrules?\s*:", t, re.M) for t in texts)
    snakefile = (ROOT / "workflow" / "Snakefile").read_text()
    assert re.findall(r"localrules?\b.*", snakefile) == ["localrules(*table.LOCAL_RULES)"]
    # plots and integrate declared themselves local in their .smk files: the table says so now
    assert {"plots", "integrate"} <= set(rules.LOCAL_RULES)
    assert not {"baseline_part", "search_share", "optimize", "bench_libs"} & set(rules.LOCAL_RULES)


@pytest.mark.parametrize("smk, directive, added, said", [
    ("search.smk", '**rule_output("winners"),', 'extra="search/extra.csv",',
     "workflow rule winners differs from geko_lib.campaign.rules.RULES: outputs"),
    ("workload.smk", '**rule_params("summarize"),', "extra=1,",
     "workflow rule summarize differs from geko_lib.campaign.rules.RULES: params"),
])
def test_a_rule_that_differs_from_the_table_fails_when_the_workflow_is_read(
        tmp_path, smk, directive, added, said):
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow")
    shutil.copytree(ROOT / "config", tmp_path / "config")
    path = tmp_path / "workflow" / "rules" / smk
    text = path.read_text()
    assert directive in text
    path.write_text(text.replace(directive, f"{directive} {added}"))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                           "--snakefile", str(tmp_path / "workflow" / "Snakefile"),
                           "--config", f"workdir={tmp_path / 'run'}",
                           f"lock_dir={tmp_path / 'locks'}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert said in out and "extra" in out
    assert not (tmp_path / "run" / "workload.yaml").exists()  # nothing ran


def test_the_phase_lines_are_the_tables():
    assert set(snakemake_output.PHASES) <= set(rules.BY_NAME)
    assert snakemake_output.PHASES["search_share"] == "Search phase"
    assert snakemake_output.PHASES["configure"] == "Configuration phase"
    assert snakemake_output.PHASES["optimize"] == "Optimization phase"
    assert snakemake_output.PHASES["exports"] == "Filter phase"
    assert "plots" not in snakemake_output.PHASES


def test_params_and_retries_name_config_keys():
    for rule in rules.RULES:
        for item in [*rule.params.values(), rule.retries or "retry"]:
            if isinstance(item, str):
                assert config_schema.schema_entry(item), (rule.name, item)


def test_conditions_and_companions_are_declared_once():
    config = {"mode": "tune", "keep_thr": 0, "verify": False, "platform": "sim"}
    summarize = rules.inputs(rules.BY_NAME["summarize"], config, {})
    assert summarize["baseline"] == []  # keep_thr 0: no baseline to filter by
    analyze = rules.inputs(rules.BY_NAME["analyze"], config, {})
    assert analyze["verify"] == [] and isinstance(analyze["tuned"], rules.Gather)
    plots = rules.outputs(rules.BY_NAME["plots"], config, {})
    assert "ga_convergence" in plots
    assert "ga_convergence" not in rules.outputs(rules.BY_NAME["plots"], {"mode": "search"}, {})
    baseline = rules.outputs(rules.BY_NAME["baseline"], config, {"stem": "llama"})
    assert baseline["bench_log"] == "llama.yaml" and baseline["bench_out"] == "llama.out"
    assert [r.name for r in rules.RULES if rules.has_companions(r.name)] == ["configure"]
    assert rules.retries(rules.BY_NAME["optimize"], {"retry": True, "tune_retries": 2}) == 2
    assert rules.retries(rules.BY_NAME["optimize"], {"retry": False, "tune_retries": 2}) == 0
    assert rules.resources(rules.BY_NAME["optimize"])["gpu_slot"] == 1
    assert rules.resources(rules.BY_NAME["analyze"]) == {}
