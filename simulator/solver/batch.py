"""Every op's best change priced at once, and the greedy that takes them in rounds (large models).

The lazy greedy (`search.Search.repair`) prices one op at a time: on a 10,000-task chain whose budget needs
thousands of changes, tens of thousands of scalar pricings. Here each class of ops (one combo list, `table.
ComboClass`) prices all its members' candidates in one set of array operations, with the same arithmetic as
`candidates.Candidates.best` (so an op's score here is its score there, to the bit). Edges are the only coupling
between ops: moves of ops that share no edge add up exactly, so a round takes the best-scored ops that are not
neighbours of one already taken, each checked exactly against the state as it is before it is applied, and only
the ops next to a change are priced again for the next round.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .candidates import EPS_COST, Candidates
from .state import State


class EdgeRows:
    """One class's per-member edge prices with the neighbours as they are: each (format, unit) pair of the
    in-edges and out-edges, the starting choice's edges and the current choice's. Rows of ops next to a change
    are re-read from the state's memo (which `Pricing.apply` drops for them)."""

    def __init__(self, members: list[int], n_in: int, n_out: int) -> None:
        m = len(members)
        self.members = np.array(members, dtype=np.int64)
        self.e_in, self.e_out = np.zeros((m, n_in, 2)), np.zeros((m, n_out, 2))
        self.e_init, self.e_now = np.zeros((m, 2)), np.zeros((m, 2))

    def copy(self) -> EdgeRows:
        out = EdgeRows([], 0, 0)
        out.members, out.e_in, out.e_out = self.members, self.e_in.copy(), self.e_out.copy()
        out.e_init, out.e_now = self.e_init.copy(), self.e_now.copy()
        return out


class Batch(Candidates):
    """Vectorised pricing of every op's best change, and the round-based greedy built on it."""

    _filled: dict[bytes, list[EdgeRows]]  # edge prices of the states a repair started from (set by Pricing)

    def _scalar_ops(self) -> set[int]:
        """Ops `best` prices on its own: kept float (their choices differ from their class's), with a self-edge
        (whose price depends on both of the op's formats at once) or in a class without combos."""
        alone = self.ea.self_edge.copy()
        for c, (_, _, _, mem) in zip(self.t.classes, self.ea.cls):
            if c.m.shape[1] == 0:
                alone[mem] = True
        return set(self.keep) | set(np.flatnonzero(alone).tolist())

    def _fill(self, st: State, rows: list[EdgeRows], ops: Any, scalar: set[int]) -> None:
        """Re-price the edges of `ops` (but those priced on their own) with the state as it is, every class's
        members at once for each of its (format, unit) pairs, the starting choice and the current one."""
        n = len(self.ops)
        pick = np.zeros(n, dtype=bool)
        pick[np.fromiter(ops, dtype=np.int64)] = True
        if scalar:
            pick[np.fromiter(scalar, dtype=np.int64)] = False
        ea = self.ea
        codes = ea.codes(st.cur)
        i_in, i_out, i_unit, i_over = ea.init
        for ci, (c_in, _, _, mem) in enumerate(ea.cls):
            pos = np.flatnonzero(pick[mem])
            if not len(pos):
                continue
            at = mem[pos]
            v = ea.view(codes, at)
            row = rows[ci]
            in_pairs, out_pairs = ea.pair_codes[ci]
            for q, (f, u) in enumerate(in_pairs):
                row.e_in[pos, q, 0], row.e_in[pos, q, 1] = v.inbound(f, u, True)
            for q, (f, u) in enumerate(out_pairs):
                row.e_out[pos, q, 0], row.e_out[pos, q, 1] = v.outbound(f, u, True)
            row.e_init[pos, 0], row.e_init[pos, 1] = v.both(i_in[at], i_out[at], i_unit[at], i_over[at])
            row.e_now[pos, 0], row.e_now[pos, 1] = v.both(codes[0][at], codes[1][at], codes[2][at], codes[3][at])

    def best_all(self, st: State, objective: str, w: np.ndarray, e0: float, rows: list[EdgeRows], scalar: set[int],
                 moves: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(score, choice) of every op's best change, as `best` gives them one op at a time (choice -1: none).
        `moves` [8, n], if given, gets each op's best change as `move` prices it (not for the scalar ops): own
        latency change, edge latency change, size change, own dram change, edge dram change, the choice's working
        set, and its edges' (ms, bytes)."""
        n = len(self.ops)
        score, choice = np.zeros(n), np.full(n, -1, dtype=np.int64)
        self._reps(w)  # first: a new w empties the class memo
        cur = np.array(st.cur, dtype=np.int64)
        o0 = self.own_matrix(st.cur)
        for ci, c in enumerate(self.t.classes):
            if c.m.shape[1] == 0:
                continue
            cc = self._class_memo.get(ci)
            if cc is None:
                cc = self._class_memo[ci] = self._class_candidates(ci)
            ks, own, g_in, g_out, nf = cc
            row, init = rows[ci], len(c.combos)
            mem = row.members
            edges = row.e_in[:, g_in] + row.e_out[:, g_out]
            edges[:, len(c.groups)] = row.e_init  # the starting choice: its own edges (bulk row, not an override)
            oc, en = o0[mem], row.e_now
            lat = st.lat + (own[:, :, 0] - oc[:, None, 0]) + (edges[:, :, 0] - en[:, None, 0])
            if self.fg_ms:  # the float-graph switch of each change
                lat = lat + np.array([self.switches(st, i, kr) for i, kr in zip(mem, ks)]).reshape(lat.shape)
            size = st.size + (own[:, :, 1] - oc[:, None, 1])
            dram = st.dram + (own[:, :, 3] - oc[:, None, 3]) + (edges[:, :, 1] - en[:, None, 1])
            amax = np.maximum(np.where(mem == self.amax_i, self.a2, self.a1)[:, None], own[:, :, 2])
            gain = e0 - self._excess_vec(lat.ravel(), size.ravel(), dram.ravel(), amax.ravel()).reshape(lat.shape)
            cur_c = cur[mem]
            touched = (ks != init).astype(np.float64) - (cur_c != init).astype(np.float64)[:, None]
            if objective == "most_float":
                nf_cur = np.where(cur_c < init, ~c.flt[np.minimum(cur_c, init - 1)],
                                  np.array(self.init_non_float)[mem]).astype(np.float64)
                cost = nf - nf_cur[:, None] + EPS_COST * touched
            else:
                cost = touched
            sc = np.where(gain > 1e-12, gain / np.maximum(cost, EPS_COST), 0.0)
            sc[ks == cur_c[:, None]] = 0.0  # staying is no change
            j = np.argmax(sc, axis=1)
            r = np.arange(len(mem))
            top = sc[r, j]
            score[mem] = np.where(top > 0, top, 0.0)
            choice[mem] = np.where(top > 0, ks[r, j], -1)
            if moves is not None:
                o1, e1 = own[r, j], edges[r, j]
                moves[0, mem], moves[1, mem] = o1[:, 0] - oc[:, 0], e1[:, 0] - en[:, 0]
                moves[2, mem] = o1[:, 1] - oc[:, 1]
                moves[3, mem], moves[4, mem] = o1[:, 3] - oc[:, 3], e1[:, 1] - en[:, 1]
                moves[5, mem], moves[6, mem], moves[7, mem] = o1[:, 2], e1[:, 0], e1[:, 1]
        for i in scalar:
            score[i], choice[i] = self.best(st, i, objective, w, e0)
        return score, choice

    def repair_rounds(self, st: State, objective: str) -> None:
        """`Search.repair`'s greedy in rounds: every op priced at once, then the best-scored ops that share no edge
        with one already taken this round, each applied only if it still lowers the excess as the state is. A
        round stops once it has removed half of its starting excess (the last changes are chosen on fresh
        prices) or when the set of exceeded limits changes (the scores' gradient with it)."""
        n = len(self.ops)
        if self.state_excess(st) <= 0:
            return
        scalar = self._scalar_ops()
        start = np.array(st.cur).tobytes()
        if start in self._filled:  # the same start for another objective: its prices are the same
            rows = [r.copy() for r in self._filled[start]]
        else:
            rows = [EdgeRows(c.members, len(c.in_pairs), len(c.out_pairs)) for c in self.t.classes]
            self._fill(st, rows, range(n), scalar)
            self._filled[start] = [r.copy() for r in rows]
        steps = 0
        while self.state_excess(st) > 0 and steps < 20 * n + 100:
            w, e0 = self.weights(st), self.state_excess(st)
            pattern = (w > 0).tobytes()
            moves = np.zeros((8, n))
            score, choice = self.best_all(st, objective, w, e0, rows, scalar, moves)
            order = np.argsort(-score, kind="stable")
            order = order[score[order] > 0].tolist()
            ch = choice.tolist()
            d_lo, d_le, d_s, d_do, d_de, act1, e_ms, e_by = moves.tolist()
            blocked: set[int] = set()
            dirty: set[int] = set()  # next to a change: every edge price again
            moved: list[int] = []  # changed: only its current choice's edges (its neighbours stayed)
            taken = 0
            for i in order:
                if i in blocked:
                    continue
                k, e = ch[i], self.state_excess(st)
                if i in scalar:
                    if e - self.excess4(*self.move(st, i, k)) <= 1e-12:
                        continue
                    self.apply(st, i, k)
                else:
                    # No neighbour of i has changed this round: its prices from the round's start are exact,
                    # and `move`'s sums (lat + own change + edge change) are these, to the bit.
                    lat = st.lat + d_lo[i] + d_le[i] + self.switch(st, i, k)
                    size, dram = st.size + d_s[i], st.dram + d_do[i] + d_de[i]
                    amax = max(self.a2 if i == self.amax_i else self.a1, act1[i])
                    if e - self.excess4(lat, size, dram, amax) <= 1e-12:
                        continue
                    self.apply_priced(st, i, k, (lat, size, dram), act1[i], (e_ms[i], e_by[i]))
                taken += 1
                near = self.neighbours(i)
                blocked |= near
                dirty |= near
                moved.append(i)
                if self.state_excess(st) <= 0 or self.state_excess(st) <= e0 / 2 or \
                        (self.weights(st) > 0).tobytes() != pattern:
                    break
            if not taken:
                return
            steps += taken
            self._fill(st, rows, dirty, scalar)
            for i in moved:
                if i not in dirty and i not in scalar:
                    r = self.t.rows[i]
                    rows[self.cidx[id(r.cls)]].e_now[r.pos] = self.edges_of(st, i, st.cur[i])
