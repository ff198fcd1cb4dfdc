"""ONNX files whose weights sit in external data files, made one file: by the CLI from the files beside the model,
by the server from the files uploaded with it.

torch.onnx.export(..., dynamo=True) writes `model.onnx` plus `model.onnx.data` by default, whatever the model's
size; the pipeline reads one file. `merge` is the one place that reads external data: it never builds a path from a
`location` written in the model (a hostile upload could name `../../etc/passwd`); the caller maps each plain file
name to a file it chose, and every tensor's offset and length must lie inside that file and match its dtype and
dims. The result is one file: ONNX's protobuf limit (2 GB) bounds it, far above the server's upload limit.
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from compiler.graph import ModelFormatError

PROTOBUF_LIMIT = 2**31 - 1
_MARK = b"\n\x08location"  # the key "location" of an external_data entry as protobuf writes it
_BITS = {"UINT4": 4, "INT4": 4, "FLOAT4E2M1": 4, "UINT2": 2, "INT2": 2, "FLOAT6E2M3": 6, "FLOAT6E3M2": 6}


class ExternalDataError(ModelFormatError):
    """A model and its external data that do not make one file; `code` and `status` are the API's answer."""

    def __init__(self, message: str, code: str = "bad_external_data", status: int = 400) -> None:
        super().__init__(message)
        self.code, self.status = code, status


def all_tensors(model: Any) -> Iterator[Any]:
    """Every TensorProto of the model that can hold weights: initializers (sparse ones too) and attribute tensors,
    in body graphs as well."""
    from compiler.frontends.onnx_scopes import all_bodies

    for g in [model.graph, *all_bodies(model.graph)]:
        yield from g.initializer
        for s in g.sparse_initializer:
            yield from (s.values, s.indices)
        for n in g.node:
            for a in n.attribute:
                if a.HasField("t"):
                    yield a.t
                yield from a.tensors


def external_tensors(model: Any) -> list[Any]:
    from onnx import TensorProto

    return [t for t in all_tensors(model) if t.data_location == TensorProto.EXTERNAL]


def _entries(t: Any) -> dict[str, str]:
    return {e.key: e.value for e in t.external_data}


def external_locations(path: str | os.PathLike[str]) -> list[str] | None:
    """The external data files the ONNX file at `path` names, or None when `path` is no ONNX file Edgescope can
    parse (the frontend then says why)."""
    import onnx

    try:
        model = onnx.load(os.fspath(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - not ONNX, or corrupt: not this module's error to give
        return None
    return list(dict.fromkeys(_entries(t).get("location", "") for t in external_tensors(model)))


def may_name_external_data(path: Path, chunk: int = 8 << 20) -> bool:
    """A cheap scan of the bytes (no protobuf parse): False means the file has no external data entry as protobuf
    writes one. True only means `merge` should look (the bytes may occur by chance)."""
    tail = b""
    with open(path, "rb") as f:
        while block := f.read(chunk):
            if _MARK in tail + block[: len(_MARK)] or _MARK in block:
                return True
            tail = block[-len(_MARK) + 1:]
    return False


def plain_name(name: str) -> bool:
    """A file name with no directory part: what an external data location and an uploaded data file must be."""
    bad = name in ("", ".", "..") or "/" in name or "\\" in name or ":" in name or len(name.encode()) > 255
    return not bad and all(c.isprintable() for c in name)


def _expected_bytes(t: Any) -> int | None:
    """The bytes a tensor of this dtype and dims takes, or None for a dtype without a fixed width (strings)."""
    from onnx import TensorProto, helper

    name = TensorProto.DataType.Name(t.data_type) if t.data_type in TensorProto.DataType.values() else ""
    bits = _BITS.get(name)
    if bits is None:
        try:
            bits = 8 * helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
        except Exception:  # noqa: BLE001 - STRING, UNDEFINED, a dtype this onnx does not know
            return None
    return math.ceil(math.prod(t.dims) * bits / 8)


def _span(t: Any, loc: str, file_size: int) -> tuple[int, int]:
    """(offset, length) of a tensor's bytes in its file, refused unless inside the file and of the tensor's size."""
    e, what = _entries(t), f"weight '{t.name or '(unnamed)'}'"
    try:
        offset = int(e.get("offset", "0"))
        length = int(e["length"]) if "length" in e else file_size - offset
    except ValueError:
        raise ExternalDataError(f"{what} has an offset or length that is not a whole number.",
                                "bad_data_offset") from None
    if offset < 0 or length < 0 or offset + length > file_size:
        raise ExternalDataError(f"{what} lies at bytes {offset}..{offset + length} of '{loc}', which has "
                                f"{file_size} bytes: is it the data file exported with this model?", "bad_data_offset")
    expected = _expected_bytes(t)
    if expected is not None and expected != length:
        raise ExternalDataError(f"{what} ({list(t.dims)}) takes {expected} bytes, but its external data entry says "
                                f"{length}.", "bad_data_offset")
    return offset, length


def _check_locations(model_name: str, tensors: list[Any], files: Mapping[str, Path], strict: bool) -> None:
    locations = list(dict.fromkeys(_entries(t).get("location", "") for t in tensors))
    for loc in locations:
        if not plain_name(loc):
            raise ExternalDataError(f"{model_name} names the external data file {loc!r}: only a plain file name "
                                    "beside the model is read (no folders, '..' or absolute paths).",
                                    "bad_data_location")
    missing = [loc for loc in locations if loc not in files]
    if missing:
        raise ExternalDataError(
            f"{model_name} keeps its weights in the external data file{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}, not given with it: upload {'them' if len(missing) > 1 else 'it'} "
            "with the model (the web form takes both; API: a 'data' part each) or put it beside the model for the "
            "edgescope command, under exactly that name; or export one file (torch.onnx.export(..., "
            "external_data=False)).", "missing_data_file")
    unused = [name for name in files if name not in locations]
    if strict and unused:
        said = f"names {', '.join(repr(x) for x in locations)}" if locations else "keeps all its weights inside"
        raise ExternalDataError(f"{model_name} {said}; {', '.join(repr(u) for u in unused)} "
                                f"{'is' if len(unused) == 1 else 'are'} not used by it. Send only the model's own "
                                "data files.", "unused_data_file")


def merge(model_path: Path, files: Mapping[str, Path], out: Path, model_name: str | None = None,
          strict: bool = True) -> int | None:
    """Write `model_path` with the weights its tensors keep in `files` (plain name -> file) inside, as one file at
    `out`; returns its size (None, nothing written, for a model without external data). `strict`: a file in `files`
    the model does not name is refused too."""
    import onnx

    name = model_name or model_path.name
    try:
        model = onnx.load(os.fspath(model_path), load_external_data=False)
    except Exception as e:  # DecodeError and friends
        raise ModelFormatError(f"the ONNX file is truncated or corrupt: {e}") from None
    tensors = external_tensors(model)
    _check_locations(name, tensors, files, strict)
    if not tensors:
        return None
    sizes = {loc: f.stat().st_size for loc, f in files.items()}
    spans = [_span(t, loc, sizes[loc]) for t in tensors for loc in [_entries(t)["location"]]]
    total = model.ByteSize() + sum(length for _, length in spans)
    if total >= PROTOBUF_LIMIT:  # also a tensor range named many times over: refused before a byte is read
        raise ExternalDataError(f"{name} with its weights inside would take {total} bytes, over the 2 GB that one "
                                "ONNX file can hold; Edgescope analyses ONNX models up to 2 GB.", "too_large", 413)
    handles = {loc: open(f, "rb") for loc, f in files.items()}
    try:
        for t, (offset, length) in zip(tensors, spans):
            fh = handles[_entries(t)["location"]]
            fh.seek(offset)
            t.raw_data = fh.read(length)
            t.data_location = onnx.TensorProto.DEFAULT
            del t.external_data[:]
    finally:
        for fh in handles.values():
            fh.close()
    out.write_bytes(model.SerializeToString())
    return out.stat().st_size


def merge_in_child(payload: dict[str, Any]) -> dict[str, Any]:
    """`merge` in a `compiler.sandbox` child (the server's uploads): refusals come back as data with their code."""
    try:
        size = merge(Path(payload["model"]), {k: Path(v) for k, v in payload["files"].items()}, Path(payload["out"]),
                     payload["model_name"])
    except ExternalDataError as e:
        return {"error": str(e), "code": e.code, "status": e.status}
    except ModelFormatError as e:
        return {"error": str(e), "code": "unsupported_format", "status": 415}
    return {"size": size}


def one_file(path: Path, workdir: Path) -> Path:
    """`path` itself, or, for an ONNX file with external data, a copy of the same name in `workdir` with the weights
    inside, read from the files beside it (followed if links: the user's own files). Refusals are ExternalDataError."""
    if path.suffix.lower() != ".onnx" or not may_name_external_data(path):
        return path
    locations = external_locations(path)
    if not locations:
        return path
    files = {loc: path.parent / loc for loc in locations if plain_name(loc) and (path.parent / loc).is_file()}
    out = workdir / path.name
    return out if merge(path, files, out, strict=False) is not None else path


def one_file_for_cli(path: Path) -> Path:
    """`one_file` into a temporary directory removed when the command ends."""
    if path.suffix.lower() != ".onnx":
        return path
    workdir = Path(tempfile.mkdtemp(prefix="edgescope-onefile-"))
    atexit.register(shutil.rmtree, workdir, True)
    return one_file(path, workdir)
