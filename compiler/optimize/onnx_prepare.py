"""Bring a real ONNX file into the shape ORT's quantization tools expect, before any option is applied.

Real exports break those tools in ways our own test models do not (issue 14): repeated or empty node names
(dynamo), `value_info` that ORT's optimizations made stale (quantize_static's shape inference then fails with
"Inferred shape and existing shape differ"), and opsets older than an option's ops (per-channel QDQ needs 13).
"""

from __future__ import annotations

import heapq
import logging
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

import onnx

from compiler.opset import ORT_MIN_OPSET, convert_opset, opset
from compiler.frontends.onnx_scopes import all_bodies, name_by_id
from compiler.optimize.onnx_fp16 import restore_fp32
from compiler.vocabulary.options import OptionError

log = logging.getLogger(__name__)

# Opset each kind of step writes ops of: per-channel DequantizeLinear (`axis`), BitwiseAnd in the palette decoder.
OPSET_STATIC_INT8 = 13
# quantize_dynamic converts an older model to 11 itself, after ORT's optimizations: on an IR-3 file (the model zoo's
# opset-9 graphs) the initializers those add (ConvBnFusion_W_...) are not graph inputs and its converter stops
# ("Input ... is undefined"). Converted first, on the file as stored, the conversion holds.
OPSET_DYNAMIC_INT8 = 11
OPSET_PALETTE = 18


# The longest cause a failed export's sentence quotes; the whole text goes to the log (`one_line`).
MAX_CAUSE = 300
# ONNX Runtime's framing of every error: "[ONNXRuntimeError] : 1 : FAIL : Load model from /tmp/x.onnx failed:".
_ORT_FRAME = re.compile(r"^\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*(?:Load model from \S+ failed:\s*)?")


def one_line(e: BaseException, limit: int = MAX_CAUSE) -> str:
    """The cause of a failed step, for the one sentence a failed export is: `Type: message` on one line without ORT's
    framing (its exception types, Fail / InvalidGraph, say nothing the message does not), cut after the last whole
    sentence or word that fits `limit` and marked "…" where cut. The full text is logged (the worker's log)."""
    log.warning("export step failed: %s: %s", type(e).__name__, e)
    msg = _ORT_FRAME.sub("", " ".join(str(e).split())).rstrip(". ")
    if len(msg) > limit:
        head = msg[: limit + 1]
        end = head.rfind(". ")
        cut = end + 1 if end >= limit // 2 else head.rfind(" ")
        msg = head[: cut if cut > 0 else limit].rstrip(" .,;:(") + " …"
    ort = type(e).__module__.startswith("onnxruntime")
    return msg if ort or not msg else f"{type(e).__name__}: {msg}"


def crash_sentence(what: str, e: BaseException) -> str:
    """One sentence for a sandboxed child that died running ONNX Runtime: `<what> crashes ONNX Runtime (signal 11:
    SIGSEGV)` where it crashed, else the sandbox's own sentence (a time or memory limit)."""
    m = re.search(r"signal \d+: \w+", str(e))
    return f"{what} crashes ONNX Runtime ({m.group(0)})" if m and "crashed" in str(e) else str(e)


def named_copy(src: str | os.PathLike[str], out: Path, min_opset: int = 0, notes: list[str] | None = None,
               base: list[int] | None = None) -> Path:
    """`src` with every node named by its analysis id (a unique name stays; an empty or repeated one becomes
    `<op>_<index>`, as compiler.frontends.onnx names it, so per-op overrides keyed by the analysis reach the same
    node), its fp16 values restored to fp32 (compiler.optimize.onnx_fp16: what ORT's tools expect; said in
    `notes`), converted to `min_opset` if it is older (onnx.version_converter), without stale value_info.
    `base` gets the opset the copy has without `min_opset` (the file's own, or the oldest ORT runs)."""
    model = onnx.load(os.fspath(src))
    name_by_id(model)
    if restore_fp32(model) and notes is not None:
        notes.append("the weights stored fp16 were restored to fp32 before the option was applied (exactly: "
                     "fp16 -> fp32 loses nothing); inputs and outputs are fp32")
    have = opset(model)
    if have and have < ORT_MIN_OPSET:  # ORT runs none older (the onnx wheel's opset-6 BatchNormalization files)
        if notes is not None:
            notes.append(f"converted from ONNX opset {have} to {max(min_opset, ORT_MIN_OPSET)}, the oldest ONNX "
                         f"Runtime runs")
        min_opset = max(min_opset, ORT_MIN_OPSET)
    if base is not None:
        base[:] = [max(have, ORT_MIN_OPSET) if have else 0]
    if have and have < min_opset:
        try:
            model = convert_opset(model, min_opset)
        except Exception as e:  # noqa: BLE001 - the converter's failure is a property of this file
            raise OptionError(f"the option needs ONNX opset {min_opset} and converting this opset-{have} model "
                              f"failed ({one_line(e)})") from e
    del model.graph.value_info[:]
    strip_debug_records(model)
    onnx.save(model, os.fspath(out))
    return out


def strip_debug_records(model: onnx.ModelProto) -> None:
    """Drop the torch exporters' debug records, which are not part of a deployed model and which the file size
    predicted for every option leaves out (simulator.onnx_file): each node's (stack traces, module paths: ~2.4 KB per
    node on dynamo files), in If / Loop bodies too, which ORT's optimizer writes back as read (torch.cond +
    while_loop: 13 KB of a 99 KB fp32 export); and the graph's and its inputs' and outputs' (dynamo's graph
    signature, range constraints, original names: 1.3 KB of torch/gnn's 39 KB int4 file, -3.5% predicted). A doc
    string is cleared, not set empty: an empty one is 2 bytes a node in the file ORT saves of an IR-10 model."""
    for g in [model.graph, *all_bodies(model.graph)]:
        del g.metadata_props[:]
        g.ClearField("doc_string")
        for n in g.node:
            del n.metadata_props[:]
            n.ClearField("doc_string")
        for v in [*g.input, *g.output, *g.value_info]:
            del v.metadata_props[:]
            v.ClearField("doc_string")
        for t in g.initializer:
            del t.metadata_props[:]


def reads(node: onnx.NodeProto) -> Iterable[str]:
    """Every value `node` reads, with those its subgraphs (If / Loop / Scan bodies) read from the outer scope."""
    yield from node.input
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            for n in g.node:
                yield from reads(n)


def read_in_bodies(graph: onnx.GraphProto) -> set[str]:
    """Every value name a node inside one of `graph`'s subgraphs (at any depth) reads."""
    return {i for body in all_bodies(graph) for n in body.node for i in n.input}


def topo_sort(graph: onnx.GraphProto) -> bool:
    """Put `graph`'s nodes in dependency order, keeping the given order where it already holds; True if moved.

    ORT's quantizers walk the nodes in list order and take a value not yet produced for a graph input: on a file
    ORT's fp16 converter wrote (it appends its Casts at the end) quantize_dynamic then gives a value read before
    its Cast a second producer (a DequantizeLinear), and ORT refuses the file ("Duplicate definition of name")."""
    nodes = list(graph.node)
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    deps = [{producer[x] for x in reads(n) if x in producer and producer[x] != i} for i, n in enumerate(nodes)]
    users: list[list[int]] = [[] for _ in nodes]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    left = [len(d) for d in deps]
    ready = [i for i, c in enumerate(left) if c == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            left[u] -= 1
            if left[u] == 0:
                heapq.heappush(ready, u)
    if len(order) < len(nodes):  # a cycle: not a valid ONNX graph; leave it for ORT to name
        return False
    if order == list(range(len(nodes))):
        return False
    del graph.node[:]
    graph.node.extend(nodes[i] for i in order)
    return True


_FLOATS = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)


def drop_cast_pairs(model: onnx.ModelProto) -> int:
    """Remove the round trips ORT's fp16 converter writes around every node it keeps float when given a block list
    (Cast to fp16 and straight back to fp32 after each such node: 286 Casts for fp16 on one Add of MobileNetV3),
    which round every activation of the float part to fp16 and cost a kernel each, and which no prediction has.
    A Cast(to t) of a Cast(to u) of x, x of type t and t, u fp32 / fp16, reads x itself. Returns how many went."""
    g = model.graph
    typed = onnx.shape_inference.infer_shapes(model)
    elem = {v.name: v.type.tensor_type.elem_type for v in [*typed.graph.value_info, *g.input, *g.output]}
    elem.update({t.name: t.data_type for t in g.initializer})
    producer = {o: n for n in g.node for o in n.output}
    outputs = {o.name for o in g.output}

    def to(n: onnx.NodeProto) -> int:
        return next((a.i for a in n.attribute if a.name == "to"), 0)

    same: dict[str, str] = {}  # a round trip's output -> the value it started from
    renamed: dict[str, str] = {}  # a value that becomes the graph output its round trip wrote
    for b in g.node:
        a = producer.get(b.input[0]) if b.op_type == "Cast" and b.input else None
        if a is None or a.op_type != "Cast":
            continue
        x = a.input[0]
        if not (to(b) in _FLOATS and to(a) in _FLOATS and to(a) != to(b) and elem.get(x) == to(b)):
            continue
        if b.output[0] not in outputs:
            same[b.output[0]] = x
        elif x in producer and x not in outputs and x not in renamed:
            renamed[x] = b.output[0]
    if not same and not renamed:
        return 0
    drop = {id(producer[y]) for y in renamed.values()}  # the Casts whose output x now is
    keep = [n for n in g.node if id(n) not in drop]
    def source(v: str) -> str:
        while v in same:  # a round trip of a round trip
            v = same[v]
        return renamed.get(v, v)

    for n in keep:
        for i, v in enumerate(n.input):
            n.input[i] = source(v)
        for i, v in enumerate(n.output):
            n.output[i] = renamed.get(v, v)
    while True:  # a first Cast read only by the pairs removed goes too
        read = {v for n in keep for v in reads(n)} | outputs
        left = [n for n in keep if n.op_type != "Cast" or any(o in read for o in n.output)]
        if len(left) == len(keep):
            break
        keep = left
    gone = len(g.node) - len(keep)
    del g.node[:]
    g.node.extend(keep)
    return gone


def clear_value_info(model: onnx.ModelProto) -> None:
    """Shapes recorded before ORT's rewrites (a Gemm turned MatMul, folded BatchNorms) no longer hold."""
    del model.graph.value_info[:]


def quant_ready(src: Path, out: Path) -> Path:
    """ORT's quantization pre-processing (symbolic shape inference, then ONNX shape inference) without its
    optimization pass (done already, names kept). Where it fails (symbolic inference is fragile on some graphs)
    the file goes on without it: the quantizers infer what they need themselves."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    started = time.time()
    try:
        quant_pre_process(os.fspath(src), os.fspath(out), skip_optimization=True)
    except Exception:  # noqa: BLE001 - optional help, see docstring
        _remove_partial_model(started)
        return src
    model = onnx.load(os.fspath(out))
    if restore_if_branches(model, onnx.load(os.fspath(src))):
        onnx.save(model, os.fspath(out))
    return out


def _branch_ops(node: onnx.NodeProto) -> list[list[tuple[str, tuple[str, ...], tuple[str, ...]]]]:
    return [[(n.op_type, tuple(n.input), tuple(n.output)) for n in a.g.node] for a in node.attribute if a.HasField("g")]


def restore_if_branches(model: onnx.ModelProto, source: onnx.ModelProto) -> int:
    """Put back `source`'s branches of every If whose branches `model` rewrote; the number restored.

    ORT's symbolic shape inference copies the branch it thinks is taken over the other one when it finds the
    condition constant, and it finds `dim == 1` false for any symbolic dim: a TorchScript `squeeze(2)` exported
    with a dynamic height (`If(H == 1, Squeeze, Identity)`) lost its Squeeze, and every int8 export of a CRNN ran
    into "perm size: 3 does not match input rank: 4"."""
    originals = {n.name: n for g in [source.graph, *all_bodies(source.graph)] for n in g.node
                 if n.op_type == "If" and n.name}
    restored = 0
    for g in [model.graph, *all_bodies(model.graph)]:
        for n in g.node:
            orig = originals.get(n.name)
            if n.op_type != "If" or orig is None or _branch_ops(n) == _branch_ops(orig):
                continue
            del n.attribute[:]
            n.attribute.extend(orig.attribute)
            restored += 1
    return restored


# Where ORT's symbolic shape inference saves the model it could not finish (weights as external data) before it
# raises: the working directory, which for `edgescope serve` and `edgescope optimize` is the user's.
_PARTIAL = "sym_shape_infer_temp.onnx"


def _remove_partial_model(since: float) -> None:
    """Remove the copy ORT left in the working directory (written after `since`: never a file of the user's)."""
    p = Path(_PARTIAL)
    try:
        if p.stat().st_mtime < since - 1:
            return
        m = onnx.load(os.fspath(p), load_external_data=False)
        for t in m.graph.initializer:
            for e in t.external_data:
                if e.key == "location" and Path(e.value).name == e.value:  # beside it, by ORT's uuid name
                    (p.parent / e.value).unlink(missing_ok=True)
        p.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - gone already (another export's cleanup), or not ORT's: leave it
        pass
