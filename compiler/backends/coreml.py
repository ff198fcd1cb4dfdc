"""Core ML backend (`coreml/<apple device>`): no runtime here, so predicted, but compiled for real
where we can convert.

- `.pt2` sources are converted with coremltools (`ct.convert` of the ExportedProgram, ML Program,
  iOS 17) in a sandboxed child that loads the archive with torch hardened as in
  `compiler.backends.pt2_onnx` (vetted pickles, weights_only). The compiled graph is the Core ML
  program (MIL ops: fp16 casts inserted, BatchNorm folded, ...), read back by the Core ML frontend;
  each MIL op names its output after the FX node it came from (`conv2d_1_cast_fp16`), so
  `provenance.map_provenance` maps tasks to FX nodes by name, and each task takes the namespace
  and source location of its FX nodes (Core ML files keep no scopes; we keep them because we
  converted). The converted package is written as a zipped `.mlpackage` (one file, the upload
  format) for the Core ML exporter.
- `.mlpackage` / `.mlmodel` sources already are Core ML: one task per op; the file is the compiled file.
- Other formats: one task per source node (as for every predicted backend).
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from compiler.sandbox import DEFAULT_MEMORY_LIMIT

MIL_SUFFIXES = ("_cast_fp16", "_cast_fp32", "_to_fp16", "_to_fp32")
MIL_HELPERS = frozenset({"cast", "reshape", "transpose", "squeeze", "expand_dims", "identity"})
DEPLOYMENT_TARGET = "iOS17"


def pt2_to_coreml(pt2_path: str | os.PathLike[str], out_zip: str | os.PathLike[str], timeout_s: float = 600.0,
                  memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT,
                  input_shapes: dict[str, list[int]] | None = None) -> Path:
    """Convert a vetted .pt2 to a zipped ML Program package at `out_zip`. `input_shapes` fix the dims a
    `torch.export.Dim` left dynamic (the shapes the model is predicted at); static inputs ignore them."""
    from compiler.backends.pt2_onnx import convert_vetted

    convert_vetted("compiler.backends.coreml:_convert_child", pt2_path, out_zip, "Core ML", timeout_s,
                   memory_limit_bytes, options={"input_shapes": input_shapes} if input_shapes else None)
    return Path(out_zip)


def compile(src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
    from compiler.backends.base import as_tasks

    if source.format == "pt2":
        from compiler.errors import ModelRunError, SandboxError

        try:
            shapes = {n: list(source.values[n].shape or []) for n in source.inputs
                      if n in source.values and source.values[n].is_static}
            out = pt2_to_coreml(src, workdir / "coreml.mlpackage.zip", input_shapes=shapes)
        except (ModelRunError, SandboxError) as e:
            # An op coremltools cannot convert should not fail the whole analysis: predict on
            # the FX graph instead, and say so.
            compiled = as_tasks(source)
            compiled.metadata["note"] = f"not converted to Core ML ({e}); predicted with one task per FX node"
            compiled.metadata["fallback"] = f"not converted to Core ML ({e})"
            return compiled, None
        return _with_provenance(out, source), out
    if source.format == "coreml":
        compiled = as_tasks(source)
        per = "ML Program op" if source.metadata.get("model_type", "mlProgram") == "mlProgram" else "NeuralNetwork layer"
        compiled.metadata["note"] = f"Core ML model as uploaded: one task per {per}"
        return compiled, src
    return as_tasks(source), None


def _with_provenance(package_zip: Path, source: Graph) -> Graph:
    from compiler.backends.provenance import map_provenance
    from compiler.frontends import coreml as coreml_frontend

    compiled = coreml_frontend.load(package_zip)
    compiled.name = source.name
    map_provenance(source, compiled, MIL_SUFFIXES, helper_ops=MIL_HELPERS)
    by_id = {n.id: n for n in source.nodes}
    for task in compiled.nodes:
        srcs = [by_id[s] for s in task.source_nodes if s in by_id]
        located = [s for s in srcs if s.location is not None]
        if located:
            task.location = located[-1].location
    covered = {s for n in compiled.nodes for s in n.source_nodes}
    compiled.metadata.update({
        "converted_from": f"pt2 (coremltools, ML Program, {DEPLOYMENT_TARGET})",
        "source_nodes": str(len(source.nodes)), "source_nodes_covered": str(len(covered)),
        "source_nodes_eliminated": str(len(compiled.eliminated)),
        # Core ML exports compress this converted package, not the .pt2: its bytes beyond the weights are the
        # package's (the .pt2's own overhead, its graph and sample inputs, made MobileNetV2's int8 export
        # predicted 28-31% over the written file).
        "file_size_bytes": str(package_zip.stat().st_size), "source_weight_bytes": str(compiled.weight_bytes),
    })
    return compiled


def _convert_child(payload: dict[str, Any]) -> dict[str, Any]:
    import tempfile

    from compiler.backends.pt2_onnx import load_vetted_program, quiet_conversion
    from compiler.errors import ModelRunError

    with quiet_conversion("coremltools"):
        import coremltools as ct

        ep = load_vetted_program(payload["src"])
        ml = _convert_decomposing(ct, ep, _fixed_inputs(ct, ep, payload.get("input_shapes") or {}))
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp, "model.mlpackage")
        ml.save(os.fspath(pkg))
        base = Path(payload["out"])
        zip_package(pkg, base.with_name(base.name + ".tmp"))
        os.replace(base.with_name(base.name + ".tmp"), base)
    return {"coremltools": ct.__version__}


_UNSUPPORTED = re.compile(r"Unsupported fx node (\w+)")


def _fixed_inputs(ct: Any, ep: Any, shapes: dict[str, list[int]]) -> list[Any] | None:
    """coremltools' input types with the given shapes when a user input has a symbolic dim (a `torch.export.Dim`),
    else None (coremltools' own). Converted as is, a dynamic batch becomes a flexible-shape input and every op's
    shape stays symbolic: each task of the program was of unknown work. In the conversion child."""
    import numpy as np
    import torch

    user = ep.graph_signature.user_inputs
    metas = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder" and n.name in user}
    dynamic = any(isinstance(m, torch.Tensor) and any(not isinstance(d, int) for d in m.shape) for m in metas.values())
    if not dynamic or any(n not in shapes for n in metas):
        return None
    dtypes = {torch.float16: np.float16, torch.int32: np.int32, torch.int64: np.int32, torch.bool: bool}
    return [ct.TensorType(name=n, shape=tuple(shapes[n]),
                          dtype=dtypes.get(getattr(m, "dtype", None), np.float32)) for n, m in metas.items()]


_ALIASES = frozenset({"alias", "view_of"})


def _without_aliases(program: Any) -> Any:
    """The program with its aliases (`aten.alias`, decomposed `prims.view_of`) read through: a no-op view, left by
    a slice over a whole dim (GhostNet's `out[:, :self.out_chs]`), that coremltools' torch frontend lacks
    ('Unsupported fx node alias') and would otherwise fail the whole conversion. In place; in the child."""
    graph = program.graph
    for node in list(graph.nodes):
        name = getattr(node.target, "__name__", "").split(".")[0]
        if (node.op == "call_function" and name in _ALIASES and node.args
                and not any(u.op == "output" for u in node.users)):  # an output keeps its name in the signature
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    program.graph_module.recompile()
    return program


def _convert_decomposing(ct: Any, ep: Any, inputs: list[Any] | None = None, tries: int = 4) -> Any:
    """coremltools' conversion of the program; where its torch frontend lacks an op (`addcmul` in ConvNeXt-V2's
    GRN, `linalg_vector_norm`), that op is decomposed with torch's own decomposition into ops it has, and the
    conversion tried again, as a user would do by hand. In the conversion child."""
    from torch._decomp import get_decompositions

    from compiler.errors import ModelRunError

    table: dict[Any, Any] = {}
    err: Exception = RuntimeError("no conversion tried")
    for _ in range(tries):
        try:
            return ct.convert(_without_aliases(ep.run_decompositions(table)), convert_to="mlprogram", inputs=inputs,
                              minimum_deployment_target=getattr(ct.target, DEPLOYMENT_TARGET))
        except Exception as e:
            err = e
            m = _UNSUPPORTED.search(str(e))
            ops = [n.target for n in ep.graph.nodes if m and n.op == "call_function"
                   and getattr(n.target, "__name__", "").split(".")[0] == m.group(1)]
            more = get_decompositions(list({getattr(o, "overloadpacket", o) for o in ops}))
            if not more or set(more) <= set(table):
                break
            table.update(more)
    flow = sorted({n.target.__name__ for n in ep.graph.nodes if n.op == "call_function"
                   and getattr(n.target, "namespace", None) == "higher_order"})
    # coremltools' torch frontend has no control flow: its own message for torch.cond names no op at all
    # ("Only torch.Tensor attr handled yet")
    why = f"its torch frontend has no control flow (torch.{', torch.'.join(flow)}); " if flow else ""
    raise ModelRunError(f"coremltools could not convert the .pt2 model: {why}{str(err).strip()[:800]}") from None


def zip_package(package: Path, out_zip: Path) -> None:
    """Write an .mlpackage directory as one zip file, stored (not deflated): the converted package and every Core
    ML export are written this way, so the bytes a converted package holds beyond its weights are the bytes its
    exports will (a deflated package came out 2.5-3% smaller than its stored exports: fp16 weights compress)."""
    with zipfile.ZipFile(out_zip, "w", zipfile.ZIP_STORED) as z:
        for f in sorted(package.rglob("*")):
            if f.is_file():
                z.write(f, str(f.relative_to(package.parent)))
