"""What a solve answers: the searches it runs (from the current state and from presets' columns), the best state
found per objective, each shaped as a proposal whose totals are simulator.totals.totals of that state."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.totals import totals

from .budget import Budget
from .search import Search
from .state import State
from .table import METRIC_KEYS, SolverTable, gc_paused

OBJECTIVES: tuple[str, ...] = ("fewest_changes", "most_float", "least_size")
SMALL_MODEL_OPS = 2000  # up to this many ops, several presets' columns are starts and the exchange step runs
# Small models' search budget, in solves (a repair and prune from a start, or one exchange trial) of this many
# ops in all: each costs about its ops, so a 300-task model gets ~10 solves and a 6-op table ~500 (its full search).
SOLVE_WORK = 3000
EXCHANGE_ROUNDS = 3


@dataclass(frozen=True, slots=True)
class Change:
    op: str
    before: str  # the combo the op runs as in the starting state
    after: str
    before_overridden: bool  # False: `before` came from the model-wide preset
    unit_before: str
    unit_after: str
    metrics_before: dict[str, float]  # the op's own row (edges excluded): latency_ms, weight_bytes, ...
    metrics_after: dict[str, float]


@dataclass(frozen=True, slots=True)
class Proposal:
    objectives: tuple[str, ...]  # the objectives this state is the best found for
    overrides: dict[str, str]  # the whole state's overrides (the starting ones, changed as below)
    changes: tuple[Change, ...]
    totals: dict[str, float]  # simulator.totals.totals of (model_wide, overrides)
    non_float_ops: int  # ops whose combo quantizes or prunes


@dataclass(frozen=True, slots=True)
class Solution:
    feasible: bool
    model_wide: str
    budget: dict[str, float]
    start: dict[str, float]  # totals of the starting state
    proposals: tuple[Proposal, ...]  # feasible states, one per objective (merged where they coincide)
    closest: Proposal | None  # infeasible: the state found with the least excess
    unmet: tuple[str, ...]  # infeasible: limits the closest state still exceeds


def _proposal(s: Search, cur: list[int], objectives: tuple[str, ...]) -> Proposal:
    t = s.t
    overrides = dict(s.start_overrides)
    changes = []
    index = {o: i for i, o in enumerate(s.ops)}
    chosen = {o: t.rows[index[o]].combos.index(c) for o, c in overrides.items()}  # op -> combo index
    for i, k in enumerate(cur):
        init = len(t.rows[i].combos)
        if k == init:
            continue
        op = s.ops[i]
        after = t.rows[i].combos[k]
        overrides[op] = after
        chosen[op] = k
        f0, f1 = s.init_fmt[i], s.attrs(i, k)
        changes.append(Change(op, f0[4], after, f0[3], f0[2], f1[2], dict(zip(METRIC_KEYS, s.own(i, init))),
                              dict(zip(METRIC_KEYS, s.own(i, k)))))
    tot = totals(t.bulk, _override_rows(s, chosen, index), t.bulk["presets"][s.p]["name"], overrides)
    nf = s.counts(cur)[1]
    return Proposal(objectives, overrides, tuple(changes), tot, nf)


def _override_rows(s: Search, chosen: Mapping[str, int], index: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """The per-op records the totals rule reads for these overrides, each cut down to the chosen combo: the rule
    reads an overridden op's row at its combo only, so its figures are the same; building 10,000 records of every
    combo (the stored table's arrays sliced per op) cost more than the rule itself."""
    t = s.t
    units: dict[int, list[int] | None] = {}  # per class: each combo's unit index, as its ops' records carry it
    rows = {}
    for op, k in chosen.items():
        i = index[op]
        c = t.rows[i].cls
        ci = s.cidx[id(c)]
        if ci not in units:
            o = s.ops[c.members[0]]
            rec = t.per_op[o] if isinstance(t.per_op, Mapping) else t.per_op[c.members[0]]
            units[ci] = list(rec["unit"]) if "unit" in rec else None
        m = t.rows[i].m[k].tolist()
        row: dict[str, Any] = {"combos": [c.combos[k]], "latency_ms": [m[0]], "weight_bytes": [m[1]],
                               "activation_bytes": [m[2]], "dram_bytes": [m[3]]}
        u = units[ci]
        if u is not None:
            row["unit"] = [u[k]]
        rows[op] = row
    return rows


def _preset_order(s: Search) -> list[int]:
    """Presets to start from, the most promising first: by the excess of their columns' own sums."""
    bulk = s.t.bulk
    m = {k: np.asarray(bulk["metrics"][k], dtype=np.float64) for k in METRIC_KEYS}
    if m["latency_ms"].size == 0:
        return []
    lat, size = m["latency_ms"].sum(0) + s.fixed[0], m["weight_bytes"].sum(0)
    act, dram = m["activation_bytes"].max(0), m["dram_bytes"].sum(0)
    scored = []
    for q in range(len(bulk["presets"])):
        if q == s.p:
            continue
        scored.append((s.excess(s.figures(float(lat[q]), float(size[q]), float(dram[q]), float(act[q]))), q))
    return [q for _, q in sorted(scored)]


def _search(s: Search, small: bool, max_starts: int | None) -> tuple[dict[str, list[State]], list[int] | None]:
    """Repair and prune from each start for the two objectives that differ in what they change: the states
    that meet the budget per objective, and the closest state when none does. On small models the exchange step
    then improves the states found, the best first, within the solve budget below."""
    order = _preset_order(s)
    solves = max(4, SOLVE_WORK // max(len(s.ops), 1)) if small else 0
    if max_starts is None:
        # Half the solves to starts (two objectives each), the rest to exchange trials.
        max_starts = max(1, solves // 4 - 1) if small else 1
    starts = [s.initial()] + [s.preset_start(q) for q in order[:max_starts]]
    found: dict[str, list[State]] = {o: [] for o in OBJECTIVES}
    closest: tuple[float, list[int]] | None = None
    for n_start, cur in enumerate(starts):
        for objective in ("fewest_changes", "most_float"):
            if objective == "most_float" and n_start and not small:
                continue  # a preset's column quantizes every op: far from keeping layers float
            st = s.evaluate(cur, small)
            if small:
                s.repair(st, objective)
                solves -= 1
            else:  # thousands of changes: every op priced at once, in rounds
                s.repair_rounds(st, objective)
            e = s.state_excess(st)
            if e > 0:
                if closest is None or e < closest[0]:
                    closest = (e, list(st.cur))
                continue
            s.prune(st, objective, 3 if small else 1)
            found[objective].append(st)
    if small:
        # Each exchange trial re-solves from one dropped change: the trials go to the best states first.
        queue = sorted(((s.key(st, o), n, o, st) for o in ("fewest_changes", "most_float")
                        for n, st in enumerate(found[o])), key=lambda x: (x[0], x[1], x[2]))
        trials = [max(solves, 0)]
        done: set[tuple[str, tuple[int, ...]]] = set()  # several starts often end in the same state
        for _, _, objective, st in queue:
            if trials[0] <= 0:
                break
            if (objective, tuple(st.cur)) in done:
                continue
            done.add((objective, tuple(st.cur)))
            s.exchange(st, objective, EXCHANGE_ROUNDS, trials)
    return found, closest[1] if closest else None


def _ranked(s: Search, found: dict[str, list[State]]) -> dict[str, list[tuple[tuple[float, ...], list[int]]]]:
    """Candidate states per objective, best first by the tracked figures; least size shrinks the best of
    the other two."""
    ranked: dict[str, list[tuple[tuple[float, ...], list[int]]]] = {}
    for objective in ("fewest_changes", "most_float"):
        ranked[objective] = sorted((s.key(st, objective), st.cur) for st in found[objective])
    shrunk, done = [], set()
    for objective in ("fewest_changes", "most_float"):
        for _, cur in ranked[objective][:1]:
            if tuple(cur) in done:
                continue  # both objectives found the same state: shrink it once
            done.add(tuple(cur))
            st = s.evaluate(cur, len(s.ops) <= SMALL_MODEL_OPS)
            s.shrink(st)
            shrunk.append(st)
    ranked["least_size"] = sorted((s.key(st, "least_size"), st.cur) for st in shrunk)
    return ranked


def _proposals(s: Search, budget: Budget, ranked: Mapping[str, list[tuple[tuple[float, ...], list[int]]]]
               ) -> list[Proposal]:
    """The best state per objective that the exact totals put within the budget; one proposal per distinct
    state, naming every objective it is best for."""
    proposals: list[Proposal] = []
    seen: dict[tuple[tuple[str, str], ...], int] = {}
    shaped: dict[tuple[int, ...], Proposal] = {}  # a state two objectives rank best is shaped (and totalled) once
    for objective in OBJECTIVES:
        best = None
        for _, cur in ranked[objective]:
            p = shaped.get(tuple(cur))
            if p is None:
                p = shaped[tuple(cur)] = _proposal(s, cur, (objective,))
            else:
                p = Proposal((objective,), p.overrides, p.changes, p.totals, p.non_float_ops)
            if not budget.unmet(p.totals):
                best = p
                break
        if best is None:
            continue
        sig = tuple(sorted(best.overrides.items()))
        if sig in seen:
            q = proposals[seen[sig]]
            proposals[seen[sig]] = Proposal(q.objectives + (objective,), q.overrides, q.changes, q.totals,
                                            q.non_float_ops)
        else:
            seen[sig] = len(proposals)
            proposals.append(best)
    return proposals


def solve(table: SolverTable, model_wide: str, overrides: Mapping[str, str], budget: Budget,
          keep_float: Iterable[str] = (), max_starts: int | None = None) -> Solution:
    """Proposals meeting `budget` from the state (model_wide, overrides), or the closest state found.
    `max_starts`: preset columns to start from besides the current state, the most promising first (default: on
    models up to SMALL_MODEL_OPS ops as many as half of SOLVE_WORK allows, else one). Small models also get the
    exchange step (drop one change, re-solve) within the rest of SOLVE_WORK."""
    with gc_paused():
        return _solve(table, model_wide, overrides, budget, keep_float, max_starts)


def _solve(table: SolverTable, model_wide: str, overrides: Mapping[str, str], budget: Budget,
           keep_float: Iterable[str], max_starts: int | None) -> Solution:
    s = Search(table, model_wide, overrides, budget, keep_float)
    start = totals(table.bulk, table.per_op, model_wide, overrides)
    small = len(s.ops) <= SMALL_MODEL_OPS
    found, closest = _search(s, small, max_starts)
    proposals = _proposals(s, budget, _ranked(s, found))
    if proposals:
        return Solution(True, model_wide, budget.limits(), start, tuple(proposals), None, ())
    cl = _proposal(s, closest if closest is not None else s.initial(), ())
    return Solution(False, model_wide, budget.limits(), start, (), cl, tuple(budget.unmet(cl.totals)))


def solution_json(sol: Solution) -> dict[str, Any]:
    def prop(p: Proposal) -> dict[str, Any]:
        return {"objectives": list(p.objectives), "overrides": p.overrides, "totals": p.totals,
                "non_float_ops": p.non_float_ops,
                "changes": [{"op": c.op, "before": c.before, "after": c.after,
                             "before_overridden": c.before_overridden, "unit_before": c.unit_before,
                             "unit_after": c.unit_after, "before_metrics": c.metrics_before,
                             "after_metrics": c.metrics_after} for c in p.changes]}
    return {"feasible": sol.feasible, "model_wide": sol.model_wide, "budget": sol.budget, "start": sol.start,
            "proposals": [prop(p) for p in sol.proposals], "closest": prop(sol.closest) if sol.closest else None,
            "unmet": list(sol.unmet)}
