"""The ``geko`` command: the original tool's flags, run as a Snakemake workflow.

    geko --search --workload-log app.yaml -d 0,1 --workdir run1
    geko --bench --inline 1024 1024 1 1024 B B S N T
    geko --search --model config.json --tp 8 --tokens 1,16,64,512,4096
    geko --search --example llama3_8b_serving          (a bundled workload; geko --example list)
    geko --search --list sizes.yaml --platform sim -- --dry-run
    geko --tune --arch gfx942 --backend tensile -n 2 --workload-log app.yaml -d 0,1
    geko --tune -a gfx950 --workload-log app.yaml -w run2 --until configure   (configure.py)
    geko --tune -w run2 -d 0,1,2,3 --up_thr 1.03                             (optimize.py)
    geko -w run1 --combine_with run2        (run1's and run2's kernels raced: combined_libs/)
    geko status run1 [--json]                                   (where a campaign stands)
    geko coverage --library run1/final_libs --workload-log app.yaml [--timings CSV] [--json]

Every flag sets one config key (``FLAGS``), so ``snakemake --profile ...`` takes the same
settings; every default comes from the config schema (``workflow/schemas/config.schema.yaml``),
including the per-mode ``keep_thr`` and the per-platform ``arch``. Arguments are validated against
the schema before anything is written; then the whole config is written into the workdir
(``geko_config.yaml``) and ``snakemake`` runs the target (``bench``, ``final_libs``) with the
workdir as its current directory, so its own log lands in ``<workdir>/.snakemake/log/``.
Without a workload source, ``--workdir`` names a campaign to continue: its ``geko_config.yaml``
is read back and the flags given override it (the second step of the configure/optimize flow).
Anything after ``--`` goes to snakemake unchanged (paths there are relative to the workdir),
but for what would replace geko's own: an option geko passes (``OWN_OPTIONS``: --configfile,
--snakefile, --directory, --cores, ...) or a ``--config`` key a flag sets is refused by name.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from .campaign import lock as campaign_lock, progress as campaign_progress, \
    snakemake_output, start as campaign_start
from . import (examples, files, interrupt, log_setup, newer_revisions, path_errors, platforms,
               resources, terminal, utils, workload)
from .platforms import detect
from .config_schema import (default, first_problem, get_key, merged, problem_line,
                            schema_defaults, schema_entry, set_key)
from .errors import GekoError
from .gemm import GemmError

SNAKEFILE = resources.snakefile()  # the checkout's, or the installed package's
CONFIG_NAME = "geko_config.yaml"
HIPBLASLT_ENV = platforms.CHECKOUT.env
MODES = ("search", "tune", "bench")
LEVELS = (logging.WARNING, logging.INFO, logging.DEBUG)

log = logging.getLogger("geko")


class UsageError(GekoError):
    """A command line geko refuses before anything runs."""


# --- flags: each sets one config key ---------------------------------------------------------

def parse_devices(text: str) -> list[int]:
    try:
        return utils.parse_devices(text)
    except GekoError as exc:
        raise UsageError(f"--devices: {exc}") from None


def _positive(text: str) -> int | None:
    """The integer of ``text`` where it is one of at least 1, else None."""
    return int(text) if text.strip().isdigit() and int(text) >= 1 else None


def cores_count(text: str) -> int:
    """--cores: 0 ran with every core and a negative count reached snakemake as given."""
    if _positive(text) is None:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return _positive(text)


def parse_positive(text: str, flag: str) -> int:
    if _positive(text) is None:
        raise UsageError(f"{flag}: expected a positive integer, got {text!r}")
    return _positive(text)


def parse_tokens(text: str) -> list[int]:
    return [parse_positive(item, "--tokens") for item in text.split(",")]


def parse_weights(text: str) -> str | list[int]:
    if text in workload.model_config.WEIGHT_MIXES:
        return text
    if not all(item.strip().isdigit() for item in text.split(",")):
        mixes = " or ".join(workload.model_config.WEIGHT_MIXES)
        raise UsageError(f"--token-weights: expected {mixes} or comma-separated positive "
                         f"integers, got {text!r}")
    return [parse_positive(item, "--token-weights") for item in text.split(",")]


def absolute(text: str) -> str:
    """A path flag as an absolute path: relative paths mean the current directory, as in the
    original, not the workdir snakemake runs in (a symlink loop or a name that is not UTF-8 is
    refused)."""
    return str(path_errors.resolve(text))


def unresolved(text: str) -> str:
    """A path flag made absolute without following its symlinks: the lock directory, which
    must not be one (``devices.check_lock_dir`` refuses it on both routes)."""
    path_errors.check_name(text)
    return os.path.abspath(os.path.expanduser(text))


def enum(key: str) -> tuple:
    """The values the schema allows for ``key`` (a flag's choices)."""
    return tuple(schema_entry(key)["enum"])


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    key: str  # the config key it sets
    help: str  # "{default}" is replaced by the schema default
    options: dict = field(default_factory=dict)  # argparse keywords
    value: Callable = lambda v: v  # flag value -> config value


FLAGS = (
    Flag(("-d", "--devices", "--device"), "devices",
         "comma-separated device ids, e.g. 0,1,2,3 (default {default}); with --until configure "
         "the baseline device, as configure.py's --device", {"metavar": "LIST"}, parse_devices),
    Flag(("--keep_thr",), "keep_thr",
         "percent of total GEMM time a GEMM needs to be searched or tuned (default {search} for "
         "--search, {bench} for --bench, {tune} for --tune; 0 keeps every GEMM without a "
         "baseline bench)",
         {"type": float}),
    Flag(("--up_thr",), "up_thr",
         "minimum speed-up ratio to keep a kernel, e.g. 1.03 keeps >= 3%% uplift "
         "(default {default})", {"type": float}),
    Flag(("--err_thr",), "err_thr",
         "maximum verified relative error of a kept kernel (default {default})", {"type": float}),
    Flag(("--duration",), "search_duration",
         "target dense-search benchmark seconds per GEMM for --search (default {default})",
         {"type": float, "metavar": "SEC"}),
    Flag(("--benchmark-duration",), "bench_duration",
         "target seconds per cold and per timed phase of the baseline benchmark (--bench and "
         "the baseline of the other modes; default {default})",
         {"type": float, "metavar": "SEC"}),
    Flag(("--compare-duration",), "compare_duration",
         "seconds per phase of the reference vs tuned comparison (geko only; default {default})",
         {"type": float, "metavar": "SEC"}),
    Flag(("--bench-freq",), "rocm.bench_freq",
         "set HIPBLASLT_BENCH_FREQ during hipblaslt-bench runs (clock-frequency columns; "
         "rocm platform; default off)", {"action": "store_true"}),
    Flag(("--no_retry",), "retry",
         "do not retry failed search or optimization jobs (default: retry once)",
         {"action": "store_true"}, lambda given: not given),
    Flag(("--client_build_dir",), "rocm.client_dir",
         "where tensilelite-client is built (rocm --tune; default <workdir>/tensilelite_client; "
         "a relative path is relative to the current directory)", {"metavar": "DIR"}, absolute),
    Flag(("--combine_with",), "combine_with",
         "finished workdirs of the same platform and arch, of this workload or a part of it "
         "(e.g. a --tune run beside this --search run): their final kernels race this "
         "campaign's and the default per "
         "GEMM; runs the target combine (combined_libs/, results/combined_results.csv)",
         {"nargs": "+", "metavar": "WORKDIR"}, lambda dirs: [absolute(d) for d in dirs]),
    Flag(("--tp",), "model_tp",
         "tensor-parallel degree --model's linears are sharded for (default {default})",
         {"metavar": "N"}, lambda text: parse_positive(text, "--tp")),
    Flag(("--tokens",), "model_tokens",
         "comma-separated token counts of --model's GEMMs, one GEMM per linear and count "
         "(default {default})", {"metavar": "LIST"}, parse_tokens),
    Flag(("--token-weights",), "model_token_weights",
         "calls per token count of --model: serving (sqrt(max/T)), equal, or one integer "
         "per token count, e.g. 8,4,1 (default {default})", {"metavar": "MIX"},
         parse_weights),
    Flag(("--sequences",), "model_sequences",
         "sequences per batch of --model: a token count up to N is a decode step, a larger "
         "one a prefill whose lm-head runs once per sequence (default {default})",
         {"metavar": "N"}, lambda text: parse_positive(text, "--sequences")),
    Flag(("--dtype",), "model_dtype",
         "input and output type of --model's GEMMs (default {default})",
         {"choices": enum("model_dtype")}),
    Flag(("--platform",), "platform",
         "hardware platform (default {default}: an analytic model, no GPU; rocm when "
         "--hipblaslt or " + HIPBLASLT_ENV + " is set)", {"choices": enum("platform")}),
    Flag(("--hipblaslt",), "rocm.hipblaslt_path",
         "built hipBLASLt checkout; selects --platform rocm (wins over " + HIPBLASLT_ENV +
         " and the config's rocm.hipblaslt_path)", {"metavar": "PATH"}, absolute),
    Flag(("-a", "--arch", "--architecture"), "arch",
         "target architecture (required for --tune unless the --list YAML has ARCH:; default "
         "{default}, {cuda} on cuda)", {"metavar": "ARCH"}),
    Flag(("-b", "--backend"), "backend",
         "tuning backend for --tune: ductile (genetic algorithm) or tensile (exhaustive); "
         "default {default}", {"choices": enum("backend")}),
    Flag(("-n", "--n_slots"), "n_slots",
         "max concurrent tuning jobs per device for --tune (default {default})", {"type": int}),
    Flag(("--lock-dir",), "lock_dir",
         "directory of the per-(device, slot) lock files (default: a private per-user temp "
         "dir shared by every geko run of this user; not a symlink)", {"metavar": "DIR"}, unresolved),
    Flag(("--no-verify",), "verify", "skip the numerical check of tuned kernels",
         {"action": "store_true"}, lambda given: not given),
    Flag(("--discard-results",), "discard_results",
         "let this run replace the finished results of another campaign or mode in the "
         "workdir (refused otherwise); applies to this run only, never saved",
         {"action": "store_true"}),
    Flag(("-v", "--verbose"), "verbosity",
         "logging of the command and of every job log: 0 WARNING, 1 INFO, 2 DEBUG "
         "(default {default})", {"type": int, "choices": enum("verbosity")}),
)

SOURCES = {"workload_log": "--workload-log", "list": "--list", "inline": "--inline",
           "model": "--model", "example": "--example"}
SOURCE_KEYS = {"workload_log": "workload_log", "list": "workload_list",
               "inline": "workload_inline", "model": "workload_model"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geko", argument_default=argparse.SUPPRESS,
        description="Find faster GEMM kernels for the shapes an application runs.",
        epilog="Arguments after -- are passed to snakemake (e.g. -- --dry-run), run in the "
               "workdir; those that would replace geko's own are refused (--configfile, "
               "--snakefile, --directory, --cores, --resources, --rerun-triggers, --scheduler, "
               "and --config keys a geko flag sets: use the flag). Without a workload source, "
               "--workdir names a campaign to continue (e.g. after --until configure). Other "
               "commands: `geko status WORKDIR`, `geko coverage --library DIR --workload "
               "LOG`; `geko status -h` for their options.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--search", dest="mode", action="store_const", const="search",
                      help="dense search of the library's existing kernels (minutes)")
    mode.add_argument("--bench", dest="mode", action="store_const", const="bench",
                      help="benchmark the workload only")
    mode.add_argument("--tune", dest="mode", action="store_const", const="tune",
                      help="generate new kernels with a genetic algorithm (hours)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--workload-log", metavar="PATH",
                     help="hipBLASLt HIPBLASLT_LOG_MASK=64 log (.yaml or .csv) or MASK=32 lines")
    src.add_argument("--list", metavar="PATH", help="size-list generator YAML")
    src.add_argument("--model", metavar="CONFIG_JSON",
                     help="a model's Hugging Face config.json: its attention, MLP and lm-head "
                          "GEMMs on one GPU (with --tp, --tokens, --token-weights, --dtype)")
    src.add_argument("--example", metavar="NAME",
                     help="a workload geko ships, by short name (a log, or a model's config.json "
                          "read as --model); `geko --example list` lists them")
    src.add_argument("--inline", nargs=9, metavar="X",
                     help="M N batch K DataType DestDataType ComputeDataType transA transB, "
                          "e.g. 1024 1024 1 1024 B B S N T")
    p.add_argument("-w", "--workdir", help="campaign directory (default geko_<timestamp>); "
                                           "alone, a campaign to continue")
    for flag in FLAGS:
        p.add_argument(*flag.names, dest=flag.key.replace(".", "__"), help=help_text(flag),
                       **flag.options)
    p.add_argument("--until", choices=("configure",),
                   help="stop after the tuning YAMLs (optimizations/) for review, as "
                        "configure.py; continue with `geko --tune --workdir DIR`")
    p.add_argument("--report", nargs="?", const="", metavar="FILE",
                   help="after the run, write the HTML report (default <workdir>/report.html)")
    p.add_argument("--cores", type=cores_count, help="CPU cores snakemake may use (default: all)")
    return p


def shown(value) -> str:
    """A default as it would be typed on the command line."""
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def help_text(flag: Flag) -> str:
    """The flag's help with its defaults read from the schema: ``{default}``, and per mode
    (``{search}``, ``{tune}``, ``{bench}``) or per platform (``{cuda}``, ...)."""
    platforms = schema_entry("platform")["enum"]
    values = {"default": shown(default(flag.key))}
    values |= {mode: shown(default(flag.key, mode=mode)) for mode in MODES}
    values |= {name: shown(default(flag.key, platform=name)) for name in platforms}
    return flag.help.format(**values)


def given_flags(args) -> dict[str, object]:
    """Config key -> value of every flag on the command line (unset flags are absent); a
    path flag's bad path is refused naming the flag."""
    values, given = vars(args), {}
    for flag in FLAGS:
        dest = flag.key.replace(".", "__")
        if dest in values:
            try:
                given[flag.key] = flag.value(values[dest])
            except path_errors.PathError as exc:
                raise UsageError(f"{flag.names[-1]} {exc}") from None
    return given


def flag_name(key: str) -> str:
    for flag in FLAGS:
        if flag.key == key:
            return "/".join(n for n in flag.names if n.startswith("--"))
    return key


# --- the config of a run ---------------------------------------------------------------------

def read_saved(workdir: Path) -> dict:
    path = workdir / CONFIG_NAME
    if not path.is_file():
        raise UsageError(
            f"no workload: give one of --workload-log, --list, --inline, --model, --example (or "
            f"--workdir of a campaign to continue; {path} does not exist)")
    try:
        saved = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: cannot parse YAML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the campaign's config: {exc}") from None
    if not isinstance(saved, dict):
        raise UsageError(f"{path}: expected a mapping of config keys, got {type(saved).__name__}")
    return saved


def choose_platform(given: dict, saved: dict, environ) -> detect.Choice:
    """--platform, else rocm where --hipblaslt is given, else the campaign's, else rocm where
    GEKO_HIPBLASLT_PATH is set, else what this machine has (``geko_lib.platforms.detect``:
    never the sim model where real hardware is present)."""
    if "platform" in given:
        return detect.Choice(given["platform"], "", "asked for with --platform")
    if platforms.CHECKOUT.key in given:
        return detect.Choice(platforms.CHECKOUT.platform, "", "")
    if saved.get("platform"):
        return detect.Choice(saved["platform"], "", "the campaign's")
    if environ.get(HIPBLASLT_ENV):
        return detect.Choice(platforms.CHECKOUT.platform, "", "")
    try:
        return detect.choose(environ=environ)
    except detect.NoCheckout as exc:
        raise UsageError(str(exc)) from None


def arch_choices(platform: str) -> tuple[str, ...]:
    """What the platform runs (the original's seven AMD choices on rocm, the NVIDIA ones on cuda,
    every one on sim, which models both): ``platforms.arch_choices``."""
    from . import platforms

    return platforms.arch_choices(platform)


def list_arch(path: Path) -> tuple[str | None, int | None]:
    """``ARCH:`` of a --list YAML and its line (None where absent); in a file of several
    documents the first one's, and a second document naming another arch is refused (one
    campaign is for one architecture)."""
    try:
        nodes = list(yaml.compose_all(path.read_text()))
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return None, None  # the workload reader names the syntax error or the bytes
    found: tuple[str | None, int | None] = (None, None)
    for node in nodes:
        for key, value in node.value if isinstance(node, yaml.MappingNode) else ():
            if not isinstance(key, yaml.ScalarNode) or key.value != "ARCH":
                continue
            line = key.start_mark.line + 1
            if not isinstance(value, yaml.ScalarNode) or not value.value.strip():
                raise UsageError(f"{path}:{line}: ARCH: expected an architecture name")
            if found[0] is not None and value.value.strip() != found[0]:
                raise UsageError(f"{path}:{line}: ARCH: {value.value.strip()!r}, but line "
                                 f"{found[1]} says {found[0]!r}: a campaign is for one "
                                 "architecture")
            found = found if found[0] is not None else (value.value.strip(), line)
    return found


def choose_arch(config: dict, given: dict, saved: dict, mode: str) -> str:
    choices = arch_choices(config["platform"])
    if "arch" in given:
        arch, where = given["arch"], "--arch"
    elif saved.get("arch"):
        return saved["arch"]
    else:
        arch, line = (list_arch(Path(config["workload_list"])) if config["workload_list"]
                      else (None, None))
        where = f"{config['workload_list']}:{line}: ARCH"
        if arch is None:
            if mode == "tune":
                raise UsageError("--tune needs --arch (or ARCH: in the --list YAML): the tuning "
                                 f"YAMLs are written for one architecture ({', '.join(choices)})")
            return default("arch", platform=config["platform"])
    newer_revisions.refuse_arch(arch, where)
    if arch not in choices:
        raise UsageError(f"{where}: {arch!r} is not an architecture of platform "
                         f"{config['platform']}; choose one of {', '.join(choices)}")
    return arch


def workload_path(text: str, flag: str) -> Path:
    """A workload file's path as given to ``flag`` (--workload-log, --list, --model, and
    coverage's --workload: one reading for all), absolute; a relative path the current
    directory lacks is the bundled file of that path (``resources.find``), where there is one."""
    path = path_errors.resolve(text, flag)
    if not path.exists():
        path = resources.find(text, Path.cwd()) or path
    return path


def workload_config(args) -> dict:
    """The workload keys of the config, the source checked before anything is written."""
    values = vars(args)
    out = {key: "" for key in SOURCE_KEYS.values()}
    if "inline" in values:
        # validates every token, and the GEMM against every platform's limits (the union: the
        # campaign's platform is not settled yet; check_workload reads it for that one)
        workload.read_inline(values["inline"], support=platforms.gemm_support(None))
        out["workload_inline"] = " ".join(values["inline"])
        return out
    if "example" in values:
        found = examples.find(values["example"])
        out[found.key] = str(found.path)
        return out
    dest = next(d for d in ("workload_log", "list", "model") if d in values)
    path = workload_path(values[dest], SOURCES[dest])
    path_errors.check_rule_file(path, SOURCES[dest])
    if not path.is_file():
        what = "is not a regular file" if path.exists() else "does not exist"
        raise UsageError(f"{SOURCES[dest]}: {path} {what}")
    out[SOURCE_KEYS[dest]] = str(path)
    return out


def check_workload(config: dict) -> None:
    """The workload read as the workflow's ingest reads it (the campaign's platform and arch:
    types either cannot run are refused, and the arch sizes a --list grid), so a bad one is
    refused before anything is written and a good one is never refused here that the
    workflow takes."""
    target = {"support": platforms.gemm_support(config["platform"]), "arch": config["arch"]}
    if config["workload_log"]:
        workload.read(config["workload_log"], **target)
    elif config["workload_list"]:
        workload.read_list(config["workload_list"], **target)
    elif config["workload_model"]:
        workload.read_model(config["workload_model"], **target,
                            **workload.model_config.options(config))
    elif config["workload_inline"]:
        workload.read_inline(config["workload_inline"], **target)


def validate(config: dict) -> None:
    """The config against the schema, each problem named by the flag that set it."""
    problem = first_problem(config)
    if problem is not None:
        key, message = problem
        raise UsageError(problem_line(key, message, flag_name(key)))


def check_ready(config: dict) -> None:
    """What the platform cannot run here (a missing or unbuilt hipBLASLt checkout) is refused
    before anything runs."""
    try:
        platforms.check_ready(config)
    except platforms.PlatformError as exc:
        raise UsageError(f"--platform {config['platform']}: {exc}") from None


def build_config(args, environ=None, notes=None) -> tuple[dict, str]:
    """(workflow config, target) from the arguments, the schema defaults and, when continuing
    a campaign, the workdir's saved config; ``notes`` (a list) gets why the platform is the
    one it is."""
    environ = os.environ if environ is None else environ
    values, given = vars(args), given_flags(args)
    continuing = not any(dest in values for dest in SOURCES)
    workdir = path_errors.resolve(values.get("workdir") or
                                  dt.datetime.now().strftime("geko_%Y%m%d_%H%M%S_%f"),
                                  "--workdir")
    path_errors.check_directory(workdir, "--workdir")  # a file, under a file, not writable
    saved = read_saved(workdir) if continuing else {}
    mode = values.get("mode") or saved.get("mode")
    if mode is None:
        raise UsageError("give one of --search, --tune, --bench")
    checkout = platforms.CHECKOUT
    if checkout.key in given and given.get("platform", checkout.platform) != checkout.platform:
        raise UsageError(f"--hipblaslt is for the {checkout.platform} platform, not --platform "
                         f"{given['platform']}")
    if values.get("until") == "configure" and mode != "tune":
        raise UsageError("--until configure is the review step of --tune (configure.py)")
    choice = choose_platform(given, saved, environ)
    platform = choice.platform
    if notes is not None and choice.why:
        notes.append(choice.why)
    config = merged(schema_defaults(), saved)
    config |= {"platform": platform, "mode": "tune" if mode == "tune" else "search",
               "workdir": str(workdir), **dict(ONE_OFF),
               # --bench times for --benchmark-duration; the search/tune baseline as the original
               "bench_timing": "duration" if mode == "bench" else "iterations"}
    if choice.hipblaslt_path:
        set_key(config, "rocm.hipblaslt_path", choice.hipblaslt_path)
    if not continuing:
        config |= workload_config(args)
        config["keep_thr"] = default("keep_thr", mode=mode)
    for key, value in given.items():
        set_key(config, key, value)
    config["arch"] = choose_arch(config, given, saved, mode)
    model_flags = [flag_name(key) for key in given if key in workload.model_config.OPTION_KEYS]
    if model_flags and not config["workload_model"]:
        raise UsageError(f"{', '.join(model_flags)}: options of a --model workload")
    # fail fast; a continued campaign's workload too: an edited log would be found bad only
    # by the ingest job, after this run had removed the outputs made from the old one
    check_workload(config)
    validate(config)
    if config.get("lock_dir") and os.path.lexists(config["lock_dir"]):
        check_lock_dir(config["lock_dir"])
    check_ready(config)
    if mode == "bench":
        return config, "bench"
    return config, "combine" if "combine_with" in given else "final_libs"


def check_lock_dir(lock_dir: str) -> None:
    """An existing --lock-dir the jobs would refuse (a symlink, a file, another user's or
    writable by others: ``devices.check_lock_dir``) is refused before anything runs."""
    from . import devices

    try:
        devices.check_lock_dir(Path(lock_dir))
    except devices.UnsafeLockError as exc:
        raise UsageError(f"--lock-dir: {exc}") from None


# what a flag means for one invocation only, as in the original: (key, its value when not given)
ONE_OFF = (("discard_results", False), ("retry", True))


def saved_config(config: dict) -> dict:
    """What geko_config.yaml keeps: the config without this run's one-off settings
    (``--discard-results``, ``--no_retry``)."""
    return config | dict(ONE_OFF)


def config_overrides(config: dict) -> list[str]:
    """snakemake ``--config`` items for this run's one-off settings, which are not saved."""
    items = [f"{key}={config[key]}" for key, usual in ONE_OFF
             if key in config and config[key] != usual]
    return ["--config", *items] if items else []


# --- running snakemake -----------------------------------------------------------------------

def with_overrides(config: dict, extra: list[str]) -> list[str]:
    """``extra`` with this run's unsaved config items in its ``--config`` option, however it is
    spelled (``--config=K=V``, ``-nCK=V``), or one of their own: a second one would replace the
    first (``refuse_replacing_options`` refuses two there)."""
    items = config_overrides(config)[1:]
    if not items:
        return extra
    for at, head, name, inline in _read_options(extra):
        if name in CONFIG_NAMES:
            return [*extra[:at], *filter(None, [head]), "--config", *items,
                    *filter(None, [inline]), *extra[at + 1:]]
    return ["--config", *items, *extra]


# snakemake's spellings of each option snakemake_command passes (with the workdir, where it runs:
# --directory) -> why it is refused after ``--``: snakemake takes the last one given, so one
# there would replace geko's silently (a --configfile ran the config file's campaign, not the
# flags', and reported success)
OWN_OPTIONS = {
    ("--snakefile", "-s"): "geko runs its own workflow",
    ("--configfile", "--configfiles"):
        "it would replace the config geko's flags set (the workdir's geko_config.yaml); "
        "give settings as geko flags, a key no flag sets as -- --config KEY=VALUE",
    ("--directory", "-d"): "snakemake runs in the workdir; give it as -w/--workdir",
    ("--cores", "-c"): "give it as geko's --cores",
    ("--resources", "--res"): "geko sets gpu and gpu_slot from --devices and --n_slots",
    ("--rerun-triggers",): "geko reuses outputs by mtime, input and params (an edited "
                           "comment in a script must not redo GPU work)",
    ("--scheduler",): "geko uses the greedy scheduler (the ilp one collapses on wide DAGs)",
}
UNTIL_OPTION = ("--until", "-U")  # refused where geko's own --until is given
CONFIG_NAMES = ("--config", "-C")
# snakemake's one-letter options that take no value: a cluster goes on past them (-nd is -n -d);
# any other letter takes the rest of the cluster as its value (-j4d is -j 4d, not -d)
VALUELESS_LETTERS = "hntkfFlSDvpa"
# keys geko sets that no Flag names: the workdir, and the mode (bench_timing follows it)
OWN_KEY_NAMES = {"workdir": "-w/--workdir", "mode": "--search/--tune/--bench",
                 "bench_timing": "--search/--tune/--bench"}


def own_config_keys() -> dict[str, str]:
    """Config key -> the geko flag that sets it: the keys a ``--config`` after ``--`` must
    not replace (every other key has no flag and is set that way, e.g. ``sim={noise: 0.1}``)."""
    keys = {flag.key: flag_name(flag.key) for flag in FLAGS}
    keys |= dict.fromkeys(SOURCE_KEYS.values(), "/".join(SOURCES.values()))
    return keys | OWN_KEY_NAMES


def _own_option(name: str, why: dict[str, str]) -> str | None:
    """The option of ``why`` snakemake reads ``name`` as: the same name, or for a long one an
    abbreviation argparse expands (``--configf``); None for any other."""
    if name in why:
        return name
    if not name.startswith("--") or name == "--config":
        return None
    return next((n for n in why if n.startswith(name) and n.startswith("--")), None)


def _option_values(tokens: list[str], first: str | None) -> list[str]:
    """The values of one option that takes several (``--config``'s ``KEY=VALUE`` items,
    ``--until``'s rules): its inline one, then the arguments up to the next option
    (snakemake's nargs="*")."""
    items = [first] if first else []
    for token in tokens:
        if token.startswith("-"):
            break
        items.append(token)
    return items


def _read_options(tokens: list[str]):
    """Each option in ``tokens`` as snakemake reads it, up to a ``--`` (then targets): (the
    index of its token, the letters of its cluster before it, its name, its inline value or
    None). A long one's ``=VALUE`` is its value; each letter of a cluster of short ones is one,
    up to the first that takes a value, the rest (-np is -n -p; -j4d is -j 4d; -nCk=1 is -n
    --config k=1)."""
    for at, token in enumerate(tokens):
        if token == "--":
            return
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            yield at, "", name, value if eq else None
        elif token.startswith("-") and len(token) > 1:
            for i, letter in enumerate(token[1:], 1):
                yield (at, token[:i] if i > 1 else "", f"-{letter}",
                       token[i + 1:].removeprefix("=") or None)
                if letter not in VALUELESS_LETTERS:
                    break


def _refused_config_item(item: str, keys: dict[str, str]) -> str | None:
    key, _, text = item.partition("=")
    if key in keys:
        return f"--config {key}=... after --: geko's {keys[key]} sets {key}; give it there"
    try:  # a section (rocm={...}) is merged key by key: refused for a key a flag sets
        value = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return None  # snakemake keeps it as text, which the schema refuses for a section
    for name in value if isinstance(value, dict) else ():
        if f"{key}.{name}" in keys:
            return (f"--config {key}={{{name}: ...}} after --: geko's "
                    f"{keys[f'{key}.{name}']} sets {key}.{name}; give it there")
    return None


def refuse_replacing_options(extra: list[str], keys: dict[str, str],
                             until: bool = False) -> None:
    """Refuse, by name in one line, a snakemake option after ``--`` that would replace what
    geko passes itself (``OWN_OPTIONS``; ``--until`` where geko's is given) or a ``--config``
    key a geko flag sets (``keys``: ``own_config_keys``)."""
    owned = OWN_OPTIONS | ({UNTIL_OPTION: "geko's --until is given; give one of the two"}
                           if until else {})
    why = {name: text for names, text in owned.items() for name in names}
    configs = 0
    for at, _, name, inline in _read_options(extra):
        full = _own_option(name, why)
        if full:
            spelled = name if name == full else f"{name} (snakemake reads {full})"
            raise UsageError(f"{spelled} after --: {why[full]}")
        if name not in CONFIG_NAMES:
            continue
        configs += 1
        if configs > 1:
            raise UsageError("--config twice after --: snakemake keeps only the last (the "
                             "first one's items, and geko's own, would be lost); give every "
                             "item to one")
        for item in _option_values(extra[at + 1:], inline):
            refused = _refused_config_item(item, keys)
            if refused:
                raise UsageError(refused)


def snakemake_until(extra: list[str]) -> tuple[str, ...]:
    """The rules of a snakemake ``--until`` (``-U``, ``--until=R``, an abbreviation) among
    the arguments after ``--``: snakemake stops after them."""
    names: list[str] = []
    for at, _, name, inline in _read_options(extra):
        if _own_option(name, dict.fromkeys(UNTIL_OPTION, "")):
            names += _option_values(extra[at + 1:], inline)  # its values: up to the next option
    return tuple(names)


def snakemake_command(config_path: Path, config: dict, target: str, cores: int,
                      extra: list[str]) -> list[str]:
    # the target goes first: options that take several values would swallow it
    extra = with_overrides(config, extra)
    return [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), target,
            "--configfile", str(config_path), "--rerun-triggers", "mtime", "input", "params",
            "--cores", str(cores), "--resources", f"gpu={len(config['devices'])}",
            f"gpu_slot={len(config['devices']) * config['n_slots']}",
            "--scheduler", "greedy", "--rerun-incomplete", "--keep-going",
            # the bookkeeping rules run in snakemake's process (campaign.rules: in_process)
            "--force-use-threads", *extra]


def child_environment(config: dict) -> dict:
    """snakemake's environment: ``--hipblaslt`` must win over a GEKO_HIPBLASLT_PATH the shell
    already has, so the flag's path is passed on in that variable too; the workflow's own
    closing headline is left to this command (``terminal.COMMAND_ENV``)."""
    env = dict(os.environ, **{terminal.COMMAND_ENV: "1"})
    path = platforms.checkout_path(config)
    if path:
        env[HIPBLASLT_ENV] = path
    return env


def report_path(values: dict, workdir: Path) -> Path | None:
    if "report" not in values:
        return None
    return (path_errors.resolve(values["report"], "--report") if values["report"]
            else workdir / "report.html")


SUBCOMMANDS = ("status", "coverage")


def status_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geko status",
        description="Where a running or finished campaign stands, from its workdir alone: jobs "
                    "done/running/failed, best uplift so far, busy devices.")
    p.add_argument("workdir", help="the campaign's workdir")
    p.add_argument("--config", metavar="PATH",
                   help="the config the run used (default: WORKDIR/geko_config.yaml, written by "
                        "the geko command; without one, devices come from the job logs)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def coverage_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geko coverage",
        description="Which GEMMs of an application's log a library serves (exact type and "
                    "size), with their share of calls and of GEMM time.")
    p.add_argument("--library", required=True, metavar="PATH",
                   help="library logic: a directory (e.g. a campaign's final_libs) or one file; "
                        "or one export (exports/: override file, TunableOp CSV, aiter CSV)")
    p.add_argument("--workload", "--workload-log", dest="workload", required=True,
                   metavar="LOG", help="the application's GEMM log (any workload format)")
    p.add_argument("--timings", metavar="CSV",
                   help="per-GEMM times (a campaign's baseline/workload.csv or summary.csv: GEMM "
                        "identity and us); default: the sim model's estimate")
    p.add_argument("--arch", help="the GPU the library is for: an export (--library FILE) "
                                  "measured on another arch is refused; also the arch of the "
                                  "sim model estimate (default: the library's, else gfx950)")
    p.add_argument("--library-version", metavar="BUILD",
                   help="the library build deployed (hipBLASLt's git version): an export "
                        "measured with another build, or recording none, is refused")
    p.add_argument("--top", type=int, default=30,
                   help="GEMM rows to list, largest time first (0 = all; default 30)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def _dump_json(data) -> str:
    from .campaign.analysis import _finite

    return json.dumps(_finite(data), indent=2, allow_nan=False)


def _print(text: str) -> None:
    """Print a report; a reader that stops early (``| head``) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def status_main(argv: list[str]) -> int:
    from .campaign import status

    args = status_parser().parse_args(argv)
    try:
        with path_errors.translated():
            report = status.collect(args.workdir, args.config)
    except (status.StatusError, path_errors.PathError) as exc:
        print(f"geko status: error: {exc}", file=sys.stderr)
        return 2
    _print(_dump_json(report) if args.json else status.format_text(report))
    return 0


def coverage_main(argv: list[str]) -> int:
    from .campaign import coverage
    from .library import LibraryError
    from .library.exports import ExportError

    args = coverage_parser().parse_args(argv)
    try:
        with path_errors.translated():
            report = coverage.coverage(args.library, workload_path(args.workload, "--workload"),
                                       timings=args.timings, arch=args.arch,
                                       library_version=args.library_version)
    except (coverage.CoverageError, workload.WorkloadError, GemmError, LibraryError,
            ExportError, path_errors.PathError) as exc:
        print(f"geko coverage: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:  # a reader's gap: still one line, never a traceback
        print(f"geko coverage: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    _print(_dump_json(report) if args.json else coverage.format_text(report, top=args.top))
    return 0


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(geko's own arguments, snakemake's: everything after ``--``)."""
    if "--" not in argv:
        return argv, []
    return argv[:argv.index("--")], argv[argv.index("--") + 1:]


def check_installed() -> None:
    if not SNAKEFILE.is_file():
        raise UsageError(f"workflow not found at {SNAKEFILE}: this geko was installed "
                         "without its workflow files; reinstall it from a checkout "
                         "(pip install . or pip install -e .)")


def main(argv=None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C before snakemake started, or after it ended
        interrupt.tell()
        return interrupt.EXIT_CODE


def _main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return (status_main if argv[0] == "status" else coverage_main)(argv[1:])
    own, extra = split_argv(argv)
    refused = newer_revisions.refused_flag(own)
    if refused:  # before argparse: one line naming the flag, not a usage block
        print(f"geko: error: {refused}", file=sys.stderr)
        return 2
    args = parser().parse_args(own)
    values = vars(args)
    if values.get("example") == "list":
        for line in examples.listing():
            _print(line)
        return 0
    notes: list[str] = []
    try:
        with path_errors.translated():  # the system's refusals of a path: one line naming it
            refuse_replacing_options(extra, own_config_keys(), until="until" in values)
            check_installed()
            config, target = build_config(args, notes=notes)
    except (GekoError, workload.WorkloadError, GemmError) as exc:
        print(f"geko: error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=LEVELS[config["verbosity"]],
                        handlers=[log_setup.attach(logging.StreamHandler(sys.stderr))])
    # the first line: is this a model, and why this platform
    terminal.say(terminal.platform_notice(config, notes[0] if notes else ""))
    workdir = Path(config["workdir"])
    planned_only = is_dry_run(extra) and not os.path.lexists(workdir)
    try:
        with path_errors.translated(), contextlib.ExitStack() as held:
            # the workdir is this command's until snakemake ends; checked before anything in
            # it changes (geko_lib.campaign.start)
            held.enter_context(campaign_start.before_command(workdir, config))
            return run_workflow(workdir, config, target, values, extra)
    except GekoError as exc:
        print(f"geko: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if planned_only:  # a dry run plans; the workdir it needed to plan in was not asked for
            shutil.rmtree(workdir, ignore_errors=True)


def is_dry_run(extra: list[str]) -> bool:
    """snakemake's ``--dry-run`` (``-n``) among the arguments after ``--``."""
    return "--dry-run" in extra or "-n" in extra


def run_workflow(workdir: Path, config: dict, target: str, values: dict,
                 extra: list[str]) -> int:
    """snakemake in the workdir: its output into logs/snakemake.log (the terminal at -v 2),
    the campaign bar and phase lines on the terminal, then the summary."""
    config_path = files.write_text(workdir / CONFIG_NAME,
                                   yaml.safe_dump(saved_config(config), sort_keys=False))
    # where the run stops: geko's --until, else snakemake's after -- (then the closing lines
    # say where it stopped, never a finished run's summary of outputs it did not make)
    until = values.get("until") or snakemake_until(extra)
    if values.get("until"):
        extra = ["--until", values["until"], *extra]
    if "configure" in terminal.until_names(until):
        until = "configure"  # the review step however it was asked for
    cores = values.get("cores") or max(os.cpu_count() or 1, 1)
    command = snakemake_command(config_path, config, target, cores, extra)
    log.debug("running: %s", " ".join(command))
    dry = is_dry_run(extra)
    output = snakemake_output.Output(workdir, command, show_all=config["verbosity"] >= 2 or dry,
                                     phases=config["verbosity"] >= 1)
    try:
        # the original's one campaign bar over the phase's jobs while snakemake runs
        code = campaign_progress.call(command, env=child_environment(config), cwd=workdir,
                                      workdir=workdir, phase=campaign_progress.phase_of(
                                          config, target, until),
                                      on_line=output.feed)
        log_file = terminal.snakemake_log(workdir)  # the run's, not the report's
        if code == 0 and report_path(values, workdir) is not None:
            code = campaign_progress.call(
                [*command, "--report", str(report_path(values, workdir))],
                env=child_environment(config), cwd=workdir, workdir=workdir, phase=None,
                on_line=output.feed)
    except interrupt.Interrupted:  # Ctrl-C: snakemake and its jobs have ended
        if not output.interrupted:  # snakemake's onerror hook says it where it got that far
            interrupt.tell()
        return interrupt.EXIT_CODE
    finally:
        output.close()
    if code != 0 and output.locked:
        print(f"geko: error: {campaign_lock.running_message(workdir)}", file=sys.stderr)
        return code
    if dry:
        return code
    for line in output.failure_lines() if code != 0 else []:
        print(line, flush=True)
    terminal.run_summary(workdir, config, target=target, until=until,
                         code=code, report=report_path(values, workdir),
                         passed_report=terminal.report_in(extra),
                         log_file=log_file)
    if output.write_error is not None:  # a full disk: told last, in one line
        print(f"geko: error: {output.write_error}", file=sys.stderr)
        return code or 1
    return code


if __name__ == "__main__":
    sys.exit(main())
