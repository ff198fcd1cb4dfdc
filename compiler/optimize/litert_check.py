"""Check a `.tflite` ai-edge-quantizer wrote before it is called a success: it loads in the LiteRT
interpreter, runs once on generated inputs at the analysis's shapes, and every weighted operator stores
the weights its option promises (int8 for int8-dynamic / int8-static, with int8 activations in for
static, int4 for int4-weights, fp16 for fp16, fp32 for fp32). A weight the source already stores as
int8 behind DEQUANTIZE stays so under every option (the simulator sizes it as stored)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.errors import ModelRunError
from compiler.optimize.litert_prepare import DEQUANTIZE, QUANTIZE, opcode, read

# Operators whose constant kernel (input 1) the options act on; ai-edge-quantizer's default policy
# quantizes all three for int8, and leaves DEPTHWISE_CONV_2D float under 4-bit weights.
WEIGHTED = {3: "CONV_2D", 4: "DEPTHWISE_CONV_2D", 9: "FULLY_CONNECTED"}
TYPE_NAMES = {0: "fp32", 1: "fp16", 9: "int8", 7: "int16", 17: "int4", 3: "uint8"}
INT8, INT16, INT4, FLOAT32, FLOAT16 = 9, 7, 17, 0, 1


@dataclass(frozen=True)
class Kernel:
    op_id: str  # "CONV_2D_3": opcode and index in subgraph 0 (the TFLite frontend's task id)
    code: int
    weight_type: int  # as stored: behind DEQUANTIZE, the DEQUANTIZE's input
    input_type: int


def kernels(model_bytes: bytes, upload_index: list[int] | None = None) -> dict[str, Kernel]:
    """{output tensor name: Kernel} of subgraph 0's weighted operators with a constant kernel;
    `upload_index`: each operator's index in the upload, for its id (default: its own)."""
    m = read(model_bytes)
    sg = m.subgraphs[0]
    producer = {int(o): op for op in sg.operators for o in op.outputs}

    def const(t_index: int) -> Any:
        t = sg.tensors[t_index]
        if 0 < t.buffer < len(m.buffers) and m.buffers[t.buffer].data is not None \
                and len(m.buffers[t.buffer].data) > 0:
            return t
        p = producer.get(t_index)
        if p is not None and opcode(m, p) in (DEQUANTIZE, QUANTIZE) and len(p.inputs) == 1:
            return const(int(p.inputs[0]))
        return None

    out = {}
    for k, op in enumerate(sg.operators):
        code = opcode(m, op)
        if code not in WEIGHTED or len(op.inputs) < 2 or int(op.inputs[1]) < 0:
            continue
        w = const(int(op.inputs[1]))
        if w is None:
            continue
        name = sg.tensors[int(op.outputs[0])].name.decode()
        out[name] = Kernel(f"{WEIGHTED[code]}_{upload_index[k] if upload_index else k}", code, int(w.type), int(sg.tensors[int(op.inputs[0])].type))
    return out


def promised(kind: str, source: Kernel) -> int:
    """The kernel's stored type an option promises."""
    if source.weight_type not in (FLOAT32, FLOAT16):
        return source.weight_type  # int8 in the upload: kept as stored
    if kind in ("dynamic8", "static8"):
        return INT8
    if kind == "weights4":
        return FLOAT32 if WEIGHTED[source.code] == "DEPTHWISE_CONV_2D" else INT4
    return FLOAT16 if kind == "fp16" else FLOAT32


def check_kinds(source: bytes, written: bytes, kinds: Mapping[str, str], label: str,
                upload_index: list[int] | None = None) -> None:
    """Raise ModelRunError (one sentence) where a weighted operator of `written` does not store what its
    kind promises. `kinds`: {"*": kind, upload op id: kind}; operators are matched by output name."""
    src = kernels(source, upload_index)
    wrong: list[str] = []
    total = 0
    for name, k in kernels(written).items():
        s = src.get(name) or src.get(name.removesuffix("_quantized"))
        if s is None:
            continue
        total += 1
        kind = kinds.get(s.op_id, kinds["*"])
        want = promised(kind, s)
        if k.weight_type != want:
            wrong.append(f"{s.op_id} stores {TYPE_NAMES.get(k.weight_type, k.weight_type)} weights, not "
                         f"{TYPE_NAMES.get(want, want)}")
        elif kind == "static8" and k.input_type not in (INT8, INT16):
            wrong.append(f"{s.op_id} reads {TYPE_NAMES.get(k.input_type, k.input_type)} activations, not int8")
    if total < len(src):
        wrong.append(f"{len(src) - total} of {len(src)} weighted operators are not in the written file")
    if wrong:
        raise ModelRunError(f"the {label} file ai-edge-quantizer wrote is not what the option promises "
                            f"({len(wrong)} problem(s): {'; '.join(wrong[:3])}{'; ...' if len(wrong) > 3 else ''})")


def fed_interpreter(path: str, shapes: Mapping[str, Any] | None = None,
                    values: Mapping[str, Any] | None = None) -> Any:
    """A 1-thread LiteRT interpreter for `path`, allocated at `shapes` and fed generated inputs, ready to invoke."""
    from ai_edge_litert.interpreter import Interpreter

    from compiler.frontends import tflite
    from compiler.inputs import generate_inputs

    # Inputs in subgraph order, as the frontend lists them and the interpreter details them.
    feeds = list(generate_inputs(tflite.load(path), shapes or {}, values or {}, seed=0).values())
    it = Interpreter(model_path=path, num_threads=1)
    for d, x in zip(it.get_input_details(), feeds):
        if list(d["shape"]) != list(x.shape):
            it.resize_tensor_input(d["index"], list(x.shape))
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
    return it


def run_once(path: str, shapes: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Load `path` in the LiteRT interpreter, allocate at `shapes` and invoke once on generated inputs."""
    try:
        it = fed_interpreter(path, shapes, values)
        it.invoke()
        for d in it.get_output_details():
            it.get_tensor(d["index"])
    except (ValueError, RuntimeError, KeyError) as e:
        msg = " ".join(str(e).split())[:400]
        raise ModelRunError(f"the written file does not run in the LiteRT interpreter: {msg}") from None
