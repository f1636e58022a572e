"""Loaded by every Python process a fast-tier test starts (conftest puts this folder on its
PYTHONPATH): such a process may not start snakemake for real, so a `geko` run that reaches the
workflow fails there, naming the test that must be marked slow. ``starts_workflow`` is the one
rule of what counts, used here and by conftest for the test process itself."""
import os

NOT_A_RUN = ("--dry-run", "-n", "--lint", "--help", "-h", "--version")


def starts_workflow(argv) -> bool:
    """A command line that runs the real workflow: snakemake, not a dry run or lint."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = os.fsdecode(argv).split()
    words = [str(a) for a in argv]
    if any(w in NOT_A_RUN for w in words):
        return False
    return bool(words) and (os.path.basename(words[0]) == "snakemake" or any(
        a == "-m" and b == "snakemake" for a, b in zip(words, words[1:])))


if os.environ.get("GEKO_FAST_TIER_TEST"):
    import subprocess
    import sys

    sys.path[:] = [p for p in sys.path if not p.endswith("fast_tier")]
    _real_init = subprocess.Popen.__init__

    def _init(self, args, *rest, **kwargs):
        if starts_workflow(args):
            shown = os.fsdecode(args) if isinstance(args, (str, bytes)) else " ".join(map(str, args))
            raise SystemExit(f"fast tier: {os.environ['GEKO_FAST_TIER_TEST']} starts the "
                             f"workflow ({shown[:200]}): mark it slow")
        return _real_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = _init
