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

from compiler.graph import Graph, Node, Value, WeightStats  # noqa: E402
from simulator.sweep import sweep  # noqa: E402


def chain(n_ops: int, hidden: int = 256) -> Graph:
    values: dict[str, Value] = {"x": Value("x", [1, hidden], "float32")}
    nodes: list[Node] = []
    cur = "x"
    for i in range(n_ops):
        out = f"v{i}"
        values[out] = Value(out, [1, hidden], "float32")
        kind = i % 3
        if kind == 0:
            w = f"w{i}"
            values[w] = Value(w, [hidden, hidden], "float32",
                              weight=WeightStats(hidden * hidden, hidden * hidden * 4, -1.0, 1.0, 0.0))
            nodes.append(Node(f"t{i}", f"MatMul_{i}", "MatMul", inputs=[cur, w], outputs=[out]))
        elif kind == 1:
            b = f"b{i}"
            values[b] = Value(b, [hidden], "float32", weight=WeightStats(hidden, hidden * 4, -1.0, 1.0, 0.0))
            nodes.append(Node(f"t{i}", f"Add_{i}", "Add", inputs=[cur, b], outputs=[out]))
        else:
            nodes.append(Node(f"t{i}", f"Relu_{i}", "Relu", inputs=[cur], outputs=[out]))
        cur = out
    return Graph("chain", "onnx", nodes, values, ["x"], [cur])


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
