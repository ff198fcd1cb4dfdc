"""Facts of a device runtime (ORT's QNN EP, LiteRT's QNN delegate) that a task's op type and kind do not tell:
read from the compiled graph once (`qnn_task_facts`), then applied to the task's path (`apply_facts`,
simulator.backends.plan). Software behaviour seen in AI Hub's published measurements (simulator/published), so it
lives in code; the figures it is combined with live in the YAML profiles.
"""

from __future__ import annotations

import dataclasses

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import Target
from simulator.profiles import HardwareProfile
from simulator.roofline import Path

# The facts (`qnn_task_facts`):
# - "qdq_folded": a Relu / Clip that the QDQ model folds into its producer's output range (the quantizer drops an
#   activation whose range the following QuantizeLinear already clips), the sole reader of a Conv / Gemm / MatMul /
#   Add output. AI Hub's ORT QNN EP jobs count the difference: ResNet-50 float 128 layers, w8a8 80 (its 49 Relus
#   gone); ResNet-18 55 / 39, RegNet 190 / 115 (simulator/published/aihub.csv). Gone under int8 activations.
# - "pointwise": a MatMul of a 4-D (channels-last) activation by a constant weight, which the HTP runs as a 1x1
#   convolution, at the conv rate: AI Hub's float ConvNeXt-B, whose time is in such MatMuls, runs 15.4 GMAC in
#   5.4 ms where ViT-B (MatMuls of 3-D activations) takes 9.1 ms for 17.6 GMAC; at one rate for both, ConvNeXt
#   was predicted +68% (held out) and ViT / BEiT -42% / -46%.
# - "inplace_concat": a Concat of 4-D activations along their channel axis (ONNX NCHW axis 1, TFLite NHWC axis 3),
#   which the HTP does not run as a copy: the graph is prepared with each producer writing its slice of the concat's
#   buffer. Costed as a copy of its output, DenseNet-121 (62 such Concats) was predicted +28% held out, GoogLeNet /
#   Inception-v3 +36%; costed as nothing, +14% and +31% (cross-validated, 8 Gen 3: within +-25% 75.5% -> 81.6%).
QNN_FACT_BACKENDS = frozenset({"ort-qnn", "litert-qnn"})
_QDQ_FOLDED_OPS = frozenset({"Relu", "Clip"})
_QDQ_PRODUCERS = frozenset({"Conv", "Gemm", "MatMul", "Add", "ConvTranspose"})
_CHANNEL_AXIS = {"Concat": 1, "CONCATENATION": 3}  # of a 4-D activation, in each format's layout


def _channel_concat(nd: Node, compiled: Graph) -> bool:
    axis = _CHANNEL_AXIS.get(nd.op_type)
    out = compiled.values.get(nd.outputs[0]) if axis is not None and nd.outputs else None
    if out is None or out.shape is None or len(out.shape) != 4:
        return False
    a = int(nd.attributes.get("axis", 0) or 0)
    return (a + 4 if a < 0 else a) == axis


def qnn_task_facts(target: Target, compiled: Graph) -> list[frozenset[str]]:
    """Per compiled task: the facts above that hold for it on `target` (empty elsewhere)."""
    if target.backend not in QNN_FACT_BACKENDS:
        return [frozenset()] * len(compiled.nodes)
    producer = {o: nd for nd in compiled.nodes for o in nd.outputs}
    readers: dict[str, int] = {}
    for nd in compiled.nodes:
        for v in dict.fromkeys(nd.inputs):
            readers[v] = readers.get(v, 0) + 1
    out = []
    for nd in compiled.nodes:
        x = nd.inputs[0] if nd.inputs else ""
        src = producer.get(x)
        facts = set()
        if nd.op_type in _QDQ_FOLDED_OPS and src is not None and src.op_type in _QDQ_PRODUCERS \
                and readers.get(x, 0) == 1 and x not in compiled.outputs:
            facts.add("qdq_folded")
        xv, wv = compiled.values.get(x), compiled.values.get(nd.inputs[1]) if len(nd.inputs) > 1 else None
        if nd.op_type == "MatMul" and xv is not None and xv.shape is not None and len(xv.shape) == 4 \
                and wv is not None and wv.weight is not None and wv.shape is not None and len(wv.shape) == 2:
            facts.add("pointwise")
        if _channel_concat(nd, compiled):
            facts.add("inplace_concat")
        out.append(frozenset(facts))
    return out


def apply_facts(p: Path, profile: HardwareProfile, combo: Combo, facts: frozenset[str]) -> Path:
    """The path `p` (planned as for any task) with the runtime's facts of this task applied, on the NPU only."""
    on_npu = p.unit != len(profile.units) - 1  # the profiles end with the catch-all CPU
    if "qdq_folded" in facts and "int8" in (combo.input, combo.output):
        p = dataclasses.replace(p, eliminated=True, note="folded into the producer's int8 output range (QDQ)")
    if "inplace_concat" in facts and on_npu:
        p = dataclasses.replace(p, eliminated=True, note="channel concat: its producers write into its buffer")
    if "pointwise" in facts and on_npu:
        p = dataclasses.replace(p, rate_kind="conv", note="; ".join(
            ["channels-last MatMul by a constant: runs as a 1x1 convolution", *([p.note] if p.note else [])]))
    return p
