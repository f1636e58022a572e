"""The rocm platform: hipblaslt-bench and TensileLite of a built hipBLASLt checkout.

Every phase writes hipblaslt-bench rows (bench.py), runs ``hipblaslt-bench --yaml F --device N``
through :func:`run_tool` with its output in ``<out_dir>/<job>.out``, and parses that output.
Timings with a time budget take two passes, as the original's standard benchmark: a short
probe measures each GEMM's latency, then the iteration counts fill the budget. Dense-search
winners are found in hipBLASLt's own logic files through its MatchTable. Tuning (TensileLite)
and library creation (TensileCreateLibrary) live in ``tensilelite.py`` and ``library_build.py``.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd

from ... import library as liblogic
from ...bench_formats import rows as bench_rows, text as bench_text
from ... import original_columns
from ...gemm import GemmProblem
from ...library import operations
from ...tuning import configure as tuning_configure
from .. import (EXPORT_FORMATS, RESULT_COLUMNS, VERIFY_COLUMNS, Capabilities, PlatformError,
                require_problems, results_frame)
from ...archs import ARCH_ALIASES, datasheet_ceilings
from . import bench as hb
from .install import ENV_VAR, UNKNOWN_HASH, RocmInstall, checkout, locate
from ...log_setup import LOGGER

log = logging.getLogger(LOGGER)

DEFAULT_CLIENT_DIR = "tensilelite_client"  # relative to the workdir (where jobs run)


def run_tool(argv: Sequence[str], log_path, env: dict | None = None, cwd=None) -> Path:
    """Run one external command (an argv list, never a shell string) with stdout and stderr in
    ``log_path``; a missing program or a non-zero exit raises PlatformError naming both."""
    argv = [str(a) for a in argv]
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    shown = " ".join(shlex.quote(a) for a in argv)
    log.info("running %s (output: %s)", shown, log_path)
    try:
        with open(log_path, "w") as out:
            code = subprocess.call(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                   stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise PlatformError(f"cannot run {shown}: {exc.strerror or exc}") from None
    if code != 0:
        raise PlatformError(f"{Path(argv[0]).name} failed (exit code {code}): {shown}; "
                            f"see {log_path}")
    return log_path


def job_stem(kind: str, problems: Sequence[GemmProblem], extra: str = "") -> str:
    """A file stem unique to the job (several jobs share an out_dir such as benchmarks/)."""
    text = "\n".join([kind, extra, *(p.name for p in problems)])
    digest = hashlib.sha1(text.encode()).hexdigest()[:10]
    first = problems[0].name if problems else "empty"
    return f"{kind}_{first}_{len(problems)}_{digest}"


def tensile_libpath(library_dir) -> Path:
    """What HIPBLASLT_TENSILE_LIBPATH must name for a library TensileCreateLibrary wrote into
    ``library_dir`` (``create_library``'s out_dir, the workflow's ``tensile/``):
    ``library_dir/library``, or its first ``gfx*`` subdirectory where the files are kept per
    architecture (the original's rule: hipBLASLt looks for ``TensileLibrary*`` directly in the
    directory the variable names)."""
    path = Path(library_dir) / "library"
    arch_dirs = sorted(p for p in path.glob("gfx*") if p.is_dir())
    if arch_dirs:
        path = arch_dirs[0]
    if not path.is_dir():
        raise PlatformError(f"{library_dir} holds no created library ({path} is missing); "
                            "rebuild it (rule create_library)")
    return path.resolve()


@dataclass
class RocmPlatform:
    install: RocmInstall
    arch: str = "gfx950"
    rotating_mb: int = 512
    bench_freq: bool = False  # HIPBLASLT_BENCH_FREQ: clock-frequency columns in the results
    python: str = sys.executable  # interpreter that runs TensileLite
    code_object_version: str = "5"  # the original builds its library with version 5
    library_format: str = "msgpack"
    client_dir: Path = field(default_factory=lambda: Path(DEFAULT_CLIENT_DIR))
    environ: dict | None = None  # None: this process's environment at call time
    _tables: dict = field(default_factory=dict, init=False, repr=False)  # MatchTable, logic files

    # its settings (config section rocm) that shape results
    RESULT_OPTIONS = ("code_object_version", "library_format", "bench_freq")
    ARCH_MODELS = ("gfx950", "gfx942")  # the original's architectures

    name = "rocm"
    measured = True
    note = ""

    @classmethod
    def capabilities(cls, config: dict) -> Capabilities:
        arch = str(config.get("arch", "gfx950"))
        known = ARCH_ALIASES.get(arch, arch) in ("gfx942", "gfx950")  # datasheets held here
        ceilings = dict(datasheet_ceilings(arch), source="AMD datasheet figures, not measured "
                        "on this GPU") if known else None
        # combine: hipblaslt-bench times one library per run, so kernels of two campaigns
        # cannot be interleaved on the same operands
        return Capabilities(measured=True, note="", epilogues=True, exports=EXPORT_FORMATS,
                            integrate=True, combine=False, ceilings=ceilings)

    @classmethod
    def check_ready(cls, config: dict, environ=None) -> None:
        """The checkout is there and built (locate); a path given in the config wins over the
        environment's."""
        if environ is None:
            environ = os.environ if not (config.get("rocm") or {}).get("hipblaslt_path") else {}
        locate(config, environ=environ)

    @classmethod
    def for_checkout(cls, hipblaslt_path, config: dict) -> "RocmPlatform":
        """The platform on the checkout a call names: it wins over GEKO_HIPBLASLT_PATH (and
        reaches the tools it runs in that variable); errors name the argument."""
        install = checkout(str(hipblaslt_path), "the hipblaslt_path argument")
        return cls.from_config(config, environ=dict(os.environ, **{ENV_VAR: str(install.root)}),
                               install=install)

    @classmethod
    def from_config(cls, config: dict, environ=None, install=None) -> "RocmPlatform":
        rocm = config.get("rocm") or {}
        client = rocm.get("client_dir") or DEFAULT_CLIENT_DIR
        return cls(install=install or locate(config, environ),
                   arch=str(config.get("arch", "gfx950")),
                   rotating_mb=int(config.get("rotating_mb", 512)),
                   bench_freq=bool(rocm.get("bench_freq", False)),
                   python=str(rocm.get("python") or sys.executable),
                   code_object_version=str(rocm.get("code_object_version", "5")),
                   library_format=str(rocm.get("library_format", "msgpack")),
                   client_dir=Path(client).resolve(), environ=environ)

    @property
    def library_version(self) -> str:
        """What provenance records: results made with another hipBLASLt build are stale."""
        return f"hipblaslt-{self.install.git_hash}"

    # --- running hipblaslt-bench ------------------------------------------------------------------
    def _env(self, library=None) -> dict:
        base = dict(os.environ if self.environ is None else self.environ)
        libpath = tensile_libpath(library) if library is not None else None
        return hb.environment(base, libpath, self.bench_freq)

    def run_rows(self, rows: list[dict], out_dir, stem: str, device: int,
                 library=None) -> pd.DataFrame:
        """Write ``<stem>.yaml``, run hipblaslt-bench on it into ``<stem>.out``, parse."""
        out_dir = Path(out_dir)
        yaml_path = liblogic.dump_rows(rows, out_dir / f"{stem}.yaml")
        env = self._env(library)
        argv = hb.command(self.install.bench, yaml_path.resolve(),
                          hb.device_ordinal(device, env))
        out = run_tool(argv, out_dir / f"{stem}.out", env=env)
        return hb.read_bench_output(out)

    def _latencies(self, problems, out_dir, stem, device, library=None) -> dict:
        """The probe pass: each GEMM's latency (us) with a few iterations."""
        rows = [hb.bench_row(p, hb.PROBE_ITERS, hb.PROBE_COLD_ITERS, self.rotating_mb)
                for p in problems]
        frame = self.run_rows(rows, out_dir, f"{stem}_probe", device, library)
        groups = hb.results_by_problem(frame, problems, Path(out_dir) / f"{stem}_probe.out")
        return {key: float(min(r["us"] for r in rows)) for key, rows in groups.items()}

    def _finish(self, frame: pd.DataFrame, device: int, columns=RESULT_COLUMNS) -> pd.DataFrame:
        frame = frame.assign(platform=self.name, measured=True, device=int(device))
        return results_frame(frame.to_dict("records"), columns)

    @staticmethod
    def _progress(progress, problems) -> None:
        if progress is not None:
            for _ in problems:
                progress(1)

    # --- protocol -------------------------------------------------------------------------------
    def bench(self, problems, out_dir, device, library=None, duration=None,
              progress=None) -> pd.DataFrame:
        """The default solution (or the created library's) per GEMM, timed for ``duration``
        seconds each after a probe pass (fixed iteration counts without a duration)."""
        problems = require_problems(self.name, "bench", problems)
        stem = job_stem("bench" if library is None else "bench-library", problems,
                        str(library or ""))
        latency = self._latencies(problems, out_dir, stem, device, library) if duration else {}
        rows = [hb.bench_row(p, *bench_rows.iterations(duration, latency.get(hb.problem_key(p))),
                             self.rotating_mb) for p in problems]
        frame = self.run_rows(rows, out_dir, stem, device, library)
        hb.results_by_problem(frame, problems, Path(out_dir) / f"{stem}.out")
        self._progress(progress, problems)
        return self._tool_output(self._finish(hb.chosen_rows(frame), device), out_dir, stem)

    def search(self, problems, out_dir, device, duration=None, progress=None) -> pd.DataFrame:
        """Every solution the heuristic returns for each GEMM (dense search)."""
        problems = require_problems(self.name, "search", problems)
        stem = job_stem("search", problems)
        latency = self._latencies(problems, out_dir, stem, device) if duration else {}
        rows = [hb.search_row(p, latency.get(hb.problem_key(p)), duration or 0.0,
                              self.rotating_mb) for p in problems]
        frame = hb.candidates_only(self.run_rows(rows, out_dir, stem, device))
        hb.results_by_problem(frame, problems, Path(out_dir) / f"{stem}.out")
        unnamed = frame[frame["solution_index"] < 0]
        if len(unnamed):
            raise hb.BenchOutputError(Path(out_dir) / f"{stem}.out", int(unnamed["line"].iloc[0]),
                                      "a dense-search result without '--Solution index:' "
                                      "(print_kernel_info is on in every search row)")
        self._progress(progress, problems)
        return self._tool_output(self._finish(frame, device), out_dir, stem)

    @staticmethod
    def _tool_output(frame: pd.DataFrame, out_dir, stem: str) -> pd.DataFrame:
        """The results naming hipblaslt-bench's output they were read from, so the ``.out``
        files are the tool's own (bench_formats.text.output_text), not re-rendered."""
        return bench_text.with_tool_output(frame, Path(out_dir) / f"{stem}.out")

    def _match_table(self) -> dict:
        path = self.install.match_table
        if not path.is_file():
            raise PlatformError(f"hipBLASLt MatchTable {path} is missing: dense-search winners "
                                "cannot be found in the library (rebuild hipBLASLt)")
        if "match" not in self._tables:
            self._tables["match"] = operations.load_match_table(path)
        return self._tables["match"]

    def extract(self, winners: pd.DataFrame, out_dir) -> list[Path]:
        """The winners' solutions copied out of hipBLASLt's logic files (via its MatchTable),
        one Equality library per source file."""
        try:
            libs = operations.extract_solutions(winners, self._match_table())
        except liblogic.LibraryError as exc:
            raise PlatformError(f"extracting dense-search winners: {exc}") from None
        return operations.write_collection(libs, out_dir)

    def lib_source(self, solution_index: int) -> str:
        """The directory of the logic file hipBLASLt's MatchTable names for the solution."""
        if not self.install.match_table.is_file():
            return original_columns.NOT_FOUND
        entry = self._match_table().get(int(solution_index))
        return entry[0].parent.name if entry else original_columns.NOT_FOUND

    def reference_solution(self, problem, solution_index) -> dict:
        table = self._match_table()
        index = int(solution_index)
        if index not in table:
            raise PlatformError(f"solution index {index} is not in {self.install.match_table}")
        logic, local = table[index]
        cache = self._tables.setdefault("logic", {})
        if logic not in cache:
            cache[logic] = liblogic.load(logic)
        lib = cache[logic]
        if lib.gemm_type != problem.type:
            raise PlatformError(f"solution {index} ({logic.name}) is a {lib.gemm_type.name} "
                                f"solution, not {problem.type.name}")
        return lib.solutions[lib.solution_position()[local]]

    def create_library(self, libs_dir, out_dir) -> Path:
        """TensileCreateLibrary over libs_dir into out_dir (library_build.py); bench, verify
        and sweep then point HIPBLASLT_TENSILE_LIBPATH at it (tensile_libpath)."""
        from . import library_build

        out_dir = Path(out_dir)
        library_build.create_library(
            self.install.tensilelite, Path(libs_dir), out_dir,
            code_object_version=self.code_object_version, library_format=self.library_format,
            python=self.python)
        tensile_libpath(out_dir)  # the created library is where hipBLASLt will look
        return out_dir

    def verify(self, problems, out_dir, device, library, progress=None) -> pd.DataFrame:
        """norm and allclose checks of the library's solution per GEMM: ``error`` is
        norm_error / batch_count, FAILED_ERROR where a check failed."""
        problems = require_problems(self.name, "verify", problems)
        stem = job_stem("verify", problems, str(library))
        frame = self.run_rows([hb.verify_row(p) for p in problems], out_dir, stem, device,
                              library)
        hb.results_by_problem(frame, problems, Path(out_dir) / f"{stem}.out")
        frame = hb.chosen_rows(frame)
        frame = frame.assign(error=hb.verification_error(frame))
        self._progress(progress, problems)
        return self._tool_output(self._finish(frame, device, VERIFY_COLUMNS), out_dir, stem)

    def sweep(self, problems, library, out_dir, device) -> pd.DataFrame:
        """Every solution of one logic file on every problem (prune): the file is built into a
        library of its own and each GEMM asks for all of its solutions; printed indices map
        back to the file's SolutionIndex through that library's MatchTable."""
        problems, out_dir = require_problems(self.name, "sweep", problems), Path(out_dir)
        stem = job_stem("sweep", problems, str(library))
        source = out_dir / f"{stem}_logic"
        source.mkdir(parents=True, exist_ok=True)
        (source / Path(library).name).write_text(Path(library).read_text())
        built = self.create_library(source, out_dir / f"{stem}_library")
        table = _created_match_table(built)
        rows = []
        for p in problems:
            iters = min(max(int(7e13 / p.flops), 10), 1000)  # the original's prune budget
            row = hb.search_row(p, None, 0.0, self.rotating_mb)
            rows.append(row | {"iters": iters, "cold_iters": max(1, int(0.2 * iters))})
        frame = hb.candidates_only(self.run_rows(rows, out_dir, stem, device, built))
        out = []
        for row in frame.to_dict("records"):
            if int(row["solution_index"]) not in table:
                raise PlatformError(f"sweep: solution {row['solution_index']} is not in the "
                                    f"MatchTable of {built}")
            out.append({"m": row["m"], "n": row["n"], "batch_count": row["batch_count"],
                        "k": row["k"], "SolutionIndex": table[int(row["solution_index"])][1],
                        "us": row["us"], "gflops": row["gflops"]})
        return pd.DataFrame(out)

    def configure(self, gemm_config, out_dir, arch, options):
        """TensileLite tuning YAMLs: the same files whatever runs them (the sim reads them too)."""
        return tuning_configure.configure_for(gemm_config, out_dir, arch, options)

    def optimize(self, tuning_yaml, build_dir, device) -> Path:
        """One TensileLite run (tensilelite.py) on a prebuilt client; concurrent runs on one
        device share its lock file in the tuning directory (the original's --client-lock).

        The leased device reaches TensileLite only through the YAML's ``Device:``, as it
        reaches hipblaslt-bench only through ``--device``: geko sets no HIP/ROCR_VISIBLE_DEVICES.
        Where an allocation already restricted them (SLURM), ``Device:`` is the leased id's
        position among the visible devices, as ``--device`` is (bench.device_ordinal)."""
        from . import tensilelite

        env = dict(os.environ if self.environ is None else self.environ)
        tensilelite.ensure_client(self.install.tensilelite, self.client_dir,
                                  client_revision(self.install.git_hash), self._base_arch(),
                                  python=self.python)
        return Path(tensilelite.optimize(
            self.install.tensilelite, Path(tuning_yaml), Path(build_dir),
            hb.device_ordinal(int(device), env), python=self.python,
            client_dir=self.client_dir, lock_dir=Path(build_dir).parent,
            lock_id=tensilelite.lock_id(int(device), env), environ=env))

    def _base_arch(self) -> str:
        """The gfx name a client is built for (``gfx942_80cu`` is a gfx942)."""
        from .library_build import base_arch

        return base_arch(self.arch)


def client_revision(git_hash: str, today: datetime.date | None = None) -> str:
    """What the client cache is keyed by: the checkout's commit, or, where it cannot be read,
    today's date (the original's fallback: such a client is rebuilt once a day)."""
    if git_hash != UNKNOWN_HASH:
        return git_hash
    return f"{UNKNOWN_HASH}-{(today or datetime.date.today()).isoformat()}"


def _created_match_table(library_dir: Path) -> dict:
    """The MatchTable TensileCreateLibrary wrote with a created library."""
    found = sorted(Path(library_dir).rglob("MatchTable.yaml"))
    if not found:
        raise PlatformError(f"{library_dir} has no MatchTable.yaml: cannot map the solutions "
                            "hipblaslt-bench prints back to the logic file")
    return operations.load_match_table(found[0])
