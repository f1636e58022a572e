#!/usr/bin/env python3
"""Test stand-in for TensileCreateLibrary (no ROCm toolchain here).

Where it stands in a fake hipBLASLt checkout: ``tensilelite/Tensile/bin/TensileCreateLibrary``
(run as ``python tensilelite/Tensile/bin/TensileCreateLibrary [options] <logic dir> <out dir>
HIP`` with ``PYTHONPATH=<tensilelite>``) and, through the module dispatcher
``tensilelite/tensilelite/__main__.py``, ``python -m tensilelite create-library ...``.

It checks its command line as TensileCreateLibrary's parser does (the options geko passes,
their choices: code object versions 4 and 5 only, an absolute logic directory, the runtime
language), reads logic files as the tool does (entry 5 may be ``{SolutionDefaults, Solutions}``)
and checks that every one is for ``--architecture``, then writes the output layout of a
lazy-loading build, per base architecture as TensileLite's ``TensileCreateLibrary/Run.py``
(rocm-libraries, ``libraryDir``: ``<out>/library/<arch>/``) lays it out:

    <out>/library/<arch>/TensileLibrary_lazy_<arch>.dat   (the master index; .yaml for yaml)
    <out>/library/<arch>/TensileLibrary_<problem>_<arch>.dat  (one per logic file, its solutions)
    <out>/library/<arch>/TensileLibrary_<problem>_<arch>.co   (the code object, a placeholder)
    <out>/library/<arch>/TensileLiteLibrary_lazy_<arch>_Mapping.dat  (code object per index)
    ./MatchTable.yaml                                     (global solution index ->
                                                           [logic file, local index], in the cwd)

The .dat files hold JSON here, not msgpack: only their names and presence are the contract.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from geko_lib.library import logic


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="TensileCreateLibrary")
    parser.add_argument("LogicPath")
    parser.add_argument("OutputPath")
    parser.add_argument("RuntimeLanguage", choices=["OCL", "HIP", "HSA"])
    parser.add_argument("--code-object-version", choices=["4", "5", "V4", "V5", "default"],
                        default="4")
    parser.add_argument("--library-format", choices=["yaml", "msgpack", "msgpack-indexed"],
                        default="msgpack")
    parser.add_argument("--architecture", default="all")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    logic_dir = Path(args.LogicPath)
    if not logic_dir.is_absolute() or not logic_dir.is_dir():
        print(f"TensileCreateLibrary: logic path {logic_dir} must be an absolute directory")
        return 1
    libs = {path: logic.load(path) for path in sorted(logic_dir.glob("*.yaml"))}
    if not libs:
        print(f"TensileCreateLibrary: no logic files in {logic_dir}")
        return 1
    arch = args.architecture
    others = [p.name for p, lib in libs.items() if lib.architecture_name != arch]
    if others:
        print(f"TensileCreateLibrary: logic for another architecture than {arch}: {others}")
        return 1
    ext = "yaml" if args.library_format == "yaml" else "dat"
    out = Path(args.OutputPath) / "library" / arch.split(":")[0]
    out.mkdir(parents=True, exist_ok=True)
    index, match_table, mapping = [], {}, {}
    for path, lib in libs.items():
        stem = f"TensileLibrary_{lib.gemm_type.tensile_problem_name}_{arch}"
        solutions = [dict(s) for s in lib.solutions]
        (out / f"{stem}.{ext}").write_text(json.dumps({"solutions": solutions}, default=str))
        (out / f"{stem}.co").write_bytes(b"\x7fELF replay code object\n")
        index.append(f"{stem}.{ext}")
        for s in solutions:
            mapping[len(match_table)] = stem
            match_table[len(match_table)] = [str(path), int(s["SolutionIndex"])]
    (out / f"TensileLibrary_lazy_{arch}.{ext}").write_text(
        json.dumps({"architecture": arch, "code_object_version": args.code_object_version,
                    "libraries": index}))
    (out / f"TensileLiteLibrary_lazy_{arch}_Mapping.dat").write_text(json.dumps(mapping))
    Path("MatchTable.yaml").write_text(yaml.safe_dump(match_table, default_flow_style=None))
    print(f"# TensileCreateLibrary (geko replay): {len(libs)} logic files for {arch} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
