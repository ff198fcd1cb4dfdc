"""This machine as the profiling children see it: the CPU's name, and the process's resident-memory peak (VmHWM,
reset before a model loads so the peak is the model's own). Shared by the ORT and LiteRT backends."""

from __future__ import annotations

import platform
from pathlib import Path


def reset_peak() -> int:
    """Reset VmHWM if the kernel lets us; return the current RSS in bytes."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    return status_kb("VmRSS") * 1024


def peak_rss() -> int:
    hwm = status_kb("VmHWM")
    if hwm:
        return hwm * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def status_kb(key: str) -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
