"""Let LiteRT run a model whose custom operators this LiteRT build cannot resolve.

LiteRT refuses to prepare a model with a custom operator it has no kernel for ("Encountered unresolved custom
op: X", models with a vendor's own kernels, MediaPipe's for instance), so nothing of it could be measured.
Each such operator is replaced, in a copy of the file, by a FILL writing its output's declared shape (zeros
of its dtype): the same operator index, the same tensors, inputs and outputs, so every other operator runs as
it would with the custom kernel linked in (a custom operator LiteRT cannot resolve is not one XNNPACK takes, so the
delegate partitions are the same; the three MediaPipe operators XNNPACK does take, compiler.frontends.tflite_custom,
resolve through it and run as they are). The stand-in's own time is not the custom operator's: the profile drops
it and says so, and the simulator predicts that operator like any other.

Not possible for a custom operator with several outputs or an output dtype FILL does not write (the target
is then predicted, its note says why).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from compiler.errors import ModelRunError

_UNRESOLVED = re.compile(r"unresolved custom op: ([^.\s]+)")
_FILL_TYPES = {0: np.float32, 2: np.int32, 4: np.int64, 6: np.bool_, 7: np.int16, 9: np.int8}  # TensorType
MAX_CODES = 32  # distinct unresolved custom codes tried before giving up


def unresolved_op(message: str) -> str | None:
    """The custom code LiteRT names when it cannot prepare a model, else None."""
    m = _UNRESOLVED.search(message)
    return m.group(1) if m else None


def stand_in(buf: bytes, code: str) -> tuple[bytes, list[str]]:
    """(the model with each operator of custom code `code` replaced by a FILL of its output, ids of the replaced
    operators of subgraph 0 as the frontend names them: `<code>_<index>`)."""
    from ai_edge_litert import schema_py_generated as s

    model = s.ModelT.InitFromPackedBuf(buf, 0)
    if any(getattr(b, "offset", 0) > 1 for b in model.buffers or []):
        raise ModelRunError(f"LiteRT cannot run the custom operator {code} and the model keeps its weights outside "
                            f"the flatbuffer (over 2 GB), so it cannot be run without it")
    targets = {i for i, oc in enumerate(model.operatorCodes) if (oc.customCode or b"").decode() == code}
    fill = _fill_code(model, s)
    replaced: list[str] = []
    for g, sg in enumerate(model.subgraphs):
        for k, op in enumerate(sg.operators or []):
            if op.opcodeIndex in targets:
                _replace(model, sg, op, code, fill, s)
                if g == 0:
                    replaced.append(f"{code}_{k}")
    import flatbuffers

    b = flatbuffers.Builder(len(buf) + 1024)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output()), replaced


def _fill_code(model: Any, s: Any) -> int:
    for i, oc in enumerate(model.operatorCodes):
        if max(oc.builtinCode, oc.deprecatedBuiltinCode) == s.BuiltinOperator.FILL:
            return i
    oc = s.OperatorCodeT()
    oc.builtinCode = oc.deprecatedBuiltinCode = s.BuiltinOperator.FILL
    oc.version = 1
    model.operatorCodes.append(oc)
    return len(model.operatorCodes) - 1


def _replace(model: Any, sg: Any, op: Any, code: str, fill: int, s: Any) -> None:
    outs = [int(o) for o in (op.outputs if op.outputs is not None else []) if o >= 0]
    if len(outs) != 1:
        raise ModelRunError(f"LiteRT cannot run the custom operator {code}, which has {len(outs)} outputs: "
                            f"the model cannot be run here without it")
    out = sg.tensors[outs[0]]
    dtype = _FILL_TYPES.get(int(out.type))
    if dtype is None:
        raise ModelRunError(f"LiteRT cannot run the custom operator {code}, and its output type cannot be "
                            f"stood in for: the model cannot be run here without it")
    shape = np.array(out.shape if out.shape is not None else [], dtype=np.int32)
    dims = _const(model, sg, f"{code}/standin_dims", shape, 2, s)
    value = _const(model, sg, f"{code}/standin_value", np.zeros((), dtype=dtype), int(out.type), s)
    op.opcodeIndex, op.inputs = fill, np.array([dims, value], dtype=np.int32)
    op.builtinOptionsType, op.builtinOptions = 0, None
    op.customOptions, op.customOptionsFormat = None, 0


def _const(model: Any, sg: Any, name: str, arr: np.ndarray, tensor_type: int, s: Any) -> int:
    buf = s.BufferT()
    buf.data = np.frombuffer(np.ascontiguousarray(arr).tobytes(), dtype=np.uint8)
    model.buffers.append(buf)
    t = s.TensorT()
    t.name, t.type, t.buffer = name.encode(), tensor_type, len(model.buffers) - 1
    t.shape = np.array(arr.shape, dtype=np.int32)
    sg.tensors.append(t)
    return len(sg.tensors) - 1
