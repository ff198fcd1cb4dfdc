"""From a model file to the compiled graph a target is simulated on: the one place that calls the compiler."""

from __future__ import annotations

import os
from pathlib import Path

from compiler.graph import Graph, Node
from simulator.targets import get_target


def load_source(path: str | os.PathLike[str]) -> Graph:
    from compiler import frontends

    return frontends.load(path)


def as_tasks(source: Graph) -> Graph:
    """A source graph taken as its own compiled form (targets we cannot compile here): one task per node."""
    nodes = [Node(id=n.id, name=n.name, op_type=n.op_type, namespace=n.namespace, inputs=list(n.inputs),
                  outputs=list(n.outputs), attributes=n.attributes, domain=n.domain, source_nodes=[n.id],
                  location=n.location) for n in source.nodes]
    return Graph(name=source.name, format=source.format, nodes=nodes, values=source.values,
                 inputs=source.inputs, outputs=source.outputs, metadata=dict(source.metadata))


def compile_for(path: str | os.PathLike[str], target: str, workdir: str | os.PathLike[str]) -> tuple[Graph, Graph]:
    """(source, compiled) for `target`: ORT's optimized graph for ort-cpu/host, the source nodes otherwise."""
    t = get_target(target)
    source = load_source(path)
    source.metadata.setdefault("file_size_bytes", str(Path(path).stat().st_size))
    source.metadata.setdefault("source_weight_bytes", str(source.weight_bytes))
    if t.backend == "ort-cpu":
        from compiler.backends import ort

        compiled = ort.compile(path, Path(workdir) / "compiled.onnx", source)
        compiled.metadata.setdefault("file_size_bytes", source.metadata["file_size_bytes"])
        compiled.metadata.setdefault("source_weight_bytes", source.metadata["source_weight_bytes"])
        return source, compiled
    return source, as_tasks(source)
