"""The runtime's per-signature plans (issue 23: an eager rt.linear call re-did, on every call,
the work that depends only on the operands' shapes, strides, dtypes and device, and cost
49-335 us of host time). A signature is looked up and prepared once; a later call passes only
the operands' addresses. The CPU tests drive the cache, the prepared cuBLASLt call and the
prepared Triton launch (the real ``launcher`` and ``_call`` of every template family, with
stand-in tensors and kernels); the GPU test checks the results against F.linear, across
operand addresses and a CUDA graph replay."""

import sys
import types

import numpy as np
import pytest

from geko_lib import runtime
from geko_lib.gemm import GemmProblem, GemmType

BF16_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
DECODE = GemmProblem(BF16_TN, 1024, 16, 1, 4096)  # x (16 x 4096) @ W (1024 x 4096)^T


# --- the cache ----------------------------------------------------------------------------------

class Tensor:
    """What Runtime.matmul reads of a torch tensor; ``@`` is torch's fallback."""

    dtype = "torch.bfloat16"
    device = "cuda:0"

    def __init__(self, rows, cols, ptr=0x10000):
        self.shape, self.ptr = (rows, cols), ptr

    def dim(self):
        return 2

    def stride(self):
        return (self.shape[1], 1)

    def t(self):
        view = Tensor(self.shape[1], self.shape[0], self.ptr)
        view.stride = lambda: (1, self.shape[1])
        return view

    def __matmul__(self, other):
        return "torch"

    def new_empty(self, shape):
        return ("d", tuple(shape))


class Platform:
    """The cuda platform's stand-in: counts the launches it prepares and what they ran on."""

    def __init__(self):
        self.prepared, self.ran = [], []

    def operand_launcher(self, solution, problem, device):
        self.prepared.append(problem.name)
        return lambda x, y, d: self.ran.append((problem.name, x.ptr, y.ptr))


def _runtime(monkeypatch, problems):
    torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(is_current_stream_capturing=lambda: True),
        _C=types.SimpleNamespace(_nn=types.SimpleNamespace(linear=lambda x, w, b: "F.linear")))
    monkeypatch.setitem(sys.modules, "torch", torch)
    rt = runtime.Runtime({(p.type, p.size): {"Backend": "triton"} for p in problems})
    rt._cuda = Platform()
    return rt


def test_a_signature_is_looked_up_and_prepared_once(monkeypatch):
    rt = _runtime(monkeypatch, [DECODE])
    looked_up = []
    real = runtime.blas_problem
    monkeypatch.setattr(runtime, "blas_problem", lambda x, y: looked_up.append(1) or real(x, y))
    w = Tensor(1024, 4096, ptr=0x90000)
    outs = [rt.linear(Tensor(16, 4096, ptr=0x10000 * (i + 1)), w) for i in range(3)]
    assert outs == [("d", (16, 1024))] * 3
    assert rt._cuda.prepared == [DECODE.name], "prepared on the first call only"
    # every call ran on its own operands (the addresses are the one thing passed per call)
    assert rt._cuda.ran == [(DECODE.name, 0x10000 * (i + 1), 0x90000) for i in range(3)]
    for _ in range(3):  # a GEMM the library does not hold: looked up once too, torch's F.linear
        assert rt.linear(Tensor(7, 4096), w) == "F.linear"
    assert len(looked_up) == 2
    cov = rt.coverage()
    assert cov["hits"] == 3 and cov["misses"] == 3
    assert cov["missed_shapes"] == {GemmProblem(BF16_TN, 1024, 7, 1, 4096).name: 3}


def test_a_launch_that_reads_the_weight_as_stored_gets_it_without_a_transposed_view(
        monkeypatch):
    """rt.linear hands F.linear's weight to a launch's ``linear`` as it is: no ``w.t()``
    view per call (2.1 us of an eager hit on one H100); a launch without one gets the view."""
    rt = _runtime(monkeypatch, [DECODE])
    by_weight = []
    launch = lambda x, y, d: pytest.fail("the launch by views ran")  # noqa: E731
    launch.linear = lambda x, w, d: by_weight.append((x.ptr, w.ptr, d))
    rt._cuda.operand_launcher = lambda solution, problem, device: launch
    w = Tensor(1024, 4096, ptr=0x90000)
    rt.linear(Tensor(16, 4096), w)  # the plan: blas_problem reads w.t() once
    w.t = lambda: pytest.fail("a transposed view made per call")
    assert rt.linear(Tensor(16, 4096, ptr=0x20000), w) == ("d", (16, 1024))
    assert by_weight[-1] == (0x20000, 0x90000, ("d", (16, 1024)))


def test_each_signature_has_its_own_plan(monkeypatch):
    other = GemmProblem(BF16_TN, 1024, 1, 1, 4096)
    rt = _runtime(monkeypatch, [DECODE, other])
    w = Tensor(1024, 4096)
    for tokens in (16, 1, 16, 1):
        rt.linear(Tensor(tokens, 4096), w)
    assert rt._cuda.prepared == [DECODE.name, other.name]
    assert rt.matmul(Tensor(16, 4096), Tensor(4096, 1024)) == "torch"  # NN: not held
    assert rt.coverage()["hits"] == 4 and rt.coverage()["misses"] == 1


def test_linear_and_matmul_of_one_shape_are_separate_plans(monkeypatch):
    square = GemmProblem(BF16_TN, 4096, 16, 1, 4096)
    rt = _runtime(monkeypatch, [square])
    x, w = Tensor(16, 4096), Tensor(4096, 4096)
    assert rt.matmul(x, w) == "torch"  # x @ w: NN, not held
    assert rt.linear(x, w) == ("d", (16, 4096))  # x @ w^T: TN, held
    assert rt.matmul(x, w.t()) == ("d", (16, 4096))
    assert rt._cuda.prepared == [square.name] * 2


def test_unsupported_operands_fall_through_to_torch_as_before(monkeypatch):
    rt = _runtime(monkeypatch, [DECODE])
    x = Tensor(16, 4096)
    x.dim = lambda: 3
    assert rt.matmul(x, Tensor(4096, 1024)) == "torch"
    assert rt.coverage()["missed_shapes"] == {runtime.UNSUPPORTED: 1}


# --- the prepared cuBLASLt call -----------------------------------------------------------------

def test_the_prepared_cublaslt_call_passes_only_the_addresses_per_call(monkeypatch):
    from geko_lib.platforms.cuda import cublaslt

    calls = []
    monkeypatch.setattr(cublaslt, "lt", lambda: types.SimpleNamespace(
        matmul=lambda *args: calls.append(args)))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 7000 + device),
        cuda=types.SimpleNamespace(current_device=lambda: 1)))
    desc = object.__new__(cublaslt.ProblemDescriptors)  # the descriptors cuBLASLt would make
    desc.handle, desc.desc, desc.layouts = 11, 12, [21, 22, 23, 24]
    workspace = types.SimpleNamespace(data_ptr=lambda: 0x5000, numel=lambda: 4096)
    algo = np.zeros(64, dtype=np.uint8)
    launch = desc.prepared(algo, workspace)
    launch(0xA0, 0xB0, 0xD0)
    launch(0xA1, 0xB1, 0xD1)
    first, second = calls
    # handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, ws, size, stream
    assert first[:3] == (11, 12, second[2]) and first[4] == 21 and first[6] == 22
    assert (first[3], first[5], first[8], first[10]) == (0xA0, 0xB0, 0xD0, 0xD0)
    assert (second[3], second[5], second[8], second[10]) == (0xA1, 0xB1, 0xD1, 0xD1)
    assert first[9] == 23 and first[11] == 24 and first[12] == algo.ctypes.data
    assert first[13:] == (0x5000, 4096, 7001), "workspace, and the current device's stream"


def test_the_platform_gives_cublaslt_b_as_x_and_a_as_y(monkeypatch):
    from geko_lib.platforms.cuda import platform as cp

    seen = []
    lt = types.SimpleNamespace(prepared=lambda algo, ws: lambda a, b, d: seen.append((a, b, d)))
    monkeypatch.setattr(cp.CudaPlatform, "_cublaslt_algo", lambda *args: (lt, "algo", "ws"))
    launch = cp.CudaPlatform(cp.SearchSettings()).operand_launcher(
        {"Backend": "cublaslt"}, DECODE, 0)
    x, y, d = (types.SimpleNamespace(data_ptr=lambda v=v: v) for v in (0x10, 0x20, 0x30))
    launch(x, y, d)
    launch.linear(x, y, d)  # F.linear's weight has y = w^T's address: the same call
    assert seen == [(0x20, 0x10, 0x30)] * 2


# --- the prepared Triton launch -----------------------------------------------------------------

class View:
    """A strided view at an address: what ``launcher`` and PreparedLaunch read of a tensor."""

    dtype = types.SimpleNamespace(itemsize=2)  # bf16
    device = "cuda:0"

    def __init__(self, ptr, shape, strides):
        self.ptr, self.shape, self._strides = ptr, tuple(shape), tuple(strides)

    def data_ptr(self):
        return self.ptr

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def transpose(self, i, j):
        shape, strides = list(self.shape), list(self._strides)
        shape[i], shape[j], strides[i], strides[j] = shape[j], shape[i], strides[j], strides[i]
        return View(self.ptr, shape, strides)

    def t(self):
        return self.transpose(0, 1)

    T = property(t)

    def unsqueeze(self, dim):
        assert dim == 0
        return View(self.ptr, (1, *self.shape), (self.shape[0] * self._strides[0],
                                                 *self._strides))

    def __getitem__(self, index):
        assert index == 0
        return View(self.ptr, self.shape[1:], self._strides[1:])


def operands(base):
    """x (16 x 4096), y = W^T (W 1024 x 4096 as stored) and D_mem (16 x 1024) at ``base``."""
    w = View(base + 0x100000, (1024, 4096), (4096, 1))
    return View(base, (16, 4096), (4096, 1)), w.t(), View(base + 0x200000, (16, 1024), (1024, 1))


class Kernel:
    """A JIT kernel's stand-in with the real kernel's parameter names; launches are logged."""

    def __init__(self, arg_names, log):
        self.arg_names, self.log = arg_names, log

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.log.append(("jit", grid, args, kwargs))
            return _compiled(self.log)
        return run


def _compiled(log):
    """A compiled kernel's stand-in (PreparedLaunch launches CompiledKernel instances)."""
    from triton.compiler import CompiledKernel

    class Compiled(CompiledKernel):
        def __init__(self):
            pass

        def __getitem__(self, grid):
            return lambda *args: log.append(("direct", grid, args, {}))

    return Compiled()


@pytest.fixture
def kernels(monkeypatch):
    """triton_gemm with stand-in kernels, workspace and SM count; the launch log and a count
    of the feasibility checks."""
    pytest.importorskip("triton")
    from geko_lib.platforms.cuda import triton_gemm as tg

    real = tg._jit()  # wrapping the kernels needs no GPU
    log, checks = [], []
    monkeypatch.setattr(tg, "_jit", lambda: {name: Kernel(k.arg_names, log)
                                             for name, k in real.items()})
    monkeypatch.setattr(tg, "_workspace", lambda device, numel, dtype, zero: View(
        0x9000000 if dtype == "float32" else 0x9800000, (numel,), (1,)))
    monkeypatch.setattr(tg, "num_sms", lambda device: 132)
    feasible = tg.infeasible_reason
    monkeypatch.setattr(tg, "infeasible_reason",
                        lambda *args: checks.append(args[0].name) or feasible(*args))
    return tg, log, checks


def _plain(arg):
    """An argument as a comparable value: tensors by address, TMA descriptors by fields."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    if isinstance(arg, TensorDescriptor):
        return ("desc", arg.base.data_ptr(), list(arg.shape), list(arg.strides),
                list(arg.block_shape))
    return ("tensor", arg.data_ptr()) if isinstance(arg, View) else arg


TRITON_CONFIGS = [  # one feasible config of DECODE per kind of argument list
    ("tiled", 16, 32, 64, 8, 1, 4, 3), ("splitk", 16, 32, 64, 8, 2, 4, 3),
    ("persistent_tma", 16, 32, 64, 8, 1, 4, 3), ("decode_fma", 4, 8, 256, 1, 2, 4, 3),
    ("decode_mmaw", 16, 64, 128, 1, 2, 4, 3), ("decode_tma", 16, 64, 128, 1, 1, 4, 3),
    ("decode_tma_atomic", 16, 64, 128, 1, 4, 4, 3)]


@pytest.mark.parametrize("params", TRITON_CONFIGS, ids=lambda p: p[0])
def test_a_prepared_triton_launch_passes_what_launcher_would(kernels, params):
    """Every call of a PreparedLaunch hands the kernel what a fresh ``launcher`` builds for the
    same operands; the checks run once; from the third call on the compiled kernel is launched
    directly, with the constexprs in the kernel's parameter order."""
    from geko_lib.platforms.cuda.timing import Operands

    tg, log, checks = kernels
    cfg = tg.TritonConfig(*params)
    launch = tg.PreparedLaunch(cfg, DECODE)
    paths = []
    for base in (0x1000000, 0x2000000, 0x3000000, 0x4000000):
        x, y, d = operands(base)
        _, grid, args, kwargs = tg.launcher(cfg, Operands.from_rows(DECODE, x, y, d)).parts
        del checks[:]
        launch(x, y, d)
        assert len(checks) == (1 if base == 0x1000000 else 0), "checked once"
        path, got_grid, got_args, got_kwargs = log[-1]
        paths.append(path)
        if path == "jit":
            assert (got_grid, got_kwargs) == (grid, kwargs)
        else:  # the compiled kernel takes every parameter, constexprs too, and a 3-D grid
            assert got_grid == tuple(grid) + (1,) * (3 - len(grid))
            names = tg._jit()[cfg.template].arg_names
            args = (*args, *(kwargs[name] for name in names[len(args):]))
        assert [_plain(a) for a in got_args] == [_plain(a) for a in args]
    assert paths == ["jit", "jit", "direct", "direct"]
    first = {0x1000000, 0x1100000, 0x1200000}
    kept = [_plain(a) for a in launch.direct_tail if isinstance(_plain(a), tuple)]
    assert not [a for a in kept if a[1] in first], "the plan keeps no tensor of its first call"


def test_an_unaligned_operand_goes_through_triton_s_specialization(kernels):
    tg, log, _ = kernels
    launch = tg.PreparedLaunch(tg.TritonConfig(*TRITON_CONFIGS[0]), DECODE)
    for base in (0x1000000, 0x2000000, 0x3000000):
        launch(*operands(base))
    assert log[-1][0] == "direct"
    x, y, d = operands(0x4000000)
    launch(View(x.ptr + 2, x.shape, x.stride()), y, d)  # x[..., 1:]-like: not 16-byte aligned
    assert log[-1][0] == "jit" and _plain(log[-1][2][0]) == ("tensor", 0x4000002)


def test_a_triton_version_not_tested_keeps_triton_s_own_launch(kernels, monkeypatch):
    """The direct launch uses the compiled kernel's internal calling convention: only on the
    Triton versions whose GPU tests passed."""
    import triton

    tg, log, _ = kernels
    monkeypatch.setattr(triton, "__version__", "9.9.0")
    launch = tg.PreparedLaunch(tg.TritonConfig(*TRITON_CONFIGS[0]), DECODE)
    for base in (0x1000000, 0x2000000, 0x3000000, 0x4000000):
        launch(*operands(base))
    assert [entry[0] for entry in log[-4:]] == ["jit"] * 4


def test_operands_at_one_address_are_prepared_per_call(kernels):
    """x @ x.T: no address tells x from y, so every call runs ``launcher`` as before."""
    tg, log, checks = kernels
    launch = tg.PreparedLaunch(tg.TritonConfig("tiled", 16, 16, 64, 8, 1, 4, 3), GemmProblem(
        BF16_TN, 16, 16, 1, 4096))
    for _ in range(2):
        x = View(0x1000000, (16, 4096), (4096, 1))
        launch(x, x.t(), View(0x2000000, (16, 16), (16, 1)))
    assert [entry[0] for entry in log] == ["jit", "jit"] and len(checks) == 2


# --- on the GPU ---------------------------------------------------------------------------------

GPU_SOLUTIONS = ["cublaslt", "cuda", ("decode_mmaw", 16, 64, 128, 1, 2, 4, 3),
                 ("decode_tma_atomic", 16, 64, 128, 1, 4, 4, 3),
                 ("persistent_tma", 16, 32, 64, 8, 1, 4, 3)]


def _gpu_library(solution_kind, out_dir):
    """A library holding DECODE with one cuBLASLt solution (the heuristic's choice, stored as
    a tuned one), one cluster CUDA kernel or one Triton config."""
    from geko_lib.platforms.cuda import combine, cublaslt
    from geko_lib.platforms.cuda import triton_gemm as tg
    from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings

    if solution_kind == "cublaslt":
        with cublaslt.ProblemDescriptors(DECODE) as lt:
            cfg = lt.heuristic(1)[0][0]
        solution = CudaPlatform(SearchSettings()).cublaslt_solution(cfg, 0)
    elif solution_kind == "cuda":  # the cluster split-K CUDA C++ kernel (cluster_gemm.py)
        from geko_lib.platforms.cuda import cluster_gemm, tune

        solution = tune.solution_of(cluster_gemm.ClusterConfig(2, 1, 1, 2, 128, 4, 4))
    else:
        cfg = tg.TritonConfig(*solution_kind)
        solution = {"SolutionNameMin": cfg.name, "Backend": "triton",
                    "Triton": cfg.to_params()}
    combine.write([(DECODE, solution, 1.0)], out_dir)
    return out_dir


@pytest.mark.gpu
@pytest.mark.parametrize("solution_kind", GPU_SOLUTIONS,
                         ids=lambda s: s if isinstance(s, str) else s[0])
def test_gpu_plans_match_f_linear_across_addresses_and_graph_replays(solution_kind, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("nvmath")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from geko_lib.platforms.cuda import timing

    rt = runtime.load(_gpu_library(solution_kind, tmp_path / "lib"), eager="library")
    F = torch.nn.functional
    w = torch.randn(DECODE.m, DECODE.k, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):  # a new x each call: the plan is re-bound to its address
        x = torch.randn(DECODE.n, DECODE.k, device="cuda", dtype=torch.bfloat16)
        assert timing.relative_error(rt.linear(x, w), F.linear(x.float(), w.float())) < 1e-2
    static = torch.randn(DECODE.n, DECODE.k, device="cuda", dtype=torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = rt.linear(static, w)
    for _ in range(3):  # replays on new values (split-K counters are reset by every launch)
        static.copy_(torch.randn_like(static))
        graph.replay()
        torch.cuda.synchronize()
        assert timing.relative_error(out, F.linear(static.float(), w.float())) < 1e-2
    cov = rt.coverage()
    assert cov["hits"] == 4 and cov["misses"] == 0 and cov["eager_calls"] == 3
    assert cov["eager_us_per_call"] is not None


# --- the benchmark ------------------------------------------------------------------------------

def test_the_dispatch_benchmark_says_no_gpu_and_exits_0_without_one(monkeypatch, capsys):
    from .conftest import load_bench

    bench = load_bench("bench_runtime_dispatch")
    assert bench.parse_shape("16x8192x1024") == GemmProblem(BF16_TN, 1024, 16, 1, 8192)
    monkeypatch.setattr(bench, "gpu_available", lambda: False)
    assert bench.main([]) == 0
    assert capsys.readouterr().out == "no GPU\n"
