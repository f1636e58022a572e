"""The config schema (workflow/schemas/config.schema.yaml): the one place config defaults live.

The ``geko`` command, ``geko status`` and the campaign identity read every default, help text and
choice from it; the workflow validates against it (Snakemake fills the same defaults).
"""

from __future__ import annotations

import copy
import functools
import math
from pathlib import Path

import yaml

from . import resources

SCHEMA = resources.path("workflow", "schemas", "config.schema.yaml")


@functools.cache
def schema() -> dict:
    # libyaml where PyYAML has it: the geko command and Snakemake's process read the schema at
    # their start, and the pure-Python parser takes 15 ms of CPU over it, libyaml 2 ms
    return yaml.load(SCHEMA.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def schema_entry(key: str) -> dict:
    """The schema of config key ``key`` (``rocm.bench_freq``: key bench_freq of section rocm)."""
    entry = schema()
    for part in key.split("."):
        entry = entry["properties"][part]
    return entry


def default(key: str, mode: str | None = None, platform: str | None = None):
    """The schema default of ``key``; ``geko_default_by_mode`` / ``geko_default_by_platform``
    annotations in the schema give the original's per-mode / per-platform defaults."""
    entry = schema_entry(key)
    by_mode = entry.get("geko_default_by_mode", {})
    by_platform = entry.get("geko_default_by_platform", {})
    if mode in by_mode:
        return by_mode[mode]
    if platform in by_platform:
        return by_platform[platform]
    return entry.get("default")


def schema_defaults(properties: dict | None = None) -> dict:
    """Every key's default, sections (objects with properties) filled key by key."""
    out = {}
    for key, entry in (properties or schema()["properties"]).items():
        if "properties" in entry and entry.get("type") == "object":
            out[key] = schema_defaults(entry["properties"])
        elif "default" in entry:
            out[key] = copy.deepcopy(entry["default"])
    return out


def set_key(config: dict, key: str, value) -> None:
    *sections, name = key.split(".")
    for section in sections:
        config = config.setdefault(section, {})
    config[name] = value


def get_key(config: dict, key: str, missing=None):
    for part in key.split("."):
        if not isinstance(config, dict) or part not in config:
            return missing
        config = config[part]
    return config


def merged(base: dict, override: dict) -> dict:
    """``base`` with ``override``'s keys set, sections merged key by key (as snakemake does)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def non_finite(config: dict, properties: dict | None = None) -> tuple[str, float] | None:
    """(key, value) of the first number-typed key set to NaN or infinity, else None.

    JSON Schema cannot refuse these: every bound compares false against NaN, so ``up_thr: .nan``
    (or ``--up_thr nan``) would pass the schema and silently keep no kernel.
    """
    for key, entry in (properties or schema()["properties"]).items():
        value = config.get(key) if isinstance(config, dict) else None
        if "properties" in entry and isinstance(value, dict):
            found = non_finite(value, entry["properties"])
            if found:
                return f"{key}.{found[0]}", found[1]
        elif isinstance(value, float) and not math.isfinite(value):
            return key, value
    return None


def yaml_booleans(config: dict, properties: dict | None = None) -> dict:
    """``config`` with the text of every boolean key read as YAML reads it (``true``, ``no``,
    ...): snakemake's ``--config retry=true`` hands the Snakefile the text "true" (only
    ``True``/``False`` become booleans there), where a config file's ``retry: true`` is the
    boolean; both doors take the same words. Other text is left for the schema to refuse."""
    for key, entry in (properties or schema()["properties"]).items():
        value = config.get(key)
        if entry.get("type") == "object" and "properties" in entry and isinstance(value, dict):
            yaml_booleans(value, entry["properties"])
        elif entry.get("type") == "boolean" and isinstance(value, str):
            try:
                read = yaml.safe_load(value)
            except yaml.YAMLError:
                continue
            if isinstance(read, bool):
                config[key] = read
    return config


def typed_overrides(config: dict, entries) -> dict:
    """``config`` with the value of each snakemake ``--config KEY=VALUE`` of ``entries`` read
    as YAML reads a config file's ``KEY: VALUE``, key by key where it is a section (as
    snakemake merges it). Snakemake reads only a number or True/False and hands lists and
    sections over as text: ``devices=[0,1]`` came as ["0", "1"] (refused: '1' is not of type
    'integer'), ``sim={noise: 0.1}`` as a noise of "0.1". Where the schema takes snakemake's
    reading and not YAML's (``workload_log=yes`` is the file "yes"), snakemake's is kept."""
    properties = schema()["properties"]
    for entry in entries or ():
        key, equals, text = str(entry).partition("=")
        if not equals or key not in config or key not in properties:
            continue  # snakemake refuses a malformed item; the schema an unknown key
        try:
            value = yaml.safe_load(text) if text else None
        except (yaml.YAMLError, RecursionError):
            continue  # kept as text: the schema names it
        config[key] = _typed(config[key], value, properties[key])
    return config


def _typed(current, value, entry: dict):
    """``value`` (YAML's reading) where the schema ``entry`` takes it or refuses ``current``
    (snakemake's) too, else ``current``; a section merged key by key."""
    import jsonschema

    if isinstance(value, dict) and isinstance(current, dict):
        known = entry.get("properties")
        for name, item in value.items():
            if name in current and (known is None or name in known):
                # a section without properties (tune_options) takes any value, as a file's
                current[name] = _typed(current[name], item, known[name] if known else {})
        return current
    takes = jsonschema.Draft202012Validator(entry).is_valid
    return value if takes(value) or not takes(current) else current


def first_problem(config: dict) -> tuple[str, str] | None:
    """(key, what is wrong) of the first value the schema refuses, then of the first NaN or
    infinite number, else None: what both doors (the ``geko`` flags, snakemake's ``--config``
    and config files) refuse, so they refuse the same values with the same words."""
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema()).iter_errors(config))
    if error is not None:
        return ".".join(str(p) for p in error.path), error.message
    found = non_finite(config)
    if found is not None:
        return found[0], f"{found[1]} is not a finite number"
    return None


def problem_line(key: str, message: str, flag: str | None = None) -> str:
    """One line naming the config key (and the ``geko`` flag that set it, where one did), its
    value and what is allowed: ``--up_thr (config key up_thr): 0 is less than ...``."""
    where = f"{flag} (config key {key})" if flag and flag != key else f"config key {key or '(top)'}"
    return f"{where}: {message}"
