"""What every benchmark prints about the machine it ran on."""
import platform
from pathlib import Path


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo where there is one, else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def summary() -> str:
    """'<arch> <CPU model>, <n> CPUs, Python <version>': the first words of a benchmark's
    machine line."""
    import os

    return (f"{platform.machine()} {cpu_name()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}")
