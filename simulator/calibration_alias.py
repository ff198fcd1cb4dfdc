"""Calibration's aliased-SGEMM cases: what an fp32 product whose rows of A share one L1 set costs per MAC on this CPU
(sgemm_alias.ALIAS_KEY; simulator/sgemm_alias.py counts such MACs).

Each case is SIDE Linears of a transformer's MLP second layer (x [M, K] by their own constant [K, N], K a multiple of
1024) timed with its `-ref` twin one cache line longer (K + 16: rows 64 bytes further apart, each in the next set):
the difference is the aliasing alone, whatever the SGEMM's rate is priced at (the bench's square gemm cases, K <= 896,
fit that). The rows and K are the ViTs': CoaT-Lite's stages 2 and 3 (785 and 197 tokens, K = 1024), ViT-B's fc2 (197
tokens, K = 3072) and a Swin's / ConvNeXt's last stage (49 tokens, K = 3072), N kept small (weights of 0.5-3 MB).
Single-op files on a Zen 4 (session 63, benchmarks/vit_gemms.py --only alias, thread CPU time) read the pairs' gap:
197 rows at K = 1024 / 2048 / 3072 9.5-11.2% under the rate's price against 0.7-0.9% at K = 1008 / 1536, 785 rows
13.2-14.4% against 4.0-7.7% (K = 1008 / 1040 / 1536), 49 rows at K = 1024 9.6%: ~1.7-2.0 ps per aliased MAC.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from simulator.calibration_models import Parts, add_case, pair_slope_fit, rng_weights
from simulator.profiles import HardwareProfile
from simulator.sgemm_alias import ALIAS_KEY

KEY = ALIAS_KEY
SHAPES = ((785, 1024, 128), (197, 1024, 256), (197, 3072, 128), (49, 3072, 256))  # (M, K, N)
SIDE = 4  # Linears side by side on one input, each with its own weight
PREFIX = "gemm-alias-"
REF_PAD = 16  # floats the reference's rows are longer by: one 64-byte line
UNIT = 1e-12  # s per MAC: the step the fit's slope is read over (linear)


def linears(m: int, k: int, n: int) -> Parts:
    """SIDE MatMuls of x [m, k] by their own constant [k, n]."""
    from onnx import TensorProto, helper, numpy_helper

    f = TensorProto.FLOAT
    nodes = [helper.make_node("MatMul", ["x", f"w{i}"], [f"y{i}"], name=f"mm{i}") for i in range(SIDE)]
    draw = rng_weights([k, n])
    inits = [numpy_helper.from_array(draw(i), f"w{i}") for i in range(SIDE)]
    return (nodes, [helper.make_tensor_value_info("x", f, [m, k])],
            [helper.make_tensor_value_info(f"y{i}", f, [m, n]) for i in range(SIDE)], inits)


def build_alias_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph]
                      ) -> tuple[str, ...]:
    """Save and compile the cases and their references into `tmp`, adding them to calibration's `timings` and
    `graphs`; the cases' names."""
    names = []
    for m, k, n in SHAPES:
        name = f"{PREFIX}{m}x{k}x{n}"
        add_case(tmp, timings, graphs, name, linears(m, k, n))
        add_case(tmp, timings, graphs, f"{name}-ref", linears(m, k + REF_PAD, n))
        names.append(name)
    return tuple(names)


def fit_alias(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
              predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
              ) -> dict[str, float]:
    """{KEY: s per aliased MAC} from each case's time less its reference's (`measured_ms`, without the per-run cost)
    less what the rest of the profile prices that difference at (the reference's extra line of K), over the case's
    aliased MACs: least squares over the cases, >= 0; {} without the cases."""
    s, pairs = pair_slope_fit(names, graphs, measured_ms, hw, predict_ms, KEY, UNIT)
    if not pairs:
        return {}
    cases_out.extend({"case": n, "preset": "fp32", "key": "alias", "measured_ms": measured_ms[n],
                      "reference_ms": measured_ms[f"{n}-ref"], "alias_s": s} for n in pairs)
    return {KEY: s}
