"""Candidate changes of one op and what they are worth: the excess's gradient, each signature's best combo, an
upper bound on every op's score (for the lazy greedy) and the exact score of an op's best change."""

from __future__ import annotations

from typing import Any

import numpy as np

from .budget import TOL
from .state import Pricing, State

CLASS_AFTER = 32  # ops priced under one gradient before their classes' candidates are built at once
_PAIRS = ("pairs",)  # key in an op's memo of its edges: every overridden (format, unit) pair priced, in and out
EPS_COST = 1e-3  # a change that touches no new op still costs a little, so the search prefers fewer moves


class Candidates(Pricing):
    """Scores of changes, on top of the pricing of states."""

    def weights(self, st: State) -> np.ndarray:
        """Gradient of the excess in the op's own (latency, weight, activation, dram): picks each signature's
        representative (edges are equal within a signature)."""
        f = self.figures(st.lat, st.size, st.dram, self.a1)
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

    def own_matrix(self, cur: list[int]) -> np.ndarray:
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
            self._reps_key, self._reps_val, self._choices_memo = key, [], {}
            self._candidates_memo, self._class_memo = {}, {}
            for c in self.t.classes:
                sc = c.m @ w
                r = np.empty((len(c.members), len(c.groups)), dtype=np.int64)
                for g, (_, ix) in enumerate(c.groups):
                    r[:, g] = ix[np.argmin(sc[:, ix], axis=1)]
                self._reps_val.append(r)
        return self._reps_val

    def choices(self, i: int, w: np.ndarray, float_only: bool) -> list[int]:
        return self._choices_g(i, w, float_only)[0]

    def _choices_g(self, i: int, w: np.ndarray, float_only: bool) -> tuple[list[int], list[int]]:
        """(choices, their signature index; -1 for the starting choice)."""
        r = self.t.rows[i]
        c = r.cls
        reps = self._reps(w)[self.cidx[id(c)]]  # first: a new w empties the memo
        hit = self._choices_memo.get((i, float_only))
        if hit is not None:
            return hit
        only = float_only or i in self.keep
        ks, gs = [], []
        for g, ((flt, _), k) in enumerate(zip(c.groups, reps[r.pos].tolist())):
            if flt or not only:
                ks.append(k)
                gs.append(g)
        if not (i in self.keep and self.non_float(i, len(c.combos))):
            ks.append(len(c.combos))
            gs.append(-1)
        self._choices_memo[(i, float_only)] = ks, gs
        return ks, gs

    def bounds(self, st: State, objective: str, w: np.ndarray) -> np.ndarray:
        """An upper bound on each op's best score (the lazy greedy pops ops by it): the excess is convex in the
        sums, so its linearisation over-states any move's gain; edges can at most remove what they cost now
        less the crossing credits they may earn. Power limits are not convex: no bound (every op is priced)."""
        n = len(self.ops)
        if w[0] < 0 or w[3] != 0:
            self.own_bound = np.full(n, np.inf)
            return np.full(n, np.inf)
        own_cur = self.own_matrix(st.cur) @ w
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
        edge = np.array([self.edges_of(st, i, st.cur[i])[0] for i in range(n)]) - self.edge_lb
        if self.fg_ms:
            edge = edge + np.array([self.fg_credit(st, i) for i in range(n)])
        self.own_bound = np.maximum(own_cur - best_all, 0.0)
        if objective == "most_float":
            self.own_bound = np.maximum(self.own_bound, (own_cur - best_flt) / EPS_COST)
        gain_all = own_cur - best_all + max(w[0], 0.0) * edge
        changed = np.array(st.cur) != self.n_combos
        if objective == "most_float":
            gain_flt = own_cur - np.where(init_ok, np.minimum(best_flt, own_init), best_flt) + max(w[0], 0.0) * edge
            return np.maximum(gain_flt / EPS_COST, gain_all / np.where(changed, EPS_COST, EPS_COST))
        return gain_all / np.where(changed, EPS_COST, 1.0)

    def cost(self, st: State, i: int, k: int, objective: str) -> float:
        init = len(self.t.rows[i].combos)
        touched = (k != init) - (st.cur[i] != init)
        if objective == "most_float":
            c = (self.non_float(i, k) - self.non_float(i, st.cur[i])) + EPS_COST * touched
        else:
            c = float(touched)
        return max(c, EPS_COST)

    def _candidates(self, i: int, w: np.ndarray) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                          np.ndarray, int]:
        """Op i's choices under weights w and what of them does not depend on the state: (choices, as an array,
        their own rows, in-pair and out-pair index, non-float, position of the starting choice or -1)."""
        self._reps(w)  # first: a new w empties the memo
        hit = self._candidates_memo.get(i)
        if hit is not None:
            return hit
        r = self.t.rows[i]
        c, init = r.cls, len(r.combos)
        if i not in self.keep and len(self._candidates_memo) >= CLASS_AFTER:
            # Many ops priced under one gradient (a repair's first pass): take them from their class's arrays.
            ci = self.cidx[id(c)]
            cc = self._class_memo.get(ci)
            if cc is None:
                cc = self._class_memo[ci] = self._class_candidates(ci)
            ka = cc[0][r.pos]
            hit = self._candidates_memo[i] = (ka.tolist(), ka, cc[1][r.pos], cc[2], cc[3], cc[4][r.pos], len(c.groups))
            return hit
        ks, gs = self._choices_g(i, w, False)
        ka = np.array(ks)
        own = c.m[r.pos][np.minimum(ka, init - 1)]
        at_init = ks.index(init) if init in ks else -1
        if at_init >= 0:
            own[at_init] = self.init_m[i]
        ga = np.array(gs)
        gi = np.where(ga >= 0, ga, 0)
        nf = np.array([self.non_float(i, k) for k in ks], dtype=np.float64)
        hit = self._candidates_memo[i] = (ks, ka, own, c.g_in[gi], c.g_out[gi], nf, at_init)
        return hit

    def _class_candidates(self, ci: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """_candidates of every op of class ci not kept float (each signature's representative, then the starting
        choice): (choices [M, G+1], own rows [M, G+1, 4], in-pair and out-pair index [G+1], non-float [M, G+1])."""
        c, reps = self.t.classes[ci], self._reps_val[ci]
        n, g = reps.shape
        members = np.array(c.members)
        ks = np.concatenate([reps, np.full((n, 1), len(c.combos))], axis=1)
        own = np.concatenate([np.take_along_axis(c.m, reps[:, :, None], axis=1), self.init_arr[members][:, None, :]],
                             axis=1)
        nf = np.empty((n, g + 1))
        nf[:, :g] = ~np.array([f for f, _ in c.groups])
        nf[:, g] = np.array(self.init_non_float)[members]
        return ks, own, np.append(c.g_in, c.g_in[0]), np.append(c.g_out, c.g_out[0]), nf

    def best(self, st: State, i: int, objective: str, w: np.ndarray, e0: float) -> tuple[float, int]:
        """(score, choice) of op i's best change; every signature's representative priced at once."""
        cur = st.cur[i]
        ks, ka, own, g_in, g_out, nf, at_init = self._candidates(i, w)
        if len(ks) == 0 or (len(ks) == 1 and ks[0] == cur):
            return 0.0, -1
        memo = self.memo_of(st, i)
        ctx = self.ctx_of(st, i)
        o0 = self.own(i, cur)
        e_now = self.edges_of(st, i, cur, memo, ctx)
        c = self.t.rows[i].cls
        init = len(c.combos)
        if any(d_ == i for _, d_, _, _, _ in ctx[1]):
            edges = np.array([self.edges_of(st, i, k, memo, ctx) for k in ks])
        else:
            # Every overridden choice of one (format, unit) pays the same on its in-edges (out-edges):
            # price the distinct pairs once, then each signature is a sum of two.
            pairs = memo.get(_PAIRS)
            if pairs is None:  # priced once until a neighbour changes
                pairs = memo[_PAIRS] = (
                    np.array([self.side(i, True, f, u, ctx[0]) for f, u in c.in_pairs]).reshape(-1, 2),
                    np.array([self.side(i, False, f, u, ctx[1]) for f, u in c.out_pairs]).reshape(-1, 2))
            e_in, e_out = pairs
            edges = e_in[g_in] + e_out[g_out]
            if at_init >= 0:
                edges[at_init] = self.edges_of(st, i, init, memo, ctx)
        lat = st.lat + (own[:, 0] - o0[0]) + (edges[:, 0] - e_now[0]) + self.switches(st, i, ks)
        size = st.size + (own[:, 1] - o0[1])
        dram = st.dram + (own[:, 3] - o0[3]) + (edges[:, 1] - e_now[1])
        amax = np.maximum(self.a2 if i == self.amax_i else self.a1, own[:, 2])
        gain = e0 - self._excess_vec(lat, size, dram, amax)
        touched = (ka != init).astype(np.float64) - float(cur != init)
        if objective == "most_float":
            cost = nf - float(self.non_float(i, cur)) + EPS_COST * touched
        else:
            cost = touched
        score = np.where(gain > 1e-12, gain / np.maximum(cost, EPS_COST), 0.0)
        score[ka == cur] = 0.0  # staying is no change
        j = int(np.argmax(score))
        return (float(score[j]), ks[j]) if score[j] > 0 else (0.0, -1)

    def _excess_vec(self, lat: np.ndarray, size: np.ndarray, dram: np.ndarray, amax: np.ndarray) -> np.ndarray:
        """Budget.excess of many states at once (only the limits the budget sets are computed)."""
        out = np.zeros(len(lat))
        for k, v in self.limits.items():
            out += np.maximum(0.0, self.figure(k, lat, size, dram, amax) / v - 1.0 - TOL)
        return out
