"""results/final_results.csv -> exports/: hipBLASLt tuning override file, TunableOp results,
aiter's tuned-GEMM CSV (where the platform lists it: rocm), and library_index.json: whose
indices they hold (library.exports.sources)."""
import logging
from pathlib import Path

import pandas as pd

from .. import files, gemm, jobs, platforms, workload
from ..campaign import integrity, layout
from ..library import exports
from ..library.exports import sources
from ..archs import ARCHS
from ..log_setup import LOGGER


def _winners(job) -> pd.DataFrame:
    """The kept kernels, each with the index of the library it is a kernel of: a dense-search
    winner the stock library's (winners.csv), a tuned kernel geko's library's."""
    kept = exports.winners_from_results(jobs.read_table(job.input[0]))
    searched = job.input.get("searched")
    return sources.with_stock_indices(kept, jobs.read_table(searched) if searched else None)


def _index_record(job, winners: pd.DataFrame) -> dict:
    """The exports' build stamp: which library's indices they hold, and which build of it."""
    if sources.index_library(winners) == sources.STOCK:
        return {"index_of": "stock hipBLASLt library",
                "library_version": job.config.get("library_version")
                or platforms.get(job.config).library_version}
    tensile = job.input.get("tensile") or layout.TENSILE
    found = integrity.find_stamp(tensile) if Path(tensile).is_dir() else None
    build = found.record.get("sha256", "")[:16] if found else ""
    return {"index_of": "geko library", "library": f"{tensile}/library",
            "library_version": f"geko-{build}" if build else "geko"}


NAMED = 5  # GEMMs a left-out line names (the rest counted)


def named(names: list[str]) -> str:
    """The distinct GEMM names of a left-out line: the first NAMED, then how many more."""
    distinct = list(dict.fromkeys(names))
    more = len(distinct) - NAMED
    return ", ".join(distinct[:NAMED]) + (f" and {more} more" if more > 0 else "")


def _left_out(log, winners: pd.DataFrame, shipped: pd.DataFrame, path: str) -> None:
    missing = len(winners) - len(shipped)
    if missing:
        log.warning("%d kept GEMM(s) left out of %s: their kernels are of geko's library, this "
                    "file holds the stock library's indices", missing, path)


def run(job):
    exports.require_exportable(platforms.capabilities(job.config), job.config["platform"])
    settings, log = job.config["exports"], logging.getLogger(LOGGER)
    winners = _winners(job)
    source = job.input.get("workload")  # the calls each kept GEMM answers: the consumers' keys
    keys = sources.workload_keys(workload.read(source, support=platforms.gemm_support(None))) \
        if source else None
    library = sources.index_library(winners)
    shipped = sources.of_library(winners, library)  # one export names one library's indices
    record = _index_record(job, winners)
    if library == sources.GEKO and len(shipped):
        log.info("%d kept GEMM(s) are kernels of geko's library only: the override and "
                 "TunableOp files hold the indices of %s (build %s), which the application "
                 "must load (HIPBLASLT_TENSILE_LIBPATH)", len(shipped), record["library"],
                 record["library_version"])
    # what the GPU reports (gfx942...), never geko's alias of it (gfx942_80cu)
    target = ARCHS.get(job.config["arch"])
    arch = settings["gcn_arch_name"] or (target.model if target else job.config["arch"])
    _write_override(job, log, winners, shipped, keys, arch)
    _write_tunableop(job, log, winners, shipped, keys, arch)
    if job.output.get("library_index"):  # the workflow declares it; an older caller may not
        files.write_json(job.output.library_index, record)
    _write_aiter(job, log, winners, keys)


def _write_override(job, log, winners, shipped, keys, arch: str) -> None:
    """hipBLASLt's tuning override file: one entry per shipped GEMM it can serve."""
    settings = job.config["exports"]
    _left_out(log, winners, shipped, job.output.override)
    # the override's key has no bias: its entry serves a GEMM's bias calls as well
    entries, only_bias, mixed = sources.override_entries(shipped, keys)
    if only_bias:
        log.warning("%d kept GEMM(s) left out of %s: every call of them is a bias call, and "
                    "hipBLASLt's override key has no bias field, so the entry would serve them "
                    "with a kernel geko timed without the bias epilogue: %s", len(only_bias),
                    job.output.override, named(only_bias))
    if mixed:
        log.warning("%d GEMM(s) of %s also have bias calls, which will use the entry too "
                    "(the override key has no bias field; geko timed them without the bias "
                    "epilogue): %s", len(mixed), job.output.override, named(mixed))
    numbered = entries["solution_index"].astype(int) > 0
    if not numbered.all():
        log.warning("%d kept GEMM(s) left out of %s: solution index 0, which hipBLASLt ignores "
                    "in an override file", int((~numbered).sum()), job.output.override)
    exports.write_tuning_override(entries[numbered], job.output.override, arch=arch,
                                  version=settings["hipblaslt_version"] or None)


def _write_tunableop(job, log, winners, shipped, keys, arch: str) -> None:
    """PyTorch TunableOp's results file: one line per call TunableOp has a GEMM op for."""
    settings = job.config["exports"]
    validators = exports.default_validators(
        arch, hipblaslt_version=settings["hipblaslt_version"] or None,
        torch_version=settings["torch_version"], rocm_version=settings["rocm_version"] or None)
    style = exports.tunableop_style(settings["torch_version"])
    calls, bias = sources.per_call(shipped, keys)
    if bias:
        log.warning("%d bias call(s) left out of %s: geko timed their GEMMs without the bias "
                    "epilogue (GemmAndBiasTunableOp): %s", len(bias), job.output.tunableop,
                    named(bias))
    types = [gemm.GemmProblem.from_row(r).type for r in calls.to_dict("records")]
    supported = pd.Series([exports.tunableop_supported(t, style) for t in types],
                          index=calls.index, dtype=bool)
    skipped = int((~supported).sum())
    if skipped:
        log.warning("TunableOp has no GEMM op for %d kept GEMM(s) (fp8, int8, mixed types): "
                    "left out of %s", skipped, job.output.tunableop)
    _left_out(log, winners, shipped, job.output.tunableop)
    exports.write_tunableop(calls[supported], job.output.tunableop, validators=validators,
                            style=style)


def _write_aiter(job, log, winners, keys) -> None:
    """aiter's tuned CSV, where the platform lists the format."""
    aiter = job.output.get("aiter")
    if aiter is None:
        log.info("no aiter tuned CSV: platform %s has no hipBLASLt solution indices a runtime "
                 "could dispatch to", job.config["platform"])
        return
    target = ARCHS[job.config["arch"]]  # the lookup key: the GPU the campaign ran on
    left_out = exports.write_aiter_tuned(winners, aiter, gfx=target.model, cu_num=target.cus,
                                         keys=keys)
    for reason, count in left_out.items():
        log.warning("%d kept GEMM(s) or call(s) left out of %s: %s: %s", count, aiter,
                    exports.aiter.LEFT_OUT[reason], named(left_out.names[reason]))
