"""final_libs -> the hipBLASLt checkout's asm_full/<arch>/Equality logic (rocm only); the
rebuild command the user runs next -> integrate/rebuild_command.txt."""
import logging
from pathlib import Path

from .. import files, jobs
from ..platforms.rocm import library_build
from ..log_setup import LOGGER


def run(job):
    out = Path(job.output[0])
    command = library_build.integrate_campaign(job.config, Path(job.input[0]),
                                               log_path=out.with_name("tensile-merge-library.log"))
    files.write_text(out, command + "\n")
    logging.getLogger(LOGGER).info("final_libs merged; rebuild hipBLASLt with:\n  %s", command)
