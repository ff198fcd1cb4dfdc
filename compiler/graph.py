"""The one graph representation every format loads into and every later stage reads.

A `Graph` is flat: nodes in execution (topological) order, each naming its input and
output values; hierarchy is a namespace path per node (`encoder/layer.3/attention`),
as in Model Explorer. Format objects (protobuf, flatbuffers, FX) never appear here.

A compiled model is also a `Graph`: its nodes are the backend's hardware tasks and each
carries `source_nodes`, the ids of the source-graph nodes it implements.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any

Dim = int | str  # str = symbolic dimension ("batch", "seq")
JSON = Any

# Bytes per element of each normalised dtype name. Sub-byte types are fractional.
DTYPE_BYTES: dict[str, float] = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint64": 8, "uint32": 4,
    "uint16": 2, "uint8": 1, "bool": 1, "int4": 0.5, "uint4": 0.5,
    "float8e4m3fn": 1, "float8e5m2": 1, "complex64": 8, "complex128": 16, "string": 0,
}


@dataclass(frozen=True, slots=True)
class WeightStats:
    """Summary of a constant tensor; the values stay in the model file (but for small integer ones)."""

    elements: int
    bytes: int
    min: float
    max: float
    sparsity: float  # share of elements that are exactly zero, 0..1
    ints: tuple[int, ...] | None = None  # the values of a small integer constant (shape tensors, axes), <= 16


@dataclass(frozen=True, slots=True)
class Quantization:
    """Affine quantization of a tensor (TFLite/QDQ): real = scale * (q - zero_point)."""

    scale: list[float]
    zero_point: list[int]
    axis: int | None = None


@dataclass(slots=True)
class Value:
    name: str
    shape: list[Dim] | None  # None = rank unknown
    dtype: str  # normalised name, a key of DTYPE_BYTES
    weight: WeightStats | None = None  # set for initializers / constants
    quant: Quantization | None = None

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) and d >= 0 for d in self.shape)

    @property
    def elements(self) -> int | None:
        if not self.is_static:
            return None
        return math.prod(self.shape)  # type: ignore[arg-type]

    @property
    def bytes(self) -> int | None:
        if self.weight is not None:
            return self.weight.bytes
        n = self.elements
        return None if n is None else math.ceil(n * DTYPE_BYTES.get(self.dtype, 4))


@dataclass(frozen=True, slots=True)
class SourceLocation:
    file: str
    line: int
    code: str = ""  # the line (or snippet) as written


@dataclass(slots=True)
class Node:
    id: str  # unique within the graph, stable across loads of the same file
    name: str  # as written in the file (may be empty or repeated there)
    op_type: str  # e.g. "Conv", "MatMul", "FusedConv"
    namespace: str = ""  # hierarchy path "a/b/c"; "" = top level
    inputs: list[str] = field(default_factory=list)  # value names; "" = omitted optional input
    outputs: list[str] = field(default_factory=list)
    attributes: dict[str, JSON] = field(default_factory=dict)  # JSON-able only
    domain: str = ""  # operator set domain ("" = default, "com.microsoft", ...)
    source_nodes: list[str] = field(default_factory=list)  # compiled graphs: ids in the source graph
    location: SourceLocation | None = None
    # Control flow: the id of the If / Loop / Scan node whose body holds this node, and which body
    # (`then_branch`, `else_branch`, `body`). Body nodes follow their parent in `Graph.nodes`.
    parent: str = ""
    branch: str = ""

    def text(self, name: str, default: str = "") -> str:
        """A string attribute (`activation`, `mode`, `equation`...): the frontends store them decoded, and
        an absent or empty one reads as `default`."""
        v = self.attributes.get(name)
        return default if v is None or v == "" else str(v)


@dataclass(slots=True)
class Graph:
    name: str
    format: str  # "onnx", "tflite", "coreml", "pt2"
    nodes: list[Node]
    values: dict[str, Value]
    inputs: list[str]  # graph input value names (weights excluded)
    outputs: list[str]
    metadata: dict[str, str] = field(default_factory=dict)
    # Compiled graphs: source node id -> why no task implements it ("constant-folded", "removed").
    eliminated: dict[str, str] = field(default_factory=dict)

    # -- queries -----------------------------------------------------------------
    def node(self, node_id: str) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def weights_of(self, node: Node) -> list[Value]:
        return [self.values[v] for v in node.inputs if v and v in self.values and self.values[v].weight]

    def producers(self) -> dict[str, str]:
        """value name -> id of the node that writes it."""
        return {v: n.id for n in self.nodes for v in n.outputs if v}

    def edges(self) -> list[tuple[str, str, str]]:
        """(producer node id, consumer node id, value name) for every activation edge."""
        prod = self.producers()
        return [(prod[v], n.id, v) for n in self.nodes for v in n.inputs if v in prod]

    def body_results(self) -> list[tuple[str, str, str]]:
        """(producer id, control-flow node id, value name) for each result a body hands its parent (If,
        Loop and Scan nodes keep their bodies' outputs in `attributes[branch]["outputs"]`)."""
        prod = self.producers()
        out = []
        for n in self.nodes:
            for attr in n.attributes.values():
                if isinstance(attr, dict) and "graph" in attr:
                    out += [(prod[v], n.id, v) for v in attr.get("outputs", []) if v in prod and prod[v] != n.id]
        return out

    @property
    def weight_bytes(self) -> int:
        return sum(v.weight.bytes for v in self.values.values() if v.weight)

    # -- serialisation -------------------------------------------------------------
    def to_json(self) -> dict[str, JSON]:
        return {
            "name": self.name,
            "format": self.format,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "metadata": self.metadata,
            "eliminated": self.eliminated,
            "nodes": [_record(n, _NODE_FIELDS) for n in self.nodes],
            "values": [_record(v, _VALUE_FIELDS) for v in self.values.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, JSON]) -> Graph:
        values = {}
        for v in data["values"]:
            w = v.get("weight")
            q = v.get("quant")
            values[v["name"]] = Value(
                name=v["name"], shape=v.get("shape"), dtype=v["dtype"],
                weight=_weight_stats(w) if w else None, quant=Quantization(**q) if q else None,
            )
        nodes = []
        for n in data["nodes"]:
            loc = n.get("location")
            nodes.append(Node(
                id=n["id"], name=n.get("name", ""), op_type=n["op_type"],
                namespace=n.get("namespace", ""), inputs=n.get("inputs", []),
                outputs=n.get("outputs", []), attributes=n.get("attributes", {}),
                domain=n.get("domain", ""), source_nodes=n.get("source_nodes", []),
                location=SourceLocation(**loc) if loc else None,
                parent=n.get("parent", ""), branch=n.get("branch", ""),
            ))
        return cls(name=data["name"], format=data["format"], nodes=nodes, values=values,
                   inputs=data["inputs"], outputs=data["outputs"], metadata=data.get("metadata", {}),
                   eliminated=data.get("eliminated", {}))


def _weight_stats(w: dict[str, JSON]) -> WeightStats:
    ints = w.get("ints")
    return WeightStats(**{**w, "ints": tuple(ints) if ints is not None else None})


_NODE_FIELDS = tuple(f.name for f in fields(Node))
_VALUE_FIELDS = tuple(f.name for f in fields(Value))
_PLAIN = frozenset((str, int, float, bool, list, dict, tuple))  # written as they are, never a nested record


def _record(obj: Node | Value, names: tuple[str, ...]) -> dict[str, JSON]:
    """`asdict(obj)` without its empty fields (50k nodes with empty fields add megabytes), and without asdict's deep
    copy of every list and dict, which took most of the time of storing a large analysis: the document shares the
    graph's lists, so it is for serialising at once, not for editing."""
    out: dict[str, JSON] = {}
    for k in names:
        v = getattr(obj, k)
        if v is None or (v in ("", [], {}) and k != "shape"):  # shape [] is a scalar's; None is rank unknown
            continue
        # location, weight, quant: small, rare records. The type test first: is_dataclass on each of a 50,000-node
        # graph's 800,000 fields was a third of writing its documents.
        out[k] = v if type(v) in _PLAIN else asdict(v) if is_dataclass(v) else v
    return out


def namespace_from_name(name: str) -> str:
    """`/encoder/layer.3/attention/MatMul` -> `encoder/layer.3/attention`; `Conv_17` -> ``."""
    parts = [p for p in name.split("/") if p]
    return "/".join(parts[:-1])


class ModelFormatError(ValueError):
    """The file is not a readable model of the claimed or sniffed format. Message is user-facing."""
