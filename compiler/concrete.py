"""One set of concrete shapes for every stage: the input plan is written into the model before it is compiled,
and every value's shape is resolved from it.

- `apply_plan`: the source graph's inputs take the plan's shapes. An ONNX model is also written again with its
  input dims fixed (so ONNX Runtime's shape-dependent fusions, constant folding of shape arithmetic and the
  compiled graph are those of the run that is measured), and every shape ONNX shape inference with data
  propagation finds is filled into the source graph and stored in the file as `value_info`.
- `observed_shapes` / `fill_by_name`: shapes ONNX Runtime's profiler saw on each node's outputs fill whatever
  inference could not resolve (contrib ops, shapes computed from data).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.graph import Graph, Value
from compiler.input_plan import InputPlan
from compiler.opset import upgrade_opset

Shape = list[int]


def apply_plan(model_path: Path, source: Graph, plans: Mapping[str, InputPlan],
               workdir: Path) -> tuple[Path, Graph | None]:
    """Give `source` the plan's input shapes (and, for ONNX, every shape resolved from them). Returns the file
    to compile (for ONNX a copy with fixed input dims, else `model_path` itself) and, when ONNX shape inference
    left shapes unknown, the model as ONNX Runtime's constant folding leaves it at these shapes (standard ops,
    shape arithmetic folded into constants), whose shapes filled the source's."""
    source.metadata.setdefault("file_size_bytes", str(Path(model_path).stat().st_size))
    source.metadata.setdefault("source_weight_bytes", str(source.weight_bytes))
    source.metadata.setdefault(SYMBOLIC_SHAPE_READS, ",".join(symbolic_shape_reads(source)))
    for name, plan in plans.items():
        v = source.values.get(name)
        if v is not None:
            source.values[name] = Value(name=name, shape=list(plan.shape), dtype=v.dtype, quant=v.quant)
    if source.format != "onnx":
        return Path(model_path), None
    out = Path(workdir) / f"{Path(model_path).stem}.concrete.onnx"
    fill_by_name(source, fix_onnx_inputs(model_path, out, {n: p.shape for n, p in plans.items()}))
    if not unknown_values(source):
        return out, None
    from compiler.backends import ort
    from compiler.errors import ModelRunError, SandboxError
    from compiler.frontends import onnx as onnx_frontend

    try:
        folded = onnx_frontend.load(ort.fold(out, Path(workdir) / f"{Path(model_path).stem}.folded.onnx"))
    except (ModelRunError, SandboxError):
        return out, None  # the compile step reports why ONNX Runtime cannot load it
    fill_by_name(source, static_shapes(folded))
    return out, folded


# Source metadata: ids of the Shape / Size nodes that read a dim left symbolic in the upload (comma-separated)
SYMBOLIC_SHAPE_READS = "symbolic_shape_reads"


def symbolic_shape_reads(graph: Graph) -> list[str]:
    """Ids of the Shape / Size nodes of `graph` (as declared, before a plan fixes its inputs) that read a dim left
    symbolic: ONNX Runtime folds them at the analysed shapes, but a file written from the upload keeps them, and
    what they feed (a KV decoder's position ids, Range(past, past + 1), gathering its position table)."""
    out = []
    for nd in graph.nodes:
        v = graph.values.get(nd.inputs[0]) if nd.op_type in ("Shape", "Size") and nd.inputs else None
        if v is None:
            continue
        dims = v.shape
        if dims is not None and nd.op_type == "Shape":
            start, end = int(nd.attributes.get("start", 0)), nd.attributes.get("end")
            dims = dims[start:int(end) if end is not None else None]
        if dims is None or not all(isinstance(d, int) and d >= 0 for d in dims):
            out.append(nd.id)
    return out


def unknown_values(graph: Graph) -> list[str]:
    """Activation values some node writes whose shape is not fully known."""
    return [o for n in graph.nodes for o in n.outputs
            if o and (graph.values.get(o) is None or not graph.values[o].is_static)]


def fix_onnx_inputs(src: str | os.PathLike[str], out: str | os.PathLike[str],
                    shapes: Mapping[str, Shape]) -> dict[str, tuple[Shape, str]]:
    """Write `src` to `out` with each named graph input's dims fixed, symbolic `value_info` replaced by what
    shape inference (with data propagation) derives from those dims. Returns {value: (shape, dtype)} of every
    value whose shape is now fully known."""
    import onnx

    model = upgrade_opset(onnx.load(os.fspath(src), load_external_data=False))
    for vi in model.graph.input:
        if vi.name in shapes and vi.type.HasField("tensor_type"):
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for size in shapes[vi.name]:
                dims.add().dim_value = int(size)
    # The exporter's symbolic value_info would only be merged with (and can contradict) the concrete shapes.
    keep = [vi for vi in model.graph.value_info if _static(vi.type)]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - inference is a bonus; the runtime still runs the fixed model
        pass
    onnx.save(model, os.fspath(out))
    from compiler.frontends.onnx import dtype_name

    found: dict[str, tuple[Shape, str]] = {}
    for vi in list(model.graph.value_info) + list(model.graph.output):
        if _static(vi.type):
            tt = vi.type.tensor_type
            found[vi.name] = ([int(d.dim_value) for d in tt.shape.dim], dtype_name(tt.elem_type))
    return found


def _static(type_proto: Any) -> bool:
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return False
    return all(d.HasField("dim_value") for d in type_proto.tensor_type.shape.dim)


def fill_by_name(graph: Graph, shapes: Mapping[str, tuple[Shape, str]], overwrite: bool = False) -> int:
    """Set the shape of each activation value of `graph` named in `shapes` whose own shape is not fully known
    (or every one, with `overwrite`: shapes a run observed beat inferred ones). Returns how many were set."""
    n = 0
    for name, (shape, dtype) in shapes.items():
        v = graph.values.get(name)
        if v is None or v.weight is not None or (v.is_static and not overwrite) or v.shape == shape:
            continue
        keep = v.dtype if v.dtype != "unknown" else dtype
        graph.values[name] = Value(name=name, shape=list(shape), dtype=keep, quant=v.quant)
        n += 1
    return n


_CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})


def fill_from_twins(graph: Graph) -> int:
    """Give a node's outputs the shapes of an identical node's (same op, attributes and inputs, after the same rule
    made their inputs one): what a runtime's common-subexpression elimination merged has one profiled node, while a
    graph compiled for another target keeps both. torchvision's SSDlite post-processing calls NonZero twice on each
    score mask; ORT ran one of each pair, so the twins' data-dependent shapes (and the Transposes and GatherNDs after
    them: 272 tasks, 30-40% of the device time) stayed unknown on every device target. Top-level nodes only (a
    body's values change per iteration). Returns how many values were set."""
    alias: dict[str, str] = {}
    first: dict[tuple[Any, ...], list[str]] = {}
    n = 0
    for node in graph.nodes:
        if node.parent or node.op_type in _CONTROL_FLOW or not node.outputs:
            continue
        key = (node.domain, node.op_type, tuple(alias.get(i, i) for i in node.inputs),
               repr(sorted(node.attributes.items())))
        twin = first.setdefault(key, node.outputs)
        if twin is node.outputs:
            continue
        for mine, theirs in zip(node.outputs, twin):
            if not mine or not theirs:
                continue
            alias[mine] = alias.get(theirs, theirs)
            # Either way round: the runtime may have kept (and profiled) the later twin under its own name.
            n += _copy_shape(graph, theirs, mine) or _copy_shape(graph, mine, theirs)
    return n


def _copy_shape(graph: Graph, src: str, dst: str) -> int:
    """Give activation `dst`, of unknown shape, the static shape of `src`; 1 if it did."""
    v, t = graph.values.get(dst), graph.values.get(src)
    if v is None or v.weight is not None or v.is_static or t is None or not t.is_static:
        return 0
    graph.values[dst] = Value(name=dst, shape=list(t.shape),  # type: ignore[arg-type]
                              dtype=v.dtype if v.dtype != "unknown" else t.dtype, quant=v.quant)
    return 1


def static_shapes(graph: Graph) -> dict[str, tuple[Shape, str]]:
    """{value: (shape, dtype)} of every value of `graph` whose shape is fully known, constants included (a
    compiled graph holds as constants the results its runtime folded, under their source names)."""
    return {k: (list(v.shape), v.dtype) for k, v in graph.values.items() if v.is_static}  # type: ignore[arg-type]


def observed_shapes(graph: Graph, per_node: Mapping[str, list[Any]]) -> dict[str, tuple[Shape, str]]:
    """{value: (shape, dtype)} from a profile's per-node output shapes ({node id: [[shape, dtype] | None]}),
    matched to the node's outputs in order."""
    out: dict[str, tuple[Shape, str]] = {}
    for node in graph.nodes:
        seen = per_node.get(node.id)
        if not seen:
            continue
        for value, s in zip([o for o in node.outputs if o], seen):
            if s:
                out[value] = (list(s[0]), str(s[1]))
    return out


def fill_observed(measured: Graph, output_shapes: Mapping[str, list[Any]], others: Sequence[Graph] = ()) -> None:
    """What a profiled run saw, as the analysis takes it (worker.pipeline): its per-node output shapes fill the values
    of `measured` (the graph that ran) that inference left unknown, and by value name those the `others` (the source,
    other targets' graphs) left unknown. They overwrite a known shape only where the file's own is a placeholder: a
    .tflite stores batch 1 for a dynamic signature and LiteRT runs the fed batch. An ONNX graph's shapes were
    inferred at the input plan, logical; ORT's profiler reports the runtime's physical ones: its NCHWc kernels' (and
    the element-wise ops' between them) blocked outputs, channels padded to the block (LCNet-050's 8 channels read
    16, ConvNeXt-V2-atto's depthwise outputs [1, 48, 56, 56] for its 40 channels), and ReorderOutputs matched to
    other nodes' outputs (MobileNetV3-Small's [1, 16, 56, 56] read [1, 576, 1, 1]). Overwritten (until session 45),
    they moved the Optimize dialog's prediction of 28 TorchScript models' exports from 84/108 to 74/108 within ±10%
    of the measured exports (LCNet-050 int8-static +1% -> +142%; README "Round 18")."""
    seen = observed_shapes(measured, output_shapes)
    fill_by_name(measured, seen, overwrite=measured.format == "tflite")
    for g in others:
        fill_by_name(g, seen)


def reshaped(x: list[int], target: list[int], allowzero: bool = False) -> list[int] | None:
    """Reshape's output shape (0 copies the input dim unless `allowzero`, one -1 takes the rest); None when the
    element counts cannot agree."""
    out = [x[i] if d == 0 and not allowzero and i < len(x) else d for i, d in enumerate(target)]
    total = math.prod(x)
    known = math.prod(d for d in out if d != -1)
    if out.count(-1) > 1 or known <= 0 and total:
        return None
    if -1 in out:
        if total % known:
            return None
        out[out.index(-1)] = total // known
    return out if math.prod(out) == total else None


@dataclass(frozen=True, slots=True)
class Conflict:
    """A node the concrete shapes cannot satisfy: a Reshape whose input has `have` elements, to `want`."""

    node: str
    have: list[int]
    want: list[int]


def reshape_conflicts(graph: Graph) -> list[Conflict]:
    """Reshapes whose static input cannot take their constant target shape (the runtime folded it, or the
    exporter baked a traced size in): at these input shapes the model cannot run."""
    out = []
    for n in graph.nodes:
        if n.op_type != "Reshape" or len(n.inputs) < 2:
            continue
        x, t = graph.values.get(n.inputs[0]), graph.values.get(n.inputs[1])
        if x is None or not x.is_static or t is None or t.weight is None or t.weight.ints is None:
            continue
        if reshaped(list(x.shape), list(t.weight.ints), bool(n.attributes.get("allowzero"))) is None:  # type: ignore[arg-type]
            out.append(Conflict(n.id, list(x.shape), list(t.weight.ints)))  # type: ignore[arg-type]
    return out
