"""The Python API's reruns reuse only what was made for the same input: optim.run's completed
builds (search.run's chunks: tests/test_search.py)."""

import logging
import shutil

import pytest

from geko_lib import optim
from geko_lib.platforms import sim
from geko_lib.schemas import GemmConfig, GemmType
from geko_lib.tuning import build_dir as build_dirs, ga

BBS_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "f32_r")


@pytest.fixture
def tuned(tmp_path, monkeypatch):
    """One tuning YAML run once by optim.run on sim; the platform optimize calls so far."""
    monkeypatch.setattr(ga.GAConfig, "n_gen", 2)
    record, real = tmp_path / "optimize_calls", sim.SimPlatform.optimize

    def counting(self, tuning_yaml, build, device):
        # a file, not a list: the tuning job runs in a child process (its stall watchdog's)
        with open(record, "a") as handle:
            handle.write(f"{tuning_yaml.name}\n")
        return real(self, tuning_yaml, build, device)

    def calls() -> list[str]:
        return record.read_text().split() if record.exists() else []

    monkeypatch.setattr(sim.SimPlatform, "optimize", counting)
    out = tmp_path / "optimizations"
    (yaml_path,) = optim.configure(gemm_configs=[GemmConfig(BBS_TN, [[256, 128, 1, 64]])],
                                   output_dir=out, arch="gfx950", platform="sim")

    def run():
        return optim.run(tuning_dir=out, devices=[0], n_slots=1, platform="sim",
                         lock_dir=str(tmp_path / "locks"))

    (logic,) = run()
    assert calls() == [yaml_path.name] and (logic / "provenance.json").is_file()
    return run, calls, yaml_path, logic


def test_a_completed_build_of_the_same_tuning_yaml_is_reused(tuned):
    run, calls, _, logic = tuned
    assert run() == [logic] and len(calls()) == 1


def test_an_edited_tuning_yaml_is_tuned_again_from_scratch(tuned, caplog):
    run, calls, yaml_path, logic = tuned
    # the review step of the original's workflow: a tuning YAML edited after a first run
    yaml_path.write_text(yaml_path.read_text() + "# reviewed\n")
    with caplog.at_level(logging.INFO):
        assert run() == [logic]
    assert len(calls()) == 2 and "tuned again" in caplog.text
    assert run() == [logic] and len(calls()) == 2  # and that result is reused in turn


def test_a_library_edited_by_hand_is_not_returned_as_tuned(tuned):
    run, calls, _, logic = tuned
    library = next(logic.glob("*.yaml"))
    library.write_text(library.read_text().replace("MatrixInstruction", "MatrixInstructio"))
    run()
    assert len(calls()) == 2
    assert "MatrixInstructio:" not in next(logic.glob("*.yaml")).read_text()


def one_matrix_instruction(text: str) -> str:
    """A tuning YAML narrowed at review to its first MatrixInstruction: another search space."""
    kept, seen = [], 0
    for line in text.splitlines(keepends=True):
        seen += "MatrixInstruction: [" in line
        if "MatrixInstruction: [" not in line or seen == 1:
            kept.append(line)
    return "".join(kept)


def test_an_interrupted_build_of_an_edited_tuning_yaml_starts_over(tuned, caplog):
    run, calls, yaml_path, logic = tuned
    shutil.rmtree(logic)  # interrupted after the GA's checkpoint, before its library
    assert build_dirs.build_state(logic.parent) == "resumable"
    narrowed = one_matrix_instruction(yaml_path.read_text())
    assert narrowed.count("MatrixInstruction: [") == 1
    yaml_path.write_text(narrowed)
    with caplog.at_level(logging.INFO):
        # the old checkpoint is another search space's: resumed, the GA refuses it
        assert run() == [logic]
    assert len(calls()) == 2 and "starting over" in caplog.text
    assert any(logic.glob("*.yaml"))
