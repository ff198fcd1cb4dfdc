"""ONNX files whose weights sit in external data files beside them, made one file on the user's machine.

torch.onnx.export(..., dynamo=True) writes `model.onnx` plus `model.onnx.data` by default, whatever the model's
size; the pipeline reads one file (an upload is one file), so every dynamo export was refused. The CLI, which has
the directory, reads the data and writes one file (ONNX's 2 GB protobuf limit allows it up to that size); the
server, which gets one file, keeps refusing it with the sentence that says how to export one file.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

PROTOBUF_LIMIT = 2**31 - 1


def external_locations(path: str | os.PathLike[str]) -> list[str] | None:
    """The external data files the ONNX file at `path` names (relative to its directory), or None when `path` is no
    ONNX file Edgescope can parse (the frontend then says why)."""
    import onnx

    from compiler.frontends.onnx_scopes import all_bodies

    try:
        model = onnx.load(os.fspath(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - not ONNX, or corrupt: not this module's error to give
        return None
    graphs = [model.graph, *all_bodies(model.graph)]
    tensors = [t for g in graphs for t in g.initializer]
    tensors += [a.t for g in graphs for n in g.node for a in n.attribute if a.HasField("t")]
    out = []
    for t in tensors:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            loc = next((e.value for e in t.external_data if e.key == "location"), "")
            if loc not in out:
                out.append(loc)
    return out


def one_file(path: Path, workdir: Path) -> Path:
    """`path` itself, or, for an ONNX file with external data that is all present beside it and fits one file, a copy
    of the same name in `workdir` with the weights inside. Anything else is left for the frontend to refuse."""
    import onnx

    if path.suffix.lower() != ".onnx":
        return path
    locations = external_locations(path)
    if not locations:
        return path
    files = [path.parent / loc for loc in locations]
    if not all(loc and f.is_file() for loc, f in zip(locations, files)):
        return path
    if path.stat().st_size + sum(f.stat().st_size for f in files) >= PROTOBUF_LIMIT:
        return path
    model = onnx.load(os.fspath(path), load_external_data=True)
    out = workdir / path.name
    onnx.save(model, os.fspath(out), save_as_external_data=False)
    return out


def one_file_for_cli(path: Path) -> Path:
    """`one_file` into a temporary directory removed when the command ends."""
    if path.suffix.lower() != ".onnx":
        return path
    workdir = Path(tempfile.mkdtemp(prefix="edgescope-onefile-"))
    atexit.register(shutil.rmtree, workdir, True)
    return one_file(path, workdir)
