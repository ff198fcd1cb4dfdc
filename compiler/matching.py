"""Match the ops of two versions of a network (resnet18 vs resnet34, a retrained export, a renamed wrapper).

Pure: the input is each graph's ops (id, name, type, namespace, producers of its inputs) in execution order and
the output is a list of pairs, each saying how it was found. Three passes, most certain first:

1. **name**: same namespace, name and type, where that key is unique on both sides (exports keep module paths).
   A name that is only the type and a counter (`Identity_3`, `Conv_12`) is an exporter's numbering, not a name.
2. **structure**: from every matched pair, an unmatched consumer (or producer) on each side of the same type, fed
   through the same input slot, is the same op. Propagated to a fixed point, so a graph whose names all changed
   (a wrapper module prefixes every path) still matches from its inputs on. Graph-input consumers seed it.
3. **order**: what is left, per namespace, aligned by op type in execution order (difflib's longest matching
   blocks), for blocks whose structure changed around them.

Everything else is added (only in b) or removed (only in a).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Literal

How = Literal["name", "structure", "order", "added", "removed"]


@dataclass(frozen=True, slots=True)
class OpNode:
    id: str
    name: str
    type: str
    namespace: str = ""
    inputs: tuple[str, ...] = ()  # ids of the ops producing its inputs, in input-slot order


@dataclass(frozen=True, slots=True)
class Pair:
    a: str | None
    b: str | None
    how: How


@dataclass(slots=True)
class Matching:
    pairs: list[Pair] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        c: dict[str, int] = {"name": 0, "structure": 0, "order": 0, "added": 0, "removed": 0}
        for p in self.pairs:
            c[p.how] += 1
        return c


def ops_from_documents(ops: Sequence[dict[str, object]], edges: Iterable[tuple[str, str]]) -> list[OpNode]:
    """OpNodes from an ops document's rows and (src id, dst id) edges in the graph's edge order."""
    preds: dict[str, list[str]] = defaultdict(list)
    for src, dst in edges:
        preds[dst].append(src)
    return [OpNode(id=str(o["id"]), name=str(o.get("name") or ""), type=str(o.get("type") or ""),
                   namespace=str(o.get("namespace") or ""), inputs=tuple(preds.get(str(o["id"]), ())))
            for o in ops]


class _Side:
    def __init__(self, ops: Sequence[OpNode]) -> None:
        self.ops = list(ops)
        self.by_id = {o.id: o for o in self.ops}
        self.pos = {o.id: i for i, o in enumerate(self.ops)}
        # consumers: producer id -> [(consumer id, input slot)]
        self.consumers: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for o in self.ops:
            for slot, p in enumerate(o.inputs):
                if p in self.by_id:
                    self.consumers[p].append((o.id, slot))


def _numbered(o: OpNode) -> bool:
    head, _, tail = o.name.rpartition("_")
    return head == o.type and tail.isdigit()


def _unique(ops: Sequence[OpNode]) -> dict[tuple[str, str, str], str]:
    seen: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for o in ops:
        if o.name and not _numbered(o):
            seen[(o.namespace, o.name, o.type)].append(o.id)
    return {k: v[0] for k, v in seen.items() if len(v) == 1}


def match_ops(a_ops: Sequence[OpNode], b_ops: Sequence[OpNode]) -> Matching:
    a, b = _Side(a_ops), _Side(b_ops)
    links = _Links()
    _match_names(a, b, links)
    _match_structure(a, b, links)
    _match_order(a, b, links)
    return Matching(_pairs(a, b, links))


@dataclass(slots=True)
class _Links:
    """The pairs found so far, both ways, and how each was found (keyed by the a-side op)."""

    a2b: dict[str, str] = field(default_factory=dict)
    b2a: dict[str, str] = field(default_factory=dict)
    how: dict[str, How] = field(default_factory=dict)

    def link(self, x: str, y: str, kind: How) -> None:
        self.a2b[x], self.b2a[y], self.how[x] = y, x, kind


def _match_names(a: _Side, b: _Side, links: _Links) -> None:
    """Pass 1: same namespace, name and type, unique on both sides."""
    ua, ub = _unique(a.ops), _unique(b.ops)
    for key, x in ua.items():
        y = ub.get(key)
        if y is not None:
            links.link(x, y, "name")


def _match_structure(a: _Side, b: _Side, links: _Links) -> None:
    """Pass 2: from the matched pairs and from the ops fed by graph inputs only, to a fixed point."""
    ra, rb = _roots(a), _roots(b)
    for t, xs in ra.items():
        ys = rb.get(t, [])
        if len(xs) == len(ys):  # same number of graph-input consumers of this type: pair them in order
            for x, y in zip(xs, ys, strict=True):
                if x not in links.a2b and y not in links.b2a:
                    links.link(x, y, "structure")
    queue = list(links.a2b.items())
    while queue:
        x, y = queue.pop()
        ca, cb = _unmatched_neighbours(a, x, links.a2b), _unmatched_neighbours(b, y, links.b2a)
        for key, xs in ca.items():
            ys = cb.get(key)
            if ys and len(xs) == 1 and len(ys) == 1 and xs[0] not in links.a2b and ys[0] not in links.b2a:
                links.link(xs[0], ys[0], "structure")
                queue.append((xs[0], ys[0]))


def _unmatched_neighbours(side: _Side, oid: str, matched: dict[str, str]) -> dict[tuple[str, int, str], list[str]]:
    """Unmatched neighbours of oid keyed by (direction, slot, type)."""
    out: dict[tuple[str, int, str], list[str]] = defaultdict(list)
    for c, slot in side.consumers.get(oid, ()):
        if c not in matched:
            out[("down", slot, side.by_id[c].type)].append(c)
    for slot, p in enumerate(side.by_id[oid].inputs):
        if p in side.by_id and p not in matched:
            out[("up", slot, side.by_id[p].type)].append(p)
    return out


def _roots(side: _Side) -> dict[str, list[str]]:
    """Ops fed by graph inputs only, by type, in execution order."""
    r: dict[str, list[str]] = defaultdict(list)
    for o in side.ops:
        if not any(p in side.by_id for p in o.inputs):
            r[o.type].append(o.id)
    return r


def _match_order(a: _Side, b: _Side, links: _Links) -> None:
    """Pass 3: leftovers per namespace, aligned by type."""
    left_a: dict[str, list[OpNode]] = defaultdict(list)
    left_b: dict[str, list[OpNode]] = defaultdict(list)
    for o in a.ops:
        if o.id not in links.a2b:
            left_a[o.namespace].append(o)
    for o in b.ops:
        if o.id not in links.b2a:
            left_b[o.namespace].append(o)
    for ns, xs in left_a.items():
        ys = left_b.get(ns)
        if not ys:
            continue
        sm = SequenceMatcher(None, [o.type for o in xs], [o.type for o in ys], autojunk=False)
        for blk in sm.get_matching_blocks():
            for k in range(blk.size):
                links.link(xs[blk.a + k].id, ys[blk.b + k].id, "order")


def _pairs(a: _Side, b: _Side, links: _Links) -> list[Pair]:
    """Pairs in a's execution order; b-only ops placed after the b-op matched just before them."""
    pairs: list[Pair] = []
    added_after: dict[str | None, list[str]] = defaultdict(list)
    prev: str | None = None
    for o in b.ops:
        if o.id in links.b2a:
            prev = links.b2a[o.id]
        else:
            added_after[prev].append(o.id)
    pairs += [Pair(None, y, "added") for y in added_after.get(None, [])]
    for o in a.ops:
        y = links.a2b.get(o.id)
        pairs.append(Pair(o.id, y, links.how[o.id]) if y is not None else Pair(o.id, None, "removed"))
        pairs += [Pair(None, y2, "added") for y2 in added_after.get(o.id, [])]
    return pairs
