"""Budget solver figures: server-side solve time on a 10,000-task model and agreement with exhaustive search.

    .venv/bin/python benchmarks/solver.py [--ops 10000] [--runs 5] [--seeds 100] [--records] [--small 120,300]
    .venv/bin/python benchmarks/solver.py --against ../main-checkout [--rounds 4] [--runs 3]

The 10,000-task model is benchmarks/sweep.py's chain (MatMul with a weight, Add with a bias, Relu) swept for
ort-cpu/host. The worker stores the solver's table beside the option table (simulator/solver/table_bytes.py);
figures, medians of --runs, wall and CPU: the cold answer (what a user waits for on the first solve of an
analysis in a server process: read the stored table, solve, write the JSON) and the warm one the server answers
from its cache (solve and JSON). `--records` also times the fallback for analyses stored before the solver
table (parse every per-op record). Exhaustive agreement: random small option tables (testkit/solver_tables.py)
with random budgets, every state enumerated. `--against DIR` times the cold answer of this tree and of another
checkout (the code before a change) in child processes, alternating, each child reading the same stored table:
CPU seconds side by side on a shared host."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.sweep import chain  # noqa: E402
from simulator.solver import Budget, is_float_combo, prepare, solution_json, solve  # noqa: E402
from simulator.solver.table_bytes import table_bytes, table_from_bytes  # noqa: E402
from simulator.sweep import sweep  # noqa: E402
from simulator.totals import totals  # noqa: E402
from store.packed import pack  # noqa: E402


def _records(blob: bytes, offsets: list[int]) -> list[dict]:
    return [json.loads(gzip.decompress(blob[a:b])) for a, b in zip(offsets, offsets[1:])]


def _answer(table: Any, budget: Budget) -> tuple[Any, str]:
    """What POST /solve does once it has the table: solve and write the JSON answer."""
    sol = solve(table, "fp32", {}, budget)
    return sol, json.dumps(solution_json(sol))


def large(n_ops: int, runs: int, records: bool) -> None:
    r = sweep(chain(n_ops), "ort-cpu/host")
    bulk = json.loads(json.dumps(r.bulk))  # as the server parses it
    c0 = time.process_time()
    stored = table_bytes(r.bulk, r.per_op)  # what the worker stores beside the option table
    print(f"solver table written by the worker: {len(stored) / 1e6:.2f} MB in {time.process_time() - c0:.2f} s CPU")
    blob, offsets = pack(list(r.per_op))
    base = totals(bulk, {}, "fp32", {})
    for frac in (0.9, 0.6):
        budget = Budget.of(latency_ms=base["latency_ms"] * frac)
        cold, cold_cpu, warm, warm_cpu, old = [], [], [], [], []
        for _ in range(runs):
            # Cold: the first solve of an analysis in a server process reads the stored table, then answers.
            t0, c0 = time.perf_counter(), time.process_time()
            table = table_from_bytes(stored)
            sol, _ = _answer(table, budget)
            t1, c1 = time.perf_counter(), time.process_time()
            _answer(table, budget)  # warm: the table is cached per analysis
            t2, c2 = time.perf_counter(), time.process_time()
            cold.append(t1 - t0)
            cold_cpu.append(c1 - c0)
            warm.append(t2 - t1)
            warm_cpu.append(c2 - c1)
            if records:  # analyses stored before the solver table: every per-op record parsed
                t3 = time.perf_counter()
                _answer(prepare(bulk, _records(blob, offsets)), budget)
                old.append(time.perf_counter() - t3)
        props = ", ".join(f"{'+'.join(p.objectives)}: {len(p.changes)} changes, {p.totals['latency_ms']:.3f} ms, "
                          f"{p.totals['size_bytes'] / 1e6:.2f} MB" for p in sol.proposals)
        med = statistics.median
        fallback = f"; from the per-op records {med(old):.3f} s" if records else ""
        print(f"{n_ops} tasks, latency <= {frac:.0%} of fp32 ({budget.latency_ms:.3f} ms): feasible={sol.feasible}; "
              f"medians of {runs}: warm {med(warm):.3f} s wall, {med(warm_cpu):.3f} s CPU; cold (read the stored "
              f"table + solve + JSON) {med(cold):.3f} s wall, {med(cold_cpu):.3f} s CPU{fallback}; "
              f"load {os.getloadavg()[0]:.1f}; {props}")


_CHILD = """
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
os.environ.setdefault("OMP_NUM_THREADS", "1")
from simulator.solver import Budget, solution_json, solve
from simulator.solver.table_bytes import table_from_bytes
stored = open(sys.argv[2], "rb").read()
out = []
for frac, lat in json.loads(sys.argv[3]):
    cpu = []
    for _ in range(int(sys.argv[4])):
        c0 = time.process_time()
        sol = solve(table_from_bytes(stored), "fp32", {}, Budget.of(latency_ms=lat))
        json.dumps(solution_json(sol))
        cpu.append(time.process_time() - c0)
    out.append({"frac": frac, "cpu": cpu, "changes": [[list(p.objectives), len(p.changes)] for p in sol.proposals],
                "totals": [p.totals["latency_ms"] for p in sol.proposals]})
print(json.dumps(out))
"""


def against(n_ops: int, other: str, rounds: int, runs: int) -> None:
    """Cold answers (read the stored table + solve + JSON) of this tree and of `other`, in alternating children."""
    import subprocess
    import tempfile

    r = sweep(chain(n_ops), "ort-cpu/host")
    base = totals(r.bulk, r.per_op, "fp32", {})
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"before": os.path.abspath(other), "after": here}
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(table_bytes(r.bulk, r.per_op))
        f.flush()
        budgets = json.dumps([(frac, base["latency_ms"] * frac) for frac in (0.9, 0.6)])
        cpu: dict[str, dict[float, list[float]]] = {k: {0.9: [], 0.6: []} for k in trees}
        for rnd in range(rounds):
            for name, tree in (trees.items() if rnd % 2 == 0 else reversed(trees.items())):
                env = dict(os.environ, PYTHONPATH=tree)
                res = json.loads(subprocess.run([sys.executable, "-c", _CHILD, tree, f.name, budgets, str(runs)],
                                                env=env, check=True, capture_output=True, text=True).stdout)
                for x in res:
                    cpu[name][x["frac"]] += x["cpu"]
                    print(f"round {rnd} {name}: {x['frac']:.0%} of fp32: CPU s {' '.join(f'{c:.2f}' for c in x['cpu'])}"
                          f"; {x['changes']}, latency {x['totals']}; load {os.getloadavg()[0]:.1f}", flush=True)
    for frac in (0.9, 0.6):
        b, a = statistics.median(cpu["before"][frac]), statistics.median(cpu["after"][frac])
        print(f"{n_ops} tasks, latency <= {frac:.0%} of fp32, cold answer CPU s, median of {len(cpu['after'][frac])}:"
              f" before {b:.2f}, after {a:.2f} ({b / a:.2f}x)")


def small(sizes: list[int], runs: int) -> None:
    """Solve CPU on the chains users' models look like (50-2,000 ops; the small-model search with its exchange
    step), latency at 90% and 60% of fp32, medians of `runs`; the table built in memory (no stored-table read)."""
    for n in sizes:
        r = sweep(chain(n), "ort-cpu/host")
        base = totals(r.bulk, r.per_op, "fp32", {})
        table = prepare(r.bulk, r.per_op)
        for frac in (0.9, 0.6):
            budget = Budget.of(latency_ms=base["latency_ms"] * frac)
            cpu = []
            for _ in range(runs):
                c0 = time.process_time()
                sol, _ = _answer(table, budget)
                cpu.append(time.process_time() - c0)
            print(f"{n}-task chain, latency <= {frac:.0%} of fp32: solve + JSON median {statistics.median(cpu):.2f} s "
                  f"CPU of {runs}; {[len(p.changes) for p in sol.proposals]} changes; load {os.getloadavg()[0]:.1f}",
                  flush=True)


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
    ap.add_argument("--records", action="store_true", help="also time the fallback that parses every per-op record")
    ap.add_argument("--against", help="another checkout (the code before): time both trees' cold answers")
    ap.add_argument("--rounds", type=int, default=4, help="with --against: children per tree, alternating")
    ap.add_argument("--small", default="120,300,1000,2000", help="chain sizes for the small-model figures ('' skips)")
    a = ap.parse_args()
    if a.against:
        print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        against(a.ops, a.against, a.rounds, a.runs)
        return
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times suffer from it)")
    exhaustive(a.seeds)
    if a.small:
        small([int(x) for x in a.small.split(",")], a.runs)
    large(a.ops, a.runs, a.records)


if __name__ == "__main__":
    main()
