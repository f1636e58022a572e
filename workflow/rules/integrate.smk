# final_libs -> the hipBLASLt checkout's Equality logic (rocm only; not part of the default
# target): `snakemake ... integrate`, then run the rebuild command it prints.


def integrate_input(wildcards):
    """The rule's inputs (final_libs), on a rocm campaign; any other platform is refused before
    anything runs."""
    from geko_lib.platforms.rocm.library_build import require_rocm

    require_rocm(config)
    return rule_input("integrate")


rule integrate:
    """Merge final_libs into the hipBLASLt checkout (TensileMergeLibrary) and write the rebuild
    command to run next (integrate/rebuild_command.txt)."""
    input:
        unpack(integrate_input),
    output:
        **rule_output("integrate"),
    log:
        rule_log("integrate"),
    run:
        in_process("integrate", input, output, params, wildcards, threads, resources, log)
