"""The search's phases on one state: the lazy greedy that repairs it until the budget is met, the pass that
reverts every change the budget does not need, the exchange step (drop one change, solve again), the shrink for
least size, and the states the search starts from."""

from __future__ import annotations

import heapq

import numpy as np

from compiler.vocabulary.options import OptionError

from .batch import Batch
from .candidates import EPS_COST
from .state import State
from .table import ComboClass


class Search(Batch):
    """One solve's search: phases that move a state, on top of the scores of changes."""

    def repair(self, st: State, objective: str) -> None:
        """Greedy: the change with the most excess removed per unit of cost, until the budget is met. Lazy:
        ops wait in the heap under an upper bound and are priced exactly when they reach the top."""
        n = len(self.ops)
        ver = [0] * n
        heap: list[tuple[float, int, int, int, bool]] = []  # (-score, op, choice, version, exact)
        pushed_w: list[bytes] = [b""]

        def push_all() -> None:
            w = self.weights(st)
            pushed_w[0] = (w > 0).tobytes()
            heap.clear()
            for i, b in enumerate(self.bounds(st, objective, w)):
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
            w, e0 = self.weights(st), self.state_excess(st)
            if exact:
                # Priced when it or a neighbour last changed: only the budget's state moved since, so the
                # same choice is re-priced alone (its neighbours' edges are as they were).
                gain = e0 - self.excess4(*self.move(st, i, k))
                s = gain / self.cost(st, i, k, objective) if gain > 1e-12 else 0.0
            else:
                s, k = self.best(st, i, objective, w, e0)
            if k < 0 or s <= 0:
                continue
            if heap and -heap[0][0] > s * (1 + 1e-9):
                ver[i] += 1
                heapq.heappush(heap, (-s, i, k, ver[i], True))
                continue
            self.apply(st, i, k)
            steps += 1
            applied = True
            w, e0 = self.weights(st), self.state_excess(st)
            if ((w > 0) & ~np.frombuffer(pushed_w[0], dtype=bool)).any():
                push_all()  # a limit newly exceeded: bounds taken without its weight are not bounds
                continue
            s, k = self.best(st, i, objective, w, e0)
            ver[i] += 1
            if k >= 0:
                heapq.heappush(heap, (-s, i, k, ver[i], True))
            for j in self.neighbours(i) - {i}:
                # Re-queued under a bound, priced when it reaches the top: most neighbours never do.
                ver[j] += 1
                if not np.isfinite(self.own_bound[j]):
                    heapq.heappush(heap, (-np.inf, j, -1, ver[j], False))
                    continue
                edge = self.edges_of(st, j, st.cur[j])[0] - self.edge_lb[j] + self.fg_credit(st, j)
                changed = st.cur[j] != len(self.t.rows[j].combos)
                b = (self.own_bound[j] + max(w[0], 0.0) * edge) / (EPS_COST if changed or
                                                                   objective == "most_float" else 1.0)
                if b > 1e-12:
                    heapq.heappush(heap, (-float(b), j, -1, ver[j], False))

    def prune(self, st: State, objective: str, rounds: int = 3) -> None:
        """Revert every change the budget does not need, the least harmful first (most_float: non-float
        changes first)."""
        n_combos = self.n_combos
        keep_nf = np.zeros(len(self.ops), dtype=bool)
        for i in self.keep:
            keep_nf[i] = self.non_float(i, int(n_combos[i]))
        for _ in range(rounds):
            cur = np.asarray(st.cur, dtype=np.int64)
            ops = np.flatnonzero((cur != n_combos) & ~keep_nf)
            if not len(ops):
                return
            init = n_combos[ops]
            # Every revert priced at once (ops with a self-edge one by one), as `move` prices it.
            vec = ~self.ea.self_edge[ops]
            pre = self.moves_of(st, ops[vec], init[vec])
            at = np.full(len(ops), -1, dtype=np.int64)
            at[vec] = np.arange(int(vec.sum()))
            lat, size, dram, amax = (np.array(x) for x in zip(*[
                self.priced_move(st, pre, x, i, int(n_combos[i])) if x >= 0 else self.move(st, i, int(n_combos[i]))
                for x, i in zip(at.tolist(), ops.tolist())]))
            f = self.figures(lat, size, dram, amax)
            harm = np.zeros(len(ops))
            for k, v in self.limits.items():
                harm = harm + f[k] / v
            if objective == "most_float":
                nf_now = np.array([self.non_float(i, k) for i, k in zip(ops.tolist(), cur[ops].tolist())])
                nf_init = np.array([self.non_float(i, k) for i, k in zip(ops.tolist(), init.tolist())])
                first = -(nf_now.astype(np.int64) - nf_init.astype(np.int64))
            else:
                first = np.zeros(len(ops), dtype=np.int64)
            reverted = False
            stale: set[int] = set()  # next to a revert: priced again
            for r in np.lexsort((ops, harm, first)).tolist():
                i, x = int(ops[r]), int(at[r])
                k = int(n_combos[i])
                if x < 0 or i in stale:
                    if self._apply_if_met(st, i, k):
                        stale |= self.neighbours(i)
                        reverted = True
                    continue
                m = self.priced_move(st, pre, x, i, k)
                if self.excess4(*m) <= 0:
                    self.apply_priced(st, i, k, m[:3], pre[5][x], (pre[6][x], pre[7][x]))
                    stale |= self.neighbours(i)
                    reverted = True
            if not reverted:
                return

    def _apply_if_met(self, st: State, i: int, k: int) -> bool:
        """Move op i to choice k if the state then meets the budget (priced once: `apply` would price it again)."""
        if self.ea.self_edge[i]:
            m = self.move(st, i, k)
            if self.excess4(*m) > 0:
                return False
            self.apply_priced(st, i, k, m[:3], self.own(i, k)[2], self._price_edges(st, i, k, None, None))
            return True
        o0, o1 = self.own(i, st.cur[i]), self.own(i, k)
        e0, e1 = self.edges_direct(st, i, st.cur[i]), self.edges_direct(st, i, k)
        m = (st.lat + (o1[0] - o0[0]) + (e1[0] - e0[0]) + self.switch(st, i, k), st.size + (o1[1] - o0[1]),
             st.dram + (o1[3] - o0[3]) + (e1[1] - e0[1]), max(self.a2 if i == self.amax_i else self.a1, o1[2]))
        if self.excess4(*m) > 0:
            return False
        self.apply_priced(st, i, k, m[:3], o1[2], e1)
        return True

    def key(self, st: State, objective: str) -> tuple[float, ...]:
        ch, nf = self.counts(st.cur)
        size = st.size
        return {"fewest_changes": (ch, nf, size), "most_float": (nf, ch, size), "least_size": (size, ch, nf)}[objective]

    def exchange(self, st: State, objective: str, rounds: int, trials: list[int] | None = None) -> None:
        """Local improvement: drop one change, repair and prune again; keep the result if it needs fewer
        changes (fewest_changes) or fewer non-float ops (most_float). `trials`: a shared count of re-solves
        left (decremented here); the changes whose revert adds the least excess are dropped first."""
        def key(cur: list[int]) -> tuple[int, int]:
            ch, nf = self.counts(cur)
            return (nf, ch) if objective == "most_float" else (ch, nf)

        for _ in range(rounds):
            improved = False
            n_combos = self.n_combos
            ops = [i for i, k in enumerate(st.cur) if k != n_combos[i]
                   and not (i in self.keep and self.non_float(i, int(n_combos[i])))]
            ops.sort(key=lambda i: (self.excess4(*self.move(st, i, int(n_combos[i]))), i))
            for i in ops:
                if trials is not None:
                    if trials[0] <= 0:
                        return
                    trials[0] -= 1
                trial = self.evaluate(st.cur)
                self.apply(trial, i, int(n_combos[i]))
                self.repair(trial, objective)
                if self.state_excess(trial) > 0:
                    continue
                self.prune(trial, objective)
                if key(trial.cur) < key(st.cur):
                    st.cur, st.lat, st.size, st.dram, st.act = trial.cur, trial.lat, trial.size, trial.dram, trial.act
                    st.fgn = trial.fgn
                    st.edges = trial.edges
                    self.top2(st)
                    improved = True
                    break
            if not improved:
                return

    def shrink(self, st: State) -> None:
        """least_size: take the largest size reductions the budget's slack allows, one pass."""
        w = np.array([0.0, 1.0, 0.0, 0.0])
        now = self.own_matrix(st.cur)[:, 1]
        cands = []
        for c in self.t.classes:
            if c.m[:, :, 1].any():  # else no weights: nothing to shrink
                cands += self._smaller(c, w, now)
        cands.sort()
        # Every candidate move priced at once from the state as it is (ops with a self-edge one by one): valid
        # until a neighbour moves.
        flat = [(i, k) for _, i, ks in cands for k in ks if not self.ea.self_edge[i]]
        at = {ik: x for x, ik in enumerate(flat)}
        pre = self.moves_of(st, np.array([i for i, _ in flat], dtype=np.int64),
                            np.array([k for _, k in flat], dtype=np.int64)) if flat else []
        stale: set[int] = set()
        for _, i, ks in cands:
            for k in ks:  # the smallest signature whose move keeps the budget
                x = at.get((i, k), -1)
                if x < 0 or i in stale:
                    if self._apply_if_met(st, i, k):
                        stale |= self.neighbours(i)
                        break
                    continue
                m = self.priced_move(st, pre, x, i, k)
                if self.excess4(*m) <= 0:
                    self.apply_priced(st, i, k, m[:3], pre[5][x], (pre[6][x], pre[7][x]))
                    stale |= self.neighbours(i)
                    break

    def _smaller(self, c: ComboClass, w: np.ndarray, now: np.ndarray) -> list[tuple[float, int, list[int]]]:
        """For each op of class c whose size some choice reduces: (the largest reduction, op, the two smallest
        such choices, smallest first), choices as `choices` offers them (each signature's smallest)."""
        n_groups, init = len(c.groups), len(c.combos)
        members = np.array(c.members)
        reps = self._reps(w)[self.cidx[id(c)]]
        ks = np.concatenate([reps, np.full((len(members), 1), init)], axis=1)
        sz = np.concatenate([np.take_along_axis(c.m[:, :, 1], reps, axis=1), self.init_arr[members, 1][:, None]],
                            axis=1)
        allowed = np.ones(sz.shape, dtype=bool)
        flt = np.array([f for f, _ in c.groups] + [True])
        for row in np.flatnonzero(np.isin(members, list(self.keep))):
            allowed[row] = flt  # a kept-float op: float signatures only, and its start if that is float
            allowed[row, n_groups] = not self.init_non_float[members[row]]
        sz = np.where(allowed, sz, np.inf)
        order = np.argsort(sz, axis=1, kind="stable")
        sz, ks = np.take_along_axis(sz, order, axis=1), np.take_along_axis(ks, order, axis=1)
        below = sz < now[members][:, None]
        return [(float(sz[r, 0] - now[members[r]]), int(members[r]), ks[r, :2][below[r, :2]].tolist())
                for r in np.flatnonzero(below[:, 0])]

    def preset_start(self, q: int) -> list[int]:
        """Every op on preset q's combo (as an override), except keep-float ops it would quantize."""
        cur, keep = [], self.initial()
        at: dict[int, dict[str, int]] = {}  # per class: combo -> index
        combos = self.t.bulk["combos"]
        for i in range(len(self.ops)):
            r = self.t.rows[i]
            ix = at.get(id(r.cls))
            if ix is None:
                ix = at[id(r.cls)] = {c: k for k, c in reversed(list(enumerate(r.combos)))}  # the first if repeated
            k = ix.get(combos[i][q], len(r.combos))
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
