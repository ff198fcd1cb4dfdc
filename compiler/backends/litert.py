"""LiteRT CPU backend, target `litert-cpu/host`: LiteRT's interpreter (`ai-edge-litert`) on this machine.

Compile: a `.pt2` is first converted with litert-torch (`compiler.backends.pt2_tflite`). A sandboxed child opens the model in `ai_edge_litert.interpreter.Interpreter` and
allocates tensors (so a file LiteRT rejects fails at compile with LiteRT's reason). The compiled
graph is the source graph with one task per TFLite operator: the interpreter executes the
operators of subgraph 0 in file order; the default XNNPACK delegate takes over the ops it
supports, and the child records how many nodes remain after delegation in the metadata.

Profile: a sandboxed child (an interpreter crash kills the child, not the worker) opens the
model with `threads` threads, sets generated inputs (`compiler.inputs`, resizing dynamic inputs),
runs `warmup` + `runs` `invoke()` calls and reports median and p90 latency and the peak
resident-memory growth (VmHWM, as in the ORT backend). Per-operator times are NOT measured:
the LiteRT Python API (2.3.0) exposes no op profiler, so `Profile.tasks` stays empty and
`Profile.runtime` says "per-op not measured"; the simulator predicts per-op costs for this
target and scales them to the measured total.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

from compiler.errors import ModelRunError
from compiler.graph import Graph
from compiler.profile import Profile, ProfileSettings, profile_in_sandbox
from compiler.sandbox import DEFAULT_MEMORY_LIMIT, Limits, run

TARGET = "litert-cpu/host"
PER_OP_NOTE = "per-op not measured (LiteRT Python API has no op profiler): simulator-predicted, scaled to measured total"


def compile(src_model_path: str | os.PathLike[str], out_path: str | os.PathLike[str], source: Graph,
            timeout_s: float = 300.0, memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT) -> Graph:
    """Check LiteRT loads the model, copy it to `out_path`, return the task graph (one task per op)."""
    from compiler.backends import as_tasks

    src, out = Path(src_model_path).resolve(), Path(out_path)  # absolute: the child runs elsewhere
    info = run("compiler.backends.litert:_compile_child", {"src": os.fspath(src)},
               Limits(timeout_s, memory_limit_bytes, what=f"compiling for {TARGET}"))
    if src.resolve() != out.resolve():
        out.write_bytes(src.read_bytes())  # LiteRT executes the file as is; the copy is what we profile
    compiled = as_tasks(source)
    compiled.metadata.update({
        "target": TARGET, "runtime": f"ai-edge-litert {info['version']}",
        "source_nodes": str(len(source.nodes)), "source_nodes_covered": str(len(source.nodes)),
        "note": "one task per TFLite operator; the XNNPACK delegate runs supported ops as fused partitions",
    })
    return compiled


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
    it = _interpreter(payload["src"])
    try:
        it.allocate_tensors()
    except Exception as e:
        raise ModelRunError(f"LiteRT cannot prepare the model: {str(e).strip()[:800]}") from None
    return {"version": _version()}


def profile(model_path: str | os.PathLike[str], settings: ProfileSettings = ProfileSettings()) -> Profile:
    """Measure the model (the `out_path` of `compile`) in a sandboxed child."""
    return profile_in_sandbox("compiler.backends.litert:_profile_child", Path(model_path).resolve(), settings)


def _profile_child(payload: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from compiler.backends.ort import _peak_rss, _reset_peak, cpu_name
    from compiler.frontends import tflite
    from compiler.inputs import generate_inputs, resolve_shapes

    s = ProfileSettings(**payload["settings"])
    path = payload["model"]
    graph = tflite.load(path)  # input names, dtypes and dynamic dims, as the user sees them
    shapes = resolve_shapes(graph, s.input_shapes, s.input_values)
    feeds = generate_inputs(graph, s.input_shapes, s.input_values)
    del graph
    base_rss = _reset_peak()
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

    for _ in range(s.warmup):
        invoke()
    times = []
    for _ in range(s.runs):
        t0 = time.perf_counter()
        invoke()
        times.append((time.perf_counter() - t0) * 1e3)
    peak = max(0, _peak_rss() - base_rss)
    times.sort()
    return Profile(
        target=TARGET, runtime=f"ai-edge-litert {_version()} interpreter (XNNPACK delegate); {PER_OP_NOTE}",
        device=cpu_name(), threads=s.threads, runs=s.runs, warmup=s.warmup,
        latency_ms=statistics.median(times), latency_p90_ms=float(np.percentile(times, 90)),
        peak_memory_bytes=peak, input_shapes=shapes, tasks={},
    ).to_json()


class LiteRtCpu:
    """Registry entry (`compiler.backends.BACKENDS["litert-cpu"]`)."""

    name = "litert-cpu"
    measures = True

    def compile(self, src: Path, workdir: Path, source: Graph) -> tuple[Graph, Path | None]:
        if source.format == "pt2":  # converted by litert-torch, tasks mapped back to the FX nodes
            from compiler.backends import pt2_tflite

            return pt2_tflite.compile_for_litert(src, workdir, source)
        out = workdir / "litert-cpu.tflite"
        return compile(src, out, source), out

    def profile(self, compiled_path: Path, settings: object) -> Profile:
        return profile(compiled_path, settings)  # type: ignore[arg-type]
