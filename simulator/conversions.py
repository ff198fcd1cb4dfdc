"""The cost of a format conversion between two tasks (a quantize, dequantize or Cast on an edge), which the totals
rule adds per edge (simulator/totals.py, mirrored by web/src/totals.ts): figures from the hardware profile, formulas
of simulator.roofline's roofline."""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.graph import Graph
from compiler.vocabulary.formats import ACTIVATION_FORMATS, BITS
from simulator.profiles import HardwareProfile
from simulator.roofline import Num, efficiency

# Calibration's own figure for ORT's Cast between fp32 and fp16 (`<CAST_KEY>.element`: s per element, from the
# `cast-*` cases of simulator.calibration_bench, cast_element below): an fp16 export's Casts at its fp32 /
# fp16 kernel boundaries. The element-wise rate priced them at about twice their time (a Zen 4, single-op files, CPU
# time: 0.08-0.10 ns per element at 50-200 K elements against 0.187 charged). `CAST_KEY` is also the efficiency the
# same cases fit for Cast tasks (roofline.efficiency of kind `quant`, op `Cast`).
CAST_KEY = "quant.fp32.Cast"
_FLOAT_PAIR = frozenset({"fp32", "fp16"})


def conversion_constants(hw: HardwareProfile) -> dict[str, Any]:
    """Cost of a quantize / dequantize / cast between two activation formats, run on the first unit:
    `fixed_ms` per conversion and `ms_per_element` per pair `a>b`."""
    u = hw.units[0]
    peak = u.peak_ops_per_s.get("fp32", 0) or u.peak_ops_per_s.get("fp16")
    cast_s = u.kind_overhead_s.get(f"{CAST_KEY}.element", 0.0)
    per_el: dict[str, float] = {}
    for a in ACTIVATION_FORMATS:
        for b in ACTIVATION_FORMATS:
            if a == b:
                continue
            if {a, b} == _FLOAT_PAIR and cast_s > 0:
                s = cast_s  # a Cast as calibration timed it, beside its dispatch (fixed_ms)
            else:
                # Streaming read of one format + write of the other, plus ~2 ops (scale, round).
                s = (BITS[a] + BITS[b]) / 8 / u.cache_bandwidth_bytes_per_s + 2 / peak / efficiency(
                    u, "elementwise", "fp32")
            per_el[f"{a}>{b}"] = s * 1e3
    return {"fixed_ms": u.dispatch_overhead_s * 1e3, "ms_per_element": per_el}


def conversion_ms(fixed_ms: Num, ms_per_element: Num, elements: Num) -> Num:
    """One conversion of `elements` values (constants from conversion_constants)."""
    return fixed_ms + elements * ms_per_element


def conversion_bytes(elements: Num, from_format: str, to_format: str) -> Num:
    """Bytes a conversion moves: it reads one format and writes the other."""
    return elements * (BITS[from_format] / 8 + BITS[to_format] / 8)


def cast_element(graphs: dict[str, Graph], cases_out: list[dict[str, Any]], hw: HardwareProfile) -> dict[str, float]:
    """{`quant.fp32.Cast.element`: s per element of ORT's Cast between fp32 and fp16} read off the `cast-*` cases
    (their time less a dispatch per task, over the Casts' elements; the median), the figure simulator.conversions
    prices fp16's conversions at; {} without those cases."""
    per_el = []
    for c in cases_out:
        if c["key"] != CAST_KEY:
            continue
        g = graphs[c["case"]]
        casts = [nd for nd in g.nodes if nd.op_type == "Cast"]
        n = float(np.prod(g.values[casts[0].inputs[0]].shape)) if casts else 0.0
        if n > 0:
            busy = c["measured_ms"] * 1e-3 - len(g.nodes) * hw.units[0].dispatch_overhead_s
            per_el.append(max(busy, 0.0) / (len(casts) * n))
    return {f"{CAST_KEY}.element": float(np.median(per_el))} if per_el else {}
