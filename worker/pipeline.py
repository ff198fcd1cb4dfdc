"""The analysis pipeline as plain functions: parse -> compile -> profile -> simulate.

`analyze()` knows nothing of databases, blobs or Celery; the CLI calls it directly and the
worker's job runner (`worker/jobs.py`) wraps it and stores what it returns. Every stage
reports progress through a callback so a long profile shows as moving.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from compiler.profile import FAST_ROUNDS, REMEASURE_PAUSE_S, Profile

STAGES: tuple[str, ...] = ("parse", "compile", "profile", "simulate", "store")
# Share of the progress bar each stage takes (sums to 100); profiling dominates.
STAGE_WEIGHT: dict[str, int] = {"parse": 5, "compile": 15, "profile": 55, "simulate": 20, "store": 5}

# (stage, fraction of that stage done 0..1) -> None
ProgressFn = Callable[[str, float], None]


@dataclass
class AnalysisOptions:
    targets: tuple[str, ...] = ("ort-cpu/host",)
    format: str | None = None  # None = detect by content
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    input_values: dict[str, float] = field(default_factory=dict)
    runs: int = 30
    warmup: int = 5
    threads: int = 1
    timeout_s: int = 600
    memory_limit_bytes: int = 8 * 1024**3
    calibration_path: Path | None = None  # host-cpu calibration cache
    check_exports: bool = True  # dry-run the ONNX exporter to mark presets it cannot write (simulate stage)
    remeasure_pause_s: float = REMEASURE_PAUSE_S  # before a noisy profile round is timed again (ProfileSettings)
    fast_rounds: int = FAST_ROUNDS  # rounds of the model's fast CPU time (ProfileSettings; 0: not timed)
    # Add the host profiles' speed probes to the machine's history (simulator.speed_history); off for benchmarks
    # that predict kept measurements again, whose probes would move the speed the next prediction assumes.
    keep_speed_probes: bool = True


@dataclass
class TargetResult:
    target: str
    compiled: Graph
    compiled_model_path: Path | None = None  # the backend's compiled file, when it writes one
    profile: Profile | None = None  # measured on this machine, when the runtime is here
    sweep: Any = None  # simulator.sweep.SweepResult


@dataclass
class AnalysisResult:
    source: Graph
    targets: list[TargetResult]
    stage_seconds: dict[str, float]
    inputs: dict[str, Any] = field(default_factory=dict)  # input name -> compiler.input_plan.InputPlan


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors of the compiler and simulator that describe the model or the request: their message is
    shown to the user as is (anything else is an internal error, logged with its traceback)."""
    from compiler import errors as cerr
    from compiler.graph import ModelFormatError
    from compiler.vocabulary.options import OptionError

    # UnknownTarget is an OptionError.
    return (ModelFormatError, cerr.ModelRunError, cerr.SandboxError, cerr.InputSpecError,
            OptionError)


def analyze(model_path: Path, workdir: Path, opts: AnalysisOptions,
            progress: ProgressFn = lambda stage, frac: None,
            on_plan: Callable[[dict[str, Any]], None] = lambda plans: None) -> AnalysisResult:
    """`on_plan(plans)` is called with the input plan as soon as it is known (the job stores it with the model,
    so a model whose analysis fails later still shows the inputs it was tried with)."""
    from compiler.heap import fewer_collections

    with fewer_collections():
        return _analyze(model_path, workdir, opts, progress, on_plan)


def _analyze(model_path: Path, workdir: Path, opts: AnalysisOptions, progress: ProgressFn,
             on_plan: Callable[[dict[str, Any]], None]) -> AnalysisResult:
    from compiler import backends, frontends
    from compiler.concrete import fill_from_twins, fill_observed
    from compiler.input_plan import concrete_shapes, fill_values, value_ranges
    from compiler.errors import ModelRunError, SandboxError
    from compiler.input_hints import explain
    from compiler.prepare import prepare
    from compiler.profile import ProfileSettings
    from compiler.speed_probe import against
    from compiler.vocabulary.targets import get_target
    from simulator import sweep as sim_sweep
    from simulator.calibrated import hardware_for
    from simulator.control_flow import observed_executions

    seconds: dict[str, float] = {}
    for t in opts.targets:
        get_target(t)  # unknown target names fail before any work

    @contextmanager
    def timed(stage: str) -> Iterator[None]:
        progress(stage, 0.0)
        t0 = time.perf_counter()
        yield  # an exception propagates: the stage is neither timed nor reported done
        seconds[stage] = time.perf_counter() - t0
        progress(stage, 1.0)

    with timed("parse"):
        # In a sandboxed child: parsing untrusted files (archives above all) never runs in the caller.
        source = frontends.load_isolated(model_path, opts.format, opts.timeout_s, opts.memory_limit_bytes)
        from compiler.vocabulary.targets import check_targets_format

        check_targets_format(opts.targets, source.format)  # a .tflite on ort-cpu/host: the format's targets

    # An input the model does not have fails in compile; the model's own inputs are stored first, so its failed page
    # and the re-analysis dialog show them and POST .../reanalyze can refuse the name (server/api/models.py).
    if any(n not in source.inputs for n in [*opts.input_shapes, *opts.input_values]):
        from compiler.errors import InputSpecError
        from compiler.input_plan import plan_inputs

        try:
            on_plan(plan_inputs(source))
        except InputSpecError:
            pass
    results: list[TargetResult] = []
    with timed("compile"):
        # Every stage works at one set of concrete input shapes: ONNX models are compiled with their input
        # dims fixed, and a dim the model itself requires is set to what it needs (compiler.prepare).
        prep = prepare(model_path, source, workdir, opts.targets, opts.input_shapes, opts.input_values,
                       reload=lambda: frontends.load(model_path, opts.format), on_plan=on_plan,
                       on_target=lambda i: progress("compile", (i + 1) / len(opts.targets)))
        source, plans = prep.source, prep.plans
        results = [TargetResult(t, g, compiled_model_path=out) for t, (g, out) in zip(opts.targets, prep.compiled)]
        if not any(backends.for_target(t).measures for t in opts.targets):  # no profile will show data's shapes
            from compiler.observe import observe_once

            observe_once(prep.path, source, [g for g, _ in prep.compiled], plans, workdir)
    # The export check runs in its own child meanwhile (profiling waits on the model's runs, not on it).
    export_check = _start_export_check(model_path, source, opts, plans)

    with timed("profile"):
        # A backend that measures may still hand back no file (e.g. .pt2 on LiteRT without the
        # converter): that target is predicted, and its compile metadata says why.
        measured = [r for r in results
                    if backends.for_target(r.target).measures and r.compiled_model_path is not None]
        for i, r in enumerate(measured):
            # The plan's inputs where the compiled file keeps the source's input names (a .pt2 converted to
            # .tflite renames them, and is converted at its example inputs' static shapes).
            same = r.compiled.format in ("onnx", source.format)
            settings = ProfileSettings(
                warmup=opts.warmup, runs=opts.runs, threads=opts.threads, timeout_s=opts.timeout_s,
                memory_limit_bytes=opts.memory_limit_bytes,
                input_shapes=concrete_shapes(plans) if same else dict(opts.input_shapes),
                input_values=fill_values(plans) if same else dict(opts.input_values),
                input_ranges=value_ranges(plans) if same else {},
                speed_reference_gflops=host_speed_reference(r.target, opts.calibration_path),
                remeasure_pause_s=opts.remeasure_pause_s, fast_rounds=opts.fast_rounds,
            )
            try:
                r.profile = backends.for_target(r.target).profile(r.compiled_model_path, settings)
            except (ModelRunError, SandboxError) as e:  # say which input to set, with an example that fits it
                raise type(e)(explain(str(e), r.compiled, plans)) from None
            progress("profile", (i + 1) / len(measured))
            if opts.keep_speed_probes:
                _keep_probes(r, opts.calibration_path)
        # Shapes the runs saw fill what inference left unknown: in the compiled graph they ran, and by value
        # name in the source and the other targets' graphs.
        for r in measured:
            if r.profile is not None and r.profile.output_shapes:
                others = [source] + [o.compiled for o in results if o is not r]
                fill_observed(r.compiled, r.profile.output_shapes, others)
        for g in [source] + [r.compiled for r in results]:
            fill_from_twins(g)  # what the measured runtime merged into one node, the other graphs keep twice

    with timed("simulate"):
        # Branches taken and trip counts seen in a profiled run stand for every target of the same model.
        observed: dict[str, float] = {}
        for r in results:
            observed.update(observed_executions(r.compiled, r.profile))
        for i, r in enumerate(results):
            hardware = hardware_for(r.target, opts.calibration_path)  # calibrates first if there is no current cache
            if r.profile is not None:  # the profile said how fast the CPU ran; now the rates' speed is known too
                r.profile.noise = against(r.profile.noise, host_speed_reference(r.target, opts.calibration_path))
            r.sweep = sim_sweep.sweep(r.compiled, r.target, r.profile, hardware=hardware, source=source,
                                      observed=observed, input_values=fill_values(plans))
            progress("simulate", (i + 1) / len(results))
        skipped = export_check_skipped(source) if source.format == "onnx" and opts.check_exports else None
        for r in results:
            if skipped and get_target(r.target).export == "onnx":
                r.sweep.bulk["export_check"] = skipped
        if export_check is not None:
            from compiler.optimize.onnx_dry_run import mark_dry_run

            reasons = export_check.result()
            for r in results:
                if get_target(r.target).export == "onnx":
                    mark_dry_run(r.sweep.bulk, reasons)

    return AnalysisResult(source=source, targets=results, stage_seconds=seconds, inputs=plans)


def _keep_probes(r: Any, calibration_path: Path | None) -> None:
    """Add a host profile's speed probes to the machine's history (simulator.speed_history), which sets the speed
    predictions without a profile assume."""
    from compiler.vocabulary.targets import get_target
    from simulator import speed_history

    speed = (r.profile.noise or {}).get("speed") if r.profile is not None else None
    if get_target(r.target).profile == "host-cpu" and isinstance(speed, dict):
        speed_history.record(calibration_path, (speed.get("before_gflops"), speed.get("after_gflops")), "profile")


def host_speed_reference(target: str, calibration_path: Path | None) -> float | None:
    """The speed probe figure of the host calibration `target` is predicted with: ORT's (simulator.calibration
    .speed_reference), or for LiteRT's CPU its own half's (simulator.litert_calibration.speed_reference, timed at
    another moment); None for a target not priced by them, or when no current calibration is there yet."""
    from compiler.vocabulary.targets import get_target
    from simulator import calibration, litert_calibration

    t = get_target(target)
    if calibration_path is None or t.profile != "host-cpu":
        return None
    if t.backend == "litert-cpu":
        return litert_calibration.speed_reference(calibration_path)
    return calibration.speed_reference(calibration_path)


# The export check exports the file once per way of writing it (7 dry runs, ORT's quantizers with calibration):
# linear in the graph, it was the longest part of a 10,000-node analysis (waited ~6 min at the end of simulate on a
# loaded 2-core machine, beside the profiling it shares the CPUs with). Above this many source nodes it is skipped and
# each ONNX target's option table says so (`export_check`); an export of such a model is checked when it is made.
EXPORT_CHECK_MAX_NODES = 20_000


def export_check_skipped(source: Graph) -> str | None:
    """Why the export check does not run on this graph (None: it runs)."""
    n = len(source.nodes)
    if n > EXPORT_CHECK_MAX_NODES:
        return f"not checked before export: {n:,} nodes (the check runs on models up to {EXPORT_CHECK_MAX_NODES:,})"
    return None


def _start_export_check(model_path: Path, source: Graph, opts: AnalysisOptions,
                        plans: dict[str, Any]) -> Future[dict[str, str | None]] | None:
    """Presets the ONNX exporter cannot write for this file are marked in each ONNX target's option table (and so
    never offered as exportable): one dry-run export per distinct way of writing the file, in a sandboxed child
    started in a thread (with this context: the sandbox's scratch folder is a context variable)."""
    from compiler.vocabulary.targets import get_target

    if source.format != "onnx" or not opts.check_exports or not any(get_target(t).export == "onnx"
                                                                     for t in opts.targets):
        return None
    if export_check_skipped(source):
        return None
    from compiler.input_plan import concrete_shapes, fill_values
    from compiler.optimize.onnx_dry_run import dry_run

    ctx = contextvars.copy_context()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="export-check")
    fut = pool.submit(ctx.run, dry_run, model_path, concrete_shapes(plans), fill_values(plans), opts.timeout_s,
                      opts.memory_limit_bytes)
    pool.shutdown(wait=False)
    return fut
