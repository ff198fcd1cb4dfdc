"""Rewrite a `.tflite` into what ai-edge-quantizer can quantize, with LiteRT's flatbuffer object API.

- fp16 weights behind DEQUANTIZE (as fp16 converters and our own fp16 export write them) are turned back
  into fp32 constants: the quantizer only quantizes a kernel that is a constant, and a DEQUANTIZE output
  is an activation to it, so its int8-dynamic wrote the file unchanged and its int8-static wrote convs with
  a non-zero "weight" zero point that LiteRT refuses. int8 tensors behind DEQUANTIZE are left as they are
  (the quantizer keeps them, and the simulator sizes them as stored: `simulator.file_bytes._stored_as_is`), but
  for int8-static: there the quantizer's partially-quantized path re-quantizes the DEQUANTIZE output at a
  scale its int32 bias does not follow, which LiteRT refuses (FULLY_CONNECTED "scale_diff / output_scale"),
  so they are restored to fp32 too and quantized afresh per channel like every other kernel.
- Dynamic input dims are fixed to the concrete shapes of the analysis for calibration: the quantizer
  allocates the interpreter at the file's placeholder shapes, which a VALID conv cannot prepare at.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

FLOAT32, FLOAT16, INT8 = 0, 1, 9  # schema TensorType
DEQUANTIZE, QUANTIZE = 6, 114  # schema BuiltinOperator


def _schema() -> Any:
    from ai_edge_litert import schema_py_generated as schema

    return schema


def read(model_bytes: bytes) -> Any:
    """The model as objects, with buffers stored after the flatbuffer (litert-torch and ai-edge-quantizer
    write every constant so, `offset` and `size` into the file) moved inline, so `write` keeps them."""
    s = _schema()
    m = s.ModelT.InitFromObj(s.Model.GetRootAs(model_bytes, 0))
    for b in m.buffers or []:
        if b.offset > 1:
            b.data = np.frombuffer(model_bytes, dtype=np.uint8, count=b.size, offset=b.offset)
            b.offset = b.size = 0
    return m


def write(model: Any, size_hint: int) -> bytes:
    import flatbuffers

    b = flatbuffers.Builder(size_hint + 1024)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def opcode(model: Any, op: Any) -> int:
    oc = model.operatorCodes[op.opcodeIndex]
    return max(int(oc.builtinCode), int(oc.deprecatedBuiltinCode))


def _data(model: Any, t: Any) -> np.ndarray | None:
    buf = model.buffers[t.buffer] if 0 < t.buffer < len(model.buffers) else None
    if buf is None or buf.data is None or len(buf.data) == 0:
        return None  # no constant, or stored outside the flatbuffer (models over 2 GB): left alone
    return np.asarray(buf.data, dtype=np.uint8)


def _float_values(src: Any, raw: np.ndarray) -> np.ndarray | None:
    """What DEQUANTIZE computes from a constant: fp16 widened, int8 `(q - zero point) * scale` (per tensor or
    along its quantized dimension); None for other types."""
    if src.type == FLOAT16:
        return np.frombuffer(raw.tobytes(), dtype=np.float16).astype(np.float32)
    q = src.quantization
    if src.type != INT8 or q is None or q.scale is None or len(q.scale) == 0:
        return None
    x = np.frombuffer(raw.tobytes(), dtype=np.int8).astype(np.float32).reshape([int(d) for d in src.shape])
    scale = np.asarray(q.scale, dtype=np.float32)
    zp = np.asarray(q.zeroPoint if q.zeroPoint is not None else np.zeros_like(scale), dtype=np.float32)
    if scale.size > 1:  # per channel along quantizedDimension
        shape = [1] * x.ndim
        shape[int(q.quantizedDimension)] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((x - zp) * scale).astype(np.float32).ravel()


def dequantize_fp16_weights(model_bytes: bytes, int8_too: bool = False) -> tuple[bytes, int, list[int]]:
    """The model with every fp16 constant (and with `int8_too`, int8 constant) that reaches an operator
    through DEQUANTIZE stored as the fp32 constant that DEQUANTIZE computes (its output tensor, name kept),
    the number rewritten, and for each operator of subgraph 0 left its index in the upload. The fp16 tensors
    and the DEQUANTIZE operators go; a buffer no other tensor uses takes the fp32 data."""
    m = read(model_bytes)
    users: dict[int, int] = {}
    for sg in m.subgraphs:
        for t in sg.tensors:
            users[t.buffer] = users.get(t.buffer, 0) + 1
    done = 0
    kept = list(range(len(m.subgraphs[0].operators)))
    for gi, sg in enumerate(m.subgraphs):
        io = {int(i) for i in list(sg.inputs) + list(sg.outputs)}
        read_by: dict[int, int] = {}
        for op in sg.operators:
            for i in op.inputs:
                read_by[int(i)] = read_by.get(int(i), 0) + 1
        drop_ops: set[int] = set()
        for k, op in enumerate(sg.operators):
            if opcode(m, op) != DEQUANTIZE or len(op.inputs) != 1 or len(op.outputs) != 1:
                continue
            src, dst = sg.tensors[int(op.inputs[0])], sg.tensors[int(op.outputs[0])]
            raw = _data(m, src)
            if src.type not in ((FLOAT16, INT8) if int8_too else (FLOAT16,)) or dst.type != FLOAT32 \
                    or raw is None or int(op.outputs[0]) in io:
                continue
            fp32 = _float_values(src, raw)
            if fp32 is None:
                continue
            data = np.frombuffer(fp32.tobytes(), dtype=np.uint8)
            if users.get(src.buffer) == 1 and read_by.get(int(op.inputs[0])) == 1:
                m.buffers[src.buffer].data = data  # the fp16 tensor goes with the operator
                dst.buffer = src.buffer
            else:
                b = _schema().BufferT()
                b.data = data
                m.buffers.append(b)
                dst.buffer = len(m.buffers) - 1
            drop_ops.add(k)
            done += 1
        if drop_ops:
            if gi == 0:
                kept = [k for k in kept if k not in drop_ops]
            sg.operators = [op for k, op in enumerate(sg.operators) if k not in drop_ops]
            _drop_unused_tensors(m, gi)
    return (write(m, len(model_bytes) * 2) if done else model_bytes), done, kept


def _drop_unused_tensors(m: Any, gi: int) -> None:
    """Remove tensors of subgraph `gi` that no operator, subgraph input/output or signature names, and
    renumber the references (buffers are shared by index and stay)."""
    sg = m.subgraphs[gi]
    used = {int(i) for i in list(sg.inputs) + list(sg.outputs)}
    for op in sg.operators:
        for field in (op.inputs, op.outputs, op.intermediates):
            used.update(int(i) for i in (field if field is not None else []) if int(i) >= 0)
    sigs = [s for s in (m.signatureDefs or []) if s.subgraphIndex == gi]
    for s in sigs:
        used.update(int(tm.tensorIndex) for tm in list(s.inputs or []) + list(s.outputs or []))
    keep = [i for i in range(len(sg.tensors)) if i in used]
    if len(keep) == len(sg.tensors):
        return
    new = {old: k for k, old in enumerate(keep)}

    def remap(xs: Any) -> Any:
        return None if xs is None else np.array([new[int(i)] if int(i) >= 0 else -1 for i in xs], dtype=np.int32)

    for op in sg.operators:
        op.inputs, op.outputs, op.intermediates = remap(op.inputs), remap(op.outputs), remap(op.intermediates)
    sg.inputs, sg.outputs = remap(sg.inputs), remap(sg.outputs)
    for s in sigs:
        for tm in list(s.inputs or []) + list(s.outputs or []):
            tm.tensorIndex = new[int(tm.tensorIndex)]
    sg.tensors = [sg.tensors[i] for i in keep]


def freeze_inputs(model_bytes: bytes, shapes: Sequence[Sequence[int]]) -> bytes:
    """The model with subgraph 0's inputs fixed at `shapes` (in input order), unchanged if they are
    fixed there already; the dims of other tensors are computed by the interpreter when it allocates."""
    m = read(model_bytes)
    sg = m.subgraphs[0]
    changed = False
    for i, shape in zip(sg.inputs, shapes):
        t = sg.tensors[int(i)]
        sig = list(t.shapeSignature) if t.shapeSignature is not None else list(t.shape)
        if [int(d) for d in sig] == [int(d) for d in shape] and [int(d) for d in t.shape] == list(shape):
            continue
        t.shape = np.array(list(shape), dtype=np.int32)
        t.shapeSignature = None
        changed = True
    return write(m, len(model_bytes)) if changed else model_bytes


def unique_tensor_names(model_bytes: bytes) -> tuple[bytes, int]:
    """The model with every tensor name unique across its subgraphs (ai-edge-quantizer refuses a repeat: "Tensor
    name arg0 is not unique in the model", every option of openWakeWord's hey_jarvis, whose IF bodies name their
    inputs as the main graph does), and how many were renamed. The first holder keeps its name (subgraph 0's
    first: its inputs, outputs and operators keep theirs); a repeat becomes `<name>__sg<subgraph>_<index>`."""
    m = read(model_bytes)
    seen: set[bytes] = set()
    renamed = 0
    for gi, sg in enumerate(m.subgraphs):
        for ti, t in enumerate(sg.tensors):
            name = bytes(t.name or b"")
            if name in seen:
                t.name = name + f"__sg{gi}_{ti}".encode()
                renamed += 1
            seen.add(bytes(t.name or b""))
    return (write(m, len(model_bytes)) if renamed else model_bytes), renamed
