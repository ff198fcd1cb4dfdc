"""Budget solver: the fewest per-op changes that bring a state (preset + overrides) within a budget.

The option table's cells are not independent: a change adds or removes format conversions and partition
crossings on the op's edges. Candidate changes are priced with the totals rule's own per-edge terms
(`simulator.totals.edge_terms`) and every proposal's totals come from `simulator.totals.totals` itself, so
what the solver reports is what the browser and `edgescope predict` compute for that state.

Search (docs/solver.md): a lazy greedy that takes, op by op, the change that removes most budget excess per
unit of the objective's cost (an op touched, an op made non-float), with exact local re-pricing on each pop;
then a pruning pass that reverts every change the budget does not need. It runs from the current state and
from the presets' columns (an int8 island pays no conversions inside it, which single changes from the
current state cannot see), and the best feasible outcome per objective is proposed. Pure: no I/O.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.formats import FLOAT_FORMATS
from simulator.options import OptionError
from simulator.totals import edge_terms, totals

OBJECTIVES: tuple[str, ...] = ("fewest_changes", "most_float", "least_size")
_LIMITS: tuple[str, ...] = ("latency_ms", "peak_memory_bytes", "size_bytes", "memory_power_mw")
_TOL = 1e-9  # relative slack on tracked sums (the exact totals decide)
_EPS_COST = 1e-3  # a change that touches no new op still costs a little, so the search prefers fewer moves


@dataclass(frozen=True, slots=True)
class Budget:
    """Upper limits; None leaves a metric free. fps is given as latency (1000 / fps)."""
    latency_ms: float | None = None
    peak_memory_bytes: float | None = None
    size_bytes: float | None = None
    memory_power_mw: float | None = None

    @classmethod
    def of(cls, latency_ms: float | None = None, fps: float | None = None, peak_memory_bytes: float | None = None,
           size_bytes: float | None = None, memory_power_mw: float | None = None) -> Budget:
        if fps is not None:
            if fps <= 0:
                raise OptionError("fps must be positive")
            lat = 1000.0 / fps
            latency_ms = lat if latency_ms is None else min(latency_ms, lat)
        b = cls(latency_ms, peak_memory_bytes, size_bytes, memory_power_mw)
        if not b.limits():
            raise OptionError("give at least one limit: latency_ms (or fps), peak_memory_bytes, size_bytes "
                              "or memory_power_mw")
        for k, v in b.limits().items():
            if not (v > 0 and math.isfinite(v)):
                raise OptionError(f"{k} must be a positive number, not {v!r}")
        return b

    def limits(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in _LIMITS if getattr(self, k) is not None}

    def unmet(self, t: Mapping[str, float]) -> list[str]:
        return [k for k, v in self.limits().items() if t[k] > v]


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


def is_float_combo(combo: str) -> bool:
    """Activations and kernel in a float format and no pruning: what 'keep this op float' allows."""
    inp, out, kernel, sp = combo.split("/")
    return inp in FLOAT_FORMATS and out in FLOAT_FORMATS and (kernel == "-" or kernel in FLOAT_FORMATS) and sp == "0"


_METRIC_KEYS = ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes")


@dataclass(slots=True)
class _Class:
    """Ops sharing one combo list and units (one sweep group): their arrays stacked, signatures found once."""
    combos: list[str]
    fin: list[str]
    fout: list[str]
    unit: list[str]
    flt: np.ndarray  # [K] bool: float combo
    groups: list[tuple[bool, np.ndarray]]  # (float, indices) per (in, out, unit, float) signature
    members: list[int]
    m: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 4)))  # [members, K, 4]
    # Edges see a choice's (input format, unit) on in-edges and (output format, unit) on out-edges only:
    # each signature's index into the distinct pairs of either kind.
    in_pairs: list[tuple[str, str]] = field(default_factory=list)
    out_pairs: list[tuple[str, str]] = field(default_factory=list)
    g_in: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    g_out: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass(slots=True)
class _OpRows:
    cls: _Class
    pos: int  # row in cls.m

    @property
    def combos(self) -> list[str]:
        return self.cls.combos

    @property
    def m(self) -> np.ndarray:
        return self.cls.m[self.pos]


@dataclass(slots=True)
class SolverTable:
    """The option table in the solver's arrays; independent of state and budget (servers cache it)."""
    bulk: Mapping[str, Any]
    per_op: Any
    rows: list[_OpRows]
    classes: list[_Class]
    ins: list[list[int]]  # edge indices into each op
    outs: list[list[int]]
    src: list[int]
    dst: list[int]
    el: list[float]


def prepare(bulk: Mapping[str, Any], per_op: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]
            ) -> SolverTable:
    ops: list[str] = bulk["ops"]
    names = bulk["unit_names"]
    classes: dict[tuple[tuple[str, ...], tuple[int, ...]], _Class] = {}
    rows: list[_OpRows] = []
    stacks: dict[int, list[np.ndarray]] = {}
    for i, op in enumerate(ops):
        e = per_op[op] if isinstance(per_op, Mapping) else per_op[i]
        combos = e["combos"]
        units = tuple(e["unit"]) if "unit" in e else (0,) * len(combos)
        key = (tuple(combos), units)
        c = classes.get(key)
        if c is None:
            parts = [x.split("/") for x in combos]
            fin, fout = [x[0] for x in parts], [x[1] for x in parts]
            unit = [names[u] for u in units]
            flt = np.array([is_float_combo(x) for x in combos], dtype=bool)
            sig: dict[tuple[str, str, str, bool], list[int]] = {}
            for k in range(len(combos)):
                sig.setdefault((fin[k], fout[k], unit[k], bool(flt[k])), []).append(k)
            c = classes[key] = _Class(list(combos), fin, fout, unit, flt,
                                      [(f[3], np.array(ix)) for f, ix in sig.items()], [])
            sigs = list(sig)
            c.in_pairs = sorted({(f[0], f[2]) for f in sigs})
            c.out_pairs = sorted({(f[1], f[2]) for f in sigs})
            c.g_in = np.array([c.in_pairs.index((f[0], f[2])) for f in sigs], dtype=np.int64)
            c.g_out = np.array([c.out_pairs.index((f[1], f[2])) for f in sigs], dtype=np.int64)
            stacks[id(c)] = []
        rows.append(_OpRows(c, len(c.members)))
        c.members.append(i)
        stacks[id(c)].append(np.array([e[k] for k in _METRIC_KEYS], dtype=np.float64).T)
    for c in classes.values():
        c.m = np.stack(stacks[id(c)])
    e = bulk["edges"]
    ins: list[list[int]] = [[] for _ in ops]
    outs: list[list[int]] = [[] for _ in ops]
    for j, (s, d) in enumerate(zip(e["src"], e["dst"])):
        outs[s].append(j)
        ins[d].append(j)
    return SolverTable(bulk, per_op, rows, list(classes.values()), ins, outs, list(e["src"]), list(e["dst"]),
                       list(e["elements"]))


@dataclass(slots=True)
class _State:
    cur: list[int]  # candidate index per op; K_i (one past the combos) = the starting choice
    lat: float = 0.0
    size: float = 0.0
    dram: float = 0.0
    act: np.ndarray = field(default_factory=lambda: np.zeros(0))


class _Search:
    def __init__(self, t: SolverTable, model_wide: str, overrides: Mapping[str, str], budget: Budget,
                 keep_float: Iterable[str]):
        self.t, self.b = t, budget
        bulk = t.bulk
        presets = [p["name"] for p in bulk["presets"]]
        if model_wide not in presets:
            raise OptionError(f"model-wide option {model_wide!r} is not in this table; "
                              f"choose one of {', '.join(presets)}")
        self.p = presets.index(model_wide)
        ops: list[str] = bulk["ops"]
        self.ops = ops
        index = {o: i for i, o in enumerate(ops)}
        for o in list(overrides) + list(keep_float):
            if o not in index:
                raise OptionError(f"op {o!r} is not a task of this model")
        self.keep = {index[o] for o in keep_float}
        self.limits = budget.limits()
        c = bulk["constants"]
        self.pj = float(c["dram_pj_per_byte"])
        self.overhead = float(c["size_overhead_bytes"])
        # Starting choice of each op: its override's row, else the preset's bulk row.
        self.init_m: list[tuple[float, float, float, float]] = []
        self.init_fmt: list[tuple[str, str, str, bool, str]] = []  # in, out, unit, overridden, combo
        m = bulk["metrics"]
        for i, op in enumerate(ops):
            r = t.rows[i]
            if op in overrides:
                if overrides[op] not in r.combos:
                    raise OptionError(f"combo {overrides[op]!r} is not offered for op {op!r}")
                k = r.combos.index(overrides[op])
                self.init_m.append(tuple(float(x) for x in r.m[k]))  # type: ignore[arg-type]
                self.init_fmt.append((r.cls.fin[k], r.cls.fout[k], r.cls.unit[k], True, r.combos[k]))
            else:
                combo = bulk["combos"][i][self.p]
                f = combo.split("/")
                self.init_m.append(tuple(float(m[x][i][self.p]) for x in _METRIC_KEYS))  # type: ignore[arg-type]
                self.init_fmt.append((f[0], f[1], bulk["units"][i][self.p], False, combo))
        self.start_overrides = dict(overrides)
        self.cidx = {id(c): j for j, c in enumerate(t.classes)}
        self._reps_key: bytes = b""
        self._reps_val: list[np.ndarray] = []
        self.own_bound = np.full(len(ops), np.inf)
        self.init_arr = np.array(self.init_m, dtype=np.float64).reshape(len(ops), 4)
        self.n_combos = np.array([len(r.combos) for r in t.rows])
        self.init_ok = np.array([not (i in self.keep and not is_float_combo(self.init_fmt[i][4]))
                                 for i in range(len(ops))], dtype=bool)
        # The least each op's edges can cost: crossings an override takes off a bulk row are credits.
        self.edge_lb = np.zeros(len(ops))
        crossing = bulk.get("crossing")
        if crossing:
            from simulator.totals import _crossing_ms

            for j, (s, d) in enumerate(zip(t.src, t.dst)):
                if bulk["units"][s][self.p] != bulk["units"][d][self.p]:
                    credit = _crossing_ms(crossing, t.el[j] * 4 * 2)  # fp32, the widest activation
                    self.edge_lb[s] -= credit
                    self.edge_lb[d] -= credit

    # --- one op's choice ------------------------------------------------------------------------------------
    def _attrs(self, i: int, k: int) -> tuple[str, str, str, bool]:
        c = self.t.rows[i].cls
        if k == len(c.combos):
            f = self.init_fmt[i]
            return f[0], f[1], f[2], f[3]
        return c.fin[k], c.fout[k], c.unit[k], True

    def _own(self, i: int, k: int) -> tuple[float, float, float, float]:
        r = self.t.rows[i]
        c = r.cls
        if k == len(c.combos):
            return self.init_m[i]
        row = c.m[r.pos, k]
        return float(row[0]), float(row[1]), float(row[2]), float(row[3])

    def combo_of(self, i: int, k: int) -> str:
        r = self.t.rows[i]
        return self.init_fmt[i][4] if k == len(r.combos) else r.combos[k]

    def non_float(self, i: int, k: int) -> bool:
        c = self.t.rows[i].cls
        return not (is_float_combo(self.init_fmt[i][4]) if k == len(c.combos) else bool(c.flt[k]))

    def _context(self, st: _State, i: int) -> tuple[list[tuple[int, int, str, str, bool]],
                                                      list[tuple[int, int, str, str, bool]]]:
        """Op i's neighbours as they are: (edge, op, their format on the edge, unit, overridden), in and out."""
        t = self.t
        ins, outs = [], []
        for j in t.ins[i]:
            s = t.src[j]
            if s != i:  # a self-edge is priced with the op's own choice on both ends, below
                _, sout, su, so = self._attrs(s, st.cur[s])
                ins.append((j, s, sout, su, so))
        for j in t.outs[i]:
            d = t.dst[j]
            if d == i:
                outs.append((j, d, "", "", False))
            else:
                din, _, du, do = self._attrs(d, st.cur[d])
                outs.append((j, d, din, du, do))
        return ins, outs

    def _edges_of(self, st: _State, i: int, k: int, memo: dict[Any, tuple[float, float]] | None = None,
                  ctx: Any = None) -> tuple[float, float]:
        """(ms, bytes) of op i's edges with op i on choice k and its neighbours as they are. In-edges depend on
        the choice's input format only, out-edges on its output format: priced (and memoised) apart."""
        fin, fout, unit, over = self._attrs(i, k)
        if memo is None:
            memo = {}
        kin, kout = (0, fin, unit, over), (1, fout, unit, over)
        if kin in memo and kout in memo:
            a, b = memo[kin]
            c, d = memo[kout]
            return a + c, b + d
        t, bulk, p = self.t, self.t.bulk, self.p
        ins, outs = ctx if ctx is not None else self._context(st, i)
        if kin not in memo:
            ms = by = 0.0
            for j, s, sout, su, so in ins:
                a, b, c, d = edge_terms(bulk, p, s, i, t.el[j], sout, fin, su, unit, so, over)
                ms += a + c
                by += b + d
            memo[kin] = (ms, by)
        if kout not in memo or any(d_ == i for _, d_, _, _, _ in outs):
            ms = by = 0.0
            for j, d_, din, du, do in outs:
                if d_ == i:  # a self-edge reads the choice's own input format
                    a, b, c, d = edge_terms(bulk, p, i, i, t.el[j], fout, fin, unit, unit, over, over)
                else:
                    a, b, c, d = edge_terms(bulk, p, i, d_, t.el[j], fout, din, unit, du, over, do)
                ms += a + c
                by += b + d
            memo[kout] = (ms, by)
        a, b = memo[kin]
        c, d = memo[kout]
        return a + c, b + d

    def _side(self, i: int, inbound: bool, fmt: str, unit: str, edges: list[tuple[int, int, str, str, bool]]
              ) -> tuple[float, float]:
        """(ms, bytes) of op i's in-edges (or out-edges) with op i overridden to `fmt` on `unit`."""
        t, bulk, p = self.t, self.t.bulk, self.p
        ms = by = 0.0
        for j, o, ofmt, ou, oo in edges:
            if inbound:
                a, b, c, d = edge_terms(bulk, p, o, i, t.el[j], ofmt, fmt, ou, unit, oo, True)
            else:
                a, b, c, d = edge_terms(bulk, p, i, o, t.el[j], fmt, ofmt, unit, ou, True, oo)
            ms += a + c
            by += b + d
        return ms, by

    # --- whole-state figures (tracked) ----------------------------------------------------------------------
    def evaluate(self, cur: list[int]) -> _State:
        st = _State(list(cur))
        n = len(self.ops)
        act = np.zeros(n)
        lat = size = dram = 0.0
        for i in range(n):
            a, b, c, d = self._own(i, cur[i])
            lat += a
            size += b
            act[i] = c
            dram += d
        t = self.t
        for j in range(len(t.src)):
            s, d_ = t.src[j], t.dst[j]
            _, so, su, sov = self._attrs(s, cur[s])
            di, _, du, dov = self._attrs(d_, cur[d_])
            a, b, c, d = edge_terms(t.bulk, self.p, s, d_, t.el[j], so, di, su, du, sov, dov)
            lat += a + c
            dram += b + d
        st.lat, st.size, st.dram, st.act = lat, size, dram, act
        self._top2(st)
        return st

    def _top2(self, st: _State) -> None:
        a = st.act
        if len(a) < 2:
            self.amax_i, self.a1, self.a2 = (0, float(a[0]), 0.0) if len(a) else (-1, 0.0, 0.0)
            return
        top = np.argpartition(a, -2)[-2:]
        i, j = (int(top[1]), int(top[0])) if a[top[1]] >= a[top[0]] else (int(top[0]), int(top[1]))
        self.amax_i, self.a1, self.a2 = i, float(a[i]), float(a[j])

    def _set_act(self, st: _State, i: int, v: float) -> None:
        """Keep the two largest working sets as one op's changes (a full scan only when the largest shrinks)."""
        st.act[i] = v
        if i == self.amax_i:
            if v >= self.a2:
                self.a1 = v
            else:
                self._top2(st)
        elif v > self.a1:
            self.amax_i, self.a2, self.a1 = i, self.a1, v
        elif v > self.a2:
            self.a2 = v
        elif v < self.a2 and len(st.act) > 2:
            self._top2(st)  # i may have been the second largest

    def _figures(self, lat: float, size: float, dram: float, amax: float) -> dict[str, float]:
        size_t = size + self.overhead
        return {"latency_ms": lat, "size_bytes": size_t, "peak_memory_bytes": size_t + amax,
                "memory_power_mw": dram * self.pj * 1e-9 / lat * 1e3 if lat > 0 else 0.0}

    def excess(self, f: Mapping[str, float]) -> float:
        return sum(max(0.0, f[k] / v - 1.0 - _TOL) for k, v in self.limits.items())

    def state_excess(self, st: _State) -> float:
        return self.excess(self._figures(st.lat, st.size, st.dram, self.a1))

    def _move(self, st: _State, i: int, k: int, memo: dict[Any, tuple[float, float]] | None = None,
              ctx: Any = None, here: tuple[tuple[float, float, float, float], tuple[float, float]] | None = None
              ) -> tuple[float, float, float, float]:
        """Tracked (lat, size, dram, max activation) after moving op i to choice k. `here`: op i's own row and
        edges as it is, when the caller prices several choices."""
        if ctx is None:
            ctx = self._context(st, i)
        o0, e0 = here if here is not None else (self._own(i, st.cur[i]), self._edges_of(st, i, st.cur[i], ctx=ctx))
        o1 = self._own(i, k)
        e1 = self._edges_of(st, i, k, memo, ctx)
        amax = max(self.a2 if i == self.amax_i else self.a1, o1[2])
        return (st.lat + (o1[0] - o0[0]) + (e1[0] - e0[0]), st.size + (o1[1] - o0[1]),
                st.dram + (o1[3] - o0[3]) + (e1[1] - e0[1]), amax)

    def apply(self, st: _State, i: int, k: int) -> None:
        st.lat, st.size, st.dram, _ = self._move(st, i, k)
        st.cur[i] = k
        self._set_act(st, i, self._own(i, k)[2])

    def neighbours(self, i: int) -> set[int]:
        t = self.t
        return {t.src[j] for j in t.ins[i]} | {t.dst[j] for j in t.outs[i]}

    # --- candidates ---------------------------------------------------------------------------------------
    def _weights(self, st: _State) -> np.ndarray:
        """Gradient of the excess in the op's own (latency, weight, activation, dram): picks each signature's
        representative (edges are equal within a signature)."""
        f = self._figures(st.lat, st.size, st.dram, self.a1)
        L = self.limits
        w = np.zeros(4)
        if "latency_ms" in L and f["latency_ms"] > L["latency_ms"]:
            w[0] += 1 / L["latency_ms"]
        if "size_bytes" in L and f["size_bytes"] > L["size_bytes"]:
            w[1] += 1 / L["size_bytes"]
        if "peak_memory_bytes" in L and f["peak_memory_bytes"] > L["peak_memory_bytes"]:
            w[1] += 1 / L["peak_memory_bytes"]
            w[2] += 1 / L["peak_memory_bytes"]
        if "memory_power_mw" in L and f["memory_power_mw"] > L["memory_power_mw"] and st.lat > 0:
            w[3] += self.pj * 1e-6 / st.lat / L["memory_power_mw"]
            w[0] -= f["memory_power_mw"] / st.lat / L["memory_power_mw"]
        if not w.any():  # feasible: any move is judged by the caller's own key
            w[:] = (1 / max(st.lat, 1e-12), 1 / max(st.size, 1.0), 0.0, 0.0)
        return w

    def _own_matrix(self, cur: list[int]) -> np.ndarray:
        """[n, 4] own rows of a state's choices."""
        ca = np.array(cur)
        out = self.init_arr.copy()
        for c in self.t.classes:
            idx = np.array(c.members)
            k = ca[idx]
            on = k < len(c.combos)
            out[idx[on]] = c.m[np.flatnonzero(on), k[on]]
        return out

    def _reps(self, w: np.ndarray) -> list[np.ndarray]:
        """Per class, [members, signatures]: each signature's best combo under weights w (cached for one w)."""
        key = w.tobytes()
        if key != self._reps_key:
            self._reps_key, self._reps_val = key, []
            for c in self.t.classes:
                sc = c.m @ w
                r = np.empty((len(c.members), len(c.groups)), dtype=np.int64)
                for g, (_, ix) in enumerate(c.groups):
                    r[:, g] = ix[np.argmin(sc[:, ix], axis=1)]
                self._reps_val.append(r)
        return self._reps_val

    def _choices(self, i: int, w: np.ndarray, float_only: bool) -> list[int]:
        return self._choices_g(i, w, float_only)[0]

    def _choices_g(self, i: int, w: np.ndarray, float_only: bool) -> tuple[list[int], list[int]]:
        """(choices, their signature index; -1 for the starting choice)."""
        r = self.t.rows[i]
        c = r.cls
        reps = self._reps(w)[self.cidx[id(c)]][r.pos]
        only = float_only or i in self.keep
        ks, gs = [], []
        for g, ((flt, _), k) in enumerate(zip(c.groups, reps)):
            if flt or not only:
                ks.append(int(k))
                gs.append(g)
        if not (i in self.keep and self.non_float(i, len(c.combos))):
            ks.append(len(c.combos))
            gs.append(-1)
        return ks, gs

    def _bounds(self, st: _State, objective: str, w: np.ndarray) -> np.ndarray:
        """An upper bound on each op's best score (the lazy greedy pops ops by it): the excess is convex in the
        sums, so its linearisation over-states any move's gain; edges can at most remove what they cost now
        less the crossing credits they may earn. Power limits are not convex: no bound (every op is priced)."""
        n = len(self.ops)
        if w[0] < 0 or w[3] != 0:
            self.own_bound = np.full(n, np.inf)
            return np.full(n, np.inf)
        own_cur = self._own_matrix(st.cur) @ w
        own_init = self.init_arr @ w
        best_all = np.full(n, np.inf)
        best_flt = np.full(n, np.inf)
        for c in self.t.classes:
            sc = c.m @ w
            idx = np.array(c.members)
            best_flt[idx] = sc[:, c.flt].min(axis=1) if c.flt.any() else np.inf
            best_all[idx] = sc.min(axis=1)
        keep = np.zeros(n, dtype=bool)
        keep[list(self.keep)] = True
        best_all = np.where(keep, best_flt, best_all)
        init_ok = self.init_ok
        best_all = np.where(init_ok, np.minimum(best_all, own_init), best_all)
        edge = np.array([self._edges_of(st, i, st.cur[i])[0] for i in range(n)]) - self.edge_lb
        self.own_bound = np.maximum(own_cur - best_all, 0.0)
        if objective == "most_float":
            self.own_bound = np.maximum(self.own_bound, (own_cur - best_flt) / _EPS_COST)
        gain_all = own_cur - best_all + max(w[0], 0.0) * edge
        changed = np.array(st.cur) != self.n_combos
        if objective == "most_float":
            gain_flt = own_cur - np.where(init_ok, np.minimum(best_flt, own_init), best_flt) + max(w[0], 0.0) * edge
            return np.maximum(gain_flt / _EPS_COST, gain_all / np.where(changed, _EPS_COST, _EPS_COST))
        return gain_all / np.where(changed, _EPS_COST, 1.0)

    def _cost(self, st: _State, i: int, k: int, objective: str) -> float:
        init = len(self.t.rows[i].combos)
        touched = (k != init) - (st.cur[i] != init)
        if objective == "most_float":
            c = (self.non_float(i, k) - self.non_float(i, st.cur[i])) + _EPS_COST * touched
        else:
            c = float(touched)
        return max(c, _EPS_COST)

    def _best(self, st: _State, i: int, objective: str, w: np.ndarray, e0: float) -> tuple[float, int]:
        """(score, choice) of op i's best change; every signature's representative priced at once."""
        cur = st.cur[i]
        ks0, gs0 = self._choices_g(i, w, False)
        pairs = [(k, g) for k, g in zip(ks0, gs0) if k != cur]
        if not pairs:
            return 0.0, -1
        ks = [k for k, _ in pairs]
        memo: dict[Any, tuple[float, float]] = {}
        ctx = self._context(st, i)
        o0 = self._own(i, cur)
        e_now = self._edges_of(st, i, cur, memo, ctx)
        r = self.t.rows[i]
        c = r.cls
        init = len(r.combos)
        ka = np.array(ks)
        own = c.m[r.pos][np.minimum(ka, init - 1)]
        if init in ks:
            own[ks.index(init)] = self.init_m[i]
        if any(d_ == i for _, d_, _, _, _ in ctx[1]):
            edges = np.array([self._edges_of(st, i, k, memo, ctx) for k in ks])
        else:
            # Every overridden choice of one (format, unit) pays the same on its in-edges (out-edges):
            # price the distinct pairs once, then each signature is a sum of two.
            e_in = np.array([self._side(i, True, f, u, ctx[0]) for f, u in c.in_pairs]).reshape(-1, 2)
            e_out = np.array([self._side(i, False, f, u, ctx[1]) for f, u in c.out_pairs]).reshape(-1, 2)
            ga = np.array([g for _, g in pairs])
            gi = np.where(ga >= 0, ga, 0)
            edges = e_in[c.g_in[gi]] + e_out[c.g_out[gi]]
            if init in ks:
                edges[ks.index(init)] = self._edges_of(st, i, init, memo, ctx)
        lat = st.lat + (own[:, 0] - o0[0]) + (edges[:, 0] - e_now[0])
        size = st.size + (own[:, 1] - o0[1])
        dram = st.dram + (own[:, 3] - o0[3]) + (edges[:, 1] - e_now[1])
        amax = np.maximum(self.a2 if i == self.amax_i else self.a1, own[:, 2])
        exc = self._excess_vec(lat, size, dram, amax)
        gain = e0 - exc
        touched = (ka != init).astype(np.float64) - float(cur != init)
        if objective == "most_float":
            nf = np.array([self.non_float(i, k) for k in ks], dtype=np.float64)
            cost = nf - float(self.non_float(i, cur)) + _EPS_COST * touched
        else:
            cost = touched
        score = np.where(gain > 1e-12, gain / np.maximum(cost, _EPS_COST), 0.0)
        j = int(np.argmax(score))
        return (float(score[j]), ks[j]) if score[j] > 0 else (0.0, -1)

    def _excess_vec(self, lat: np.ndarray, size: np.ndarray, dram: np.ndarray, amax: np.ndarray) -> np.ndarray:
        size_t = size + self.overhead
        f = {"latency_ms": lat, "size_bytes": size_t, "peak_memory_bytes": size_t + amax,
             "memory_power_mw": np.where(lat > 0, dram * self.pj * 1e-9 / np.where(lat > 0, lat, 1.0) * 1e3, 0.0)}
        out = np.zeros(len(lat))
        for k, v in self.limits.items():
            out += np.maximum(0.0, f[k] / v - 1.0 - _TOL)
        return out

    # --- phases ---------------------------------------------------------------------------------------------
    def repair(self, st: _State, objective: str) -> None:
        """Greedy: the change with the most excess removed per unit of cost, until the budget is met. Lazy:
        ops wait in the heap under an upper bound and are priced exactly when they reach the top."""
        n = len(self.ops)
        ver = [0] * n
        heap: list[tuple[float, int, int, int, bool]] = []  # (-score, op, choice, version, exact)
        pushed_w: list[bytes] = [b""]

        def push_all() -> None:
            w = self._weights(st)
            pushed_w[0] = (w > 0).tobytes()
            heap.clear()
            for i, b in enumerate(self._bounds(st, objective, w)):
                if b > 1e-12:
                    ver[i] += 1
                    heap.append((-float(b), i, -1, ver[i], False))
            heapq.heapify(heap)

        push_all()
        steps, applied = 0, True
        while self.state_excess(st) > 0 and steps < 20 * n + 100:
            if not heap:
                if not applied:
                    return
                push_all()
                applied = False
                continue
            _, i, k, v, exact = heapq.heappop(heap)
            if v != ver[i]:
                continue
            w, e0 = self._weights(st), self.state_excess(st)
            if exact:
                # Priced when it or a neighbour last changed: only the budget's state moved since, so the
                # same choice is re-priced alone (its neighbours' edges are as they were).
                gain = e0 - self.excess(self._figures(*self._move(st, i, k)))
                s = gain / self._cost(st, i, k, objective) if gain > 1e-12 else 0.0
            else:
                s, k = self._best(st, i, objective, w, e0)
            if k < 0 or s <= 0:
                continue
            if heap and -heap[0][0] > s * (1 + 1e-9):
                ver[i] += 1
                heapq.heappush(heap, (-s, i, k, ver[i], True))
                continue
            self.apply(st, i, k)
            steps += 1
            applied = True
            w, e0 = self._weights(st), self.state_excess(st)
            if ((w > 0) & ~np.frombuffer(pushed_w[0], dtype=bool)).any():
                push_all()  # a limit newly exceeded: bounds taken without its weight are not bounds
                continue
            s, k = self._best(st, i, objective, w, e0)
            ver[i] += 1
            if k >= 0:
                heapq.heappush(heap, (-s, i, k, ver[i], True))
            for j in self.neighbours(i) - {i}:
                # Re-queued under a bound, priced when it reaches the top: most neighbours never do.
                ver[j] += 1
                if not np.isfinite(self.own_bound[j]):
                    heapq.heappush(heap, (-np.inf, j, -1, ver[j], False))
                    continue
                edge = self._edges_of(st, j, st.cur[j])[0] - self.edge_lb[j]
                changed = st.cur[j] != len(self.t.rows[j].combos)
                b = (self.own_bound[j] + max(w[0], 0.0) * edge) / (_EPS_COST if changed or
                                                                   objective == "most_float" else 1.0)
                if b > 1e-12:
                    heapq.heappush(heap, (-float(b), j, -1, ver[j], False))

    def prune(self, st: _State, objective: str, rounds: int = 3) -> None:
        """Revert every change the budget does not need, the least harmful first (most_float: non-float
        changes first)."""
        n = len(self.ops)
        for _ in range(rounds):
            reverted = False
            order = []
            for i in range(n):
                init = len(self.t.rows[i].combos)
                if st.cur[i] == init or (i in self.keep and self.non_float(i, init)):
                    continue
                f = self._figures(*self._move(st, i, init))
                harm = sum(f[k] / v for k, v in self.limits.items())
                first = -(self.non_float(i, st.cur[i]) - self.non_float(i, init)) if objective == "most_float" else 0
                order.append((first, harm, i))
            for _, _, i in sorted(order):
                init = len(self.t.rows[i].combos)
                if self.excess(self._figures(*self._move(st, i, init))) <= 0:
                    self.apply(st, i, init)
                    reverted = True
            if not reverted:
                return

    def key(self, st: _State, objective: str) -> tuple[float, ...]:
        ch = sum(k != len(self.t.rows[i].combos) for i, k in enumerate(st.cur))
        nf = sum(self.non_float(i, k) for i, k in enumerate(st.cur))
        size = st.size
        return {"fewest_changes": (ch, nf, size), "most_float": (nf, ch, size), "least_size": (size, ch, nf)}[objective]

    def exchange(self, st: _State, objective: str, rounds: int) -> None:
        """Local improvement: drop one change, repair and prune again; keep the result if it needs fewer
        changes (fewest_changes) or fewer non-float ops (most_float)."""
        def key(cur: list[int]) -> tuple[int, int]:
            ch = sum(k != len(self.t.rows[i].combos) for i, k in enumerate(cur))
            nf = sum(self.non_float(i, k) for i, k in enumerate(cur))
            return (nf, ch) if objective == "most_float" else (ch, nf)

        for _ in range(rounds):
            improved = False
            for i in [i for i, k in enumerate(st.cur) if k != len(self.t.rows[i].combos)]:
                if i in self.keep and self.non_float(i, len(self.t.rows[i].combos)):
                    continue
                trial = self.evaluate(st.cur)
                self.apply(trial, i, len(self.t.rows[i].combos))
                self.repair(trial, objective)
                if self.state_excess(trial) > 0:
                    continue
                self.prune(trial, objective)
                if key(trial.cur) < key(st.cur):
                    st.cur, st.lat, st.size, st.dram, st.act = trial.cur, trial.lat, trial.size, trial.dram, trial.act
                    self._top2(st)
                    improved = True
                    break
            if not improved:
                return

    def shrink(self, st: _State) -> None:
        """least_size: take the largest size reductions the budget's slack allows, one pass."""
        w = np.array([0.0, 1.0, 0.0, 0.0])
        now = self._own_matrix(st.cur)[:, 1]
        cands = []
        for c in self.t.classes:
            if not c.m[:, :, 1].any():
                continue  # no weights: nothing to shrink
            for pos, i in enumerate(c.members):
                ks = np.array(self._choices(i, w, False))
                sz = np.where(ks < len(c.combos), c.m[pos][np.minimum(ks, len(c.combos) - 1), 1], self.init_arr[i, 1])
                order = np.argsort(sz, kind="stable")
                ks_small = [int(ks[o]) for o in order if sz[o] < now[i]][:2]
                if ks_small:
                    cands.append((float(sz[order[0]] - now[i]), i, ks_small))
        for _, i, ks in sorted(cands):
            for k in ks:  # the smallest signature whose move keeps the budget
                if self.excess(self._figures(*self._move(st, i, k))) <= 0:
                    self.apply(st, i, k)
                    break

    def preset_start(self, q: int) -> list[int]:
        """Every op on preset q's combo (as an override), except keep-float ops it would quantize."""
        cur, keep = [], self.initial()
        for i in range(len(self.ops)):
            r = self.t.rows[i]
            combo = self.t.bulk["combos"][i][q]
            k = r.combos.index(combo) if combo in r.combos else len(r.combos)
            if i in self.keep and self.non_float(i, k):
                k = keep[i]
            cur.append(k)
        return cur

    def initial(self) -> list[int]:
        """The starting state, with keep-float ops the preset quantizes moved to their fastest float combo."""
        cur = []
        for i in range(len(self.ops)):
            r = self.t.rows[i]
            k = len(r.combos)
            if i in self.keep and self.non_float(i, k):
                fl = np.flatnonzero(r.cls.flt)
                if len(fl) == 0:
                    raise OptionError(f"op {self.ops[i]!r} has no float combo to keep")
                k = int(fl[int(np.argmin(r.m[fl, 0]))])
            cur.append(k)
        return cur


def _proposal(s: _Search, cur: list[int], objectives: tuple[str, ...]) -> Proposal:
    t = s.t
    overrides = dict(s.start_overrides)
    changes = []
    for i, k in enumerate(cur):
        init = len(t.rows[i].combos)
        if k == init:
            continue
        op = s.ops[i]
        after = t.rows[i].combos[k]
        overrides[op] = after
        f0, f1 = s.init_fmt[i], s._attrs(i, k)
        changes.append(Change(op, f0[4], after, f0[3], f0[2], f1[2], dict(zip(_METRIC_KEYS, s._own(i, init))),
                              dict(zip(_METRIC_KEYS, s._own(i, k)))))
    # The rule reads only the overridden ops' rows: hand it those, keyed by op (a list is searched by index).
    index = {o: i for i, o in enumerate(s.ops)}
    rows = {o: (t.per_op[o] if isinstance(t.per_op, Mapping) else t.per_op[index[o]]) for o in overrides}
    tot = totals(t.bulk, rows, t.bulk["presets"][s.p]["name"], overrides)
    nf = sum(s.non_float(i, k) for i, k in enumerate(cur))
    return Proposal(objectives, overrides, tuple(changes), tot, nf)


def _preset_order(s: _Search) -> list[int]:
    """Presets to start from, the most promising first: by the excess of their columns' own sums."""
    bulk = s.t.bulk
    m = {k: np.asarray(bulk["metrics"][k], dtype=np.float64) for k in _METRIC_KEYS}
    if m["latency_ms"].size == 0:
        return []
    lat, size = m["latency_ms"].sum(0), m["weight_bytes"].sum(0)
    act, dram = m["activation_bytes"].max(0), m["dram_bytes"].sum(0)
    scored = []
    for q in range(len(bulk["presets"])):
        if q == s.p:
            continue
        scored.append((s.excess(s._figures(float(lat[q]), float(size[q]), float(dram[q]), float(act[q]))), q))
    return [q for _, q in sorted(scored)]


def solve(table: SolverTable, model_wide: str, overrides: Mapping[str, str], budget: Budget,
          keep_float: Iterable[str] = (), max_starts: int | None = None) -> Solution:
    """Proposals meeting `budget` from the state (model_wide, overrides), or the closest state found.
    `max_starts`: preset columns to start from besides the current state (default: all on models up to
    2,000 ops, else the most promising one). Models up to 2,000 ops also get the exchange step (drop one change, re-solve)."""
    s = _Search(table, model_wide, overrides, budget, keep_float)
    ops = s.ops
    start = totals(table.bulk, table.per_op, model_wide, overrides)
    small = len(ops) <= 2000
    if max_starts is None:
        max_starts = len(table.bulk["presets"]) if small else 1
    exchange_rounds = 3 if small else 0  # each round re-solves once per change: affordable on small models
    starts = [s.initial()] + [s.preset_start(q) for q in _preset_order(s)[:max_starts]]
    found: dict[str, list[_State]] = {o: [] for o in OBJECTIVES}
    closest: tuple[float, list[int]] | None = None
    for n_start, cur in enumerate(starts):
        for objective in ("fewest_changes", "most_float"):
            if objective == "most_float" and n_start and not small:
                continue  # a preset's column quantizes every op: far from keeping layers float
            st = s.evaluate(cur)
            s.repair(st, objective)
            e = s.state_excess(st)
            if e > 0:
                if closest is None or e < closest[0]:
                    closest = (e, list(st.cur))
                continue
            s.prune(st, objective, 3 if small else 1)
            if exchange_rounds:
                s.exchange(st, objective, exchange_rounds)
            found[objective].append(st)
    # Rank by tracked figures; the exact totals decide, so a state the rule puts over the budget is skipped.
    ranked: dict[str, list[tuple[tuple[float, ...], list[int]]]] = {}
    for objective in ("fewest_changes", "most_float"):
        ranked[objective] = sorted((s.key(st, objective), st.cur) for st in found[objective])
    shrunk, done = [], set()
    for objective in ("fewest_changes", "most_float"):
        for _, cur in ranked[objective][:1]:
            if tuple(cur) in done:
                continue  # both objectives found the same state: shrink it once
            done.add(tuple(cur))
            st = s.evaluate(cur)
            s.shrink(st)
            shrunk.append(st)
    ranked["least_size"] = sorted((s.key(st, "least_size"), st.cur) for st in shrunk)
    proposals: list[Proposal] = []
    seen: dict[tuple[tuple[str, str], ...], int] = {}
    for objective in OBJECTIVES:
        best = None
        for _, cur in ranked[objective]:
            p = _proposal(s, cur, (objective,))
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
    if proposals:
        return Solution(True, model_wide, budget.limits(), start, tuple(proposals), None, ())
    cl = _proposal(s, closest[1], ()) if closest else _proposal(s, s.initial(), ())
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
