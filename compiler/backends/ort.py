"""ONNX Runtime CPU backend, target `ort-cpu/host`: compile (ORT's graph optimizer) and profile.

Compile: a sandboxed child opens the model with `graph_optimization_level` (default ALL:
constant folding, Conv/BN/activation fusions, MatMul+Add -> Gemm, LayerNorm/GELU/SkipLayerNorm
fusions, NCHWc layout with ReorderInput/ReorderOutput) and `optimized_model_filepath`, which
writes the graph ORT will execute. The parent renames nodes without a unique name to their
Graph id (so profiler events, which carry node names, key straight into the compiled Graph),
loads it through the ONNX frontend and rebuilds provenance with `provenance.map_provenance`:
ORT keeps value names through most fusions, names fused nodes after a source node or value
(`/x/MatMul/MatMulAddFusion`, `<value>_nchwc`), and the rest is matched structurally between
the values both graphs share. Source nodes with no task are listed in `Graph.eliminated`.

Profile: a sandboxed child opens the *compiled* file with optimizations off (it is already
optimized; re-optimizing could rename nodes), sequential execution, `threads` intra-op threads
and 1 inter-op thread. Latency: `warmup` runs, then `runs` timed `session.run` calls without the
profiler (median, p90). Per task: a second session with `enable_profiling`, `warmup` + `runs`
runs; node events (`cat == "Node"`, name `<node>_kernel_time`, `dur` in µs) of the last `runs`
`model_run` spans give median and p25/p75 per node. Peak memory: the kernel's resident-set
high-water mark (VmHWM) is reset after imports (`/proc/self/clear_refs` = 5) and read after the
timed runs of the first session; minus the RSS at reset, this is the memory that loading and
running the model added (weights, arena, activations). Without clear_refs, ru_maxrss is used.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from collections.abc import Collection, Mapping
from typing import Any

from compiler.backends.provenance import fill_shapes_from_source, map_provenance
from compiler.errors import ModelRunError, SandboxError
from compiler.frontends import onnx as onnx_frontend
from compiler.graph import Graph
from compiler.host import cpu_name, peak_rss, reset_peak  # simulator.calibration takes cpu_name from here
from compiler.profile import (Profile, ProfileSettings, Round, TaskTiming, fast_cpu_ms, measure_rounds,
                              profile_in_sandbox, timed_runs)
from compiler.sandbox import DEFAULT_MEMORY_LIMIT, Limits, run
from compiler.timing_lock import timing_alone

TARGET = "ort-cpu/host"
OPT_LEVELS = ("disable", "basic", "extended", "layout", "all")
NAME_SUFFIXES = ("_nchwc", "_bn_nchwc", "_fused", "/MatMulAddFusion", "/MatMulScaleFusion/", "/MatMulScaleFusion")
# torch.onnx's dynamo exporter names each node `node_<FX node name>`; ORT names a node of an fp16 graph it runs in
# fp32 between its own Casts after its output (`InsertedPrecisionFreeCast_<output>`, `..._nchwc` once NCHWc)
NAME_PREFIXES = ("node_", "InsertedPrecisionFreeCast_")


# -- compile -------------------------------------------------------------------------------------

# ORT's optimizers take more than linear time in the graph's size (an LLM-like export, ENABLE_ALL: ~19 s CPU at 100,000
# nodes, ~65 s at 200,000; 10 s of basic optimizations alone at 100,000 took 128 s of wall time at load 16 on 2 cores):
# a large graph gets a longer wall-clock limit than `timeout_s`, 5 ms per node (300 s from 60,000 nodes, 1,000 s at
# 200,000).
COMPILE_S_PER_NODE = 0.005

def compile(src_model_path: str | os.PathLike[str], out_path: str | os.PathLike[str], source: Graph,
            opt_level: str = "all", timeout_s: float = 300.0,
            memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT) -> Graph:
    """Optimize with ORT, save the executed graph to `out_path`, return it with provenance."""
    if opt_level not in OPT_LEVELS:
        raise ValueError(f"opt_level must be one of {OPT_LEVELS}")
    out_path = Path(out_path)
    src = Path(src_model_path)
    named = out_path.with_name(out_path.name + ".src.onnx")
    restored = out_path.with_name(out_path.name + ".float.onnx")
    if quantized_upload(source):
        # A QDQ upload: its float graph, the file its fp32 export writes and every option but int8-static
        # starts from (compiler.optimize.onnx_qdq), so the measured tasks are those the options change
        src = _float_graph(src, restored, timeout_s, memory_limit_bytes)
    if any(not n.name or n.name != n.id for n in source.nodes) and _name_nodes(src, named):
        src = named  # ORT sees the source with names = ids, so its fused names point at ids
    # Models with LayerNormalization: also optimize their fp16 export, to record which LayerNormalizations
    # ORT leaves unfused there (simulator.ort_fp16.fp16_unfused_norms).
    probe = opt_level == "all" and any(n.op_type == "LayerNormalization" for n in source.nodes)
    payload = {"src": os.path.abspath(src), "out": os.path.abspath(out_path), "opt_level": opt_level}
    timeout_s = max(timeout_s, COMPILE_S_PER_NODE * len(source.nodes))
    try:
        info = run("compiler.backends.ort:_compile_child", payload,
                   Limits(timeout_s, memory_limit_bytes, what=f"compiling for {TARGET}"))
        if probe:
            info["fp16_plain_norms"] = _probe_fp16(payload, timeout_s, memory_limit_bytes)
    finally:
        named.unlink(missing_ok=True)
        restored.unlink(missing_ok=True)
    _tidy_saved(out_path, source.inputs)
    compiled = onnx_frontend.load(out_path)
    corr = map_provenance(source, compiled, NAME_SUFFIXES, name_prefixes=NAME_PREFIXES)
    fill_shapes_from_source(source, compiled, corr)
    covered = {s for n in compiled.nodes for s in n.source_nodes}
    compiled.metadata.update({
        "target": TARGET, "runtime": f"onnxruntime {info['version']}", "opt_level": opt_level,
        "source_nodes": str(len(source.nodes)), "source_nodes_covered": str(len(covered)),
        "source_nodes_eliminated": str(len(compiled.eliminated)),
    })
    if info.get("fp16_plain_norms") is not None:
        compiled.metadata["fp16_plain_norms"] = json.dumps(info["fp16_plain_norms"])
    return compiled


# Graph.metadata key: compile the file as it is written, QDQ pairs included (an export being measured:
# compiler.optimize.export.measure_export), not its float graph
AS_WRITTEN = "compile_as_written"


def quantized_upload(source: Graph) -> bool:
    """An ONNX upload with a DequantizeLinear in its top-level graph (a QDQ file: quantize_static's, AI Hub's, torch's
    TorchScript export of a quantized module): ort-cpu/host compiles and measures its float graph, as the exporter
    writes it for fp32 and starts every option from but int8-static, which writes the upload as it is. Compiled as
    uploaded (ORT's QLinearConv / QGemm), every option's prediction was scaled from the int8 kernels' measured times
    and its files, written float, measured 49-64% slower (torchvision's quantized MobileNetV2)."""
    if source.format != "onnx" or source.metadata.get(AS_WRITTEN) == "true":
        return False
    return any(n.op_type == "DequantizeLinear" and not n.parent for n in source.nodes)


def _float_graph(src: Path, out: Path, timeout_s: float, memory_limit_bytes: int | None) -> Path:
    """The fp32 export of the QDQ upload `src` (its float graph), written to `out` in a sandboxed child (ORT's
    optimizers run on the upload there); `src` itself where ORT's tools fail on it."""
    try:
        run("compiler.backends.ort:_float_child", {"src": os.path.abspath(src), "out": os.path.abspath(out)},
            Limits(timeout_s, memory_limit_bytes, what=f"restoring the quantized model's float graph for {TARGET}"))
    except (SandboxError, ModelRunError):  # ORT's tools failed on it: compiled as uploaded
        return src
    return out


def _float_child(payload: dict[str, Any]) -> dict[str, Any]:
    from compiler.optimize.onnx_export import export_onnx
    from compiler.vocabulary.options import OptionError

    try:
        export_onnx(payload["src"], payload["out"], "fp32", check=False)
    except OptionError as e:
        raise ModelRunError(str(e)) from None
    return {}


def fold(src: str | os.PathLike[str], out: str | os.PathLike[str], timeout_s: float = 300.0,
         memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT) -> Path:
    """ORT's basic optimizations only (constant folding, with shape arithmetic on static input shapes, and
    semantics-preserving fusions of standard ops), saved to `out`: a graph of standard ops whose every shape
    ONNX shape inference can follow, for resolving the shapes of a model the ORT target does not compile.
    Without common-subexpression elimination: it merges a branch into its twin (weights the TorchScript exporter
    wrote once, read through Identity: tied or shared layers, a decoder's cross-attention over one memory), and
    the merged copy's values, missing from the folded graph, stayed unknown on every predicted target."""
    run("compiler.backends.ort:_compile_child",
        {"src": os.path.abspath(src), "out": os.path.abspath(out), "opt_level": "basic",
         "disabled": ["CommonSubexpressionElimination"]},
        Limits(timeout_s, memory_limit_bytes, what="resolving shapes with ONNX Runtime"))
    return Path(out)


def session_options(ort: Any, opt_level: str, threads: int = 1) -> Any:
    so = ort.SessionOptions()
    so.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "layout": getattr(ort.GraphOptimizationLevel, "ORT_ENABLE_LAYOUT", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt_level]
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3  # errors only; the NCHWc "hardware specific" warning is expected
    return so


def _open(ort: Any, path: str, so: Any, disabled: list[str] | None = None) -> Any:
    try:
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"], disabled_optimizers=disabled or [])
    except Exception as e:
        raise ModelRunError(f"ONNX Runtime cannot load the model: {_clean(str(e))}") from None


def _compile_child(payload: dict[str, Any]) -> dict[str, Any]:
    import onnxruntime as ort

    so = session_options(ort, payload["opt_level"])
    so.optimized_model_filepath = payload["out"]
    _open(ort, payload["src"], so, payload.get("disabled"))
    return {"version": ort.__version__}


def _probe_fp16(payload: dict[str, Any], timeout_s: float, memory_limit_bytes: int | None) -> list[str] | None:
    # A child of its own: ORT can crash (SIGSEGV) optimizing an fp16 export of a model whose fp32 form it
    # compiles and runs fine (a TorchScript-exported transformer with dynamic batch and length), and an
    # optional probe must never fail the analysis.
    try:
        return run("compiler.backends.ort:_fp16_probe_child", payload,
                   Limits(timeout_s, memory_limit_bytes, what="probing the fp16 export"))
    except (SandboxError, ModelRunError):
        return None


def _fp16_probe_child(payload: dict[str, Any]) -> list[str] | None:
    import onnxruntime as ort

    return _fp16_plain_norms(ort, payload["src"], payload["opt_level"])


def _fp16_plain_norms(ort: Any, src: str, opt_level: str) -> list[str] | None:
    """Names of the LayerNormalization nodes ORT keeps as they are when it optimizes the model's fp16 export
    (`optimize` fp16). In fp32 ORT fuses each residual Add + LayerNormalization into SkipLayerNormalization;
    in fp16 it does so only where its Cast insertion runs the LayerNormalization in fp32 (an fp16 node
    between nodes that all need fp32 inputs is forced to fp32), which depends on what its other fusions have
    left around it: asking ORT is the only faithful answer. None if the model cannot be exported to fp16."""
    import tempfile

    import onnx

    from compiler.optimize.onnx_export import export_onnx

    try:
        with tempfile.TemporaryDirectory() as td:
            half = export_onnx(src, Path(td) / "fp16.onnx", "fp16", check=False).path
            so = session_options(ort, opt_level)
            so.optimized_model_filepath = os.path.join(td, "fp16.opt.onnx")
            ort.InferenceSession(os.fspath(half), so, providers=["CPUExecutionProvider"])
            model = onnx.load(so.optimized_model_filepath, load_external_data=False)
    except Exception:  # noqa: BLE001 - an fp16 export is an optional probe, never a compile failure
        return None
    return sorted(n.name for n in model.graph.node if n.op_type == "LayerNormalization")


def _name_nodes(path: Path, out: Path | None = None) -> bool:
    """Give every node, in bodies too, its Graph id as name (writing to `out`, default in place) when some
    name is empty or repeated: ORT rejects repeated names, and profiler events carry names, so names
    equal to ids key straight into the Graph. Returns whether anything was renamed."""
    import onnx

    from compiler.frontends.onnx_scopes import name_by_id

    model = onnx.load(os.fspath(path), load_external_data=False)
    if not name_by_id(model):
        return False
    onnx.save(model, os.fspath(out or path))
    return True


def _tidy_saved(path: Path, uploaded: Collection[str]) -> None:
    """The saved graph, read once: nodes named by id (_name_nodes) and inputs nothing reads taken out."""
    import onnx

    from compiler.frontends.onnx_scopes import name_by_id

    model = onnx.load(os.fspath(path), load_external_data=False)
    renamed = name_by_id(model)
    if drop_unread_inputs(model, uploaded) or renamed:
        onnx.save(model, os.fspath(path))


def drop_unread_inputs(model: Any, uploaded: Collection[str]) -> bool:
    """Take out of the saved graph's inputs those that no node (in bodies too) reads, that are not among the
    upload's own inputs (`uploaded`: weights excluded) and that carry no initializer. An IR 3 file lists every
    initializer as an input; where ORT drops one (ConstantSharing keeps one of equal constants, folding consumes
    others) the saved file kept the input without it, and every run then had to be fed it: the ONNX model zoo's
    light ShuffleNet v1 saved with 251 such inputs ran in 4.09 ms of thread CPU time fed all 252 against 3.40 fed
    the image alone, as its upload runs (interleaved, 2026-12-06 11:09 UTC, an Emerald Rapids). Returns whether
    any was taken out (`model`, an onnx ModelProto, is changed in place)."""
    from compiler.frontends.onnx_scopes import Placed, walk

    g = model.graph
    read = {x for p in walk(g) if isinstance(p, Placed) for x in p.proto.input} | {o.name for o in g.output}
    keep = read | set(uploaded) | {i.name for i in g.initializer}
    kept = [i for i in g.input if i.name in keep]
    if len(kept) == len(g.input):
        return False
    del g.input[:]
    g.input.extend(kept)
    return True


# -- profile -------------------------------------------------------------------------------------

def profile(model_path: str | os.PathLike[str], settings: ProfileSettings = ProfileSettings()) -> Profile:
    """Measure the compiled model (the `out_path` of `compile`) in a sandboxed child."""
    return profile_in_sandbox("compiler.backends.ort:_profile_child", Path(model_path).resolve(), settings)


def _profile_child(payload: dict[str, Any]) -> dict[str, Any]:
    import tempfile

    import numpy as np
    import onnxruntime as ort

    from compiler.inputs import generate_inputs, resolve_shapes

    s = ProfileSettings(**payload["settings"])
    path = payload["model"]
    # Baseline before anything model-sized exists; inputs come from the session, not from a
    # second parse of the file, whose freed memory would hide part of ORT's own.
    base_rss = reset_peak()
    sess = _open(ort, path, session_options(ort, "disable", s.threads))
    graph = inputs_graph(sess, path)
    shapes = resolve_shapes(graph, s.input_shapes, s.input_values)
    feeds = generate_inputs(graph, s.input_shapes, s.input_values, ranges=s.input_ranges)
    # Warm-up and timed rounds hold the host's timing lock: no other Edgescope timing beside them
    # (compiler.timing_lock).
    with timing_alone():
        for _ in range(s.warmup):
            run_session(sess, feeds, graph)
        # Warm-up has grown the arenas to their working size; a second session must not count.
        peak = max(0, peak_rss() - base_rss)

        with tempfile.TemporaryDirectory() as tmp:
            so = session_options(ort, "disable", s.threads)
            so.enable_profiling = True
            so.profile_file_prefix = os.path.join(tmp, "ort_profile")
            psess = _open(ort, path, so)
            names, parents = _node_names(path)
            n_nodes = len(names)
            prof_runs, prof_warmup = profiled_runs(s.runs, s.warmup, n_nodes)
            for _ in range(prof_warmup):
                run_session(psess, feeds, graph)
            read: dict[str, Any] = {}

            def first() -> Round:
                # Plain (timed) and profiled runs alternate, so load from other processes on a shared
                # machine hits both alike and the sum of task medians stays comparable to the whole.
                ps = held[1]
                r = timed_runs(lambda: run_session(sess, feeds, graph), s.runs,
                               between=lambda i: run_session(ps, feeds, graph) if i < prof_runs else None)
                read["trace"] = read_trace(Path(ps.end_profiling()))  # its events freed before any other round
                return r

            got: dict[str, Any] = {}
            held = [sess, psess]
            del psess

            def profile_round() -> None:
                # A noisy round, or one the speed probe says ran at another speed, is timed again while that is cheap.
                got["best"], got["noise"] = measure_rounds(
                    first, lambda: timed_runs(lambda: run_session(sess, feeds, graph), s.runs),
                    s.speed_reference_gflops, pause_s=s.remeasure_pause_s)
                held.pop()  # the profiled session: freed before the fast rounds that follow

            def reopen() -> None:
                held[0] = _open(ort, path, session_options(ort, "disable", s.threads))

            # Thread CPU time is the run's own with 1 intra-op thread; half of the fast rounds come before the
            # profile's round and half after it (compiler.profile.fast_cpu_ms; 0 rounds: the round alone).
            fast = fast_cpu_ms(lambda: run_session(held[0], feeds, graph), reopen,
                               s.fast_rounds if s.threads == 1 else 0, between=profile_round)
            best, noise = got["best"], got["noise"] | ({"fast_cpu_ms": fast} if fast else {})
            del held, sess
    trace, seen_shapes = read["trace"]
    # Nodes in If / Loop / Scan bodies report an event per execution, inside their parent's event:
    # the parent keeps its own time, and each body node its calls per run (trip counts, branch taken).
    tasks = {k: v for k, v in task_timings(trace, prof_runs, parents).items() if k in names}
    return Profile(
        target=TARGET, runtime=f"onnxruntime {ort.__version__} CPUExecutionProvider", device=cpu_name(),
        threads=s.threads, runs=s.runs, warmup=s.warmup, latency_ms=best.median_ms,
        latency_p90_ms=best.p90_ms, peak_memory_bytes=peak,
        input_shapes=shapes, tasks=tasks, noise=noise,
        output_shapes={k: v for k, v in seen_shapes.items() if k in names},
    ).to_json()


_ORT_TYPES = {"float": "float32", "double": "float64"}


def inputs_graph(sess: Any, path: str) -> Graph:
    """A node-less Graph declaring the session's inputs (enough for `compiler.inputs`)."""
    from compiler.graph import Value

    values = {}
    for i in sess.get_inputs():
        elem = i.type.removeprefix("tensor(").removesuffix(")")
        shape = None if i.shape is None else [d if isinstance(d, int) else (d or "?") for d in i.shape]
        values[i.name] = Value(name=i.name, shape=shape, dtype=_ORT_TYPES.get(elem, elem))
    return Graph(name=Path(path).stem, format="onnx", nodes=[], values=values, inputs=list(values),
                 outputs=[o.name for o in sess.get_outputs()], metadata={"path": path})


# ORT holds every profiler event in memory until `end_profiling` (one per node per run, ~3 KB each: the 866,710 events
# of 26 runs of a 33,334-task model held 2.6 GB of the child's 3.1 GB) and drops events past ~1M; writing, reading and
# summing them took 20 of its 30 CPU seconds. Large graphs get fewer profiled runs (TaskTiming.runs says how many);
# the whole-model latency still comes from every plain run.
PROFILE_EVENT_BUDGET = 250_000
MIN_PROFILED_RUNS = 3


def profiled_runs(runs: int, warmup: int, n_nodes: int) -> tuple[int, int]:
    """(profiled runs, profiled warm-up runs) for a graph of `n_nodes` nodes: all of `runs` while their events
    fit PROFILE_EVENT_BUDGET, never fewer than MIN_PROFILED_RUNS, and one warm-up run at least."""
    fit = PROFILE_EVENT_BUDGET // max(1, n_nodes)
    prof = max(MIN_PROFILED_RUNS, min(runs, fit - 1))
    return prof, min(warmup, max(1, fit - prof))
_EVENT = re.compile(r'\{"cat" : "(?P<cat>\w+)","pid" :\d+,"tid" :\d+,"dur" :(?P<dur>\d+),"ts" :(?P<ts>\d+),'
                    r'"ph" : "X","name" :"(?P<name>[^"]*)"')
# A node event's output shapes, `"output_type_shape" : [{"float":[1,8,16,16]}, ...]`: read alone, not with the rest of
# its args (a whole event line through json.loads was most of reading a 33,334-task trace).
_OUTPUT_SHAPES = re.compile(r'"output_type_shape"\s*:\s*(\[(?:\s*\{[^{}]*\}\s*,?)*\s*\])')


def _node_names(path: str) -> tuple[set[str], set[str]]:
    """Names of all nodes (bodies' included), and of those that run bodies. Every graph's nodes in any order: the
    names are sets, so no ids or execution order are worked out (`onnx_scopes.walk`)."""
    import onnx

    from compiler.frontends.onnx_scopes import bodies

    names, parents = set(), set()
    graphs = [onnx.load(path, load_external_data=False).graph]
    while graphs:
        for n in graphs.pop().node:
            names.add(n.name)
            inner = bodies(n)
            if inner:
                parents.add(n.name)
                graphs += [g for _, g in inner]
    return names, parents


# Element type keys of ORT's profiler (`output_type_shape: [{"float": [1, 64, 56, 56]}]`) -> our dtype names.
_TRACE_DTYPES = {"float": "float32", "double": "float64", "float16": "float16", "bfloat16": "bfloat16",
                 "int64_t": "int64", "int32_t": "int32", "int16_t": "int16", "int8_t": "int8", "uint8_t": "uint8",
                 "uint16_t": "uint16", "uint32_t": "uint32", "uint64_t": "uint64", "bool": "bool"}


def trace_shapes(args: Mapping[str, Any]) -> list[tuple[list[int], str] | None]:
    """Output shapes of one node event's `args` in ORT's profiler trace."""
    out: list[tuple[list[int], str] | None] = []
    for entry in args.get("output_type_shape") or []:
        if isinstance(entry, dict) and len(entry) == 1:
            (kind, shape), = entry.items()
            if isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape):
                out.append(([int(d) for d in shape], _TRACE_DTYPES.get(kind, kind)))
                continue
        out.append(None)
    return out


def read_trace(path: Path) -> tuple[list[dict[str, Any]], dict[str, list[Any]]]:
    """The events we use from ORT's trace, and each node's output shapes ({node: [[shape, dtype] | None]}, from
    its first event's `args`). ORT writes one event per line; parsing only the Node and model_run lines, and the
    args of one event per node, keeps a 50k-node trace from costing gigabytes of Python dicts."""
    events: list[dict[str, Any]] = []
    shapes: dict[str, list[Any]] = {}
    try:
        with open(path) as fh:
            for line in fh:
                is_node = line.startswith('{"cat" : "Node"') and "_kernel_time" in line
                if not is_node and '"model_run"' not in line:
                    continue
                m = _EVENT.match(line)  # fast path; the args dicts are large and used once per node
                if m and "\\" not in m["name"]:
                    events.append({"cat": m["cat"], "dur": int(m["dur"]), "ts": int(m["ts"]), "name": m["name"]})
                    node = m["name"][: -len("_kernel_time")] if is_node else ""
                    if not is_node or node in shapes:
                        continue
                    if '"output_type_shape"' not in line:
                        shapes[node] = []
                        continue
                    found = _OUTPUT_SHAPES.search(line)
                    if found:
                        listed = json.loads(found[1])
                        shapes[node] = [list(x) if x else None for x in trace_shapes({"output_type_shape": listed})]
                        continue
                    e = json.loads(line.rstrip().rstrip(","))
                else:
                    e = json.loads(line.rstrip().rstrip(","))
                    events.append(e)
                    node = e.get("name", "")[: -len("_kernel_time")] if is_node else ""
                if node and node not in shapes:
                    shapes[node] = [list(x) if x else None for x in trace_shapes(e.get("args") or {})]
        return events, shapes
    except ValueError:  # a layout we did not expect: parse it whole
        return json.loads(path.read_text()), {}


def task_timings(trace: list[dict[str, Any]], runs: int, parents: Collection[str] = ()) -> dict[str, TaskTiming]:
    """Per node name, over the last `runs` model runs: median and quartiles (ms) of its time per run (all its
    calls in the run) and its calls per run. A node in `parents` (If / Loop / Scan) has its bodies' events
    inside its own: it keeps its exclusive time (the events starting within its span are subtracted)."""
    import bisect

    import numpy as np

    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run")
    spans = spans[-runs:]
    starts = [a for a, _ in spans]
    start = spans[0][0] if spans else 0
    events = sorted(((e["ts"], -e["dur"], e["name"][: -len("_kernel_time")]) for e in trace
                     if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time") and e.get("ts", 0) >= start))
    # ORT stops recording at its event limit, which a long loop can reach (its trips multiply the events of a
    # run): a run with fewer events than the others was cut short, and is left out.
    run_of = [max(0, bisect.bisect_right(starts, ts) - 1) for ts, _, _ in events]
    per_run = np.bincount(run_of, minlength=len(spans)) if run_of else np.zeros(0, dtype=int)
    complete = set(np.flatnonzero(per_run == per_run.max()).tolist()) if len(per_run) else set()
    open_parents: list[list[Any]] = []  # [end ts, exclusive µs, name, run] of enclosing control-flow events
    per_node: dict[str, dict[int, float]] = {}
    calls: dict[str, int] = {}

    def close(rec: list[Any]) -> None:
        per_node.setdefault(rec[2], {}).setdefault(rec[3], 0.0)
        per_node[rec[2]][rec[3]] += rec[1] / 1e3

    for (ts, neg_dur, name), run in zip(events, run_of):
        if run not in complete:
            continue
        while open_parents and ts >= open_parents[-1][0]:
            close(open_parents.pop())
        if open_parents:
            open_parents[-1][1] += neg_dur  # sequential execution: this call runs inside the enclosing one
        calls[name] = calls.get(name, 0) + 1
        if name in parents:
            open_parents.append([ts - neg_dur, -neg_dur, name, run])
        else:
            close([0, -neg_dur, name, run])
    while open_parents:
        close(open_parents.pop())
    # Quartiles of the nodes seen in the same number of runs at once (one call per node took seconds at 33k nodes).
    by_count: dict[int, list[str]] = {}
    for node, by_run in per_node.items():
        by_count.setdefault(len(by_run), []).append(node)
    q: dict[str, tuple[float, float, float]] = {}
    for k, nodes in by_count.items():
        p25, p50, p75 = np.percentile(np.array([list(per_node[n].values()) for n in nodes]), [25, 50, 75], axis=1)
        q.update(zip(nodes, zip(p25.tolist(), p50.tolist(), p75.tolist())))
    return {node: TaskTiming(median_ms=q[node][1], p25_ms=q[node][0], p75_ms=q[node][2], runs=len(by_run),
                             calls=calls[node] / len(by_run)) for node, by_run in per_node.items()}


def run_session(sess: Any, feeds: dict[str, Any], graph: Graph) -> None:
    try:
        sess.run(None, feeds)
    except Exception as e:
        # ORT names the failing node ("... running Reshape node. Name:'r' ..."); the caller, which has the
        # compiled graph and the input plan, says which input to set (compiler.input_hints.explain).
        raise ModelRunError(f"ONNX Runtime could not run the model with these inputs: {_clean(str(e))}") from None


def _clean(message: str) -> str:
    # ORT prefixes "[ONNXRuntimeError] : 1 : FAIL : " and cites its own source ("/onnxruntime_src/...:91
    # onnxruntime::ReshapeHelper::ReshapeHelper(...) input_shape_size == requested_shape_size was false."): users
    # need the reason.
    text = re.sub(r"^\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*", "", message.strip())
    text = re.sub(r"/onnxruntime_src/\S+:\d+\s+(?:[\w:~<>]+\([^)]*\)\s*)?(?:[^.]*? was false\.\s*)?", "", text)
    # "Load model from /tmp/edgescope-analyze-x/inputs-0/model.concrete.onnx failed:Fatal error: ..." names the
    # pipeline's working copy, not the user's file
    text = re.sub(r"^Load model from \S+ failed:\s*(?:Fatal error:\s*)?", "", text)
    return text[:800]
