"""Pipeline figures: upload-to-ready and per-stage seconds, per-task timing spread, sum of task
medians vs whole-model median. Prints figures; it is not a test.

    .venv/bin/python benchmarks/pipeline.py [--repeats 3] [--runs 30]

Uses a live `edgescope serve` on the embedded default in a temp dir (the same path a user takes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit import modelzoo  # noqa: E402
from testkit.live import LiveServer, start_server  # noqa: E402

MODELS = {
    "mobilenet_v2_like": lambda p: modelzoo.mobilenet_v2_like(p, width=1.0, resolution=224),
    "bert_like_12": lambda p: modelzoo.bert_like(p, layers=12, hidden=256, heads=4, seq=128),
}


def _upload(server: LiveServer, path: Path) -> tuple[str, float]:
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        r = server.http.post(f"{server.url}/api/models", files={"file": (path.name, f)},
                             data={"targets": json.dumps(["ort-cpu/host"])}, timeout=120)
    r.raise_for_status()
    mid = r.json()["id"]
    while (m := server.get(f"/api/models/{mid}").json())["status"] not in ("ready", "failed"):
        time.sleep(0.1)
    if m["status"] != "ready":
        raise SystemExit(f"{path.name} failed: {m['error']}")
    return mid, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3, help="uploads per model (median reported)")
    ap.add_argument("--runs", type=int, default=30, help="profiled runs per upload")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="edgescope-bench-") as d:
        tmp = Path(d)
        (tmp / "data").mkdir()
        # The live server of the tests: `edgescope serve` on the embedded default, signed in with a token.
        server = start_server(tmp / "data", {"EDGESCOPE_PROFILE_RUNS": str(a.runs), "EDGESCOPE_PROFILE_WARMUP": "5"})
        try:
            # The first job calibrates the host once; keep it out of the figures.
            warm = tmp / "warm.onnx"
            modelzoo.tiny_cnn(warm)
            _upload(server, warm)
            print(f"{'model':<20} {'MB':>6} {'tasks':>6} {'ready s':>8} {'parse':>6} {'compile':>7} {'profile':>7} "
                  f"{'simulate':>8} {'store':>6} {'CV med':>7} {'sum/whole':>9}")
            for name, build in MODELS.items():
                path = tmp / f"{name}.onnx"
                build(path)
                totals, stages, cvs, ratios, tasks = [], {}, [], [], 0
                for _ in range(a.repeats):
                    mid, secs = _upload(server, path)
                    totals.append(secs)
                    m = server.get(f"/api/models/{mid}").json()
                    for st in m["stages"]:
                        stages.setdefault(st["name"], []).append(st["seconds"] or 0.0)
                    ops = server.get(f"/api/models/{mid}/ops").json()
                    tasks = len(ops["ops"])
                    timed = [o for o in ops["ops"] if o["measured"] and o["latency_ms"] > 0]
                    # Spread per task: IQR / median (a robust coefficient of variation).
                    cvs.append(statistics.median((o["p75_ms"] - o["p25_ms"]) / o["latency_ms"] for o in timed))
                    ratios.append(sum(o["latency_ms"] for o in timed) / ops["latency_ms"])
                med = statistics.median
                print(f"{name:<20} {path.stat().st_size / 1e6:6.1f} {tasks:6d} {med(totals):8.2f} "
                      f"{med(stages['parse']):6.2f} {med(stages['compile']):7.2f} {med(stages['profile']):7.2f} "
                      f"{med(stages['simulate']):8.2f} {med(stages['store']):6.2f} {med(cvs):7.1%} {med(ratios):9.3f}")
        finally:
            server.proc.terminate()
            server.proc.wait(20)
    print("\nCV med: median over tasks of IQR/median of the task's per-run times. "
          "sum/whole: sum of task medians / whole-model median (1.0 = agree).")


if __name__ == "__main__":
    main()
