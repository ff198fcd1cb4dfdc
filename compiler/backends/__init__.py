"""Backends by target: which compiles a model into hardware tasks and which can measure them here.

A target is `<backend>/<device profile>` (`ort-cpu/host`, `coreml/apple-a17`). A backend whose
runtime runs on this machine compiles with the real runtime and is profiled; the others hand the
simulator a task graph (their own compiler's where we have it, else one task per source node).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compiler.backends.base import Backend, as_tasks
from compiler.graph import Graph
from compiler.profile import Profile

__all__ = ["BACKENDS", "Backend", "as_tasks", "compile_for_target", "for_target"]


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
    """A backend with no runtime here: the simulator predicts it on one task per source node. A `.pt2` is first
    converted to the format the target's runtime loads (`runs`: "onnx" or "tflite"), as the device would be handed
    it, and predicted on that file's operators mapped back to the FX nodes."""

    name: str
    measures: bool = False
    runs: str = ""

    def compile(self, src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
        if source.format == "pt2" and self.runs in ("onnx", "tflite"):
            from . import pt2_predicted

            return pt2_predicted.converted_tasks(src, workdir, source, self.runs), None
        return as_tasks(source), None

    def profile(self, compiled_path: Path, settings: object) -> Profile:
        raise RuntimeError(f"{self.name} has no runtime on this machine")


@dataclass(frozen=True)
class LiteRtCpu:
    name: str = "litert-cpu"
    measures: bool = True

    def compile(self, src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
        if source.format == "pt2":  # converted by litert-torch, tasks mapped back to the FX nodes
            from . import pt2_tflite

            return pt2_tflite.compile_for_litert(src, workdir, source)
        from . import litert

        out = workdir / "litert-cpu.tflite"
        compiled = litert.compile(src, out, source)
        return compiled, (None if compiled.metadata.get("litert_runnable") == "false" else out)

    def profile(self, compiled_path: Path, settings: object) -> Profile:
        from . import litert

        return litert.profile(compiled_path, settings)  # type: ignore[arg-type]


@dataclass(frozen=True)
class CoreML:
    """Compiled here where we can convert, predicted by the simulator: no Core ML runtime on this server."""

    name: str = "coreml"
    measures: bool = False

    def compile(self, src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
        from . import coreml

        return coreml.compile(src, workdir, source)

    def profile(self, compiled_path: Path, settings: object) -> Profile:
        raise RuntimeError("Core ML does not run on this server; its figures are predicted")


# Backend name (the part of a target before "/") -> implementation. Unlisted backends are predicted.
BACKENDS: dict[str, Backend] = {"ort-cpu": OrtCpu(), "litert-cpu": LiteRtCpu(), "coreml": CoreML()}


def for_target(target: str) -> Backend:
    from compiler.vocabulary.targets import get_target

    name = target.split("/", 1)[0]
    return BACKENDS.get(name) or Predicted(name, runs=get_target(target).export)


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
