"""A fake built hipBLASLt checkout for the rocm platform's tests (no AMD GPU here).

Layout (what geko_lib.platforms.rocm.install checks and what the platform runs):

    <root>/.git/HEAD, .git/refs/heads/develop        the revision (FAKE_HASH)
    <root>/tensilelite/Tensile/bin/<Tool>            the TensileLite replays of tests/rocm_replay/
                                                      (TENSILE_TOOLS: tensile_tuner.py -> Tensile,
                                                      tensile_create_library.py ->
                                                      TensileCreateLibrary, tensile_merge_library.py
                                                      -> TensileMergeLibrary: the "bin" form of
                                                      geko_lib.platforms.rocm.tensilelite)
    <root>/tensilelite/tasks.py                       tensilelite_tasks.py: the invoke task that
                                                      builds tensilelite-client
    <root>/build/release/clients/staging/hipblaslt-bench
                                                      sh wrapper: GEKO_REPLAY_ROOT=<root> exec
                                                      <this interpreter> tests/rocm_replay/
                                                      hipblaslt_bench.py "$@"
    <root>/build/release/device-library/MatchTable.yaml   global index -> [logic file, local]
    <root>/build/release/device-library/<schedule>/Equality/*.yaml
                                                      the real logic files of
                                                      tests/fixtures/tensile_logic/

The client build runs ``python -m invoke build-client ...`` in ``tensilelite/``: with
INVOKE_PATH (tests/rocm_replay/python, holding an ``invoke`` stand-in) on PYTHONPATH, the fake's
tasks.py builds a stand-in client, as the real tasks would build the real one.

Global solution indices are numbered from FIRST_INDEX over the logic files in name order, as
hipBLASLt numbers its device library.
"""

from __future__ import annotations

import shlex
import shutil
import stat
import sys
from pathlib import Path

import yaml

from tests.conftest import FIXTURES

REPLAY_DIR = Path(__file__).resolve().parent / "rocm_replay"
LOGIC_FIXTURES = FIXTURES / "tensile_logic"
FAKE_HASH = "0123456789abcdef0123456789abcdef01234567"
FIRST_INDEX = 300000
# replay script -> where a checkout keeps what it stands in for (the TensileLite launchers'
# "bin" form), and the tool's `python -m tensilelite` subcommand (the "module" form)
TENSILE_TOOLS = {"tensile_tuner.py": (Path("Tensile", "bin", "Tensile"), "run"),
                 "tensile_create_library.py": (Path("Tensile", "bin", "TensileCreateLibrary"),
                                               "create-library"),
                 "tensile_merge_library.py": (Path("Tensile", "bin", "TensileMergeLibrary"),
                                              "merge-library"),
                 "tensilelite_tasks.py": (Path("tasks.py"), None)}
# PYTHONPATH entry holding the `invoke` stand-in (`python -m invoke build-client ...`)
INVOKE_PATH = REPLAY_DIR / "python"


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def bench_wrapper(root: Path) -> str:
    replay = REPLAY_DIR / "hipblaslt_bench.py"
    return ("#!/bin/sh\n"
            f"GEKO_REPLAY_ROOT={shlex.quote(str(root))} exec {shlex.quote(sys.executable)} "
            f"{shlex.quote(str(replay))} \"$@\"\n")


def install_tensile_replays(tensilelite: Path) -> list[Path]:
    """Every replay of the TensileLite side where a checkout keeps the real tool (TENSILE_TOOLS)."""
    installed = []
    for script, (where, _) in sorted(TENSILE_TOOLS.items()):
        target = tensilelite / where
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPLAY_DIR / script, target)
        target.chmod(target.stat().st_mode | stat.S_IXUSR)
        installed.append(target)
    return installed


def write_device_library(root: Path, logic_files) -> Path:
    """Copies of the logic files and the MatchTable numbering their solutions."""
    from geko_lib import library as liblogic

    device = root / "build" / "release" / "device-library"
    table, index = {}, FIRST_INDEX
    for source in sorted(logic_files, key=lambda p: Path(p).name):
        lib = liblogic.load(source)
        target = device / str(lib.schedule_name) / "Equality" / Path(source).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        for position in range(len(lib.solutions)):
            table[index] = [str(target.relative_to(device)), lib.solutions.index_of(position)]
            index += 1
    path = device / "MatchTable.yaml"
    path.write_text(yaml.safe_dump(table, sort_keys=True))
    return path


def fixture_logic(arch: str | None = None) -> list[Path]:
    """The real logic fixtures (those for ``arch`` only, when given: one library is built for
    one architecture)."""
    from geko_lib import library as liblogic

    files = sorted(LOGIC_FIXTURES.glob("*.yaml"))
    return [p for p in files if arch is None or liblogic.load(p).architecture_name == arch]


def write_git(root: Path, git_hash: str = FAKE_HASH, packed: bool = False) -> None:
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (git / "HEAD").write_text("ref: refs/heads/develop\n")
    if packed:
        (git / "packed-refs").write_text(f"# pack-refs with: peeled fully-peeled sorted\n"
                                         f"{git_hash} refs/heads/develop\n")
    else:
        (git / "refs" / "heads" / "develop").write_text(git_hash + "\n")


def build_fake_hipblaslt(root: Path, logic_files=None, *, bench_location: str = "staging",
                         git_hash: str = FAKE_HASH) -> Path:
    """A fake checkout at ``root`` (see the module docstring); returns root."""
    root = Path(root)
    (root / "tensilelite").mkdir(parents=True, exist_ok=True)
    install_tensile_replays(root / "tensilelite")
    clients = root / "build" / "release" / "clients"
    bench = clients / "staging" / "hipblaslt-bench" if bench_location == "staging" else \
        clients / "hipblaslt-bench"
    _executable(bench, bench_wrapper(root))
    if logic_files is None:
        logic_files = fixture_logic()
    write_device_library(root, logic_files)
    write_git(root, git_hash)
    return root
