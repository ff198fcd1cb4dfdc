"""Budget solver figures: server-side solve time on a 10,000-task model and agreement with exhaustive search.

    .venv/bin/python benchmarks/solver.py [--ops 10000] [--runs 5] [--seeds 100]

The 10,000-task model is benchmarks/sweep.py's chain (MatMul with a weight, Add with a bias, Relu) swept for
ort-cpu/host; its per-op tables are packed and read back exactly as the worker stores them and the API reads
them (store.packed). Figures: the cold solve (read every per-op record, build the solver's arrays, solve) and
the warm one the server answers from its cache (solve only), medians of --runs. Exhaustive agreement: random
small option tables (testkit/solver_tables.py) with random budgets, every state enumerated.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.sweep import chain  # noqa: E402
from simulator.solver import Budget, is_float_combo, prepare, solve  # noqa: E402
from simulator.sweep import sweep  # noqa: E402
from simulator.totals import totals  # noqa: E402
from store.packed import pack  # noqa: E402


def _records(blob: bytes, offsets: list[int]) -> list[dict]:
    return [json.loads(gzip.decompress(blob[a:b])) for a, b in zip(offsets, offsets[1:])]


def large(n_ops: int, runs: int) -> None:
    r = sweep(chain(n_ops), "ort-cpu/host")
    bulk = json.loads(json.dumps(r.bulk))  # as the server parses it
    blob, offsets = pack(list(r.per_op))
    base = totals(bulk, {}, "fp32", {})
    for frac in (0.9, 0.6):
        budget = Budget.of(latency_ms=base["latency_ms"] * frac)
        cold, warm, cpu = [], [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            table = prepare(bulk, _records(blob, offsets))
            t1, c1 = time.perf_counter(), time.process_time()
            sol = solve(table, "fp32", {}, budget)
            t2, c2 = time.perf_counter(), time.process_time()
            cold.append(t2 - t0)
            warm.append(t2 - t1)
            cpu.append(c2 - c1)
        props = ", ".join(f"{'+'.join(p.objectives)}: {len(p.changes)} changes, {p.totals['latency_ms']:.3f} ms, "
                          f"{p.totals['size_bytes'] / 1e6:.2f} MB" for p in sol.proposals)
        print(f"{n_ops} tasks, latency <= {frac:.0%} of fp32 ({budget.latency_ms:.3f} ms): feasible={sol.feasible}; "
              f"solve median {statistics.median(warm):.3f} s wall, {statistics.median(cpu):.3f} s CPU (cached table), "
              f"cold median "
              f"{statistics.median(cold):.3f} s (read {len(offsets) - 1} records + solve), runs {runs}; {props}")


def exhaustive(seeds: int) -> None:
    from testkit.solver_tables import every_state, random_table

    agree = optimal = feasible = 0
    for seed in range(seeds):
        bulk, per_op = random_table(seed, n=5 + seed % 2, combos_per_op=4, units=seed % 2 == 0)
        rng = np.random.default_rng(seed + 1000)
        keep = frozenset(o for o in bulk["ops"] if rng.random() < 0.2)
        mw = ["fp32", "fp16", "int8-static"][seed % 3]
        states = list(every_state(bulk, per_op, mw, keep))
        kw = {}
        for k in ("latency_ms", "peak_memory_bytes", "size_bytes", "memory_power_mw"):
            if rng.random() < 0.5 or (k == "memory_power_mw" and not kw):
                v = sorted(t[k] for _, t in states)
                kw[k] = v[int(rng.uniform(0, 0.4) * len(v))] * (1 + 1e-7)
        b = Budget.of(**kw)
        feas = [len(ov) for ov, t in states if not b.unmet(t)]
        sol = solve(prepare(bulk, per_op), mw, {}, b, keep)
        agree += bool(feas) == sol.feasible
        for p in sol.proposals:
            assert not b.unmet(p.totals) and p.totals == totals(bulk, per_op, mw, p.overrides)
            assert all(is_float_combo(p.overrides[o]) for o in keep if o in p.overrides)
        if feas and sol.feasible:
            feasible += 1
            fewest = next(p for p in sol.proposals if "fewest_changes" in p.objectives)
            optimal += len(fewest.changes) == min(feas)
    print(f"exhaustive search, {seeds} random tables (5-6 ops, 4 combos each, random budgets): feasibility agrees "
          f"{agree}/{seeds}; of {feasible} feasible, fewest-changes proposal as few as exhaustive in {optimal}; "
          f"every proposal's totals == simulator.totals.totals and within budget")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=100)
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times suffer from it)")
    exhaustive(a.seeds)
    large(a.ops, a.runs)


if __name__ == "__main__":
    main()
