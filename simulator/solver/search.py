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
                gain = e0 - self.excess(self.figures(*self.move(st, i, k)))
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
                edge = self.edges_of(st, j, st.cur[j])[0] - self.edge_lb[j]
                changed = st.cur[j] != len(self.t.rows[j].combos)
                b = (self.own_bound[j] + max(w[0], 0.0) * edge) / (EPS_COST if changed or
                                                                   objective == "most_float" else 1.0)
                if b > 1e-12:
                    heapq.heappush(heap, (-float(b), j, -1, ver[j], False))

    def prune(self, st: State, objective: str, rounds: int = 3) -> None:
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
                f = self.figures(*self.move(st, i, init))
                harm = sum(f[k] / v for k, v in self.limits.items())
                first = -(self.non_float(i, st.cur[i]) - self.non_float(i, init)) if objective == "most_float" else 0
                order.append((first, harm, i))
            for _, _, i in sorted(order):
                init = len(self.t.rows[i].combos)
                if self.excess(self.figures(*self.move(st, i, init))) <= 0:
                    self.apply(st, i, init)
                    reverted = True
            if not reverted:
                return

    def key(self, st: State, objective: str) -> tuple[float, ...]:
        ch = sum(k != len(self.t.rows[i].combos) for i, k in enumerate(st.cur))
        nf = sum(self.non_float(i, k) for i, k in enumerate(st.cur))
        size = st.size
        return {"fewest_changes": (ch, nf, size), "most_float": (nf, ch, size), "least_size": (size, ch, nf)}[objective]

    def exchange(self, st: State, objective: str, rounds: int) -> None:
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
        for _, i, ks in sorted(cands):
            for k in ks:  # the smallest signature whose move keeps the budget
                if self.excess(self.figures(*self.move(st, i, k))) <= 0:
                    self.apply(st, i, k)
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
