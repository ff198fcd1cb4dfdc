"""A state's edges priced as arrays: each op's format and unit codes, and what many ops' in- and out-edges cost with
each op on a given choice and its neighbours as they are, through `simulator.totals.EdgeRule` (edge_terms over
arrays, to the bit). The sums per op run in edge order from 0.0 as the scalar pricing (`state.Pricing.side`) adds
them, so an op's edge price is the same float either way. Ops with a self-edge are priced by the scalar path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.totals import FORMATS, EdgeRule

from .table import SolverTable

_F = {f: i for i, f in enumerate(FORMATS)}


class EdgeArrays:
    """The table's edges and combos as codes, for one preset column (the crossings a bulk row pays depend on it)."""

    def __init__(self, t: SolverTable, p: int, init_attrs: Sequence[tuple[str, str, str, bool]]):
        bulk = t.bulk
        self.rule = EdgeRule(bulk, p)
        units = {u: j for j, u in enumerate(bulk["unit_names"])}
        n = len(t.rows)
        self.init = (np.array([_F[a[0]] for a in init_attrs], dtype=np.int64),
                     np.array([_F[a[1]] for a in init_attrs], dtype=np.int64),
                     np.array([units[a[2]] for a in init_attrs], dtype=np.int64),
                     np.array([a[3] for a in init_attrs], dtype=bool))
        # Per class, each combo's (in, out, unit) codes; its members as an array.
        self.cls = [(np.array([_F[f] for f in c.fin], dtype=np.int64),
                     np.array([_F[f] for f in c.fout], dtype=np.int64),
                     np.array([units[u] for u in c.unit], dtype=np.int64), np.array(c.members, dtype=np.int64))
                    for c in t.classes]
        self.pair_codes = [([(_F[f], units[u]) for f, u in c.in_pairs], [(_F[f], units[u]) for f, u in c.out_pairs])
                           for c in t.classes]
        self.op_cls = np.zeros(n, dtype=np.int64)
        for ci, c in enumerate(t.classes):
            self.op_cls[c.members] = ci
        src, dst = self.rule.src, self.rule.dst
        self.self_edge = np.zeros(n, dtype=bool)
        self.self_edge[src[src == dst]] = True
        self.in_ptr, self.in_idx = _csr([len(x) for x in t.ins], t.ins)
        self.out_ptr, self.out_idx = _csr([len(x) for x in t.outs], t.outs)

    def codes(self, cur: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(input format, output format, unit, overridden) of every op in state `cur`."""
        ca = np.asarray(cur, dtype=np.int64)
        fin, fout, unit, over = (a.copy() for a in self.init)
        for c_in, c_out, c_unit, mem in self.cls:
            k = ca[mem]
            on = k < len(c_in)
            sel, kk = mem[on], k[on]
            fin[sel], fout[sel], unit[sel], over[sel] = c_in[kk], c_out[kk], c_unit[kk], True
        return fin, fout, unit, over

    def choice_codes(self, ops: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """`codes` of choice ks[x] of op ops[x] (one past an op's combos: its starting choice)."""
        fin, fout, unit, over = (a[ops] for a in self.init)
        of = self.op_cls[ops]
        for ci in np.unique(of).tolist():
            c_in, c_out, c_unit, _ = self.cls[ci]
            sel = np.flatnonzero((of == ci) & (ks < len(c_in)))
            kk = ks[sel]
            fin[sel], fout[sel], unit[sel], over[sel] = c_in[kk], c_out[kk], c_unit[kk], True
        return fin, fout, unit, over

    def view(self, codes: tuple[np.ndarray, ...], ops: np.ndarray) -> OpEdges:
        return OpEdges(self, codes, ops)


class OpEdges:
    """The edges of some ops (none with a self-edge) and their neighbours' codes, priced for choices of the ops."""

    def __init__(self, a: EdgeArrays, codes: tuple[np.ndarray, ...], ops: np.ndarray):
        self.a, self.n = a, len(ops)
        fin, fout, unit, over = codes
        self.in_owner, self.in_j = _gather(a.in_ptr, a.in_idx, ops)
        s = a.rule.src[self.in_j]
        self.in_nb = (fout[s], unit[s], over[s])
        self.out_owner, self.out_j = _gather(a.out_ptr, a.out_idx, ops)
        d = a.rule.dst[self.out_j]
        self.out_nb = (fin[d], unit[d], over[d])

    def inbound(self, fmt: Any, unit: Any, over: Any) -> tuple[np.ndarray, np.ndarray]:
        """(ms, bytes) of each op's in-edges with the op on input format `fmt`, `unit`, `over` (scalars or per op)."""
        o = self.in_owner
        f, u, ov = (np.asarray(x)[o] if np.ndim(x) else np.full(len(o), x) for x in (fmt, unit, over))
        nf, nu, no = self.in_nb
        a, b, c, d = self.a.rule.terms(self.in_j, nf, f, nu, u, no, ov)
        return _per_op(o, a + c, self.n), _per_op(o, b + d, self.n)

    def outbound(self, fmt: Any, unit: Any, over: Any) -> tuple[np.ndarray, np.ndarray]:
        o = self.out_owner
        f, u, ov = (np.asarray(x)[o] if np.ndim(x) else np.full(len(o), x) for x in (fmt, unit, over))
        nf, nu, no = self.out_nb
        a, b, c, d = self.a.rule.terms(self.out_j, f, nf, u, nu, ov, no)
        return _per_op(o, a + c, self.n), _per_op(o, b + d, self.n)

    def both(self, fin: Any, fout: Any, unit: Any, over: Any) -> tuple[np.ndarray, np.ndarray]:
        """(ms, bytes) of each op's edges on a choice, as `Pricing.edges_of` adds them (in-edges + out-edges)."""
        a, b = self.inbound(fin, unit, over)
        c, d = self.outbound(fout, unit, over)
        return a + c, b + d


def _per_op(owner: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    # bincount adds each op's values in edge order, starting from 0.0: the scalar loop's `ms += a + c`
    return np.bincount(owner, weights=v, minlength=n) if len(owner) else np.zeros(n)


def _csr(deg: list[int], lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(deg) + 1, dtype=np.int64)
    np.cumsum(deg, out=ptr[1:])
    idx = np.fromiter((j for x in lists for j in x), dtype=np.int64, count=int(ptr[-1]))
    return ptr, idx


def _gather(ptr: np.ndarray, idx: np.ndarray, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner position in ops, edge index) of every edge of `ops`, op by op, each op's edges in order."""
    deg = ptr[ops + 1] - ptr[ops]
    owner = np.repeat(np.arange(len(ops)), deg)
    start = np.repeat(ptr[ops] - (np.cumsum(deg) - deg), deg)
    return owner, idx[start + np.arange(len(owner))]



