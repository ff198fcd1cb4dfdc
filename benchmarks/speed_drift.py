"""How steady this machine's per-core speed is: the speed probe (compiler/speed_probe.py, ONNX Runtime's 1-thread
384x384 MatMul in thread CPU time) again and again for a while, beside numpy's GEMM (the lead's /work/notes/probe.py:
OpenBLAS, 1 thread, wall time). Prints the range, how much consecutive probes differ (what DRIFT_LIMIT must stay
above) and how well the two probes agree. With `--model FILE.onnx` (repeatable), each probe is followed by each
model's fastest of `--runs` runs in thread CPU time (ORT, 1 thread, as calibration times its cases), and the report
gives each model's range and how far its time moves with the probe: the slope of log time on log probe (-1: it
moves as the GEMM probe does; 0: not at all), which says how much a speed ratio measured by the probe can be
carried to that model's prediction.

Run under the measurement lock: `flock /work/notes/measure.lock .venv/bin/python benchmarks/speed_drift.py [SECONDS]
[--json rows.json] [--model FILE ...] [--runs N]`. Asserts nothing.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy loads OpenBLAS

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))

from compiler.speed_probe import DRIFT_LIMIT, PROBE_N, probe  # noqa: E402


def numpy_probe(runs: int = 40) -> float:
    a, b = (np.random.default_rng(i).random((PROBE_N, PROBE_N), dtype=np.float32) for i in (0, 1))
    for _ in range(5):
        a @ b
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        a @ b
        ts.append(time.perf_counter() - t)
    return 2 * PROBE_N**3 / statistics.median(ts) / 1e9


def model_timer(path: str, runs: int) -> Callable[[], float]:
    """A function timing `path`'s fastest of `runs` runs in thread CPU time (ms), on ORT with 1 intra-op thread and
    inputs of ones (a symbolic dim taken as 1)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    dtypes = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}
    feeds = {i.name: np.ones([d if isinstance(d, int) else 1 for d in i.shape], dtypes.get(i.type, np.float32))
             for i in sess.get_inputs()}
    for _ in range(3):
        sess.run(None, feeds)

    def fastest() -> float:
        best = float("inf")
        for _ in range(runs):
            c = time.thread_time()
            sess.run(None, feeds)
            best = min(best, time.thread_time() - c)
        return best * 1e3

    return fastest


def log_slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log(ys) on log(xs); None with fewer than 3 points or no spread in xs."""
    if len(xs) < 3:
        return None
    lx, ly = np.log(np.asarray(xs, dtype=float)), np.log(np.asarray(ys, dtype=float))
    sxx = float(((lx - lx.mean()) ** 2).sum())
    return float(((lx - lx.mean()) * (ly - ly.mean())).sum() / sxx) if sxx > 0 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seconds", nargs="?", type=float, default=60.0)
    ap.add_argument("--json", default=None, help="write every probe here")
    ap.add_argument("--model", action="append", default=[], help="an ONNX file to time after every probe")
    ap.add_argument("--runs", type=int, default=15, help="runs per model timing (the fastest is kept)")
    a = ap.parse_args()
    timers = {m: model_timer(m, a.runs) for m in a.model}
    rows: list[dict[str, float | str]] = []
    t_end = time.time() + a.seconds
    while time.time() < t_end:
        t = time.perf_counter()
        ours = probe()
        rows.append({"at": time.strftime("%H:%M:%S"), "ort_gflops": round(ours, 1), "probe_ms": round(
            (time.perf_counter() - t) * 1e3, 1), "numpy_gflops": round(numpy_probe(), 1), "load": os.getloadavg()[0],
            **{m: round(timer(), 4) for m, timer in timers.items()}})
        time.sleep(0 if timers else 0.5)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    o = [float(r["ort_gflops"]) for r in rows]
    n = [float(r["numpy_gflops"]) for r in rows]
    steps = sorted(abs(o[i + 1] / o[i] - 1) * 100 for i in range(len(o) - 1))
    ms = [float(r["probe_ms"]) for r in rows]
    print(f"{len(rows)} probes {rows[0]['at']}-{rows[-1]['at']}, load {rows[0]['load']:.1f}-{rows[-1]['load']:.1f}: "
          f"ORT {min(o):.0f}-{max(o):.0f} GFLOP/s (median {statistics.median(o):.0f}), numpy {min(n):.0f}-{max(n):.0f}; "
          f"a probe took {min(ms):.0f}-{max(ms):.0f} ms")
    if steps:
        print(f"consecutive ORT probes differ: median {statistics.median(steps):.1f}%, 90th percentile "
              f"{steps[int(0.9 * (len(steps) - 1))]:.1f}%, max {steps[-1]:.1f}% (DRIFT_LIMIT {DRIFT_LIMIT:.2f}x); "
              f"correlation with numpy's {np.corrcoef(o, n)[0, 1]:.2f}")
    for m in a.model:
        t = [float(r[m]) for r in rows]
        b = log_slope(o, t)
        print(f"{m}: {min(t):.2f}-{max(t):.2f} ms (median {statistics.median(t):.2f}); slope of log time on log "
              f"probe {'-' if b is None else f'{b:.2f}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
