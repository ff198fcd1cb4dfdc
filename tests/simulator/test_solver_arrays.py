"""The solver's array pricing (simulator.totals.EdgeRule, simulator/solver/edges.py) gives the scalar pricing's
floats to the bit: each edge's terms are edge_terms', a state's tracked sums are the scalar loop's, and a move
priced for many ops at once is `Pricing.move`'s. The search's decisions and the proposals' totals rest on it."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.solver import Budget, prepare, solve
from simulator.solver.search import Search
from simulator.solver.state import State
from simulator.totals import FORMATS, EdgeRule, edge_terms, runs_float, totals
from testkit.solver_tables import every_state, random_table


def _random_state(s: Search, rng: np.random.Generator) -> list[int]:
    """Each op on its starting choice or a random combo."""
    return [int(rng.integers(0, len(r.combos))) if rng.random() < 0.6 else len(r.combos) for r in s.t.rows]


def _with_self_edge(bulk: dict, op: int) -> dict:
    e = bulk["edges"]
    return dict(bulk, edges={"src": e["src"] + [op], "dst": e["dst"] + [op], "elements": e["elements"] + [500.0]})


def _cases() -> list[tuple[dict, list, str]]:
    out = []
    for seed in range(12):
        # seeds 1, 2 mod 4: a float-graph term (one unit; two units), paid while an op runs float on its unit
        bulk, per_op = random_table(seed, n=7, combos_per_op=5, units=seed % 2 == 0,
                                    float_graph_ms=0.4 if seed % 4 in (1, 2) else 0.0)
        if seed % 3 == 2:
            bulk = _with_self_edge(bulk, 3)
        out.append((bulk, per_op, ["fp32", "fp16", "int8-static"][seed % 3]))
    return out


@pytest.mark.parametrize("case", range(12))
def test_edge_rule_terms_are_edge_terms(case: int) -> None:
    bulk, per_op, mw = _cases()[case]
    s = Search(prepare(bulk, per_op), mw, {}, Budget.of(latency_ms=1.0), [])
    rule = EdgeRule(bulk, s.p)
    units = {u: j for j, u in enumerate(bulk["unit_names"])}
    f = {x: j for j, x in enumerate(FORMATS)}
    rng = np.random.default_rng(case)
    e = bulk["edges"]
    crossings = conversions = 0
    for _ in range(5):
        cur = _random_state(s, rng)
        a = [s.attrs(i, k) for i, k in enumerate(cur)]
        want = [edge_terms(bulk, s.p, sv, d, el, a[sv][1], a[d][0], a[sv][2], a[d][2], a[sv][3], a[d][3])
                for sv, d, el in zip(e["src"], e["dst"], e["elements"])]
        src, dst = np.array(e["src"]), np.array(e["dst"])
        code = lambda x, i: np.array([f[a[o][x]] if x < 2 else units[a[o][x]] if x == 2 else a[o][x] for o in i])
        got = rule.terms(np.arange(len(src)), code(1, src), code(0, dst), code(2, src), code(2, dst),
                         code(3, src).astype(bool), code(3, dst).astype(bool))
        assert [tuple(float(x[j]) for x in got) for j in range(len(src))] == want
        conversions += sum(w[0] != 0 for w in want)
        crossings += sum(w[2] != 0 for w in want)
    assert conversions > 0 and (crossings > 0 or not bulk["crossing"])  # priced: the comparison means something


@pytest.mark.parametrize("case", range(12))
def test_state_sums_and_moves_as_the_scalar_loop(case: int) -> None:
    bulk, per_op, mw = _cases()[case]
    ops = bulk["ops"]
    overrides = {ops[1]: per_op[ops[1]]["combos"][0]}
    s = Search(prepare(bulk, per_op), mw, overrides, Budget.of(latency_ms=1.0), [])
    rng = np.random.default_rng(case + 100)
    e = bulk["edges"]
    for _ in range(5):
        cur = _random_state(s, rng)
        st = s.evaluate(cur)
        # The scalar order: the per-inference term, the float-graph terms, own rows op by op, then each edge's terms.
        lat, size, dram = bulk["constants"]["per_inference_ms"], 0.0, 0.0
        for u, ms in bulk["constants"].get("float_graph_ms", {}).items():
            a = [(*s.attrs(i, k), s.own(i, k)[0]) for i, k in enumerate(cur)]
            lat += ms if any(x[2] == u and runs_float(f"{x[0]}/{x[1]}") and x[4] > 0 for x in a) else 0.0
        for i, k in enumerate(cur):
            o = s.own(i, k)
            lat += o[0]
            size += o[1]
            dram += o[3]
        for sv, d, el in zip(e["src"], e["dst"], e["elements"]):
            a, b = s.attrs(sv, cur[sv]), s.attrs(d, cur[d])
            cm, cb, xm, xb = edge_terms(bulk, s.p, sv, d, el, a[1], b[0], a[2], b[2], a[3], b[3])
            lat += cm + xm
            dram += cb + xb
        assert (st.lat, st.size, st.dram) == (lat, size, dram)
        assert st.act.tolist() == [s.own(i, k)[2] for i, k in enumerate(cur)]
        fresh = State(list(cur), st.lat, st.size, st.dram, st.act, fgn=list(st.fgn))  # nothing memoised: the scalar pricing
        for i in range(len(ops)):
            assert st.edges[i] == s._price_edges(fresh, i, cur[i], None, None)
        # Moves priced at once (ops without a self-edge), as `move` prices each alone.
        pairs = [(i, k) for i in range(len(ops)) if not s.ea.self_edge[i] for k in range(len(s.t.rows[i].combos) + 1)
                 if k != cur[i]]
        pre = s.moves_of(st, np.array([i for i, _ in pairs]), np.array([k for _, k in pairs]))
        for x, (i, k) in enumerate(pairs):
            assert s.priced_move(st, pre, x, i, k) == s.move(fresh, i, k)
            moved = s.evaluate([k if j == i else c for j, c in enumerate(cur)])  # the float-graph switch, exact
            assert s.move(fresh, i, k)[0] == pytest.approx(moved.lat, rel=1e-12, abs=1e-12)
            assert (pre[6][x], pre[7][x]) == s._price_edges(fresh, i, k, {}, None) == s.edges_direct(fresh, i, k)


def test_large_model_path_with_a_self_edge_meets_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Repair rounds, pruning and shrink with an op that has a self-edge (priced one by one): the proposals'
    totals are the rule's and feasibility agrees with exhaustive search."""
    from simulator.solver import proposals

    monkeypatch.setattr(proposals, "SMALL_MODEL_OPS", 0)
    agree = 0
    for seed in range(12):
        bulk, per_op = random_table(seed, n=5, combos_per_op=4, units=seed % 2 == 0)
        bulk = _with_self_edge(bulk, seed % 5)
        mw = ["fp32", "fp16", "int8-static"][seed % 3]
        states = list(every_state(bulk, per_op, mw, frozenset()))
        lat = sorted(t["latency_ms"] for _, t in states)
        budget = Budget.of(latency_ms=lat[len(lat) // 5] * (1 + 1e-7))
        sol = solve(prepare(bulk, per_op), mw, {}, budget)
        agree += sol.feasible == any(not budget.unmet(t) for _, t in states)
        for p in sol.proposals:
            assert p.totals == totals(bulk, per_op, mw, p.overrides) and not budget.unmet(p.totals)
    assert agree >= 11


def _scalar_totals(bulk: dict, per_op: dict, model_wide: str, overrides: dict[str, str]) -> dict[str, float]:
    """The rule of docs/option-table.md as a plain loop (op order, then per edge conversion then crossing)."""
    p = [x["name"] for x in bulk["presets"]].index(model_wide)
    m, ops = bulk["metrics"], bulk["ops"]
    rows, names, units = [], [], []
    for i, op in enumerate(ops):
        if op in overrides:
            e = per_op[op]
            j = e["combos"].index(overrides[op])
            rows.append([e[k][j] for k in ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes")])
            names.append(overrides[op])
            units.append(bulk["unit_names"][e["unit"][j]])
        else:
            rows.append([m[k][i][p] for k in ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes")])
            names.append(bulk["combos"][i][p])
            units.append(bulk["units"][i][p])
    lat = bulk["constants"]["per_inference_ms"]  # the per-inference term, first
    for u, ms in bulk["constants"].get("float_graph_ms", {}).items():  # then each unit's float-graph term
        lat += ms if any(x == u and runs_float(c) and r[0] > 0 for c, x, r in zip(names, units, rows)) else 0.0
    for r in rows:
        lat += r[0]
    moved = 0.0
    e = bulk["edges"]
    for s, d, el in zip(e["src"], e["dst"], e["elements"]):
        cm, cb, xm, xb = edge_terms(bulk, p, s, d, el, names[s].split("/")[1], names[d].split("/")[0], units[s],
                                    units[d], ops[s] in overrides, ops[d] in overrides)
        lat += cm
        moved += cb
        lat += xm
        moved += xb
    size = 0.0
    for r in rows:
        size += r[1]
    size += bulk["constants"]["size_overhead_bytes"]
    dram = 0.0
    for r in rows:
        dram += r[3]
    dram += moved
    power = dram * bulk["constants"]["dram_pj_per_byte"] * 1e-9 / lat * 1e3 if lat > 0 else 0.0
    return {"latency_ms": lat, "peak_memory_bytes": size + max(r[2] for r in rows), "memory_power_mw": power,
            "size_bytes": size, "fps": 1000.0 / lat if lat > 0 else 0.0}


@pytest.mark.parametrize("case", range(12))
def test_totals_rule_sums_as_the_scalar_loop(case: int) -> None:
    """simulator.totals.totals adds the edges' terms from arrays: the same floats as the plain loop, to the digit."""
    bulk, per_op, mw = _cases()[case]
    rng = np.random.default_rng(case + 200)
    for _ in range(8):
        ov = {o: per_op[o]["combos"][int(rng.integers(len(per_op[o]["combos"])))] for o in bulk["ops"]
              if rng.random() < 0.5}
        assert totals(bulk, per_op, mw, ov) == _scalar_totals(bulk, per_op, mw, ov)
