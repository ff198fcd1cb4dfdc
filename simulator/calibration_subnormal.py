"""Calibration's subnormal cases: what a Softmax writing subnormals and a MatMul reading them cost on this CPU
(simulator/subnormals.py), the price of `softmax.fp32.subnormal` (per subnormal written) and `matmul.fp32.subnormal`
(per multiply-add with one).

Each case is R masked attention blocks side by side on one input, as Swin's shifted windows run them: the logits
scaled near zero (as random weights leave them: the masked outputs sit at exp(-100) / row sum, deep in the subnormals),
plus Swin's own mask of a 28 px map in 7 px windows shifted by 3 (16 windows, 23% of pairs masked at -100), a Softmax,
and (the attention cases) a MatMul by V of 32 columns. Each is timed beside the same graph with the mask at -1
(normal floats, the same kernels): the difference is the subnormals' cost alone, whatever the rest is priced at.
On an Emerald Rapids Xeon (2026-12-05, thread CPU time) 20 ns per subnormal written and 94 ns per one read by the
32-wide MatMul (2.9 ns per multiply-add), as Swin-T's shifted blocks profiled; with logits of unit spread (a third
of the masked outputs underflow to zero) 63 ns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.calibration_models import R, Parts, add_case
from simulator.profiles import HardwareProfile

KEYS = ("softmax.fp32.subnormal", "matmul.fp32.subnormal")
MASKED, NORMAL = -100.0, -1.0  # Swin's mask value (exp of it is subnormal) and one whose exp is a normal float
LOGIT_SCALE = 0.01  # the calibration input (standard normal) scaled to logits near zero
WINDOWS, HEADS, TOKENS, DIM = 16, 6, 49, 32  # Swin-T's second stage: 28 px in 7 px windows


def shifted_window_mask(size: int, window: int = 7, shift: int = 3) -> np.ndarray:
    """[windows, 1, window^2, window^2]: True where two tokens of a window come from different regions of the
    map rolled by `shift` (the pairs Swin's shifted-window attention masks)."""
    img = np.zeros((size, size), np.int64)
    cuts = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
    for i, hs in enumerate(cuts):
        for j, ws in enumerate(cuts):
            img[hs, ws] = 3 * i + j
    win = img.reshape(size // window, window, size // window, window).transpose(0, 2, 1, 3).reshape(-1, window ** 2)
    return (win[:, None, :] != win[:, :, None])[:, None]


def attention_case(fill: float, matmul: bool) -> Parts:
    """R blocks of Softmax(x * LOGIT_SCALE + c_i + mask) (the c_i keep ORT from merging them), each by V where
    `matmul`; the mask's masked pairs at `fill`."""
    from onnx import TensorProto, helper, numpy_helper

    f = TensorProto.FLOAT
    mask = np.where(shifted_window_mask(int(round(WINDOWS ** 0.5)) * 7), fill, 0.0).astype(np.float32)
    inits = [numpy_helper.from_array(mask, "mask"), numpy_helper.from_array(np.array(LOGIT_SCALE, np.float32), "k")]
    ins = [helper.make_tensor_value_info("x", f, [WINDOWS, HEADS, TOKENS, TOKENS])]
    nodes = [helper.make_node("Mul", ["x", "k"], ["xs"], name="scale")]
    outs = []
    if matmul:
        ins.append(helper.make_tensor_value_info("v", f, [WINDOWS, HEADS, TOKENS, DIM]))
    for i in range(R):
        inits.append(numpy_helper.from_array(np.array(0.01 * i, np.float32), f"c{i}"))
        nodes += [helper.make_node("Add", ["xs", f"c{i}"], [f"a{i}"], name=f"shift{i}"),
                  helper.make_node("Add", [f"a{i}", "mask"], [f"m{i}"], name=f"mask{i}"),
                  helper.make_node("Softmax", [f"m{i}"], [f"s{i}"], name=f"softmax{i}", axis=-1)]
        if matmul:
            nodes.append(helper.make_node("MatMul", [f"s{i}", "v"], [f"y{i}"], name=f"byv{i}"))
        shape = [WINDOWS, HEADS, TOKENS, DIM if matmul else TOKENS]
        outs.append(helper.make_tensor_value_info(f"y{i}" if matmul else f"s{i}", f, shape))
    return nodes, ins, outs, inits


# (name of the masked case, whether it multiplies by V); each is timed with its `-ref` twin (the mask at NORMAL).
SUBNORMAL_CASES: tuple[tuple[str, bool], ...] = (("subnormal-softmax", False), ("subnormal-attention", True))


def build_subnormal_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph]
                          ) -> tuple[str, ...]:
    """Save and compile each case and its reference into `tmp`, adding them to calibration's `timings` and `graphs`;
    the masked cases' names."""
    for name, matmul in SUBNORMAL_CASES:
        for key, fill in ((name, MASKED), (f"{name}-ref", NORMAL)):
            add_case(tmp, timings, graphs, key, attention_case(fill, matmul))
    return tuple(name for name, _ in SUBNORMAL_CASES)


def fit_subnormal(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
                  predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
                  ) -> dict[str, float]:
    """{KEYS: seconds per subnormal written / multiply-add with one} from the masked cases' time over their
    references' (`measured_ms`, without the per-run cost), every other figure in place: least squares on the
    differences, each figure >= 0 (0 where this CPU takes subnormals at full speed); {} without the cases."""
    pairs = [n for n in names if n in measured_ms and f"{n}-ref" in measured_ms]
    if not pairs:
        return {}
    zero = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {k: 0.0 for k in KEYS}}}})
    base = {n: predict_ms(graphs[n], zero) for n in pairs}
    a = np.array([[(predict_ms(graphs[n], zero.with_overrides({"units": {"cpu": {"kind_overhead_s": {k: 1e-9}}}}))
                    - base[n]) * 1e-3 / 1e-9 for k in KEYS] for n in pairs])  # seconds per second of each figure
    b = np.array([max(measured_ms[n] - measured_ms[f"{n}-ref"], 0.0) * 1e-3 for n in pairs])
    scale = np.maximum(b, 1e-6)[:, None]  # relative residuals: each case weighs alike
    out = dict(zip(KEYS, _nonnegative(a / scale, b / scale[:, 0])))
    cases_out.extend({"case": n, "preset": "fp32", "key": "subnormal", "measured_ms": measured_ms[n],
                      "reference_ms": measured_ms[f"{n}-ref"], **{k.split(".")[0] + "_subnormal_s": v
                                                                  for k, v in out.items()}} for n in pairs)
    return out


def _nonnegative(a: np.ndarray, b: np.ndarray) -> list[float]:
    """Least squares a s = b with s >= 0 over the two columns: both, either alone, or none, the best that holds."""
    best, x = float((b ** 2).sum()), [0.0, 0.0]
    for use in ([0, 1], [0], [1]):
        s_use = np.linalg.lstsq(a[:, use], b, rcond=None)[0]
        if (s_use < 0).any():
            continue
        s = np.zeros(2)
        s[use] = s_use
        err = float(((a @ s - b) ** 2).sum())
        if err < best:
            best, x = err, [float(v) for v in s]
    return x
