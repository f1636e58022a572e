"""LibraryCollection: the original's collection of libraries, keyed by file name.

It is a ``dict`` (file name -> Library), so code that walks it as a mapping keeps working, with
the original's collection methods, each applied to every library it holds."""

from __future__ import annotations

from pathlib import Path

from . import edits
from .logic import LibraryLogic, dump, load


class LibraryCollection(dict):
    """{file name: Library}, with trim, add_epilogues, create_bench_input and dump."""

    def trim(self) -> "LibraryCollection":
        """Duplicate sizes and unused solutions removed from every library (in place)."""
        for lib in self.values():
            lib.trim()
        return self

    def add_epilogues(self) -> "LibraryCollection":
        """Epilogue support (bias, activation, scale vectors) on every library; the keys follow
        the libraries' new file names."""
        renamed = {}
        for name, lib in self.items():
            edits.add_epilogues(lib)
            renamed[edits.epilogue_file_name(name, lib)] = lib
        self.clear()
        self.update(renamed)
        return self

    def create_bench_input(self, output_dir, verify: bool = False, duration: float = 0.5,
                           **options) -> list[tuple[Path, Path | None]]:
        """Every library's ``<stem>_bench.yaml`` (and ``<stem>_verify.yaml``) in output_dir, with
        the keywords of ``Library.create_bench_input``; one (bench, verify) pair per library."""
        return [self._named(name, lib).create_bench_input(output_dir, verify=verify,
                                                          duration=duration, **options)
                for name, lib in sorted(self.items())]

    def dump(self, output_dir, header: str | None = None) -> list[Path]:
        """Every library written to output_dir under its file name."""
        return [dump(lib, Path(output_dir) / name, header=header)
                for name, lib in sorted(self.items())]

    @staticmethod
    def _named(name: str, lib: LibraryLogic) -> LibraryLogic:
        """The library as its key names it (the bench files take their stem from that name)."""
        if Path(lib.name).name != name:
            lib.source = name
        return lib


def load_dir(directory) -> LibraryCollection:
    """Every ``*.yaml`` library in a directory, by file name (none for a missing directory)."""
    return LibraryCollection((p.name, load(p)) for p in sorted(Path(directory).glob("*.yaml")))
