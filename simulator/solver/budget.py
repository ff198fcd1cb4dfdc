"""What the user asks for: upper limits on a state's totals, and how far a state is from meeting them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from compiler.vocabulary.options import OptionError

LIMITS: tuple[str, ...] = ("latency_ms", "peak_memory_bytes", "size_bytes", "memory_power_mw")
TOL = 1e-9  # relative slack on the search's tracked sums (the exact totals of simulator.totals decide)


@dataclass(frozen=True, slots=True)
class Budget:
    """Upper limits; None leaves a metric free. fps is given as latency (1000 / fps)."""
    latency_ms: float | None = None
    peak_memory_bytes: float | None = None
    size_bytes: float | None = None
    memory_power_mw: float | None = None

    @classmethod
    def of(cls, latency_ms: float | None = None, fps: float | None = None, peak_memory_bytes: float | None = None,
           size_bytes: float | None = None, memory_power_mw: float | None = None) -> Budget:
        if fps is not None:
            if fps <= 0:
                raise OptionError("fps must be positive")
            lat = 1000.0 / fps
            latency_ms = lat if latency_ms is None else min(latency_ms, lat)
        b = cls(latency_ms, peak_memory_bytes, size_bytes, memory_power_mw)
        if not b.limits():
            raise OptionError("give at least one limit: latency_ms (or fps), peak_memory_bytes, size_bytes "
                              "or memory_power_mw")
        for k, v in b.limits().items():
            if not (v > 0 and math.isfinite(v)):
                raise OptionError(f"{k} must be a positive number, not {v!r}")
        return b

    def limits(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in LIMITS if getattr(self, k) is not None}

    def unmet(self, t: Mapping[str, float]) -> list[str]:
        return [k for k, v in self.limits().items() if t[k] > v]


def excess(limits: Mapping[str, float], figures: Mapping[str, float]) -> float:
    """How far past the budget: the sum of each exceeded limit's relative overshoot (0 when it is met)."""
    return sum(max(0.0, figures[k] / v - 1.0 - TOL) for k, v in limits.items())
