"""Loaded by every Python process a fast-tier test starts (conftest puts this folder on its
PYTHONPATH): such a process may not start snakemake for real, so a `geko` run that reaches the
workflow fails there, naming the test that must be marked slow."""
import os

if os.environ.get("GEKO_FAST_TIER_TEST"):
    import sys

    sys.path[:] = [p for p in sys.path if not p.endswith("fast_tier")]
    import subprocess

    _real_init = subprocess.Popen.__init__

    def _init(self, args, *rest, **kwargs):
        words = [str(a) for a in ([args] if isinstance(args, (str, bytes)) else args)]
        dry = any(w in ("--dry-run", "-n", "--lint", "--help", "-h", "--version") for w in words)
        snakemake = bool(words) and (os.path.basename(words[0]) == "snakemake" or any(
            a == "-m" and b == "snakemake" for a, b in zip(words, words[1:])))
        if not dry and snakemake:
            raise SystemExit(f"fast tier: {os.environ['GEKO_FAST_TIER_TEST']} starts the "
                             f"workflow ({' '.join(words)[:200]}): mark it slow")
        return _real_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = _init
