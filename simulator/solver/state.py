"""A state of the search (each op's choice) and its tracked figures: the starting state, one op's choice and what
its edges cost with its neighbours as they are (the totals rule's own `edge_terms`), and the whole-state sums
kept up to date as ops change."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.vocabulary.options import OptionError
from simulator.table_schema import float_graph_ms, per_inference_ms
from simulator.totals import edge_terms, runs_float

from .budget import LIMITS, TOL, Budget, excess
from .edges import EdgeArrays
from .table import METRIC_KEYS, SolverTable, is_float_combo

_K = 1 << 20  # more combos than any op has: i * _K + k keys one op's choice


@dataclass(slots=True)
class State:
    cur: list[int]  # candidate index per op; K_i (one past the combos) = the starting choice
    lat: float = 0.0
    size: float = 0.0
    dram: float = 0.0
    act: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # (ms, bytes) of each op's edges as the state is, filled as they are priced and dropped when the op or a
    # neighbour changes: the bounds, pruning and moves price an op's current edges again and again.
    edges: dict[int, tuple[float, float]] = field(default_factory=dict)
    # Per op, its neighbours as they are (`context`) and what its in- and out-edges cost per (format, unit,
    # overridden) of its own choice: they depend on the neighbours only, so they outlive the op's own changes
    # and are dropped when a neighbour changes. A search prices the same op many times between changes.
    ctx: dict[int, Any] = field(default_factory=dict)
    memo: dict[int, dict[Any, tuple[float, float]]] = field(default_factory=dict)
    # Per float-graph term of the table (constants.float_graph_ms, in its order): ops that run float on its unit.
    fgn: list[int] = field(default_factory=list)


def _column(rows: Any, p: int) -> list[float]:
    """Column p of a bulk table's [op][preset] metric as Python floats (an array-backed table without a loop)."""
    if hasattr(rows, "__array__"):
        return np.asarray(rows, dtype=np.float64)[:, p].tolist()
    return [float(row[p]) for row in rows]


def _seq_sum(*parts: np.ndarray) -> float:
    """0.0 + x0 + x1 + ... one term after the other (not numpy's pairwise sum)."""
    v = np.concatenate(parts)
    return float(np.cumsum(v)[-1]) if len(v) else 0.0


def peak_constants(c: Mapping[str, Any]) -> tuple[float, float, float]:
    """The peak's constants the search tracks (the totals rule's): the runtime's own copies of the weights, the arena
    over the largest working set, the runtime's own memory. Its terms of the weights the runtime decodes, packs or
    copies at load are not tracked (a proposal's figures are the totals rule's)."""
    return (float(c.get("weight_copies", 0.0)), float(c.get("arena_factor", 1.0)), float(c.get("runtime_bytes", 0.0)))


class Pricing:
    """The problem of one solve (table, starting state, budget, ops kept float) and the pricing of states."""

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
        self.limit_items = list(self.limits.items())
        c = bulk["constants"]
        self.pj = float(c["dram_pj_per_byte"])
        self.overhead = float(c["size_overhead_bytes"])
        self.copies, self.arena, self.runtime = peak_constants(c)
        self.fixed = np.array([per_inference_ms(bulk)])  # the totals rule's per-inference term (no op's choice)
        self._float_graph(bulk)
        # Starting choice of each op: its override's row, else the preset's bulk row.
        self.init_m: list[tuple[float, float, float, float]] = []
        self.init_fmt: list[tuple[str, str, str, bool, str]] = []  # in, out, unit, overridden, combo
        m = bulk["metrics"]
        p = self.p
        cols = [_column(m[x], p) for x in METRIC_KEYS]
        bulk_m = list(zip(*cols)) if ops else []
        combos, units = bulk["combos"], bulk["units"]
        split: dict[str, list[str]] = {}
        for i, op in enumerate(ops):
            r = t.rows[i]
            if op in overrides:
                if overrides[op] not in r.combos:
                    raise OptionError(f"combo {overrides[op]!r} is not offered for op {op!r}")
                k = r.combos.index(overrides[op])
                self.init_m.append(tuple(float(x) for x in r.m[k]))  # type: ignore[arg-type]
                self.init_fmt.append((r.cls.fin[k], r.cls.fout[k], r.cls.unit[k], True, r.combos[k]))
            else:
                combo = combos[i][p]
                f = split.get(combo)
                if f is None:
                    f = split[combo] = combo.split("/")
                self.init_m.append(bulk_m[i])
                self.init_fmt.append((f[0], f[1], units[i][p], False, combo))
        self.start_overrides = dict(overrides)
        self.init_attrs = [(f[0], f[1], f[2], f[3]) for f in self.init_fmt]
        flt = {c: is_float_combo(c) for c in {f[4] for f in self.init_fmt}}
        self.init_non_float = [not flt[f[4]] for f in self.init_fmt]
        self.init_nf_arr = np.array(self.init_non_float, dtype=bool)
        self.ea = EdgeArrays(t, self.p, self.init_attrs)
        self.op_pos = np.array([r.pos for r in t.rows], dtype=np.int64)
        self.cidx = {id(c): j for j, c in enumerate(t.classes)}
        self._reps_key: bytes = b""
        self._reps_val: list[np.ndarray] = []
        self._choices_memo: dict[tuple[int, bool], tuple[list[int], list[int]]] = {}  # for the weights of _reps
        self._candidates_memo: dict[int, Any] = {}  # likewise
        self._class_memo: dict[int, Any] = {}  # likewise, per class
        self.own_bound = np.full(len(ops), np.inf)
        self._own: dict[int, tuple[float, float, float, float]] = {}
        self._filled: dict[bytes, Any] = {}  # batch.Batch: edge prices per starting state  # i * _K + k -> own row as Python floats
        self.init_arr = np.array(self.init_m, dtype=np.float64).reshape(len(ops), 4)
        self.n_combos = np.array([len(r.combos) for r in t.rows])
        self.init_ok = np.ones(len(ops), dtype=bool)
        for i in self.keep:
            self.init_ok[i] = not self.init_non_float[i]
        # The least each op's edges can cost: crossings an override takes off a bulk row are credits.
        self.edge_lb = np.zeros(len(ops))
        crossing = bulk.get("crossing")
        if crossing:
            from simulator.crossings import crossing_ms

            for j, (s, d) in enumerate(zip(t.src, t.dst)):
                if bulk["units"][s][self.p] != bulk["units"][d][self.p]:
                    credit = crossing_ms(crossing, t.el[j] * 4 * 2)  # fp32, the widest activation
                    self.edge_lb[s] -= credit
                    self.edge_lb[d] -= credit

    def _float_graph(self, bulk: Mapping[str, Any]) -> None:
        """The table's float-graph terms: a unit's ms, paid while an op runs float on it (simulator.totals
        float_graph_terms); `fg_unit` indexes `fg_ms` by unit name."""
        fg = float_graph_ms(bulk)
        self.fg_unit = {u: j for j, u in enumerate(fg)}
        self.fg_ms = list(fg.values())
        self._fg_memo: dict[tuple[int, int], int] = {}

    # --- one op's choice ------------------------------------------------------------------------------------
    def attrs(self, i: int, k: int) -> tuple[str, str, str, bool]:
        c = self.t.rows[i].cls
        return self.init_attrs[i] if k == len(c.combos) else c.attrs[k]

    def own(self, i: int, k: int) -> tuple[float, float, float, float]:
        hit = self._own.get(i * _K + k)
        if hit is not None:
            return hit
        r = self.t.rows[i]
        c = r.cls
        if k == len(c.combos):
            return self.init_m[i]
        row = c.m[r.pos, k]
        hit = self._own[i * _K + k] = (float(row[0]), float(row[1]), float(row[2]), float(row[3]))
        return hit

    def combo_of(self, i: int, k: int) -> str:
        r = self.t.rows[i]
        return self.init_fmt[i][4] if k == len(r.combos) else r.combos[k]

    def non_float(self, i: int, k: int) -> bool:
        c = self.t.rows[i].cls
        return self.init_non_float[i] if k == len(c.combos) else c.non_float[k]

    def fg_at(self, i: int, k: int) -> int:
        """The float-graph term op i's choice k pays for (its index in `fg_ms`), -1 for none."""
        hit = self._fg_memo.get((i, k))
        if hit is None:
            c = self.t.rows[i].cls
            a = self.init_attrs[i] if k == len(c.combos) else c.attrs[k]
            hit = self.fg_unit.get(a[2], -1) if runs_float(f"{a[0]}/{a[1]}") and self.own(i, k)[0] > 0 else -1
            self._fg_memo[(i, k)] = hit
        return hit

    def switch(self, st: State, i: int, k: int) -> float:
        """The change of the float-graph terms if op i moves to choice k (0.0 unless it starts or ends a term)."""
        if not self.fg_ms:
            return 0.0
        a, b = self.fg_at(i, st.cur[i]), self.fg_at(i, k)
        if a == b:
            return 0.0
        d = 0.0
        if a >= 0 and st.fgn[a] == 1:
            d -= self.fg_ms[a]
        if b >= 0 and st.fgn[b] == 0:
            d += self.fg_ms[b]
        return d

    def fg_credit(self, st: State, i: int) -> float:
        """What op i's move can take off the float-graph terms: its term if it is the last op that runs float on
        that unit (a bound's part, as edges' costs are)."""
        f = self.fg_at(i, st.cur[i]) if self.fg_ms else -1
        return self.fg_ms[f] if f >= 0 and st.fgn[f] == 1 else 0.0

    def switches(self, st: State, i: int, ks: Any) -> np.ndarray:
        """`switch` of op i to each of choices ks."""
        return np.array([self.switch(st, i, int(k)) for k in ks]) if self.fg_ms else np.zeros(len(ks))

    def _recount(self, st: State, i: int, k: int) -> None:
        """Op i moves to choice k: the float-graph counts follow (before st.cur[i] changes)."""
        if self.fg_ms:
            a, b = self.fg_at(i, st.cur[i]), self.fg_at(i, k)
            if a >= 0:
                st.fgn[a] -= 1
            if b >= 0:
                st.fgn[b] += 1

    def context(self, st: State, i: int) -> tuple[list[tuple[int, int, str, str, bool]],
                                                      list[tuple[int, int, str, str, bool]]]:
        """Op i's neighbours as they are: (edge, op, their format on the edge, unit, overridden), in and out."""
        t = self.t
        ins, outs = [], []
        for j in t.ins[i]:
            s = t.src[j]
            if s != i:  # a self-edge is priced with the op's own choice on both ends, below
                _, sout, su, so = self.attrs(s, st.cur[s])
                ins.append((j, s, sout, su, so))
        for j in t.outs[i]:
            d = t.dst[j]
            if d == i:
                outs.append((j, d, "", "", False))
            else:
                din, _, du, do = self.attrs(d, st.cur[d])
                outs.append((j, d, din, du, do))
        return ins, outs

    def ctx_of(self, st: State, i: int) -> Any:
        """`context`, kept in the state until a neighbour changes."""
        hit = st.ctx.get(i)
        if hit is None:
            hit = st.ctx[i] = self.context(st, i)
        return hit

    def memo_of(self, st: State, i: int) -> dict[Any, tuple[float, float]]:
        hit = st.memo.get(i)
        if hit is None:
            hit = st.memo[i] = {}
        return hit

    def edges_of(self, st: State, i: int, k: int, memo: dict[Any, tuple[float, float]] | None = None,
                  ctx: Any = None) -> tuple[float, float]:
        """(ms, bytes) of op i's edges with op i on choice k and its neighbours as they are."""
        if memo is None:
            memo = self.memo_of(st, i)
        if k != st.cur[i]:
            return self._price_edges(st, i, k, memo, ctx)
        hit = st.edges.get(i)
        if hit is None:
            hit = st.edges[i] = self._price_edges(st, i, k, memo, ctx)
        return hit

    def _price_edges(self, st: State, i: int, k: int, memo: dict[Any, tuple[float, float]] | None,
                     ctx: Any) -> tuple[float, float]:
        """edges_of, priced: in-edges depend on the choice's input format only, out-edges on its output format,
        so they are priced (and memoised) apart."""
        fin, fout, unit, over = self.attrs(i, k)
        if memo is None:
            memo = self.memo_of(st, i)
        kin, kout = (0, fin, unit, over), (1, fout, unit, over)
        if kin in memo and kout in memo:
            a, b = memo[kin]
            c, d = memo[kout]
            return a + c, b + d
        t, bulk, p = self.t, self.t.bulk, self.p
        ins, outs = ctx if ctx is not None else self.ctx_of(st, i)
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

    def edges_direct(self, st: State, i: int, k: int) -> tuple[float, float]:
        """`edges_of` priced afresh without the memo (an op with no self-edge, whose neighbours just changed):
        in-edges, then out-edges, each summed from 0.0 in edge order, as `_price_edges` adds them."""
        t, bulk, p, cur = self.t, self.t.bulk, self.p, st.cur
        fin, fout, unit, over = self.attrs(i, k)
        a_ms = a_by = 0.0
        for j in t.ins[i]:
            s = t.src[j]
            _, so, su, sov = self.attrs(s, cur[s])
            a, b, c, d = edge_terms(bulk, p, s, i, t.el[j], so, fin, su, unit, sov, over)
            a_ms += a + c
            a_by += b + d
        b_ms = b_by = 0.0
        for j in t.outs[i]:
            d_ = t.dst[j]
            di, _, du, dov = self.attrs(d_, cur[d_])
            a, b, c, d = edge_terms(bulk, p, i, d_, t.el[j], fout, di, unit, du, over, dov)
            b_ms += a + c
            b_by += b + d
        return a_ms + b_ms, a_by + b_by

    def side(self, i: int, inbound: bool, fmt: str, unit: str, edges: list[tuple[int, int, str, str, bool]]
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
    def evaluate(self, cur: list[int], memo: bool = True) -> State:
        """A state's tracked figures, with each op's edges as they are (and, with `memo`, each op's in- and out-edge
        prices memoised for the scalar pricing: the lazy greedy of small models reads them)."""
        st = State(list(cur))
        n = len(self.ops)
        ca = np.asarray(cur, dtype=np.int64)
        own = self.own_rows(np.arange(n), ca)
        ea = self.ea
        fin, fout, unit, over = ea.codes(cur)
        src, dst = ea.rule.src, ea.rule.dst
        j = np.arange(len(src))
        a, b, c, d = ea.rule.terms(j, fout[src], fin[dst], unit[src], unit[dst], over[src], over[dst])
        e_ms, e_by = a + c, b + d
        # The sums in the scalar order (each op's own row in op order, then each edge's terms in edge order):
        # cumsum adds one term after the other, as a Python loop does.
        fixed = self.fixed
        if self.fg_ms:
            st.fgn = [0] * len(self.fg_ms)
            for i, k in enumerate(cur):
                f = self.fg_at(i, k)
                if f >= 0:
                    st.fgn[f] += 1
            fixed = np.array([*self.fixed, *(ms if c else 0.0 for ms, c in zip(self.fg_ms, st.fgn))])
        lat = _seq_sum(fixed, own[:, 0], e_ms)  # the per-inference terms first, as the totals rule
        size = _seq_sum(own[:, 1])
        dram = _seq_sum(own[:, 3], e_by)
        # Each op's in- and out-edge sums as _price_edges adds them (same order): its memo and current edges
        # come with the totals instead of being priced again op by op. A self-edge is one of its op's out-edges.
        out_ms, out_by = np.bincount(src, e_ms, n), np.bincount(src, e_by, n)
        ins = src != dst
        in_ms, in_by = np.bincount(dst[ins], e_ms[ins], n), np.bincount(dst[ins], e_by[ins], n)
        st.edges = dict(enumerate(zip((in_ms + out_ms).tolist(), (in_by + out_by).tolist())))
        if memo:
            ims, iby, oms, oby = in_ms.tolist(), in_by.tolist(), out_ms.tolist(), out_by.tolist()
            for i, k in enumerate(cur):
                f_in, f_out, u, ov = self.attrs(i, k)
                st.memo[i] = {(0, f_in, u, ov): (ims[i], iby[i]), (1, f_out, u, ov): (oms[i], oby[i])}
        st.lat, st.size, st.dram, st.act = lat, size, dram, own[:, 2].copy()
        self.top2(st)
        return st

    def top2(self, st: State) -> None:
        a = st.act
        if len(a) < 2:
            self.amax_i, self.a1, self.a2 = (0, float(a[0]), 0.0) if len(a) else (-1, 0.0, 0.0)
            self.a2_i = -1
            return
        top = np.argpartition(a, -2)[-2:]
        i, j = (int(top[1]), int(top[0])) if a[top[1]] >= a[top[0]] else (int(top[0]), int(top[1]))
        self.amax_i, self.a1, self.a2, self.a2_i = i, float(a[i]), float(a[j]), j

    def _set_act(self, st: State, i: int, v: float) -> None:
        """Keep the two largest working sets as one op's changes (a full scan only when one of them shrinks
        below the other's place)."""
        st.act[i] = v
        if i == self.amax_i:
            if v >= self.a2:
                self.a1 = v
            else:
                self.top2(st)
        elif v > self.a1:
            self.amax_i, self.a2_i, self.a2, self.a1 = i, self.amax_i, self.a1, v
        elif v > self.a2:
            self.a2, self.a2_i = v, i
        elif i == self.a2_i and v < self.a2:
            self.top2(st)  # the second largest shrank

    def figure(self, k: str, lat: Any, size: Any, dram: Any, amax: Any) -> Any:
        """Budget figure `k` of a state from its sums (Python floats), or of many states (numpy arrays): the one
        place that says how the limits are read off the sums."""
        if k == "latency_ms":
            return lat
        if k == "size_bytes":
            return size + self.overhead
        if k == "peak_memory_bytes":
            return size * (1.0 + self.copies) + self.overhead + amax * self.arena + self.runtime
        if isinstance(lat, np.ndarray):  # memory_power_mw
            return np.where(lat > 0, dram * self.pj * 1e-9 / np.where(lat > 0, lat, 1.0) * 1e3, 0.0)
        return dram * self.pj * 1e-9 / lat * 1e3 if lat > 0 else 0.0

    def figures(self, lat: Any, size: Any, dram: Any, amax: Any) -> dict[str, Any]:
        """Every budget figure of a state (floats) or of many states (arrays)."""
        return {k: self.figure(k, lat, size, dram, amax) for k in LIMITS}

    def excess(self, f: Mapping[str, float]) -> float:
        return excess(self.limits, f)

    def excess4(self, lat: float, size: float, dram: float, amax: float) -> float:
        """`excess(figures(...))` without the dict: the same terms added in the same order."""
        e = 0
        for k, v in self.limit_items:
            e += max(0.0, self.figure(k, lat, size, dram, amax) / v - 1.0 - TOL)
        return e

    def state_excess(self, st: State) -> float:
        return self.excess4(st.lat, st.size, st.dram, self.a1)

    def move(self, st: State, i: int, k: int, memo: dict[Any, tuple[float, float]] | None = None,
              ctx: Any = None, here: tuple[tuple[float, float, float, float], tuple[float, float]] | None = None
              ) -> tuple[float, float, float, float]:
        """Tracked (lat, size, dram, max activation) after moving op i to choice k. `here`: op i's own row and
        edges as it is, when the caller prices several choices."""
        if ctx is None:
            ctx = self.ctx_of(st, i)
        o0, e0 = here if here is not None else (self.own(i, st.cur[i]), self.edges_of(st, i, st.cur[i], ctx=ctx))
        o1 = self.own(i, k)
        e1 = self.edges_of(st, i, k, memo, ctx)
        amax = max(self.a2 if i == self.amax_i else self.a1, o1[2])
        return (st.lat + (o1[0] - o0[0]) + (e1[0] - e0[0]) + self.switch(st, i, k), st.size + (o1[1] - o0[1]),
                st.dram + (o1[3] - o0[3]) + (e1[1] - e0[1]), amax)

    def counts(self, cur: list[int]) -> tuple[int, int]:
        """(ops changed, ops non-float) of a state."""
        ca = np.asarray(cur, dtype=np.int64)
        at_init = ca == self.n_combos
        nf = int(np.count_nonzero(self.init_nf_arr & at_init))
        for c, (_, _, _, mem) in zip(self.t.classes, self.ea.cls):
            k = ca[mem]
            nf += int(np.count_nonzero(~c.flt[k[k < len(c.combos)]]))
        return int(len(cur) - np.count_nonzero(at_init)), nf

    def own_rows(self, ops: np.ndarray, ks: np.ndarray) -> np.ndarray:
        """[len(ops), 4] own rows of choice ks[x] of op ops[x]."""
        out = self.init_arr[ops]
        of = self.ea.op_cls[ops]
        for ci in np.unique(of).tolist():
            c = self.t.classes[ci]
            sel = np.flatnonzero((of == ci) & (ks < len(c.combos)))
            out[sel] = c.m[self.op_pos[ops[sel]], ks[sel]]
        return out

    def moves_of(self, st: State, ops: np.ndarray, ks: np.ndarray) -> list[list[float]]:
        """Each move of op ops[x] to choice ks[x] alone from the state as it is, as `move` prices it (ops without a
        self-edge): [own latency change, edge latency change, size change, own dram change, edge dram change, the
        choice's working set, its edges' ms, its edges' bytes], each a list over x."""
        ea = self.ea
        codes = ea.codes(st.cur)
        v = ea.view(codes, ops)
        e1m, e1b = v.both(*ea.choice_codes(ops, ks))
        e0m, e0b = v.both(*(c[ops] for c in codes))
        o1 = self.own_rows(ops, ks)
        o0 = self.own_rows(ops, np.asarray(st.cur, dtype=np.int64)[ops])
        return [(o1[:, 0] - o0[:, 0]).tolist(), (e1m - e0m).tolist(), (o1[:, 1] - o0[:, 1]).tolist(),
                (o1[:, 3] - o0[:, 3]).tolist(), (e1b - e0b).tolist(), o1[:, 2].tolist(), e1m.tolist(), e1b.tolist()]

    def priced_move(self, st: State, pre: list[list[float]], x: int, i: int, k: int
                    ) -> tuple[float, float, float, float]:
        """`move` of op i to choice k from row x of `moves_of`, the state's sums having moved since but not i's
        neighbours (the float-graph switch priced as the state is now)."""
        amax = max(self.a2 if i == self.amax_i else self.a1, pre[5][x])
        return (st.lat + pre[0][x] + pre[1][x] + self.switch(st, i, k), st.size + pre[2][x],
                st.dram + pre[3][x] + pre[4][x], amax)

    def apply(self, st: State, i: int, k: int) -> None:
        st.lat, st.size, st.dram, _ = self.move(st, i, k)
        self._recount(st, i, k)
        st.cur[i] = k
        st.edges.pop(i, None)
        for j in self.neighbours(i):  # i itself only through a self-edge: its context and memo stay valid
            st.edges.pop(j, None)
            st.ctx.pop(j, None)
            st.memo.pop(j, None)
        self._set_act(st, i, self.own(i, k)[2])

    def apply_priced(self, st: State, i: int, k: int, sums: tuple[float, float, float], act: float,
                     edges: tuple[float, float]) -> None:
        """`apply` of a move the caller has priced (with its float-graph `switch`): the state's sums after it, the
        choice's working set and edges."""
        st.lat, st.size, st.dram = sums
        self._recount(st, i, k)
        st.cur[i] = k
        st.edges[i] = edges
        for j in self.neighbours(i):
            st.edges.pop(j, None)
            st.ctx.pop(j, None)
            st.memo.pop(j, None)
        self._set_act(st, i, act)

    def neighbours(self, i: int) -> set[int]:
        t = self.t
        return {t.src[j] for j in t.ins[i]} | {t.dst[j] for j in t.outs[i]}

