"""`.pt2` -> `.tflite` with LiteRT's torch converter (`litert-torch`, no TensorFlow), so LiteRT targets
(`litert-cpu/host` measured, `litert/pixel-8` predicted) take PyTorch uploads.

litert-torch pins packages our main venv cannot share (xdsl: typing-extensions<4.13), so it lives in
its own venv (`make converter`, `requirements-litert-torch.lock`) and the conversion child runs with
that interpreter (`sandbox.run(..., python=...)`); the child imports only numpy and the stdlib from
`compiler`. `converter_python()` finds it: `EDGESCOPE_LITERT_TORCH_PYTHON`, else the checkout's
`.venv-litert-torch/bin/python`. Without it, or when litert-torch cannot convert an op, the target
is predicted on the FX graph and its note says why; never an error.

Safety: as for ONNX (`pt2_onnx.to_onnx`): the archive is vetted here before the child starts, and the
child loads it with `load_vetted_program` (vetted again, torch hardened to weights_only).

Provenance: litert-torch names each TFLite tensor after the `nn_module_stack` of the FX node that
produced it (`pkg.Net/torch.nn.modules.conv.Conv2d_stem;3`, fused ops join names with `;`). The
child also tags the FX node name into that location (`.../Conv2d_stem/#conv2d;3`; litert-torch
traces each lowered node back to the original node through `from_node`, and `ep.module()` keeps
the .pt2 node names). The last tensor a principal op writes for a node stands for that node's
result: renamed to the .pt2 value name, `provenance.map_provenance` then maps tasks as it does for
ORT (heads by value, groups, layout helpers), and each task takes its FX nodes' namespace and
source location. Ops lowered without a node name (LayerNorm's MEAN/RSQRT/...) are credited by their
module. The tags stay in the .tflite's tensor names (`.../#conv2d;3`), which names the FX node there too.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from compiler.sandbox import DEFAULT_MEMORY_LIMIT

ENV = "EDGESCOPE_LITERT_TORCH_PYTHON"  # Settings.litert_torch_python
DEFAULT_VENV = Path(__file__).resolve().parents[2] / ".venv-litert-torch"
FX_TAG = "#"  # "@" is cut by the TFLite exporter (it reads `name@function` locations)
_TAG = re.compile(re.escape(FX_TAG) + r"([^;/]+)")
# TFLite ops that only move data between layouts; credited to the op they serve.
LAYOUT_OPS = frozenset({"TRANSPOSE", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CAST", "DEQUANTIZE", "PAD"})


def converter_python() -> Path | None:
    """The litert-torch venv's interpreter, or None when it is not installed."""
    configured = os.environ.get(ENV, "")
    python = Path(configured).expanduser() if configured else DEFAULT_VENV / "bin" / "python"
    return python if python.is_file() and os.access(python, os.X_OK) else None


def to_tflite(pt2_path: str | os.PathLike[str], out_path: str | os.PathLike[str], python: Path,
              timeout_s: float = 600.0, memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT) -> dict[str, Any]:
    """Convert a vetted .pt2 to `out_path` in a sandboxed child of the converter's interpreter."""
    from compiler.backends.pt2_onnx import convert_vetted

    return convert_vetted("compiler.backends.pt2_tflite:_convert_child", pt2_path, out_path, "TFLite", timeout_s,
                          memory_limit_bytes, python=os.fspath(python))


def compile_for_litert(src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
    """What `LiteRtCpu.compile` does for a `.pt2` source: convert, check LiteRT loads the file, map
    its operators to the FX nodes. Returns no file when the model was not converted."""
    from compiler.backends import litert
    from compiler.backends.base import as_tasks
    from compiler.concrete import fill_by_name
    from compiler.errors import ModelRunError, SandboxError
    from compiler.frontends import tflite

    python = converter_python()
    if python is None:
        return _predicted(source, f"the litert-torch converter is not installed (run `make converter` or set {ENV})")
    out = workdir / "litert-cpu.tflite"
    try:
        info = to_tflite(src, out, python)
        shapes: dict[str, tuple[list[int], str]] = {}  # a dynamic batch's tensors, as LiteRT prepares them
        checked = litert.compile(out, out, as_tasks(source), shapes_out=shapes)  # LiteRT must load what it wrote
    except (ModelRunError, SandboxError) as e:
        return _predicted(source, f"not converted to TFLite ({e})")
    if checked.metadata.get("litert_runnable") == "false":
        return _predicted(source, f"LiteRT cannot run the converted file ({checked.metadata['note']})")
    compiled = tflite.load(out)
    fill_by_name(compiled, shapes)
    compiled.name = source.name
    mapped = map_to_fx(source, compiled)
    compiled.metadata.update({
        "target": litert.TARGET, "runtime": checked.metadata["runtime"],
        "converted_from": f"pt2 (litert-torch {info['litert_torch']}, torch {info['torch']})",
        "source_nodes": str(len(source.nodes)), "source_nodes_covered": str(mapped["covered"]),
        "source_nodes_eliminated": str(len(compiled.eliminated)),
        "tasks_mapped": str(mapped["tasks"]), "tasks": str(len(compiled.nodes)),
        "note": "one task per TFLite operator; the XNNPACK delegate runs supported ops as fused partitions",
        # LiteRT exports quantize this converted file, not the .pt2: its bytes beyond the weights are the
        # file's (the .pt2's own overhead made MobileNetV2's int8-static predicted 27% over the written file).
        "file_size_bytes": str(out.stat().st_size), "source_weight_bytes": str(compiled.weight_bytes),
    })
    return compiled, out


def _predicted(source: Graph, why: str) -> tuple[Graph, None]:
    from compiler.backends.base import as_tasks

    compiled = as_tasks(source)
    compiled.metadata["note"] = f"{why}; predicted with one task per FX node, not measured"
    compiled.metadata["fallback"] = why
    return compiled, None


def fx_names(tensor_name: str) -> list[str]:
    """FX node names tagged into a TFLite tensor name, innermost location first."""
    return _TAG.findall(tensor_name)


def map_to_fx(source: Graph, compiled: Graph) -> dict[str, int]:
    """Rename the TFLite values that stand for FX results to the .pt2 value names, then map
    provenance as for ORT; each task takes the location of its last located FX node. In place."""
    from compiler.backends.provenance import map_provenance

    s_nodes = {n.id: n for n in source.nodes}
    order = {n.id: i for i, n in enumerate(source.nodes)}
    producer = compiled.producers()
    by_id = {n.id: n for n in compiled.nodes}
    # A tensor stands for the latest (in source order) FX node tagged in it: a fused op's output
    # carries all its nodes' names (and sometimes a stray earlier one). An FX node's result is the
    # last tensor standing for it that a principal op writes; a layout op's (the Transpose to NHWC
    # or the Pad split off a Conv) only when no principal op carries the node at all (a permute).
    tagged: dict[str, list[str]] = {}
    stands: dict[str, str] = {}
    for c in compiled.nodes:
        for o in c.outputs:
            tags = [n for n in fx_names(o) if n in s_nodes and s_nodes[n].outputs]
            for n in tags:
                tagged.setdefault(n, []).append(o)
            if tags:
                stands[o] = max(tags, key=order.__getitem__)

    def principal(t: str) -> bool:
        return by_id[producer[t]].op_type not in LAYOUT_OPS

    result_of: dict[str, str] = {}
    for name, tensors in tagged.items():
        own = [t for t in tensors if stands[t] == name]
        mains = [t for t in own if principal(t)]
        if mains:
            result_of[name] = mains[-1]
        elif own and not any(principal(t) for t in tensors):
            result_of[name] = own[-1]
    # Graph inputs and outputs are renamed by the converter (serving_default_args_0): by position.
    pairs: list[tuple[str, str]] = []
    if len(compiled.inputs) == len(source.inputs):
        pairs += zip(compiled.inputs, source.inputs)
    if len(compiled.outputs) == len(source.outputs):
        pairs += zip(compiled.outputs, source.outputs)
    pairs += [(t, s_nodes[n].outputs[0]) for n, t in result_of.items()]
    names: dict[str, str] = {}
    for tensor, value in pairs:  # first claim wins; two tensors never merge into one value
        if tensor not in names and value not in compiled.values and value not in names.values():
            names[tensor] = value
    _rename_values(compiled, names)
    scopes = {c.id: _scope(c.outputs[0] if c.outputs else "", {n.namespace for n in source.nodes}) for c in compiled.nodes}
    map_provenance(source, compiled, helper_ops=LAYOUT_OPS)
    _credit_untagged(source, compiled, scopes)
    for task in compiled.nodes:
        located = [s_nodes[s] for s in task.source_nodes if s_nodes[s].location is not None]
        if located:
            task.location = located[-1].location
    covered = {s for n in compiled.nodes for s in n.source_nodes}
    return {"covered": len(covered), "tasks": sum(1 for n in compiled.nodes if n.source_nodes)}


def _scope(tensor_name: str, namespaces: set[str]) -> str | None:
    """The .pt2 namespace of a tensor's module hierarchy (`pkg.Net/...Sequential_blocks/...Block_0;`
    -> `blocks/blocks.0 (Block)`): one segment per module below the root, each `<type>_<attribute name>`."""
    from compiler.frontends.pt2 import module_path

    segs = [p for p in tensor_name.split(";")[0].split("/") if p and not p.startswith(FX_TAG)][1:]
    for ns in namespaces:
        parts = ns.split("/") if ns else []
        if len(parts) == len(segs) and all(seg.endswith("_" + module_path(part).rsplit(".", 1)[-1])
                                           for seg, part in zip(segs, parts)):
            return ns
    return None


def _credit_untagged(source: Graph, compiled: Graph, scopes: dict[str, str | None]) -> None:
    """Ops lowered without an FX node name (LayerNorm's MEAN/RSQRT/... decomposition) still carry
    their module: credit them with the FX nodes of that module that a neighbouring task in the same
    module implements (the decomposition feeds or follows it), else the module's only FX node."""
    in_scope: dict[str, set[str]] = {}
    for n in source.nodes:
        in_scope.setdefault(n.namespace, set()).add(n.id)
    producer = compiled.producers()
    consumers: dict[str, list[str]] = {}
    for c in compiled.nodes:
        for v in c.inputs:
            consumers.setdefault(v, []).append(c.id)
    by_id = {c.id: c for c in compiled.nodes}
    todo = [c for c in compiled.nodes if not c.source_nodes and scopes[c.id] is not None]
    changed = True
    while changed:
        changed = False
        for c in todo:
            if c.source_nodes:
                continue
            allowed = in_scope[scopes[c.id] or ""]
            near = [d for o in c.outputs for d in consumers.get(o, [])] + [producer[v] for v in c.inputs if v in producer]
            for d in near:
                shared = [s for s in by_id[d].source_nodes if s in allowed]
                if shared:
                    c.source_nodes, changed = shared, True
                    break
    s_ns = {n.id: n.namespace for n in source.nodes}
    for c in todo:
        if not c.source_nodes and len(in_scope[scopes[c.id] or ""]) == 1:
            c.source_nodes = sorted(in_scope[scopes[c.id] or ""])
        if c.source_nodes:
            c.namespace = s_ns[c.source_nodes[0]]
        else:
            c.namespace = scopes[c.id] or ""


def _rename_values(g: Graph, names: dict[str, str]) -> None:
    def r(v: str) -> str:
        return names.get(v, v)

    for n in g.nodes:
        n.inputs, n.outputs = [r(v) for v in n.inputs], [r(v) for v in n.outputs]
    g.values = {r(k): replace(v, name=r(k)) for k, v in g.values.items()}
    g.inputs, g.outputs = [r(v) for v in g.inputs], [r(v) for v in g.outputs]


# -- child (runs in the converter's venv) --------------------------------------------------------

def _tag_fx_names() -> None:
    """Put the FX node name into each MLIR location litert-torch builds from nn_module_stack."""
    from litert_torch.backend import debuginfo

    hierarchy = debuginfo.build_mlir_debuginfo

    def tagged(node: Any) -> str | None:
        info = hierarchy(node)
        name = debuginfo.build_nodename_debuginfo(node)
        if info is None or not name:
            return info
        return f"{info.removesuffix(';')}/{FX_TAG}{name};"

    debuginfo.build_mlir_debuginfo = tagged


def _convert_child(payload: dict[str, Any]) -> dict[str, Any]:
    import torch

    from compiler.backends.pt2_onnx import load_vetted_program, quiet_conversion
    from compiler.errors import ModelRunError
    from compiler.frontends import pt2
    from compiler.inputs import generate_inputs

    with quiet_conversion("litert_torch"):
        import litert_torch

        ep = load_vetted_program(payload["src"])
        # Same generated inputs as profiling (symbolic dims resolved the same way): the .tflite is static.
        feeds = generate_inputs(pt2.load(payload["src"]))
        args = tuple(torch.from_numpy(a) for a in feeds.values())
        try:
            _tag_fx_names()
            litert_torch.convert(ep.module(), args).export(payload["out"])
        except Exception as e:
            raise ModelRunError(f"litert-torch could not convert the .pt2 model: {str(e).strip()[:800]}") from None
    from importlib.metadata import version

    return {"litert_torch": version("litert-torch"), "torch": torch.__version__}
