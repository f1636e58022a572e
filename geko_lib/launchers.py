"""The original's script entry points, as doors into the one engine (``geko_lib.cli``).

``scripts/configure.py``, ``scripts/optimize.py`` and ``scripts/search.py`` take the original's
positional arguments, flags and defaults (its README's "Usage Guide"); each translates them into
the ``geko`` command line that does the same and runs ``geko_lib.cli.main`` on it:

- ``configure.py LOG``      -> ``geko --tune --workload-log LOG ... --until configure``
- ``optimize.py``           -> ``geko --tune --workdir W ...`` (continues the configured campaign)
- ``search.py LOG``         -> ``geko --search --workload-log LOG ...``

Where a script's default differs from the ``geko`` command's (the original's scripts work in
``workdir`` and optimize/search use devices 0-7, where ``./bin/geko`` wants ``--devices`` and
names a fresh ``geko_<timestamp>`` directory), the script's default is declared here, once, and
passed on explicitly. Every other default is the config schema's, as for ``geko``. Arguments
after ``--`` go to snakemake, as with ``geko``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from . import config_schema

# the scripts' own defaults (the original README's option tables), where they differ from geko's
SCRIPT_WORKDIR = "workdir"
ALL_DEVICES = "0,1,2,3,4,5,6,7"
OPTIMIZE_CLIENT_BUILD_DIR = "build_tmp"  # optimize.py's --client_build_dir (relative to the cwd)


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]
    geko: str  # the geko flag it becomes
    help: str
    default: str | None = None  # the script's own default where it differs from geko's
    key: str | None = None  # else: the config key whose schema default the help shows
    kind: str = "value"  # "value" or "switch"

    @property
    def dest(self) -> str:
        return self.names[-1].lstrip("-").replace("-", "_")

    def help_text(self, mode: str) -> str:
        if self.default is not None:
            return f"{self.help} (default {self.default})"
        if self.key is not None:
            return f"{self.help} (default {config_schema.default(self.key, mode)})"
        return self.help


def _common(devices_default: str, devices_help: str) -> tuple[Option, ...]:
    return (
        Option(("-w", "--workdir"), "--workdir", "working directory", SCRIPT_WORKDIR),
        Option(("-d", "--devices", "--device"), "--devices", devices_help, devices_default),
        Option(("-v", "--verbose"), "--verbose",
               "logging verbosity (0=WARNING, 1=INFO, 2=DEBUG)", key="verbosity"),
        Option(("--bench-freq",), "--bench-freq",
               "enable HIPBLASLT_BENCH_FREQ during benchmark runs", kind="switch"),
        Option(("--hipblaslt",), "--hipblaslt",
               "built hipBLASLt checkout (default: GEKO_HIPBLASLT_PATH)"),
        Option(("--platform",), "--platform", "geko only: sim, rocm or cuda"),
    )


_KEEP = "filter threshold, percent of total GEMM time"
_UP = "performance uplift threshold"
CONFIGURE = _common("0", "GPU device for baseline benchmarking") + (
    Option(("--keep_thr",), "--keep_thr", _KEEP, key="keep_thr"),
    Option(("-a", "--architecture"), "--arch", "target GPU architecture", "gfx950"),
    Option(("-b", "--backend"), "--backend", "tuning backend: ductile (GA) or tensile (grid)",
           key="backend"),
)
OPTIMIZE = _common(ALL_DEVICES, "comma-separated GPU device ids") + (
    Option(("-n", "--n_slots"), "--n_slots", "max concurrent optimization jobs per device",
           key="n_slots"),
    Option(("--up_thr",), "--up_thr", _UP, key="up_thr"),
    Option(("--err_thr",), "--err_thr", "error threshold for filtering", key="err_thr"),
    Option(("--client_build_dir",), "--client_build_dir",
           "directory for the tensilelite client build", OPTIMIZE_CLIENT_BUILD_DIR),
    Option(("--no_retry",), "--no_retry", "do not retry failed optimizations", kind="switch"),
)
SEARCH = _common(ALL_DEVICES, "comma-separated GPU device ids") + (
    Option(("--keep_thr",), "--keep_thr", _KEEP, key="keep_thr"),
    Option(("--up_thr",), "--up_thr", _UP, key="up_thr"),
    Option(("--duration",), "--duration", "target benchmark duration per GEMM (seconds)",
           key="search_duration"),
)


@dataclass(frozen=True)
class Script:
    prog: str
    description: str
    options: tuple[Option, ...]
    mode: str  # the geko mode it runs
    tail: tuple[str, ...] = ()
    log_positional: bool = True  # the workload log is the first argument


SCRIPTS = {
    "configure": Script("configure.py", "Configuration phase: benchmark the workload log, keep "
                        "the GEMMs that matter and write the tuning configurations "
                        "(optimizations/) for review.", CONFIGURE, "tune",
                        ("--until", "configure")),
    "optimize": Script("optimize.py", "Optimization phase: tune the configured workdir's "
                       "configurations across GPUs, merge, benchmark and filter the results "
                       "(final_libs/).", OPTIMIZE, "tune", log_positional=False),
    "search": Script("search.py", "Dense search (offline tuning): benchmark every existing "
                     "solution of the workload's GEMMs and keep the winners (final_libs/).",
                     SEARCH, "search"),
}


def parser(script: Script) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=script.prog, description=script.description,
        epilog="Runs the same engine as `geko`; arguments after -- go to snakemake.")
    if script.log_positional:
        p.add_argument("log", help="hipBLASLt workload log (HIPBLASLT_LOG_MASK=64 YAML, or CSV "
                                   "with the same fields)")
    for option in script.options:
        if option.kind == "switch":
            p.add_argument(*option.names, dest=option.dest, action="store_true",
                           help=option.help_text(script.mode))
        else:
            p.add_argument(*option.names, dest=option.dest, default=option.default,
                           help=option.help_text(script.mode))
    return p


def geko_argv(name: str, argv: list[str]) -> list[str]:
    """The ``geko`` command line that does what script ``name`` does with ``argv``."""
    script = SCRIPTS[name]
    own, extra = (argv[:argv.index("--")], argv[argv.index("--"):]) if "--" in argv \
        else (argv, [])
    args = vars(parser(script).parse_args(own))
    out = [f"--{script.mode}"]
    if script.log_positional:
        out += ["--workload-log", args.pop("log")]
    for option in script.options:
        value = args[option.dest]
        if option.kind == "switch":
            out += [option.geko] if value else []
        elif value is not None:
            out += [option.geko, str(value)]
    return out + list(script.tail) + extra


def main(name: str, argv: list[str] | None = None) -> int:
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    from . import cli, newer_revisions

    refused = newer_revisions.refused_flag(argv)
    if refused:  # one line naming the flag, as the geko command says it
        print(f"geko: error: {refused}", file=sys.stderr)
        return 2
    translated = geko_argv(name, argv)  # --help exits

    return cli.main(translated)
