"""Node ids, execution order and control-flow bodies of an ONNX model, as one flat walk.

`If` (`then_branch`, `else_branch`), `Loop` and `Scan` (`body`) hold their bodies as graph attributes.
A body's nodes join the one `Graph` right after the node that runs them (their *parent*), bodies of
bodies recursively, so the walk's order is an execution order with each body nested under its parent.

Ids: a top-level node keeps its name when that is unique and non-empty, else `<op_type>_<index>`
(as before bodies were read, so stored ids stay valid). A body node keeps its name when that is unique
in its body and taken by no node before it; else it is `<parent id>/<branch>/<local id>`.

Value names: ONNX lets sibling bodies (the two branches of an `If`) define the same name. A name a
body defines that another scope already defined is given `<parent id>/<branch>/<name>` inside that
body (and the bodies nested in it), so one name still means one value in the flat `Graph`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Graph attributes holding bodies, in the order their nodes are placed (others follow, in file order).
BRANCH_ORDER = ("then_branch", "else_branch", "body")
CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan"})


@dataclass
class Body:
    """A body graph, met just before its nodes."""

    graph: Any  # onnx GraphProto
    parent: str  # id of the node that runs it
    branch: str  # the attribute holding it
    rename: dict[str, str]  # value names of this scope -> unique names in the flat Graph


@dataclass
class Placed:
    """A node in the walk's order."""

    proto: Any  # onnx NodeProto
    id: str
    parent: str = ""
    branch: str = ""
    rename: dict[str, str] = field(default_factory=dict)
    bodies: list[tuple[str, Any]] = field(default_factory=list)  # (attribute, GraphProto) it runs

    def value(self, name: str) -> str:
        return self.rename.get(name, name) if name else name


def assign_ids(names: list[str], op_types: list[str]) -> list[str]:
    """Node name when unique and non-empty, else `<op_type>_<index>` (made unique if that collides)."""
    counts = Counter(names)
    reserved = {n for n in names if n and counts[n] == 1}
    used: set[str] = set()
    ids = []
    for i, (name, op) in enumerate(zip(names, op_types)):
        if name in reserved:
            nid = name
        else:
            nid = f"{op}_{i}"
            k = 1
            while nid in reserved or nid in used:
                nid = f"{op}_{i}_{k}"
                k += 1
        used.add(nid)
        ids.append(nid)
    return ids


_GRAPH, _GRAPHS = 5, 10  # onnx.AttributeProto.GRAPH, GRAPHS


def bodies(node: Any) -> list[tuple[str, Any]]:
    """(attribute name, GraphProto) of a node's body graphs, in placement order."""
    found = []
    for a in node.attribute:
        t = a.type
        if t == _GRAPH:
            found.append((a.name, a.g))
        elif t == _GRAPHS:
            found += [(f"{a.name}.{k}", g) for k, g in enumerate(a.graphs)]
    if len(found) > 1:
        rank = {b: i for i, b in enumerate(BRANCH_ORDER)}
        found.sort(key=lambda ag: rank.get(ag[0], len(rank)))
    return found


def all_bodies(g: Any) -> list[Any]:
    """Every body graph in `g`, nested ones too."""
    out = []
    for n in g.node:
        for _, b in bodies(n):
            out += [b, *all_bodies(b)]
    return out


def _defined_here(g: Any) -> list[str]:
    names = [i.name for i in g.input] + [t.name for t in g.initializer] + [t.values.name for t in g.sparse_initializer]
    names += [o for n in g.node for o in n.output]
    return [n for n in names if n]


def outer_refs(g: Any) -> set[str]:
    """Names a body reads from enclosing scopes (its nested bodies' included)."""
    defined = set(_defined_here(g))
    used = {o.name for o in g.output}
    for n in g.node:
        used.update(i for i in n.input if i)
        for _, b in bodies(n):
            used |= outer_refs(b)
    return used - defined


def _reads(n: Any) -> list[str]:
    """A node's inputs and, for a control-flow node, the outer values its bodies read (implicit inputs)."""
    ins = [i for i in n.input if i]
    for _, b in bodies(n):
        ins += sorted(outer_refs(b))
    return ins


def topological(nodes: list[Any], available: set[str], reads: list[list[str]] | None = None) -> list[int]:
    """Indices in execution order; file order when it already is one (the normal case). `reads`: each node's
    inputs, implicit ones included (default: `_reads`)."""
    seen = set(available)
    reads = reads if reads is not None else [_reads(n) for n in nodes]
    ok = True
    for n, r in zip(nodes, reads):
        if any(i not in seen for i in r):
            ok = False
            break
        seen.update(n.output)
    if ok:
        return list(range(len(nodes)))
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    order, done, state = [], set(), {}
    for start in range(len(nodes)):  # iterative DFS keeps file order among independent nodes
        stack = [(start, False)]
        while stack:
            i, expanded = stack.pop()
            if i in done:
                continue
            if expanded:
                done.add(i)
                order.append(i)
                continue
            if state.get(i):
                continue  # a cycle: leave the rest in file order
            state[i] = True
            stack.append((i, True))
            for inp in reversed(reads[i]):
                j = producer.get(inp)
                if j is not None and j not in done:
                    stack.append((j, False))
    return order


def _level(g: Any, parent: str, branch: str, taken: set[str]) -> list[tuple[Any, str]]:
    """(node, id) of one graph's own nodes in execution order."""
    nodes = list(g.node)
    produced = {o for n in nodes for o in n.output if o}
    reads = [_reads(n) for n in nodes]
    available = {i for r in reads for i in r} - produced
    available |= {i.name for i in g.input} | {t.name for t in g.initializer}
    order = topological(nodes, available, reads)
    local = assign_ids([nodes[i].name for i in order], [nodes[i].op_type for i in order])
    out = []
    for i, lid in zip(order, local):
        nid = lid
        if parent:
            name = nodes[i].name
            nid = name if name and name == lid and name not in taken else f"{parent}/{branch}/{lid}"
            k = 1
            while nid in taken:
                nid = f"{parent}/{branch}/{lid}_{k}"
                k += 1
        taken.add(nid)
        out.append((nodes[i], nid))
    return out


def walk(g: Any) -> list[Placed | Body]:
    """The model graph's nodes and, after each control-flow node, its bodies and their nodes."""
    out: list[Placed | Body] = []
    seen = set(_defined_here(g))
    _walk(g, "", "", {}, seen, set(), out)
    return out


def _walk(g: Any, parent: str, branch: str, rename: dict[str, str], seen: set[str], taken: set[str],
          out: list[Placed | Body]) -> None:
    for proto, nid in _level(g, parent, branch, taken):
        placed = Placed(proto, nid, parent, branch, rename, bodies(proto))
        out.append(placed)
        for attr, body in placed.bodies:
            scope = dict(rename)
            for name in _defined_here(body):
                if name in seen:
                    new, k = f"{nid}/{attr}/{name}", 1
                    while new in seen:
                        new, k = f"{nid}/{attr}/{name}_{k}", k + 1
                    scope[name] = new
                    name = new
                seen.add(name)
            out.append(Body(body, nid, attr, scope))
            _walk(body, nid, attr, scope, seen, taken, out)


def node_ids(model: Any) -> list[str]:
    """Graph ids of `model.graph.node`, in file order (what `load` assigns)."""
    ids = {id(p.proto): p.id for p in walk(model.graph) if isinstance(p, Placed) and not p.parent}
    return [ids[id(n)] for n in model.graph.node]


def name_by_id(model: Any) -> bool:
    """Name every node (bodies' too) by its Graph id, in place, where some name differs. ORT rejects
    repeated names, and profiler events carry names only: names equal to ids key straight into the Graph.
    Returns whether anything was renamed."""
    names = [n.name for n in model.graph.node]
    if all(names) and len(set(names)) == len(names) and not any(bodies(n) for n in model.graph.node):
        return False  # each id is its node's name (assign_ids) and there is no body: nothing to walk
    changed = False
    for p in walk(model.graph):
        if isinstance(p, Placed) and p.proto.name != p.id:
            p.proto.name = p.id
            changed = True
    return changed
