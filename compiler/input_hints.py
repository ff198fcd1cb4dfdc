"""Which input to set when a model does not run with the inputs it was given, and an example that fits it.

From the node the runtime names, the graph is walked back to the graph inputs that feed it. The likely cause is
an input whose shape or value was a default, the nearer the failing node the likelier; inputs the user set come
last. The example keeps the input's rank and fixed dims and names the symbolic ones (`--input audio=1x<N>`), or
asks for a value for a scalar parameter: never an image shape for a 2-D or scalar input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from compiler.graph import Graph
from compiler.input_plan import InputPlan, is_batch_name

_NODE = re.compile(r"Name:'([^']*)'")
_RESHAPE = re.compile(r"Input shape:\{([\d,\s]*)\},\s*requested shape:\{([-\d,\s]*)\}")


def suspects(graph: Graph, node_id: str | None, plans: Mapping[str, InputPlan]) -> list[str]:
    """Graph inputs upstream of the node, most likely cause first (all inputs if the node is unknown)."""
    dist = _distances(graph, node_id) if node_id else {}
    names = [n for n in graph.inputs if n in dist] or list(graph.inputs)

    def key(n: str) -> tuple[int, int, int, int]:
        p = plans.get(n)
        # values chosen by default (a fill, or integers drawn from a range) count as defaulted: an integer input's
        # values are shapes or indices, so a fixed-shape one still fails with made-up values (an Expand's `shape`)
        made_up = p is not None and p.set_by == "default" and (p.value is not None or p.high is not None)
        defaulted = p is not None and (bool(p.defaulted) or made_up)
        user = p is not None and p.set_by == "user" and not p.defaulted
        return (int(user), int(not defaulted), dist.get(n, 1 << 30), graph.inputs.index(n))

    return sorted(names, key=key)


def _distances(graph: Graph, node_id: str) -> dict[str, int]:
    """Graph input -> fewest nodes between it and the node (walking back through producers)."""
    by_id = {n.id: n for n in graph.nodes}
    by_name = {n.name: n for n in graph.nodes if n.name}
    node = by_id.get(node_id) or by_name.get(node_id)
    if node is None:
        return {}
    prod = {v: n for n in graph.nodes for v in n.outputs if v}
    inputs = set(graph.inputs)
    out: dict[str, int] = {}
    frontier, seen, depth = list(node.inputs), set(), 0
    while frontier:
        nxt = []
        for v in frontier:
            if not v or v in seen:
                continue
            seen.add(v)
            if v in inputs:
                out.setdefault(v, depth)
            elif v in prod:
                nxt.extend(prod[v].inputs)
        frontier, depth = nxt, depth + 1
    return out


def example(plan: InputPlan) -> str:
    """A CLI example that fits the input's rank and dtype, with the symbolic dims left for the user to choose."""
    fixed = plan.declared is not None and all(isinstance(d, int) for d in plan.declared)
    if plan.role == "parameter" or (plan.declared is not None and math.prod(
            d if isinstance(d, int) else 2 for d in plan.declared) == 1) or (fixed and "int" in plan.dtype):
        typical = "16000" if plan.value == 16000 else ("1.0" if plan.dtype.startswith("float") else "<integer>")
        return f"--input-value {plan.name}={typical}"
    if plan.declared is None:
        return f"--input {plan.name}=<sizes joined by x>"
    dims = []
    for axis, d in enumerate(plan.declared):
        if isinstance(d, int):
            dims.append(str(d))
        elif (d not in ("?", "") and is_batch_name(d, axis)) or (axis == 0 and len(plan.declared) >= 2):
            dims.append("1")
        else:
            dims.append(f"<{d if d not in ('?', '') else f'axis{axis}'}>")
    first = plan.declared[0] if plan.declared else None
    if plan.shape and dims == [str(x) for x in plan.shape] and plan.shape[0] == 1 and isinstance(first, str) \
            and not is_batch_name(first, 0):
        # The first dim, taken for a batch by its place only, ran at 1 and that is what failed (a GNN's node count):
        # name it rather than repeat the shape that failed.
        dims[0] = f"<{plan.declared[0] if plan.declared[0] not in ('?', '') else 'axis0'}>"
    return f"--input {plan.name}={'x'.join(dims) or 'scalar'}"


def _ran_with(plan: InputPlan) -> str:
    shape = "x".join(str(d) for d in plan.shape) or "a scalar"
    decl = "?" if plan.declared is None else "[" + ", ".join(str(d) for d in plan.declared) + "]"
    what = f"{plan.dtype} {decl}, ran at {shape}"
    if plan.value is not None:
        what += f" filled with {plan.value}"
    if plan.defaulted:
        what += "; " + ", ".join(f"{k}={v}" for k, v in plan.defaulted.items()) + " by default"
    return what


def _reshape_fix(message: str, plan: InputPlan) -> str:
    """"the model needs seq=64": when a Reshape's element counts differ by the factor one defaulted dim explains."""
    m = _RESHAPE.search(message)
    free = [(k, v) for k, v in plan.defaulted.items() if v > 1]  # batch dims default to 1
    if not m or len(free) != 1:
        return ""
    have = math.prod(int(x) for x in m.group(1).split(",") if x.strip())
    want = [int(x) for x in m.group(2).split(",") if x.strip()]
    if any(x <= 0 for x in want) or have <= 0:
        return ""
    dim, size = free[0]
    new = size * math.prod(want) / have
    if new != int(new) or new < 1:
        return ""
    return f" The model's Reshape needs {math.prod(want)} elements where these inputs give {have}: try {dim}={int(new)}."


def hint(message: str, graph: Graph, plans: Mapping[str, InputPlan]) -> str:
    """One or two sentences to append to a run failure: the input most likely at fault and how to set it."""
    # ORT names the If/Loop first, then the node inside its body that failed: walk back from the innermost one
    # (a body's node reads the parent's values, so the walk reaches the inputs the branch really uses).
    names = _NODE.findall(message)
    order = suspects(graph, _known(graph, names), plans)
    if not order or order[0] not in plans:
        return ""
    first = plans[order[0]]
    text = (f" Most likely input: '{first.name}' ({_ran_with(first)}); set it, e.g. {example(first)}"
            f" (API: \"inputs\" / \"input_values\").")
    text += _reshape_fix(message, first)
    others = [n for n in order[1:] if n in plans and (plans[n].defaulted or plans[n].set_by == "default")]
    if others:
        text += " Other inputs on that path with defaults: " + ", ".join(f"'{n}'" for n in others[:4]) + "."
    return text


def _known(graph: Graph, names: list[str]) -> str | None:
    """The innermost of the nodes named that the graph has (names from a nested run can be unknown here)."""
    ids = {n.id for n in graph.nodes} | {n.name for n in graph.nodes if n.name}
    return next((n for n in reversed(names) if n in ids), None)


def inputs_used(plans: Mapping[str, InputPlan]) -> str:
    """For failures without a node to start from (a crash): every input as it was fed."""
    return " Inputs used: " + "; ".join(f"'{p.name}' ({_ran_with(p)})" for p in plans.values()) + "."


def explain(message: str, graph: Graph | None, plans: Mapping[str, Any]) -> str:
    """`message` of a failed run or a crash, with the input to set."""
    if graph is not None and "could not run" in message:
        extra = hint(message, graph, plans)
        if extra:
            return message.rstrip(".") + "." + extra
    if "crashed" in message and plans:
        return message.rstrip(".") + "." + inputs_used(plans) + " Set the inputs the model expects with --input / " \
            "--input-value (API: \"inputs\" / \"input_values\")."
    return message


def _axes(plan: InputPlan, label: str) -> list[int]:
    if plan.declared is None:
        return []
    return [i for i, d in enumerate(plan.declared) if d == label or label == f"axis {i}"]


def required_fix(conflict: Any, graph: Graph, plans: Mapping[str, InputPlan]) -> tuple[str, list[int], str] | None:
    """(input, shape, why) that makes a Reshape conflict (compiler.concrete.Conflict) go away, when one defaulted
    dim of the likeliest input explains it: the model needs `want` elements where the inputs give `have`."""
    if any(d <= 0 for d in conflict.want):
        return None
    have, want = math.prod(conflict.have), math.prod(conflict.want)
    for name in suspects(graph, conflict.node, plans):
        p = plans.get(name)
        if p is None or p.set_by == "user":
            continue
        free = [(k, v) for k, v in p.defaulted.items() if v > 1 and _axes(p, k)]
        if len(free) != 1:
            return None
        label, size = free[0]
        new = size * want / have
        if new != int(new) or new < 1 or int(new) == size:
            return None
        shape = list(p.shape)
        for axis in _axes(p, label):
            shape[axis] = int(new)
        return name, shape, f"{label}={int(new)}: the model's Reshape '{conflict.node}' needs it"
    return None


def conflict_message(conflict: Any, graph: Graph, plans: Mapping[str, InputPlan]) -> str:
    """The one-sentence error of a model that cannot run at the inputs it was given, naming what to set."""
    def fmt(shape: list[int]) -> str:
        return "x".join(str(d) for d in shape)

    msg = (f"At these input shapes the model cannot run: its Reshape '{conflict.node}' gets {fmt(conflict.have)} "
           f"({math.prod(conflict.have)} elements) and must give {fmt(conflict.want)}.")
    return msg + hint(f"Name:'{conflict.node}'", graph, plans) + _user_dim_fix(conflict, graph, plans)


def _user_dim_fix(conflict: Any, graph: Graph, plans: Mapping[str, InputPlan]) -> str:
    """" The model needs t=20 ...": a user-set input of one symbolic dim above 1 whose size explains the conflict (a
    TorchScript export with dynamic axes still bakes the traced length into its Reshapes: set 64, it needs 20)."""
    order = suspects(graph, conflict.node, plans)
    p = plans.get(order[0]) if order else None
    if p is None or p.set_by != "user" or p.declared is None or any(d <= 0 for d in conflict.want):
        return ""
    labels = {d for i, d in enumerate(p.declared) if isinstance(d, str) and p.shape[i] > 1}
    if len(labels) != 1:
        return ""
    label = labels.pop()
    axes = _axes(p, label)
    size = p.shape[axes[0]]
    new = size * math.prod(conflict.want) / max(1, math.prod(conflict.have))
    if new != int(new) or new < 1 or int(new) == size:
        return ""
    shape = [int(new) if i in axes else d for i, d in enumerate(p.shape)]
    return (f" The model needs {label}={int(new)} (the exporter kept that size): e.g. --input "
            f"{p.name}={'x'.join(str(d) for d in shape)}.")
