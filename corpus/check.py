"""One corpus file through the real pipeline, as `edgescope analyze` runs it, and the figures the corpus
checks: analysed or a clear error, the host fp32 prediction made WITHOUT the measured profile (as
`edgescope predict` does) beside the measured median, tasks of unknown work and tasks silently at zero,
predicted vs file size. Used by benchmarks/realworld.py (each file in a child process) and tests/corpus.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from compiler.profile import FAST_ROUNDS, REMEASURE_PAUSE_S

# Kinds (simulator.costs.kind_of) that always do arithmetic: no MACs there is a silent zero.
COMPUTE_KINDS = frozenset({"conv", "dwconv", "dwconvnchw", "convsmall", "convnchw", "conv3d", "gconvnchw", "gemm",
                           "matmul", "attention"})


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:400]


def work_rows(works: list[Any], ids: list[str], task_ms: dict[str, float]) -> dict[str, Any]:
    """Tasks whose work is unknown (shapes not resolved) and tasks silently at zero (a compute op with no
    MACs although its shapes are 'known', or any task with no work at all that takes measurable time)."""
    from simulator.costs import FOLDED

    unknown, zero = [], []
    for tid, w in zip(ids, works):
        if w is FOLDED or w.kind == "folded":
            continue
        if not w.shapes_known:
            unknown.append(tid)
        elif (w.kind in COMPUTE_KINDS and w.macs == 0) or (
                w.macs == w.flops == w.in_elements == w.out_elements == 0 and task_ms.get(tid, 0.0) > 0.005):
            zero.append(tid)
    total = sum(task_ms.values()) or 1.0
    return {"unknown_tasks": len(unknown), "unknown_share": sum(task_ms.get(t, 0.0) for t in unknown) / total,
            "unknown_examples": unknown[:5], "zero_tasks": len(zero), "zero_examples": zero[:5]}


# Rounds of `cpu_ms` and the pause between them. Calibration interleaves its cases round by round over minutes, so
# each case's 5th percentile comes from whichever rounds met the machine's fast state; three rounds back to back
# (about 1 s) often met only the slow one. Seen on an Emerald Rapids VM (2026-12-06 02:09 UTC, nothing of ours on
# the other vCPU): a single-thread GEMM switching every 1-3 s between ~95 and ~145 GFLOP/s; MobileNetV2's cpu_ms
# timed six times alternately: 3 rounds back to back 6.29-10.27 ms (1.63x apart), 8 rounds 0.4 s apart 6.27-8.39
# (1.34x); RegNetY-400MF 1.59x -> 1.43x, LeViT-128S 1.47x -> 1.22x (benchmarks/cpu_time_spread.py).
CPU_ROUNDS = 8
CPU_ROUND_GAP_S = 0.4


def cpu_ms(r: Any, inputs: dict[str, list[int]], min_runs: int = 6, budget_s: float = 0.3,
           rounds: int = CPU_ROUNDS, path: Path | None = None, gap_s: float = CPU_ROUND_GAP_S) -> float | None:
    """The compiled model's run time (or, on ONNX Runtime, that of the file at `path`, with the same feeds) as
    calibration times its kernels (simulator.calibration: thread CPU time, 5th percentile over rounds, 1 thread):
    the uncontended figure the host profile is fitted to, which load from other processes on a shared machine
    barely moves (the pipeline's median is wall-clock). Rounds `gap_s` apart (CPU_ROUNDS)."""
    from compiler.inputs import generate_inputs
    from simulator.calibration_timing import fast_ms, timed_rounds

    if r.compiled_model_path is None:
        return None
    feeds = generate_inputs(r.compiled, inputs)
    if r.target.startswith("ort-"):
        from simulator.calibration_timing import session

        sess = session(Path(path or r.compiled_model_path))
        run = lambda: sess.run(None, feeds)  # noqa: E731
    else:
        from ai_edge_litert.interpreter import Interpreter

        it = Interpreter(model_path=str(r.compiled_model_path), num_threads=1)
        details = it.get_input_details()
        for d, a in zip(details, feeds.values()):
            if list(d["shape"]) != list(a.shape):
                it.resize_tensor_input(d["index"], list(a.shape))
        it.allocate_tensors()
        for d, a in zip(details, feeds.values()):
            it.set_tensor(d["index"], a.astype(d["dtype"]))
        run = it.invoke
    for _ in range(3):
        run()
    return fast_ms(timed_rounds(run, min_runs, budget_s, rounds, gap_s, cap=200))


def probed_cpu_ms(r: Any, inputs: dict[str, list[int]], calibration: Path | None, upload: Path | None = None,
                  rounds: int = CPU_ROUNDS, gap_s: float = CPU_ROUND_GAP_S) -> dict[str, Any]:
    """`cpu_ms` with the speed probe before and after it, held against the calibration's (`cpu_speed`, as the
    profile's `speed`): the figure the headline accuracy is read against says at what speed it was timed. With
    `upload` (a QDQ file, whose float graph the host measures), the upload as written is timed too."""
    from compiler.speed_probe import SpeedCheck, probe
    from simulator.calibration import speed_reference

    before = probe()
    ms = cpu_ms(r, inputs, rounds=rounds, gap_s=gap_s)
    uploaded = ({"uploaded_cpu_ms": cpu_ms(r, inputs, rounds=rounds, path=upload, gap_s=gap_s)}
                if upload is not None else {})
    check = SpeedCheck(before, probe(), speed_reference(calibration))
    return {"cpu_ms": ms, "cpu_speed": check.to_json(), **uploaded}


COREML_TARGET = "coreml/apple-a17"  # Core ML does not run on Linux: its files are predicted on a Core ML device


def host_target(path: Path) -> str:
    """The target a corpus file is analysed on: its runtime on this host, or Core ML's device (predicted)."""
    if path.name.endswith((".mlmodel", ".mlpackage", ".mlpackage.zip")):
        return COREML_TARGET
    return "litert-cpu/host" if path.suffix == ".tflite" else "ort-cpu/host"


def analyse(path: Path, inputs: dict[str, list[int]], calibration: Path | None, runs: int = 30, warmup: int = 5,
            measure_cpu: bool = True, check_exports: bool = True, cpu_rounds: int = CPU_ROUNDS,
            cpu_gap_s: float = CPU_ROUND_GAP_S, keep_probes: bool = True, fast_rounds: int = FAST_ROUNDS,
            remeasure_pause_s: float = REMEASURE_PAUSE_S) -> dict[str, Any]:
    """One model through the pipeline (in the child). Raises only for a crash (the parent keeps the traceback).
    `check_exports=False` skips the ONNX export dry runs, which the host fp32 figures do not read; `cpu_rounds`
    and `cpu_gap_s` are `cpu_ms`'s rounds (a test that needs only a figure times fewer, back to back); `keep_probes`
    adds the profile's speed probes to the calibration's history (AnalysisOptions.keep_speed_probes); `fast_rounds`
    the profile's rounds of the fast CPU time (AnalysisOptions.fast_rounds; no row reads it, the analysis's views
    do) and `remeasure_pause_s` its pause before a noisy round is timed again (AnalysisOptions.remeasure_pause_s)."""
    from compiler.backends.ort import quantized_upload
    from simulator.calibrated import hardware_for
    from simulator.sweep import sweep
    from simulator.totals import totals
    from worker.pipeline import AnalysisOptions, analyze, user_errors

    target = host_target(path)
    opts = AnalysisOptions(targets=(target,), input_shapes=inputs, runs=runs, warmup=warmup,
                           calibration_path=calibration, check_exports=check_exports, keep_speed_probes=keep_probes,
                           fast_rounds=fast_rounds, remeasure_pause_s=remeasure_pause_s)
    row: dict[str, Any] = {"target": target, "file_bytes": path.stat().st_size}
    with tempfile.TemporaryDirectory(prefix="realworld-") as d:
        try:
            res = analyze(path, Path(d), opts)
        except user_errors() as e:
            return {**row, "status": "error", "error": _one_line(e)}
        r = res.targets[0]
        pred = sweep(r.compiled, r.target, None, hardware=hardware_for(r.target, calibration), source=res.source)
        base = pred.bulk["base"]["preset"]
        tot = totals(pred.bulk, pred.per_op, base, {})  # the file as uploaded
        # A QDQ upload's host profile is of its float graph (compiler.backends.ort.quantized_upload): its measured
        # figures are held against the fp32 prediction, the upload as written (timed apart) against its own preset.
        qdq = target.startswith("ort-") and quantized_upload(res.source) and base != "fp32"
        ran = totals(pred.bulk, pred.per_op, "fp32", {}) if qdq else tot
        ids = [n.id for n in r.compiled.nodes]
        if r.profile is not None and r.profile.tasks:
            task_ms = {k: t.median_ms for k, t in r.profile.tasks.items()}
        else:  # LiteRT measures the whole model only: the analysis's per-op split (scaled predictions)
            j = [p["name"] for p in r.sweep.bulk["presets"]].index("fp32")
            task_ms = {tid: float(r.sweep.bulk["metrics"]["latency_ms"][i][j]) for i, tid in enumerate(ids)}
        row.update({
            "status": "analysed", "format": res.source.format, "tasks": len(ids),
            "measured_ms": r.profile.latency_ms if r.profile else None,
            "measured_p90_ms": r.profile.latency_p90_ms if r.profile else None,
            # the CPU's speed during the profile against the calibration's (compiler.speed_probe.SpeedCheck)
            "speed": (r.profile.noise or {}).get("speed") if r.profile else None,
            **(probed_cpu_ms(r, inputs, calibration, path if qdq else None, cpu_rounds, cpu_gap_s)
               if r.profile and measure_cpu else {"cpu_ms": None}),
            "predicted_ms": float(ran["latency_ms"]), "predicted_size": float(tot["size_bytes"]),
            **({"uploaded_preset": base, "uploaded_predicted_ms": float(tot["latency_ms"])} if qdq else {}),
            "runs_bytes": _runs_bytes(path, Path(d), r.target),
            "note": r.compiled.metadata.get("note", "") if r.profile is None else "",
            "stage_seconds": {k: round(v, 2) for k, v in res.stage_seconds.items()},
            **work_rows(pred.works, ids, task_ms),
            "per_task": per_task(r.compiled, pred, task_ms if r.profile is not None and r.profile.tasks else {}),
        })
    return row


def per_task(g: Any, pred: Any, task_ms: dict[str, float]) -> list[list[Any]]:
    """[task id, op type, cost kind, predicted fp32 ms, profiled median ms or None] of every task that is not
    folded: what a miss is made of, by op kind (the profile is ORT's wall time per task, with its profiler's cost)."""
    j = [p["name"] for p in pred.bulk["presets"]].index("fp32")
    lat = pred.bulk["metrics"]["latency_ms"]
    out: list[list[Any]] = []
    for i, (nd, w) in enumerate(zip(g.nodes, pred.works)):
        if w.kind != "folded":
            prof = task_ms.get(nd.id)
            out.append([nd.id, nd.op_type, w.kind, round(float(lat[i][j]), 5),
                        None if prof is None else round(prof, 5)])
    return out


def _runs_bytes(path: Path, workdir: Path, target: str) -> int:
    """Bytes of the file the target runs, which the predicted size describes: the upload, except a `.pt2` on an ONNX
    target, which runs the ONNX file converted from it (without the exporter's per-node debug records, which every
    ONNX file Edgescope writes drops): MobileNetV3-Small's .pt2 holds 1.2 MB more than that (its program and sample
    inputs)."""
    onnx_target = path.suffix == ".pt2" and target.startswith("ort-")
    converted = next(workdir.rglob("source.onnx"), None) if onnx_target else None
    if converted is None:
        return path.stat().st_size
    import onnx

    model = onnx.load(str(converted))
    for n in model.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    return model.ByteSize()
