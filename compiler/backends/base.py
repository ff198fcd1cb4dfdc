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
    """A source graph taken as its own compiled form: each node is one task."""
    nodes = [
        Node(id=n.id, name=n.name, op_type=n.op_type, namespace=n.namespace, inputs=list(n.inputs),
             outputs=list(n.outputs), attributes=n.attributes, domain=n.domain, source_nodes=[n.id],
             location=n.location, parent=n.parent, branch=n.branch)
        for n in source.nodes
    ]
    return Graph(name=source.name, format=source.format, nodes=nodes, values=source.values,
                 inputs=source.inputs, outputs=source.outputs, metadata=dict(source.metadata))
