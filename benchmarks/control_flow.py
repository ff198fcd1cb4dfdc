"""Control-flow figures on models built in code: tasks, predicted size vs the file, host latency measured vs
predicted (without running: trip counts and branches worked out from the model and the input values; and with
the trip counts the host run observed), trip counts seen. Prints figures; it is not a test.

    .venv/bin/python benchmarks/control_flow.py [--repeats 3] [--runs 30]

Models: torch models exported by the TorchScript exporter from `torch.jit.script` (a data-dependent `if`, a
loop of `n` steps, a stateful VAD-like model with an `If` on the sample rate and an LSTM stepped by a `Loop`, at
a fixed and at a dynamic chunk length) and a `Scan` built with onnx.helper (testkit/controlflow_models.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit import controlflow_models as cm  # noqa: E402

HOST, DEVICE = "ort-cpu/host", "ort-xnnpack/rpi5"


def _vad_fixed(p: Path) -> Path:
    """The VAD-like model exported at a fixed chunk of 4096 samples (its Loop's trip count follows from shapes)."""
    import onnx

    cm.torch_vad_like(p)
    m = onnx.load(p)
    dim = m.graph.input[0].type.tensor_type.shape.dim[1]
    dim.Clear()
    dim.dim_value = 4096
    onnx.save(m, p)
    return p


# name -> (builder, input shapes, input values, the body source node whose executions are reported, expected)
MODELS: dict[str, tuple[Callable[[Path], Path], dict[str, list[int]], dict[str, float], str, float]] = {
    "torch if": (cm.torch_if, {}, {}, "/a/Gemm", float("nan")),  # branch depends on random inputs
    "torch loop (n=5)": (cm.torch_loop, {}, {"n": 5}, "/cell/Gemm", 5),
    "vad-like 4096 fixed": (_vad_fixed, {}, {"sr": 16000}, "/cell/LSTM", cm.vad_frames(4096)),
    "vad-like 4096 dynamic": (cm.torch_vad_like, {"input": [1, 4096]}, {"sr": 16000}, "/cell/LSTM",
                              cm.vad_frames(4096)),
    "scan 6x64 (helper)": (lambda p: cm.scan_model(p, steps=6, width=64), {}, {}, "scan_mm", 6),
}


def _runs_of(compiled: Any, result: Any, source_node: str) -> float:
    """Executions per inference of the task implementing `source_node`, in a sweep `result` of `compiled`."""
    for i, n in enumerate(compiled.nodes):
        if source_node in n.source_nodes:
            return result.executions[i]
    return float("nan")


def _one(path: Path, shapes: dict[str, list[int]], values: dict[str, float], runs: int,
         calibration: Path, workdir: Path) -> dict[str, Any]:
    from simulator.calibrated import hardware_for
    from simulator.control_flow import observed_executions
    from simulator.sweep import sweep
    from worker.pipeline import AnalysisOptions, analyze

    opts = AnalysisOptions(targets=(HOST, DEVICE), input_shapes=shapes, input_values=values, runs=runs,
                           calibration_path=calibration)
    res = analyze(path, workdir, opts)
    host, dev = res.targets
    observed = observed_executions(host.compiled, host.profile)
    hw = hardware_for(HOST, calibration)
    blind = sweep(host.compiled, HOST, None, hardware=hw, source=res.source, input_values=values)
    seen = sweep(host.compiled, HOST, None, hardware=hw, source=res.source, observed=observed)
    return {"source_nodes": len(res.source.nodes), "tasks": len(host.compiled.nodes),
            "size": host.sweep.bulk["base"]["size_bytes"], "measured": host.profile.latency_ms,
            "blind": blind.bulk["base"]["latency_ms"], "seen": seen.bulk["base"]["latency_ms"],
            "device": dev.sweep.bulk["base"]["latency_ms"], "host": host, "dev": dev, "blind_sweep": blind}


def main() -> None:
    from edgescope.config import Settings

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3, help="analyses per model (medians reported)")
    ap.add_argument("--runs", type=int, default=30, help="profiled runs per analysis")
    a = ap.parse_args()
    calibration = Settings.from_env().calibration_path
    print(f"{'model':<22} {'file B':>9} {'size %':>7} {'src':>4} {'tasks':>5} {'measured ms':>11} "
          f"{'pred ms':>8} {'err %':>6} {'pred(obs) ms':>12} {'err %':>6} {'rpi5 ms':>8} {'trips host/rpi5/blind/want':>27}")
    with tempfile.TemporaryDirectory(prefix="edgescope-cf-") as d:
        for name, (build, shapes, values, body_node, want) in MODELS.items():
            path = build(Path(d) / (name.split()[0] + ".onnx"))
            rows = []
            for k in range(a.repeats):
                work = Path(d) / f"{name.replace(' ', '_')}-{k}"
                work.mkdir()
                rows.append(_one(path, shapes, values, a.runs, calibration, work))
            med = {key: statistics.median(r[key] for r in rows) for key in ("measured", "blind", "seen", "device")}
            r0, file_b = rows[0], path.stat().st_size
            host, dev = r0["host"], r0["dev"]
            trips = (f"{_runs_of(host.compiled, host.sweep, body_node):g}/{_runs_of(dev.compiled, dev.sweep, body_node):g}/"
                     f"{_runs_of(host.compiled, r0['blind_sweep'], body_node):g}/{want:g}")
            print(f"{name:<22} {file_b:>9} {100 * (r0['size'] / file_b - 1):>+7.2f} {r0['source_nodes']:>4} "
                  f"{r0['tasks']:>5} {med['measured']:>11.4f} {med['blind']:>8.4f} "
                  f"{100 * (med['blind'] / med['measured'] - 1):>+6.1f} {med['seen']:>12.4f} "
                  f"{100 * (med['seen'] / med['measured'] - 1):>+6.1f} {med['device']:>8.4f} {trips:>27}")


if __name__ == "__main__":
    main()
