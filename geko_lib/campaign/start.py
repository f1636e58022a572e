"""What happens when a campaign starts in a workdir, whichever entry point starts it (``geko``
or ``snakemake --profile ...``): the workflow calls these while its Snakefile is read, before
Snakemake builds the DAG, so a refusal leaves the workdir as it was and a removed output is
simply missing to Snakemake, which recomputes it.

0. ``bounds.refuse_links_out``: a symlink under the workdir that leads outside it -> refused,
   naming it: every write and delete below, and Snakemake's, would follow it.
1. ``refuse_other_campaign``: run_state.json, or the stamps of the outputs, say the workdir
   holds another campaign, or a finished one of another mode -> refused, saying what differs and
   the ways out (``geko_lib.campaign.ownership``; ``discard_results`` lets the run go ahead).
2. ``remove_untrustworthy_outputs``: every existing output of a rule is checked against its stamp
   (``geko_lib.campaign.integrity``); damaged, unstamped or stale ones are removed and reported. Skipped
   while the workdir is locked: a live campaign's outputs are not ours to judge, and Snakemake
   refuses to run beside it anyway.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
from pathlib import Path

from . import lock as campaign_lock, ownership, state as campaign_state, combine, integrity, \
    layout, bounds
from .lock import snakemake_locks
from ..library.collection import load_dir
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

# set in snakemake's environment by the geko command, which says what a start discards and prints
# the closing lines itself (terminal.py)
COMMAND_ENV = "GEKO_COMMAND"


def refuse_other_campaign(workdir, campaign: dict, mode: str, discard: bool = False) -> None:
    reasons = ownership.check(workdir, campaign, mode, discard)
    if os.environ.get(COMMAND_ENV):
        return  # the workflow under the geko command, which said what it discards already
    for reason in reasons:
        tell(f"geko: {ownership.DISCARD_KEY}: {reason}: discarded, this run recomputes it")


def dry_run(argv=None) -> bool:
    """Whether the snakemake process reading the Snakefile only plans (``-n``/``--dry-run``):
    Snakemake tells the Snakefile nothing of it while it is read."""
    argv = sys.argv if argv is None else argv
    return any(arg in ("-n", "--dry-run", "--dryrun") for arg in argv)


def ensure_run_state(workdir, campaign: dict, mode: str) -> None:
    """Where run_state.json is missing (deleted, or a run that found nothing to do), write it
    now: a workdir whose outputs passed the ownership check is this campaign's."""
    if Path(workdir).is_dir() and not (Path(workdir) / campaign_state.FILE).exists():
        campaign_state.record(workdir, campaign, mode)


def refuse_unfit_combine_sources(workdirs, campaign: dict, workdir, mode: str) -> None:
    """combine_with naming a campaign of another platform, arch or library version (or no
    campaign) -> refused, naming its run_state.json and what differs; one whose final_libs/ is
    damaged -> refused, naming it (a missing one is Snakemake's missing input); one of another
    workload (or of this one: a tuning that changed a GEMM's type) that serves GEMMs this one
    lacks -> refused, naming them, where this campaign's workload.yaml is already whole (else
    the combine job checks that); this workdir itself, or a source named twice -> refused."""
    gemms = None  # this campaign's GEMMs, read once
    seen: set = set()
    for other in workdirs:
        combine.check_not_this(other, workdir, seen)
        recorded = combine.check_identity(other, campaign)
        if not (Path(other) / layout.FINAL_LIBS).is_dir():
            continue
        libs = combine.check_libs(other, recorded)
        gemms = gemms if gemms is not None else _whole_workload_gemms(workdir, campaign, mode)
        if gemms:
            combine.check_part_of(other, recorded, dict(load_dir(libs)), gemms, campaign)


def _whole_workload_gemms(workdir, campaign: dict, mode: str) -> set:
    """The GEMMs of this campaign's workload.yaml; empty while it is missing or not whole."""
    own = Path(workdir) / layout.WORKLOAD
    expected = integrity.expected_provenance(campaign, mode, layout.WORKLOAD)
    if own.is_file() and integrity.problem(own, expected, workdir) is None:
        return combine.workload_gemms(own)
    return set()


def pattern_glob(pattern: str) -> str:
    """A Snakemake file pattern as a glob: every ``{wildcard[,constraint]}`` becomes ``*``
    (constraints may hold braces of their own, e.g. ``{n,\\d{2}}``)."""
    out, depth = [], 0
    for char in pattern:
        if char == "{":
            if depth == 0:
                out.append("*")
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _visible(rel: Path) -> bool:
    return not any(part.startswith(".") for part in rel.parts)


def existing_outputs(root, patterns) -> list[str]:
    """Paths (relative to ``root``) that exist now and match a rule's output pattern, and the
    files with a sidecar stamp (files a job wrote beside its outputs). ``patterns`` are
    (pattern, compiled regex) pairs; hidden names (temporaries, staging directories,
    Snakemake's own records) and stamps are never outputs."""
    root = Path(root)
    found = {str(side.relative_to(root))[:-len(integrity.STAMP_SUFFIX)]
             for side in root.rglob("*" + integrity.STAMP_SUFFIX)
             if _visible(side.relative_to(root))}
    for pattern, regex in patterns:
        for path in root.glob(pattern_glob(pattern)):
            rel = path.relative_to(root)
            if not _visible(rel) or integrity.is_stamp(rel):
                continue
            if regex.match(str(rel)):
                found.add(str(rel))
    return sorted(found)


def remove_untrustworthy_outputs(workdir, patterns, campaign: dict, mode: str,
                                 report=None) -> list[tuple[Path, str]]:
    """Remove every damaged or stale output so that this run recomputes it; returns what was
    removed and why (also told through ``report``, one line each)."""
    workdir = Path(workdir)
    if not workdir.is_dir() or snakemake_locks(workdir):
        return []
    outputs = existing_outputs(workdir, patterns)
    accept_reviewed_tuning_yamls(workdir, outputs, report or log.warning)
    found, follows = untrustworthy(workdir, outputs, campaign, mode)
    refuse_edited_companions(workdir, found)
    found = found + follows
    removed = _orphaned_companions(workdir, outputs, report or log.warning)
    for rel, reason in found:
        # an output inside another removed one goes with it
        if any(parent in {r for r, _ in removed} for parent in rel.parents):
            continue
        # a file written beside a declared output is recomputed with it
        owner = _companion_of(workdir / rel)
        integrity.remove_output(workdir / rel)
        removed.append((rel, reason))
        (report or log.warning)(f"geko: {workdir / rel}: {reason}: removed, this run "
                                "recomputes it")
        if owner and (workdir / owner).exists():
            integrity.remove_output(workdir / owner)
            removed.append((Path(owner), f"{rel} was written beside it"))
    return removed


def untrustworthy(workdir, outputs, campaign: dict | None, mode: str
                  ) -> tuple[list[tuple[Path, str]], list[tuple[Path, str]]]:
    """(the damaged or stale ones of ``outputs``, with why; the outputs that go with them, with
    why): what a run removes and recomputes. Changes nothing. Without a ``campaign`` only the
    content is judged (``geko status`` of a workdir whose campaign is unknown)."""
    workdir = Path(workdir)
    found = integrity.audit(workdir, outputs, lambda rel: integrity.expected_provenance(
        campaign, mode, rel) if campaign else {})
    # a tuning YAML edited since configure is the review: tuned as edited, not recomputed
    found = [(rel, why) for rel, why in found
             if not (_reviewable(workdir, rel) and "differs from its stamp" in why)]
    return found, _what_follows(workdir, list(outputs), found)


def _reviewable(workdir: Path, rel) -> bool:
    """A tuning YAML the configure checkpoint wrote beside its manifest, which is still there:
    what ``--until configure`` stops for a person to review and perhaps edit."""
    rel = Path(rel)
    return rel.parent == Path(layout.TUNING_DIR) and rel.suffix == ".yaml" and \
        _companion_of(workdir / rel) == layout.TUNING_MANIFEST and \
        (workdir / layout.TUNING_MANIFEST).is_file()


def accept_reviewed_tuning_yamls(workdir: Path, outputs, report) -> list[Path]:
    """Tuning YAMLs a person edited since configure wrote them are theirs: stamped as they are
    now (the builds made from their earlier content are then stale and tuned again; the build
    records the hash it was tuned from), never rewritten, and named in one line."""
    edited = []
    for rel in outputs:
        path = workdir / rel
        if not path.is_file() or not _reviewable(workdir, rel):
            continue
        try:
            found = integrity.find_stamp(path)
        except integrity.IntegrityError:
            continue  # an unreadable stamp: judged (and reported) by the audit
        if found is None or integrity.damage(path, found) is None:
            continue
        integrity.stamp(path, found.provenance, found.record.get("inputs") or {},
                        rule=found.record.get("rule"), companion_of=layout.TUNING_MANIFEST)
        edited.append(Path(rel))
    if edited:
        report(f"geko: tuning YAML(s) edited since configure, tuned as edited: "
               f"{', '.join(str(workdir / rel) for rel in sorted(edited))}")
    return edited


def _what_follows(workdir: Path, outputs: list[str],
                  found: list[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """The outputs that go with the removed ones: those made by the same job (Snakemake reruns
    a job for any missing output and rewrites them all) and those made from them, transitively.
    Snakemake would recompute them anyway (their inputs become newer); removed first, the DAG
    is built as on a fresh run, with no checkpoint that looks done while its inputs are due."""
    records = {}
    for rel in outputs:
        try:
            stamp = integrity.find_stamp(workdir / rel, workdir)
        except integrity.IntegrityError:
            stamp = None
        if stamp is not None and stamp.where.parent != workdir / rel and \
                stamp.where.name == integrity.MANIFEST and (workdir / rel).is_file():
            continue  # a file inside a directory output goes with its directory
        records[Path(rel)] = stamp.record if stamp else {}
    gone = {rel for rel, _ in found}
    added, changed = [], True
    while changed:
        changed = False
        for rel, record in records.items():
            if rel in gone:
                continue
            inputs = list(record.get("inputs") or {})
            made_from = [name for name in inputs
                         if any(name == str(g) or name.startswith(f"{g}/") for g in gone)]
            sibling = next((g for g in gone if str(g) in (record.get("outputs") or ())), None)
            if made_from or sibling:
                why = (f"made from {made_from[0]}, which is recomputed" if made_from
                       else f"written with {sibling}, which is recomputed")
                gone.add(rel)
                added.append((rel, why))
                changed = True
    return added


def refuse_edited_companions(workdir: Path, found: list[tuple[Path, str]]) -> None:
    """A file a finished job wrote beside its output (a tuning YAML beside the configure
    checkpoint's manifest) whose content changed since is refused, not recomputed: the
    two-step flow invites a person to review, and perhaps edit, exactly these files, so the
    change is theirs to confirm. Nothing has been removed yet."""
    judged = {rel for rel, _ in found}
    edited = []
    for rel, reason in found:
        owner = _companion_of(workdir / rel)
        if owner and (workdir / owner).exists() and Path(owner) not in judged \
                and "differs from its stamp" in reason:
            edited.append(rel)
    if edited:
        names = ", ".join(str(workdir / rel) for rel in edited)
        raise integrity.IntegrityError(
            f"{names}: changed since the job that wrote it (content differs from its stamp). "
            "If you edited it on purpose, delete its .stamp.json to use your version; "
            "otherwise delete the file to have it written again")


def _orphaned_companions(workdir: Path, outputs: list[str], report) -> list[tuple[Path, str]]:
    """A file written beside a declared output that is gone now: the output it belongs to is
    removed too, or Snakemake would count it done and miss the file."""
    removed = []
    for rel in outputs:
        path = workdir / rel
        owner = None if path.exists() else _companion_of(path)
        if owner and (workdir / owner).exists():
            integrity.remove_output(workdir / owner)
            removed.append((Path(owner), f"{rel} (written beside it) is missing"))
            report(f"geko: {workdir / owner}: {rel} (written beside it) is missing: removed, "
                   "this run recomputes it")
        if not path.exists():
            integrity.sidecar(path).unlink(missing_ok=True)
    return removed


def _companion_of(path: Path) -> str | None:
    side = integrity.sidecar(path)
    try:
        return json.loads(side.read_text()).get("companion_of") if side.is_file() else None
    except (OSError, ValueError):
        return None


def outputs_of(rules) -> list[tuple[str, re.Pattern]]:
    """(pattern, regex) of every output of Snakemake ``rules`` (objects with ``.output`` items
    that have ``.regex()``), for :func:`existing_outputs`."""
    return [(str(item), item.regex()) for rule in rules for item in rule.output]


def identity_at_start(config: dict) -> dict | None:
    """The campaign's identity, or None (with a warning) where the platform cannot be set up
    here: the jobs then fail with the platform's own message, and nothing is judged."""
    from ..errors import GekoError

    try:
        return campaign_state.identity(campaign_state.with_defaults(config))
    except GekoError as exc:
        tell(f"geko: warning: cannot check the workdir against run_state.json ({exc})")
        return None


def tell(line: str) -> None:
    """A line for the person running the workflow (stderr, where Snakemake reports)."""
    print(line, file=sys.stderr, flush=True)


def record_progress(workdir, campaign: dict, mode: str) -> None:
    """After a successful run: how far the campaign got (the original's configured and
    optimized flags)."""
    root = Path(workdir)
    configured = (root / layout.SEARCH_CHUNKS).is_dir() or (root / layout.TUNING_MANIFEST).is_file() \
        or (root / "optimizations" / "configs").is_dir()
    campaign_state.finish(root, campaign, mode, configured=configured,
                          optimized=(root / layout.FINAL_LIBS).is_dir())


def clear_stale_lock(workdir) -> None:
    """A Snakemake lock left by an interrupted run (its holder gone) is cleared and reported, so
    a plain rerun resumes (no ``--unlock``); a live campaign there refuses."""
    workdir = Path(workdir)
    for name in campaign_lock.prepare(workdir):
        tell(f"geko: cleared a stale Snakemake lock ({workdir / '.snakemake' / 'locks' / name}) "
             "left by an interrupted run; resuming")


def refuse_start(workdir, config: dict, identity=None) -> None:
    """Refuse (raise, naming why) a run of ``config`` that may not start in the existing
    ``workdir``: a symlink under it leads outside, its run_state.json is no file, or it holds
    another campaign, or a finished one this run would replace. Changes nothing. The ``geko``
    command asks before its run; ``geko status`` asks to tell whether a plain rerun would be
    refused. ``identity(config)``: the campaign's identity, None where it cannot be told."""
    workdir = Path(workdir)
    bounds.refuse_links_out(workdir)
    ownership.read_run_state(workdir)  # one that is no file refuses whatever the platform
    campaign = (identity or identity_at_start)(config)
    if campaign is not None:
        refuse_other_campaign(workdir, campaign, config["mode"],
                              bool(config.get("discard_results")))


@contextlib.contextmanager
def before_command(workdir, config: dict):
    """What the ``geko`` command checks before it writes anything into ``workdir``, held for
    the length of the command: a workdir of another campaign (or holding a finished one this
    run would replace) refuses, as the workflow would but before the command rewrites the
    workdir's geko_config.yaml; a campaign running there refuses (also one started at the same
    instant: the command lock); a stale Snakemake lock is cleared and reported."""
    workdir = Path(workdir)
    if workdir.is_dir():
        refuse_start(workdir, config, identity_at_start)
        campaign_lock.refuse_if_running(workdir)
    with campaign_lock.hold(workdir):
        clear_stale_lock(workdir)
        yield
