"""Snakemake's linter on the workflow, in the fast tier: only the kinds of lint this workflow
accepts on purpose may appear; any other (a rule without a log, an absolute path, ...) fails."""

import re
import subprocess
import sys

from tests.conftest import SNAKEFILE

ACCEPTED = {
    # geko is a pip-installed package run by its own interpreter; rules need no conda env
    "Specify a conda environment or container for each rule.",
    # the .smk files keep the small input functions beside the rules that use them
    "Mixed rules and functions in same snakefile.",
    # rule ingest's params.value is the workload path it reads (its input): the job reads it
    # from the launch directory the config names, on every executor
    "Param value is a prefix of input or output file but hardcoded",
}


def test_snakemake_lint_finds_only_the_accepted_kinds(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE),
                           "--lint", "--config", f"workdir={tmp_path / 'run'}",
                           f"lock_dir={tmp_path / 'locks'}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    text = proc.stdout + proc.stderr
    kinds = {m.rstrip(":") for m in re.findall(r"^\s+\* (.+)$", text, re.M)}
    assert kinds, f"no lint output: {text[-2000:]}"
    assert kinds <= ACCEPTED, f"new kinds of lint: {sorted(kinds - ACCEPTED)}"
