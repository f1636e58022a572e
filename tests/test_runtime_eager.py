"""The runtime loader says when eager use loses (issue 23: a tuned call dispatched outside a
CUDA graph costs tens of microseconds of Python, more than a decode GEMM gains). Driven through
Runtime.matmul with stand-ins for torch and its tensors, so it runs without a GPU; the kernel
launch itself is the GPU tests' part."""

import logging
import sys
import types

from geko_lib import runtime


class Tensor:
    """What blas_problem reads of a torch tensor: a packed row-major bf16 matrix."""

    dtype = "torch.bfloat16"

    def __init__(self, rows, cols):
        self.shape = (rows, cols)

    def dim(self):
        return 2

    def stride(self):
        return (self.shape[1], 1)


def _torch(capturing: bool):
    return types.SimpleNamespace(cuda=types.SimpleNamespace(
        is_current_stream_capturing=lambda: capturing))


def _runtime(monkeypatch, capturing):
    monkeypatch.setitem(sys.modules, "torch", _torch(capturing))
    x, y = Tensor(4, 64), Tensor(64, 128)
    problem = runtime.blas_problem(x, y)
    rt = runtime.Runtime({(problem.type, problem.size): {"Backend": "cublaslt"}})
    monkeypatch.setattr(rt, "_run", lambda *args: "tuned")
    return rt, x, y


def test_eager_tuned_calls_are_counted_and_the_first_one_warns(monkeypatch, caplog):
    rt, x, y = _runtime(monkeypatch, capturing=False)
    with caplog.at_level(logging.WARNING):
        assert [rt.matmul(x, y) for _ in range(3)] == ["tuned"] * 3
    assert rt.coverage()["eager_calls"] == 3 and rt.coverage()["hits"] == 3
    warnings = [r for r in caplog.records if "CUDA graph" in r.getMessage()]
    assert len(warnings) == 1, "said once, not per call"


def test_calls_under_cuda_graph_capture_are_not_eager(monkeypatch, caplog):
    rt, x, y = _runtime(monkeypatch, capturing=True)
    with caplog.at_level(logging.WARNING):
        rt.matmul(x, y)
    assert rt.coverage()["eager_calls"] == 0
    assert not [r for r in caplog.records if "CUDA graph" in r.getMessage()]
