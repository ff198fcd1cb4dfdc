"""TFLite / LiteRT frontend: `sniff` recognises a TFLite flatbuffer, `load` turns it into a `Graph`.

No TensorFlow: the flatbuffer is read with the schema module LiteRT itself ships
(`ai_edge_litert.schema_py_generated`, generated from `schema.fbs` by flatc), whose table
accessors read lazily from the bytes. Flatbuffers do no bounds checking of their own, so every
index the file names (buffer, tensor, operator code) and every vector length is checked against
the file before use; anything else that goes wrong while reading is a truncated or corrupt file.

Mapping: operators of subgraph 0 (the model's entry) become Nodes with `op_type` = builtin operator name
(`CONV_2D`) or the custom code; node id = `<op_type>_<operator index>`, so the runtime's node index maps
straight to it. The subgraphs an IF (`then_branch`, `else_branch`) or a WHILE (`cond`, `body`) runs are
read too, nested ones included, as ONNX bodies are (compiler/frontends/onnx_scopes.py): their operators
follow their parent in `Graph.nodes` with `parent` and `branch` set, id `<parent id>/<branch>/<op>_<index>`,
namespace under the parent's; a body's inputs are its parent's inputs (IF: after the condition), so edges
come from their outer producers; its other tensors are values `<parent id>/<branch>/<name>`, and its
constants count in the model's weights. `top_nodes` gives subgraph 0's operators in runtime order.
Tensors become Values (constant ones with WeightStats from their buffer), quantization
parameters become `Quantization`, the namespace comes from the output tensor's name
(`model/block1/conv/Conv2D` -> `model/block1/conv`).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from compiler.frontends.tflite_custom import CUSTOM, MEDIAPIPE_OPS, custom_attributes
from compiler.graph import Dim, Graph, ModelFormatError, Node, Quantization, Value, WeightStats, namespace_from_name

MAGIC = b"TFL3"  # flatbuffer file identifier, bytes 4..8
# The subgraphs a control-flow operator runs: (branch, its option naming the subgraph), as `_options` names them.
_BODIES: dict[str, tuple[tuple[str, str], ...]] = {
    "IF": (("then_branch", "then_subgraph_index"), ("else_branch", "else_subgraph_index")),
    "WHILE": (("cond", "cond_subgraph_index"), ("body", "body_subgraph_index")),
}
_MAX_DEPTH = 8

# TensorType enum value -> (normalised dtype name, numpy dtype or None when not a plain array).
_DTYPES: dict[int, tuple[str, str | None]] = {
    0: ("float32", "<f4"), 1: ("float16", "<f2"), 2: ("int32", "<i4"), 3: ("uint8", "u1"),
    4: ("int64", "<i8"), 5: ("string", None), 6: ("bool", "u1"), 7: ("int16", "<i2"),
    8: ("complex64", "<c8"), 9: ("int8", "i1"), 10: ("float64", "<f8"), 11: ("complex128", "<c16"),
    12: ("uint64", "<u8"), 13: ("resource", None), 14: ("variant", None), 15: ("uint32", "<u4"),
    16: ("uint16", "<u2"), 17: ("int4", None), 18: ("bfloat16", None), 19: ("int2", None),
}


def _schema() -> Any:
    from ai_edge_litert import schema_py_generated as schema

    return schema


def _enum_names(cls: type) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


# -- sniffing --------------------------------------------------------------------------------

def sniff(head: bytes, filename: str) -> bool:
    """The flatbuffer file identifier `TFL3` at offset 4 and a root offset inside the file's
    first bytes' plausible range (4-byte aligned, past the identifier)."""
    if len(head) < 8 or head[4:8] != MAGIC:
        return False
    root = int.from_bytes(head[:4], "little")
    return root >= 8 and root % 4 == 0


# -- loading -----------------------------------------------------------------------------------

def load(path: str | os.PathLike[str]) -> Graph:
    path = Path(path)
    buf = path.read_bytes()
    return parse(buf, path.stem)


def parse(buf: bytes, fallback_name: str = "model") -> Graph:
    """Graph of a TFLite flatbuffer held in memory. Raises ModelFormatError, never anything else."""
    if len(buf) < 8:
        raise ModelFormatError("the TFLite file is truncated: it is shorter than a flatbuffer header")
    if buf[4:8] != MAGIC:
        raise ModelFormatError(f"not a TFLite model: the file identifier at bytes 4-8 is {bytes(buf[4:8])!r}, "
                               f"expected {MAGIC!r}")
    try:
        return _Reader(buf).graph(fallback_name)
    except ModelFormatError:
        raise
    except ImportError as e:  # the runtime's schema module missing is this installation's fault, not the file's
        raise ModelFormatError(f"cannot read TFLite files here: {e} (install ai-edge-litert)") from None
    except Exception as e:  # struct.error, IndexError, UnicodeDecodeError...: bytes cut or garbled
        raise ModelFormatError(f"the TFLite file is truncated or corrupt ({type(e).__name__}: {e})") from None


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.schema = _schema()
        self.buf = buf
        root = int.from_bytes(buf[:4], "little")
        if not 8 <= root < len(buf):
            raise ModelFormatError(f"the TFLite file is truncated or corrupt: its root table offset {root} "
                                   f"lies outside the {len(buf)}-byte file")
        self.model = self.schema.Model.GetRootAs(buf, 0)
        self.ops = _enum_names(self.schema.BuiltinOperator)
        self.act = _enum_names(self.schema.ActivationFunctionType)
        self.pad = _enum_names(self.schema.Padding)

    def _count(self, n: int, what: str, min_bytes: int = 4) -> int:
        # A vector of n entries takes at least n * min_bytes bytes; a larger n is a garbled length
        # that would otherwise have us loop billions of times.
        if n < 0 or n * min_bytes > len(self.buf):
            raise ModelFormatError(f"the TFLite file is truncated or corrupt: it claims {n} {what}")
        return n

    # -- whole model --------------------------------------------------------------------------
    def graph(self, fallback_name: str) -> Graph:
        m = self.model
        n_sub = self._count(m.SubgraphsLength(), "subgraphs")
        if n_sub == 0:
            raise ModelFormatError("the TFLite file contains no subgraph (no operators to show)")
        n_buffers = self._count(m.BuffersLength(), "buffers")
        codes = [self._op_name(m.OperatorCodes(i)) for i in range(self._count(m.OperatorCodesLength(), "operator codes"))]
        builtins = set(self.ops.values())
        self._custom = {c for c in codes if c == "CUSTOM" or (c not in builtins and not c.startswith("BUILTIN_"))}
        sg = m.Subgraphs(0)
        n_tensors = self._count(sg.TensorsLength(), "tensors")
        names = [self._str(sg.Tensors(i).Name()) for i in range(n_tensors)]
        vnames = _value_names(names)

        values: dict[str, Value] = {}
        for i in range(n_tensors):
            values[vnames[i]] = self._value(sg.Tensors(i), vnames[i], i, n_buffers)

        def tensor(idx: int, op: str) -> str:
            if idx == -1:
                return ""  # omitted optional input
            if not 0 <= idx < n_tensors:
                raise ModelFormatError(f"the TFLite file is corrupt: {op} refers to tensor {idx}, "
                                       f"but subgraph 0 has {n_tensors} tensors")
            return vnames[idx]

        nodes = self._operators(sg, codes, names, tensor, n_sub, values, n_buffers, prefix="", depth=0)

        inputs = [tensor(int(t), "the graph inputs") for t in self._ints(sg.InputsAsNumpy(), sg.InputsLength())]
        outputs = [tensor(int(t), "the graph outputs") for t in self._ints(sg.OutputsAsNumpy(), sg.OutputsLength())]
        desc = self._str(m.Description())
        metadata = {
            "schema_version": str(m.Version()),
            "subgraphs": str(n_sub),
            "operator_codes": ",".join(sorted(set(codes))),
        }
        if desc:
            metadata["producer"] = desc
        name = self._str(sg.Name()) or fallback_name
        return Graph(name=name, format="tflite", nodes=nodes, values=values,
                     inputs=[i for i in inputs if i], outputs=[o for o in outputs if o], metadata=metadata)

    def _operators(self, sg: Any, codes: list[str], names: list[str], tensor: Any, n_sub: int,
                   values: dict[str, Value], n_buffers: int, prefix: str, depth: int,
                   parent: str = "", branch: str = "", namespace: str = "") -> list[Node]:
        """The Nodes of one subgraph's operators, each IF / WHILE followed by the nodes of the subgraphs it runs."""
        nodes: list[Node] = []
        for k in range(self._count(sg.OperatorsLength(), "operators")):
            op = sg.Operators(k)
            code = op.OpcodeIndex()
            if not 0 <= code < len(codes):
                raise ModelFormatError(f"the TFLite file is corrupt: operator {k} uses operator code {code}, "
                                       f"but the model defines {len(codes)}")
            op_type = codes[code]
            where = f"operator {k} ({op_type})"
            ins = [tensor(int(t), where) for t in self._ints(op.InputsAsNumpy(), op.InputsLength())]
            outs = [tensor(int(t), where) for t in self._ints(op.OutputsAsNumpy(), op.OutputsLength())]
            raw_name = next((names[int(t)] for t in self._ints(op.OutputsAsNumpy(), op.OutputsLength()) if t >= 0), "")
            own = namespace_from_name(raw_name.split(";")[0])
            node = Node(id=f"{prefix}{op_type}_{k}", name="", op_type=op_type,
                        namespace="/".join(p for p in (namespace, own) if p) if parent else own,
                        inputs=ins, outputs=outs, attributes=self._options(op, op_type), parent=parent, branch=branch)
            nodes.append(node)
            for b, key in _BODIES.get(op_type, ()):
                idx = node.attributes.get(key)
                if not isinstance(idx, int):
                    continue
                if not 0 < idx < n_sub or depth >= _MAX_DEPTH:
                    raise ModelFormatError(f"the TFLite file is corrupt: {where} runs subgraph {idx}, but the model "
                                           f"has {n_sub} (or bodies nest deeper than {_MAX_DEPTH})")
                node.attributes[b] = self._body(idx, node, b, codes, n_sub, values, n_buffers, depth + 1, nodes)
        return nodes

    def _body(self, idx: int, parent: Node, branch: str, codes: list[str], n_sub: int, values: dict[str, Value],
              n_buffers: int, depth: int, nodes: list[Node]) -> dict[str, Any]:
        """Read subgraph `idx` as `parent`'s `branch`: its nodes appended to `nodes`; returns the parent's
        attribute for it ({"graph": subgraph name, "subgraph": idx, "outputs": the body's result values})."""
        sg = self.model.Subgraphs(idx)
        n_tensors = self._count(sg.TensorsLength(), "tensors")
        prefix = f"{parent.id}/{branch}/"
        raw = [self._str(sg.Tensors(i).Name()) for i in range(n_tensors)]
        vnames = [prefix + n for n in _value_names(raw)]
        # A body's inputs are its parent's operands (an IF's after its condition; a WHILE's all of them).
        outer = parent.inputs[1:] if parent.op_type == "IF" else parent.inputs
        for j, t in enumerate(self._ints(sg.InputsAsNumpy(), sg.InputsLength())):
            if 0 <= t < n_tensors and j < len(outer) and outer[j]:
                vnames[t] = outer[j]
        for i in range(n_tensors):
            if vnames[i] not in values:
                values[vnames[i]] = self._value(sg.Tensors(i), vnames[i], i, n_buffers)

        def tensor(t: int, op: str) -> str:
            if t == -1:
                return ""
            if not 0 <= t < n_tensors:
                raise ModelFormatError(f"the TFLite file is corrupt: {op} of subgraph {idx} refers to tensor {t}, "
                                       f"but that subgraph has {n_tensors} tensors")
            return vnames[t]

        ns = "/".join(p for p in (parent.namespace, parent.id, branch) if p)
        nodes += self._operators(sg, codes, raw, tensor, n_sub, values, n_buffers, prefix, depth, parent.id, branch, ns)
        outs = [tensor(int(t), "the body outputs") for t in self._ints(sg.OutputsAsNumpy(), sg.OutputsLength())]
        return {"graph": self._str(sg.Name()) or f"subgraph {idx}", "subgraph": idx, "outputs": [o for o in outs if o]}

    # -- pieces -------------------------------------------------------------------------------
    def _str(self, raw: bytes | None) -> str:
        return raw.decode("utf-8", "replace") if raw else ""

    def _ints(self, arr: Any, n: int) -> list[int]:
        self._count(n, "indices")
        return [] if isinstance(arr, int) else [int(x) for x in arr]  # flatbuffers returns 0 when absent

    def _op_name(self, oc: Any) -> str:
        # Builtin codes above 127 live only in `builtin_code`; older files set only the deprecated
        # int8 field. The real code is the larger of the two (schema.fbs, "GetBuiltinCode").
        code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
        name = self.ops.get(code)
        if name == "CUSTOM":
            return self._str(oc.CustomCode()) or "CUSTOM"
        return name or f"BUILTIN_{code}"

    def _options(self, op: Any, op_type: str) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        kind = op.BuiltinOptionsType()
        table = op.BuiltinOptions()
        if kind and table is not None:
            obj = self.schema.BuiltinOptionsCreator(kind, table)
            for key, val in (vars(obj) if obj is not None else {}).items():
                if key == "fusedActivationFunction":
                    attrs["fused_activation_function"] = self.act.get(val, str(val))
                elif key == "padding":
                    attrs["padding"] = self.pad.get(val, str(val))
                elif isinstance(val, bool | int | float | str):
                    attrs[_snake(key)] = val if not isinstance(val, float) or math.isfinite(val) else str(val)
                elif isinstance(val, list | np.ndarray) and len(val) <= 64:
                    attrs[_snake(key)] = [v.item() if hasattr(v, "item") else v for v in val]
        if op.CustomOptionsLength():
            attrs["custom_options_bytes"] = int(op.CustomOptionsLength())
        if op_type in self._custom:
            attrs[CUSTOM] = True
        if op_type in MEDIAPIPE_OPS:
            raw = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
            attrs.update(custom_attributes(op_type, raw))
        return attrs

    def _value(self, t: Any, name: str, index: int, n_buffers: int) -> Value:
        dtype, np_dtype = _DTYPES.get(int(t.Type()), ("unknown", None))
        shape: list[Dim] = [int(d) for d in self._ints(t.ShapeAsNumpy(), t.ShapeLength())]
        sig = self._ints(t.ShapeSignatureAsNumpy(), t.ShapeSignatureLength())
        if sig and len(sig) == len(shape):
            # -1 in the signature marks a dynamic dimension; the shape holds a placeholder 1.
            shape = [f"d{j}" if s == -1 else d for j, (s, d) in enumerate(zip(sig, shape))]
        b = int(t.Buffer())
        if not 0 <= b < max(n_buffers, 1):
            raise ModelFormatError(f"the TFLite file is corrupt: tensor {index} ('{name}') refers to buffer {b}, "
                                   f"but the model has {n_buffers} buffers")
        weight = self._weight(b, shape, dtype, np_dtype, sparse=t.Sparsity() is not None) if b > 0 else None
        return Value(name=name, shape=shape, dtype=dtype, weight=weight, quant=self._quant(t.Quantization()))

    def _buffer_bytes(self, b: int) -> memoryview | None:
        buf = self.model.Buffers(b)
        if buf is None:
            return None
        offset, size = int(buf.Offset()), int(buf.Size())
        if offset > 1:  # models over 2 GB keep data after the flatbuffer, addressed by file offset
            if offset + size > len(self.buf):
                raise ModelFormatError(f"the TFLite file is truncated: buffer {b} lies at bytes "
                                       f"{offset}..{offset + size}, past the end of the {len(self.buf)}-byte file")
            return memoryview(self.buf)[offset:offset + size]
        n = buf.DataLength()
        if n == 0:
            return None
        self._count(n, "bytes of buffer data", 1)
        data = buf.DataAsNumpy()
        return memoryview(data.tobytes()) if not isinstance(data, int) else None

    def _weight(self, b: int, shape: list[Dim], dtype: str, np_dtype: str | None,
                sparse: bool = False) -> WeightStats | None:
        raw = self._buffer_bytes(b)
        if raw is None:
            return None  # an activation or a variable: buffer 0 or an empty buffer
        from compiler.frontends.onnx import weight_stats

        n = math.prod(d for d in shape if isinstance(d, int)) if shape else 1
        if sparse and np_dtype is not None and n:
            # TFLite sparsity parameters: the buffer holds the stored (non-zero) values only, the indices sit in
            # the tensor's dim metadata. Elements are the dense count; the bytes are the buffer's.
            stored = np.frombuffer(raw, dtype=np_dtype, count=len(raw) // np.dtype(np_dtype).itemsize)
            nonzero = int(np.count_nonzero(stored))
            lo, hi = (float(stored.min()), float(stored.max())) if stored.size else (0.0, 0.0)
            return WeightStats(elements=n, bytes=len(raw), min=min(lo, 0.0), max=max(hi, 0.0),
                               sparsity=1.0 - nonzero / n)
        if np_dtype is not None and len(raw) >= n * np.dtype(np_dtype).itemsize:
            arr = np.frombuffer(raw, dtype=np_dtype, count=n)
            if dtype == "bool":
                arr = arr.astype(bool)
            return weight_stats(arr, dtype)
        if dtype == "int4" and len(raw) >= (n + 1) // 2:
            # Two signed nibbles per byte, low nibble first.
            packed = np.frombuffer(raw, dtype=np.uint8, count=(n + 1) // 2)
            nib = np.stack([packed & 0x0F, packed >> 4], axis=1).reshape(-1)[:n].astype(np.int8)
            return weight_stats(np.where(nib > 7, nib - 16, nib).astype(np.int8), dtype)
        return WeightStats(elements=n, bytes=len(raw), min=0.0, max=0.0, sparsity=0.0)

    def _quant(self, q: Any) -> Quantization | None:
        if q is None or q.ScaleLength() == 0:
            return None
        scale = [float(x) for x in self._floats(q.ScaleAsNumpy(), q.ScaleLength())]
        zp = [int(x) for x in self._ints(q.ZeroPointAsNumpy(), q.ZeroPointLength())] or [0] * len(scale)
        axis = int(q.QuantizedDimension()) if len(scale) > 1 else None
        return Quantization(scale=scale, zero_point=zp, axis=axis)

    def _floats(self, arr: Any, n: int) -> list[float]:
        self._count(n, "quantization scales")
        return [] if isinstance(arr, int) else [float(x) for x in arr]


def top_nodes(g: Graph) -> list[Node]:
    """Subgraph 0's operators, in file order: the runtime's node indices (body operators left out)."""
    return [n for n in g.nodes if not n.parent]


def body_subgraphs(g: Graph) -> dict[tuple[int, int], str]:
    """{(subgraph index, operator index): node id} of the operators of the IF / WHILE bodies `load` read (LiteRT's
    profiler names a body operator's event by the two). A subgraph two parents run keeps its first reader."""
    by_parent: dict[tuple[str, str], list[str]] = {}
    for n in g.nodes:
        if n.parent:
            by_parent.setdefault((n.parent, n.branch), []).append(n.id)
    out: dict[tuple[int, int], str] = {}
    for n in g.nodes:
        for b, _ in _BODIES.get(n.op_type, ()):
            body = n.attributes.get(b)
            if isinstance(body, dict) and isinstance(body.get("subgraph"), int):
                for k, nid in enumerate(by_parent.get((n.id, b), [])):
                    out.setdefault((int(body["subgraph"]), k), nid)
    return out


def fully_int8(g: Graph) -> bool:
    """Most weight bytes stored int8 and int8 activations: a fully quantized model (int8-static as it is)."""
    by_dtype = {"float16": 0, "float32": 0, "int8": 0}
    for v in g.values.values():
        if v.weight is not None and v.dtype in by_dtype:
            by_dtype[v.dtype] += v.weight.bytes
    return (max(by_dtype, key=by_dtype.__getitem__) == "int8" and by_dtype["int8"] > 0
            and any(v.weight is None and v.dtype == "int8" for v in g.values.values()))


def tensor_names(buf: bytes) -> list[str]:
    """The value name `load` gives each tensor of subgraph 0, by tensor index."""
    sg = _schema().Model.GetRootAs(buf, 0).Subgraphs(0)
    return _value_names([(sg.Tensors(i).Name() or b"").decode("utf-8", "replace") for i in range(sg.TensorsLength())])


def _value_names(names: list[str]) -> list[str]:
    """Tensor names are usually unique; empty or repeated ones get `name:index` so values stay distinct."""
    counts = Counter(names)
    return [n if n and counts[n] == 1 else f"{n or 'tensor'}:{i}" for i, n in enumerate(names)]


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key).lstrip("_")
