"""Options on the ops of If / Loop / Scan bodies, priced as the ONNX exporter writes them: its quantizers (static and
dynamic int8, 4-bit MatMul) and its pruning and palettization act on the top-level nodes it names, so a body's ops
stay float under every option but fp16, whose converter converts bodies too (simulator.control_flow.body_preset).
The sweep had priced them quantized: a Loop body's MatMul at int8 (int8-static 12% faster than the file ORT runs)
and at 4-bit (int4-weights twice its fp32 time), neither of which the exporter writes."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import frontends
from compiler.backends import as_tasks
from compiler.optimize.onnx_export import export_onnx
from simulator.control_flow import BODY_EXPORT_NOTE
from simulator.sweep import sweep

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)

D = 256
BODY = ("body_mm", "body_add", "body_tanh")


def _outer_read_loop(path: Path, trips: int = 8) -> Path:
    """x @ w1 -> r; a Loop of `trips` trips over s = tanh(s @ wb + r) (r read from the outer scope, as a decoder
    reads its encoder's output); then y @ w2: weighted ops on both sides of the body."""
    rng = np.random.default_rng(0)

    def w(name: str) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal((D, D)) / D ** 0.5).astype(np.float32), name)

    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"),
         helper.make_node("MatMul", ["s_in", "wb"], ["m"], name="body_mm"),
         helper.make_node("Add", ["m", "r"], ["ma"], name="body_add"),
         helper.make_node("Tanh", ["ma"], ["s_out"], name="body_tanh")], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [1, D])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [1, D])])
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["r"], name="top_mm"),
             helper.make_node("Loop", ["trips", "cond", "r"], ["y"], name="loop", body=body),
             helper.make_node("MatMul", ["y", "w2"], ["z"], name="out_mm")]
    g = helper.make_graph(nodes, "outer_read", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, D])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, D])],
                          [w("w1"), w("wb"), w("w2"), numpy_helper.from_array(np.array(trips, np.int64), "trips"),
                           numpy_helper.from_array(np.array(True), "cond")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _cells(bulk: dict, preset: str, ops: tuple[str, ...]) -> list[tuple[str, float, float]]:  # type: ignore[type-arg]
    """(combo, latency, file bytes) of each of `ops` under `preset` in the bulk table."""
    p = [x["name"] for x in bulk["presets"]].index(preset)
    rows = [bulk["ops"].index(o) for o in ops]
    return [(bulk["combos"][i][p], bulk["metrics"]["latency_ms"][i][p], bulk["metrics"]["weight_bytes"][i][p])
            for i in rows]


@pytest.mark.parametrize("target", ["ort-cpu/host", "ort-xnnpack/rpi5"])
def test_body_ops_are_priced_as_the_exporter_writes_them(tmp_path: Path, target: str) -> None:
    g = as_tasks(frontends.load(_outer_read_loop(tmp_path / "loop.onnx")))
    r = sweep(g, target)
    fp32, fp16 = _cells(r.bulk, "fp32", BODY), _cells(r.bulk, "fp16", BODY)
    for preset in ("int8-static", "int8-dynamic", "int4-weights", "palettize-4bit", "prune-50",
                   "prune-50+int8-static"):
        cells = _cells(r.bulk, preset, BODY)
        # float, as written: combo and bytes; the time too, but for body_add's crossing from a top_mm that moved
        # to another unit (rpi5: a partition crossing, the neighbour's state)
        assert [(c, b) for c, _, b in cells] == [(c, b) for c, _, b in fp32], preset
        assert [t for _, t, _ in cells[::2]] == [t for _, t, _ in fp32[::2]], preset
        assert _cells(r.bulk, preset, ("top_mm",))[0][0] != _cells(r.bulk, "fp32", ("top_mm",))[0][0], preset
    # the fp16 converter reaches bodies; pruning does not
    assert [(c, b) for c, _, b in _cells(r.bulk, "prune-50+fp16", BODY)] == [(c, b) for c, _, b in fp16]
    # the per-op table keeps every combo of a body op (none exportable) and says why the options leave it float
    e = r.per_op[r.bulk["ops"].index("body_mm")]
    assert BODY_EXPORT_NOTE in e["notes"] and not any(e["exportable"])
    assert BODY_EXPORT_NOTE not in r.per_op[r.bulk["ops"].index("top_mm")]["notes"]


def test_the_4bit_quantizer_writes_only_the_matmuls_it_is_given(tmp_path: Path) -> None:
    """MatMulNBitsQuantizer's node list adds to the MatMuls it quantizes: the body's MatMul and a top-level one with
    an fp32 override were written 4-bit too (the override not honoured)."""
    out = tmp_path / "int4.onnx"
    export_onnx(_outer_read_loop(tmp_path / "loop.onnx"), out, "int4-weights", {"out_mm": "fp32/fp32/fp32/0"})
    m = onnx.load(str(out))
    top = {n.name: n.op_type for n in m.graph.node}
    body = {n.name: n.op_type for n in m.graph.node if n.op_type == "Loop" for b in n.attribute for n in b.g.node}
    assert top.get("out_mm") == "MatMul" and body.get("body_mm") == "MatMul"
    assert "MatMulNBits" in top.values()  # top_mm, as asked
