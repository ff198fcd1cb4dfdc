"""ORT's DynamicQuantizeLSTM (quantize_dynamic's LSTM) counts the work of the LSTM it is: W and R stored int8 and
transposed ([dirs, input or hidden, 4 * hidden]), each step's H x R reading R a byte per element (costs._INT8_RNN).
It was a task of kind `other` and no MACs: ddddocr's older recognizer's, 0.13 ms predicted against 0.90 profiled."""

from __future__ import annotations

from compiler.graph import Node, Value
from simulator.costs import kind_of, work_of
from tests.simulator.helpers import act, graph, weight


def _lstm(op: str, steps: int = 24, n_in: int = 512, hidden: int = 512):  # type: ignore[no-untyped-def]
    int8 = op == "DynamicQuantizeLSTM"
    w_shape = [2, n_in, 4 * hidden] if int8 else [2, 4 * hidden, n_in]
    r_shape = [2, hidden, 4 * hidden] if int8 else [2, 4 * hidden, hidden]
    dtype = "int8" if int8 else "float32"
    values: list[Value] = [act("x", [steps, 1, n_in]), weight("w", w_shape, dtype), weight("r", r_shape, dtype),
                           act("y", [steps, 2, 1, hidden])]
    node = Node("l", "l", op, inputs=["x", "w", "r"], outputs=["y"],
                attributes={"hidden_size": hidden, "direction": "bidirectional"})
    return graph([node], values, ["x"], ["y"])


def test_the_int8_lstm_counts_its_lstms_input_macs_and_a_quarter_of_its_recurrent_reads() -> None:
    q, f = _lstm("DynamicQuantizeLSTM"), _lstm("LSTM")
    wq, wf = work_of(q.nodes[0], q), work_of(f.nodes[0], f)
    assert kind_of(q.nodes[0], q) == "matmul"
    rows, gates, hidden, n_in = 24 * 2, 4, 512, 512
    assert wf.macs == rows * gates * hidden * (n_in + hidden)
    assert wq.macs == rows * gates * hidden * (n_in + hidden / 4)  # its input projection read from W [2, 512, 2048]
    assert wq.reread_elements == wf.reread_elements / 4 == 24 * 2 * 512 * 2048 / 4
    assert wq.reread_set == 512 * 2048 / 4  # one direction's R: 1 MB of int8, in float elements
