"""A recurrent op's reads of R from the core's cache at a rate of their own (`matmul.fp32.reread`, fitted on the GRU /
LSTM cases of simulator/calibration_rnn.py), not the element-wise chains' cache rate: the bidirectional GRU (hidden
256, 200 steps) came out -14% of its CPU time on a Sapphire Rapids, +20.4% on an Emerald Rapids with that one rate."""

from __future__ import annotations

import math

import onnx
import pytest

from compiler.graph import Graph, Node
from simulator.calibration_rnn import GATES, KEY, RNN_CASES, fit_rnn, rnn_case
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms, weight

HW = load_profile("host-cpu")


def _rnn(op: str, hidden: int, steps: int, inputs: int) -> Graph:
    g = GATES[op]
    return graph([Node(op.lower(), op.lower(), op, inputs=["x", "W", "R", "B"], outputs=["y"],
                       attributes={"hidden_size": hidden})],
                 [act("x", [steps, 1, inputs]), weight("W", [1, g * hidden, inputs]),
                  weight("R", [1, g * hidden, hidden]), weight("B", [1, 2 * g * hidden]),
                  act("y", [steps, 1, 1, hidden])], ["x"], ["y"])


def test_the_cases_are_valid_models_whose_r_stays_in_a_small_l2() -> None:
    for name, build in RNN_CASES:
        nodes, ins, outs, inits = build()
        model = onnx.helper.make_model(onnx.helper.make_graph(nodes, name, ins, outs, inits),
                                       opset_imports=[onnx.helper.make_opsetid("", 17)])
        onnx.checker.check_model(model, full_check=True)
        r = next(i for i in inits if i.name == "R")
        assert math.prod(r.dims) * 4 <= 2 ** 20, name  # one direction's R within a 1 MiB L2: the cache's rate
    nodes, *_ = rnn_case("LSTM", 64, 10, 8)
    assert nodes[0].op_type == "LSTM" and list(nodes[0].output) == ["y", "y_h", "y_c"]


def test_the_rate_replaces_the_cache_rate_for_reads_of_r_only() -> None:
    g = _rnn("GRU", 256, 200, 80)
    reads = 200 * 768 * 256 * 4.0  # bytes of R read again
    slow, fast = (HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: s}}}}) for s in (2e-11, 1e-11))
    assert host_fp32_ms(g, slow) - host_fp32_ms(g, fast) == pytest.approx(reads * 1e-11 * 1e3, rel=0.02)
    conv = graph([Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"], attributes={"pads": [1] * 4})],
                 [act("x", [1, 32, 28, 28]), weight("w", [32, 32, 3, 3]), act("y", [1, 32, 28, 28])], ["x"], ["y"])
    assert host_fp32_ms(conv, slow) == host_fp32_ms(conv, HW)  # other ops keep their rates


def test_calibration_fits_the_rate_per_byte_read_again() -> None:
    graphs = {n: _rnn(*shape) for n, shape in (("gru-h256-s200-x80", ("GRU", 256, 200, 80)),
                                                ("lstm-h256-s100-x256", ("LSTM", 256, 100, 256)))}
    truth = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: 1.3e-11}}}})
    meas = {n: host_fp32_ms(g, truth) for n, g in graphs.items()}
    out: list[dict[str, object]] = []
    assert fit_rnn(tuple(meas), graphs, meas, HW, host_fp32_ms, out)[KEY] == pytest.approx(1.3e-11, rel=1e-3)
    assert {o["case"] for o in out} == set(meas)
    assert fit_rnn((), graphs, {}, HW, host_fp32_ms, out) == {}  # a calibration without the cases keeps the cache rate
