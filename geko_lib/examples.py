"""The workloads geko ships, by short name: ``geko --search --example llama3_8b_serving`` from
any directory (the files live in the checkout's ``config/`` or the installed package's), and
``geko --example list`` to see them.

Two kinds, each a directory of ``config/`` (``resources.BUNDLED_WORKLOADS``): application logs
(``workloads/*.yaml``, read as ``--workload-log``) and models' Hugging Face ``config.json``
files (``models/*.json``, read as ``--model``). A file's name without its suffix is its short
name; the bare file name is found from any directory too (``resources.find``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import resources
from .errors import GekoError

# bundled directory -> (file suffix, the workload config key its files set, the flag)
KINDS = dict(zip(resources.BUNDLED_WORKLOADS, (
    (".yaml", "workload_log", "--workload-log"),
    (".json", "workload_model", "--model"))))


class ExampleError(GekoError):
    """A short name that names no bundled workload."""


@dataclass(frozen=True)
class Example:
    name: str
    path: Path
    key: str  # the config key it sets: workload_log or workload_model
    flag: str  # the flag that reads the same file: --workload-log or --model

    def description(self) -> str:
        """A log's first comment line; a model config's Hugging Face name and sizes."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return "(unreadable)"
        if self.key == "workload_model":
            try:
                cfg = json.loads(text)
                return (f"model config of {cfg.get('_name_or_path', self.name)}: hidden "
                        f"{cfg['hidden_size']}, {cfg['num_hidden_layers']} layers, "
                        f"{cfg['num_attention_heads']} heads ({cfg.get('num_key_value_heads')} "
                        "KV)")
            except (ValueError, KeyError, TypeError, AttributeError):
                return "model config (unreadable)"
        first = text.splitlines()[0] if text else ""
        return first.lstrip("# ").strip() if first.startswith("#") else "application log"


def bundled() -> dict[str, Example]:
    """Every bundled workload by short name, logs first, each kind in name order."""
    out = {}
    for folder, (suffix, key, flag) in KINDS.items():
        for path in sorted(resources.path(folder).glob(f"*{suffix}")):
            out[path.stem] = Example(path.stem, path, key, flag)
    return out


def bundled_file(name: str) -> Example | None:
    """The bundled workload whose file is called ``name`` (a bare file name, no directory)."""
    return next((e for e in bundled().values() if e.path.name == name), None)


def find(name: str) -> Example:
    """The bundled workload called ``name`` (its short name, or its file name)."""
    found = bundled().get(name) or bundled_file(name)
    if found is None:
        raise ExampleError(f"--example: {name!r} is not a bundled workload; choose one of "
                           f"{', '.join(bundled())} (geko --example list)")
    return found


def listing() -> list[str]:
    """``geko --example list``: a line per bundled workload, with the flag that reads it."""
    examples = bundled().values()
    width = max((len(e.name) for e in examples), default=0)
    return [f"{e.name:<{width}}  {e.flag:<14}  {e.description()}" for e in examples]
