"""Every tensor's shape of a `.tflite` at the planned input shapes, from LiteRT's own shape propagation, without
running the model.

`Interpreter.resize_tensor_input` + `allocate_tensors` runs each kernel's Prepare, which sets its outputs' shapes;
nothing is invoked. TFLite stops preparing at the first operator whose output shape depends on data it has not
computed (a RESHAPE to a shape computed by SHAPE -> STRIDED_SLICE -> ..., a RANGE of computed bounds: BirdNET's
spectrogram frames its 144000 samples so) and prepares the rest during the first invoke. Those shape computations
are small integer tensors: they are evaluated here with numpy (`_VALUE_RULES`), and every operator that reads one
is given a constant with its value instead, so LiteRT's Prepare resolves the operators after it too. Rounds repeat
until nothing new resolves. The shapes are LiteRT's; only the small shape arithmetic is ours.

Runs inside the sandboxed compile child (`compiler.backends.litert`): a kernel's Prepare may crash.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

MAX_ELEMENTS = 64  # a shape computation: rank-sized vectors and scalars; larger tensors are data
MAX_ROUNDS = 32  # each round resolves at least one more step of shape arithmetic (BirdNET: 12)
# TFLite TensorType -> numpy dtype of the values evaluated here.
_NP = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_, 7: np.int16, 9: np.int8,
       10: np.float64}
Shapes = dict[int, tuple[list[int], str]]


def resolve(buf: bytes, input_shapes: Sequence[Sequence[int] | None]) -> Shapes:
    """{tensor index of subgraph 0: (shape, dtype)} of every tensor whose shape LiteRT resolves at `input_shapes`
    (per subgraph input, in order; None keeps the file's), after folding the shape arithmetic. Best effort: what
    resolved before a failure."""
    from ai_edge_litert import schema_py_generated as s

    from compiler.optimize.litert_prepare import read

    # Buffers stored after the flatbuffer (ai-edge-quantizer and litert-torch write every constant so) moved inline:
    # read as empty, the shape arithmetic's constants were unknown and BirdNET's fp16 export (ai-edge-quantizer's
    # file) resolved 185 of its 546 tensors, its spectrogram's ops costed as unknown work (2.9 ms against 34).
    model = read(buf)
    codes = [_code_name(oc, s) for oc in model.operatorCodes]
    sg = model.subgraphs[0]
    values = {i: v for i, t in enumerate(sg.tensors) if (v := _const_value(model, t)) is not None}
    constants = set(values)  # (files give every tensor a buffer: an empty one for activations)
    folded: dict[tuple[int, int], int] = {}  # (operator, input slot) -> constant tensor given instead
    shapes: Shapes = {}
    for _ in range(MAX_ROUNDS):
        got = _prepared_shapes(buf, input_shapes)
        if got is None:
            break
        shapes.update(_trusted(sg, got, constants | {t for t in folded.values()}))
        n = len(folded)
        _evaluate(sg, codes, values, shapes)
        for k, op in enumerate(sg.operators):
            ins = [int(t) for t in (op.inputs if op.inputs is not None else [])]
            for slot, t in enumerate(ins):
                if t >= 0 and (k, slot) not in folded and t in values and t not in constants:
                    folded[(k, slot)] = ins[slot] = _add_const(model, sg, values[t], sg.tensors[t], s)
            op.inputs = np.array(ins, dtype=np.int32)
        if len(folded) == n:
            break
        buf = _pack(model)
    n_orig = len(sg.tensors) - len(folded)
    return {i: v for i, v in shapes.items() if i < n_orig}


def _prepared_shapes(buf: bytes, input_shapes: Sequence[Sequence[int] | None]) -> Shapes | None:
    """Shapes of the tensors LiteRT prepared (those it allocated: a tensor left for the invoke has no data yet)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    try:  # TFLite's own kernels: a delegate's partition would hide its inner tensors
        it = Interpreter(model_content=buf, num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        for d, shape in zip(it.get_input_details(), input_shapes):
            if shape is not None and list(d["shape"]) != list(shape):
                it.resize_tensor_input(d["index"], list(shape), strict=False)
        it.allocate_tensors()
    except Exception:  # noqa: BLE001  (LiteRT cannot prepare it at these shapes: the profile's run may)
        return None
    out: Shapes = {}
    for d in it.get_tensor_details():
        try:
            it.get_tensor(d["index"])  # raises for a tensor whose shape only the invoke sets
        except Exception:  # noqa: BLE001
            continue
        out[int(d["index"])] = ([int(x) for x in d["shape"]], np.dtype(d["dtype"]).name)
    return out


def _trusted(sg: Any, got: Shapes, constants: set[int]) -> Shapes:
    """`got` without the outputs of the operator TFLite stopped preparing after: its dynamic outputs may keep a
    stale placeholder shape with data (a RESHAPE to a computed shape kept the file's [1, 4, 4]). It is the operator
    before the first one with an output left without data, or, when every operator prepared, a last one reading a
    computed integer tensor (a shape)."""
    outs = [[int(t) for t in (op.outputs if op.outputs is not None else []) if t >= 0] for op in sg.operators]
    first = next((k for k, o in enumerate(outs) if any(t not in got for t in o)), None)
    if first is None:
        last = sg.operators[-1] if outs else None
        ins = [int(t) for t in (last.inputs if last is not None and last.inputs is not None else []) if t >= 0]
        shape_in = any(t not in constants and _NP.get(int(sg.tensors[t].type)) in (np.int32, np.int64) for t in ins)
        first = len(outs) if shape_in else None
    drop = set(outs[first - 1]) if first else set()
    return {t: v for t, v in got.items() if t not in drop}


def _evaluate(sg: Any, codes: list[str], values: dict[int, np.ndarray], shapes: Shapes) -> None:
    """Values of the small tensors each operator computes from known values and shapes, in operator order."""
    for op in sg.operators:
        outs = [int(t) for t in (op.outputs if op.outputs is not None else [])]
        if not outs or all(t in values for t in outs):
            continue
        rule = _VALUE_RULES.get(codes[op.opcodeIndex])
        ins = [int(t) for t in (op.inputs if op.inputs is not None else [])]
        if rule is None or any(t >= 0 and t not in values and codes[op.opcodeIndex] != "SHAPE" for t in ins):
            continue
        args = [values.get(t) if t >= 0 else None for t in ins]
        if codes[op.opcodeIndex] == "SHAPE":
            known = shapes.get(ins[0])
            args = [np.array(known[0] if known else (values[ins[0]].shape if ins[0] in values else None))]
            if known is None and ins[0] not in values:
                continue
        opts = vars(op.builtinOptions) if op.builtinOptions is not None else {}
        try:
            res = rule(args, opts)
        except Exception:  # noqa: BLE001  (an unexpected operand: leave the value unknown)
            continue
        res = res if isinstance(res, list) else [res]
        for t, v in zip(outs, res):
            v = np.asarray(v).astype(_NP.get(int(sg.tensors[t].type), np.float32))
            if v.size <= MAX_ELEMENTS:
                values[t] = v


def _strided_slice(a: list[Any], o: dict[str, Any]) -> np.ndarray:
    x, begin, end, strides = a[0], a[1], a[2], a[3]
    if o.get("ellipsisMask") or o.get("newAxisMask"):
        raise ValueError("ellipsis / new axis")
    idx: list[Any] = []
    for i in range(len(begin)):
        b = None if o.get("beginMask", 0) >> i & 1 else int(begin[i])
        e = None if o.get("endMask", 0) >> i & 1 else int(end[i])
        if o.get("offset"):
            e = None if e is None else (b or 0) + e
        if o.get("shrinkAxisMask", 0) >> i & 1:
            idx.append(int(begin[i]))
        else:
            idx.append(slice(b, e, int(strides[i])))
    return np.asarray(x[tuple(idx)])


def _reduce(fn: Callable[..., Any]) -> Callable[[list[Any], dict[str, Any]], Any]:
    return lambda a, o: fn(a[0], axis=tuple(int(x) for x in np.ravel(a[1])), keepdims=bool(o.get("keepDims")))


def _binary(fn: Callable[[Any, Any], Any]) -> Callable[[list[Any], dict[str, Any]], Any]:
    return lambda a, o: fn(a[0], a[1])


def _div(x: Any, y: Any) -> Any:  # TFLite's integer DIV truncates toward zero (kernels/div.cc)
    if np.issubdtype(np.asarray(x).dtype, np.integer):
        return np.trunc(np.asarray(x) / np.asarray(y)).astype(np.asarray(x).dtype)
    return np.asarray(x) / np.asarray(y)


def _reshape(a: list[Any], o: dict[str, Any]) -> Any:
    target = a[1] if len(a) > 1 and a[1] is not None else o.get("newShape")
    return np.reshape(a[0], [int(d) for d in np.ravel(target)])


_VALUE_RULES: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    "SHAPE": lambda a, o: np.asarray(a[0], dtype=np.int64),
    "RANK": lambda a, o: np.asarray(np.ndim(a[0])),
    "ADD": _binary(np.add), "SUB": _binary(np.subtract), "MUL": _binary(np.multiply), "DIV": _binary(_div),
    "FLOOR_DIV": _binary(np.floor_divide), "FLOOR_MOD": _binary(np.mod), "MAXIMUM": _binary(np.maximum),
    "MINIMUM": _binary(np.minimum), "POW": _binary(np.power),
    "EQUAL": _binary(np.equal), "NOT_EQUAL": _binary(np.not_equal), "LESS": _binary(np.less),
    "GREATER": _binary(np.greater), "LESS_EQUAL": _binary(np.less_equal), "GREATER_EQUAL": _binary(np.greater_equal),
    "SELECT": lambda a, o: np.where(a[0], a[1], a[2]), "SELECT_V2": lambda a, o: np.where(a[0], a[1], a[2]),
    "NEG": lambda a, o: -a[0], "ABS": lambda a, o: np.abs(a[0]), "FLOOR": lambda a, o: np.floor(a[0]),
    "CEIL": lambda a, o: np.ceil(a[0]), "ROUND": lambda a, o: np.round(a[0]), "SQRT": lambda a, o: np.sqrt(a[0]),
    "CAST": lambda a, o: a[0], "STRIDED_SLICE": _strided_slice,
    "SLICE": lambda a, o: a[0][tuple(slice(int(b), None if int(n) == -1 else int(b) + int(n))
                                     for b, n in zip(a[1], a[2]))],
    "GATHER": lambda a, o: np.take(a[0], a[1], axis=int(o.get("axis", 0))),
    "CONCATENATION": lambda a, o: np.concatenate([np.atleast_1d(x) for x in a], axis=int(o.get("axis", 0))),
    "PACK": lambda a, o: np.stack(a, axis=int(o.get("axis", 0))),
    "UNPACK": lambda a, o: list(np.moveaxis(a[0], int(o.get("axis", 0)), 0)),
    "RESHAPE": _reshape, "SQUEEZE": lambda a, o: np.squeeze(a[0], axis=tuple(o.get("squeezeDims") or []) or None),
    "EXPAND_DIMS": lambda a, o: np.expand_dims(a[0], int(np.ravel(a[1])[0])),
    "REDUCE_PROD": _reduce(np.prod), "SUM": _reduce(np.sum), "REDUCE_MAX": _reduce(np.max),
    "REDUCE_MIN": _reduce(np.min), "FILL": lambda a, o: np.full([int(d) for d in np.ravel(a[0])], a[1]),
    "RANGE": lambda a, o: np.arange(a[0], a[1], a[2]),
    "SPLIT": lambda a, o: np.split(a[1], int(o.get("numSplits", 1)), axis=int(np.ravel(a[0])[0])),
    "SPLIT_V": lambda a, o: np.split(a[0], np.cumsum(np.ravel(a[1]))[:-1], axis=int(np.ravel(a[2])[0])),
}


def _code_name(oc: Any, s: Any) -> str:
    code = max(int(oc.builtinCode), int(oc.deprecatedBuiltinCode))
    names = {v: k for k, v in vars(s.BuiltinOperator).items() if not k.startswith("_")}
    return names.get(code, "CUSTOM")


def _const_value(model: Any, t: Any) -> np.ndarray | None:
    """The value of a small constant tensor (its buffer holds data), else None."""
    b = model.buffers[t.buffer] if 0 < t.buffer < len(model.buffers) else None
    dtype = _NP.get(int(t.type))
    shape = [int(d) for d in (t.shape if t.shape is not None else [])]
    n = int(np.prod(shape)) if shape else 1
    if b is not None and dtype is not None and n == 0:
        return np.zeros(shape, dtype)  # an empty constant (RESHAPE's target of a scalar) has no data
    if b is None or b.data is None or dtype is None or t.sparsity is not None:
        return None
    if n > MAX_ELEMENTS or len(b.data) < n * np.dtype(dtype).itemsize:
        return None
    return np.frombuffer(np.asarray(b.data, dtype=np.uint8).tobytes(), dtype=dtype, count=n).reshape(shape)


def _add_const(model: Any, sg: Any, value: np.ndarray, like: Any, s: Any) -> int:
    buf = s.BufferT()
    buf.data = np.frombuffer(np.ascontiguousarray(value).tobytes(), dtype=np.uint8)
    model.buffers.append(buf)
    t = s.TensorT()
    t.name, t.type, t.buffer = (like.name or b"") + b"/folded", like.type, len(model.buffers) - 1
    t.shape = np.array(value.shape, dtype=np.int32)
    sg.tensors.append(t)
    return len(sg.tensors) - 1


def _pack(model: Any) -> bytes:
    import flatbuffers

    b = flatbuffers.Builder(1024)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())
