"""A GEMM of a type the campaign's arch cannot run (FNUZ fp8 on gfx950, float4 on gfx942) is
refused where the workload enters, naming the source, line, field and arch, before anything
runs: `geko --search` shipped a gfx950 library for F8N inputs, and `--tune` refused them only at
the configure job, after the baseline had run. gfx942 takes the OCP fp8 spellings as well as
the FNUZ ones, as the original's tuning-config generator does."""

import hashlib
import subprocess
import sys

import pytest
import yaml

from geko_lib import workload
from geko_lib.campaign import layout, rules
from geko_lib.config_schema import merged, schema_defaults
from geko_lib import archs
from geko_lib.platforms import gemm_support, type_support
from geko_lib.workload import WorkloadError

from .conftest import ROOT

BIN_GEKO = [sys.executable, str(ROOT / "bin" / "geko")]
FNUZ = ("f8_fnuz_r", "f8_fnuz_r", "bf16_r", "bf16_r", "c_f32_r")
OCP = ("f8_r", "f8_r", "bf16_r", "bf16_r", "c_f32_r")
FLOAT4 = ("f4_r", "f4_r", "bf16_r", "bf16_r", "c_f32_r")
BF16 = ("bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
FNUZ_INLINE = ("256", "512", "1", "256", "F8N", "B", "S", "N", "T")


def row(a, b, c, d, compute):
    return (f"- {{function: matmul, M: 256, N: 512, K: 256, transA: N, transB: T, "
            f"batch_count: 1, a_type: {a}, b_type: {b}, c_type: {c}, d_type: {d}, "
            f"compute_type: {compute}}}\n")


def geko(*args, cwd):
    return subprocess.run([*BIN_GEKO, *args], cwd=cwd, capture_output=True, text=True)


def tree_digest(directory) -> dict:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


# --- the table ---------------------------------------------------------------------------------

def test_each_arch_rules_out_the_types_its_hardware_lacks():
    field, message = gemm_support("sim").unsupported(FNUZ, "gfx950")
    assert field == "a_type" and "gfx950" in message and "f8_fnuz_r" in message
    assert gemm_support("rocm").unsupported(FNUZ, "gfx950_128cu")[0] == "a_type"  # its model
    mixed = ("f8_fnuz_r", "bf8_fnuz_r", "f32_r", "f32_r", "c_f32_r")
    assert gemm_support("sim").unsupported(mixed, "gfx950")[0] == "a_type"
    assert gemm_support("sim").unsupported(FLOAT4, "gfx942_80cu")[0] == "a_type"
    # gfx942 runs FNUZ and takes the OCP spellings (TensileLite's F8 is FNUZ there)
    for combo in (FNUZ, OCP, BF16):
        assert gemm_support("sim").unsupported(combo, "gfx942") is None
        assert gemm_support("rocm").unsupported(combo, "gfx942_20cu") is None
    for combo in (OCP, FLOAT4, BF16):
        assert gemm_support("sim").unsupported(combo, "gfx950") is None


def test_without_an_arch_or_limits_the_platform_table_alone_decides():
    for combo in (FNUZ, OCP, FLOAT4):
        assert gemm_support("sim").unsupported(combo) is None
        assert gemm_support("sim").unsupported(combo, "an_arch_without_limits") is None
    assert type_support.table("sim", None) == type_support.table("sim")
    # the platform's refusal comes first, in its own words
    assert "cuBLASLt" in gemm_support("cuda").unsupported(FNUZ, "h200")[1]
    assert gemm_support("cuda").unsupported(OCP, "h200") is None


def test_the_arch_tables_are_the_platform_tables_less_the_arch_limits():
    for platform in ("sim", "rocm", "cuda"):
        for arch, limit in type_support.ARCH_LIMITS.items():
            rows = type_support.table(platform, arch)
            assert rows <= type_support.table(platform)
            assert not any(limit.types.intersection(r[:4]) for r in rows)
            for combo in type_support.table(platform) - rows:
                assert gemm_support(platform).unsupported(combo, arch) is not None
            for combo in rows:
                assert gemm_support(platform).unsupported(combo, arch) is None
    assert type_support.table("rocm", "gfx942") >= {type_support.Combo(*OCP),
                                                    type_support.Combo(*FNUZ)}
    assert set(type_support.ARCH_LIMITS) <= set(archs.MODELS)  # keyed by device model


# --- where the workload enters ------------------------------------------------------------------

def test_every_reader_checks_the_arch(tmp_path):
    log = tmp_path / "w.yaml"
    log.write_text(row(*BF16) + row(*FNUZ))
    with pytest.raises(WorkloadError) as caught:
        workload.read(log, support=gemm_support("sim"), arch="gfx950")
    assert str(caught.value).startswith(f"{log}:2: a_type: f8_fnuz_r is not a type gfx950 "
                                        "can run")
    assert len(workload.read(log, support=gemm_support("sim"), arch="gfx942")) == 2
    assert len(workload.read(log, support=gemm_support("sim"))) == 2  # no arch: the sim table
    listing = tmp_path / "list.yaml"
    listing.write_text("TRANSA: N\nTRANSB: T\nDataType: F8N\nDestDataType: B\n"
                       "ComputeDataType: S\nARCH: gfx950\nSizes:\n  - [256, 512, 1, 256]\n")
    with pytest.raises(WorkloadError, match=r"list\.yaml:8: a_type: .* gfx950"):
        workload.read_list(listing, support=gemm_support("sim"))  # the file's ARCH
    assert len(workload.read_list(listing, support=gemm_support("sim"), arch="gfx942")) == 1
    with pytest.raises(WorkloadError, match=r"--inline: a_type: f8_fnuz_r is not a type gfx950"):
        workload.read_inline(" ".join(FNUZ_INLINE), support=gemm_support("rocm"), arch="gfx950")


def test_the_ingest_phase_refuses_it_for_the_campaigns_arch(tmp_path, run_phase):
    """The workflow's door (rule ingest, here in process as its script runs it)."""
    config = merged(schema_defaults(), {"workload_log": "", "platform": "sim", "arch": "gfx950",
                                        "workload_inline": " ".join(FNUZ_INLINE)})
    with pytest.raises(SystemExit) as caught:  # the job fails, its log naming the problem
        run_phase("ingest", tmp_path, config, script=True, given={
            "workload_kind": "inline", "workload_value": config["workload_inline"]})
    assert caught.value.code == 1
    assert not (tmp_path / layout.WORKLOAD).exists()
    assert "--inline: a_type: f8_fnuz_r is not a type gfx950 can run" in \
        (tmp_path / rules.rule_log("ingest")).read_text()


@pytest.mark.parametrize("mode", ["--search", "--tune"])
def test_bin_geko_refuses_fnuz_fp8_on_gfx950_before_anything_runs(tmp_path, mode):
    proc = geko(mode, "--arch", "gfx950", "--inline", *FNUZ_INLINE, "--workdir", "run",
                cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "--inline: a_type: f8_fnuz_r is not a type gfx950 can run" in proc.stderr
    assert not (tmp_path / "run").exists()
    assert "Baseline" not in proc.stdout


def test_bin_geko_names_the_file_line_and_field_and_leaves_the_workdir_alone(tmp_path):
    (tmp_path / "w.yaml").write_text(row(*BF16) + row(*FNUZ))
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "geko_config.yaml").write_text("an earlier campaign's file\n")
    before = tree_digest(workdir)
    proc = geko("--search", "--arch", "gfx950", "--workload-log", "w.yaml", "--workdir", "run",
                cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "w.yaml:2: a_type: f8_fnuz_r is not a type gfx950 can run" in proc.stderr
    assert tree_digest(workdir) == before
    # the same log on gfx942 passes the check (planned only)
    proc = geko("--search", "--arch", "gfx942", "--workload-log", "w.yaml", "--workdir", "ok",
                "--", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_api_refuses_it_where_the_log_is_read(tmp_path):
    import geko

    log = tmp_path / "w.yaml"
    log.write_text(row(*FNUZ))
    with pytest.raises(geko.errors.GekoError) as caught:
        geko.bench.log.summarize(log_file=log, output_dir=tmp_path / "out", keep_thr=0,
                                 platform="sim", arch="gfx950")
    assert str(caught.value).startswith(f"{log}:1: a_type: f8_fnuz_r is not a type gfx950")
    assert not (tmp_path / "out").exists()
    with pytest.raises(WorkloadError, match=":1: a_type: .* gfx950"):
        geko.bench.log.parse(log, arch="gfx950")
    _, unique = geko.bench.log.summarize(log_file=log, output_dir=tmp_path / "ok", keep_thr=0,
                                         platform="sim", arch="gfx942")
    assert len(unique) == 1
    assert yaml.safe_load(log.read_text())[0]["a_type"] == "f8_fnuz_r"
