"""What a run pays between and across its tasks, beside their own costs (simulator.roofline): a partition crossing
(a sync and a copy between compute units) and the memory power of its DRAM traffic. Conversions between tasks are
simulator.conversions'."""

from __future__ import annotations

from collections.abc import Mapping

from simulator.profiles import HardwareProfile
from simulator.roofline import Num

# --- between tasks: crossings (conversions: simulator.conversions) --------------------------------------------

def crossing_constants(hw: HardwareProfile) -> dict[str, float] | None:
    """Figures of one partition crossing (a sync + copy between compute units); None where the profile charges no
    crossings (one unit). crossing_ms evaluates them: the bulk columns, the totals rule and the solver all do."""
    if hw.partition_crossing_s <= 0:
        return None
    return {"fixed_s": hw.partition_crossing_s, "bytes_per_s": hw.dram_bandwidth_bytes_per_s}


def crossing_bytes(elements: Num, bytes_per_element: Num) -> Num:
    """Bytes a crossing moves: the producer's output written out and read back through DRAM."""
    return elements * bytes_per_element * 2


def crossing_ms(crossing: Mapping[str, float], moved_bytes: Num, syncs: Num = 1.0) -> Num:
    """`syncs` partition crossings moving `moved_bytes` in all: `(fixed_s x syncs + bytes / bytes_per_s) x 1e3`.
    web/src/totals.ts (`crossingMs`) mirrors it for one crossing."""
    return (crossing["fixed_s"] * syncs + moved_bytes / crossing["bytes_per_s"]) * 1e3


def memory_power_mw(dram_bytes_per_run: float, pj_per_byte: float, latency_ms: float) -> float:
    """Average power of the run's DRAM traffic (mW): its energy over its latency."""
    return dram_bytes_per_run * pj_per_byte * 1e-9 / latency_ms * 1e3 if latency_ms > 0 else 0.0
