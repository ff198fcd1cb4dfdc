"""The ONNX file `compiler.optimize.onnx_export` writes, record by record: its bytes beyond the weights'
values, and the bytes each option adds to every task.

The exporter starts from ORT's basic optimizations of the upload (constant folding, Identity removal,
BatchNormalization folded into its Conv, Gemm split into MatMul + Add) and then runs ORT's own tools. Every
node, initializer header and value_info they write is a protobuf record whose size follows from the names
they generate (`<t>_QuantizeLinear`, `<w>_quantized`, `<w>__lut4_idx`, ...). simulator.onnx_exported rebuilds
the exported graph's names from the source graph, simulator.onnx_tools adds each tool's records, and
simulator.onnx_proto sizes each record as protobuf encodes it; this module puts them together per task. The values
of the weights (kernels, per-channel scales, tables) are simulator.file_bytes.storage_bytes_per_kernel's business.

Records are charged to the compiled task that implements the node (a weight shared by several tasks to the
first, as its values are). Per-op overrides that quantize part of a model are close, not exact: the tools
then write value_info for every tensor, and a tensor between an int8 and a float task gets its Q/DQ pair once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from compiler.concrete import SYMBOLIC_SHAPE_READS
from compiler.graph import Graph, Node, Value
from simulator.folding import fold_constants
from simulator.onnx_exported import (Const, XNode, exported_nodes, is_float_value, kernel_of, kernel_shape,
                                     layout_chains, share_made, share_scalars, shape_dims,
                                     value_nbytes)
from simulator.onnx_proto import (TORCH_MODEL_FIELDS_BYTES, init_header_bytes, ort_saved_opset_bytes,
                                   value_info_bytes)
from simulator.onnx_tools import (charge_dynamic, charge_fp16, charge_fp16_kept, charge_int4, charge_lut,
                                  charge_static, fp16_kept_nodes)

# What an option makes the exporter do to a task (simulator.file_bytes.export_events says which apply).
EVENTS: tuple[str, ...] = ("static", "dynamic", "fp16", "int4", "lut1", "lut2", "lut4", "lut6", "lut8", "shapes")



@dataclass
class ExportRecords:
    """`base`: bytes of the fp32 export beyond its weights' values. `events[i, e]`: bytes the exporter adds
    to task i under EVENTS[e] (negative where it removes records). `kernel[i]`: (elements, output channels,
    reduction length) of the kernel task i stores in the file, 0 where it stores none (a weight shared with
    an earlier task). `mapped[i]`: an exported node of task i reads a kernel (else `kernel[i]` says nothing
    and the compiled graph's figures stand). `made[i]`: bytes of the float constants task i stores (its kernel,
    its bias) that the upload itself does not store but makes at run time from constants (ONNX zoo "light" files:
    every weight a `ConstantOfShape` of a stored shape), so the file as uploaded lacks them where the export, which
    ORT's constant folding writes, holds them (see made_at_run_time); `made_data`: their sum, which the runtime
    holds (simulator.file_bytes sizes the file as uploaded from them). `in_body[i]`: task i runs a node of an If /
    Loop / Scan body, which the exporter's quantizers do not enter (see _body_tasks). `int4_float[i]`: task i's
    kernel is read by an exported node MatMulNBits does not replace (a Gemm the exporter keeps, a Conv), so int4
    writes it float. `unfolded[i]`: elements of the float constants the file keeps that only nodes without a
    compiled task read (a position table gathered by ids made from a dynamic input's shape: ORT folds the gather at
    the analysed shapes, the file keeps the table), charged to task i, the first task their result reaches.
    `beyond_upload`: bytes of `base` that a file ONNX Runtime saves holds beyond the whole upload, where the fp32
    export is the upload itself (simulator.file_bytes._beyond_upload): charged to the tasks, not to `base`."""

    base: float
    events: np.ndarray
    kernel: np.ndarray
    mapped: np.ndarray
    made: np.ndarray | None = None
    made_data: float = 0.0
    in_body: np.ndarray | None = None
    int4_float: np.ndarray | None = None
    unfolded: np.ndarray | None = None
    beyond_upload: float = 0.0


def export_records(source: Graph, compiled: Graph, weighted: Sequence[bool],
                   stored: frozenset[str] = frozenset(), gone: frozenset[str] = frozenset()) -> ExportRecords:
    """Records of the ONNX export of `source`, charged to the tasks of `compiled` (`weighted[i]`: task i
    holds a kernel, so a source node it shares with a weightless task, e.g. an NCHWc reorder, is its).
    `stored`: constants the runtime reads as the file stores them, though a node makes them: not made at run time,
    their nodes kept. `gone`: source nodes the export removes (a QDQ file's activation pairs, simulator.qdq)."""
    n = len(compiled.nodes)
    task_of: dict[str, int] = {}
    for i, nd in enumerate(compiled.nodes):
        for s in nd.source_nodes or [nd.id]:
            j = task_of.get(s)
            if j is None or (weighted[i] and not weighted[j]):
                task_of[s] = i
    view, folded = fold_constants(source)
    vals = dict(view.values)
    consts = {k: v for k, v in vals.items() if v.weight is not None and k not in stored}
    # a `stored` constant's node stays in the file with its integer, scale and zero-point initializers
    outputs = {nd.id: nd.outputs for nd in source.nodes}
    dropped = ({i for i in folded if not set(outputs[i]) & stored} | (set(compiled.eliminated) - _shape_bound(source))
               | gone)
    for nd in source.nodes:  # what the runtime folds at load is an initializer of the file
        if nd.id in dropped and _makes_constants(nd, folded, gone, consts):
            consts.update({o: vals[o] for o in nd.outputs if o in vals and o not in consts})
    xs, transposed = exported_nodes(source, dropped, task_of, consts, vals)
    xs, made = layout_chains(xs, vals, consts, set(source.outputs))
    share_scalars(xs, consts)
    made_names = made_at_run_time(source, consts)
    share_made(xs, source, made_names)

    inits = _initializers(xs, consts, vals, transposed)
    read = {v for x in xs for v in x.inputs}
    inits.update({name: c for name, c in made.items() if name in read})
    base = model_header_bytes(source) + sum(x.bytes() for x in xs)
    base += sum(init_header_bytes(c.name, c.dims, c.data_bytes) for c in inits.values())
    base += sum(value_info_bytes(v, vals[v].shape if v in vals else None) for v in source.inputs + source.outputs)

    ev, kern = _charge(source, xs, inits, vals, n)
    in_body = _body_tasks(source, xs, inits, task_of, ev, n)
    mapped = np.zeros(n, dtype=bool)
    mapped[[x.task for x in xs if x.task >= 0 and kernel_of(x, inits) is not None]] = True
    made = _made_bytes(xs, inits, made_names, n)
    int4_float = np.zeros(n, dtype=bool)
    int4_float[[x.task for x in xs if x.task >= 0 and x.op != "MatMul" and kernel_of(x, inits) is not None]] = True
    return ExportRecords(float(base), ev, kern, mapped, made, float(made.sum()), in_body, int4_float,
                         _unfolded(xs, inits, n))


def _makes_constants(nd: Node, folded: set[str] | frozenset[str], gone: frozenset[str], consts: dict[str, Value]
                     ) -> bool:
    """Whether a node the export drops leaves constants in the file: one folded, one of a QDQ pair the export
    removes, or one the runtime eliminated whose inputs are all constants. An eliminated node of an activation (a
    Transpose ORT merges into the next one, the CRNN's permute before its batch-first LSTM) leaves none: its output
    was sized as an initializer of [steps, 512] read by the Shape node beside it, so the recognizer's int8-dynamic
    file grew with the width it was analysed at (+1.8% at 48 x 320, +3.7% at 48 x 640 against the file written)."""
    return nd.id in folded or nd.id in gone or all(i in consts for i in nd.inputs if i)


def _unfolded(xs: list[XNode], inits: dict[str, Const], n: int) -> np.ndarray:
    """[n] elements of the float initializers read only by exported nodes no compiled task implements (the
    runtime folds them at the analysed shapes, where the file computes them from a dynamic shape: the KV
    decoder's 1024 x 128 position table, gathered at Range(past, past + 1); its dynamic exports were sized
    without it, int8-dynamic -23.7%), charged to the first task downstream, which stores them as its own."""
    by_task = {v for x in xs if x.task >= 0 for v in x.inputs}
    readers: dict[str, list[XNode]] = {}
    for x in xs:
        for v in x.inputs:
            readers.setdefault(v, []).append(x)
    out = np.zeros(n)
    seen: set[str] = set()
    for x in xs:
        if x.task >= 0:
            continue
        for v in x.inputs:
            c = inits.get(v)
            if c is None or not c.floating or v in by_task or v in seen:
                continue
            seen.add(v)
            t = _first_task(x, readers)
            if t >= 0:
                out[t] += c.data_bytes / 4.0  # fp32 elements (the exporter restores fp16 files to fp32)
    return out


def _first_task(x: XNode, readers: dict[str, list[XNode]], skip: set[int] | frozenset[int] = frozenset()) -> int:
    """The task of the first node with one (not in `skip`) that the outputs of `x` reach (breadth first), -1 if
    none."""
    todo, seen = [x], {id(x)}
    while todo:
        nxt: list[XNode] = []
        for y in todo:
            for o in y.outputs:
                for r in readers.get(o, []):
                    if r.task >= 0 and r.task not in skip:
                        return r.task
                    if id(r) not in seen:
                        seen.add(id(r))
                        nxt.append(r)
        todo = nxt
    return -1


def _shape_bound(source: Graph) -> set[str]:
    """Ids of the nodes that compute from a dim the upload leaves symbolic (compiler.concrete.symbolic_shape_reads,
    and every node downstream): the compiled graph folds them at the analysed shapes, the exporter's file, written
    from the upload, keeps them and the constants they read."""
    reads = set(filter(None, source.metadata.get(SYMBOLIC_SHAPE_READS, "").split(",")))
    tainted: set[str] = set()
    out: set[str] = set()
    for nd in source.nodes:
        if nd.id in reads or tainted.intersection(nd.inputs):
            out.add(nd.id)
            tainted.update(nd.outputs)
    return out


# The events of the tools that act on the top-level graph's nodes only (compiler.optimize.onnx_export passes them
# top-level names); ORT's fp16 converter converts subgraphs too.
_TOP_LEVEL_EVENTS = ("static", "dynamic", "int4", "lut1", "lut2", "lut4", "lut6", "lut8")


def _body_tasks(source: Graph, xs: list[XNode], inits: dict[str, Const], task_of: dict[str, int], ev: np.ndarray,
                n: int) -> np.ndarray:
    """[n] bool: task i runs a node of an If / Loop / Scan body. The exporter's quantizers and palettizer act on
    the top-level graph's nodes only, so a body's weights stay float in every export but fp16 (the greedy decoder's
    int8-static file: 3.91 MB written, 0.95 predicted when its loop's weights were sized int8): their records are
    not written (`ev` loses them), and a weight a top-level node quantizes that a body reads as well keeps its float
    copy beside the quantized one (charged to the top-level task under static / dynamic int8)."""
    body_nodes = {nd.id for nd in source.nodes if nd.parent}
    out = np.zeros(n, dtype=bool)
    for nid in body_nodes:
        t = task_of.get(nid, -1)
        if t >= 0:
            out[t] = True
    if not out.any():
        return out
    cols = [EVENTS.index(e) for e in _TOP_LEVEL_EVENTS]
    ev[np.ix_(out, cols)] = 0.0
    body_reads = {v for x in xs if x.task >= 0 and out[x.task] for v in x.inputs}
    for x in xs:
        w = kernel_of(x, inits)
        if w is not None and w in body_reads and x.task >= 0 and not out[x.task]:
            body_reads.discard(w)  # once per weight
            for e in ("static", "dynamic"):
                ev[x.task, EVENTS.index(e)] += inits[w].data_bytes
    return out


def model_header_bytes(source: Graph) -> float:
    """Bytes of a saved file beyond its graph's records: the source's own model fields (kept as they are) and the
    opset list ONNX Runtime writes (the source's imports and the runtime's domains). A fixed 228 measured on torch exports left a scikit-learn export (producer 'OnnxMLTools', domain
    'onnxml', a 32-character graph name, no default-domain import: 294 bytes) -9% to -12% of its 0.9 KB files."""
    meta = source.metadata
    try:
        fields = int(meta["model_fields_bytes"])
    except (KeyError, ValueError):
        fields = TORCH_MODEL_FIELDS_BYTES
    imports: dict[str, int] = {}
    for item in filter(None, meta.get("opsets", "ai.onnx:17").split(",")):
        domain, _, version = item.rpartition(":")
        imports["" if domain == "ai.onnx" else domain] = int(version)
    return float(fields + ort_saved_opset_bytes(imports) + _SAVED_EXTRA_BYTES)


# Read off saved files beside the source's fields and the opset list: 2 bytes (an empty graph doc_string on a
# torch export's; the graph's longer length prefix beyond 16 KB adds 1-2 more, left out).
_SAVED_EXTRA_BYTES = 2


def made_at_run_time(source: Graph, consts: dict[str, Value]) -> frozenset[str]:
    """Constants the upload makes at run time from other constants (a node's output that folds to a constant:
    `ConstantOfShape` of a stored shape, `Range`, `Tile`, ...), not stored values (initializers, `Constant`
    nodes): the file holds the recipe, the runtime the tensor. A Cast of a stored value is stored (an fp16 weight
    behind `Cast(to=float)`: the file holds its fp16 values; MobileNetV3-Large so was sized at 1.2 of 11.0 MB)."""
    stored = {k for k, v in source.values.items() if v.weight is not None}
    copies = [nd for nd in source.nodes if nd.op_type in ("Cast", "Identity") and nd.inputs]
    grew = True
    while grew:  # a Cast / Identity of a stored value, or of such a copy, is stored (any node order)
        n = len(stored)
        stored.update(o for nd in copies if nd.inputs[0] in stored for o in nd.outputs)
        grew = len(stored) > n
    return frozenset(o for nd in source.nodes if nd.op_type != "Constant" for o in nd.outputs
                     if o in consts and o not in stored)


def _made_bytes(xs: list[XNode], inits: dict[str, Const], made: frozenset[str], n: int) -> np.ndarray:
    """[n] bytes of the float initializers task i stores first that the upload makes at run time (a folded
    BatchNorm's weight and bias count where the kernel is made)."""
    out = np.zeros(n)
    seen: set[str] = set()
    for x in xs if made else []:
        for v in x.inputs:
            c = inits.get(v)
            if c is None or v in seen or x.task < 0 or not c.floating:
                continue
            seen.add(v)
            fused_bias = v.startswith("ConvBnFusion_BN_B_") and x.inputs[1].removeprefix("ConvBnFusion_W_") in made
            if v.removeprefix("ConvBnFusion_W_") in made or fused_bias:
                out[x.task] += c.data_bytes
    return out


def _initializers(xs: list[XNode], consts: dict[str, Value], vals: dict[str, Value], transposed: set[str]
                  ) -> dict[str, Const]:
    """Initializers the exported file holds: every constant a kept node reads (renamed ones sized as the
    originals: ORT's fused BatchNorm weight has the conv's shape, its bias one value per channel)."""
    inits: dict[str, Const] = {}
    for x in xs:
        for v in x.inputs:
            orig = v.removeprefix("ConvBnFusion_W_")
            if v.startswith("ConvBnFusion_BN_B_"):
                w = vals.get(x.inputs[1].removeprefix("ConvBnFusion_W_"))
                c = shape_dims(w)[0] if w is not None and shape_dims(w) else 1
                inits.setdefault(v, Const(v, [c], 4 * c))
            elif orig in consts and v not in inits:
                d = shape_dims(consts[orig])
                inits[v] = Const(v, d[::-1] if orig in transposed else d, value_nbytes(consts[orig]),
                                  is_float_value(consts[orig]))
    return inits


def _charge(source: Graph, xs: list[XNode], inits: dict[str, Const], vals: dict[str, Value], n: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """(bytes each of n tasks gets under each of EVENTS [n, len(EVENTS)], the kernel each stores [n, 3]).
    A node no compiled task implements (a dynamic-shape file's `zeros_like`, Shape then Expand, which the runtime
    folds at the analysed shapes) has its records charged to the first task downstream, as _unfolded charges its
    constants: the value_info and Casts the tools write for it (torch/gnn's dynamo-dyn fp16 file: 0.8 KB of 110 KB)."""
    ev = np.zeros((n, len(EVENTS)))
    kern = np.zeros((n, 3))
    col = {e: j for j, e in enumerate(EVENTS)}
    readers: dict[str, list[XNode]] = {}
    for x in xs:
        for v in x.inputs:
            readers.setdefault(v, []).append(x)
    # Stored kernels: the unpadded source weight, once, by the nodes' own tasks.
    first: dict[str, int] = {}
    for x in xs:
        for v in x.inputs:
            if v in inits:
                first.setdefault(v, x.task)
    for x in xs:
        w = kernel_of(x, inits)
        if w is not None and first.get(w) == x.task and x.task >= 0 and kern[x.task, 0] == 0:
            kern[x.task] = kernel_shape(x, inits[w])
    # fp16 writes a node it keeps fp32 without its fp16 events: a folded node's records go past it
    kept = {x.task for x in fp16_kept_nodes(xs)}
    xs = [x if x.task >= 0 else replace(x, task=_first_task(x, readers, kept)) for x in xs]
    consumers: dict[str, list[XNode]] = {}
    for x in xs:
        for v in x.inputs:
            consumers.setdefault(v, []).append(x)
    owner: dict[str, int] = {}  # initializer -> the task that stores it (the first that reads it)
    for x in xs:
        for v in x.inputs:
            if v in inits:
                owner.setdefault(v, x.task)

    def add(task: int, event: str, b: float) -> None:
        if task >= 0:
            ev[task, col[event]] += b

    graph_out = set(source.outputs)
    _charge_value_info(xs, inits, vals, graph_out, add)
    charge_static(xs, inits, consumers, graph_out, owner, vals, add)
    charge_dynamic(xs, inits, owner, add)
    charge_fp16(xs, source, consumers, vals, add)
    charge_fp16_kept(xs, inits, consumers, vals, lambda x: _first_task(x, readers, kept), add)
    charge_int4(xs, inits, owner, add)
    for bits in (1, 2, 4, 6, 8):
        charge_lut(xs, inits, owner, bits, add)
    return ev, kern


def _charge_value_info(xs: list[XNode], inits: dict[str, Const], vals: dict[str, Value], graph_out: set[str],
                       add: Callable[[int, str, float], None]) -> None:
    """value_info: quantize_static / quantize_dynamic / the fp16 converter run shape inference and keep a
    record of every intermediate tensor's type and shape. Under static int8 and fp16 every task takes
    its own; under dynamic int8 only weighted tasks change, so they share the whole model's."""
    vi_total = 0.0
    for x in xs:
        for o in x.outputs:
            if o not in graph_out:
                b = value_info_bytes(o, vals[o].shape if o in vals else None)
                vi_total += b
                add(x.task, "shapes", b)
    dyn_tasks = {x.task for x in xs if x.op in ("Conv", "MatMul") and kernel_of(x, inits) is not None and x.task >= 0}
    for t in dyn_tasks:
        add(t, "dynamic", vi_total / len(dyn_tasks))


def iter_events(c_input: str, c_output: str, kernel: str, dynamic: bool) -> Iterable[str]:
    """The events an exporter choice triggers (compiler.optimize.onnx_export's steps, in its terms)."""
    static = "int8" in (c_input, c_output)
    if static:
        yield "static"
    if c_input == "fp16" or kernel == "fp16":
        yield "fp16"
    if dynamic and kernel == "int8" and not static:
        yield "dynamic"
    if static or c_input == "fp16" or kernel == "fp16":
        yield "shapes"
    if kernel == "int4":
        yield "int4"
    if kernel.startswith("lut"):
        yield kernel
