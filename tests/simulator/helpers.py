"""Graphs built directly in the IR for simulator tests (no ONNX file needed)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from compiler.graph import Graph, Node, Value, WeightStats


def act(name: str, shape: list[int], dtype: str = "float32") -> Value:
    return Value(name, shape, dtype)


def weight(name: str, shape: list[int], dtype: str = "float32") -> Value:
    n = math.prod(shape)
    return Value(name, shape, dtype, weight=WeightStats(n, n * (4 if dtype == "float32" else 8), -1.0, 1.0, 0.0))


def graph(nodes: list[Node], values: list[Value], inputs: list[str], outputs: list[str]) -> Graph:
    return Graph("t", "onnx", nodes, {v.name: v for v in values}, inputs, outputs)


def conv_chain() -> Graph:
    """x -> Conv(3->16, 3x3) -> Relu -> Conv(16->16 depthwise) -> GlobalAveragePool -> Gemm(16->10)."""
    values = [act("x", [1, 3, 32, 32]), weight("w1", [16, 3, 3, 3]), weight("b1", [16]), act("c1", [1, 16, 32, 32]),
              act("r1", [1, 16, 32, 32]), weight("w2", [16, 1, 3, 3]), act("c2", [1, 16, 32, 32]),
              act("g", [1, 16, 1, 1]), act("f", [1, 16]), weight("w3", [16, 10]), act("y", [1, 10])]
    nodes = [
        Node("conv1", "conv1", "Conv", inputs=["x", "w1", "b1"], outputs=["c1"],
             attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
        Node("relu1", "relu1", "Relu", inputs=["c1"], outputs=["r1"]),
        Node("dw", "dw", "Conv", inputs=["r1", "w2"], outputs=["c2"],
             attributes={"pads": [1, 1, 1, 1], "group": 16, "kernel_shape": [3, 3]}),
        Node("gap", "gap", "GlobalAveragePool", inputs=["c2"], outputs=["g"]),
        Node("flat", "flat", "Flatten", inputs=["g"], outputs=["f"], attributes={"axis": 1}),
        Node("fc", "fc", "Gemm", inputs=["f", "w3"], outputs=["y"]),
    ]
    return graph(nodes, values, ["x"], ["y"])


def conv_gemm() -> Graph:
    """conv1 (3 -> 32, 3x3 over 32 x 32) -> relu1 -> flat -> fc (Gemm, 32768 -> 64: 8 MB of fp32 weights)."""
    nodes = [Node("conv1", "conv1", "Conv", inputs=["x", "w1"], outputs=["a"],
                  attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
             Node("relu1", "relu1", "Relu", inputs=["a"], outputs=["b"]),
             Node("flat", "flat", "Flatten", inputs=["b"], outputs=["c"]),
             Node("fc", "fc", "Gemm", inputs=["c", "w2"], outputs=["y"])]
    values = [act("x", [1, 3, 32, 32]), act("a", [1, 32, 32, 32]), act("b", [1, 32, 32, 32]), act("c", [1, 32768]),
              act("y", [1, 64]), weight("w1", [32, 3, 3, 3]), weight("w2", [32768, 64])]
    return graph(nodes, values, ["x"], ["y"])


def exported_gelu(tokens: int, n_in: int, n_out: int, half_first: bool, bias: bool = False,
                  sqrt2: float = 2 ** 0.5) -> Graph:
    """A Linear then a GELU as torch's exporters write it: x = MatMul(a, w) [+ b] -> Div(sqrt 2) -> Erf -> Add(1) ->
    Mul(x) -> Mul(0.5), or x * 0.5 times (1 + erf) (`half_first`). Node ids: mm, [bias,] div, erf, add, mul, half."""
    def const(name: str, v: float) -> Value:
        return Value(name, [], "float32", weight=WeightStats(1, 4, v, v, 0.0))

    shape = [1, tokens, n_out]
    mm_out = "m" if bias else "x"
    values = [act("a", [1, tokens, n_in]), weight("w", [n_in, n_out]), act("x", shape), const("s2", sqrt2),
              const("one", 1.0), const("half", 0.5), *(act(n, shape) for n in ("d", "e", "p", "h", "y"))]
    nodes = [Node("mm", "mm", "MatMul", inputs=["a", "w"], outputs=[mm_out])]
    if bias:
        values += [weight("b", [n_out]), act("m", shape)]
        nodes.append(Node("bias", "bias", "Add", inputs=["b", "m"], outputs=["x"]))
    nodes += [Node("div", "div", "Div", inputs=["x", "s2"], outputs=["d"]),
              Node("erf", "erf", "Erf", inputs=["d"], outputs=["e"]),
              Node("add", "add", "Add", inputs=["e", "one"], outputs=["p"])]
    if half_first:
        nodes += [Node("half", "half", "Mul", inputs=["x", "half"], outputs=["h"]),
                  Node("mul", "mul", "Mul", inputs=["h", "p"], outputs=["y"])]
    else:
        nodes += [Node("mul", "mul", "Mul", inputs=["x", "p"], outputs=["h"]),
                  Node("half", "half", "Mul", inputs=["h", "half"], outputs=["y"])]
    return graph(nodes, values, ["a"], ["y"])


def transpose_graph(shape: list[int], perm: list[int]) -> Graph:
    """One Transpose of an activation of `shape` by `perm`."""
    out = [shape[p] for p in perm]
    return graph([Node("t", "t", "Transpose", inputs=["x"], outputs=["y"], attributes={"perm": perm})],
                 [act("x", shape), act("y", out)], ["x"], ["y"])


def task_ms(g: Graph, target: str, hw: Any, preset: str) -> list[float]:
    """Every task's latency (ms) under `preset` on `target` with the profile `hw`, in the graph's order."""
    from simulator.sweep import sweep

    r = sweep(g, target, hardware=hw, presets_only=(preset,))
    j = [p["name"] for p in r.bulk["presets"]].index(preset)
    return [float(row[j]) for row in r.bulk["metrics"]["latency_ms"]]


def host_fp32_ms(g: Graph, hw: Any) -> float:
    """The first task's fp32 latency (ms) on `ort-cpu/host` with the host profile `hw`."""
    return task_ms(g, "ort-cpu/host", hw, "fp32")[0]


def paired_timings(names: tuple[str, ...], per_element_s: float, ref_step_ms: float,
                   elements: Callable[[str], float]) -> dict[str, float]:
    """Calibration timings (ms) of cases timed against a `-ref` twin: each reference `ref_step_ms` x its place, each
    case its reference plus `per_element_s` for each of its `elements(name)`: what a pair fit must read back."""
    out = {}
    for i, n in enumerate(names):
        out[f"{n}-ref"] = ref_step_ms * (i + 1)
        out[n] = out[f"{n}-ref"] + per_element_s * elements(n) * 1e3
    return out


def fastest_of_rounds(measure: Callable[[], dict[str, tuple[Graph, list[float]]]], rounds: int = 2
                      ) -> dict[str, tuple[Graph, list[float]]]:
    """A LiteRT cases module's `measure` run `rounds` times, each operator at its fastest round: a slow spell of a
    shared core holds a case at 1.5-4x its time for a whole round (clean-clone CIs of 2026-12-06: a concatenation case
    3.8x, two SiLU cases 1.5-1.6x), as calibration's own timing keeps a low percentile (simulator.calibration_timing)."""
    got = [measure() for _ in range(rounds)]
    assert all(set(r) == set(got[0]) for r in got)
    return {n: (g, [min(t) for t in zip(*(r[n][1] for r in got))]) for n, (g, _) in got[0].items()}
