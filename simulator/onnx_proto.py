"""Bytes of ONNX protobuf records as the encoder writes them (NodeProto, an initializer's TensorProto header,
ValueInfoProto): the arithmetic simulator.onnx_file sizes an exported file with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _varint(n: int) -> int:
    if 0 <= n < 128:
        return 1
    if n < 0:
        return 10  # negative int64 varints take ten bytes
    return (n.bit_length() + 6) // 7


def _ld(n: int) -> int:
    """A length-delimited field (1-byte tag) carrying n bytes."""
    return 1 + _varint(n) + n


def _str(s: str) -> int:
    n = len(s) if s.isascii() else len(s.encode())
    return n + (2 if n < 128 else 1 + _varint(n))


def _attr(name: str, value: Any) -> int:
    """One AttributeProto inside a node (its `type` field has a 2-byte tag)."""
    if isinstance(value, bool | int):
        v = 1 + _varint(int(value))
    elif isinstance(value, float):
        v = 5
    elif isinstance(value, str | bytes):
        v = _ld(len(value.encode() if isinstance(value, str) else value))
    elif isinstance(value, list | tuple):
        v = sum(5 if isinstance(x, float) else 1 + _varint(int(x)) if isinstance(x, int) else _str(str(x))
                for x in value)
    elif isinstance(value, dict) and "graph_bytes" in value:  # an If / Loop / Scan body (subgraph_bytes)
        v = _ld(int(value["graph_bytes"]))
    else:
        v = 16  # a tensor attribute: not on nodes the exporter keeps
    return _ld(_str(name) + 3 + v)


def subgraph_bytes(name: str, inputs: Sequence[tuple[str, Sequence[Any] | None]],
                   outputs: Sequence[tuple[str, Sequence[Any] | None]]) -> int:
    """A body's GraphProto less its nodes (each node is a record of its own): its name and the value_info of its
    inputs and outputs ((name, shape) pairs). torch/cond-while's written If and Loop bodies hold 0.8 KB of them."""
    return _str(name) + sum(value_info_bytes(n, shape) for n, shape in (*inputs, *outputs))


def node_bytes(name: str, op: str, inputs: Sequence[str], outputs: Sequence[str],
               attrs: Mapping[str, Any] | None = None, domain: str = "") -> int:
    """A NodeProto as a GraphProto.node entry."""
    body = sum(_str(x) for x in inputs) + sum(_str(x) for x in outputs) + _str(op)
    body += _str(name) if name else 0
    body += _str(domain) if domain else 0
    body += sum(_attr(k, v) for k, v in (attrs or {}).items())
    return _ld(body)


def init_header_bytes(name: str, dims: Sequence[int], data_bytes: int) -> int:
    """A TensorProto initializer entry less its data: dims, data_type, name, raw_data's tag and length."""
    body = sum(1 + _varint(int(d)) for d in dims) + 2 + _str(name) + 1 + _varint(data_bytes)
    return 1 + _varint(body + data_bytes) + body


def value_info_bytes(name: str, shape: Sequence[Any] | None) -> int:
    """A ValueInfoProto (tensor type, elem type, shape with dim_value or dim_param)."""
    dims = sum(_ld(1 + _varint(d) if isinstance(d, int) and d >= 0 else _str(str(d))) for d in (shape or []))
    tensor = 2 + (_ld(dims) if shape is not None else 0)
    return _ld(_str(name) + _ld(_ld(tensor)))


# The opset domains ONNX Runtime (1.32) lists in every file it saves, at the version it lists when the model does not
# import the domain itself (a model's own imports are kept as they are). A model without the default domain (an
# ai.onnx.ml-only file such as a scikit-learn export) gets it at the runtime's newest opset, with the internal NHWC
# domain beside it. Read off files ORT saved (2026-12-04, onnxruntime 1.32.0).
ORT_SAVED_DOMAINS: dict[str, int] = {
    "ai.onnx.ml": 5, "ai.onnx.training": 1, "ai.onnx.preview": 1, "com.microsoft": 1, "ai.onnx.preview.training": 1,
    "com.microsoft.experimental": 1, "com.microsoft.nchwc": 1, "org.pytorch.aten": 1,
}
ORT_NEWEST_OPSET = 28
# A torch export's model fields (ir_version, producer "pytorch" and its version, graph name "main_graph"): the
# header of a graph whose frontend did not record its own (stored before it did).
TORCH_MODEL_FIELDS_BYTES = 33


def opset_import_bytes(domain: str, version: int) -> int:
    """One ModelProto.opset_import entry (OperatorSetIdProto: domain, version)."""
    return _ld((_str(domain) if domain else 0) + 1 + _varint(version))


def ort_saved_opset_bytes(imports: Mapping[str, int]) -> int:
    """Bytes of the opset_import list of a file ONNX Runtime saves from a model importing `imports` (domain ->
    version, '' the default domain)."""
    out = dict(imports)
    if "" not in out:
        out.update({"": ORT_NEWEST_OPSET, "com.ms.internal.nhwc": ORT_NEWEST_OPSET})
    for d, v in ORT_SAVED_DOMAINS.items():
        out.setdefault(d, v)
    return sum(opset_import_bytes(d, v) for d, v in out.items())
