"""Backends by target: which compiles a model into hardware tasks and which can measure them here.

A target is `<backend>/<device profile>` (`ort-cpu/host`, `coreml/apple-a17`). A backend whose
runtime runs on this machine compiles with the real runtime and is profiled; the others hand the
simulator a task graph (their own compiler's where we have it, else one task per source node).
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class OrtCpu:
    name: str = "ort-cpu"
    measures: bool = True

    def compile(self, src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
        from . import ort

        if source.format == "pt2":  # converted to ONNX first, tasks mapped back to the .pt2 nodes
            from . import pt2_onnx

            return pt2_onnx.compile_for_ort(src, workdir, source)
        out = workdir / "ort-cpu.onnx"
        return ort.compile(src, out, source), out

    def profile(self, compiled_path: Path, settings: object) -> Profile:
        from . import ort

        return ort.profile(compiled_path, settings)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Predicted:
    """A backend with no runtime here: the simulator predicts it on one task per source node."""

    name: str
    measures: bool = False

    def compile(self, src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
        return as_tasks(source), None

    def profile(self, compiled_path: Path, settings: object) -> Profile:
        raise RuntimeError(f"{self.name} has no runtime on this machine")


# Backend name (the part of a target before "/") -> implementation. Unlisted backends are predicted.
from compiler.backends.coreml import CoreMLBackend  # noqa: E402  (after Backend/as_tasks, which they use)
from compiler.backends.litert import LiteRtCpu  # noqa: E402

BACKENDS: dict[str, Backend] = {"ort-cpu": OrtCpu(), "litert-cpu": LiteRtCpu(), "coreml": CoreMLBackend()}


def for_target(target: str) -> Backend:
    name = target.split("/", 1)[0]
    return BACKENDS.get(name) or Predicted(name)


def compile_for_target(src: Path, target: str, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
    """Compile `source` (loaded from `src`) for `target`; the one entry the pipeline and `predict` use.

    Records the file's size and weight bytes on both graphs: the simulator predicts file sizes from
    the bytes a model file holds beyond its weights."""
    source.metadata.setdefault("file_size_bytes", str(Path(src).stat().st_size))
    source.metadata.setdefault("source_weight_bytes", str(source.weight_bytes))
    compiled, compiled_path = for_target(target).compile(Path(src), Path(workdir), source)
    for key in ("file_size_bytes", "source_weight_bytes"):
        compiled.metadata.setdefault(key, source.metadata[key])
    return compiled, compiled_path
