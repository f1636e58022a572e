"""Every GEMM type a workload can hold survives every phase of tune mode (issue 24): a GEMM
whose compute type's math mode the tuning YAML asks for (TF32: F32XdlMathOp X) or whose D type
differs from C must come back from tuning, the merge, final_libs and coverage as the same
type; a type a phase cannot carry is refused there, naming it, never turned into another.

The phases run in process, as the workflow's scripts call them: the platform's configure and
optimize, ``library.merge_solutions``, ``library.ship_kept`` with the final_libs audit
(``integrity.verify_shipped``) and ``coverage.coverage``."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from geko_lib import library, platforms, workload
from geko_lib.campaign import combine, coverage, integrity
from geko_lib.errors import GekoError
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.library import logic
from geko_lib.platforms import sim, type_support
from geko_lib.platforms.cuda import tune as cuda_tune

SIZE = (512, 256, 1, 1024)


def workload_file(path, gemm_type: GemmType, size=SIZE):
    m, n, b, k = size
    fields = ", ".join(f"{key}: {value}" for key, value in gemm_type.log_fields().items())
    path.write_text(f"- {{function: matmul, M: {m}, N: {n}, K: {k}, batch_count: {b}, "
                    f"{fields}, call_count: 3}}\n")
    return path


def small_ga(yaml_path):
    """The tuning YAML with a GA of one generation of 4 (the round trip, not the search, is
    under test)."""
    data = yaml.load(yaml_path.read_text(), Loader=yaml.CSafeLoader)
    data.setdefault("Backend", {}).setdefault("Config", {}).update(pop_size=4, n_gen=1)
    yaml_path.write_text(yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False))


def kept_rows(libs_dir) -> pd.DataFrame:
    """What the comparison reports for every size of the tuned libraries: the GEMM as the
    library's bench input names it (its problem type), all kept."""
    rows = []
    for name, lib in library.load_dir(libs_dir).items():
        for size, _, _ in lib.size_entries():
            m, n, b, k = size
            rows.append({**lib.gemm_type.log_fields(), "m": m, "n": n, "batch_count": b,
                         "k": k, "scaleA": 0, "scaleB": 0, "lib": name})
    return pd.DataFrame(rows)


def arch_for(combo) -> str:
    """gfx942 runs the FNUZ fp8 types, gfx950 the OCP ones and everything else."""
    return "gfx942" if "fnuz" in "".join(combo) else "gfx950"


@pytest.mark.parametrize("combo", sorted(type_support.table("sim")), ids=lambda c: "-".join(c))
def test_every_type_survives_configure_tune_merge_final_libs_coverage(tmp_path, combo):
    gemm_type = GemmType("T", "N", *combo)
    log = workload_file(tmp_path / "log.yaml", gemm_type)
    assert set(workload.problems(workload.read(log, support=platforms.gemm_support("sim")))) == {
        GemmProblem(gemm_type, *SIZE)}
    arch = arch_for(combo)
    platform = platforms.get({"platform": "sim", "arch": arch})
    tuning = tmp_path / "optimizations"
    tuning.mkdir()
    try:
        yamls = platform.configure((gemm_type, [SIZE]), tuning, arch, {"backend": "ductile"})
    except GekoError as exc:  # refused where it enters the tune path, naming the type
        assert gemm_type.name in str(exc) or any(t in str(exc) for t in combo), str(exc)
        return
    assert yamls
    for path in yamls:
        small_ga(path)
        platform.optimize(path, tuning / f"build_{path.stem}", 0)
    merged = library.merge_solutions(tuning, epilogues=False,
                                     pattern="build_*/3_LibraryLogic/*.yaml")
    libs = tmp_path / "libs"
    library.write_collection(merged, libs)
    assert {lib.gemm_type for lib in library.load_dir(libs).values()} == {gemm_type}
    kept = kept_rows(libs)
    final = tmp_path / "final_libs"
    library.ship_kept(libs, kept, final)
    integrity.verify_shipped(final, kept, combine.workload_gemms(log))
    report = coverage.coverage(final, log)
    assert report["served"]["n_gemms"] == report["n_gemms"] == 1


@pytest.mark.parametrize("combo", sorted(type_support.table("cuda")), ids=lambda c: "-".join(c))
def test_every_cuda_type_survives_the_triton_tuning_file(tmp_path, combo):
    """cuda tunes through its own tuning file (Triton; the GPU run is gpu-marked elsewhere):
    written and read back, and as the library template the tuned kernels are written into."""
    gemm_type = GemmType("T", "N", *combo)
    for path in cuda_tune.configure(gemm_type, [(4096, 128, 1, 4096)], tmp_path, {}):
        assert cuda_tune.TritonTuning.load(path).gemm_type == gemm_type
    template = library.gemm_type_of(library.problem_type_for(gemm_type))
    assert template == gemm_type


def test_the_final_libs_audit_refuses_a_library_of_another_type(tmp_path):
    """The case of issue 24: a TF32 GEMM tuned as plain f32. The kept row names the library's
    type; the workload's GEMM is the TF32 one; final_libs must not ship."""
    tf32 = GemmType("T", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_xf32_r")
    plain = GemmType("T", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r")
    log = workload_file(tmp_path / "log.yaml", tf32)
    platform = platforms.get({"platform": "sim", "arch": "gfx950"})
    libs = tmp_path / "libs"
    libs.mkdir()
    lib = logic.build(platform.library_template(plain),
                      [(GemmProblem(plain, *SIZE), sim.catalogue(plain).params(0), 1.0)])
    logic.dump(lib, libs / logic.file_name("gfx950", plain))
    kept = kept_rows(libs)
    final = tmp_path / "final_libs"
    library.ship_kept(libs, kept, final)
    with pytest.raises(integrity.IntegrityError, match="not in the workload"):
        integrity.verify_shipped(final, kept, combine.workload_gemms(log))
