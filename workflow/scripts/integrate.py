"""final_libs -> the hipBLASLt checkout's asm_full/<arch>/Equality logic (rocm only); the
rebuild command the user runs next -> integrate/rebuild_command.txt."""
from geko_lib import phases

phases.run_script(snakemake, "integrate")  # noqa: F821
