"""The runtime loader says when eager use loses (issue 23: a tuned call dispatched outside a
CUDA graph pays its host time, and an eager decode step is bound by host time): it measures the
host time of eager tuned calls, reports it in coverage(), warns once with the measured figure,
and ``eager="torch"`` sends eager calls to torch while captured ones run the library. Driven
through Runtime.matmul with stand-ins for torch, its tensors and the platform, so it runs
without a GPU; the kernel launch itself is the GPU tests' part (test_runtime_plans.py)."""

import logging
import sys
import types

import pytest

from geko_lib import runtime


class Tensor:
    """What Runtime.matmul reads of a torch tensor: a packed row-major bf16 matrix."""

    dtype = "torch.bfloat16"
    device = "cuda:0"

    def __init__(self, rows, cols):
        self.shape = (rows, cols)

    def dim(self):
        return 2

    def stride(self):
        return (self.shape[1], 1)

    def __matmul__(self, other):
        return "torch"

    def new_empty(self, shape):
        return "library"


class Platform:
    """The cuda platform's stand-in: every prepared launch records that the library ran."""

    def __init__(self):
        self.ran = []

    def operand_launcher(self, solution, problem, device):
        return lambda x, y, d: self.ran.append(problem.name)


class Clock:
    """time.perf_counter advancing 5 us per reading: every timed call takes 5 us."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 5e-6
        return self.now


def _runtime(monkeypatch, eager="warn", capturing=False):
    state = {"capturing": capturing}
    torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(is_current_stream_capturing=lambda: state["capturing"]))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(runtime.time, "perf_counter", Clock())
    x, y = Tensor(4, 64), Tensor(64, 128)
    problem = runtime.blas_problem(x, y)
    rt = runtime.Runtime({(problem.type, problem.size): {"Backend": "cublaslt"}}, eager=eager)
    rt._cuda = Platform()
    return rt, x, y, state


def _eager_warnings(caplog):
    return [r for r in caplog.records if "eager calls of tuned GEMMs" in r.getMessage()]


def test_eager_tuned_calls_are_counted_timed_and_warned_about_once(monkeypatch, caplog):
    rt, x, y, _ = _runtime(monkeypatch)
    calls = runtime.EAGER_SAMPLE + 10
    with caplog.at_level(logging.WARNING):
        assert {rt.matmul(x, y) for _ in range(calls)} == {"library"}
    cov = rt.coverage()
    assert cov["eager_calls"] == calls and cov["hits"] == calls and cov["eager"] == "warn"
    # a signature's first call builds its plan: one-time work, left out of the mean
    assert cov["eager_us_per_call"] == pytest.approx(5.0)
    warnings = _eager_warnings(caplog)
    assert len(warnings) == 1, "said once, not per call"
    text = warnings[0].getMessage()
    assert f"{runtime.EAGER_SAMPLE} eager calls of tuned GEMMs, run by the library, took " \
           "5.0 us of host time each" in text
    assert "CUDA graph" in text and "eager='torch'" in text


def test_no_warning_before_enough_calls_were_measured(monkeypatch, caplog):
    rt, x, y, _ = _runtime(monkeypatch)
    assert "none measured yet" in rt.eager_note() and "115-335 us" in rt.eager_note()
    assert rt.coverage()["eager_us_per_call"] is None
    with caplog.at_level(logging.WARNING):
        for _ in range(runtime.EAGER_SAMPLE):  # the first is not measured
            rt.matmul(x, y)
    assert not _eager_warnings(caplog)
    assert "took 5.0 us of host time each" in rt.eager_note()


def test_calls_under_cuda_graph_capture_are_not_eager(monkeypatch, caplog):
    rt, x, y, _ = _runtime(monkeypatch, capturing=True)
    with caplog.at_level(logging.WARNING):
        for _ in range(runtime.EAGER_SAMPLE + 2):
            assert rt.matmul(x, y) == "library"
    cov = rt.coverage()
    assert cov["eager_calls"] == 0 and cov["eager_us_per_call"] is None
    assert cov["hits"] == runtime.EAGER_SAMPLE + 2
    assert not _eager_warnings(caplog)


def test_eager_torch_sends_eager_calls_to_torch_and_captured_ones_to_the_library(
        monkeypatch, caplog):
    rt, x, y, state = _runtime(monkeypatch, eager="torch")
    with caplog.at_level(logging.WARNING):
        # the first eager call of a signature runs the library: its kernel is compiled and
        # its workspace allocated outside any capture
        assert rt.matmul(x, y) == "library"
        assert [rt.matmul(x, y) for _ in range(runtime.EAGER_SAMPLE + 1)] == \
            ["torch"] * (runtime.EAGER_SAMPLE + 1)
        state["capturing"] = True
        assert rt.matmul(x, y) == "library"
    assert len(rt._cuda.ran) == 2
    cov = rt.coverage()
    # a tuned GEMM is a hit whoever ran it; the measured mean is torch's dispatch
    assert cov["hits"] == runtime.EAGER_SAMPLE + 3 and cov["misses"] == 0
    assert cov["eager_calls"] == runtime.EAGER_SAMPLE + 2 and cov["eager"] == "torch"
    assert cov["eager_us_per_call"] == pytest.approx(5.0)
    assert "run by torch (eager='torch')" in rt.eager_note()
    assert not _eager_warnings(caplog), "the user chose torch: nothing to warn about"


def test_eager_library_serves_the_library_without_a_warning(monkeypatch, caplog):
    rt, x, y, _ = _runtime(monkeypatch, eager="library")
    with caplog.at_level(logging.WARNING):
        assert {rt.matmul(x, y) for _ in range(runtime.EAGER_SAMPLE + 5)} == {"library"}
    assert rt.coverage()["eager_us_per_call"] == pytest.approx(5.0)
    assert not _eager_warnings(caplog)


def test_an_unknown_eager_policy_is_refused():
    with pytest.raises(ValueError, match="eager='fast': one of warn, library, torch"):
        runtime.Runtime({}, eager="fast")
