# final_libs -> the hipBLASLt checkout's Equality logic (rocm only; not part of the default
# target): `snakemake ... integrate`, then run the rebuild command it prints.


def integrate_input(wildcards):
    """final_libs, on a rocm campaign; any other platform is refused before anything runs."""
    from geko_lib.platforms.rocm.library_build import require_rocm

    require_rocm(config)
    return "final_libs"


rule integrate:
    """Merge final_libs into the hipBLASLt checkout (TensileMergeLibrary) and write the rebuild
    command to run next (integrate/rebuild_command.txt)."""
    localrule: True
    input:
        integrate_input,
    output:
        "integrate/rebuild_command.txt",
    log:
        "logs/integrate.log",
    script:
        "../scripts/integrate.py"
