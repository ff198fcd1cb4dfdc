"""Sweep time for a 10,000-task model x every option x one target, on one core.

Run: `python benchmarks/sweep.py [--ops 10000] [--target ort-cpu/host]`. The model is built in code:
a chain of MatMul (with a weight), Add (with a bias) and Relu, a third each, so 3,334 tasks carry weights
and get the full 405-combo table. Prints the sweep time (the figure the issue asks for) and, separately,
the time to turn every per-op table into Python lists (what serving all of them at once would cost).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core

from simulator.sweep import sweep  # noqa: E402
from testkit.graphs import chain  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--target", default="ort-cpu/host")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    g = chain(a.ops)
    sweep(chain(30), a.target)  # import and YAML loading are not part of the figure
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        r = sweep(g, a.target)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    bulk_json = json.dumps(r.bulk)
    t_bulk = time.perf_counter() - t0
    t0 = time.perf_counter()
    cells = sum(len(r.per_op[i]["combos"]) for i in range(len(r.per_op)))
    t_per_op = time.perf_counter() - t0
    print(f"sweep: {a.ops} tasks x {len(r.bulk['presets'])} presets (bulk) + {cells} per-op combos, "
          f"target {a.target}: best {min(times):.3f} s, median {sorted(times)[len(times) // 2]:.3f} s "
          f"(limit 2 s)")
    print(f"bulk JSON: {len(bulk_json) / 1e6:.1f} MB in {t_bulk:.3f} s; "
          f"materialising every per-op table as lists: {t_per_op:.3f} s")


if __name__ == "__main__":
    main()
