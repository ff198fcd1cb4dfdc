"""Subnormal floats an attention mask makes: what they cost ORT's CPU kernels on CPUs that handle them in microcode.

Swin's shifted windows (timm and torchvision alike) add a constant mask of -100 to the attention logits of token
pairs from different regions before the Softmax. exp(-100 + logit - max) is about 4e-44: not zero, but a subnormal
float (fp32's normals end at exp(-87.3), its subnormals at exp(-103.3)). ORT does not set flush-to-zero by default
(`session.set_denormal_as_zero`), so the Softmax writes those subnormals and the MatMul by V reads them, and on an
Intel Xeon each vector instruction that meets one takes a microcode assist. On an Emerald Rapids Xeon (family 6 model
207, 2026-12-05) Swin-T's five shifted blocks profiled 1.4-2.0 ms per Softmax against 0.14-0.55 in the unshifted blocks
of the same shapes, and 6.0-6.9 ms per attention-by-V MatMul against 0.12-0.53: ~25 ns per subnormal written and ~117
ns per subnormal read by a 32-wide MatMul, the same in all three stages (wall clock, load ~3.5); the whole model was
-32..-34% of its CPU time (Sapphire Rapids, session 45: -35..-38%; a Zen 4, session 44, -12%).

Counted here (a machine-independent count; the price is calibration's, `<kind>.fp32.subnormal`, calibration_subnormal):
- a Softmax whose input is an Add of a constant whose least value lies where exp underflows to a subnormal
  (EXP_SUBNORMAL), through views: its outputs times that constant's share of nonzero elements (the mask's masked pairs;
  broadcast over heads and batch, the share holds);
- a MatMul reading such a Softmax's output (through views): its MACs times the same share (each subnormal element of A
  meets N multiply-adds, each of B M).
Masks of -inf or of the float's least value give exact zeros (no cost), and so does a -100 mask whose logits spread
beyond a few units (exp underflows to zero): the count assumes logits near the row's maximum, as random weights give.
"""

from __future__ import annotations

import math

from compiler.graph import Graph, Node

# Additive mask values x for which exp(x) is a subnormal fp32: ln(2^-149) .. ln(2^-126), shifted by the few units a
# logit lies below its row's maximum.
EXP_SUBNORMAL = (-103.0, -87.5)
_VIEWS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Identity", "Flatten"})
_SOFTMAX = frozenset({"Softmax"})
_MATMUL = frozenset({"MatMul", "FusedMatMul"})
_HOPS = 6  # producers walked back through views and Adds


_LAST: tuple[object, int, dict[str, Node]] = (None, 0, {})  # the graph last asked about, its node count, its producers


def _producers(graph: Graph) -> dict[str, Node]:
    """{value name: the node writing it}, kept for the graph last asked about: work_of asks once per task, and walking
    every node for each MatMul of a large graph is quadratic. One tuple replaced whole, so a caller on another thread
    never reads one graph's map for another's."""
    global _LAST
    last = _LAST
    if last[0] is graph and last[1] == len(graph.nodes):
        return last[2]
    prod = {v: n for n in graph.nodes for v in n.outputs if v}
    _LAST = (graph, len(graph.nodes), prod)
    return prod


def mask_share(node: Node, graph: Graph, producers: dict[str, Node] | None = None) -> float:
    """Share of a Softmax's outputs that are subnormal: the nonzero share of a constant in EXP_SUBNORMAL added to its
    input (through views and other Adds); 0 where there is none."""
    if node.op_type not in _SOFTMAX or not node.inputs:
        return 0.0
    prod = _producers(graph) if producers is None else producers
    name = node.inputs[0]
    for _ in range(_HOPS):
        p = prod.get(name)
        if p is None or not p.inputs or p.op_type not in _VIEWS | {"Add"}:
            return 0.0
        if p.op_type == "Add":
            consts = [graph.values[i] for i in p.inputs if i in graph.values and graph.values[i].weight is not None]
            for v in consts:
                w = v.weight
                if w is not None and w.elements > 1 and EXP_SUBNORMAL[0] <= w.min <= EXP_SUBNORMAL[1]:
                    return 1.0 - w.sparsity
            live = [i for i in p.inputs if i in graph.values and graph.values[i].weight is None]
            if not live:
                return 0.0
            name = live[0]
        else:
            name = p.inputs[0]
    return 0.0


def subnormals(node: Node, graph: Graph, kind: str, macs: float, out_elements: float) -> float:
    """Subnormal elements a Softmax writes (kind `softmax`) or multiply-adds a MatMul makes with them (kind `matmul`,
    an input read from such a Softmax through views); 0 for every other task."""
    if kind == "softmax":
        return out_elements * mask_share(node, graph)
    if kind != "matmul" or node.op_type not in _MATMUL:
        return 0.0
    prod = _producers(graph)
    share = 0.0
    for name in node.inputs[:2]:
        for _ in range(_HOPS):
            p = prod.get(name)
            if p is None or p.op_type not in _VIEWS or not p.inputs:
                break
            name = p.inputs[0]
        if p is not None and p.op_type in _SOFTMAX:
            share = max(share, mask_share(p, graph, prod))
    return macs * share if math.isfinite(share) else 0.0
