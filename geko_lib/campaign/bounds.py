"""The workdir's bounds: every path geko (or Snakemake, for it) writes or deletes lies inside the
workdir once symbolic links are resolved.

A campaign writes and removes files by their names under the workdir (the audit removes an
unstamped ``results/final_results.csv``, Snakemake removes a job's old outputs, jobs write new
ones, ``--report`` writes ``report.html``). A symlink anywhere under the workdir that leads out
of it would turn each of those into a write or a delete somewhere else. So before anything in a
workdir changes, whichever door a run came in by, every symlink under it is resolved and one
that leads outside refuses the run, naming the link and where it points. Links that stay inside
are harmless and left alone. A link made after this check, while the run goes on, is refused
when a job writes through it: geko's writer of outputs keeps every job's inside its workdir
(``files.confined_to``) and refuses in a line of this form.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..files import LinkOutOfWorkdir, refusal

# the refusal is the writer's (files): one error and one line, whenever the link is met
__all__ = ["LinkOutOfWorkdir", "links_out", "refuse_links_out"]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def links_out(workdir) -> list[tuple[Path, Path]]:
    """(link, where it leads) for every symlink under ``workdir`` that resolves outside it (a
    dangling link by where it would lead); the walk never follows a link."""
    root = os.path.realpath(workdir)
    found = []
    # named as the caller names the workdir; followlinks=False: a link is seen, not entered
    for parent, dirs, names in os.walk(workdir):
        for name in dirs + names:
            path = os.path.join(parent, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if not _inside(target, root):
                    found.append((Path(path), Path(target)))
    return found


def refuse_links_out(workdir) -> None:
    """Refuse a run in a workdir holding a symlink that leads outside it (module docstring)."""
    if not Path(workdir).is_dir():
        return
    found = links_out(workdir)
    if found:
        link, target = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise refusal(link, target, workdir, more)
