"""Library logic -> what hipBLASLt loads (TensileCreateLibrary), and tuned logic -> a hipBLASLt
checkout (TensileMergeLibrary, then a rebuild the user runs).

Both tools come in the two forms of ``tensilelite.tool_form``: the checkout's launcher
(``Tensile/bin/TensileCreateLibrary``, ``Tensile/bin/TensileMergeLibrary``, with
``PYTHONPATH=<tensilelite>``) or the ``python -m tensilelite create-library`` /
``merge-library`` dispatcher of newer checkouts.
"""

from __future__ import annotations

import logging
import re
import shlex
from pathlib import Path

from ...library import logic as liblogic
from .. import PlatformError
from .tensilelite import check_arch, run_tool, tool_argv, tool_env, tool_form
from ...log_setup import LOGGER

log = logging.getLogger(LOGGER)

# TensileCreateLibrary's --code-object-version choices (TensileLite, rocm-libraries
# projects/hipblaslt/tensilelite/Tensile/TensileCreateLibrary/ParseArguments.py)
CODE_OBJECT_VERSIONS = ("4", "5", "V4", "V5", "default")
LIBRARY_FORMATS = ("yaml", "msgpack", "msgpack-indexed")
CREATE_LOG = "tensile-create-library.log"
MERGE_LOG = "tensile-merge-library.log"
# where a hipBLASLt checkout keeps the Equality logic it builds into its library, per arch
LOGIC_SUBDIR = Path("library", "src", "amd_detail", "rocblaslt", "src", "Tensile", "Logic",
                    "asm_full")
_CU_VARIANT = re.compile(r"^(gfx[0-9a-z]+?)_\d+cu$")


def base_arch(arch: str) -> str:
    """The gfx name of a configured arch (``gfx942_80cu`` is a gfx942 with fewer CUs)."""
    match = _CU_VARIANT.match(str(arch))
    return check_arch(match.group(1) if match else arch)


def logic_files(libs_dir: Path) -> list[Path]:
    files = sorted(Path(libs_dir).glob("*.yaml"))
    if not files:
        raise PlatformError(f"{libs_dir} holds no library logic (*.yaml)")
    return files


def logic_architecture(libs_dir: Path) -> str:
    """The one architecture every logic file in ``libs_dir`` is for; files for several
    architectures cannot go into one TensileCreateLibrary run and are refused by name."""
    by_arch: dict[str, list[str]] = {}
    for path in logic_files(libs_dir):
        try:
            arch = liblogic.load(path).architecture_name
        except liblogic.LibraryError as exc:
            raise PlatformError(str(exc)) from None
        by_arch.setdefault(arch, []).append(path.name)
    if len(by_arch) > 1:
        detail = "; ".join(f"{arch}: {', '.join(names)}" for arch, names in sorted(by_arch.items()))
        raise PlatformError(f"library logic in {libs_dir} is for several architectures ({detail}); "
                            "one library is built for one architecture")
    arch = next(iter(by_arch))
    try:
        return check_arch(arch)
    except PlatformError:
        raise PlatformError(f"library logic in {libs_dir} names architecture {arch!r}, "
                            "not a gfx name") from None


def create_library_argv(form: str, tensilelite: Path, python: str, libs_dir: Path, out_dir: Path,
                        arch: str, code_object_version: str, library_format: str) -> list[str]:
    """TensileCreateLibrary as the original runs it (§6.2): code object version, library format,
    the logic's architecture, the absolute logic dir, the output dir and the HIP runtime."""
    args = [f"--code-object-version={code_object_version}", f"--library-format={library_format}",
            f"--architecture={arch}", str(Path(libs_dir).resolve()), str(Path(out_dir).resolve()),
            "HIP"]
    return tool_argv(form, tensilelite, python, "TensileCreateLibrary", "create-library", args)


def _check_choice(value, choices, what: str) -> str:
    if str(value) not in choices:
        raise PlatformError(f"{what} {value!r} is not one of {', '.join(choices)}")
    return str(value)


def create_library(tensilelite: Path, libs_dir: Path, out_dir: Path, *, code_object_version: str,
                   library_format: str, python: str) -> Path:
    """Build the loadable library of the logic in ``libs_dir`` into ``out_dir``; returns
    ``out_dir``. TensileCreateLibrary writes the library per base architecture into
    ``out_dir/library/<arch>/`` (``TensileLibrary_lazy_<arch>.dat``, the per-problem libraries,
    the code objects); that ``gfx*`` subdirectory (or ``out_dir/library`` itself, where an older
    tool kept the files there) is what ``HIPBLASLT_TENSILE_LIBPATH`` names (the original's
    rule; ``platform.tensile_libpath``): never ``out_dir`` itself. The tool runs in ``out_dir``
    because it writes
    ``MatchTable.yaml`` into its working directory."""
    tensilelite, out_dir = Path(tensilelite).resolve(), Path(out_dir).resolve()
    code_object_version = _check_choice(code_object_version, CODE_OBJECT_VERSIONS,
                                        "code object version")
    library_format = _check_choice(library_format, LIBRARY_FORMATS, "library format")
    arch = logic_architecture(libs_dir)
    form = tool_form(tensilelite, "TensileCreateLibrary", python)
    argv = create_library_argv(form, tensilelite, python, libs_dir, out_dir, arch,
                               code_object_version, library_format)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / CREATE_LOG
    run_tool(argv, log_path, cwd=out_dir, env=tool_env(form, tensilelite),
             what="TensileCreateLibrary")
    if not any((out_dir / "library").rglob("TensileLibrary*")):
        raise PlatformError(f"TensileCreateLibrary wrote no TensileLibrary file under "
                            f"{out_dir / 'library'}: `{shlex.join(argv)}`; see {log_path}")
    return out_dir


# --- integration into a hipBLASLt checkout ----------------------------------------------------

def equality_logic_dir(hipblaslt_root: Path, arch: str) -> Path:
    """The checkout's Equality logic of ``arch``: ``asm_full/<arch>/Equality`` (gfx950), or under
    the schedule's directory, ``asm_full/<schedule>/<arch>/Equality`` (gfx942 is in
    ``aquavanjaram/``)."""
    base = Path(hipblaslt_root) / LOGIC_SUBDIR
    direct = base / check_arch(arch) / "Equality"
    found = [direct] if direct.is_dir() else sorted(base.glob(f"*/{arch}/Equality"))
    if len(found) != 1:
        raise PlatformError(f"{Path(hipblaslt_root)} is not a hipBLASLt checkout with one {arch} "
                            f"Equality logic directory ({direct} or {base}/<schedule>/{arch}/"
                            f"Equality; found {len(found)})")
    return found[0]


def merge_argv(form: str, tensilelite: Path, python: str, logic_dir: Path,
               final_libs: Path, out_dir: Path | None = None, *, eff: bool = False,
               force: bool = True) -> list[str]:
    """TensileMergeLibrary of ``final_libs`` into ``logic_dir``, written to ``out_dir`` (default:
    in place, as the README's integration step): efficiencies zeroed (``--no_eff``) unless
    ``eff``, known sizes replaced unconditionally (``--force_merge True``) while ``force``."""
    args = (([] if eff else ["--no_eff"]) + ["--force_merge", str(bool(force))]
            + [str(logic_dir), str(final_libs), str(out_dir or logic_dir)])
    return tool_argv(form, tensilelite, python, "TensileMergeLibrary", "merge-library", args)


def merge_libraries(tensilelite: Path, orig_dir: Path, inc_dir: Path, out_dir: Path, *,
                    python: str, eff: bool = False, force: bool = True) -> Path:
    """``library.operations.merge``: TensileMergeLibrary of ``inc_dir`` into ``orig_dir``,
    written to ``out_dir`` (its output in ``out_dir/tensile-merge-library.log``)."""
    tensilelite = Path(tensilelite).resolve()
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    form = tool_form(tensilelite, "TensileMergeLibrary", python)
    argv = merge_argv(form, tensilelite, python, Path(orig_dir).resolve(),
                      Path(inc_dir).resolve(), out_dir, eff=eff, force=force)
    run_tool(argv, out_dir / MERGE_LOG, cwd=out_dir, env=tool_env(form, tensilelite),
             what="TensileMergeLibrary")
    return out_dir


def rebuild_argv(hipblaslt_root: Path, arch: str) -> list[str]:
    """The command that rebuilds hipBLASLt with the merged logic (run in the checkout): its
    invoke tasks where it has them, else its install script."""
    if (Path(hipblaslt_root) / "tasks.py").is_file():
        return ["invoke", "build", "--install-deps", "--clients", "--architecture", arch,
                "--skip-rocroller"]
    return ["./install.sh", "--dependencies", "--clients", "--architecture", arch]


def _check_final_libs(final_libs: Path, arch: str) -> None:
    """What TensileMergeLibrary would stop on, said up front: logic for another architecture,
    or a library type other than Equality (the destination is the Equality directory)."""
    for path in logic_files(final_libs):
        try:
            lib = liblogic.load(path)
        except liblogic.LibraryError as exc:
            raise PlatformError(str(exc)) from None
        if lib.architecture_name != arch:
            raise PlatformError(f"{path} is library logic for {lib.architecture_name!r}, not "
                                f"{arch}: it cannot be merged into the {arch} logic")
        if lib.library_type != "Equality":
            raise PlatformError(f"{path} has LibraryType {lib.library_type!r}; only Equality "
                                "logic merges into the Equality directory")


def integrate(tensilelite: Path, hipblaslt_root: Path, final_libs: Path, arch: str, *,
              python: str, log_path: Path | None = None) -> list[str]:
    """Merge ``final_libs`` into the checkout's ``asm_full/<arch>/Equality`` logic (in place;
    ``git diff``/``git checkout`` in the checkout shows or undoes it) and return the rebuild
    command the user runs next in ``hipblaslt_root`` (it is not run here: it rebuilds
    hipBLASLt for an hour or more). The tool's output goes to ``log_path`` (default:
    ``tensile-merge-library.log`` beside ``final_libs``)."""
    tensilelite, hipblaslt_root = Path(tensilelite).resolve(), Path(hipblaslt_root).resolve()
    final_libs, arch = Path(final_libs).resolve(), check_arch(arch)
    logic_dir = equality_logic_dir(hipblaslt_root, arch)
    _check_final_libs(final_libs, arch)
    form = tool_form(tensilelite, "TensileMergeLibrary", python)
    argv = merge_argv(form, tensilelite, python, logic_dir, final_libs)
    run_tool(argv, Path(log_path or final_libs.parent / MERGE_LOG), cwd=hipblaslt_root,
             env=tool_env(form, tensilelite), what="TensileMergeLibrary")
    rebuild = rebuild_argv(hipblaslt_root, arch)
    log.info("merged %s into %s; now rebuild hipBLASLt:\n  cd %s && %s", final_libs, logic_dir,
             shlex.quote(str(hipblaslt_root)), shlex.join(rebuild))
    return rebuild


def rebuild_instructions(hipblaslt_root: Path, rebuild: list[str]) -> str:
    """The rebuild as one shell line to paste (``cd <root> && <command>``)."""
    return f"cd {shlex.quote(str(hipblaslt_root))} && {shlex.join(rebuild)}"


def require_rocm(config: dict) -> None:
    """Integration needs a vendor checkout to merge into: refused on a platform without one."""
    from .. import capabilities

    if not capabilities(config).integrate:
        raise PlatformError(f"integrate merges tuned kernels into a hipBLASLt checkout, so it "
                            f"needs platform: rocm; this campaign runs platform: "
                            f"{config.get('platform', 'sim')}")


def integrate_campaign(config: dict, final_libs: Path, log_path: Path | None = None) -> str:
    """The workflow's ``integrate`` target: final_libs into the campaign's hipBLASLt checkout.
    Only a rocm campaign has one; returns the rebuild line for the user."""
    from .. import get

    require_rocm(config)
    platform = get(config)
    rebuild = integrate(platform.install.tensilelite, platform.install.root, final_libs,
                        base_arch(platform.arch), python=platform.python, log_path=log_path)
    return rebuild_instructions(platform.install.root, rebuild)


__all__ = ["create_library", "create_library_argv", "integrate", "merge_argv", "merge_libraries", "rebuild_argv",
           "equality_logic_dir", "logic_architecture", "base_arch", "integrate_campaign",
           "rebuild_instructions", "require_rocm"]
