"""Model format registry: which formats we read, how to recognise them, which module loads them.

Detection is deterministic: each format module's `sniff(head, filename)` looks at the first
bytes (magic numbers / protobuf structure) and the file name; no trial parsing. A format whose
`module` is None is known but not readable yet, so its files get a precise "not supported yet".
To add a format: write `compiler/frontends/<name>.py` with `sniff` and `load`, then fill `module`.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from compiler.graph import Graph, ModelFormatError

HEAD_BYTES = 4096  # enough for every sniffer: magic numbers plus the first protobuf fields


@dataclass(frozen=True, slots=True)
class FormatSpec:
    name: str  # Graph.format and API `format` value
    label: str  # for messages
    extensions: tuple[str, ...]
    module: str | None  # dotted path of the frontend module; None = not implemented yet


FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec("onnx", "ONNX", (".onnx",), "compiler.frontends.onnx"),
    FormatSpec("tflite", "TensorFlow Lite", (".tflite",), "compiler.frontends.tflite"),
    FormatSpec("coreml", "Core ML", (".mlmodel", ".mlpackage"), "compiler.frontends.coreml"),
    FormatSpec("pt2", "PyTorch ExportedProgram", (".pt2",), "compiler.frontends.pt2"),
)


def supported() -> list[FormatSpec]:
    return [f for f in FORMATS if f.module]


def supported_text() -> str:
    return ", ".join(f"{f.label} ({', '.join(f.extensions)})" for f in supported())


def _spec(name: str) -> FormatSpec:
    for f in FORMATS:
        if f.name == name:
            return f
    raise ModelFormatError(f"unknown format '{name}'; supported formats: {supported_text()}")


def _module(spec: FormatSpec) -> ModuleType:
    if spec.module is None:
        raise ModelFormatError(f"{spec.label} models are not supported yet; supported formats: {supported_text()}")
    return importlib.import_module(spec.module)


def detect(path: str | os.PathLike[str], override: str | None = None) -> str:
    """Name of the format of the file at `path`; `override` (user's choice) wins if it is readable."""
    if override:
        spec = _spec(override.lower())
        _module(spec)
        return spec.name
    p = Path(path)
    with open(p, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    if not head:
        raise ModelFormatError("the file is empty")
    # ONNX's sniffer is structural (any protobuf starting like a ModelProto), so the sniffers that
    # look for magic bytes go first: an .mlmodel also starts with field 1 varint + field 2 bytes.
    for spec in sorted(supported(), key=lambda f: f.name == "onnx"):
        if _module(spec).sniff(head, p.name):
            return spec.name
    ext = p.suffix.lower()
    for spec in FORMATS:
        if ext in spec.extensions:
            if spec.module is None:
                _module(spec)  # raises "not supported yet"
            raise ModelFormatError(f"the file is named {ext} but is not a valid {spec.label} model "
                                   f"(its first bytes do not match the format)")
    raise ModelFormatError(f"not a model file Edgescope can read; supported formats: {supported_text()}")


def load(path: str | os.PathLike[str], format: str | None = None) -> Graph:
    """Detect (or take `format`) and load the file into a Graph. Raises ModelFormatError."""
    name = detect(path, format)
    return _module(_spec(name)).load(path)


def load_isolated(path: str | os.PathLike[str], format: str | None = None, timeout_s: float = 600.0,
                  memory_limit_bytes: int | None = None) -> Graph:
    """`load` in a sandboxed child process (`compiler.sandbox`): a hostile file (zip bomb, parser crash,
    runaway memory) costs the child, never the caller, which in the embedded default is the web process."""
    from compiler.sandbox import DEFAULT_MEMORY_LIMIT, Limits, run

    limits = Limits(timeout_s=timeout_s, memory_limit_bytes=memory_limit_bytes or DEFAULT_MEMORY_LIMIT,
                    what="reading the model")
    data = run("compiler.frontends:load_child", {"path": str(Path(path).resolve()), "format": format}, limits)
    return Graph.from_json(data)


def load_child(payload: dict[str, str | None]) -> dict[str, object]:
    """Child side of `load_isolated`: the Graph as JSON."""
    return load(str(payload["path"]), payload.get("format")).to_json()
