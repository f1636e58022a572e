"""Whose a workdir is, and the rule that no finished result is ever destroyed.

A workdir's owner is told twice: by ``run_state.json`` (the campaign's identity, written when it
starts) and by the stamps of its outputs (``geko_lib.campaign.integrity``: every stamp records the
workload digest, platform, arch, library version, options and, for mode-dependent outputs, the
mode). Either one is enough: deleting ``run_state.json`` does not make a workdir anyone's.

A campaign starting in a workdir (``check``, from ``geko`` and from the Snakefile alike, before
anything there changes) is refused where:

* ``run_state.json`` exists but is not a file (a directory): it cannot say whose the workdir is;
* ``run_state.json`` records another campaign (another workload, platform, arch, library version
  or result-shaping options);
* the workdir holds a *finished* campaign (``final_libs/`` or ``results/metrics.json``) whose
  stamps say it was made for another campaign or another mode: this run would recompute, and so
  replace, its results;
* without ``run_state.json``, an output's stamp names another campaign;
* without ``run_state.json``, a finished output has no stamp either: nothing says whose it is,
  and a finished result is never replaced on a guess.

Each refusal names the workdir and the two ways out: another ``--workdir``, or
``--discard-results`` (config key ``discard_results: true``), which lets the run go ahead; the
stale outputs are then removed and recomputed by the usual audit (``geko_lib.campaign.start``).
"""

from __future__ import annotations

from pathlib import Path

from . import integrity, layout, state as campaign_state
from .state import CampaignMismatch

FILE = campaign_state.FILE
# the outputs that make a campaign finished: replacing them destroys a result
FINISHED = (layout.FINAL_LIBS, layout.METRICS)
# outputs whose stamps say whose the workdir is when run_state.json is gone (cheap to read)
OWNED = (layout.WORKLOAD, layout.BASELINE, layout.SUMMARY, layout.GEMMS, *FINISHED)
DISCARD_FLAG = "--discard-results"
DISCARD_KEY = "discard_results"


class OtherCampaign(CampaignMismatch):
    """The workdir holds another campaign's results (told by run_state.json or the stamps)."""


def way_out(workdir) -> str:
    return (f"Start over with a new --workdir (config key workdir), or rerun with "
            f"{DISCARD_FLAG} (config key {DISCARD_KEY}: true) to discard the results in "
            f"{workdir} and recompute there")


def _stamp(workdir: Path, rel: str) -> integrity.Stamp | None:
    """The stamp covering ``rel`` where it exists and is readable (its damage is the audit's
    business, not ownership's)."""
    path = workdir / rel
    if not path.exists():
        return None
    try:
        return integrity.find_stamp(path, workdir)
    except integrity.IntegrityError:
        return None


def _workload_named(workdir: Path) -> str | None:
    """The workload file the campaign's workload.yaml was read from (its stamp's input)."""
    found = _stamp(workdir, layout.WORKLOAD)
    inputs = list((found.record.get("inputs") or {})) if found else []
    return inputs[0] if inputs else None


def _describe(workdir: Path, provenance: dict) -> str:
    named = _workload_named(workdir)
    workload = named or f"workload sha256 {str(provenance.get('workload_sha256'))[:12]}"
    mode = f"{provenance['mode']} " if provenance.get("mode") else ""
    return (f"a {mode}campaign of {workload} on {provenance.get('platform')} "
            f"{provenance.get('arch')}")


def owners(workdir, rels=OWNED) -> dict[str, dict]:
    """rel -> the provenance its stamp records, for those of ``rels`` that exist with a stamp."""
    workdir = Path(workdir)
    return {rel: found.provenance for rel in rels if (found := _stamp(workdir, rel))}


def finished(workdir) -> dict[str, dict]:
    """The finished outputs the workdir holds (rel -> provenance; empty: nothing finished)."""
    return owners(workdir, FINISHED)


def read_run_state(workdir) -> dict | None:
    """run_state.json as recorded, None where there is none; one that is not a file is refused
    (a directory cannot say whose the workdir is, and must not be taken for "nobody's")."""
    path = Path(workdir) / FILE
    if (path.exists() or path.is_symlink()) and not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise OtherCampaign(
            f"{path} is {kind}, not geko's run state: it cannot say whose {Path(workdir)} is. "
            f"Remove it if the workdir is yours, or use another --workdir")
    return campaign_state.read(workdir)


def _unlike(provenance: dict, expected: dict) -> list[str]:
    return [f"{key} {provenance.get(key)!r} (this run: {value!r})"
            for key, value in expected.items() if provenance.get(key) != value]


def _unowned_finished(workdir: Path) -> list[str]:
    """The finished result that neither run_state.json (the caller found none) nor a stamp
    says is anyone's: it is still a finished result, and this run would replace it."""
    for rel in FINISHED:
        if (workdir / rel).exists() and _stamp(workdir, rel) is None:
            return [f"{workdir}: this workdir holds a finished result ({rel}) with no stamp and "
                    f"no {FILE}: nothing says whose campaign it is, and this run would replace "
                    "it"]
    return []


def check(workdir, current: dict, mode: str, discard: bool = False) -> list[str]:
    """Refuse a start that would replace another campaign's results (module docstring); with
    ``discard`` the start goes ahead and the reasons it would have been refused are returned
    (for the caller to report). Changes nothing."""
    workdir = Path(workdir)
    if not workdir.is_dir():
        return []
    recorded = read_run_state(workdir)
    reasons = []
    if recorded is not None:
        different = campaign_state.differences(
            {**recorded, **(recorded.get("identity") or {})}, current)
        if different:
            reasons.append(f"{workdir / FILE}: this workdir belongs to another campaign: "
                           + "; ".join(different))
    for rel, provenance in finished(workdir).items():
        different = _unlike(provenance, integrity.expected_provenance(current, mode, rel))
        if different:
            reasons.append(f"{workdir}: this workdir holds a finished result ({rel}) of "
                           f"{_describe(workdir, provenance)}, which this {mode} run would "
                           "replace: " + ", ".join(different))
            break
    if recorded is None and not reasons:
        reasons += _unowned_finished(workdir)
    if recorded is None and not reasons:
        for rel, provenance in owners(workdir).items():
            expected = integrity.expected_provenance(current, mode, rel)
            expected.pop("mode", None)  # an unfinished campaign of the other mode is no loss
            different = _unlike(provenance, expected)
            if different:
                reasons.append(f"{workdir}: this workdir belongs to another campaign: it has no "
                               f"{FILE}, and the stamp of {rel} says it holds "
                               f"{_describe(workdir, provenance)}: " + ", ".join(different))
                break
    if reasons and not discard:
        raise OtherCampaign(f"{reasons[0]}. {way_out(workdir)}")
    return reasons

