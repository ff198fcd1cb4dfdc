"""The graph's activation edges as the sweep prices them: what each task reads from graph inputs and writes to graph
outputs (the model's I/O stays fp32), and each (producer, consumer, value) edge with the elements it moves per
inference (body tasks: per execution; Core ML: per run of the loop that hands the tensor on)."""

from __future__ import annotations

import numpy as np

from compiler.graph import Graph


def io_elements(g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """Elements each op reads from graph inputs / writes to graph outputs (the model's I/O stays fp32).
    A graph input is converted once, by (and charged to) its first consumer."""
    gin, gout = set(g.inputs), set(g.outputs)
    io_in = np.zeros(len(g.nodes))
    io_out = np.zeros(len(g.nodes))
    seen_in: set[str] = set()
    for i, nd in enumerate(g.nodes):
        for v in dict.fromkeys(nd.inputs):
            if v in gin and v not in seen_in:
                seen_in.add(v)
                io_in[i] += _el(g, v)
        io_out[i] = sum(_el(g, v) for v in nd.outputs if v in gout)
    return io_in, io_out


def _el(g: Graph, name: str) -> float:
    v = g.values.get(name)
    e = v.elements if v is not None else None
    return float(e or 0)


def activation_edges(g: Graph, folded: frozenset[str] = frozenset(), execs: np.ndarray | None = None,
                     bodies_on_cpu: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Activation edges, once per (producer, consumer, value); constant-folded producers carry weights, and a
    folded consumer (a Shape of a tensor of known shape) reads nothing at run time. An edge into a body task moves
    its tensor once per execution of that task (none if it never runs), or, where the runtime runs bodies on the
    CPU with their loop (`bodies_on_cpu`: Core ML, whatever the file's format), once per run of that loop."""
    index = {nd.id: i for i, nd in enumerate(g.nodes)}
    seen: set[tuple[int, int, str]] = set()
    src, dst, el = [], [], []
    for s, d, v in g.edges():
        if s in folded or d in folded:
            continue
        key = (index[s], index[d], v)
        at = _handed_by(g, index, key[0], key[1]) if bodies_on_cpu else key[1]
        runs = 1.0 if execs is None else float(execs[at]) if execs[key[0]] > 0 else 0.0
        key = (key[0], at, v)
        if key in seen or runs == 0:
            continue
        seen.add(key)
        src.append(key[0])
        dst.append(key[1])
        el.append(_el(g, v) * runs)
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(el, dtype=np.float64)


def _handed_by(g: Graph, index: dict[str, int], s: int, d: int) -> int:
    """The task an outer tensor reaches a Core ML body task through: the loop / branch (at the producer's level)
    that holds it, which runs on the CPU and hands its body the tensor once per run of its own
    (simulator/coreml_rules.py `cpu_body`), not once per trip."""
    outer = g.nodes[s].parent
    while g.nodes[d].parent and g.nodes[d].parent != outer and g.nodes[d].parent in index:
        d = index[g.nodes[d].parent]
    return d
