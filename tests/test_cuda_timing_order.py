"""timing.time_side_by_side times every variant's replay right after an untimed replay of the
same variant (``settle``): on the H200 the replay that followed another variant's ran 1.5-3.5%
slower (bench/timing_position.py, bench/RESULTS.md), which favoured every variant but the one
after the round's last. No GPU: the replays and the timer are stand-ins that record the order
in which they ran."""
import types

from geko_lib.platforms.cuda import timing


def fake_side_by_side(monkeypatch, n_variants, settle):
    ran = []  # (variant, timed) in the order the replays ran
    timing_now = {"on": False}

    def prepare(calls, target_us=2000.0, use_graph=True):
        index = calls[0]

        def run():
            ran.append((index, timing_now["on"]))
        return timing.Prepared(run, calls=1, graph=True)

    def time_region(run):
        timing_now["on"] = True
        run()
        timing_now["on"] = False
        return 1.0

    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None))
    monkeypatch.setattr(timing, "prepare", prepare)
    monkeypatch.setattr(timing, "_time_region", time_region)
    monkeypatch.setattr(timing, "torch", lambda: fake_torch)
    out = timing.time_side_by_side([[i] for i in range(n_variants)], repeats=3, warmup=1,
                                   settle=settle)
    return ran, out


def test_every_timed_replay_follows_a_replay_of_the_same_variant(monkeypatch):
    ran, out = fake_side_by_side(monkeypatch, 3, settle=True)
    timed = [i for i, (variant, on) in enumerate(ran) if on]
    assert len(timed) == 3 * 3 and len(out) == 3
    for i in timed:
        assert i > 0 and ran[i - 1] == (ran[i][0], False)
    # still interleaved: each round visits every variant once, each round starting one later
    assert [ran[i][0] for i in timed] == [0, 1, 2, 1, 2, 0, 2, 0, 1]


def test_without_settle_a_timed_replay_follows_another_variant(monkeypatch):
    ran, _ = fake_side_by_side(monkeypatch, 2, settle=False)
    timed = [i for i, (_, on) in enumerate(ran) if on]
    assert any(ran[i - 1][0] != ran[i][0] for i in timed)


def test_the_read_floor_kernel_compiles_for_sm90_and_reads_every_element():
    import pytest

    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget

    kernel = timing._read_kernel()
    src = triton.compiler.ASTSource(fn=kernel, signature={"src_ptr": "*bf16", "out_ptr": "*fp32",
                                                          "n": "i32", "BLOCK": "constexpr"},
                                    constexprs={"BLOCK": timing.READ_BLOCK})
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"]
    # every thread loads its share of the 8 KB block (evict-first) and the sum is stored
    assert "ld.global.L1::evict_first" in ptx and "st.global" in ptx
