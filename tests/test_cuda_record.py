"""runtime.record: the mask-64 workload of what a torch program multiplies.

CPU tests drive the call -> BLAS problem mapping with stand-in tensors (shape, strides, dtype)
and read the written log back with geko's workload reader; the GPU test records a small real
model on the device."""
import pytest

from geko_lib import platforms, runtime, workload

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"

    def __eq__(self, other):
        return isinstance(other, FakeDtype) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


BF16 = FakeDtype("bfloat16")


class Fake:
    """A tensor as gemm_of_call sees one: shape, strides, dtype."""

    def __init__(self, shape, strides=None, dtype=BF16):
        self.shape = tuple(shape)
        if strides is None:  # packed row-major
            strides, step = [], 1
            for size in reversed(self.shape):
                strides.insert(0, step)
                step *= size
        self._strides = tuple(strides)
        self.dtype = dtype

    def dim(self):
        return len(self.shape)

    def stride(self):
        return self._strides

    @property
    def T(self):
        return Fake(self.shape[::-1], self._strides[::-1], self.dtype)


def test_linear_is_tn_with_tokens_as_n():
    # y = x W^T, x (2, 8, 4096) tokens, W (6144, 4096): BLAS M = 6144, N = 16, K = 4096
    problem = runtime.gemm_of_call("linear", (Fake((2, 8, 4096)), Fake((6144, 4096))))
    assert (problem.m, problem.n, problem.batch, problem.k) == (6144, 16, 1, 4096)
    assert (problem.type.transA, problem.type.transB) == ("T", "N")
    assert problem.type.a_type == "bf16_r" and problem.type.log_compute_type == "c_f32_r"


def test_matmul_layouts_and_batches():
    x, y = Fake((32, 64)), Fake((64, 128))
    nn = runtime.gemm_of_call("matmul", (x, y))
    assert (nn.m, nn.n, nn.k, nn.type.transA, nn.type.transB) == (128, 32, 64, "N", "N")
    tt = runtime.gemm_of_call("mm", (Fake((64, 32)).T, Fake((128, 64)).T))
    assert (tt.type.transA, tt.type.transB) == ("T", "T")
    batched = runtime.gemm_of_call("bmm", (Fake((4, 3, 32, 64)), Fake((4, 3, 64, 128))))
    assert (batched.m, batched.n, batched.batch, batched.k) == (128, 32, 12, 64)
    addmm = runtime.gemm_of_call("addmm", (Fake((128,)), x, y))
    assert (addmm.m, addmm.n, addmm.k) == (128, 32, 64)
    # vectors, broadcast batches and mixed types are not GEMMs geko tunes
    assert runtime.gemm_of_call("matmul", (Fake((64,)), y)) is None
    assert runtime.gemm_of_call("matmul", (Fake((4, 32, 64)), Fake((1, 64, 128)))) is None
    assert runtime.gemm_of_call("matmul", (x, Fake((64, 128), dtype=FakeDtype("float16")))) \
        is None


def test_recorder_writes_a_log_geko_reads(tmp_path):
    rec = runtime.Recorder()
    x, w = Fake((16, 4096)), Fake((4096, 4096))
    for _ in range(3):
        rec.see("linear", (x, w))
    rec.see("linear", (Fake((1, 4096)), Fake((14336, 4096))))
    f32 = FakeDtype("float32")
    rec.see("matmul", (Fake((8, 64), dtype=f32), Fake((64, 32), dtype=f32)), tf32=True)
    rec.see("matmul", (Fake((64,)), Fake((64, 32))))
    assert rec.skipped == {"matmul": 1}
    path = rec.write(tmp_path / "log.yaml")
    assert path.read_text().startswith("- {function: matmul, M: 4096, N: 16, K: 4096")
    rows = {(r["M"], r["N"], r["K"]): r
            for r in workload.read(path, support=ANY).to_dict("records")}
    assert rows[(4096, 16, 4096)]["call_count"] == 3
    assert rows[(14336, 1, 4096)]["call_count"] == 1
    assert rows[(4096, 16, 4096)]["lda"] == 4096 and rows[(14336, 1, 4096)]["ldc"] == 14336
    assert rows[(32, 8, 64)]["compute_type"] == "c_xf32_r"


@pytest.mark.gpu
def test_gpu_record_a_small_model(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(),
                                torch.nn.Linear(1024, 256, bias=False))
    model = model.cuda().to(torch.bfloat16)
    q = torch.randn(4, 64, 32, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad(), runtime.record(tmp_path / "log.yaml") as seen:
        for tokens in (8, 8, 8, 32):
            model(torch.randn(tokens, 512, device="cuda", dtype=torch.bfloat16))
        scores = q @ q.transpose(1, 2)  # a batched NT product
        torch.mm(scores[0], scores[1])
    rows = {(r["M"], r["N"], r["batch_count"], r["K"]): r
            for r in workload.read(tmp_path / "log.yaml", support=ANY).to_dict("records")}
    assert rows[(1024, 8, 1, 512)]["call_count"] == 3
    assert rows[(256, 8, 1, 1024)]["call_count"] == 3
    assert rows[(1024, 32, 1, 512)]["call_count"] == 1
    assert (rows[(1024, 8, 1, 512)]["transA"], rows[(1024, 8, 1, 512)]["transB"]) == ("T", "N")
    batched = rows[(64, 64, 4, 32)]
    assert (batched["transA"], batched["transB"]) == ("T", "N")
    assert rows[(64, 64, 1, 64)]["call_count"] == 1
    assert sum(seen.counts.values()) == 10 and not seen.skipped
