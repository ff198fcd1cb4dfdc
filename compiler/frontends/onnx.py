"""ONNX frontend: `sniff` recognises a serialized ModelProto, `load` turns it into a `Graph`.

Protobuf objects stay inside this module. External data is never followed (a model could name
any path on the server); such models get a clear error instead.
"""

from __future__ import annotations

import ast
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from compiler.frontends.onnx_scopes import Body, Placed, all_bodies, assign_ids, node_ids, walk  # noqa: F401 (re-exported)
from compiler.graph import Dim, Graph, ModelFormatError, Node, SourceLocation, Value, WeightStats, namespace_from_name

# ModelProto field number -> protobuf wire type (0 varint, 2 length-delimited).
_MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}


# -- sniffing --------------------------------------------------------------------------------

def _varint(buf: bytes, pos: int) -> tuple[int, int] | None:
    result = shift = 0
    while pos < len(buf) and shift < 64:
        b = buf[pos]
        result |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return result, pos
        shift += 7
    return None


def sniff(head: bytes, filename: str) -> bool:
    """True when `head` parses as the first fields of an ONNX ModelProto (field numbers and wire
    types of ModelProto only, a plausible ir_version or a graph field). The name is not needed:
    the structure check is specific enough, and misnamed ONNX files still load."""
    pos, fields, seen_graph, ir_ok = 0, 0, False, False
    while pos < len(head):
        tag = _varint(head, pos)
        if tag is None:
            break  # cut by the head boundary
        key, pos = tag
        number, wire = key >> 3, key & 7
        if _MODEL_FIELDS.get(number) != wire:
            return False
        item = _varint(head, pos)
        if item is None:
            break
        value, pos = item
        fields += 1
        if number == 1:
            ir_ok = 1 <= value <= 64
            if not ir_ok:
                return False
        if number == 7:
            seen_graph = True
        if wire == 2:
            pos += value  # skip the payload; running past the head is fine (truncated read)
    return fields > 0 and (ir_ok or seen_graph)


# -- loading -----------------------------------------------------------------------------------

def load(path: str | os.PathLike[str]) -> Graph:
    import onnx

    path = Path(path)
    try:
        model = onnx.load(os.fspath(path), load_external_data=False)
    except Exception as e:  # DecodeError and friends: protobuf gives terse reasons
        raise ModelFormatError(f"the ONNX file is truncated or corrupt: {e}") from None
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise ModelFormatError("the ONNX file is truncated or corrupt: it contains no graph")
    _refuse_external_data(model)
    try:
        # data_prop folds shape arithmetic (Shape -> Gather -> Concat) into known dims.
        model = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception:
        pass  # shapes stay as declared; inference is a bonus, not a requirement
    return _to_graph(model, path.stem)


def _refuse_external_data(model: Any) -> None:
    """Weights left in external data files here were not given with the model (an upload and the CLI merge the
    ones they have, compiler.external_data): no stage reads a file the model names."""
    from compiler.external_data import external_tensors

    bad = [t.name or "(unnamed)" for t in external_tensors(model)]
    if bad:
        raise ModelFormatError(
            f"the ONNX model keeps {len(bad)} weight tensor(s) (e.g. '{bad[0]}') in external data files that were "
            "not given with it: upload the .onnx together with its data file (the web form and POST /api/models "
            "take both), give the edgescope command the .onnx with its data file beside it, or export one file "
            "(torch.onnx.export(..., external_data=False), models under 2 GB)")


def dtype_name(elem_type: int) -> str:
    """ONNX TensorProto element type -> normalised dtype name (`float32`, `int64`, ...)."""
    from onnx import TensorProto

    if elem_type == TensorProto.FLOAT:
        return "float32"
    if elem_type == TensorProto.DOUBLE:
        return "float64"
    if elem_type == TensorProto.UNDEFINED:
        return "unknown"
    return TensorProto.DataType.Name(elem_type).lower()


def _shape(type_proto: Any) -> tuple[list[Dim] | None, str]:
    if not type_proto.HasField("tensor_type"):
        return None, "unknown"  # sequences/maps/optionals: no tensor shape to report
    tt = type_proto.tensor_type
    dtype = dtype_name(tt.elem_type)
    if not tt.HasField("shape"):
        return None, dtype
    dims: list[Dim] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        else:
            dims.append(d.dim_param or "?")
    return dims, dtype


SMALL_INTS = 16  # integer constants up to this size keep their values (shape tensors, axes, indices)


def weight_stats(arr: np.ndarray, dtype: str) -> WeightStats:
    """Elements, bytes, min, max, share of exact zeros. The array is dropped by the caller."""
    from compiler.graph import DTYPE_BYTES

    n = int(arr.size)
    nbytes = math.ceil(n * DTYPE_BYTES.get(dtype, arr.dtype.itemsize))
    if n == 0 or arr.dtype.kind in "OSU":
        return WeightStats(elements=n, bytes=nbytes, min=0.0, max=0.0, sparsity=0.0)
    if arr.dtype.kind not in "fiub c":  # bfloat16 / float8 (ml_dtypes) compute through float32
        arr = arr.astype(np.float32)
    if arr.dtype.kind == "c":
        arr = np.abs(arr)
    flat = arr.reshape(-1)
    finite = flat[np.isfinite(flat)] if flat.dtype.kind == "f" else flat
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    zeros = n - int(np.count_nonzero(flat))
    ints = tuple(int(x) for x in flat) if flat.dtype.kind in "iu" and n <= SMALL_INTS else None
    return WeightStats(elements=n, bytes=nbytes, min=lo, max=hi, sparsity=zeros / n, ints=ints)


def _tensor_value(t: Any, name: str) -> Value:
    from onnx import numpy_helper

    dtype = dtype_name(t.data_type)
    try:
        stats = weight_stats(numpy_helper.to_array(t), dtype)
    except Exception:  # malformed payload: still report the declared size
        n = math.prod(t.dims)
        stats = WeightStats(elements=n, bytes=0, min=0.0, max=0.0, sparsity=0.0)
    return Value(name=name, shape=[int(d) for d in t.dims], dtype=dtype, weight=stats)


def _constant_value(node: Any, name: str) -> Value | None:
    """Weight record for a Constant node's output."""
    for a in node.attribute:
        if a.name == "value" and a.HasField("t"):
            return _tensor_value(a.t, name)
        if a.name in ("value_float", "value_floats", "value_int", "value_ints"):
            is_float = a.name.startswith("value_float")
            data = (list(a.floats) if is_float else list(a.ints)) if a.name.endswith("s") else [a.f if is_float else a.i]
            dtype = "float32" if is_float else "int64"
            arr = np.array(data, dtype=dtype)
            shape = [len(data)] if a.name.endswith("s") else []
            return Value(name=name, shape=shape, dtype=dtype, weight=weight_stats(arr, dtype))
        if a.name == "sparse_value":
            return _tensor_value(a.sparse_tensor.values, name)
    return None


def _json_float(x: float) -> float | str:
    return float(x) if math.isfinite(x) else str(x)


def _tensor_summary(t: Any) -> dict[str, Any]:
    return {"tensor": {"dtype": dtype_name(t.data_type), "shape": [int(d) for d in t.dims]}}


def attribute_json(a: Any) -> Any:
    """JSON-able form of an AttributeProto: tensors and graphs summarised, never dumped."""
    from onnx import AttributeProto as A

    t = a.type
    if t == A.FLOAT:
        return _json_float(a.f)
    if t == A.INT:
        return int(a.i)
    if t == A.STRING:
        return a.s.decode("utf-8", "replace")
    if t == A.TENSOR:
        return _tensor_summary(a.t)
    if t == A.SPARSE_TENSOR:
        return {"sparse_tensor": {"dims": list(a.sparse_tensor.dims)}}
    if t == A.GRAPH:
        return {"graph": a.g.name, "nodes": len(a.g.node)}
    if t == A.FLOATS:
        return [_json_float(x) for x in a.floats]
    if t == A.INTS:
        return [int(x) for x in a.ints]
    if t == A.STRINGS:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if t == A.TENSORS:
        return [_tensor_summary(x) for x in a.tensors]
    if t == A.GRAPHS:
        return [{"graph": g.name, "nodes": len(g.node)} for g in a.graphs]
    return str(a.ref_attr_name or "") or None  # TYPE_PROTO(S) and refs: nothing useful to show


# -- torch dynamo metadata ---------------------------------------------------------------------

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)')


def _namespace_from_metadata(props: dict[str, str]) -> str:
    """torch's dynamo exporter (2.13) writes `pkg.torch.onnx.name_scopes` = "['', 'blk', 'blk.0', 'conv2d_1']"
    (root, module path, op) and `namespace` = ": __main__.M/blk: ...Sequential/blk.0: ...Conv2d/conv2d_1: aten...".
    """
    scopes = props.get("pkg.torch.onnx.name_scopes")
    if scopes:
        try:
            parts = ast.literal_eval(scopes)
            if isinstance(parts, list):
                return "/".join(relative_scopes([str(p) for p in parts[1:-1] if p]))
        except (ValueError, SyntaxError):
            pass
    ns = props.get("namespace")
    if ns:
        parts = [seg.split(":", 1)[0].strip() for seg in ns.split("/")]
        return "/".join(p for p in parts[1:-1] if p)
    return ""


def relative_scopes(scopes: list[str]) -> list[str]:
    # Scopes are qualified ("encoder.0", "encoder.0.attention"); keep one level each, as in
    # TorchScript-exported names ("/encoder.0/attention/...").
    out, prev = [], ""
    for s in scopes:
        out.append(s[len(prev) + 1:] if prev and s.startswith(prev + ".") else s)
        prev = s
    return out


def _location_from_metadata(props: dict[str, str]) -> SourceLocation | None:
    trace = props.get("pkg.torch.onnx.stack_trace")
    if not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    # The innermost frame outside torch itself is the user's line that produced the op.
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    file, line, code = user[-1]
    return SourceLocation(file=file, line=int(line), code=code.strip())


# -- graph assembly ------------------------------------------------------------------------------

def _to_graph(model: Any, fallback_name: str) -> Graph:
    g = model.graph
    values: dict[str, Value] = {}

    for vi in list(g.input) + list(g.value_info) + list(g.output):
        shape, dtype = _shape(vi.type)
        values[vi.name] = Value(name=vi.name, shape=shape, dtype=dtype)
    init_names = _add_initializers(g, {}, values)

    nodes: list[Node] = []
    by_id: dict[str, Node] = {}
    prefix: dict[tuple[str, str], str] = {}  # (parent id, branch) -> namespace of the body's nodes
    body_inputs: set[str] = set()
    for item in walk(g):
        if isinstance(item, Body):
            parent = by_id[item.parent]
            prefix[(item.parent, item.branch)] = _join(parent.namespace, item.branch)
            body_inputs |= _add_body_values(item, parent, values)
            continue
        node = _node(item, values)
        if node is None:
            continue  # a Constant: a folded value (its output is a weight), not a task
        if item.parent:
            node.namespace = _join(prefix[(item.parent, item.branch)], node.namespace)
        if item.bodies:  # a control-flow node heads a group of its own, its bodies inside it
            node.namespace = _join(node.namespace, node.id.rstrip("/").split("/")[-1])
        nodes.append(node)
        by_id[node.id] = node

    given = {i.name for i in g.input} | {k for k, v in values.items() if v.weight is not None} | body_inputs
    _check_defined(nodes, given, [o.name for o in g.output])
    metadata = {
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "ir_version": str(model.ir_version),
        "opsets": ",".join(f"{o.domain or 'ai.onnx'}:{o.version}" for o in model.opset_import),
        "model_fields_bytes": str(_model_fields_bytes(model)),
    }
    metadata.update({f"meta.{p.key}": p.value for p in model.metadata_props})
    inputs = [i.name for i in g.input if i.name not in init_names]
    return Graph(name=g.name or fallback_name, format="onnx", nodes=nodes, values=values,
                 inputs=inputs, outputs=[o.name for o in g.output], metadata=metadata)


def _model_fields_bytes(model: Any) -> int:
    """Bytes of the model's own fields (ir_version, producer, domain, doc strings, metadata_props, the graph's name),
    which a file ONNX Runtime saves keeps: what an export's file holds beside its records and opset list
    (simulator.onnx_file)."""
    import onnx

    head = onnx.ModelProto()
    for f in ("ir_version", "producer_name", "producer_version", "domain", "model_version", "doc_string"):
        if model.HasField(f):  # proto2: a field set to its default is still written
            setattr(head, f, getattr(model, f))
    head.metadata_props.extend(model.metadata_props)
    for f in ("name", "doc_string"):
        if model.graph.HasField(f):
            setattr(head.graph, f, getattr(model.graph, f))
    head.graph.SetInParent()
    return head.ByteSize()


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _add_initializers(g: Any, rename: dict[str, str], values: dict[str, Value]) -> set[str]:
    names = set()
    for t in list(g.initializer) + [st.values for st in g.sparse_initializer]:
        name = rename.get(t.name, t.name)
        values[name] = _tensor_value(t, name)
        names.add(name)
    return names


def _node(item: Placed, values: dict[str, Value]) -> Node | None:
    """The Graph node of one placed NodeProto, its values recorded in `values`; None for a Constant."""
    pn = item.proto
    rename = item.value if item.rename else (lambda v: v)
    outputs = [rename(o) for o in pn.output]
    if pn.op_type == "Constant" and pn.domain in ("", "ai.onnx") and outputs:
        values[outputs[0]] = _constant_value(pn, outputs[0]) or Value(
            name=outputs[0], shape=None, dtype="unknown", weight=WeightStats(0, 0, 0.0, 0.0, 0.0))
        return None
    props = {p.key: p.value for p in getattr(pn, "metadata_props", [])}
    node = Node(
        id=item.id, name=pn.name, op_type=pn.op_type,
        namespace=namespace_from_name(pn.name) or _namespace_from_metadata(props),
        inputs=[rename(i) for i in pn.input], outputs=outputs,
        attributes={a.name: attribute_json(a) for a in pn.attribute},
        domain="" if pn.domain == "ai.onnx" else pn.domain,
        location=_location_from_metadata(props), parent=item.parent, branch=item.branch,
    )
    for name in node.inputs + node.outputs:
        if name and name not in values:
            values[name] = Value(name=name, shape=None, dtype="unknown")
    return node


def _add_body_values(body: Body, parent: Node, values: dict[str, Value]) -> set[str]:
    """Record a body's declared values and initializers; returns its input names. An input declared
    without a shape takes the one its parent feeds it (a Loop's carried value, a Scan's state or slice)."""
    g, r = body.graph, body.rename
    for vi in list(g.value_info) + list(g.output):
        name = r.get(vi.name, vi.name)
        shape, dtype = _shape(vi.type)
        if name not in values or (values[name].shape is None and values[name].weight is None):
            values[name] = Value(name=name, shape=shape, dtype=dtype)
    summary = parent.attributes.get(body.branch)
    if isinstance(summary, dict):  # what the body takes and hands back (graph views; a Loop's counted trips)
        summary["inputs"] = [r.get(i.name, i.name) for i in g.input]
        summary["outputs"] = [r.get(o.name, o.name) for o in g.output]
    inputs = set()
    for k, vi in enumerate(g.input):
        name = r.get(vi.name, vi.name)
        shape, dtype = _shape(vi.type)
        if shape is None:
            shape = _fed_shape(parent, k, values)
        values[name] = Value(name=name, shape=shape, dtype=dtype)
        inputs.add(name)
    return inputs | _add_initializers(g, r, values)


def _fed_shape(parent: Node, k: int, values: dict[str, Value]) -> list[Dim] | None:
    """Shape of what a Loop or Scan hands its body's k-th input (Loop: iteration, condition, then its carried
    inputs; Scan: its state, then one slice of each scanned input along its axis)."""
    if parent.op_type == "Loop" and k >= 2 and k < len(parent.inputs):
        v = values.get(parent.inputs[k])
        return list(v.shape) if v is not None and v.shape is not None else None
    if parent.op_type == "Scan" and k < len(parent.inputs):
        v = values.get(parent.inputs[k])
        if v is None or v.shape is None:
            return None
        n_scan = int(parent.attributes.get("num_scan_inputs", 0) or 0)
        first_scan = len(parent.inputs) - n_scan
        if k < first_scan:
            return list(v.shape)
        axes = parent.attributes.get("scan_input_axes") or [0] * n_scan
        axis = int(axes[k - first_scan]) % max(1, len(v.shape))
        return [d for i, d in enumerate(v.shape) if i != axis]
    return None


def _check_defined(nodes: list[Node], given: set[str], outputs: list[str]) -> None:
    # A file cut at a field boundary still parses; dangling references are how it shows.
    defined = set(given)
    for n in nodes:
        for v in n.inputs:
            if v and v not in defined:
                raise ModelFormatError(f"the ONNX file is truncated or corrupt: node '{n.id}' reads '{v}', "
                                       "which nothing in the graph defines")
        defined.update(n.outputs)
    missing = [o for o in outputs if o not in defined]
    if missing:
        raise ModelFormatError(f"the ONNX file is truncated or corrupt: graph output '{missing[0]}' is never computed")
