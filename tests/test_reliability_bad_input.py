"""Bad input through the doors users use (`geko`, the workload API, the workflow's config): a
call count that overflows 64 bits, a binary --list file, NaN or infinite thresholds and a
directory given as the workload are refused with one `geko: error:` line naming the file, line
and field (or the flag), exit 2, no traceback, and a workdir that was there is left as it was."""

import math

import pytest

from geko_lib import platforms, workload
from geko_lib.workload import WorkloadError

from .test_cli_flags import geko

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

ROW = ("- {{function: matmul, M: {m}, N: 16, K: 4096, transA: T, transB: N, batch_count: 1, "
       "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, "
       "compute_type: c_f32_r,{pad} call_count: {calls}}}\n")
BIG = 5 * 10**18  # two of them do not fit a 64-bit count


def existing_workdir(tmp_path):
    """A workdir holding a campaign's files, and a snapshot of them to compare with."""
    run = tmp_path / "run"
    (run / "results").mkdir(parents=True)
    (run / "summary.csv").write_text("m,n,k,call_count\n4096,16,4096,100\n")
    (run / "results" / "final_results.csv").write_text("kept\n1\n")
    return run, snapshot(run)


def snapshot(directory):
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file()}


def assert_refused(proc, *expected):
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    error = [line for line in proc.stderr.splitlines() if line.startswith("geko: error:")]
    assert len(error) == 1 and all(part in error[0] for part in expected), proc.stderr


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pyyaml"])
@pytest.mark.parametrize("pad", ["", " "], ids=["repeated-lines", "equal-rows"])
def test_call_counts_beyond_64_bits_are_refused_not_wrapped_negative(tmp_path, fast, pad):
    """Identical lines multiply a row's call_count, equal rows are summed: numpy wrapped either
    to a negative count (-8446744073709551616), which the workflow ingested."""
    log = tmp_path / "log.yaml"
    log.write_text(ROW.format(m=1024, calls=10, pad="") + ROW.format(m=4096, calls=BIG, pad="")
                   + ROW.format(m=4096, calls=BIG, pad=pad))
    with pytest.raises(WorkloadError) as refused:
        workload.read(log, fast=fast, support=ANY)
    assert (refused.value.line, refused.value.field) == (2, "call_count")
    assert str(2 * BIG) in str(refused.value)


def test_the_largest_count_that_fits_is_kept(tmp_path):
    log = tmp_path / "log.yaml"
    most = 2**63 - 1
    log.write_text(ROW.format(m=1024, calls=most - 1, pad="") + ROW.format(m=1024, calls=1, pad=" "))
    assert workload.read(log, support=ANY)["call_count"].tolist() == [most]


def test_geko_refuses_an_overflowing_count_and_leaves_the_workdir(tmp_path):
    run, before = existing_workdir(tmp_path)
    log = tmp_path / "log.yaml"
    log.write_text(ROW.format(m=4096, calls=BIG, pad="") * 2)
    proc = geko("--bench", "--workload-log", "log.yaml", "--workdir", "run", cwd=tmp_path)
    assert_refused(proc, f"{log}:1: call_count:")
    assert snapshot(run) == before


def test_a_binary_list_file_is_refused_naming_its_line_not_with_a_traceback(tmp_path):
    """The --list file's ARCH: was looked up with a text read before the workload reader
    named the bytes: a UnicodeDecodeError traceback, exit 1."""
    run, before = existing_workdir(tmp_path)
    (tmp_path / "sizes.yaml").write_bytes(b"TRANSA: T\n\x83\xff\x00garbage\n")
    proc = geko("--bench", "--list", "sizes.yaml", "--workdir", "run", cwd=tmp_path)
    assert_refused(proc, f"{tmp_path / 'sizes.yaml'}:2: encoding:")
    assert snapshot(run) == before


@pytest.mark.parametrize("flag", ["--up_thr", "--err_thr", "--keep_thr", "--duration"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_numbers_are_refused_naming_the_flag(tmp_path, flag, value):
    """NaN passes every bound of the schema: `--up_thr nan` ran a campaign that kept no kernel
    and exited 0; `--up_thr inf` ran one that failed in its report."""
    run, before = existing_workdir(tmp_path)
    (tmp_path / "log.yaml").write_text(ROW.format(m=1024, calls=1, pad=""))
    proc = geko("--search", "--workload-log", "log.yaml", flag, value, "--workdir", "run",
                cwd=tmp_path)
    assert_refused(proc, f"{flag} (config key ")
    if (flag, value) != ("--keep_thr", "inf"):  # that one is above the schema's maximum first
        assert f"{float(value)} is not a finite number" in proc.stderr
    assert snapshot(run) == before


def test_non_finite_is_found_in_sections_and_only_in_numbers():
    from geko_lib.config_schema import non_finite, schema_defaults

    config = schema_defaults()
    assert non_finite(config) is None
    config["cuda"]["search_budget_s"] = math.inf
    assert non_finite(config) == ("cuda.search_budget_s", math.inf)


@pytest.mark.slow
def test_the_workflow_refuses_a_nan_in_its_config(campaign):
    run = campaign(up_thr=math.nan)  # `up_thr: .nan` in the config file
    proc = run.snakemake("-n", check=False)
    assert proc.returncode == 2
    assert "geko: error: config key up_thr: nan is not a finite number" in proc.stderr
    assert not run.workdir.exists()


@pytest.mark.slow
def test_the_workflow_names_a_refused_config_value_in_one_line_as_geko_does(campaign):
    """`snakemake --config up_thr=0` printed snakemake's WorkflowError with the schema's dump
    (`Failed validating 'exclusiveMinimum' in schema['properties']['up_thr']: ...`, exit 1)
    where `geko --up_thr 0` names the key and value in one line."""
    run = campaign()
    proc = run.snakemake("-n", "--config", "mode=serch", check=False)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Failed validating" not in proc.stderr and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("geko: error:")]
    assert errors == ["geko: error: config key mode: 'serch' is not one of ['search', 'tune']"]
    assert not run.workdir.exists()


def test_both_doors_build_the_same_line_for_a_refused_value():
    from geko_lib.config_schema import first_problem, problem_line, schema_defaults

    config = schema_defaults()
    assert first_problem(config) is None
    config["up_thr"] = 0
    problem = first_problem(config)
    assert problem == ("up_thr", "0 is less than or equal to the minimum of 0")
    assert problem_line(*problem) == "config key up_thr: 0 is less than or equal to the minimum of 0"
    assert problem_line(*problem, flag="--up_thr") == \
        "--up_thr (config key up_thr): 0 is less than or equal to the minimum of 0"
    config["up_thr"], config["cuda"]["search_budget_s"] = 1.03, math.nan
    assert problem_line(*first_problem(config)) == \
        "config key cuda.search_budget_s: nan is not a finite number"


def test_a_directory_given_as_the_workload_is_called_one(tmp_path):
    (tmp_path / "logs").mkdir()
    proc = geko("--bench", "--workload-log", "logs", "--workdir", "run", cwd=tmp_path)
    assert_refused(proc, f"--workload-log: {tmp_path / 'logs'} is not a regular file")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("cores", ["0", "-3"])
def test_a_core_count_below_one_is_refused(tmp_path, cores):
    """--cores 0 ran with every core and --cores -3 reached snakemake as given."""
    (tmp_path / "log.yaml").write_text(ROW.format(m=1024, calls=1, pad=""))
    proc = geko("--bench", "--workload-log", "log.yaml", f"--cores={cores}", "--workdir", "run",
                cwd=tmp_path)
    assert_refused(proc, f"argument --cores: expected a positive integer, got '{cores}'")
    assert not (tmp_path / "run").exists()


def continued_workdir(tmp_path, log):
    """A campaign's workdir as a finished run leaves it, as far as a continuation reads it."""
    run, _ = existing_workdir(tmp_path)
    (run / "geko_config.yaml").write_text(f"mode: search\nplatform: sim\nworkload_log: {log}\n"
                                          f"workdir: {run}\n")
    return run, snapshot(run)


def test_a_continued_campaign_whose_log_turned_bad_is_refused_before_anything_is_removed(tmp_path):
    """`geko -w DIR` skipped the workload check: an edited log was found bad only by the ingest
    job, after the run had removed every output made from the old one (with --discard-results)."""
    log = tmp_path / "log.yaml"
    log.write_text(ROW.format(m=1024, calls=1, pad="") + ROW.format(m=-4, calls=1, pad=""))
    run, before = continued_workdir(tmp_path, log)
    proc = geko("--bench", "--workdir", "run", "--discard-results", cwd=tmp_path)
    assert_refused(proc, f"{log}:2: M: must be a positive integer, got -4")
    assert snapshot(run) == before


def test_a_damaged_campaign_config_is_named_not_a_traceback(tmp_path):
    run, _ = existing_workdir(tmp_path)
    (run / "geko_config.yaml").write_bytes(b"mode: \xff\xfe search\n")
    before = snapshot(run)
    proc = geko("--bench", "--workdir", "run", cwd=tmp_path)
    assert_refused(proc, f"{run / 'geko_config.yaml'}: cannot read the campaign's config")
    assert snapshot(run) == before


def test_a_model_config_giving_a_key_twice_is_refused_naming_the_second(tmp_path):
    """json keeps the last value silently: a config.json naming hidden_size twice was sized
    by the second one unnoticed (the log, CSV and --list readers refuse a repeated key)."""
    (tmp_path / "config.json").write_text(
        '{\n  "hidden_size": 4096,\n  "intermediate_size": 14336,\n  "num_attention_heads": 32,\n'
        '  "num_hidden_layers": 32,\n  "hidden_size": 2048,\n  "vocab_size": 128256\n}\n')
    run, before = existing_workdir(tmp_path)
    proc = geko("--bench", "--model", "config.json", "--workdir", "run", cwd=tmp_path)
    assert_refused(proc, f"{tmp_path / 'config.json'}:6: hidden_size: key 'hidden_size' is "
                         "given twice")
    assert snapshot(run) == before


def test_a_bench_line_giving_a_size_twice_is_refused(tmp_path):
    """A mask-32 line with `-m 1024 ... -m 2048` was read as M 2048 (the last flag won)."""
    line = ("hipblaslt-bench --api_method c -m 1024 -n 256 -k 512 --transA N --transB N "
            "--batch_count 1 --a_type bf16_r --b_type bf16_r --c_type bf16_r --d_type bf16_r "
            "--compute_type f32_r")
    log = tmp_path / "bench.txt"
    log.write_text(line + "\n" + line + " -m 2048\n" + line + " -m 1024\n")
    run, before = existing_workdir(tmp_path)
    proc = geko("--bench", "--workload-log", "bench.txt", "--workdir", "run", cwd=tmp_path)
    assert_refused(proc, f"{log}:2: M: -m is given twice (1024 and 2048)")
    assert snapshot(run) == before
    log.write_text(line + "\n" + line + " -m 1024\n")  # the same value twice says one thing
    assert workload.read(log, support=ANY)["M"].tolist() == [1024]


# --- a key outside the whitelist: kept as the original does, but named once ------------------

MISSPELT = ROW.replace("call_count:", "call_cout:")


def unknown_field_warnings(caplog):
    return [r.getMessage() for r in caplog.records if "unknown field" in r.getMessage()]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pyyaml"])
def test_a_misspelt_key_is_warned_once_naming_its_first_line_and_the_key_it_may_mean(
        tmp_path, caplog, fast):
    """`call_cout: 500` was dropped silently: the GEMM counted 1 call, not 500, and the cost
    ranking was wrong with no word said. The row is still read (the original ignores keys
    outside its whitelist), and each unknown key is named once, however many rows carry it."""
    import geko  # the original's API: geko.bench.log.parse reads through the same reader

    log = tmp_path / "log.yaml"
    log.write_text(ROW.format(m=1024, calls=7, pad="")
                   + MISSPELT.format(m=2048, calls=500, pad="")
                   + "".join(MISSPELT.format(m=4096 + i, calls=500, pad=" extra_key: 1,")
                             for i in range(50)))
    with caplog.at_level("WARNING", logger="GEKO"):
        table = workload.read(log, fast=fast, support=ANY)
    assert unknown_field_warnings(caplog) == [
        f"{log}:2: call_cout: unknown field, ignored (did you mean 'call_count'?)",
        f"{log}:3: extra_key: unknown field, ignored"]
    assert len(table) == 52 and table["call_count"].tolist()[:2] == [7, 1]
    caplog.clear()
    with caplog.at_level("WARNING", logger="GEKO"):
        geko.bench.log.parse(str(log))
    assert len(unknown_field_warnings(caplog)) == 2


def test_hipblaslt_own_log_keys_are_dropped_without_a_warning(caplog):
    """A real mask-64 log carries `initialization` and `use_gpu_timer`, which the whitelist
    drops on purpose: no warning for them."""
    from .conftest import FIXTURES

    log = FIXTURES / "hipblaslt_logs" / "profile_mask64_format_llama31_8b_shapes.yaml"
    with caplog.at_level("WARNING", logger="GEKO"):
        workload.read(log, support=ANY)
    assert unknown_field_warnings(caplog) == []


def test_geko_names_an_unknown_key_on_the_terminal(tmp_path):
    """Through ./bin/geko: the warning reaches stderr (here before a later row is refused, so
    no campaign runs)."""
    log = tmp_path / "log.yaml"
    log.write_text(MISSPELT.format(m=1024, calls=500, pad="") + ROW.format(m=-4, calls=1, pad=""))
    proc = geko("--bench", "--workload-log", "log.yaml", "--workdir", "run", cwd=tmp_path)
    assert_refused(proc, f"{log}:2: M:")
    assert f"{log}:1: call_cout: unknown field, ignored (did you mean 'call_count'?)" \
        in proc.stderr


# --- a leading dimension below its matrix's stored rows --------------------------------------

LD_ROW = ("- {{function: matmul, M: 1024, N: 16, K: 4096, lda: {lda}, ldb: {ldb}, ldc: {ldc}, "
          "ldd: {ldd}, transA: {ta}, transB: {tb}, batch_count: 1, a_type: bf16_r, "
          "b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, "
          "call_count: 5}}\n")
PACKED = {"TN": dict(lda=4096, ldb=4096), "NN": dict(lda=1024, ldb=4096),
          "NT": dict(lda=1024, ldb=16), "TT": dict(lda=4096, ldb=16)}


def test_geko_refuses_an_lda_below_the_rows_of_a_and_leaves_the_workdir(tmp_path):
    """lda: 100 with transA T (A stored K = 4096 rows deep) ran a whole campaign: hipBLASLt
    refuses that problem as an invalid size, so no measurement of it means anything."""
    run, before = existing_workdir(tmp_path)
    log = tmp_path / "log.yaml"
    log.write_text(LD_ROW.format(ta="T", tb="N", ldc=1024, ldd=1024, **PACKED["TN"])
                   + LD_ROW.format(ta="T", tb="N", lda=100, ldb=4096, ldc=1024, ldd=1024))
    proc = geko("--bench", "--workload-log", "log.yaml", "--workdir", "run", cwd=tmp_path)
    assert_refused(proc, f"{log}:2: lda: must be at least 4096 (K: A is stored with K rows when "
                         "transA is T), got 100")
    assert snapshot(run) == before


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pyyaml"])
@pytest.mark.parametrize("layout", list(PACKED))
@pytest.mark.parametrize("field", ["lda", "ldb", "ldc", "ldd"])
def test_each_leading_dimension_is_checked_against_its_stored_rows(tmp_path, fast, layout, field):
    ld = dict(PACKED[layout], ldc=1024, ldd=1024)
    log = tmp_path / "log.yaml"
    log.write_text(LD_ROW.format(ta=layout[0], tb=layout[1], **ld))
    table = workload.read(log, fast=fast, support=ANY)
    assert table[field].tolist() == [ld[field]]  # the packed minimum
    ld[field] -= 1
    log.write_text(LD_ROW.format(ta=layout[0], tb=layout[1], **ld))
    with pytest.raises(WorkloadError) as refused:
        workload.read(log, fast=fast, support=ANY)
    assert (refused.value.line, refused.value.field) == (1, field)
    assert f"must be at least {ld[field] + 1} " in refused.value.message


def test_a_bench_line_and_a_csv_with_a_short_leading_dimension_are_refused(tmp_path):
    """The rule holds wherever a leading dimension is read: mask-32 `--ldc`, a CSV column."""
    bench = tmp_path / "bench.txt"
    bench.write_text("hipblaslt-bench --api_method c -m 1024 -n 256 -k 512 --lda 1024 --ldb 512 "
                     "--ldc 1000 --ldd 1024 --transA N --transB N --batch_count 1 "
                     "--a_type bf16_r --b_type bf16_r --c_type bf16_r --d_type bf16_r "
                     "--compute_type f32_r\n")
    with pytest.raises(WorkloadError, match=r"bench.txt:1: ldc: must be at least 1024 \(M: C"):
        workload.read(bench, support=ANY)
    csv = tmp_path / "log.csv"
    csv.write_text("transA,transB,batch_count,M,N,K,lda,a_type,b_type,c_type,d_type,compute_type\n"
                   "N,N,1,1024,16,4096,1024,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r\n"
                   "N,N,1,2048,16,4096,1024,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r\n")
    with pytest.raises(WorkloadError, match=r"log.csv:3: lda: must be at least 2048 \(M: A"):
        workload.read(csv, support=ANY)
