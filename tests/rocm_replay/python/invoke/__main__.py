"""``python -m invoke <task-name> [--option value ...]`` as pyinvoke answers it: tasks.py is
found in the working directory or one above it, the dashed task name names a ``@task``
function, each ``--dashed-option`` one of its keyword parameters (an option the task does not
take is refused, as invoke does: "No idea what '--x' is!")."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

from invoke import Context


def find_tasks() -> Path | None:
    for directory in (Path.cwd(), *Path.cwd().parents):
        if (directory / "tasks.py").is_file():
            return directory / "tasks.py"
    return None


def main(argv) -> int:
    path = find_tasks()
    if path is None:
        print("Can't find any collection named 'tasks'!", file=sys.stderr)
        return 1
    spec = importlib.util.spec_from_file_location("tasks", path)
    tasks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tasks)
    if not argv:
        print("No task given", file=sys.stderr)
        return 1
    fn = getattr(tasks, argv[0].replace("-", "_"), None)
    if fn is None or not getattr(fn, "invoke_task", False):
        print(f"No idea what '{argv[0]}' is!", file=sys.stderr)
        return 1
    params = list(inspect.signature(fn).parameters)[1:]  # after the context
    kwargs, rest = {}, argv[1:]
    while rest:
        option = rest.pop(0)
        name = option[2:].replace("-", "_") if option.startswith("--") else ""
        if name not in params or not rest:
            print(f"No idea what '{option}' is!", file=sys.stderr)
            return 1
        kwargs[name] = rest.pop(0)
    fn(Context(), **kwargs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
