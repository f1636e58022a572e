"""bench/tune_profile.py on a fake evaluator: the campaign's configure and optimize run, and
the tune's steps are timed by call path."""
import json

from .conftest import load_bench


def test_the_tune_profile_times_each_size_s_tuning_through_optimize(tmp_path):
    profile = load_bench("tune_profile")
    profile.main(["--out", str(tmp_path), "--gemms", "2", "--fake"])
    report = json.loads((tmp_path / "tune_profile.json").read_text())
    assert report["gemms"] == 2 and report["yamls"] == ["BBS_TN_0.yaml"]
    calls = {row["path"]: row["calls"] for row in report["paths"]}
    assert calls["_tune_one_size"] == 2 and calls["_tune_one_size/_pick_finalist"] == 2
    assert [row["yaml"] for row in report["per_yaml"]] == ["BBS_TN_0.yaml"]
    assert list((tmp_path / "build_BBS_TN_0" / "3_LibraryLogic").glob("*.yaml"))
