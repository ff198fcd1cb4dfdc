"""Restore an ONNX upload already quantized in QDQ form to its float graph before an option other than its own
(int8-static) is applied, as simulator/qdq.py predicts it: the options are predicted on the float graph (each
activation QuantizeLinear -> DequantizeLinear pair bypassed, each weight's DequantizeLinear folded into a float
weight), and ORT's tools act on float weights only. Without this step the exporter wrote the QDQ file back for
fp32 (torchvision's quantized MobileNetV2: 3.6 MB written, 14.0 MB predicted), kept the int8 weights under
palettization (3.6 MB written, 1.9 MB predicted), and its fp16 converter turned the pairs' scales fp16, which ORT
refuses before opset 19.

Only 8-bit and 32-bit (bias) integer weights with constant scales and zero points are folded; a pair may have
the `Cast` to its own integer type torch's TorchScript exporter writes between Q and DQ. Bodies of If / Loop / Scan
are left as they are (the quantizers act on the top-level graph only).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from compiler.optimize.onnx_prepare import read_in_bodies, reads

_Q, _DQ = "QuantizeLinear", "DequantizeLinear"
_DOMAINS = ("", "ai.onnx")
_INT_TYPES = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT32)


def _folded_weight(n: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> np.ndarray | None:
    """The float weight a DequantizeLinear of a constant integer tensor makes, or None."""
    if n.input[0] not in inits or inits[n.input[0]].data_type not in _INT_TYPES:
        return None
    if any(a.name == "block_size" for a in n.attribute) or any(i and i not in inits for i in n.input[1:]):
        return None
    q = numpy_helper.to_array(inits[n.input[0]]).astype(np.float64)
    scale = numpy_helper.to_array(inits[n.input[1]]).astype(np.float64)
    zp = numpy_helper.to_array(inits[n.input[2]]).astype(np.float64) if len(n.input) > 2 and n.input[2] else 0.0
    if scale.ndim == 1 and q.ndim > 1:  # per channel along `axis`
        axis = next((int(a.i) for a in n.attribute if a.name == "axis"), 1) % q.ndim
        shape = [1] * q.ndim
        shape[axis] = scale.shape[0]
        scale = scale.reshape(shape)
        zp = np.reshape(zp, shape) if np.ndim(zp) == 1 else zp
    return ((q - zp) * scale).astype(np.float32)


def _pair_source(n: onnx.NodeProto, producer: dict[str, onnx.NodeProto]) -> str | None:
    """The float tensor the QuantizeLinear of an activation pair ending in DequantizeLinear `n` read, or None."""
    p = producer.get(n.input[0])
    if p is not None and p.op_type == "Cast":
        p = producer.get(p.input[0])
    return p.input[0] if p is not None and p.op_type == _Q and p.domain in _DOMAINS else None


def activation_pairs(model: onnx.ModelProto) -> int:
    """The 8-bit QuantizeLinear -> DequantizeLinear pairs on activations in `model`'s top-level graph: a file
    quantized static with int8 activations (as simulator.qdq.qdq_preset calls it int8-static), whose int8-static
    export is the file as it is."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    return sum(1 for n in g.node if n.op_type == _DQ and n.domain in _DOMAINS and n.input[0] not in inits
               and _pair_source(n, producer) is not None and _eight_bit(n, producer, inits))


def _eight_bit(dq: onnx.NodeProto, producer: dict[str, onnx.NodeProto], inits: dict[str, onnx.TensorProto]) -> bool:
    """Whether the pair ending in `dq` carries 8-bit integers: its Cast's type, else its QuantizeLinear's zero
    point's (uint8 where it has none)."""
    q = producer[dq.input[0]]
    if q.op_type == "Cast":
        return next((a.i for a in q.attribute if a.name == "to"), 0) in _INT_TYPES[:2]
    zp = q.input[2] if len(q.input) > 2 else ""
    if not zp:
        return True
    if zp in inits:
        return inits[zp].data_type in _INT_TYPES[:2]
    c = producer.get(zp)
    value = next((a.t for a in c.attribute if a.name == "value"), None) if c is not None and c.op_type == "Constant" \
        else None
    return value is not None and value.data_type in _INT_TYPES[:2]


def restore_float(model: onnx.ModelProto) -> int:
    """Fold `model`'s weight DequantizeLinears into float initializers and bypass its activation pairs, in place;
    the number of DequantizeLinear nodes removed (0: nothing changed)."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    in_bodies = read_in_bodies(g)
    alias: dict[str, str] = {}
    folded: list[onnx.TensorProto] = []
    gone: set[int] = set()
    for n in g.node:
        if n.op_type != _DQ or n.domain not in _DOMAINS or len(n.output) != 1 or n.output[0] in in_bodies:
            continue
        w = _folded_weight(n, inits)
        src = _pair_source(n, producer) if w is None else None
        if w is not None:
            folded.append(numpy_helper.from_array(w, n.output[0]))
        elif src is not None:
            alias[n.output[0]] = src
        else:
            continue
        gone.add(id(n))
    if not gone:
        return 0
    outputs = {o.name for o in g.output}
    kept = [n for n in g.node if id(n) not in gone]
    for n in kept:
        n.input[:] = [alias.get(i, i) for i in n.input]
    kept += [helper.make_node("Identity", [alias[o]], [o], name=f"{o}_restored") for o in outputs if o in alias]
    g.initializer.extend(folded)
    _drop_unused(g, kept)
    return len(gone)


def _drop_unused(g: onnx.GraphProto, nodes: list[onnx.NodeProto]) -> None:
    """Keep `nodes` less the Q / Cast / DQ left without readers (repeatedly), and the initializers still read."""
    outputs = {o.name for o in g.output}
    while True:
        read = {v for n in nodes for v in reads(n)} | outputs
        dead = [n for n in nodes if n.op_type in (_Q, _DQ, "Cast", "ConstantOfShape")
                and not any(o in read for o in n.output)]
        if not dead:
            break
        nodes = [n for n in nodes if n not in dead]
    del g.node[:]
    g.node.extend(nodes)
    read = {v for n in nodes for v in reads(n)} | outputs
    keep = [t for t in g.initializer if t.name in read]
    del g.initializer[:]
    g.initializer.extend(keep)
