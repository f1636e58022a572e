"""Fan-out audit (bench/bench_fanout.py) on a small 4-device sim campaign: no (device, slot) is
ever leased by two jobs at once, and the chunks spread over every device. No wall-clock asserts."""
import yaml

from .conftest import ROOT, load_bench

WORKLOAD = ROOT / "config" / "workloads" / "llama3_8b_serving.yaml"

fanout = load_bench("bench_fanout")


def test_audit_finds_overlaps_foreign_slots_and_unreleased_leases():
    ok = [{"job": "a", "device": 0, "slot": 0, "start": 0.0, "end": 1.0},
          {"job": "b", "device": 0, "slot": 0, "start": 1.0, "end": 2.0},
          {"job": "c", "device": 1, "slot": 0, "start": 0.5, "end": 1.5}]
    assert fanout.audit(ok, [0, 1]) == []
    assert fanout.busy_seconds(ok) == {0: 2.0, 1: 1.0}
    overlap = ok + [{"job": "d", "device": 1, "slot": 0, "start": 1.4, "end": 3.0}]
    (problem,) = fanout.audit(overlap, [0, 1])
    assert "held by c and d at once" in problem
    assert len(fanout.audit(ok, [0])) == 1  # device 1 is not configured
    assert len(fanout.audit(ok, [0, 1], n_slots=0)) == 3
    unreleased = ok + [{"job": "e", "device": 0, "slot": 0, "start": 5.0, "end": None}]
    assert fanout.audit(unreleased, [0, 1]) == ["e: device 0 slot 0 never freed"]
    assert fanout.ideal_makespan([4.0, 1.0, 1.0], 2) == 4.0
    assert fanout.ideal_makespan([2.0, 2.0, 2.0, 2.0], 2) == 4.0


def test_lease_lines_are_parsed_from_job_logs(tmp_path):
    logs = tmp_path / "logs" / "search"
    logs.mkdir(parents=True)
    (logs / "gemms_0-1.log").write_text(
        "GEKO:INFO [geko] leased sim device 2 slot 0 at 100.500\n"
        "GEKO:INFO [geko.progress] search gemms_0-1: 2/2\n"
        "GEKO:INFO [geko] freed sim device 2 slot 0 at 103.250\n")
    (logs / "gemms_2.log").write_text("GEKO:INFO [geko] leased sim device 1 slot 0 at 101.000\n")
    records = fanout.lease_intervals(tmp_path)
    assert records == [
        {"job": "search/gemms_0-1.log", "device": 2, "slot": 0, "start": 100.5, "end": 103.25},
        {"job": "search/gemms_2.log", "device": 1, "slot": 0, "start": 101.0, "end": None}]


def test_four_device_search_never_double_leases_and_uses_every_device(campaign, tmp_path):
    log = tmp_path / "eight.yaml"
    rows = yaml.safe_load(WORKLOAD.read_text())[:8]
    log.write_text(yaml.safe_dump(rows))
    # 4 chunks of 2 GEMMs; each holds its lease ~3 s, so the 4 jobs overlap however slowly
    # their interpreters start on a loaded machine
    c = campaign(workload_log=str(log), keep_thr=0.0, devices=[0, 1, 2, 3], n_slots=1,
                 search_chunk_size=2, sim={"search_seconds_per_gemm": 1.5})
    c.cores, c.resources = 4, ["gpu=4", "gpu_slot=4"]
    c.snakemake("search")
    records = fanout.lease_intervals(c.workdir)
    chunks = sorted(p.stem for p in c.path("search", "chunks").glob("*.yaml"))
    searched = [r for r in records if r["job"].startswith("search/")]
    assert len(chunks) >= 4 and len(searched) == len(chunks)
    assert fanout.audit(records, [0, 1, 2, 3]) == []
    assert {r["device"] for r in searched} == {0, 1, 2, 3}
    assert set(fanout.busy_seconds(searched)) == {0, 1, 2, 3}
