"""Fault injection through the real workflow (snakemake on the sim platform): an intermediate
file of a finished campaign, of either mode, is damaged one of four ways, then a plain rerun must
end recomputed to byte-identical final_libs, or refused naming the file: never exit 0 with a
different library.

Faults: cut at a line boundary, cut mid-row, a number edited, content swapped with another file
of the same kind keeping the mtime (Snakemake alone sees no change).

The matrix is large (every output kind of both modes times four faults); the default run takes a
few cases, chosen by a fixed seed. GEKO_FAULT_CASES=N picks N cases, ``all`` every one;
GEKO_FAULT_FILES=all uses every file instead of one per kind (a library's benchmarks, say);
GEKO_FAULT_SHARD=i/n runs the i-th of n slices (to spread the full matrix over processes);
GEKO_FAULT_LOG=FILE appends one line per case (mode, file, fault, outcome).
"""
import os
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from geko_lib.campaign import integrity

from .conftest import SIZES, TUNE_SIZES, final_lib_texts

pytestmark = pytest.mark.slow

FAULTS = ("cut at a line", "cut mid-row", "number edited", "swapped, same mtime")
MODES = {
    # a baseline (keep_thr > 0) and two search chunks, so every search-side file exists
    "search": {"keep_thr": 0.001, "search_chunk_size": 2},
    "tune": {"mode": "tune", "keep_thr": 0.001, "n_slots": 2},
}
SIZES_OF = {"search": SIZES, "tune": TUNE_SIZES}
# not intermediate: what the run reports about itself (run state, logs, the report's figures
# and tables, which nothing reads back)
SKIPPED = re.compile(r"^(logs/|report/|run_state\.json$|geko_config\.yaml$)")


def intermediate_files(workdir: Path) -> list[str]:
    """Every file a job wrote (it has a stamp, or a directory output's manifest lists it)."""
    out = []
    for path in sorted(workdir.rglob("*")):
        rel = path.relative_to(workdir)
        if not path.is_file() or any(p.startswith(".") for p in rel.parts) or \
                integrity.is_stamp(path) or SKIPPED.match(str(rel)):
            continue
        if integrity.find_stamp(path, workdir) is not None:
            out.append(str(rel))
    return out


def kind_of(rel: str) -> str:
    """One file per kind: a library's name, a chunk's or a tuning config's range, is a wildcard."""
    rel = re.sub(r"gfx\d+_Cijk_[A-Za-z0-9_]+?(?=(_bench|_verify|\.yaml|\.dat|$))", "<lib>", rel)
    rel = re.sub(r"gemms_\d+(-\d+)?", "<chunk>", rel)
    rel = re.sub(r"[A-Z0-9]+_[NT]{2}_\d+", "<cfg>", rel)
    return re.sub(r"part_\d+_of_\d+", "<part>", rel)


def damaged(data: bytes, fault: str, swap: bytes | None) -> bytes | None:
    """``data`` with one fault (None where the fault does not apply to this file)."""
    lines = data.splitlines(keepends=True)
    if fault == "cut at a line":
        return b"".join(lines[:len(lines) // 2]) if len(lines) >= 2 else None
    if fault == "cut mid-row":
        ends = [i for i, b in enumerate(data) if b == ord("\n")]
        if len(ends) < 2:
            return data[:len(data) // 2] if len(data) > 1 else None
        middle = ends[len(ends) // 2]
        start = ends[len(ends) // 2 - 1] + 1
        return data[:start + max((middle - start) // 2, 1)]
    if fault == "number edited":
        digits = [m.start() for m in re.finditer(rb"\d", data)]
        if not digits:
            return None
        at = digits[len(digits) // 2]
        return data[:at] + str((int(chr(data[at])) + 1) % 10).encode() + data[at + 1:]
    return swap if swap is not None and swap != data else None


def swap_source(workdir: Path, rel: str) -> bytes | None:
    """Another file of the same kind (else of the same suffix) of the same campaign."""
    path = workdir / rel
    candidates = [p for p in intermediate_files(workdir) if p != rel]
    same_kind = [p for p in candidates if kind_of(p) == kind_of(rel)]
    same_suffix = [p for p in candidates if Path(p).suffix == path.suffix]
    for choice in same_kind + same_suffix:
        data = (workdir / choice).read_bytes()
        if data != path.read_bytes():
            return data
    return None


def inject(workdir: Path, rel: str, fault: str) -> bool:
    path = workdir / rel
    data = path.read_bytes()
    new = damaged(data, fault, swap_source(workdir, rel) if fault == FAULTS[3] else None)
    if new is None:
        return False
    stat = path.stat()
    path.write_bytes(new)
    if fault == FAULTS[3]:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return True


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """One finished campaign per mode (made on first use), and its final_libs."""
    from .conftest import Campaign

    made = {}

    def reference(mode):
        if mode not in made:
            root = tmp_path_factory.mktemp(f"reference_{mode}")
            (root / "sizes.yaml").write_text(SIZES_OF[mode])
            c = Campaign(root, workload_log="", workload_list=str(root / "sizes.yaml"),
                         **MODES[mode])
            c.snakemake("final_libs")
            made[mode] = (c, final_lib_texts(c))
        return made[mode]
    return reference


def all_cases(reference_files: dict[str, list[str]]) -> list[tuple[str, str, str]]:
    """(mode, file, fault), fault by fault and the modes interleaved, so that any prefix of
    the list (a run cut short, a shard) covers every kind of file."""
    every = os.environ.get("GEKO_FAULT_FILES") == "all"
    per_mode = {}
    for mode, files in reference_files.items():
        seen, picked = set(), []
        for rel in files:
            if every or kind_of(rel) not in seen:
                picked.append(rel)
            seen.add(kind_of(rel))
        per_mode[mode] = picked
    longest = max(len(files) for files in per_mode.values())
    return [(mode, per_mode[mode][i], fault) for fault in FAULTS for i in range(longest)
            for mode in per_mode if i < len(per_mode[mode])]


def chosen(cases: list) -> list:
    count = os.environ.get("GEKO_FAULT_CASES", "2")
    if count != "all":
        cases = random.Random(20261201).sample(cases, min(int(count), len(cases)))
    shard = os.environ.get("GEKO_FAULT_SHARD")
    if shard:
        index, total = (int(v) for v in shard.split("/"))
        cases = cases[index::total]
    return cases


def names_in_an_error(said: str, rel: str) -> bool:
    """The output names ``rel`` in an error: a line saying error, or the message under one
    (Snakemake prints ``<Type>Error in file ...:`` above the message)."""
    lines = said.splitlines()
    return any((rel in line or Path(rel).name in line) and
               ("error" in line.lower() or (i and "error" in lines[i - 1].lower()))
               for i, line in enumerate(lines))


def run_case(reference, tmp_path, mode: str, rel: str, fault: str) -> str:
    """Damage ``rel`` in a copy of the reference campaign, rerun, classify the outcome:
    recomputed, refused, not applicable, or WRONG (with what the run said)."""
    ref, expected = reference(mode)
    c = ref.copy(tmp_path / re.sub(r"\W+", "_", f"{mode}_{rel}_{fault}"))
    if not inject(c.workdir, rel, fault):
        return "not applicable"
    proc = c.snakemake("final_libs", check=False)
    said = proc.stdout + proc.stderr
    if proc.returncode == 0:
        if final_lib_texts(c) == expected:
            return "recomputed"
        return f"WRONG: exit 0 with a different final_libs\n{said[-3000:]}"
    if names_in_an_error(said, rel):
        return "refused"
    return f"WRONG: failed without naming the file\n{said[-3000:]}"


def test_damaged_intermediates_are_recomputed_or_refused(references, tmp_path):
    files = {mode: intermediate_files(references(mode)[0].workdir) for mode in MODES}
    assert any(f.startswith("search/data/") for f in files["search"])
    assert any(f.startswith("optimizations/build_") for f in files["tune"])
    outcomes, wrong = Counter(), []
    record = os.environ.get("GEKO_FAULT_LOG")  # one line per case, for bench/RESULTS-style counts
    for mode, rel, fault in chosen(all_cases(files)):
        outcome = run_case(references, tmp_path, mode, rel, fault)
        outcomes[outcome.split(":")[0]] += 1
        if outcome.startswith("WRONG"):
            wrong.append(f"{mode}: {rel}, {fault}: {outcome}")
        if record:
            with open(record, "a") as handle:
                handle.write(f"{mode}\t{rel}\t{fault}\t{outcome.splitlines()[0]}\n")
    print(f"fault matrix: {dict(outcomes)}")
    assert not wrong, "\n\n".join(wrong)
    assert outcomes["recomputed"] + outcomes["refused"] > 0
