"""A damaged GA checkpoint names its file and is recomputed (issue 16: "a truncated GA checkpoint
fails every rerun with a JSON error that names no file")."""

import json
import logging

import pytest

from geko_lib.tuning import ga

from .test_ga import Recorder, _same, rugged, small_space

OPTS = dict(pop_size=16, n_gen=6, seed=5)


def _checkpoint_after(tmp_path, generations):
    ckpt = tmp_path / "ga.json"
    with pytest.raises(KeyboardInterrupt):
        ga.run(small_space(), Recorder(rugged, die_at=generations), checkpoint=ckpt, **OPTS)
    return ckpt


def _cut_mid_row(text):
    return text[: len(text) // 2]


def _cut_at_a_line(text):
    lines = text.splitlines(keepends=True)
    return "".join(lines[: len(lines) // 2])


def _shape_edited(text):
    data = json.loads(text)
    data["individuals"] = data["individuals"][:-1] + [[1]]  # a row of the wrong width
    return json.dumps(data)


def _key_removed(text):
    data = json.loads(text)
    del data["rng"]
    return json.dumps(data)


@pytest.mark.parametrize("damage", [_cut_mid_row, _cut_at_a_line, _shape_edited, _key_removed, lambda t: ""],
                         ids=["cut-mid-row", "cut-at-line", "bad-shape", "missing-key", "empty"])
def test_damaged_checkpoint_is_named_set_aside_and_recomputed(tmp_path, caplog, damage):
    full = ga.run(small_space(), Recorder(rugged), **OPTS)
    ckpt = _checkpoint_after(tmp_path, 3)
    ckpt.write_text(damage(ckpt.read_text()))
    with caplog.at_level(logging.WARNING, logger="geko"):
        resumed = ga.run(small_space(), Recorder(rugged), checkpoint=ckpt, **OPTS)
    _same(full, resumed)  # seeded: starting over ends where an uninterrupted run does
    assert any(str(ckpt) in r.getMessage() and "damaged" in r.getMessage() for r in caplog.records)
    assert (tmp_path / "ga.json.damaged").exists()
    assert json.loads(ckpt.read_text())["generation"] == OPTS["n_gen"] - 1


def test_checkpoint_of_other_settings_is_refused_naming_the_file(tmp_path):
    ckpt = _checkpoint_after(tmp_path, 2)
    with pytest.raises(ga.GAError, match=f"{ckpt}: the checkpoint was written for another"):
        ga.run(small_space(), Recorder(rugged), checkpoint=ckpt, **{**OPTS, "seed": 6})
    ckpt.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ga.GAError, match=f"{ckpt}: not a GA checkpoint"):
        ga.run(small_space(), Recorder(rugged), checkpoint=ckpt, **OPTS)
    assert not (tmp_path / "ga.json.damaged").exists()
