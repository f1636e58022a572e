"""PyTorch TunableOp files as a workload source (geko_lib.workload.tunableop through workload.read).

The CSV is written by hand from TunableOp's documented line format; the GPU test records a real
torch model with ``PYTORCH_TUNABLEOP_RECORD_UNTUNED=1`` and reads what PyTorch wrote."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from geko_lib import platforms, workload
from geko_lib.workload import tunableop

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

DATA = Path(__file__).parent / "data" / "tunableop_untuned0.csv"


def rows_by_size(frame):
    return {(r["M"], r["N"], r["K"]): r for r in frame.to_dict("records")}


def test_untuned_file_becomes_canonical_rows():
    frame = workload.read(DATA, support=ANY)
    rows = rows_by_size(frame)
    assert len(frame) == 6  # the repeated 4096 x 16 x 4096 line is one row
    qkv = rows[(4096, 16, 4096)]
    assert (qkv["transA"], qkv["transB"], qkv["batch_count"]) == ("T", "N", 1)
    assert qkv["a_type"] == qkv["d_type"] == "bf16_r" and qkv["compute_type"] == "c_f32_r"
    assert qkv["call_count"] == 2 and (qkv["lda"], qkv["ldb"], qkv["ldc"]) == (4096, 4096, 4096)
    assert rows[(14336, 16, 4096)]["ldc"] == 14336
    bias = rows[(1024, 8, 512)]
    assert bias["a_type"] == "f16_r" and bool(bias["bias_vector"])
    batched = rows[(128, 128, 64)]
    assert (batched["transA"], batched["transB"], batched["batch_count"]) == ("N", "T", 32)
    tf32 = rows[(256, 64, 512)]
    assert tf32["a_type"] == "f32_r" and tf32["compute_type"] == "c_xf32_r"
    fp8 = rows[(4096, 128, 4096)]
    assert (fp8["a_type"], fp8["b_type"], fp8["d_type"]) == ("f8_r", "f8_r", "bf16_r")


def test_round_trip_through_the_mask64_writer(tmp_path):
    frame = workload.read(DATA, support=ANY)
    again = workload.read(workload.write(frame, tmp_path / "w.yaml"), support=ANY)
    assert rows_by_size(again) == rows_by_size(frame)


def test_results_file_validators_and_extra_fields(tmp_path):
    path = tmp_path / "tunableop_results0.csv"
    path.write_text("Validator,PT_VERSION,2.11.0\nValidator,ROCBLAS_VERSION,4.0\n"
                    "GemmTunableOp_Half_NT,nt_512_256_128_ld_512_256_512,Gemm_Hipblaslt_1,0.02\n")
    (row,) = workload.read(path, support=ANY).to_dict("records")
    assert (row["M"], row["N"], row["K"], row["transB"], row["a_type"]) == \
        (512, 256, 128, "T", "f16_r")


@pytest.mark.parametrize("line, where", [
    ("GemmTunableOp_BFloat16_TN,tn_4096_x_4096_ld_1_1_1", "M/N/K"),
    ("GemmTunableOp_Int8_TN,tn_16_16_16_ld_16_16_16", "dtype"),
    ("GemmTunableOp_BFloat16_TN,nt_16_16_16_ld_16_16_16", "params"),
    ("GemmTunableOp_BFloat16_TN,tn_16_16_16", "ld"),
    ("GemmStridedBatchedTunableOp_Half_NN,nn_16_16_16_ld_16_16_16", "batch_count"),
    ("GemmTunableOp_BFloat16_TN", "params"),
])
def test_bad_lines_name_file_line_and_field(tmp_path, line, where):
    path = tmp_path / "tunableop_untuned0.csv"
    path.write_text("GemmTunableOp_BFloat16_TN,tn_16_16_16_ld_16_16_16\n\n" + line + "\n")
    with pytest.raises(workload.WorkloadError) as info:
        workload.read(path, support=ANY)
    assert info.value.line == 3 and info.value.field == where
    assert str(info.value).startswith(f"{path}:3: {where}: ")


def test_detection_leaves_plain_csv_workloads_alone(tmp_path):
    plain = tmp_path / "w.csv"
    plain.write_text("transA,transB,batch_count,m,n,k,a_type,b_type,c_type,d_type,compute_type\n"
                     "T,N,1,64,16,32,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r\n")
    assert not tunableop.is_tunableop_file(plain)
    assert tunableop.is_tunableop_file(DATA)
    assert workload.read(plain, support=ANY)["M"].tolist() == [64]


@pytest.mark.gpu
def test_gpu_pytorch_records_untuned_gemms_that_geko_reads(tmp_path):
    """A small real model run with TunableOp recording: the file PyTorch writes is a workload."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    script = textwrap.dedent("""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(512, 1024, bias=False), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 256, bias=False))
        model = model.cuda().to(torch.bfloat16)
        with torch.no_grad():
            for tokens in (8, 8, 32):
                model(torch.randn(tokens, 512, device="cuda", dtype=torch.bfloat16))
        torch.cuda.synchronize()
    """)
    env = dict(os.environ, PYTORCH_TUNABLEOP_ENABLED="1", PYTORCH_TUNABLEOP_TUNING="0",
               PYTORCH_TUNABLEOP_RECORD_UNTUNED="1")
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True,
                   timeout=300)
    (recorded,) = tmp_path.glob("tunableop_untuned*.csv")
    rows = rows_by_size(workload.read(recorded, support=ANY))
    for size in ((1024, 8, 512), (256, 8, 1024), (1024, 32, 512), (256, 32, 1024)):
        assert size in rows, (size, recorded.read_text())
        assert (rows[size]["transA"], rows[size]["transB"]) == ("T", "N")
        assert rows[size]["a_type"] == "bf16_r"
