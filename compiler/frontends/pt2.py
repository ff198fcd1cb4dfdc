"""PyTorch `.pt2` frontend (torch.export ExportedProgram archives), without unpickling anything.

Safety: `torch.export.load` unpickles weights and constants with `weights_only=False`, which can
run arbitrary code. This frontend never calls it and never unpickles: it reads the archive as a
vetted zip (`compiler.frontends.archive`), takes the graph from the serialized program JSON
(`<archive>/models/<name>.json`) and weight statistics from the raw tensor bytes
(`data/weights/*` with `use_pickle: false`). Before accepting the file it still vets every
member torch *would* unpickle (`compiler.frontends.pickle_scan`: only tensor-rebuilding globals
allowed), so a hostile archive is refused at upload, and the ONNX conversion
(`compiler.backends.pt2_onnx`) can load it in a sandboxed child with torch forced to
`weights_only=True` on top.

Mapping: every `call_function` node becomes a Node (op_type = operator without `torch.ops.`,
`aten.conv2d`, overload in `attributes["overload"]`; id = the FX node name, unique). Tensor
arguments are inputs; other arguments are attributes. Parameters, buffers and constants are
named by their state-dict key (`blocks.0.conv.weight`, as the ONNX exporter names them). The
namespace comes from `nn_module_stack`, one part per module with its qualified name and class
(`blocks/blocks.0 (Block)/blocks.0.conv (Conv2d)`; graph groups are labelled by these parts), the
location from `stack_trace`:
the innermost frame outside torch, with its file relative to the exported sources when the
archive carries them (`extra/edgescope_sources/`, see `compiler.sources`).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from compiler.frontends.archive import ZIP_MAGIC, SafeZip, check_member_name
from compiler.frontends.pickle_scan import MAX_PICKLE_BYTES, check_member
from compiler.frontends.weight_stream import CHUNK_BYTES, skip, stream_stats
from compiler.graph import Dim, Graph, ModelFormatError, Node, SourceLocation, Value, WeightStats

SOURCES_DIR = "extra/edgescope_sources/"  # source files saved by `edgescope export-pt2`
SOURCES_MANIFEST = "extra/edgescope_sources.json"  # {"root": <abs dir at export>, "files": [...]}
_MARKERS = (b"archive_format", b".data/version", b"/data/weights/", b"/models/", b"/data/sample_inputs/",
            b"/data/constants/")
# torch._export.serde.schema.ScalarType -> (normalised dtype, numpy dtype or None)
_SCALAR: dict[int, tuple[str, str | None]] = {
    1: ("uint8", "u1"), 2: ("int8", "i1"), 3: ("int16", "<i2"), 4: ("int32", "<i4"), 5: ("int64", "<i8"),
    6: ("float16", "<f2"), 7: ("float32", "<f4"), 8: ("float64", "<f8"), 9: ("complex32", None),
    10: ("complex64", "<c8"), 11: ("complex128", "<c16"), 12: ("bool", "u1"), 13: ("bfloat16", None),
    28: ("uint16", "<u2"), 29: ("float8e4m3fn", None), 30: ("float8e5m2", None), 34: ("uint32", "<u4"),
    35: ("uint64", "<u8"),
}
TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>.*)$')


# -- sniffing --------------------------------------------------------------------------------

def sniff(head: bytes, filename: str) -> bool:
    """A zip whose first entries carry torch.export archive names (or a zip named `.pt2`)."""
    if not head.startswith(ZIP_MAGIC):
        return False
    return filename.lower().endswith(".pt2") or any(m in head for m in _MARKERS)


# -- loading -----------------------------------------------------------------------------------

class Pt2Archive:
    """The vetted members of a .pt2: program JSON, weight configs and raw bytes, sources."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.zip = SafeZip(path, label=".pt2 archive")
        names = self.zip.names()
        fmt = [n for n in names if n.rsplit("/", 1)[-1] == "archive_format" and n.count("/") <= 1]
        if not fmt:
            raise ModelFormatError("the .pt2 file is not a torch.export archive (no archive_format entry); "
                                   "save it with torch.export.save")
        self.prefix = fmt[0][: -len("archive_format")]
        models = sorted(n for n in names if n.startswith(self.prefix + "models/") and n.endswith(".json"))
        if not models:
            raise ModelFormatError("the .pt2 archive holds no serialized program (models/*.json); it may be an "
                                   "AOTInductor package, which Edgescope does not read")
        self.model_name = "model" if f"{self.prefix}models/model.json" in models else models[0].rsplit("/", 1)[-1][:-5]

    def read(self, rel: str) -> bytes:
        return self.zip.read(self.prefix + rel)

    def has(self, rel: str) -> bool:
        return self.prefix + rel in self.zip.infos

    def rel_names(self) -> list[str]:
        return [n[len(self.prefix):] for n in self.zip.names() if n.startswith(self.prefix)]

    def json(self, rel: str) -> Any:
        try:
            return json.loads(self.read(rel))
        except ValueError as e:
            raise ModelFormatError(f"the .pt2 archive's {rel} is not valid JSON ({e})") from None

    def config(self, kind: str) -> dict[str, Any]:
        rel = f"data/{kind}/{self.model_name}_{kind}_config.json"
        return self.json(rel).get("config", {}) if self.has(rel) else {}

    def vet_pickles(self) -> None:
        """Every member torch.export.load could unpickle must pass `pickle_scan` (see module doc). A member is
        skipped as raw tensor bytes only when no config entry, of weights or constants, loads it as a
        pickle: one entry marking a file raw does not exempt it from another that pickles it."""
        entries = [(f"data/{kind}/{c.get('path_name', '')}", bool(c.get("use_pickle")))
                   for kind in ("weights", "constants") for c in self._entries(kind)]
        pickled = {_normal(rel) for rel, use_pickle in entries if use_pickle}
        raw = {_normal(rel) for rel, use_pickle in entries if not use_pickle} - pickled
        for rel in self.rel_names():
            if (rel in raw or rel.endswith(".json") or rel.startswith("extra/")
                    or rel in ("archive_format", "archive_version", "byteorder", ".data/version",
                               ".data/serialization_id", "version")):
                continue
            size = self.zip.infos[self.prefix + rel].file_size
            if size > MAX_PICKLE_BYTES:
                raise ModelFormatError(f"the .pt2 archive's {rel} would be unpickled but is {size} bytes, too large "
                                       "to vet; refusing it")
            check_member(rel, self.read(rel), "the .pt2 archive")

    def _entries(self, kind: str) -> list[dict[str, Any]]:
        cfg = self.config(kind)
        if not isinstance(cfg, dict):
            raise ModelFormatError(f"the .pt2 archive's {kind} config is malformed")
        return [c for c in cfg.values() if isinstance(c, dict)]

    def close(self) -> None:
        self.zip.close()


def _normal(rel: str) -> str:
    """A member name as the archive's vetted names are written (`data/weights/./w` -> `data/weights/w`)."""
    try:
        return check_member_name(rel, ".pt2 config path")
    except ModelFormatError:
        return rel  # never matches a vetted name, so it is not exempted from vetting


def load(path: str | os.PathLike[str]) -> Graph:
    path = Path(path)
    arc = Pt2Archive(path)
    try:
        arc.vet_pickles()
        program = arc.json(f"models/{arc.model_name}.json")
        try:
            return _to_graph(arc, program, path.stem)
        except ModelFormatError:
            raise
        except Exception as e:  # any field missing or of the wrong type: the JSON is not torch's
            raise ModelFormatError(f"the .pt2 program JSON is malformed ({type(e).__name__}: {e})") from None
    finally:
        arc.close()


def _dims(meta: dict[str, Any]) -> list[Dim]:
    out: list[Dim] = []
    for s in meta.get("sizes", []):
        if "as_int" in s:
            out.append(int(s["as_int"]))
        else:
            expr = s.get("as_expr", {})
            out.append(str(expr.get("expr_str", "?")) if isinstance(expr, dict) else "?")
    return out


def _tensor_value(name: str, meta: dict[str, Any]) -> Value:
    return Value(name=name, shape=_dims(meta), dtype=_SCALAR.get(int(meta.get("dtype", 0)), ("unknown", None))[0])


def _weight(arc: Pt2Archive, cfg: dict[str, Any], kind: str) -> WeightStats:
    meta = cfg.get("tensor_meta", {})
    dtype, np_dtype = _SCALAR.get(int(meta.get("dtype", 0)), ("unknown", None))
    shape = _dims(meta)
    n = math.prod(d for d in shape if isinstance(d, int)) if shape else 1
    rel = f"data/{kind}/{cfg.get('path_name', '')}"
    if cfg.get("use_pickle") or not arc.has(rel):
        return WeightStats(elements=n, bytes=0, min=0.0, max=0.0, sparsity=0.0)  # never unpickled here
    size = arc.zip.info(arc.prefix + rel).file_size
    off = int(meta.get("storage_offset", {}).get("as_int", 0) or 0)
    if np_dtype and size >= (off + n) * np.dtype(np_dtype).itemsize:
        # Streamed: a weight as large as the upload limit never sits whole in memory.
        chunks = skip(arc.zip.chunks(arc.prefix + rel, CHUNK_BYTES), off * np.dtype(np_dtype).itemsize)
        return stream_stats(chunks, np_dtype, n, dtype)
    return WeightStats(elements=n, bytes=size, min=0.0, max=0.0, sparsity=0.0)


def _arg_tensors(arg: dict[str, Any]) -> list[str] | None:
    """Tensor names of an Argument, or None when it is not a tensor argument."""
    if "as_tensor" in arg:
        return [arg["as_tensor"]["name"]]
    if "as_tensors" in arg:
        return [t["name"] for t in arg["as_tensors"]]
    if "as_optional_tensors" in arg:
        return [t.get("as_tensor", {}).get("name", "") for t in arg["as_optional_tensors"]]
    if "as_optional_tensor" in arg:
        return [arg["as_optional_tensor"].get("as_tensor", {}).get("name", "")]
    return None


def _arg_literal(arg: dict[str, Any]) -> Any:
    kind, val = next(iter(arg.items())) if arg else ("as_none", None)
    if kind in ("as_int", "as_float", "as_bool", "as_string", "as_ints", "as_floats", "as_bools", "as_strings"):
        return val if not isinstance(val, float) or math.isfinite(val) else str(val)
    if kind in ("as_scalar_type",):
        return _SCALAR.get(int(val), (str(val), None))[0]
    if kind in ("as_sym_int", "as_sym_float", "as_sym_bool"):
        return val.get("as_name") or val.get("as_int") or str(val) if isinstance(val, dict) else val
    if kind == "as_device":
        return val.get("type") if isinstance(val, dict) else str(val)
    if kind == "as_none":
        return None
    return str(val)[:200]


def _to_graph(arc: Pt2Archive, program: dict[str, Any], fallback: str) -> Graph:
    gm = program["graph_module"]
    g, sig = gm["graph"], gm["signature"]
    weights_cfg, consts_cfg = arc.config("weights"), arc.config("constants")
    manifest = arc.json(SOURCES_MANIFEST) if arc.has(SOURCES_MANIFEST) else {}

    # Placeholders of parameters/buffers/constants -> their state-dict key.
    rename: dict[str, str] = {}
    state: list[str] = []  # state-dict keys of parameters, buffers and constants
    user_inputs: list[str] = []
    for spec in sig["input_specs"]:
        kind, body = next(iter(spec.items()))
        if kind == "user_input":
            names = _arg_tensors(body["arg"]) or []
            user_inputs += [n for n in names if n]
        elif kind in ("parameter", "buffer", "tensor_constant"):
            key = body.get("parameter_name") or body.get("buffer_name") or body.get("tensor_constant_name")
            rename[body["arg"]["name"]] = key
            state.append(key)
    outputs: list[str] = []
    for spec in sig["output_specs"]:
        kind, body = next(iter(spec.items()))
        if kind == "user_output":
            outputs += [n for n in (_arg_tensors(body["arg"]) or []) if n]

    def r(name: str) -> str:
        return rename.get(name, name)

    values: dict[str, Value] = {}
    for name, meta in g["tensor_values"].items():
        values[r(name)] = _tensor_value(r(name), meta)
    for key in state:
        v = values.get(key) or Value(name=key, shape=None, dtype="unknown")
        if key in weights_cfg:
            v.weight = _weight(arc, weights_cfg[key], "weights")
        elif key in consts_cfg:
            v.weight = _weight(arc, consts_cfg[key], "constants")
        values[key] = v

    nodes: list[Node] = []
    for fx in g["nodes"]:
        target = str(fx["target"])
        op = target.removeprefix("torch.ops.")
        op_type, _, overload = op.rpartition(".") if op.count(".") >= 2 else (op, "", "")
        inputs: list[str] = []
        attrs: dict[str, Any] = {"overload": overload} if overload and overload != "default" else {}
        for a in fx["inputs"]:
            tensors = _arg_tensors(a["arg"])
            if tensors is not None:
                inputs += [r(t) for t in tensors]
            else:
                attrs[a["name"]] = _arg_literal(a["arg"])
        outs: list[str] = []
        for o in fx["outputs"]:
            outs += [r(t) for t in (_arg_tensors(o) or [])]
        meta = fx.get("metadata", {})
        nodes.append(Node(
            id=fx.get("name") or (outs[0] if outs else f"{op_type}_{len(nodes)}"), name=fx.get("name", ""),
            op_type=op_type, namespace=namespace_from_stack(meta.get("nn_module_stack", "")),
            inputs=inputs, outputs=outs, attributes=attrs,
            location=location_from_trace(meta.get("stack_trace", ""), manifest.get("root", "")),
        ))
    for n in nodes:
        for v in n.inputs + n.outputs:
            if v and v not in values:
                values[v] = Value(name=v, shape=None, dtype="unknown")
    metadata = {"torch_version": str(program.get("torch_version", "")),
                "schema_version": json.dumps(program.get("schema_version", "")),
                "sources": str(len(manifest.get("files", [])))}
    return Graph(name=fallback, format="pt2", nodes=nodes, values=values, inputs=user_inputs, outputs=outputs,
                 metadata=metadata)


# Container modules only hold others: their class says nothing a group label needs.
_CONTAINERS = frozenset({"torch.nn.modules.container.Sequential", "torch.nn.modules.container.ModuleList",
                         "torch.nn.modules.container.ModuleDict"})


def namespace_from_stack(stack: str) -> str:
    """`L__self__,,m.Net;L__self__blocks,blocks,torch.nn.modules.container.Sequential;L__self__blocks.0,blocks.0,
    m.Block;...conv,blocks.0.conv,torch.nn.modules.conv.Conv2d` -> `blocks/blocks.0 (Block)/blocks.0.conv (Conv2d)`:
    one part per module below the root, its qualified name and, but for containers, its class. Entries are
    `key,path,class`; the path is the qualified module name (no commas in it)."""
    parts = []
    for entry in stack.split(";") if stack else []:
        fields = entry.split(",")
        if len(fields) >= 3 and fields[1]:
            cls = ",".join(fields[2:])
            parts.append(fields[1] if cls in _CONTAINERS or not cls else f"{fields[1]} ({cls.rsplit('.', 1)[-1]})")
    return "/".join(parts)


def module_path(part: str) -> str:
    """A namespace part's qualified module name (`blocks.0 (Block)` -> `blocks.0`)."""
    return part.split(" (", 1)[0]


def location_from_trace(trace: str, root: str = "") -> SourceLocation | None:
    """Innermost frame outside torch (the user's line that produced the op). With `root` (the
    directory `edgescope export-pt2` saved sources from), files under it become relative paths."""
    frames: list[tuple[str, int, str]] = []
    for line in trace.splitlines():
        m = TRACEBACK_FRAME.match(line)
        if m:
            frames.append((m["file"], int(m["line"]), ""))
        elif frames and not frames[-1][2]:
            frames[-1] = (frames[-1][0], frames[-1][1], line.strip())
    user = [f for f in frames if "/torch/" not in f[0].replace("\\", "/")]
    if not user:
        return None
    file, line_no, code = user[-1]
    if root and file.startswith(root.rstrip("/") + "/"):
        file = file[len(root.rstrip("/")) + 1:]
    return SourceLocation(file=file, line=line_no, code=code)
