"""The library under torch.compile (issue 30): ``patch_linear`` gives dynamo the custom op
``geko::linear`` instead of the Python dispatch, so ``torch.compile(model, fullgraph=True)``
compiles without graph breaks and the compiled model's linears run the library. On a CPU with
a stand-in kernel (the op, its fake implementation, the dispatch); on a GPU (``gpu``) with the
cluster split-K CUDA kernel of a real library, compiled by inductor and under CUDA graphs."""
import pytest

from geko_lib import runtime

torch = pytest.importorskip("torch")

TOKENS, IN, OUT = 16, 512, 256


def model_and_input(device="cpu"):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(IN, OUT, bias=False), torch.nn.ReLU(),
                                torch.nn.Linear(OUT, OUT)).to(device, torch.bfloat16)
    return model, torch.randn(TOKENS, IN, device=device, dtype=torch.bfloat16)


class StandIn:
    """The cuda platform's stand-in: its 'kernel' is torch's matmul, and it counts the calls."""

    def __init__(self):
        self.ran = []

    def operand_launcher(self, solution, problem, device):
        def launch(x, y, d):
            self.ran.append(problem.name)
            d.copy_(x @ y)
        return launch


def test_a_compiled_model_runs_its_linears_through_the_library_without_graph_breaks(
        monkeypatch):
    model, x = model_and_input()
    first = model[0]
    problem = runtime.blas_problem(x, first.weight.t())
    rt = runtime.Runtime({(problem.type, problem.size): {"Backend": "triton",
                                                         "SolutionNameMin": "stand-in"}},
                         eager="library")
    platform = StandIn()
    monkeypatch.setattr(rt, "_platform", lambda: platform)
    torch._dynamo.reset()
    with rt.patch_linear(), torch.no_grad():  # serving: inference (the op has no backward)
        compiled = torch.compile(model, fullgraph=True, backend="aot_eager")  # breaks raise
        out = compiled(x)
        again = compiled(x)
    with torch.no_grad():
        ref = model(x)
    assert torch.allclose(out.float(), ref.float(), rtol=2e-2, atol=2e-2)
    assert torch.equal(out, again)
    assert platform.ran == [problem.name, problem.name]  # the library's GEMM, once a call
    cov = rt.coverage()
    assert cov["hits"] == 2 and cov["misses"] == 2  # the second linear is not in the library


def test_the_custom_op_has_a_fake_implementation_for_tracing():
    from torch._subclasses.fake_tensor import FakeTensorMode

    op = runtime.compiled_linear_op()
    assert op is runtime.compiled_linear_op()  # registered once per process
    with FakeTensorMode():
        x = torch.empty(3, 5, IN, dtype=torch.bfloat16)
        w = torch.empty(OUT, IN, dtype=torch.bfloat16)
        out = torch.ops.geko.linear(x, w, None, 0)
    assert tuple(out.shape) == (3, 5, OUT) and out.dtype == torch.bfloat16


def test_eager_calls_under_the_patch_skip_the_op(monkeypatch):
    model, x = model_and_input()
    rt = runtime.Runtime({}, eager="library")
    with rt.patch_linear():
        monkeypatch.setattr(torch.ops.geko, "linear", lambda *a: pytest.fail("op called"),
                            raising=False)
        out = model(x)  # eager: the runtime's own dispatch (here torch's F.linear, a miss)
    assert torch.equal(out, model(x)) and rt.coverage()["misses"] == 2


def _gpu_ready() -> bool:
    if not torch.cuda.is_available():
        return False
    from geko_lib.platforms.cuda import cluster_gemm

    return cluster_gemm.available()


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_ready(), reason="needs a GPU, cuda.core and NVRTC")
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_gpu_compiled_model_runs_the_cluster_kernel(mode, tmp_path):
    from geko_lib.platforms.cuda import cluster_gemm as cg
    from geko_lib.platforms.cuda import combine, timing, tune

    model, x = model_and_input("cuda")
    problem = runtime.blas_problem(x, model[0].weight.t())
    cfg = cg.ClusterConfig(2, 1, 1, 2, 128, 4, 4)
    assert cg.infeasible_reason(cfg, problem) is None
    combine.write([(problem, tune.solution_of(cfg), 1.0)], tmp_path / "lib")
    rt = runtime.load(tmp_path / "lib", eager="library")
    torch._dynamo.reset()
    with rt.patch_linear(), torch.no_grad():
        compiled = torch.compile(model, fullgraph=True, mode=mode)
        for _ in range(3):
            out = compiled(x).clone()
        ref = model(x)
    assert timing.relative_error(out, ref.float()) < 1e-2
    assert rt.coverage()["hits"] >= 1
