"""The end-to-end tier starts its modules in conftest.STARTS_FIRST's order: every module named
there exists and holds end-to-end tests, they are collected first and in that order, and
pytest-xdist is told to keep the order (it would reorder modules by their number of tests)."""
import subprocess
import sys
from types import SimpleNamespace

from tests.conftest import ROOT, STARTS_FIRST, pytest_configure


def end_to_end_modules_in_collection_order() -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "slow", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "tests"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    modules = [line.split("::")[0].removeprefix("tests/") for line in proc.stdout.splitlines()
               if line.startswith("tests/") and "::" in line]
    return list(dict.fromkeys(modules))


def test_the_named_modules_start_first_in_their_order():
    modules = end_to_end_modules_in_collection_order()
    assert modules[:len(STARTS_FIRST)] == list(STARTS_FIRST)


def test_pytest_xdist_is_told_to_keep_the_order():
    config = SimpleNamespace(option=SimpleNamespace(loadscopereorder=True))
    pytest_configure(config)
    assert config.option.loadscopereorder is False
