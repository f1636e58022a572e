"""The same campaign ships the same library, byte for byte: final_libs/ of a sim search and a sim
tune campaign of the bundled mixed-types workload against the recorded ones
(tests/fixtures/golden/, SOURCES says what they are). A change of what ships must be intended:
regenerate them with GEKO_REGENERATE_GOLDEN=1 and say why in the commit."""

import os
import shutil

import pytest

from tests.conftest import FIXTURES

GOLDEN = FIXTURES / "golden"


@pytest.mark.parametrize("mode", ["search", "tune"])
def test_final_libs_are_the_recorded_ones_byte_for_byte(campaign, mode):
    run = campaign(mode=mode)
    run.snakemake("final_libs")
    shipped = {p.name: p.read_bytes() for p in run.path("final_libs").glob("*.yaml")}
    golden = GOLDEN / mode
    if os.environ.get("GEKO_REGENERATE_GOLDEN"):
        shutil.rmtree(golden, ignore_errors=True)
        golden.mkdir(parents=True)
        for name, data in shipped.items():
            (golden / name).write_bytes(data)
    recorded = {p.name: p.read_bytes() for p in golden.glob("*.yaml")}
    assert sorted(shipped) == sorted(recorded), "the same library files"
    different = [name for name in recorded if shipped[name] != recorded[name]]
    assert not different, f"library files that changed: {different}"
