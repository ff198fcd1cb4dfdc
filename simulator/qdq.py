"""ONNX uploads already quantized in QDQ form (onnxruntime.quantization.quantize_static with QuantFormat.QDQ,
Qualcomm AI Hub's w8a8 / w8a16 ONNX models), seen as the float graph plus what the file quantizes.

A QDQ file is a float graph whose quantized ops are node units: DequantizeLinear on an integer weight
initializer feeding the op's kernel, and a QuantizeLinear -> DequantizeLinear pair on each activation it
reads or writes. The device runtimes run a node unit as one quantized kernel, not a float op between
conversion passes: the QNN EP hands each unit to the HTP as one int8 op (the sources in simulator.device_facts),
and the int8-static rules of the NNAPI and Core ML targets describe the same int8 ops. So on the predicted
targets the file is costed as its float graph (`qdq_view`: each activation pair bypassed, its two nodes no
tasks of their own) under the preset the file stores (`qdq_preset`): int8-static where activations are 8-bit;
int8-dynamic (int8 weights, float or 16-bit activations) where only weights are quantized or activations are
16-bit, on the targets whose int8-dynamic is that. Where a target keeps an op float inside an int8 graph (the
QNN EP's LayerNorm, simulator.device_facts), that preset's rules charge the DequantizeLinear and QuantizeLinear
around it, as they do for the int8-static option on a float file. Weight DequantizeLinear nodes are
constant-folded as every constant op is (simulator.folding.fold_constants).

The host target (ort-cpu/host) compiles and measures the file's float graph (compiler.backends.ort.quantized_upload),
the one its exporter starts every option from but int8-static, which writes the upload as it is: the same preset,
no pairs left to bypass.
"""

from __future__ import annotations

import dataclasses

from compiler.graph import Graph, Node, Value
from compiler.vocabulary.targets import Target
from simulator.costs import FOLDED

_Q, _DQ = "QuantizeLinear", "DequantizeLinear"
_INT8 = frozenset({"int8", "uint8"})
_INT16 = frozenset({"int16", "uint16"})
_DOMAINS = frozenset({"", "ai.onnx", "com.microsoft"})  # com.microsoft Q/DQ carry 16-bit types before opset 21

# The work of a Q or DQ of an activation pair: none of its own, the node unit's op reads and writes the integers.
QDQ_FUSED = dataclasses.replace(FOLDED, notes=("QDQ node unit: runs inside the quantized op it belongs to, no "
                                               "task of its own on the device",))


# Targets whose int8-dynamic is int8 weights with float or 16-bit activations on the accelerator, as a weights-only or
# w8a16 QDQ file runs (compiler/vocabulary/options.py: QNN's HTP "int8 weights with 16-bit activations (AI Hub's
# w8a16)", Core ML's "weight-only int8, decompressed just in time on the ANE"). Elsewhere (NNAPI, XNNPACK, ORT's
# Core ML EP) int8-dynamic is the CPU EP's dynamic quantization, which such a file does not run: it stays the float
# graph it is there (weights dequantized at load), and a 16-bit pair, which those runtimes have no kernels for, stays
# two tasks.
_WEIGHT_ONLY = frozenset({"ort-qnn", "coreml"})


def dq_weights(g: Graph) -> dict[str, float]:
    """{output of a DequantizeLinear on an integer initializer: the bytes the file stores it in, with its scales and
    zero points}: a node unit's kernel (or bias) as the file holds it; the runtime reads those bytes, it makes no
    float copy."""
    out: dict[str, float] = {}
    for n in g.nodes if g.format == "onnx" else []:
        v = g.values.get(n.inputs[0]) if n.op_type == _DQ and n.inputs and n.outputs else None
        if v is not None and v.weight is not None and (v.dtype in _INT8 or v.dtype in _INT16 or v.dtype == "int32"):
            params = [g.values.get(i) for i in n.inputs[1:] if i]
            out[n.outputs[0]] = float(v.weight.bytes) + sum(float(p.weight.bytes) for p in params
                                                            if p is not None and p.weight is not None)
    return out


def _q_dtype(g: Graph, q_inputs: list[str], out: Value | None) -> str:
    """The integer type a QuantizeLinear writes: its zero point's type, else its output's, else uint8 (the
    default when no zero point is given)."""
    zp = g.values.get(q_inputs[2]) if len(q_inputs) > 2 and q_inputs[2] else None
    if zp is not None and (zp.dtype in _INT8 or zp.dtype in _INT16):
        return zp.dtype
    return out.dtype if out is not None and (out.dtype in _INT8 or out.dtype in _INT16) else "uint8"


# Cast `to` codes of the integer types a QuantizeLinear writes (onnx.TensorProto: UINT8 2, INT8 3, UINT16 4, INT16 5)
_INT_CAST = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16"}


def _quantize_behind(g: Graph, producer: dict[str, Node], name: str) -> tuple[Node | None, Node | None]:
    """(the QuantizeLinear that writes `name`, the Cast between them or None), or (None, None). torch's TorchScript
    exporter writes a quantized torch module (torch.ao / torchvision.models.quantization) as Q -> Cast(to the type Q
    writes) -> DQ on every activation: the same node unit with a no-op Cast inside (ORT removes it)."""
    p = producer.get(name)
    cast = None
    if p is not None and p.op_type == "Cast" and not p.parent and p.inputs and p.inputs[0]:
        cast, p = p, producer.get(p.inputs[0])
    if p is None or p.op_type != _Q or p.domain not in _DOMAINS or p.parent or not p.inputs[0]:
        return None, None
    return p, cast


def _pairs(g: Graph, sixteen: bool) -> tuple[dict[str, str], set[str], set[str]]:
    """({DequantizeLinear output: the float tensor its QuantizeLinear read}, ids of the Q / DQ nodes of those
    pairs that no float reader needs, the integer types of all pairs); 16-bit pairs bypassed only if `sixteen`."""
    producer = {o: n for n in g.nodes for o in n.outputs if o}
    readers: dict[str, list[str]] = {}
    for n in g.nodes:
        for i in n.inputs:
            if i:
                readers.setdefault(i, []).append(n.id)
    alias: dict[str, str] = {}
    fused: set[str] = set()
    types: set[str] = set()
    links: dict[str, list[str]] = {}  # Q or Cast id -> ids of the pair nodes that read it
    for n in g.nodes:
        if n.op_type != _DQ or n.domain not in _DOMAINS or n.parent or not n.inputs or len(n.outputs) != 1:
            continue
        q, cast = _quantize_behind(g, producer, n.inputs[0])
        if q is None:
            continue
        dtype = _q_dtype(g, q.inputs, g.values.get(q.outputs[0]) or g.values.get(n.inputs[0]))
        if cast is not None and _INT_CAST.get(cast.attributes.get("to")) != dtype:
            continue  # a Cast to another type converts the integers: no pair
        types.add(dtype)
        if dtype in _INT16 and not sixteen:
            continue
        alias[n.outputs[0]] = q.inputs[0]
        fused.add(n.id)
        for reader, node in ((n.id, cast), (cast.id if cast else n.id, q)):
            if node is not None:
                links.setdefault(node.id, []).append(reader)
    for n in reversed(g.nodes):  # a Cast is settled before the Q it reads
        if n.id in links and n.outputs[0] not in g.outputs and \
                set(readers.get(n.outputs[0], [])) <= {r for r in links[n.id] if r in fused}:
            fused.add(n.id)
    return alias, fused, types


def _int_weight_dq(g: Graph) -> bool:
    """A DequantizeLinear on an 8-bit integer initializer: quantized weights."""
    return any(n.op_type == _DQ and n.inputs and (v := g.values.get(n.inputs[0])) is not None
               and v.weight is not None and v.dtype in _INT8 for n in g.nodes)


def qdq_preset(g: Graph, t: Target) -> str | None:
    """The preset a QDQ file stores on `t`: int8-static (8-bit activation pairs), int8-dynamic (int8 weights with
    float or 16-bit activations) where `t`'s int8-dynamic is that, None for a file without QDQ node units."""
    if g.format != "onnx":
        return None
    _, _, types = _pairs(g, t.backend in _WEIGHT_ONLY)
    if types & _INT8:
        return "int8-static"
    return "int8-dynamic" if t.backend in _WEIGHT_ONLY and (types or _int_weight_dq(g)) else None


def qdq_view(g: Graph, t: Target) -> tuple[Graph, frozenset[str]]:
    """(`g` with every activation QuantizeLinear -> DequantizeLinear pair bypassed: the DQ's readers and the graph
    outputs read the float tensor the Q read; ids of the pairs' nodes, which the device runs inside the node unit).
    Same nodes, ids and order (per-op tables index them); `g` itself when it has no pairs."""
    return _bypassed(g, t.backend in _WEIGHT_ONLY)


def float_view(g: Graph) -> tuple[Graph, frozenset[str]]:
    """`g` with every activation pair bypassed, 16-bit ones too, and the ids of the pairs' nodes: the float graph the
    ONNX exporter writes for every option of a QDQ upload but int8-static (compiler.optimize.onnx_qdq)."""
    return _bypassed(g, True)


def _bypassed(g: Graph, sixteen: bool) -> tuple[Graph, frozenset[str]]:
    if g.format != "onnx":
        return g, frozenset()
    alias, fused, _ = _pairs(g, sixteen)
    if not alias:
        return g, frozenset()
    nodes = [n if n.id in fused or not any(i in alias for i in n.inputs)
             else dataclasses.replace(n, inputs=[alias.get(i, i) for i in n.inputs]) for n in g.nodes]
    outputs = [alias.get(o, o) for o in g.outputs]
    return dataclasses.replace(g, nodes=nodes, outputs=outputs), frozenset(fused)
