"""LiteRT exports, predicted vs written vs measured on litert-cpu/host: every option the LiteRT exporter builds,
from each `.tflite` given and from its fp16-weight copy (the model with fp16 weights behind DEQUANTIZE, as
`edgescope optimize --model-wide fp16` writes it).

    python benchmarks/litert_exports.py /path/to/a.tflite ... [--calibration host-cpu.json] [--runs 30]

Files: the corpus's `tflite` exports (python -m corpus.build --only tv/mobilenet_v2 --exporter tflite). Prints one
row per (file, source, option): predicted and written size, predicted and measured latency (LiteRT's profiler,
1 thread, median of the runs; and the process's CPU time per run, which preemption on a shared machine does not
inflate), and the load average.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

OPTIONS = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights")


def _cpu_ms(path: Path, runs: int) -> float:
    """Median CPU time of the calling thread per invoke (1 thread: XNNPACK runs on it), on generated inputs."""
    from compiler.optimize.litert_check import fed_interpreter
    from compiler.profile import timed_runs

    it = fed_interpreter(str(path))
    for _ in range(3):
        it.invoke()
    return timed_runs(it.invoke, runs).cpu_median_ms


def main(argv: list[str] | None = None) -> int:
    from compiler.backends.litert import profile
    from simulator.predict import optimize_model
    from compiler.optimize.litert_export import export_tflite
    from compiler.profile import ProfileSettings

    ap = argparse.ArgumentParser(prog="benchmarks/litert_exports.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--calibration", type=Path, default=None, help="host calibration cache (default: none)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--options", nargs="+", default=list(OPTIONS), choices=OPTIONS)
    ap.add_argument("--fp32-source-only", action="store_true", help="skip the fp16-weight copy of each file")
    a = ap.parse_args(argv)
    print("| model | source | option | predicted size | written | size error | predicted ms | measured ms "
          "| latency error | CPU ms per run | CPU-time error | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="edgescope-litert-bench-") as tmp:
        for f in a.files:
            sources = [("fp32", f)]
            if not a.fp32_source_only:
                fp16 = Path(tmp, f"{f.stem}-fp16src.tflite")
                export_tflite(f, fp16, "fp16")
                sources.append(("fp16 weights", fp16))
            for label, src in sources:
                for option in a.options:
                    work = Path(tmp, f"{f.parent.name}-{label}-{option}")
                    work.mkdir()
                    out = work / "out.tflite"
                    try:
                        r = optimize_model(src, out, "litert-cpu/host", option, {}, work, a.calibration)
                    except Exception as e:  # noqa: BLE001 - a failed export is a row of its own
                        print(f"| {f.parent.name} | {label} | {option} | failed: {' '.join(str(e).split())[:160]} |")
                        continue
                    p = profile(out, ProfileSettings(runs=a.runs, warmup=3, threads=1))
                    pred_ms, ms = r["predicted"]["latency_ms"], p.latency_ms
                    cpu = _cpu_ms(out, a.runs)
                    cpu_err = f"{(pred_ms / cpu - 1) * 100:+.0f}%" if cpu else "-"
                    print(f"| {f.parent.name} | {label} | {option} | {r['predicted']['size_bytes'] / 1e6:.3f} MB "
                          f"| {r['size_bytes'] / 1e6:.3f} MB | {r['size_error_pct']:+.2f}% | {pred_ms:.2f} | {ms:.2f} "
                          f"| {(pred_ms / ms - 1) * 100:+.0f}% | {cpu:.2f} | {cpu_err} | {os.getloadavg()[0]:.1f} |",
                          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
