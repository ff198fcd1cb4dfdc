"""What every backend module shares and the registry (`compiler.backends`) relies on: the Backend protocol and
`as_tasks`, a source graph taken as its own task graph. Backend modules import this, never the registry, so
the registry may import them without a loop."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from compiler.graph import Graph, Node
from compiler.profile import Profile


class Backend(Protocol):
    name: str
    measures: bool  # has a runtime on this machine

    def compile(self, src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]: ...

    def profile(self, compiled_path: Path, settings: object) -> Profile: ...


def as_tasks(source: Graph) -> Graph:
    """A source graph taken as its own compiled form: each node is one task, in the order a runtime runs them
    (`run_order`)."""
    nodes = [
        Node(id=n.id, name=n.name, op_type=n.op_type, namespace=n.namespace, inputs=list(n.inputs),
             outputs=list(n.outputs), attributes=n.attributes, domain=n.domain, source_nodes=[n.id],
             location=n.location, parent=n.parent, branch=n.branch)
        for n in run_order(source)
    ]
    return Graph(name=source.name, format=source.format, nodes=nodes, values=source.values,
                 inputs=source.inputs, outputs=source.outputs, metadata=dict(source.metadata))


def run_order(g: Graph) -> list[Node]:
    """The nodes in file order, but each top-level node computed from weights alone (an exporter's Identity or Cast
    of a weight: TorchScript writes all of them first) just before its first consumer. A runtime folds them at load;
    in file order they headed every table and timeline of a predicted target, 53 zero-time Identity tasks on
    some exports. Another topological order, so every figure is the same."""
    const = {v for v, val in g.values.items() if val.weight is not None}
    movable: dict[int, Node] = {}
    for i, n in enumerate(g.nodes):
        ins = [v for v in n.inputs if v]
        if not n.parent and n.outputs and (n.op_type == "Constant" or (ins and all(v in const for v in ins))):
            movable[i] = n
            const.update(v for v in n.outputs if v)
    if not movable:
        return list(g.nodes)
    readers: dict[str, list[int]] = {}
    for i, n in enumerate(g.nodes):
        for v in dict.fromkeys(n.inputs):
            if v:
                readers.setdefault(v, []).append(i)
    outputs = set(g.outputs)
    anchor: dict[int, int] = {}  # movable node -> the position of the node it now precedes
    for i in sorted(movable, reverse=True):  # consumers first (file order is topological)
        n = movable[i]
        users = [j for v in n.outputs if v for j in readers.get(v, [])]
        if not users or any(v in outputs for v in n.outputs) or any(g.nodes[j].parent for j in users):
            continue  # no reader here, a graph output or read inside a body: stays where it is
        anchor[i] = min(anchor.get(j, j) for j in users)
    key = {i: (anchor[i], 0, i) if i in anchor else (i, 1, i) for i in range(len(g.nodes))}
    return [g.nodes[i] for i in sorted(range(len(g.nodes)), key=key.__getitem__)]
