"""Per-operator times on `litert-cpu/host`, measured by LiteRT's own profiler.

LiteRT 2.3.0's Python classes have no op profiler: `Interpreter` takes no profiler and has no way to read
one (`experimental_force_delegate_node_profiling` only changes what a profiler would record), and the
Python `CompiledModel` exposes no profiling option. The same wheel's `libLiteRt.so` exports the LiteRT C
API, whose compiled model records per-operator events when it is created with the runtime option
`enable_profiling` (google-ai-edge/LiteRT: litert/c/litert_profiler.h, litert/c/litert_profiler_event.h,
litert/c/options/litert_runtime_options.h; opaque options are TOML, identifier `runtime_options_string`,
runtime/litert_runtime_options.cc). This module drives that API through ctypes, with the CPU accelerator
(XNNPACK) on `threads` threads (CPU options identifier `xnnpack`, key `num_threads`).

Events (ProfiledEventData, 104 bytes in LiteRT 2.3.0 on x86-64: tag pointer, event type, start and elapsed
µs, two 24-byte memory records, two metadata words, source): an operator TFLite runs itself is an
OPERATOR_INVOKE_EVENT whose metadata1 is its node index (metadata2 its subgraph); XNNPACK times each of its
own operators (DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT, metadata1 = the operator's index in its delegate
partition, the tag its XNNPACK name: `Convolution (NHWC, F32) IGEMM`). XNNPACK operators are not TFLite
operators: a 1x1 CONV_2D runs as `Fully Connected`, a PAD before a conv is folded into it, a DEQUANTIZE of
fp16 weights disappears, a dynamically quantized layer adds a `Convert`. `attribute` maps them back to the
TFLite operators in execution order (see there).

The profiler counts whole microseconds, so an operator's figure is the mean of its runs between the
quartiles, not a median of integers (a 0.4 µs op would read 0).
"""

from __future__ import annotations

import ctypes as C
import os
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.errors import ModelRunError
from compiler.graph import Graph, Node

EVENT_BYTES = 104  # sizeof(ProfiledEventData), LiteRT 2.3.0, x86-64 (checked per event by _read_events)
OPERATOR = 2  # LiteRtProfilerEventType OPERATOR_INVOKE_EVENT: a TFLite kernel, metadata1 = node index
DELEGATE_OPS = (4, 8)  # DELEGATE_(PROFILED_)OPERATOR_INVOKE_EVENT: an operator inside a delegate partition
_KNOWN_TYPES = {1, 2, 4, 8, 16, 32, 64, 128, 256}
_HW_CPU = 1  # kLiteRtHwAcceleratorCpu
_LOCK_WRITE = 1  # kLiteRtTensorBufferLockModeWrite
_TENSOR_TYPE_BYTES = 256  # room for LiteRtRankedTensorType (element type, rank, 8 dims, 8 strides)


@dataclass(frozen=True, slots=True)
class Event:
    kind: int  # event type
    tag: str
    meta1: int
    meta2: int
    us: int


def _library() -> C.CDLL:
    import ai_edge_litert

    path = os.path.join(os.path.dirname(ai_edge_litert.__file__), "libLiteRt.so")
    try:
        lib = C.CDLL(path)
    except OSError as e:
        raise ModelRunError(f"LiteRT's C library is not available ({e})") from None
    for name in ("LiteRtCreateEnvironment", "LiteRtCreateModelFromFile", "LiteRtCompiledModelGetProfiler",
                 "LiteRtGetProfilerEvents", "LiteRtCreateOpaqueOptions"):
        if not hasattr(lib, name):
            raise ModelRunError(f"this LiteRT build has no {name}: per-operator profiling is not available")
    return lib


class _Api:
    """The few C calls used, each checked: a non-zero LiteRtStatus raises ModelRunError."""

    def __init__(self) -> None:
        self.lib = _library()
        self.lib.LiteRtGetProfileSummary.argtypes = [C.c_void_p, C.c_void_p, C.POINTER(C.c_char_p)]

    def __call__(self, fn: str, *args: Any) -> None:
        status = getattr(self.lib, fn)(*args)
        if status != 0:
            raise ModelRunError(f"LiteRT's {fn} failed (status {status})")


_NO_DELETE = C.CFUNCTYPE(None, C.c_void_p)(lambda p: None)  # option payloads stay owned by Python


def measure(model_path: str, feeds: Sequence[np.ndarray], threads: int, warmup: int, runs: int,
            out_shapes: Mapping[str, list[int]] | None = None) -> tuple[list[list[Event]], list[float]]:
    """(events of `runs` profiled runs (after `warmup` unprofiled ones), one list per run; each run's CPU time in
    seconds). `feeds` in the order of the model's inputs (signature 0, which is subgraph 0's input order);
    `out_shapes` {output tensor name: shape} where resized inputs change the outputs' shapes from the file's."""
    api = _Api()
    P = C.c_void_p
    env, model, opts, cm, prof = P(), P(), P(), P(), P()
    keep: list[Any] = []
    api("LiteRtCreateEnvironment", 0, None, C.byref(env))
    try:
        api("LiteRtCreateModelFromFile", env, os.fsencode(model_path), C.byref(model))
        api("LiteRtCreateOptions", C.byref(opts))
        api("LiteRtSetOptionsHardwareAccelerators", opts, _HW_CPU)
        for ident, toml in ((b"runtime_options_string", b"enable_profiling = true\n"),
                            (b"xnnpack", f"num_threads = {int(threads)}\n".encode())):
            payload, opaque = C.create_string_buffer(toml), P()
            keep.append(payload)
            api("LiteRtCreateOpaqueOptions", ident, C.cast(payload, P), _NO_DELETE, C.byref(opaque))
            api("LiteRtAddOpaqueOptions", opts, opaque)
        api("LiteRtCreateCompiledModel", env, model, opts, C.byref(cm))
        try:
            ins, outs = _buffers(api, env, model, cm, feeds, out_shapes or {})
            run = lambda: api("LiteRtRunCompiledModel", cm, 0, len(ins), ins, len(outs), outs)  # noqa: E731
            for _ in range(warmup):
                run()
            api("LiteRtCompiledModelGetProfiler", cm, C.byref(prof))
            api("LiteRtResetProfiler", prof)
            api("LiteRtStartProfiler", prof)
            cpu = []
            for _ in range(runs):
                c0 = time.process_time()
                run()
                cpu.append(time.process_time() - c0)
            api("LiteRtStopProfiler", prof)
            events = _read_events(api, prof)
            for b in list(ins) + list(outs):
                api.lib.LiteRtDestroyTensorBuffer(P(b))
        finally:
            api.lib.LiteRtDestroyCompiledModel(cm)
    finally:
        if opts:
            api.lib.LiteRtDestroyOptions(opts)
        if model:
            api.lib.LiteRtDestroyModel(model)
        api.lib.LiteRtDestroyEnvironment(env)
    return split_runs(events), cpu


def _buffers(api: _Api, env: Any, model: Any, cm: Any, feeds: Sequence[np.ndarray],
             out_shapes: Mapping[str, list[int]]) -> tuple[Any, Any]:
    """Input buffers holding `feeds` (inputs resized to them where the model's shapes differ), output buffers
    (of `out_shapes` where given)."""
    P = C.c_void_p
    sig = P()
    api("LiteRtGetModelSignature", model, 0, C.byref(sig))
    n_in, n_out = C.c_size_t(), C.c_size_t()
    api("LiteRtGetNumSignatureInputs", sig, C.byref(n_in))
    api("LiteRtGetNumSignatureOutputs", sig, C.byref(n_out))
    if n_in.value != len(feeds):
        raise ModelRunError(f"LiteRT's compiled model has {n_in.value} inputs, {len(feeds)} were generated")
    types = []
    for i, x in enumerate(feeds):
        t, tt = P(), C.create_string_buffer(_TENSOR_TYPE_BYTES)
        api("LiteRtGetSignatureInputTensorByIndex", sig, i, C.byref(t))
        api("LiteRtGetRankedTensorType", t, tt)
        rank, dims = struct.unpack_from("<I", tt.raw, 4)[0] & 0x7F, list(x.shape)
        if rank != len(dims) or list(struct.unpack_from(f"<{rank}i", tt.raw, 8)) != dims:
            arr = (C.c_int * len(dims))(*dims)
            api("LiteRtCompiledModelResizeInputTensorNonStrict", cm, 0, i, arr, len(dims))
            _set_dims(tt, dims)
        types.append(tt)
    ins = (P * len(feeds))()
    for i, (x, tt) in enumerate(zip(feeds, types)):
        ins[i] = _buffer(api, env, cm, tt, "LiteRtGetCompiledModelInputBufferRequirements", i)
        _write(api, ins[i], np.ascontiguousarray(x))
    if out_shapes:  # inputs were resized: LiteRT re-allocates and propagates the shapes to the outputs
        layouts = C.create_string_buffer(n_out.value * _TENSOR_TYPE_BYTES)
        api("LiteRtGetCompiledModelOutputTensorLayouts", cm, 0, n_out.value, layouts, True)
    outs = (P * n_out.value)()
    for i in range(n_out.value):
        t, tt = P(), C.create_string_buffer(_TENSOR_TYPE_BYTES)
        api("LiteRtGetSignatureOutputTensorByIndex", sig, i, C.byref(t))
        api("LiteRtGetRankedTensorType", t, tt)
        name = C.c_char_p()
        api("LiteRtGetTensorName", t, C.byref(name))
        shape = out_shapes.get((name.value or b"").decode("utf-8", "replace"))
        if shape is not None:
            _set_dims(tt, list(shape))
        outs[i] = _buffer(api, env, cm, tt, "LiteRtGetCompiledModelOutputBufferRequirements", i)
    return ins, outs


def _set_dims(tensor_type: Any, dims: list[int]) -> None:
    """Write `dims` into a LiteRtRankedTensorType: element type (4 bytes), then LiteRtLayout (rank in the low 7
    bits of its first word, then the dimensions as int32)."""
    rank = struct.unpack_from("<I", tensor_type.raw, 4)[0]
    struct.pack_into("<I", tensor_type, 4, (rank & ~0x7F) | len(dims))
    struct.pack_into(f"<{len(dims)}i", tensor_type, 8, *dims)


def _buffer(api: _Api, env: Any, cm: Any, tensor_type: Any, requirements: str, index: int) -> int:
    req, buf = C.c_void_p(), C.c_void_p()
    api(requirements, cm, 0, index, C.byref(req))
    api("LiteRtCreateManagedTensorBufferFromRequirements", env, tensor_type, req, C.byref(buf))
    return int(buf.value or 0)


def _write(api: _Api, buf: int, x: np.ndarray) -> None:
    size, addr = C.c_size_t(), C.c_void_p()
    api("LiteRtGetTensorBufferSize", C.c_void_p(buf), C.byref(size))
    if size.value < x.nbytes:
        raise ModelRunError(f"LiteRT's input buffer holds {size.value} bytes, the input has {x.nbytes}")
    api("LiteRtLockTensorBuffer", C.c_void_p(buf), C.byref(addr), _LOCK_WRITE)
    C.memmove(addr, x.ctypes.data, x.nbytes)
    api("LiteRtUnlockTensorBuffer", C.c_void_p(buf))


def _read_events(api: _Api, prof: Any) -> list[Event]:
    n = C.c_int()
    api("LiteRtGetNumProfilerEvents", prof, C.byref(n))
    raw = C.create_string_buffer(max(n.value, 1) * EVENT_BYTES)
    api("LiteRtGetProfilerEvents", prof, n.value, raw)
    data, out = raw.raw, []
    for i in range(n.value):
        off = i * EVENT_BYTES
        tag_ptr, kind = struct.unpack_from("<Qi", data, off)
        elapsed, = struct.unpack_from("<Q", data, off + 24)
        meta1, meta2, source = struct.unpack_from("<QQi", data, off + 80)
        if not tag_ptr or kind not in _KNOWN_TYPES or source not in (0, 1, 2):
            raise ModelRunError("LiteRT's profiler events have an unexpected layout (not LiteRT 2.3.0's)")
        out.append(Event(kind, C.string_at(tag_ptr).decode("utf-8", "replace"), meta1, meta2, elapsed))
    return out


def split_runs(events: Sequence[Event]) -> list[list[Event]]:
    """Operator events grouped by run: each run opens with the interpreter's `Invoke` event (type DEFAULT) of
    subgraph 0. An IF or WHILE invokes its body subgraphs inside the run: their `Invoke` events (metadata2 = the
    subgraph) stay in it, one per execution of that body (they used to open runs of their own, so hey_jarvis's
    runs alternated with empty ones and every operator read about half its time)."""
    runs: list[list[Event]] = []
    for e in events:
        if e.kind == 1 and e.tag == "Invoke" and e.meta2 == 0:
            runs.append([])
        elif runs and (e.kind == OPERATOR or e.kind in DELEGATE_OPS or (e.kind == 1 and e.tag == "Invoke")):
            runs[-1].append(e)
    return runs


# XNNPACK operator names (the tag up to " (") each TFLite builtin may run as. Anything else XNNPACK runs
# (a Convert that quantizes activations, a reshape or copy it inserts) goes to the TFLite operator it serves.
# XNNPACK runs a quantized (QS8) sigmoid or tanh as a 256-entry lookup table, whose operator this build names
# `Invalid Unary Op` (EfficientNet-B0's int8-static file: 49 such events, one per LOGISTIC; they were charged to
# the operators after them, and the 49 LOGISTICs read 0).
_LUT = "Invalid Unary Op"
# XNNPACK runs a MUL of a tensor by itself as `Square (NC)` (LiteRT 2.3.0: litert_elementwise's MUL chains open with
# MUL(x, x)): it was charged to the next MUL, and every MUL of those chains read its successor's time, the last 0.
_XNN_NAMES: dict[str, tuple[str, ...]] = {
    "CONV_2D": ("Convolution", "Fully Connected"), "DEPTHWISE_CONV_2D": ("Convolution",),
    "TRANSPOSE_CONV": ("Deconvolution",), "FULLY_CONNECTED": ("Fully Connected", "Batch Matrix Multiply"),
    "BATCH_MATMUL": ("Batch Matrix Multiply", "Fully Connected"), "ADD": ("Add",), "SUB": ("Subtract",),
    "MUL": ("Multiply", "Square"), "DIV": ("Divide",), "MAXIMUM": ("Maximum",), "MINIMUM": ("Minimum",),
    "SQUARED_DIFFERENCE": ("Squared Difference",), "PRELU": ("PReLU",), "MEAN": ("Mean",), "SUM": ("Sum",),
    "REDUCE_MAX": ("Max",), "REDUCE_MIN": ("Min",), "SOFTMAX": ("Softmax",), "LOGISTIC": ("Sigmoid", _LUT),
    "TANH": ("Tanh", _LUT), "HARD_SWISH": ("HardSwish",), "GELU": ("GELU",), "ELU": ("ELU",),
    "LEAKY_RELU": ("Leaky ReLU",), "RELU": ("Clamp",), "RELU6": ("Clamp",), "RELU_N1_TO_1": ("Clamp",),
    "EXP": ("Exp",), "LOG": ("Log",), "SQRT": ("Square Root",), "RSQRT": ("Reciprocal Square Root",),
    "NEG": ("Negate",), "ABS": ("Abs",), "SQUARE": ("Square",), "FLOOR": ("Floor",), "CEIL": ("Ceiling",),
    "ROUND": ("Bankers Rounding",), "SIN": ("Sine",), "COS": ("Cosine",), "TRANSPOSE": ("Transpose",),
    "CONCATENATION": ("Concatenate", "Copy"), "PACK": ("Concatenate", "Copy"), "SLICE": ("Slice", "Copy"),
    "STRIDED_SLICE": ("Slice", "Copy"), "SPLIT": ("Split", "Slice", "Copy"), "PAD": ("Constant Pad",),
    "RESIZE_BILINEAR": ("Resize Bilinear",), "AVERAGE_POOL_2D": ("Average Pooling",),
    "MAX_POOL_2D": ("Max Pooling", "ArgMax Pooling"), "RESHAPE": ("Static Reshape", "Copy"),
    "SQUEEZE": ("Static Reshape", "Copy"), "EXPAND_DIMS": ("Static Reshape", "Copy", "Expand Dims"),
    "DEPTH_TO_SPACE": ("Depth To Space",), "SPACE_TO_DEPTH": ("Space To Depth",), "QUANTIZE": ("Convert",),
    "DEQUANTIZE": ("Convert",), "CAST": ("Convert",), "BROADCAST_TO": ("Broadcast",),
    # MediaPipe's custom operators, which XNNPACK takes by name (compiler.frontends.tflite_custom)
    "Convolution2DTransposeBias": ("Deconvolution",), "MaxPoolingWithArgmax2D": ("ArgMax Pooling",),
    "MaxUnpooling2D": ("Unpooling",),
}
_TRAILING = frozenset({"Clamp"})  # XNNPACK operators that finish the operator before them (a fused RELU6)
_LOOKAHEAD = 12  # TFLite operators XNNPACK may fold away between two it runs (PADs, RESHAPEs)


def _compatible(op_type: str, tag: str) -> bool:
    name = tag.split(" (")[0].strip().lower()
    known = _XNN_NAMES.get(op_type)
    if known is not None:
        return name in (k.lower() for k in known)
    return name == op_type.replace("_", " ").lower()


def execution_subsets(graph: Graph, builtin: set[int]) -> list[tuple[bool, list[int]]]:
    """How TFLite orders the operators once a delegate took all but `builtin`: [(delegated, node indices)] in
    execution order. TFLite's partitioner (lite/graph_info.cc, PartitionGraphIntoIndependentNodeSubsets, greedy)
    grows each subset with every ready node of the subset's kind, scanning in node order until nothing more is
    ready, so a delegate partition can take later independent nodes ahead of a TFLite-run node before them."""
    return _subsets(graph.nodes, builtin)


def _subsets(nodes: Sequence[Node], builtin: set[int]) -> list[tuple[bool, list[int]]]:
    graph = Graph("", "tflite", list(nodes), {}, [], [])
    produced = {v for n in graph.nodes for v in n.outputs if v}
    ready = {v for n in graph.nodes for v in n.inputs if v and v not in produced}
    left = list(range(len(graph.nodes)))
    subsets: list[tuple[bool, list[int]]] = []
    while left:
        kind: bool | None = None
        nodes: list[int] = []
        progress = True
        while progress:
            progress = False
            for i in left:
                n = graph.nodes[i]
                if all(not v or v in ready for v in n.inputs) and (kind is None or (i not in builtin) == kind):
                    kind = i not in builtin
                    nodes.append(i)
                    ready.update(v for v in n.outputs if v)
                    progress = True
            left = [i for i in left if i not in set(nodes)]
        if not nodes:  # a cycle or an input nothing produces: keep the file's order for the rest
            nodes, kind = left, False
            left = []
        subsets.append((bool(kind), nodes))
    return subsets


def attribute(graph: Graph, run: Sequence[Event], skip: frozenset[str] = frozenset(),
              kernels: dict[str, list[str]] | None = None, calls: dict[str, float] | None = None) -> dict[str, float]:
    """{TFLite operator id: µs} of one run (`_attribute` for subgraph 0). The operators of an IF / WHILE body
    (compiler.frontends.tflite reads them as nodes with a parent) are attributed from their subgraph's events, one
    execution of the body at a time (each opens with the body's `Invoke`); `calls` (if given) gets each body
    operator's executions in the run. The parent's event spans its bodies' events: their time is taken from it,
    so the parent keeps its own (choosing the branch, copying operands, allocating the body's tensors)."""
    from compiler.frontends.tflite import body_subgraphs, top_nodes

    events = [e for e in run if e.kind != 1]
    out = _attribute(top_nodes(graph), [e for e in events if e.meta2 == 0], skip, kernels, 0)
    bodies = body_subgraphs(graph)
    if not bodies:
        return out
    by_id = {n.id: n for n in graph.nodes}
    by_sg: dict[int, list[Node]] = {}
    for (sg, _), nid in sorted(bodies.items()):
        by_sg.setdefault(sg, []).append(by_id[nid])
    for sg, nodes in by_sg.items():
        executions: list[list[Event]] = []
        for e in run:
            if e.meta2 != sg:
                continue
            if e.kind == 1:
                executions.append([])
            elif executions:
                executions[-1].append(e)
        for nd in nodes:
            out.setdefault(nd.id, 0.0)
            if calls is not None:
                calls[nd.id] = float(len(executions))
        for ex in executions:
            for nid, us in _attribute(nodes, ex, skip, kernels, sg).items():
                out[nid] = out.get(nid, 0.0) + us
                parent = by_id[nid].parent
                out[parent] = max(0.0, out.get(parent, 0.0) - us)
    return out


def _attribute(nodes: Sequence[Node], run: Sequence[Event], skip: frozenset[str],
               kernels: dict[str, list[str]] | None, subgraph: int) -> dict[str, float]:
    """{TFLite operator id: µs} of one run; `kernels` (if given) collects the kernel names each operator ran. Operators TFLite ran itself come by node index (an IF's or WHILE's
    event spans the subgraphs it ran: `attribute` takes out those it reads as nodes). The XNNPACK operators of each delegate partition (`execution_subsets`)
    are matched in order to the partition's TFLite operators (less `skip`, those folded at prepare): each takes
    the next operator, within a few, that it can implement; operators passed over were folded into a neighbour
    by XNNPACK (time 0); an XNNPACK operator that matches none is charged to the next matched one of its
    partition (at its end, the previous)."""
    builtin = {e.meta1 for e in run if e.kind == OPERATOR and e.meta2 == subgraph and e.meta1 < len(nodes)}
    subsets = _subsets(nodes, builtin)
    where = {i: k for k, (_, idx) in enumerate(subsets) for i in idx}
    lists = [[i for i in idx if nodes[i].id not in skip] if deleg else [] for deleg, idx in subsets]
    out = {nodes[i].id: 0.0 for lst in lists for i in lst}
    cur, pos, last, pending, caller = -1, 0, None, 0.0, None
    waiting: list[str] = []  # kernels of `pending`
    for e in run:
        if e.kind == OPERATOR:
            if e.meta2 == subgraph and e.meta1 < len(nodes):
                pending, last, waiting = _flush(out, pending, waiting, last, lists[cur] if cur >= 0 else [], pos,
                                                nodes, kernels)
                caller, cur = nodes[e.meta1].id, where[e.meta1]
                out[caller] = out.get(caller, 0.0) + e.us
                if kernels is not None:
                    kernels.setdefault(caller, []).append(f"TFLite {e.tag}")
            elif caller is not None:
                out[caller] += e.us
            continue
        if cur < 0 or not subsets[cur][0]:  # the delegate partition after the TFLite-run subset
            cur, pos, last = next((k for k in range(cur + 1, len(subsets)) if subsets[k][0]), len(subsets)), 0, None
            if cur >= len(subsets):
                break
        cand = lists[cur]
        hit = next((j for j in range(pos, min(pos + _LOOKAHEAD, len(cand)))
                    if _compatible(nodes[cand[j]].op_type, e.tag)), None)
        if hit is None and last is not None and e.tag.split(" (")[0] in _TRAILING:
            out[last] += e.us  # an activation XNNPACK did not fuse into the operator before it
            if kernels is not None:
                kernels.setdefault(last, []).append(e.tag)
            continue
        if hit is None:
            pending += e.us
            waiting.append(e.tag)
            continue
        last, pos = nodes[cand[hit]].id, hit + 1
        out[last] += e.us + pending
        pending = 0.0
        if kernels is not None:
            kernels.setdefault(last, []).extend([*waiting, e.tag])
        waiting = []
    if 0 <= cur < len(lists):
        _flush(out, pending, waiting, last, lists[cur], pos, nodes, kernels)
    return out


def _flush(out: dict[str, float], pending: float, waiting: list[str], last: str | None, cand: list[int], pos: int,
           nodes: Any, kernels: dict[str, list[str]] | None) -> tuple[float, None, list[str]]:
    """Charge XNNPACK time no operator matched to the last matched operator of the partition, else the next."""
    target = last if last is not None else (nodes[cand[pos]].id if pos < len(cand) else None)
    if (pending or waiting) and target is not None:
        out[target] += pending
        if kernels is not None:
            kernels.setdefault(target, []).extend(waiting)
    return 0.0, None, []


def timings(per_run: Sequence[Mapping[str, float]]) -> dict[str, tuple[float, float, float, int]]:
    """{operator id: (central ms, p25 ms, p75 ms, runs)}: central = mean of the runs between the quartiles."""
    ids = {k for r in per_run for k in r}
    out = {}
    for k in ids:
        v = np.sort(np.array([r.get(k, 0.0) for r in per_run], dtype=np.float64)) / 1e3
        lo, hi = np.percentile(v, 25), np.percentile(v, 75)
        mid = v[(v >= lo) & (v <= hi)]
        out[k] = (float(mid.mean()) if mid.size else float(np.median(v)), float(lo), float(hi), len(v))
    return out


def folded_at_prepare(graph: Graph) -> frozenset[str]:
    """Operators whose inputs are all constants (DEQUANTIZE of fp16 or int8 weights, DENSIFY): LiteRT runs
    them once when it prepares the model, so no time of theirs is expected."""
    return frozenset(n.id for n in graph.nodes if n.inputs and all(
        v and v in graph.values and graph.values[v].weight is not None for v in n.inputs))


def _output_shapes(path: str, graph: Graph, feeds: Mapping[str, np.ndarray]) -> dict[str, list[int]]:
    """{output tensor name: shape} at the inputs' shapes, where they differ from the file's (LiteRT's own shape
    propagation, by its interpreter)."""
    if all(graph.values[n].shape == list(feeds[n].shape) for n in graph.inputs):
        return {}
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=path)
    for d, n in zip(it.get_input_details(), graph.inputs):
        it.resize_tensor_input(d["index"], list(feeds[n].shape), strict=False)
    it.allocate_tensors()
    return {d["name"]: [int(x) for x in d["shape"]] for d in it.get_output_details()}


def per_op_child(payload: dict[str, Any]) -> dict[str, Any]:
    """Sandbox child: {"tasks": {op id: [central ms, p25 ms, p75 ms, runs]}, "kernels": {op id: [kernel names]},
    "whole_ms": median per-run sum of the events} for the model at payload["model"]."""
    from compiler.frontends import tflite
    from compiler.inputs import generate_inputs

    graph = tflite.load(payload["model"])
    feeds = generate_inputs(graph, payload.get("input_shapes") or {}, payload.get("input_values") or {})
    runs, cpu_s = measure(payload["model"], [feeds[n] for n in graph.inputs], int(payload["threads"]),
                          int(payload["warmup"]), int(payload["runs"]), _output_shapes(payload["model"], graph, feeds))
    if not runs or not any(runs):
        raise ModelRunError("LiteRT's profiler recorded no operator events")
    skip = folded_at_prepare(graph)
    kernels: dict[str, list[str]] = {}
    calls: list[dict[str, float]] = [{} for _ in runs]
    tasks = timings([attribute(graph, r, skip, kernels if i == 0 else None, calls[i]) for i, r in enumerate(runs)])
    body_calls = {k: float(np.median([c.get(k, 0.0) for c in calls])) for k in set().union(*calls)}
    # XNNPACK's timers are wall clock: time other processes take the CPU away lands in whichever operator was
    # running. Preemption comes in bursts, so an operator's mean between the quartiles is its unpreempted time,
    # unless it is long enough to be preempted in most runs (an 8 ms conv on a machine loaded 7 deep read 4x its
    # time). The process's CPU time per run (1 thread: the inference) bounds the whole: above it, every operator
    # is scaled down to it.
    cpu_ms = float(np.median(cpu_s)) * 1e3 if cpu_s else 0.0
    total = sum(v[0] for v in tasks.values())
    scale = cpu_ms / total if int(payload["threads"]) == 1 and cpu_ms and total > cpu_ms else 1.0
    return {"tasks": {k: [v[0] * scale, v[1] * scale, v[2] * scale, v[3], body_calls.get(k, 1.0)]
                      for k, v in tasks.items()},
            "kernels": kernels, "whole_ms": float(np.median([sum(e.us for e in r) for r in runs])) / 1e3,
            "cpu_ms": cpu_ms, "scaled_to_cpu": scale}


def per_op_many_child(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """`per_op_child` for each of payload["models"] in one child (LiteRT's calibration: one start-up, not 50)."""
    common = {k: v for k, v in payload.items() if k != "models"}
    return [per_op_child({**common, "model": m}) for m in payload["models"]]
