"""LiteRT CPU backend, target `litert-cpu/host`: LiteRT's interpreter (`ai-edge-litert`) on this machine.

Compile: a sandboxed child opens the model in `ai_edge_litert.interpreter.Interpreter` and
allocates tensors (so a file LiteRT rejects fails at compile with LiteRT's reason). The compiled
graph is the source graph with one task per TFLite operator: the interpreter executes the
operators of subgraph 0 in file order; the default XNNPACK delegate takes over the ops it
supports, and the child records how many nodes remain after delegation in the metadata. A `.pt2` goes to
`compiler.backends.pt2_tflite` first (the registry sends it there), which converts it and checks the result here.

Profile: a sandboxed child (an interpreter crash kills the child, not the worker) opens the
model with `threads` threads, sets generated inputs (`compiler.inputs`, resizing dynamic inputs),
runs `warmup` + `runs` `invoke()` calls and reports median and p90 latency and the peak
resident-memory growth (VmHWM, as in the ORT backend). A second child measures per-operator times
with LiteRT's own profiler, which the wheel offers through its C API only
(`compiler.backends.litert_profiler`); `Profile.kernels` names the XNNPACK or TFLite kernels each
operator ran. If that child fails, `Profile.tasks` stays empty, `Profile.runtime` says why, and
the simulator predicts per-op costs for this target and scales them to the measured total.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from compiler.errors import ModelRunError
from compiler.graph import Graph
from compiler.profile import Profile, ProfileSettings, measure_rounds, profile_in_sandbox, timed_runs
from compiler.sandbox import DEFAULT_MEMORY_LIMIT, Limits, run
from compiler.timing_lock import timing_alone

TARGET = "litert-cpu/host"
PER_OP_NOTE = "per-op not measured ({why}): simulator-predicted, scaled to measured total"
PER_OP_MEASURED = "per-op times from LiteRT's profiler (C API), XNNPACK operators mapped to TFLite operators"


def compile(src_model_path: str | os.PathLike[str], out_path: str | os.PathLike[str], source: Graph,
            timeout_s: float = 300.0, memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT,
            shapes_out: dict[str, tuple[list[int], str]] | None = None) -> Graph:
    """Check LiteRT loads the model, write what it runs to `out_path`, return the task graph (one task per op).

    Custom operators this LiteRT build cannot resolve are stood in for (`litert_standin`): the file written then
    differs from the upload, `metadata["unmeasured_ops"]` lists them and `<out_path>.standins.json` tells the
    profile. If not even that makes the model runnable, `metadata["litert_runnable"]` is "false" and the note says
    why: the target is predicted.

    Every tensor's shape at the source's input shapes (the input plan's) is resolved by LiteRT's own Prepare, no
    invoke (`litert_shapes`), and fills the source's symbolic dims (a -1 in a file's shape signature), so the work
    counts of a prediction know them without a run; `shapes_out` gets them by the TFLite frontend's value names."""
    import json

    from compiler.backends.base import as_tasks
    from compiler.concrete import fill_by_name

    src, out = Path(src_model_path).resolve(), Path(out_path).resolve()  # absolute: the child runs elsewhere
    inputs = [source.values[n].shape if n in source.values and source.values[n].is_static else None
              for n in source.inputs]
    if all(v.is_static for v in source.values.values()):
        inputs = []  # the file's shapes are all known: no Prepare needed for them
    info = run("compiler.backends.litert:_compile_child",
               {"src": os.fspath(src), "out": os.fspath(out), "input_shapes": inputs},
               Limits(timeout_s, memory_limit_bytes, what=f"compiling for {TARGET}"))
    shapes = {k: (list(v[0]), str(v[1])) for k, v in info.get("shapes", {}).items()}
    if shapes_out is not None:
        shapes_out.update(shapes)
    if source.format == "tflite":
        fill_by_name(source, shapes)
    compiled = as_tasks(source)
    note = "one task per TFLite operator; the XNNPACK delegate runs supported ops as fused partitions"
    standins, codes = info.get("standins", []), info.get("codes", [])
    sidecar = standins_path(out)
    sidecar.unlink(missing_ok=True)
    if info.get("unrunnable"):
        note = f"{info['unrunnable']}; predicted, not measured"
        compiled.metadata["litert_runnable"] = "false"
    elif codes:
        note += (f"; custom operator{'s' if len(codes) > 1 else ''} {', '.join(codes)} not measured: this LiteRT "
                 f"build cannot run {'them' if len(codes) > 1 else 'it'} (a FILL of the output stood in while "
                 f"the rest was measured), predicted instead")
        compiled.metadata["unmeasured_ops"] = json.dumps(standins)
        sidecar.write_text(json.dumps({"ops": standins, "codes": codes}))
    compiled.metadata.update({
        "target": TARGET, "runtime": f"ai-edge-litert {info['version']}",
        "source_nodes": str(len(source.nodes)), "source_nodes_covered": str(len(source.nodes)), "note": note,
    })
    return compiled


def standins_path(compiled_path: Path) -> Path:
    return compiled_path.with_name(compiled_path.name + ".standins.json")


def _version() -> str:
    from importlib.metadata import version

    try:
        return version("ai-edge-litert")
    except Exception:
        return "unknown"


def _interpreter(path: str, threads: int | None = None) -> Any:
    from ai_edge_litert.interpreter import Interpreter

    try:
        return Interpreter(model_path=path, num_threads=threads)
    except Exception as e:
        raise ModelRunError(f"LiteRT cannot load the model: {str(e).strip()[:800]}") from None


def _compile_child(payload: dict[str, Any]) -> dict[str, Any]:
    """Prepare the model in LiteRT; stand in for custom operators it cannot resolve; write what runs to "out"."""
    from compiler.backends import litert_standin

    buf = Path(payload["src"]).read_bytes()
    standins: list[str] = []
    codes: list[str] = []
    while True:
        try:
            _prepare(buf)
            break
        except ModelRunError as e:
            code = litert_standin.unresolved_op(str(e))
            if code is None or code in codes or len(codes) >= litert_standin.MAX_CODES:
                raise
        try:
            buf, ids = litert_standin.stand_in(buf, code)
        except ModelRunError as e:
            return {"version": _version(), "unrunnable": str(e)}
        standins += ids
        codes.append(code)
    Path(payload["out"]).write_bytes(buf)  # LiteRT executes the file as is (or with stand-ins): what we profile
    return {"version": _version(), "standins": standins, "codes": codes,
            "shapes": _tensor_shapes(buf, payload.get("input_shapes") or [])}


def _tensor_shapes(buf: bytes, input_shapes: list[list[int] | None]) -> dict[str, tuple[list[int], str]]:
    """{frontend value name: (shape, dtype)} of subgraph 0's tensors at `input_shapes`, as LiteRT prepares them."""
    from compiler.backends import litert_shapes
    from compiler.frontends.tflite import tensor_names

    if not input_shapes or any(s is None for s in input_shapes):  # no plan: the file's placeholders are no shapes
        return {}
    names = tensor_names(buf)
    return {names[i]: v for i, v in litert_shapes.resolve(buf, input_shapes).items() if i < len(names)}


def _prepare(buf: bytes) -> None:
    """LiteRT prepares the model at the file's own shapes. A model with dynamic inputs may not prepare at its
    placeholder shapes ([1, 1] for an audio input: a conv window larger than the input) while it runs at its
    real ones, which only the profile sets: its load alone is checked here."""
    from ai_edge_litert.interpreter import Interpreter

    try:
        it = Interpreter(model_content=buf)
    except Exception as e:
        raise ModelRunError(f"LiteRT cannot load the model: {str(e).strip()[:800]}") from None
    try:
        it.allocate_tensors()
    except Exception as e:
        from compiler.backends.litert_standin import unresolved_op

        dynamic = any(-1 in list(d.get("shape_signature", [])) for d in it.get_input_details())
        if dynamic and not unresolved_op(str(e)):
            return
        raise ModelRunError(f"LiteRT cannot prepare the model: {str(e).strip()[:800]}") from None


def profile(model_path: str | os.PathLike[str], settings: ProfileSettings = ProfileSettings()) -> Profile:
    """Measure the model (the `out_path` of `compile`) in a sandboxed child, then its operators in another."""
    import json

    from compiler.errors import SandboxError
    from compiler.profile import TaskTiming

    path = Path(model_path).resolve()
    prof = profile_in_sandbox("compiler.backends.litert:_profile_child", path, settings)
    payload = {"model": os.fspath(path), "threads": settings.threads, "warmup": settings.warmup,
               "runs": settings.runs, "input_shapes": settings.input_shapes, "input_values": settings.input_values}
    try:
        ops = run("compiler.backends.litert_profiler:per_op_child", payload,
                  Limits(settings.timeout_s, settings.memory_limit_bytes, what="profiling LiteRT's operators"))
    except (ModelRunError, SandboxError) as e:
        prof.runtime = f"ai-edge-litert {_version()} interpreter (XNNPACK delegate); {PER_OP_NOTE.format(why=e)}"
        return prof
    standins = json.loads(standins_path(path).read_text()) if standins_path(path).exists() else {}
    # The stood-in operators are FILLs in the file profiled (same indices): not the custom operators' times.
    skip = {f"FILL_{op.rsplit('_', 1)[1]}" for op in standins.get("ops", [])}
    prof.tasks = {k: TaskTiming(*v) for k, v in ops["tasks"].items() if k not in skip}
    prof.kernels = {k: v for k, v in ops["kernels"].items() if k not in skip}
    prof.runtime = f"ai-edge-litert {_version()} interpreter (XNNPACK delegate); {PER_OP_MEASURED}"
    if skip:
        prof.runtime += (f"; without custom operator(s) {', '.join(standins.get('codes', []))}, which this LiteRT "
                         f"build cannot run (a FILL of the output stood in)")
    return prof


def _profile_child(payload: dict[str, Any]) -> dict[str, Any]:
    from compiler.host import cpu_name, peak_rss, reset_peak
    from compiler.frontends import tflite
    from compiler.inputs import generate_inputs, resolve_shapes

    s = ProfileSettings(**payload["settings"])
    path = payload["model"]
    graph = tflite.load(path)  # input names, dtypes and dynamic dims, as the user sees them
    shapes = resolve_shapes(graph, s.input_shapes, s.input_values)
    feeds = generate_inputs(graph, s.input_shapes, s.input_values, ranges=s.input_ranges)
    seen = operator_shapes(path, graph, feeds)
    del graph
    base_rss = reset_peak()
    it = _interpreter(path, s.threads)
    details = {d["index"]: d for d in it.get_input_details()}
    order = list(details)  # interpreter input order = subgraph input order = graph.inputs order
    try:
        for idx, name in zip(order, shapes):
            if list(details[idx]["shape"]) != list(shapes[name]):
                it.resize_tensor_input(idx, shapes[name], strict=False)
        it.allocate_tensors()
        for idx, name in zip(order, feeds):
            it.set_tensor(idx, feeds[name].astype(details[idx]["dtype"], copy=False))
    except Exception as e:
        raise ModelRunError(f"LiteRT could not take the generated inputs ({str(e).strip()[:500]}); "
                            f"set the input shapes explicitly, e.g. {next(iter(shapes), 'x')}=1x224x224x3") from None

    def invoke() -> None:
        try:
            it.invoke()
        except Exception as e:
            raise ModelRunError(f"LiteRT could not run the model: {str(e).strip()[:800]}") from None

    with timing_alone():  # warm-up and rounds: no other Edgescope timing beside them (compiler.timing_lock)
        for _ in range(s.warmup):
            invoke()
        # Read before the timed rounds: the speed probe's ONNX Runtime session is not the model's memory.
        peak = max(0, peak_rss() - base_rss)
        # Wall and thread CPU time per run (1 thread: XNNPACK runs on the calling thread), with the noise record
        # ORT's profile carries: on a busy machine the measured latency is the CPU time
        # (simulator.measured.own_whole_ms), not the wall time that waited for the CPU (a convnext_atto int8-dynamic
        # export read 46.0 ms against 11.9 predicted; its CPU time was 10.2 ms, its wall time 36 ms at load 11 on 2
        # vCPUs). The speed probe runs around each round as around ORT's (the CPU's speed, whichever runtime times
        # it), held against the LiteRT calibration's probe: a round at another speed than XNNPACK's rates were timed
        # at is timed again while cheap, else marked noisy.
        r, noise = measure_rounds(lambda: timed_runs(invoke, s.runs), lambda: timed_runs(invoke, s.runs),
                                  s.speed_reference_gflops, pause_s=s.remeasure_pause_s)
    return Profile(
        target=TARGET, runtime=f"ai-edge-litert {_version()} interpreter (XNNPACK delegate)",
        device=cpu_name(), threads=s.threads, runs=s.runs, warmup=s.warmup,
        latency_ms=r.median_ms, latency_p90_ms=r.p90_ms,
        peak_memory_bytes=peak, input_shapes=shapes, tasks={}, output_shapes=seen, noise=noise,
    ).to_json()


def operator_shapes(path: str, graph: Graph, feeds: dict[str, Any]) -> dict[str, list[Any]]:
    """{operator id: [[shape, dtype] per output]} at the fed shapes, where the file leaves a dim dynamic (a -1 in a
    shape signature: the file stores 1 there and the frontend a symbolic dim). LiteRT propagates the shapes when
    the inputs are resized; the simulator's work counts then use them (without them every operator downstream of
    a dynamic batch is of unknown work: BirdNET's 144000-sample input made 294 of 376). The interpreter runs
    without delegates, whose partitions hide their inner tensors' shapes, and is invoked once for the tensors
    whose shapes only a run sets. Best effort: {} if LiteRT cannot run it so (the analysis says work unknown)."""
    if all(v.is_static for v in graph.values.values()):
        return {}
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    try:
        it = Interpreter(model_path=path, num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        details = it.get_input_details()
        for d, name in zip(details, graph.inputs):
            it.resize_tensor_input(d["index"], list(feeds[name].shape), strict=False)
        it.allocate_tensors()
        for d, name in zip(details, graph.inputs):
            it.set_tensor(d["index"], feeds[name].astype(d["dtype"], copy=False))
        it.invoke()
        tensors = {d["index"]: d for d in it.get_tensor_details()}
        ops = it._get_ops_details()  # subgraph 0's operators in file order: the graph's nodes
    except Exception:  # noqa: BLE001  (a custom op, a kernel that needs the delegate: no shapes, no failure)
        return {}
    from compiler.frontends.tflite import top_nodes

    top = top_nodes(graph)  # IF / WHILE bodies' operators are not subgraph 0's
    if len(ops) != len(top):
        return {}
    out: dict[str, list[Any]] = {}
    for node, op in zip(top, ops):
        outs = [tensors.get(int(t)) for t in op["outputs"] if int(t) >= 0]
        out[node.id] = [[[int(x) for x in t["shape"]], np.dtype(t["dtype"]).name] if t is not None else None
                        for t in outs]
    return out

