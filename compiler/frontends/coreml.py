"""Core ML frontend: `.mlpackage` (uploaded as a zip) and `.mlmodel`, read on Linux.

Only coremltools' protobuf classes (`coremltools.proto.Model_pb2`) are used: no prediction, no
Core ML framework. The zip is vetted by `compiler.frontends.archive` (no `..`/absolute paths,
no symlinks, size and ratio limits, a byte budget); the spec is read in memory, and only
`weights/weight.bin` is inflated, as a stream, into a temporary file that weights are read from in
chunks, so memory stays bounded whatever the package holds.

ML Program (`mlProgram`): the operations of the main function's block become Nodes (op_type =
MIL op, `conv`, `linear`; id = the op's first output name, unique in SSA form). `const` ops are
not nodes: small non-float or scalar constants (strides, pad, axes) become attributes of the
ops that read them, named after the input parameter; the rest are weight Values with
WeightStats read from the immediate value or from `weights/weight.bin` (MIL blob storage: a
64-byte metadata record at the blob offset, sentinel 0xDEADBEEF, dtype, size, data offset).
Core ML files keep no op scopes, so namespaces are empty unless the op name carries `/`.

NeuralNetwork (`.mlmodel` of the older kind, incl. classifier/regressor): one Node per layer
(op_type = layer kind, `convolution`), weights summarised per WeightParams field.
"""

from __future__ import annotations

import json
import math
import os
import struct
import tempfile
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.frontends.archive import ZIP_MAGIC, SafeZip
from compiler.frontends.coreml_control import mil_branch, mil_trip_count, nn_constant, nn_trip_count
from compiler.frontends.coreml_nn_shapes import out_shapes
from compiler.frontends.onnx import assign_ids, weight_stats
from compiler.frontends.weight_stream import file_chunks, stream_stats
from compiler.graph import Dim, Graph, ModelFormatError, Node, Value, WeightStats, namespace_from_name

_BLOB_SENTINEL = 0xDEADBEEF
_ATTR_MAX_ELEMENTS = 16
_MAX_DEPTH = 8
_MIL_NUMPY = {"FLOAT16": "<f2", "FLOAT32": "<f4", "FLOAT64": "<f8", "INT8": "i1", "INT16": "<i2",
              "INT32": "<i4", "INT64": "<i8", "UINT8": "u1", "UINT16": "<u2", "UINT32": "<u4",
              "UINT64": "<u8", "BOOL": "u1"}
_MIL_DTYPE = {"FLOAT8E4M3FN": "float8e4m3fn", "FLOAT8E5M2": "float8e5m2"}


def _pb() -> tuple[Any, Any]:
    from coremltools.proto import MIL_pb2, Model_pb2

    return Model_pb2, MIL_pb2


# -- sniffing --------------------------------------------------------------------------------

def sniff(head: bytes, filename: str) -> bool:
    """A zip whose first entries name a `.mlpackage` layout, or an `.mlmodel` protobuf: field 1
    (specificationVersion, varint 1..20) followed by field 2 (description, bytes)."""
    name = filename.lower()
    if head.startswith(ZIP_MAGIC):
        return (b"com.apple.CoreML" in head or b".mlpackage/" in head or b"Manifest.json" in head
                or name.endswith((".mlpackage.zip", ".mlpackage")))
    if not (len(head) > 5 and head[0] == 0x08 and 1 <= head[1] <= 20 and head[2] == 0x12):
        return False
    # An ONNX ModelProto can start the same way (ir_version, producer_name); Core ML's field 2 is
    # a ModelDescription message whose first field is `input` (tag 0x0a), never a producer string.
    pos = 3
    while pos < len(head) and head[pos] & 0x80:  # skip the description's length varint
        pos += 1
    return pos + 1 < len(head) and head[pos + 1] == 0x0A


# -- loading -----------------------------------------------------------------------------------

def load(path: str | os.PathLike[str]) -> Graph:
    path = Path(path)
    stem = path.name.split(".")[0] or "model"
    with open(path, "rb") as fh:
        is_zip = fh.read(4) == ZIP_MAGIC
    with tempfile.TemporaryDirectory(prefix="edgescope-coreml-") as tmp:
        if is_zip:
            with SafeZip(path, label="Core ML package zip") as z:
                spec_bytes, weights = _package_parts(z, Path(tmp))
        else:
            spec_bytes, weights = path.read_bytes(), None
        return _parse(spec_bytes, weights, stem)


def _parse(spec_bytes: bytes, weights: Path | None, stem: str) -> Graph:
    Model_pb2, _ = _pb()
    spec = Model_pb2.Model()
    try:
        spec.ParseFromString(spec_bytes)
    except Exception as e:
        raise ModelFormatError(f"the Core ML model is truncated or corrupt: {e}") from None
    kind = spec.WhichOneof("Type")
    try:
        if kind == "mlProgram":
            return _MilReader(spec, weights).graph(stem)
        if kind in ("neuralNetwork", "neuralNetworkClassifier", "neuralNetworkRegressor"):
            return _nn_graph(spec, getattr(spec, kind), stem)
    except ModelFormatError:
        raise
    except Exception as e:  # malformed fields deep in the spec
        raise ModelFormatError(f"the Core ML model is corrupt ({type(e).__name__}: {e})") from None
    if kind is None:
        raise ModelFormatError("the Core ML model is truncated or corrupt: it defines no model")
    raise ModelFormatError(f"Core ML models of type '{kind}' are not supported; Edgescope reads ML Programs "
                           "and neural networks")


def _package_parts(z: SafeZip, tmp: Path) -> tuple[bytes, Path | None]:
    """(model.mlmodel bytes, weights/weight.bin inflated into `tmp`, or None) of a zipped .mlpackage,
    located through its Manifest.json (at the zip root or inside one top folder). The weights are
    streamed to a file and read from it by offset, never held in memory."""
    manifests = [n for n in z.names() if n.rsplit("/", 1)[-1] == "Manifest.json" and n.count("/") <= 1]
    if not manifests:
        raise ModelFormatError("the zip holds no Core ML package: no Manifest.json at its root or in a "
                               "top-level .mlpackage folder")
    root = manifests[0].rsplit("/", 1)[0] + "/" if "/" in manifests[0] else ""
    try:
        manifest = json.loads(z.read(manifests[0]))
        entries = manifest["itemInfoEntries"]
        item = entries[manifest["rootModelIdentifier"]]
        model_path = root + "Data/" + item["path"]
    except (ValueError, KeyError, TypeError) as e:
        raise ModelFormatError(f"the Core ML package's Manifest.json is malformed ({e})") from None
    if model_path not in z.names():
        raise ModelFormatError(f"the Core ML package names '{item['path']}' as its model, but the zip has no such file")
    weights_dir = model_path.rsplit("/", 1)[0] + "/weights/weight.bin"
    weights = z.copy_to(weights_dir, tmp / "weight.bin") if weights_dir in z.names() else None
    return z.read(model_path), weights


def _dims(tt: Any) -> list[Dim] | None:
    if tt.rank < 0 and not tt.dimensions:
        return None
    out: list[Dim] = []
    for i, d in enumerate(tt.dimensions):
        out.append(int(d.constant.size) if d.WhichOneof("dimension") == "constant" else f"d{i}")
    return out


class _MilReader:
    def __init__(self, spec: Any, weights: Path | None) -> None:
        _, MIL_pb2 = _pb()
        self.spec = spec
        self.weights = weights
        self.dtype_names = {v: k for k, v in MIL_pb2.DataType.items()}

    def dtype(self, code: int) -> str:
        name = self.dtype_names.get(code, "UNKNOWN")
        return _MIL_DTYPE.get(name, name.lower() if name != "UNUSED_TYPE" else "unknown")

    def graph(self, stem: str) -> Graph:
        prog = self.spec.mlProgram
        if "main" not in prog.functions:
            raise ModelFormatError("the Core ML ML Program has no 'main' function")
        fn = prog.functions["main"]
        block = fn.block_specializations.get(fn.opset)
        if block is None:
            if not fn.block_specializations:
                raise ModelFormatError("the Core ML ML Program's main function has no body")
            block = next(iter(fn.block_specializations.values()))
        values: dict[str, Value] = {}
        for inp in fn.inputs:
            tt = inp.type.tensorType
            values[inp.name] = Value(name=inp.name, shape=_dims(tt), dtype=self.dtype(tt.dataType))
        consts: dict[str, Any] = {}  # name -> small literal used as an attribute
        flat: list[tuple[Any, int, str]] = []  # (op, index of its parent in `flat` or -1, branch)
        self._collect(block, flat, values, consts, -1, "", 0)
        names = [op.outputs[0].name if op.outputs else "" for op, _, _ in flat]
        ids = assign_ids(names, [op.type for op, _, _ in flat])
        nodes: list[Node] = []
        for nid, name, (op, p, branch) in zip(ids, names, flat):
            node = self._node(op, nid, name, values, consts)
            if p >= 0:
                parent = nodes[p]
                node.parent, node.branch = parent.id, branch
                node.namespace = "/".join(x for x in (parent.namespace, parent.id, branch) if x)
            if op.blocks:
                self._control(node, op, consts)
            nodes.append(node)
        _implicit_inputs(nodes, values)
        for n in nodes:  # a name that nothing defines: still a value, of unknown type
            for v in n.inputs:
                values.setdefault(v, Value(name=v, shape=None, dtype="unknown"))
        desc = self.spec.description
        meta = {"spec_version": str(self.spec.specificationVersion), "opset": fn.opset, "model_type": "mlProgram"}
        if desc.metadata.author:
            meta["author"] = desc.metadata.author
        meta.update({f"meta.{k}": v for k, v in desc.metadata.userDefined.items()})
        return Graph(name=stem, format="coreml", nodes=nodes, values=values,
                     inputs=[i.name for i in fn.inputs], outputs=list(block.outputs), metadata=meta)

    def _collect(self, block: Any, flat: list[tuple[Any, int, str]], values: dict[str, Value],
                 consts: dict[str, Any], parent: int, branch: str, depth: int) -> None:
        """The ops of `block` into `flat` in run order, each control-flow op followed by its blocks' ops
        (`while_loop`: cond, body; `cond`: then_branch, else_branch); consts and constexprs become values,
        so weights a loop body holds count in the model's size and memory as the main block's do."""
        for op in block.operations:
            if op.type.startswith("constexpr_") and len(op.outputs) == 1 and self._weight_parts(op, values):
                values[op.outputs[0].name] = self._constexpr(op, values)
                continue
            if op.type == "const" and len(op.outputs) == 1:
                out = op.outputs[0]
                literal, value = self._const(op, out)
                values[out.name] = value
                if literal is not None:
                    consts[out.name] = literal
                continue
            flat.append((op, parent, branch))
            if not op.blocks:
                continue
            if depth >= _MAX_DEPTH:
                raise ModelFormatError(f"the Core ML ML Program's blocks nest deeper than {_MAX_DEPTH}")
            me = len(flat) - 1
            for b, inner in zip(_branches(op), op.blocks):
                for inp in inner.inputs:  # a block's inputs: the loop variables as this trip sees them
                    tt = inp.type.tensorType
                    values[inp.name] = Value(name=inp.name, shape=_dims(tt) if inp.type.HasField("tensorType")
                                             else None, dtype=self.dtype(tt.dataType))
                self._collect(inner, flat, values, consts, me, b, depth + 1)

    def _node(self, op: Any, nid: str, name: str, values: dict[str, Value], consts: dict[str, Any]) -> Node:
        inputs: list[str] = []
        params: list[str] = []
        attrs: dict[str, Any] = {}
        for param, arg in sorted(op.inputs.items(), key=lambda kv: _param_rank(kv[0])):
            for a in arg.arguments:
                if a.WhichOneof("binding") != "name":
                    attrs[param] = self._literal(a.value) if a.HasField("value") else None
                elif a.name in consts and op.type != "while_loop":
                    attrs[param] = consts[a.name]
                else:
                    inputs.append(a.name)
                    params.append(param)
        for o in op.outputs:
            tt = o.type.tensorType
            values[o.name] = Value(name=o.name, shape=_dims(tt) if o.type.HasField("tensorType") else None,
                                   dtype=self.dtype(tt.dataType))
        if params != ["x"][:len(params)]:
            attrs["input_params"] = params  # which MIL parameter each input binds (inputs is a map)
        return Node(id=nid, name=name, op_type=op.type, namespace=namespace_from_name(name),
                    inputs=inputs, outputs=[o.name for o in op.outputs], attributes=attrs)

    def _control(self, node: Node, op: Any, consts: dict[str, Any]) -> None:
        """A control-flow op's bodies as attributes ({"graph", "outputs"}, as ONNX If / Loop keep theirs), and what
        the file fixes of its work: a `while_loop`'s trip count, the branch a `cond` on a constant takes."""
        for b, inner in zip(_branches(op), op.blocks):
            node.attributes[b] = {"graph": b, "inputs": [i.name for i in inner.inputs],
                                  "outputs": [o for o in inner.outputs if o]}
        if op.type == "while_loop" and len(op.blocks) == 2:
            n = mil_trip_count(node.inputs, op.blocks[0], op.blocks[1], consts)
            if n is not None:
                node.attributes["trip_count"] = n
        elif op.type == "cond":
            pred = _arg_name(op, "pred")
            taken = mil_branch(pred, consts)
            if taken is not None:
                node.attributes["taken_branch"] = taken
            elif pred and pred not in node.inputs:
                node.inputs.insert(0, pred)

    def _const(self, op: Any, out: Any) -> tuple[Any, Value]:
        tt = out.type.tensorType
        dtype = self.dtype(tt.dataType)
        shape = _dims(tt) or []
        n = math.prod(d for d in shape if isinstance(d, int)) if shape else 1
        val = op.attributes.get("val")
        if val is None:
            return None, Value(name=out.name, shape=shape, dtype=dtype,
                               weight=WeightStats(elements=n, bytes=0, min=0.0, max=0.0, sparsity=0.0))
        kind = val.WhichOneof("value")
        if kind == "blobFileValue":
            return None, Value(name=out.name, shape=shape, dtype=dtype, weight=self._blob(val.blobFileValue, dtype, n, out.name))
        arr = self._array(val, dtype)
        small = arr is not None and arr.size <= _ATTR_MAX_ELEMENTS and (not dtype.startswith("float") or arr.ndim == 0)
        literal = self._literal(val) if small or dtype == "string" else None
        if arr is None:
            arr = np.zeros(0, np.float32)
        return literal, Value(name=out.name, shape=shape, dtype=dtype, weight=weight_stats(arr, dtype))

    def _weight_parts(self, op: Any, values: dict[str, Value]) -> list[tuple[str, str, Value]]:
        """(parameter, dtype, stored Value) of a `constexpr_*` op whose every part is stored in the file: its
        attributes (iOS 16: quantized_data, scale, zero_point; lut, indices) or its inputs, each bound to a const
        (iOS 18). [] when one is computed at run time: then it stays a task."""
        parts: list[tuple[str, str, Value]] = []
        for param, arg in op.inputs.items():
            for a in arg.arguments:
                if a.WhichOneof("binding") == "value":  # iOS 18 exports bind the stored data inline
                    v = self._stored(a.value, f"{op.outputs[0].name}/{param}")
                else:
                    v = values.get(a.name)
                if v is None or v.weight is None:
                    return []
                parts.append((param, v.dtype, v))
        for param, val in op.attributes.items():
            if param != "name" and (v := self._stored(val, f"{op.outputs[0].name}/{param}")) is not None:
                parts.append((param, v.dtype, v))
        return parts

    def _stored(self, val: Any, name: str) -> Value | None:
        """A tensor the file stores inline or in weight.bin, as a weight Value (None: not a tensor)."""
        if not val.type.HasField("tensorType"):
            return None
        tt = val.type.tensorType
        dtype = self.dtype(tt.dataType)
        shape = _dims(tt) or []
        n = math.prod(d for d in shape if isinstance(d, int)) if shape else 1
        if val.WhichOneof("value") == "blobFileValue":
            stats = self._blob(val.blobFileValue, dtype, n, name)
        else:
            arr = self._array(val, dtype)
            stats = weight_stats(arr if arr is not None else np.zeros(0, np.float32), dtype)
        return Value(name=name, shape=shape, dtype=dtype, weight=stats)

    def _constexpr(self, op: Any, values: dict[str, Value]) -> Value:
        """A `constexpr_*` op as the weight it is: Core ML decompresses it when the model loads, so it is no task
        of the run; the weight keeps the bytes and dtype the file stores (int8 data + scales; LUT + indices) and
        the shape of the dense tensor, so the op reading it sees a kernel (was: a conv of 0 MACs reading an
        activation, and a file sized without its weights)."""
        parts = self._weight_parts(op, values)
        main = max(parts, key=lambda p: (p[2].weight.elements if p[2].weight else 0))
        out = op.outputs[0]
        shape = _dims(out.type.tensorType) or []
        n = math.prod(d for d in shape if isinstance(d, int)) if shape else 1
        ms = main[2].weight
        stats = WeightStats(elements=n, bytes=sum(p[2].weight.bytes for p in parts if p[2].weight),
                            min=ms.min if ms else 0.0, max=ms.max if ms else 0.0, sparsity=ms.sparsity if ms else 0.0)
        dtype = main[1] if main[1] in ("int8", "uint8") and op.type != "constexpr_lut_to_dense" \
            else self.dtype(out.type.tensorType.dataType)
        return Value(name=out.name, shape=shape, dtype=dtype, weight=stats)

    def _array(self, val: Any, dtype: str) -> np.ndarray | None:
        t = val.immediateValue.tensor if val.HasField("immediateValue") else None
        if t is None:
            return None
        kind = t.WhichOneof("value")
        if kind == "floats":
            return np.array(t.floats.values, np.float32)
        if kind == "ints":
            return np.array(t.ints.values, np.int64)
        if kind == "bools":
            return np.array(t.bools.values, bool)
        if kind == "longInts":
            return np.array(t.longInts.values, np.int64)
        if kind == "doubles":
            return np.array(t.doubles.values, np.float64)
        if kind == "bytes":
            np_dtype = _MIL_NUMPY.get(dtype.upper())
            raw = t.bytes.values
            if np_dtype and len(raw) % np.dtype(np_dtype).itemsize == 0:
                return np.frombuffer(raw, dtype=np_dtype)
            return np.frombuffer(raw, dtype=np.uint8)
        if kind == "strings":
            return np.array(list(t.strings.values), dtype=object)
        return None

    def _literal(self, val: Any) -> Any:
        arr = self._array(val, self.dtype(val.type.tensorType.dataType) if val.type.HasField("tensorType") else "")
        if arr is None:
            return None
        if arr.dtype == object:
            items = [str(s) for s in arr]
            return items[0] if val.type.tensorType.rank == 0 and len(items) == 1 else items
        items = arr.tolist()
        if val.type.tensorType.rank == 0 and len(items) == 1:
            return items[0]
        return items

    def _blob(self, ref: Any, dtype: str, n: int, name: str) -> WeightStats:
        if self.weights is None:
            raise ModelFormatError(f"the Core ML model keeps weight '{name}' in weights/weight.bin, which was not "
                                   "uploaded; upload the whole .mlpackage folder as a zip")
        w, off = self.weights, int(ref.offset)
        length = w.stat().st_size
        if off < 0 or off + 64 > length:
            raise ModelFormatError(f"the Core ML weight file is truncated: weight '{name}' is at byte {off} of {length}")
        with open(w, "rb") as fh:
            fh.seek(off)
            sentinel, _blob_type, size, data_off = struct.unpack_from("<IIQQ", fh.read(64))
        if sentinel != _BLOB_SENTINEL or data_off + size > length:
            raise ModelFormatError(f"the Core ML weight file is corrupt at weight '{name}' (byte {off})")
        np_dtype = _MIL_NUMPY.get(dtype.upper())
        if np_dtype and size >= n * np.dtype(np_dtype).itemsize:
            return stream_stats(file_chunks(str(w), data_off, size), np_dtype, n, dtype)
        return WeightStats(elements=n, bytes=size, min=0.0, max=0.0, sparsity=0.0)  # sub-byte (palettized) data


def _branches(op: Any) -> list[str]:
    """Names of a control-flow op's blocks, as ONNX names a Loop's and an If's bodies."""
    names = {"while_loop": ["cond", "body"], "cond": ["then_branch", "else_branch"]}.get(op.type, [])
    return [names[k] if k < len(names) else f"block{k}" for k in range(len(op.blocks))]


def _arg_name(op: Any, param: str) -> str:
    arg = op.inputs.get(param)
    return arg.arguments[0].name if arg is not None and arg.arguments and \
        arg.arguments[0].WhichOneof("binding") == "name" else ""


def _implicit_inputs(nodes: list[Node], values: dict[str, Value]) -> None:
    """Each control-flow node also reads the activations its bodies take from outside them (an ONNX body's outer
    scope values): a loop over an activation is not a constant computation, and its edges say what it waits for."""
    by_id = {n.id: n for n in nodes}
    made_in: dict[str, str] = {}  # value -> id of the control-flow node whose body makes it (innermost)
    for n in nodes:
        for o in n.outputs:
            made_in[o] = n.parent
    for n in nodes:
        for v in n.inputs:
            val = values.get(v)
            if val is not None and val.weight is not None:
                continue
            p = by_id.get(n.parent)
            while p is not None and made_in.get(v, "") != p.id and v not in _block_inputs(p):
                if v not in p.inputs:
                    p.inputs.append(v)
                p = by_id.get(p.parent)


def _block_inputs(node: Node) -> set[str]:
    return {v for b in node.attributes.values() if isinstance(b, dict) and "graph" in b for v in b.get("inputs", [])}


_PARAM_ORDER = ("x", "input", "values", "a", "b", "y", "weight", "bias", "gamma", "beta")


def _param_rank(param: str) -> tuple[int, str]:
    # Protobuf maps have no order; data first, then weights, as MIL signatures list them.
    return (_PARAM_ORDER.index(param) if param in _PARAM_ORDER else len(_PARAM_ORDER), param)


# -- NeuralNetwork ----------------------------------------------------------------------------------

def _nn_flat(layers: Any, out: list[tuple[Any, str, int, str]], parent: int, branch: str, depth: int) -> None:
    """(layer, kind, index of its parent in `out` or -1, branch) in run order, a `loop` / `branch` layer followed
    by its networks' layers (loop: cond, body; branch: then_branch, else_branch)."""
    for layer in layers:
        kind = layer.WhichOneof("layer") or "unknown"
        out.append((layer, kind, parent, branch))
        nets = {"loop": (("cond", "conditionNetwork"), ("body", "bodyNetwork")),
                "branch": (("then_branch", "ifBranch"), ("else_branch", "elseBranch"))}.get(kind, ())
        if nets and depth >= _MAX_DEPTH:
            raise ModelFormatError(f"the Core ML neural network's loops and branches nest deeper than {_MAX_DEPTH}")
        me = len(out) - 1
        for b, field in nets:
            _nn_flat(getattr(getattr(layer, kind), field).layers, out, me, b, depth + 1)


def _nn_control(node: Node, kind: str, params: Any, known: dict[str, float]) -> None:
    """A `loop` / `branch` layer's networks as bodies, its trip count where the file fixes it
    (compiler/frontends/coreml_control.py), the branch a constant condition takes."""
    if kind == "loop":
        node.attributes["cond"] = {"graph": "cond", "outputs": [params.conditionVar] if params.conditionVar else []}
        node.attributes["body"] = {"graph": "body", "outputs": []}
        n = nn_trip_count(params, known)
        if n is not None:
            node.attributes["trip_count"] = n
    else:
        node.attributes["then_branch"] = {"graph": "then_branch", "outputs": []}
        node.attributes["else_branch"] = {"graph": "else_branch", "outputs": []}
        c = known.get(node.inputs[0]) if node.inputs else None
        if c is not None:
            node.attributes["taken_branch"] = "then_branch" if c else "else_branch"


def _nn_carried(params: Any, kind: str, values: dict[str, Value]) -> list[str]:
    """Outer values a `loop` layer's networks write (a NeuralNetwork loop carries its variables in outer names, copied
    back at the end of the body): inside, they are the loop's own values, not the constants they start as."""
    nets = ("conditionNetwork", "bodyNetwork") if kind == "loop" else ("ifBranch", "elseBranch")
    written = {o for f in nets for layer in getattr(params, f).layers for o in layer.output}
    return sorted(v for v in written if v in values)


def _nn_graph(spec: Any, nn: Any, stem: str) -> Graph:
    flat: list[tuple[Any, str, int, str]] = []
    _nn_flat(nn.layers, flat, -1, "", 0)
    layers = [f[0] for f in flat]
    kinds = [f[1] for f in flat]
    ids = assign_ids([layer.name for layer in layers], kinds)
    known: dict[str, float] = {}  # values holding one constant number at this point of the run
    renamed: dict[tuple[int, str], str] = {}  # (scope, name) -> the name a NN loop's variable has there

    def look(scope: int, v: str) -> str:  # the name v has in `scope` (a loop or branch index; -1: the top level)
        while (scope, v) not in renamed and scope >= 0:
            scope = flat[scope][2]
        return renamed.get((scope, v), v)
    values: dict[str, Value] = {}
    desc = spec.description
    for f in list(desc.input) + list(desc.output):
        if f.type.WhichOneof("Type") == "multiArrayType":
            values[f.name] = Value(name=f.name, shape=[int(d) for d in f.type.multiArrayType.shape] or None,
                                   dtype=_array_dtype(f.type.multiArrayType.dataType))
        else:
            values[f.name] = Value(name=f.name, shape=None, dtype="unknown")
    nodes: list[Node] = []
    for nid, (layer, kind, p, branch) in zip(ids, flat):
        params = getattr(layer, kind) if kind != "unknown" else None
        weights, attrs = [], {}
        if kind == "activation" and params is not None:  # which nonlinearity: costed as its ONNX twin
            attrs["activation"] = params.WhichOneof("NonlinearityType") or ""
        if params is not None:
            for field, v in params.ListFields():
                if field.message_type is not None and field.message_type.name == "WeightParams":
                    wname = f"{layer.name}/{field.name}"
                    values[wname] = _weight_params(v, wname)
                    weights.append(wname)
                elif field.message_type is not None and field.message_type.name.endswith("WeightParams"):
                    weights += _nested_weights(v, f"{layer.name}/{field.name}", values)  # LSTM / GRU weights
                elif field.message_type is None:
                    attrs[field.name] = list(v) if getattr(field, "is_repeated", False) or hasattr(v, "__len__") and not isinstance(v, (str, bytes)) else v
        layer_in = [look(p, v) for v in layer.input]
        for v in layer_in:
            values.setdefault(v, Value(name=v, shape=None, dtype="float32"))
        ins = [values[v].shape if values[v].is_static else None for v in layer_in]
        outs = [look(p, v) for v in layer.output]
        for v, shape in zip(outs, out_shapes(kind, params, ins, len(outs))):  # type: ignore[arg-type]
            if v not in values or values[v].shape is None:
                values[v] = Value(name=v, shape=shape, dtype="float32")  # type: ignore[arg-type]
        node = Node(id=nid, name=layer.name, op_type=kind, namespace=namespace_from_name(layer.name),
                    inputs=layer_in + weights, outputs=outs,
                    attributes={k: v for k, v in attrs.items() if isinstance(v, (int, float, str, bool, list))})
        if p >= 0:
            node.parent, node.branch = ids[p], branch
            node.namespace = "/".join(x for x in (nodes[p].namespace, ids[p], branch) if x)
        if kind in ("loop", "branch"):
            _nn_control(node, kind, params, known)
            me = len(nodes)
            for v in _nn_carried(params, kind, values):  # the loop reads v, its networks see it as their own, and
                inner, after = renamed[(me, v)], renamed[(p, v)] = f"{nid}/{v}", f"{nid}/out/{v}"  # what follows
                for alias in (inner, after):  # reads what the loop left in it
                    values[alias] = Value(name=alias, shape=values[v].shape, dtype=values[v].dtype)
                node.inputs.append(look(p, v))
                node.outputs.append(after)
                for b in node.attributes.values():
                    if isinstance(b, dict) and "graph" in b:
                        b.setdefault("inputs", []).append(inner)
        c = nn_constant(layer) if kind != "copy" else known.get(layer_in[0]) if layer_in else None
        for v in outs:
            if c is not None and len(outs) == 1:
                known[v] = c
            else:
                known.pop(v, None)
        nodes.append(node)
    _implicit_inputs(nodes, values)
    return Graph(name=stem, format="coreml", nodes=nodes, values=values, inputs=[i.name for i in desc.input],
                 outputs=[o.name for o in desc.output],
                 metadata={"spec_version": str(spec.specificationVersion), "model_type": spec.WhichOneof("Type")})


def _nested_weights(msg: Any, prefix: str, values: dict[str, Value]) -> list[str]:
    """The WeightParams inside a recurrent layer's weight message(s) (LSTMWeightParams: 8 matrices, 4 biases;
    repeated for each direction), as weight values: they were not read, so an LSTM layer had no weights."""
    names = []
    for i, m in enumerate(msg if isinstance(msg, Sequence) else [msg]):
        for field, v in m.ListFields():
            if field.message_type is not None and field.message_type.name == "WeightParams":
                wname = f"{prefix}{'/' + str(i) if i else ''}/{field.name}"
                values[wname] = _weight_params(v, wname)
                names.append(wname)
    return names


def _array_dtype(code: int) -> str:
    # ArrayFeatureType.ArrayDataType: FLOAT32 = 65568, DOUBLE = 65600, INT32 = 131104, FLOAT16 = 65552
    return {65568: "float32", 65600: "float64", 131104: "int32", 65552: "float16", 131080: "int8"}.get(code, "unknown")


def _weight_params(w: Any, name: str) -> Value:
    if len(w.floatValue):
        arr, dtype = np.array(w.floatValue, np.float32), "float32"
    elif w.float16Value:
        arr, dtype = np.frombuffer(w.float16Value[: len(w.float16Value) // 2 * 2], "<f2"), "float16"
    else:
        arr, dtype = np.frombuffer(w.rawValue or b"", np.uint8), "uint8"
    return Value(name=name, shape=[int(arr.size)], dtype=dtype, weight=weight_stats(arr, dtype))
