"""An uploaded file's own dynamic int8 kernels (ConvInteger, MatMulInteger, DynamicQuantizeMatMul: what ORT makes of
onnxruntime.quantization.quantize_dynamic's output) run at the dynamic int8 figures in the file as uploaded (the fp32
column), not as fp32 Convs / Gemms with 4-byte weights (simulator.ort_int8.native_int8dyn_path). ddddocr's old
recognizer was priced +48% over its thread CPU time on a Zen 4 (2026-12-05), its ConvIntegers and its [24, 1024] x
[1024, 8210] DynamicQuantizeMatMul at the fp32 rates."""

from __future__ import annotations

import numpy as np

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan, task_facts
from simulator.costs import kind_of
from simulator.ort_int8 import ORT_INT8DYN_NATIVE
from simulator.profiles import load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import act, graph, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
FP32, DYN = Combo("fp32", "fp32", "fp32", 0), Combo("fp32", "fp32", "int8", 0)


def _recognizer():  # type: ignore[no-untyped-def]
    """DynamicQuantizeLinear -> ConvInteger -> Cast (the scaling after it, as the file holds it), a float Conv beside,
    and a DynamicQuantizeMatMul classifier."""
    values = [act("x", [1, 48, 16, 48]), act("xq", [1, 48, 16, 48], "uint8"), weight("wq", [192, 48, 3, 3], "uint8"),
              act("ci", [1, 192, 16, 48], "int32"), act("cf", [1, 192, 16, 48]), weight("wf", [192, 48, 3, 3]),
              act("f", [1, 192, 16, 48]), act("h", [24, 1024]), weight("wm", [1024, 8210], "uint8"),
              act("y", [24, 8210])]
    nodes = [Node("dql", "dql", "DynamicQuantizeLinear", inputs=["x"], outputs=["xq"]),
             Node("ci", "ci", "ConvInteger", inputs=["xq", "wq"], outputs=["ci"],
                  attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
             Node("cast", "cast", "Cast", inputs=["ci"], outputs=["cf"], attributes={"to": 1}),
             Node("conv", "conv", "Conv", inputs=["x", "wf"], outputs=["f"],
                  attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
             Node("fc", "fc", "DynamicQuantizeMatMul", inputs=["h", "wm"], outputs=["y"], domain="com.microsoft")]
    return graph(nodes, values, ["x", "h"], ["cf", "f", "y"])


def _path(g, node_id: str, combo: Combo):  # type: ignore[no-untyped-def]
    i = [n.id for n in g.nodes].index(node_id)
    nd = g.nodes[i]
    return plan(HOST, HW, nd.op_type, kind_of(nd, g), combo, True, False, facts=task_facts(HOST, g)[i])


def test_the_files_own_integer_kernels_run_at_the_dynamic_int8_figures_in_the_file_as_uploaded() -> None:
    g = _recognizer()
    facts = dict(zip([n.id for n in g.nodes], task_facts(HOST, g)))
    assert ORT_INT8DYN_NATIVE in facts["ci"] and ORT_INT8DYN_NATIVE in facts["fc"]
    assert ORT_INT8DYN_NATIVE not in facts["conv"]
    fc, dyn = _path(g, "fc", FP32), _path(g, "fc", DYN)
    assert (fc.compute, fc.tag, fc.w_runtime_bytes) == ("int8", "int8dyn", 1.0)
    # DynamicQuantizeMatMul quantizes its input and scales its output itself: int8-dynamic's path as it is
    assert (fc.in_bytes, fc.extra_in_bytes, fc.extra_dispatches) == (dyn.in_bytes, dyn.extra_in_bytes,
                                                                    dyn.extra_dispatches)
    assert fc.resolved == FP32 and fc.supported  # the option asked, not a fallback
    ci = _path(g, "ci", FP32)
    assert (ci.compute, ci.tag, ci.w_runtime_bytes, ci.im2col, ci.repack) == ("int8", "int8dyn", 1.0, True, True)
    # ConvInteger reads uint8 and writes int32; its DynamicQuantizeLinear and Cast are tasks of the file's own
    assert (ci.in_bytes, ci.out_bytes, ci.extra_in_bytes, ci.extra_out_bytes, ci.extra_dispatches,
            ci.extra_ops_per_in) == (1.0, 4.0, 0.0, 0.0, 0, 0.0)
    g.nodes[[n.id for n in g.nodes].index("ci")].op_type = "MatMulIntegerToFloat"  # uint8 in, its own scaling
    assert ORT_INT8DYN_NATIVE in task_facts(HOST, g)[[n.id for n in g.nodes].index("ci")]
    g = _recognizer()
    conv = _path(g, "conv", FP32)
    assert (conv.compute, conv.w_runtime_bytes) == ("fp32", 4.0)  # a float Conv beside them stays fp32


def test_the_file_as_uploaded_is_priced_at_the_integer_kernels_time_not_the_float_ones() -> None:
    g = _recognizer()
    r = sweep(g, HOST, hardware=HW, presets_only=("fp32", "int8-dynamic"))
    names = [p["name"] for p in r.bulk["presets"]]
    lat = np.asarray(r.bulk["metrics"]["latency_ms"])
    ids = [n.id for n in g.nodes]
    fp32, dyn = names.index("fp32"), names.index("int8-dynamic")
    fc, ci = ids.index("fc"), ids.index("ci")
    assert lat[fc, fp32] == lat[fc, dyn]
    assert lat[ci, fp32] < lat[ci, dyn]  # without the quantize and scaling passes the file holds as tasks
    # against the same MACs as an fp32 Gemm with 4-byte weights (the former price)
    assert r.works[fc].macs == 24 * 1024 * 8210
    g.nodes[ids.index("fc")].op_type = "MatMul"
    g.values["wm"] = weight("wm", [1024, 8210])
    float_lat = np.asarray(sweep(g, HOST, hardware=HW, presets_only=("fp32",)).bulk["metrics"]["latency_ms"])
    assert lat[fc, fp32] < 0.8 * float_lat[fc, 0]
