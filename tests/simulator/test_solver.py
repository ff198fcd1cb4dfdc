"""Budget solver (simulator/solver/): proposals meet the budget under the totals rule itself, a solution is
found whenever exhaustive search finds one, and the fewest-changes proposal is as small as exhaustive's."""

from __future__ import annotations

import functools
import itertools
import json

import numpy as np
import pytest

from compiler.vocabulary.options import OptionError
from simulator.solver import Budget, is_float_combo, prepare, solution_json, solve
from simulator.solver.table_bytes import table_bytes, table_from_bytes
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import conv_chain
from testkit.graphs import chain
from testkit.solver_tables import every_state, random_table

LIMITS = ("latency_ms", "peak_memory_bytes", "size_bytes", "memory_power_mw")


def _random_budget(seed: int, states: list[tuple[dict[str, str], dict[str, float]]]) -> Budget:
    """Limits at low quantiles of what the states reach: tight, sometimes impossible together."""
    rng = np.random.default_rng(seed + 1000)
    kw = {}
    for k in LIMITS:
        if rng.random() < 0.5 or (k == LIMITS[-1] and not kw):
            v = sorted(t[k] for _, t in states)
            kw[k] = v[int(rng.uniform(0, 0.4) * len(v))] * (1 + 1e-7)
    return Budget.of(**kw)


@functools.cache
def _exhaustive(seed: int) -> tuple[dict, dict, frozenset[str], str, list, Budget]:  # type: ignore[type-arg]
    """A random table, the ops kept float, the model-wide option, every state's totals and a budget: the exhaustive
    side of the two agreement tests below (3125 states per seed, most of their time), enumerated once per run."""
    bulk, per_op = random_table(seed, n=5, combos_per_op=4, units=seed % 2 == 0,
                                float_graph_ms=0.5 if seed % 4 == 3 else 0.0)  # a float-graph term: 10 of 40
    rng = np.random.default_rng(seed)
    keep = frozenset(o for o in bulk["ops"] if rng.random() < 0.2)
    mw = ["fp32", "fp16", "int8-static"][seed % 3]
    states = list(every_state(bulk, per_op, mw, keep))
    return bulk, per_op, keep, mw, states, _random_budget(seed, states)


def test_agrees_with_exhaustive_search_on_random_tables() -> None:
    feasible = optimal = 0
    for seed in range(40):
        bulk, per_op, keep, mw, states, budget = _exhaustive(seed)
        meets = [ov for ov, t in states if not budget.unmet(t)]
        sol = solve(prepare(bulk, per_op), mw, {}, budget, keep)
        assert sol.feasible == bool(meets), f"seed {seed}: solver {sol.feasible}, exhaustive {bool(meets)}"
        for p in sol.proposals:
            assert p.totals == totals(bulk, per_op, mw, p.overrides)  # the rule's own figures, to the digit
            assert not budget.unmet(p.totals)
            assert all(is_float_combo(p.overrides[o]) for o in keep if o in p.overrides)
            assert {c.op for c in p.changes} == set(p.overrides)
        if meets:
            feasible += 1
            fewest = next(p for p in sol.proposals if "fewest_changes" in p.objectives)
            least = next(p for p in sol.proposals if "least_size" in p.objectives)
            optimal += len(fewest.changes) == min(len(ov) for ov in meets)
            assert least.totals["size_bytes"] <= fewest.totals["size_bytes"]
        else:
            assert sol.closest is not None and sol.unmet
    assert feasible >= 20  # the budgets above are mostly reachable: the comparison means something
    assert optimal >= 0.85 * feasible, f"fewest changes as few as exhaustive's on {optimal} of {feasible}"


def test_real_sweep_one_change_found_when_one_suffices() -> None:
    """A swept conv chain on ort-cpu/host: of every single-op change (all 405 combos), the smallest file sets the
    budget; the solver must meet it with one change, and its totals are the rule's. (On the size: no single change
    runs this small fp32 chain faster on ORT's CPU, where an fp16 Conv runs its fp32 kernel.)"""
    r = sweep(conv_chain(), "ort-cpu/host")
    ops = r.bulk["ops"]
    rows = list(r.per_op)  # the per-op dicts once: the sweep builds one on each access
    base = totals(r.bulk, rows, "fp32", {})["size_bytes"]
    best = min(((op, c) for i, op in enumerate(ops) for c in rows[i]["combos"]),
               key=lambda oc: totals(r.bulk, rows, "fp32", {oc[0]: oc[1]})["size_bytes"])
    limit = totals(r.bulk, rows, "fp32", {best[0]: best[1]})["size_bytes"] * (1 + 1e-9)
    assert limit < base
    sol = solve(prepare(r.bulk, r.per_op), "fp32", {}, Budget.of(size_bytes=limit))
    assert sol.feasible
    fewest = next(p for p in sol.proposals if "fewest_changes" in p.objectives)
    assert len(fewest.changes) == 1
    assert fewest.totals == totals(r.bulk, r.per_op, "fp32", fewest.overrides)
    assert fewest.totals["size_bytes"] <= limit


def test_crossings_are_priced_as_the_rule_prices_them() -> None:
    """On an execution-provider target (units and crossings), every proposal's totals are the rule's and within
    budget, including changes that move ops between units."""
    r = sweep(conv_chain(), "ort-qnn/snapdragon-8g3")
    assert r.bulk["crossing"] is not None
    base = totals(r.bulk, r.per_op, "int8-static", {})
    budget = Budget.of(latency_ms=base["latency_ms"] * 0.97, size_bytes=base["size_bytes"] * 1.5)
    sol = solve(prepare(r.bulk, r.per_op), "int8-static", {}, budget)
    for p in sol.proposals:
        assert p.totals == totals(r.bulk, r.per_op, "int8-static", p.overrides)
        assert not budget.unmet(p.totals)
    # Exhaustive over every pair of changes among each op's distinct units and formats agrees on feasibility.
    per_op = list(r.per_op)  # the per-op dicts once: the sweep builds one on each access
    found = False
    for pick in itertools.product(*[[None] + e["combos"][::27] for e in per_op]):
        ov = {op: c for op, c in zip(r.bulk["ops"], pick) if c is not None}
        if not budget.unmet(totals(r.bulk, per_op, "int8-static", ov)):
            found = True
            break
    assert not found or sol.feasible


def test_impossible_budget_returns_the_closest_state_and_what_it_misses() -> None:
    bulk, per_op = random_table(3, n=4, combos_per_op=4)
    sol = solve(prepare(bulk, per_op), "fp32", {}, Budget.of(latency_ms=1e-6))
    assert not sol.feasible and not sol.proposals
    assert sol.unmet == ("latency_ms",)
    assert sol.closest is not None and sol.closest.totals["latency_ms"] < sol.start["latency_ms"]
    doc = solution_json(sol)
    assert doc["feasible"] is False and doc["closest"]["totals"] == sol.closest.totals


def test_keep_float_op_the_preset_quantizes_is_moved_to_float() -> None:
    bulk, per_op = random_table(5, n=4, combos_per_op=5)
    op = bulk["ops"][1]
    start = totals(bulk, per_op, "int8-static", {})
    sol = solve(prepare(bulk, per_op), "int8-static", {}, Budget.of(latency_ms=start["latency_ms"] * 10), [op])
    assert sol.feasible
    for p in sol.proposals:
        assert is_float_combo(p.overrides[op])


def test_budget_validation() -> None:
    assert Budget.of(fps=50).latency_ms == 20.0
    assert Budget.of(latency_ms=10, fps=50).latency_ms == 10.0  # the tighter of the two
    with pytest.raises(OptionError, match="at least one limit"):
        Budget.of()
    with pytest.raises(OptionError, match="positive"):
        Budget.of(size_bytes=-1)
    bulk, per_op = random_table(1, n=3, combos_per_op=4)
    with pytest.raises(OptionError, match="not a task"):
        solve(prepare(bulk, per_op), "fp32", {}, Budget.of(latency_ms=1), ["nope"])


@pytest.mark.parametrize("target,model_wide", [("ort-cpu/host", "fp32"), ("ort-qnn/snapdragon-8g3", "int8-static")])
def test_stored_solver_table_solves_as_the_records_do(target: str, model_wide: str) -> None:
    """The table the worker stores (simulator/solver/table_bytes.py) gives the same solution, totals to the digit,
    as one built from the per-op records, and its bulk table and records read as the stored JSON's."""
    r = sweep(conv_chain(), target)
    records = [r.per_op[i] for i in range(len(r.bulk["ops"]))]
    bulk, per_op = json.loads(json.dumps(r.bulk)), json.loads(json.dumps(records))  # as the server parses them
    blob = table_bytes(r.bulk, r.per_op)  # read through the sweep's classes and cells, no per-op dicts
    assert blob == table_bytes(r.bulk, records)
    stored = table_from_bytes(blob)
    for i, op in enumerate(bulk["ops"]):
        for p in range(len(bulk["presets"])):
            assert stored.bulk["combos"][i][p] == bulk["combos"][i][p] and stored.bulk["units"][i][p] == bulk["units"][i][p]
            assert all(stored.bulk["metrics"][k][i][p] == bulk["metrics"][k][i][p] for k in bulk["metrics"])
        rec = stored.per_op[op]
        assert all(list(rec[k]) == per_op[i][k] for k in ("combos", "latency_ms", "weight_bytes", "activation_bytes",
                                                     "dram_bytes", "unit"))
    base = totals(bulk, per_op, model_wide, {})
    for frac in (0.9, 0.6):
        budget = Budget.of(latency_ms=base["latency_ms"] * frac)
        want = solution_json(solve(prepare(bulk, per_op), model_wide, {}, budget))
        got = solution_json(solve(stored, model_wide, {}, budget))
        assert got == want
        for p in got["proposals"]:
            assert p["totals"] == totals(bulk, per_op, model_wide, p["overrides"])


def test_every_op_priced_at_once_as_one_at_a_time() -> None:
    """batch.Batch.best_all (a large model's repair rounds) gives every op the score and choice that
    candidates.Candidates.best gives it alone, to the bit: on a chain for the host (three classes of ops, from a
    state with overrides and a kept-float op) and on a conv chain for an execution-provider target (crossings)."""
    from simulator.solver.batch import EdgeRows
    from simulator.solver.search import Search

    cases = [(sweep(chain(60), "ort-cpu/host"), "fp32", 0.7), (sweep(conv_chain(), "ort-qnn/snapdragon-8g3"),
                                                                "int8-static", 0.97)]
    for r, mw, frac in cases:
        ops = r.bulk["ops"]
        table = prepare(r.bulk, r.per_op)
        overrides = {ops[1]: table.rows[1].combos[-1], ops[3]: table.rows[3].combos[0]}
        base = totals(r.bulk, r.per_op, mw, overrides)
        s = Search(table, mw, overrides, Budget.of(latency_ms=base["latency_ms"] * frac), [ops[2]])
        st = s.evaluate(s.initial())
        for objective in ("fewest_changes", "most_float"):
            w, e0 = s.weights(st), s.state_excess(st)
            rows = [EdgeRows(c.members, len(c.in_pairs), len(c.out_pairs)) for c in table.classes]
            scalar = s._scalar_ops()
            s._fill(st, rows, range(len(ops)), scalar)
            score, choice = s.best_all(st, objective, w, e0, rows, scalar)
            want = [s.best(st, i, objective, w, e0) for i in range(len(ops))]
            assert score.tolist() == [x for x, _ in want] and choice.tolist() == [k for _, k in want]
            assert (score > 0).sum() >= 3  # changes worth pricing: the comparison means something


def test_repair_rounds_find_the_lazy_greedys_proposals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above SMALL_MODEL_OPS the repair runs in rounds; on a 2,400-task chain its proposals are as good as the lazy
    greedy's (as many changes and non-float ops per objective, the same latency; ties between equal-scored ops may
    fall apart, a few bytes of size), with latency budgets needing a hundred and several hundred changes."""
    from simulator.solver.search import Search

    r = sweep(chain(2400), "ort-cpu/host")
    table = prepare(r.bulk, r.per_op)
    base = totals(r.bulk, r.per_op, "fp32", {})
    for frac, at_least in ((0.9, 100), (0.6, 500)):
        budget = Budget.of(latency_ms=base["latency_ms"] * frac)
        got = solve(table, "fp32", {}, budget)
        with monkeypatch.context() as m:
            m.setattr(Search, "repair_rounds", Search.repair)
            want = solve(table, "fp32", {}, budget)
        assert got.feasible and len(got.proposals) == len(want.proposals)
        for p, q in zip(got.proposals, want.proposals):
            assert (p.objectives, len(p.changes), p.non_float_ops) == (q.objectives, len(q.changes), q.non_float_ops)
            assert p.totals["latency_ms"] == pytest.approx(q.totals["latency_ms"], rel=1e-9)
            assert p.totals["size_bytes"] == pytest.approx(q.totals["size_bytes"], rel=1e-4)
            assert p.totals == totals(r.bulk, r.per_op, "fp32", p.overrides) and not budget.unmet(p.totals)
        assert len(got.proposals[0].changes) > at_least


def test_repair_rounds_agree_with_exhaustive_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The large-model search (repair rounds from the current state and the best preset's column, no exchange
    step) forced onto the random tables: feasibility agrees with exhaustive search, totals are the rule's."""
    from simulator.solver import proposals

    monkeypatch.setattr(proposals, "SMALL_MODEL_OPS", 0)
    agree = 0
    for seed in range(40):
        bulk, per_op, keep, mw, states, budget = _exhaustive(seed)
        sol = solve(prepare(bulk, per_op), mw, {}, budget, keep)
        agree += sol.feasible == any(not budget.unmet(t) for _, t in states)
        for p in sol.proposals:
            assert p.totals == totals(bulk, per_op, mw, p.overrides) and not budget.unmet(p.totals)
            assert all(is_float_combo(p.overrides[o]) for o in keep if o in p.overrides)
    assert agree >= 39, f"feasibility agrees on {agree} of 40"


@pytest.mark.parametrize("n_ops", [120, 300])
def test_small_model_search_stays_within_its_solve_budget(monkeypatch: pytest.MonkeyPatch, n_ops: int) -> None:
    """Small models' starts and exchange trials share SOLVE_WORK: a 300-task chain is solved ~10 times (every
    preset's column and a trial per change and round took ~66 solves and 300 trials, 35-40 s CPU), and the
    proposals meet the budget under the totals rule."""
    from simulator.solver import proposals
    from simulator.solver.search import Search

    calls = [0]
    repair = Search.repair

    def counted(self: Search, st: object, objective: str) -> None:
        calls[0] += 1
        repair(self, st, objective)  # type: ignore[arg-type]

    monkeypatch.setattr(Search, "repair", counted)
    # A device profile, not the host: the host's table follows this machine's calibration, and on one of them the
    # bounded search's fewest-changes proposal came one change above the unbounded one (57 against 56).
    r = sweep(chain(n_ops), "ort-nnapi/pixel-8")
    base = totals(r.bulk, r.per_op, "fp32", {})
    budget = Budget.of(latency_ms=base["latency_ms"] * 0.9)
    sol = solve(prepare(r.bulk, r.per_op), "fp32", {}, budget)
    assert 0 < calls[0] <= max(4, proposals.SOLVE_WORK // n_ops)
    assert sol.feasible and sol.proposals
    for p in sol.proposals:
        assert p.totals == totals(r.bulk, r.per_op, "fp32", p.overrides) and not budget.unmet(p.totals)
    if n_ops == 120:  # as few changes as the unbounded search (4 s CPU here; on 300 tasks 35-40 s)
        fewest = next(p for p in sol.proposals if "fewest_changes" in p.objectives)
        monkeypatch.setattr(proposals, "SOLVE_WORK", 10**9)
        full = solve(prepare(r.bulk, r.per_op), "fp32", {}, budget)
        assert len(fewest.changes) == min(len(p.changes) for p in full.proposals)
