"""Bundled workloads by short name (issue 33): `geko --example NAME` from any directory,
`geko --example list`, and a relative workload path the current directory lacks read as the
bundled file of that path (the README's `config/workloads/...` lines run outside a checkout)."""

from __future__ import annotations

import json

import pytest

from geko_lib import cli, examples, platforms, workload
from tests.conftest import ROOT

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named


def test_the_bundled_logs_and_model_configs_have_short_names():
    found = examples.bundled()
    assert found["llama3_8b_serving"].key == "workload_log"
    assert found["llama3_8b"].key == found["llama3_70b"].key == "workload_model"
    assert found["llama3_8b"].path == ROOT / "config" / "models" / "llama3_8b.json"
    assert examples.find("mixed_types.yaml") == found["mixed_types"]


def test_the_model_configs_hold_the_published_sizes_and_read_as_models():
    cfg = json.loads((ROOT / "config" / "models" / "llama3_8b.json").read_text())
    assert (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"],
            cfg["num_key_value_heads"], cfg["num_hidden_layers"], cfg["vocab_size"]) == \
        (4096, 14336, 32, 8, 32, 128256)
    rows = workload.read_model(examples.find("llama3_70b").path, tp=8, tokens=[1, 16], support=ANY)
    # 70B on 8 GPUs: q/k/v fused (64/8 + 2*1) * 128 = 1280 out features, K = hidden 8192
    assert set(zip(rows["M"], rows["K"])) == {(1280, 8192), (8192, 1024), (7168, 8192),
                                                 (8192, 3584), (16032, 8192)}


def test_example_list_names_each_with_the_flag_that_reads_it(capsys):
    assert cli.main(["--example", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(examples.bundled())
    assert any(line.startswith("llama3_8b_serving") and "--workload-log" in line and
               "Llama-3-8B serving trace" in line for line in lines)
    assert any(line.startswith("llama3_70b ") and "--model" in line and
               "meta-llama/Meta-Llama-3-70B" in line for line in lines)


def test_an_unknown_example_is_refused_naming_the_choices(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--search", "--example", "llama4", "--platform", "sim"]) == 2
    err = capsys.readouterr().err
    assert "geko: error: --example: 'llama4' is not a bundled workload" in err
    assert "llama3_8b_serving" in err and "geko --example list" in err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("argv, key, path", [
    (["--example", "llama3_8b_serving"], "workload_log", "config/workloads/llama3_8b_serving.yaml"),
    (["--example", "llama3_8b", "--tp", "8"], "workload_model", "config/models/llama3_8b.json"),
    (["--workload-log", "config/workloads/mixed_types.yaml"], "workload_log",
     "config/workloads/mixed_types.yaml"),
    (["--model", "config/models/llama3_8b.json"], "workload_model",
     "config/models/llama3_8b.json"),
    (["--workload-log", "llama3_8b_serving.yaml"], "workload_log",
     "config/workloads/llama3_8b_serving.yaml"),  # the bare file name
    (["--model", "llama3_70b.json"], "workload_model", "config/models/llama3_70b.json"),
])
def test_a_bundled_workload_is_found_from_any_directory(tmp_path, monkeypatch, argv, key, path):
    monkeypatch.chdir(tmp_path)
    args = cli.parser().parse_args(["--search", "--platform", "sim", "-w", "run", *argv])
    config, target = cli.build_config(args)
    assert config[key] == str(ROOT / path) and target == "final_libs"


def test_a_file_of_the_current_directory_wins_over_the_bundled_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config" / "workloads").mkdir(parents=True)
    own = tmp_path / "config" / "workloads" / "mixed_types.yaml"
    own.write_text((ROOT / "config" / "workloads" / "mixed_types.yaml").read_text())
    args = cli.parser().parse_args(["--search", "--platform", "sim", "-w", "run",
                                    "--workload-log", "config/workloads/mixed_types.yaml"])
    assert cli.build_config(args)[0]["workload_log"] == str(own)
