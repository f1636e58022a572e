"""The snakemake arguments after `--` (issue 41, item 3): one that would replace what geko
passes itself (its config file, workflow, workdir, cores, ...) or a `--config` key a geko flag
sets is refused by name in one line before anything runs; the rest pass through. A `--config`
value arrives typed as a config file types it, on both doors."""
from pathlib import Path

import pytest
import yaml

from geko_lib import cli
from geko_lib.config_schema import schema_defaults, typed_overrides

from .conftest import WORKLOADS, Campaign
from .test_cli_flags import geko

LOG = str(WORKLOADS / "mixed_types.yaml")


def test_a_configfile_after_the_dashes_is_refused_and_nothing_runs(tmp_path):
    """`-- --configfile extra.yaml` replaced geko's config file: the bundled example ran in
    W/runs/example, "Search workflow completed successfully!", exit 0, nothing for X.yaml."""
    (tmp_path / "extra.yaml").write_text("keep_thr: 5\n")
    proc = geko("--search", "--workload-log", LOG, "-w", "W", "--", "--configfile",
                str(tmp_path / "extra.yaml"), cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("geko: error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stdout + proc.stderr
    assert errors[0].startswith("geko: error: --configfile after --: it would replace the "
                                "config geko's flags set")
    assert "Traceback" not in proc.stderr and "completed successfully" not in proc.stdout
    assert not (tmp_path / "W").exists()


@pytest.mark.parametrize("extra, words", [
    (["--configfile", "x.yaml"], "--configfile after --: it would replace the config"),
    (["--configfiles", "x.yaml", "y.yaml"], "--configfiles after --: it would replace"),
    (["--configf=x.yaml"], "--configf (snakemake reads --configfile) after --"),
    (["--snakefile", "S"], "--snakefile after --: geko runs its own workflow"),
    (["-s", "S"], "-s after --: geko runs its own workflow"),
    (["--directory", "elsewhere"], "--directory after --: snakemake runs in the workdir; give "
                                   "it as -w/--workdir"),
    (["-d", "elsewhere"], "-d after --: snakemake runs in the workdir"),
    (["-nd", "elsewhere"], "-d after --: "),  # -n -d
    (["--dir=elsewhere"], "--dir (snakemake reads --directory) after --"),
    (["--cores", "3"], "--cores after --: give it as geko's --cores"),
    (["-c3"], "-c after --: give it as geko's --cores"),
    (["--resources", "gpu=8"], "--resources after --: geko sets gpu and gpu_slot from "
                               "--devices and --n_slots"),
    (["--res", "gpu=8"], "--res after --: geko sets gpu and gpu_slot"),
    (["--rerun-triggers", "code"], "--rerun-triggers after --: geko reuses outputs by mtime"),
    (["--scheduler", "ilp"], "--scheduler after --: geko uses the greedy scheduler"),
    (["--config", "devices=[0,1]"], "--config devices=... after --: geko's --devices/--device "
                                    "sets devices; give it there"),
    (["--config", "sim={noise: 0.1}", "workload_log=other.yaml"],
     "--config workload_log=... after --: geko's --workload-log/--list/--inline/--model/"
     "--example sets workload_log"),
    (["--config=workdir=elsewhere"], "--config workdir=... after --: geko's -w/--workdir"),
    (["-C", "mode=tune"], "--config mode=... after --: geko's --search/--tune/--bench"),
    (["-Cplatform=rocm"], "--config platform=... after --: geko's --platform sets platform"),
    (["--dry-run", "--config", "keep_thr=0"], "geko's --keep_thr sets keep_thr"),
    (["--config", "retry=False"], "geko's --no_retry sets retry"),
    (["--config", "sim={seed: 1}", "--dry-run", "-C", "stall_timeout=5"],
     "--config twice after --: snakemake keeps only the last"),
    (["--config", "rocm={hipblaslt_path: /opt/hipBLASLt}"],
     "--config rocm={hipblaslt_path: ...} after --: geko's --hipblaslt sets "
     "rocm.hipblaslt_path; give it there"),
])
def test_what_would_replace_geko_s_own_is_refused_by_name(tmp_path, capsys, extra, words):
    code = cli.main(["--search", "--workload-log", LOG, "-w", str(tmp_path / "W"), "--",
                     *extra])
    said = capsys.readouterr()
    errors = [line for line in said.err.splitlines() if line.startswith("geko: error:")]
    assert code == 2 and len(errors) == 1 and words in errors[0], said.err
    assert not (tmp_path / "W").exists()


def test_snakemake_s_until_is_refused_beside_geko_s(tmp_path, capsys):
    code = cli.main(["--tune", "-a", "gfx942", "--workload-log", LOG, "-w", str(tmp_path / "W"),
                     "--until", "configure", "--", "-U", "ingest"])
    assert code == 2
    assert "geko: error: -U after --: geko's --until is given" in capsys.readouterr().err
    cli.refuse_replacing_options(["--until", "ingest"], cli.own_config_keys())  # alone: passes


@pytest.mark.parametrize("extra", [
    ["--dry-run"], ["-np"], ["-j4d"], ["--forceall", "--printshellcmds"],
    ["--config", "sim={noise: 0.1, crash_on: [M1024]}", "stall_timeout=60"],
    ["--config", "rocm={python: /usr/bin/python3}"], ["-Csim={seed: 3}"],
    ["--report", "report.html"], ["--profile", "profiles/local"], ["--until", "ingest"],
    ["--", "-d", "--configfile"],  # after a second --: targets, not options
])
def test_other_options_pass_through(extra):
    cli.refuse_replacing_options(extra, cli.own_config_keys())


@pytest.mark.parametrize("extra, passed", [
    (["--dry-run"], ["--config", "discard_results=True", "--dry-run"]),
    (["--config", "sim={seed: 1}"], ["--config", "discard_results=True", "sim={seed: 1}"]),
    (["--config=sim={seed: 1}"], ["--config", "discard_results=True", "sim={seed: 1}"]),
    (["-nCsim={seed: 1}", "-p"], ["-n", "--config", "discard_results=True", "sim={seed: 1}",
                                  "-p"]),
])
def test_geko_s_one_off_items_join_the_config_option_however_it_is_spelled(extra, passed):
    """A second --config would replace the first: --discard-results (an item of geko's own,
    never saved) was lost beside a `-C` or `--config=` after the dashes."""
    config = schema_defaults() | {"discard_results": True}
    assert cli.with_overrides(config, extra) == passed


def test_every_option_geko_passes_snakemake_is_refused_after_the_dashes():
    """The table of refused options is the one geko passes itself (snakemake_command, plus
    --until from run_workflow): a new one there must be added to it."""
    config = schema_defaults() | {"discard_results": True}
    command = cli.snakemake_command(Path("c.yaml"), config, "final_libs", 2, [])
    passed = {word for word in command if word.startswith("-")} - {"-m"}
    refused = {name for names in cli.OWN_OPTIONS for name in names}
    # flags: given twice, the same
    repeatable = {"--rerun-incomplete", "--keep-going", "--force-use-threads"}
    assert passed - refused - repeatable == {"--config"}  # --config: checked key by key
    assert "--until" in cli.UNTIL_OPTION


def test_the_refused_options_are_snakemake_s_with_every_spelling():
    """Each refused option by every name snakemake's own parser gives it, and the one-letter
    options that take no value (a cluster like -nd goes on past them) are snakemake's."""
    from snakemake.cli import get_argument_parser

    actions = get_argument_parser()._actions
    spellings = {name: tuple(a.option_strings) for a in actions for name in a.option_strings}
    for names in [*cli.OWN_OPTIONS, cli.UNTIL_OPTION]:
        assert set(spellings[names[0]]) == set(names), names
    valueless = {o[1] for a in actions if a.nargs == 0 for o in a.option_strings
                 if len(o) == 2 and o[0] == "-" and o[1] != "-"}
    assert valueless == set(cli.VALUELESS_LETTERS)


def test_every_key_a_flag_sets_is_geko_s():
    keys = cli.own_config_keys()
    assert {flag.key for flag in cli.FLAGS} <= set(keys)
    assert {"workdir", "mode", "workload_log", "workload_list", "workload_inline",
            "workload_model", "bench_timing"} <= set(keys)
    assert "sim" not in keys and "stall_timeout" not in keys  # no flag: set with --config


# --- --config values typed as a config file's ------------------------------------------------

def snakemake_read(config: dict, *items: str) -> dict:
    """``config`` with ``items`` merged as snakemake's --config merges them (its own parser)."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    update_config(config, parse_config(list(items)))
    return config


@pytest.mark.parametrize("items, key, typed", [
    (["devices=[0,1]"], "devices", [0, 1]),
    (["model_tokens=[1, 64]"], "model_tokens", [1, 64]),
    (["model_token_weights=[8,4,1]"], "model_token_weights", [8, 4, 1]),
    (["model_token_weights=serving"], "model_token_weights", "serving"),
    (["retry=true"], "retry", True),
    (["workload_log=yes"], "workload_log", "yes"),  # a file name, as snakemake read it
    (["combine_with=[run1, '2']"], "combine_with", ["run1", "2"]),
    (["tune_options={population: 8, mutation: 0.5}"], "tune_options",
     {"population": 8, "mutation": 0.5}),
    (["devices=[0,1"], "devices", "[0,1"),  # no YAML: left for the schema to refuse
])
def test_a_config_item_is_typed_as_a_config_file_types_it(items, key, typed):
    config = snakemake_read(schema_defaults(), *items)
    assert typed_overrides(config, items)[key] == typed


def test_a_section_item_is_typed_key_by_key_and_merged():
    config = schema_defaults()
    config["sim"]["crash_on"] = ["M1"]  # from a config file: kept
    items = ["sim={noise: 0.1, seed: 3, flaky_on: [M2]}"]
    assert snakemake_read(config, *items)["sim"]["noise"] == "0.1"  # what snakemake hands over
    sim = typed_overrides(config, items)["sim"]
    assert (sim["noise"], sim["seed"], sim["flaky_on"], sim["crash_on"]) == \
        (0.1, 3, ["M2"], ["M1"])


def test_the_snakemake_door_takes_typed_config_items(tmp_path):
    """`snakemake --config devices=[0,1]` was refused ('1' is not of type 'integer') and a
    number in a section came as text ('0.1' is not of type 'number')."""
    run = Campaign(tmp_path)
    proc = run.snakemake("bench", "-n", "--config", "devices=[0,1]",
                         "sim={noise: 0.1, seed: 3}", check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "is not of type" not in proc.stdout + proc.stderr


def test_the_geko_door_passes_a_typed_section_through(tmp_path):
    (tmp_path / "W").mkdir()  # a dry run removes a workdir it made itself
    proc = geko("--search", "--workload-log", LOG, "-w", "W", "--", "--dry-run", "--config",
                "sim={noise: 0.1}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert yaml.safe_load((tmp_path / "W" / "geko_config.yaml").read_text())["workdir"]

