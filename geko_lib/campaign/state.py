"""A campaign's identity and the workdir's ``run_state.json`` (the original's role).

The identity is what makes two runs the same campaign: the workload (its path and the SHA-256 of
its bytes, plus the file a ``--list`` YAML names), the platform, the architecture, the vendor
library version and the options that shape measured results. ``run_state.json`` records it when a
campaign starts in a workdir (whichever entry point runs: the workflow itself writes it); every
later start compares, and a workdir reused with another workload or options is refused with what
differs and how to start over, before anything in the workdir changes.

Options that only select or judge results (``keep_thr``, ``up_thr``, ``err_thr``, ``verify``,
the mode, devices, export settings) may change between runs: Snakemake's params triggers and the
outputs' stamps (``geko_lib.campaign.integrity``) recompute what they shape.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from ..config_schema import merged, schema_defaults
from ..errors import GekoError
from .integrity import file_sha256, json_sha256
from ..schemas import RunState

FILE = RunState.FILE

# config keys whose values shape measured results (a change makes every result another campaign's)
RESULT_OPTIONS = ("bench_duration", "search_duration", "compare_duration", "rotating_mb",
                  "backend", "tune_options", "epilogues")
# and, per platform, the settings of its config section that it declares (RESULT_OPTIONS)


class CampaignMismatch(GekoError):
    """The workdir holds another campaign (another workload, platform, arch or options)."""


# --- the identity --------------------------------------------------------------------------------

def with_defaults(config: dict) -> dict:
    """``config`` over the schema's defaults, merged as Snakemake merges config files (nested
    mappings key by key), so the ``geko`` command and the workflow see the same values."""
    return merged(schema_defaults(), config)


def _list_named_file(path: Path) -> Path | None:
    """The workload log a ``--list`` YAML names (``SIZE_OPTION: 2``, ``GEMM_LOG_PATH``)."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(data, dict) or data.get("SIZE_OPTION") != 2:
        return None
    named = data.get("GEMM_LOG_PATH")
    if not isinstance(named, str) or not named.strip():
        return None
    target = Path(named.strip()).expanduser()
    return target if target.is_absolute() else path.parent / target


def workload_identity(config: dict) -> dict:
    """kind, input_path, input_sha256 (the bytes of the workload file, as the original) and
    workload_sha256 (those bytes plus a file a --list names: an edit there is another workload;
    for a model's config.json, plus the options its GEMMs are made with: tp, tokens, ...)."""
    from ..workload import SOURCE_KINDS, model_config

    for kind in SOURCE_KINDS:
        value = config.get(f"workload_{kind}")
        if value:
            break
    else:
        return {"kind": None, "input_path": None, "input_sha256": None, "workload_sha256": None}
    if kind == "inline":
        sha = hashlib.sha256(" ".join(str(value).split()).encode()).hexdigest()
        return {"kind": kind, "input_path": f"inline: {value}", "input_sha256": sha,
                "workload_sha256": sha}
    path = Path(value)
    sha = file_sha256(path) if path.is_file() else None
    combined = hashlib.sha256(f"{kind}\0{sha}".encode())
    named = _list_named_file(path) if kind == "list" else None
    if named is not None and named.is_file():
        combined.update(f"\0{named}\0{file_sha256(named)}".encode())
    if kind == "model" and sha is not None:
        combined.update(f"\0{model_config.options_digest(config)}".encode())
    return {"kind": kind, "input_path": str(path), "input_sha256": sha,
            "workload_sha256": combined.hexdigest()}


def result_options(config: dict) -> dict:
    from .. import platforms

    platform = platforms.name_of(config)
    section = config.get(platform) or {}
    options = {key: config.get(key) for key in RESULT_OPTIONS}
    options[platform] = {key: section.get(key)
                         for key in platforms.platform_class(platform).RESULT_OPTIONS}
    return options


def made_by(platform, options: dict) -> dict:
    """What results depend on besides their inputs: the platform, its library version and the
    digest of the options that shaped them. One rule for every stamp's ``options_sha256``:
    the campaign's identity (``result_options``) and the API's search chunks (search.run's
    keywords and duration) both call it, so results are reused by the same rule on both
    doors."""
    return {"platform": platform.name,
            "library_version": getattr(platform, "library_version", None),
            "options_sha256": json_sha256(options)}


def identity(config: dict) -> dict:
    """The campaign's identity from a full config (defaults filled in)."""
    from .. import platforms

    options = result_options(config)
    made = made_by(platforms.get(config), options)
    return {**workload_identity(config), "platform": made["platform"], "arch": config.get("arch"),
            "library_version": made["library_version"], "options": options,
            "options_sha256": made["options_sha256"]}


# --- run_state.json ------------------------------------------------------------------------------

COMPARED = ("input_path", "input_sha256", "workload_sha256", "platform", "arch",
            "library_version")


def differences(recorded: dict, current: dict) -> list[str]:
    out = [f"{key} {recorded.get(key)!r} (this run: {_value(key, current)})"
           for key in COMPARED if recorded.get(key) != current.get(key)]
    old, new = recorded.get("options") or {}, current.get("options") or {}
    out += [f"option {key} {old.get(key)!r} (this run: {new.get(key)!r})"
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
    return out


def _value(key: str, current: dict) -> str:
    """This run's value in a difference: a digest of a workload file that is not there is that
    file missing, not "None"."""
    value = current.get(key)
    if value is None and key.endswith("sha256") and current.get("input_path"):
        return f"{current['input_path']} does not exist"
    return repr(value)


def read(workdir) -> dict | None:
    """The recorded run state (with the identity geko adds), or None where there is none."""
    path = Path(workdir) / FILE
    if not path.is_file():
        return None
    RunState.load(path)  # the original's keys must be there and readable
    return json.loads(path.read_text())


def check(workdir, current: dict) -> None:
    """Refuse a workdir whose run_state.json records another campaign; changes nothing."""
    workdir = Path(workdir)
    recorded = read(workdir)
    if recorded is None:
        return
    different = differences({**recorded, **(recorded.get("identity") or {})}, current)
    if different:
        raise CampaignMismatch(
            f"{workdir / FILE}: this workdir belongs to another campaign: "
            + "; ".join(different)
            + f". Start over with a new --workdir (or the config's workdir), or delete {workdir} "
              "to recompute everything there")


def record(workdir, current: dict, mode: str) -> Path:
    """Write run_state.json at a campaign's start (created once, refreshed on every start)."""
    path = Path(workdir) / FILE
    return _dump(path, _state(path, current), current, mode)


def finish(workdir, current: dict, mode: str, configured: bool, optimized: bool) -> Path:
    """Refresh run_state.json after a successful run: how far the campaign got."""
    path = Path(workdir) / FILE
    state = _state(path, current)
    state.configured, state.optimized = configured, optimized
    return _dump(path, state, current, mode)


def _state(path: Path, current: dict) -> RunState:
    """The run state to write: the recorded one (its creation time, how far it got) with this
    campaign's input, which differs only where the run was allowed to replace another's
    (``discard_results``)."""
    state = RunState.load(path) if path.is_file() else \
        RunState(input_sha256="", input_path="")
    state.input_sha256 = current["input_sha256"] or ""
    state.input_path = current["input_path"] or ""
    return state


def _dump(path: Path, state: RunState, current: dict, mode: str) -> Path:
    from dataclasses import asdict

    from .. import files
    from ..schemas import _now

    state.last_modified = _now()
    data = {**asdict(state), "mode": mode,
            "identity": {k: v for k, v in current.items() if k not in ("input_path",
                                                                        "input_sha256")}}
    return files.write_text(path, json.dumps(data, indent=4, default=str) + "\n")
