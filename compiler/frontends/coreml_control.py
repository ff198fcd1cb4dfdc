"""Core ML control flow: what a loop's trip count and a branch's condition are, where the file fixes them.

coremltools writes a PyTorch RNN it cannot map to one op (a GRU; a scripted step loop) as a counted loop
(coremltools 9.0, converters/mil/frontend/torch/ops.py `gru` -> `_utils.while_loop`; mil/mil/ops/defs/iOS15/
control_flow.py `while_loop`): the loop variables start as constants (a counter 0 and a zero state), the condition
block is one comparison of the counter with a constant (`less(i, 200)`), and the body adds a constant to the counter.
A NeuralNetwork file has the same as a `loop` layer: `copy` of a `loadConstantND` into the counter before it, a
`lessThan` against a `loadConstantND` in its condition network, an `add` (alpha) and `copy` back in its body.
The trip count then follows from the file alone, as an ONNX Loop's constant M does (simulator/control_flow.py
reads it from the node's `trip_count` attribute). Anything else (a data-dependent stop, a counter that is not
constant) returns None: the loop's work is then costed at the stated default and its note says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

_COMPARE = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=", "not_equal": "!=",
            "lessThan": "<", "lessEqual": "<=", "greaterThan": ">", "greaterEqual": ">=", "notEqual": "!="}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
MAX_TRIPS = 1 << 24  # a bound above this is a "while true" sentinel, not a count


def scalar(v: Any) -> float | None:
    """A literal as one number: 3, [3], [[3.0]]; None for anything else."""
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def trips(init: float | None, op: str | None, bound: float | None, step: float | None) -> int | None:
    """Iterations of `i = init; while i <op> bound: i += step`; None when one of them is unknown or it never ends."""
    if init is None or bound is None or step is None or op is None or step == 0:
        return None
    if op in (">", ">="):  # counting down
        init, bound, step, op = -init, -bound, -step, "<" if op == ">" else "<="
    if op == "!=":
        n = (bound - init) / step
        return int(n) if n >= 0 and n == int(n) and n <= MAX_TRIPS else None
    if step < 0:
        return None if init < bound or (op == "<=" and init == bound) else 0
    span = bound - init + (step if op == "<=" else 0.0)
    n = max(0, math.ceil(span / step - 1e-9))
    return n if n <= MAX_TRIPS else None


def mil_trip_count(loop_vars: Sequence[str], cond: Any, body: Any, consts: Mapping[str, Any]) -> int | None:
    """A MIL `while_loop`'s trip count from its loop variables' initial values (`loop_vars`, outer names), its
    condition block `cond` and body block `body` (MIL protobuf Blocks), and the literal constants read so far."""
    if len(cond.outputs) != 1 or len(cond.inputs) != len(loop_vars) or len(body.inputs) != len(loop_vars):
        return None
    cmp_op = next((op for op in cond.operations if op.outputs and op.outputs[0].name == cond.outputs[0]), None)
    if cmp_op is None or cmp_op.type not in _COMPARE:
        return None
    x, y = (_arg(cmp_op, p) for p in ("x", "y"))
    cond_in = [i.name for i in cond.inputs]
    local = {**consts, **_block_literals(cond)}
    if x in cond_in and y in local:
        k, rel, bound = cond_in.index(x), _COMPARE[cmp_op.type], scalar(local[y])
    elif y in cond_in and x in local:
        k, rel, bound = cond_in.index(y), _FLIP[_COMPARE[cmp_op.type]], scalar(local[x])
    else:
        return None
    init = scalar(consts.get(loop_vars[k]))
    return trips(init, rel, bound, _mil_step(body, k, {**consts, **_block_literals(body)}))


def _mil_step(body: Any, k: int, literals: Mapping[str, Any]) -> float | None:
    """What the body adds to loop variable k each trip (`add(i, c)`, `sub(i, c)`), else None."""
    if k >= len(body.outputs):
        return None
    var, out = body.inputs[k].name, body.outputs[k]
    op = next((o for o in body.operations if o.outputs and o.outputs[0].name == out), None)
    if op is None or op.type not in ("add", "sub"):
        return None
    x, y = _arg(op, "x"), _arg(op, "y")
    if x == var and y in literals:
        c = scalar(literals[y])
        return None if c is None else (c if op.type == "add" else -c)
    if y == var and x in literals and op.type == "add":
        return scalar(literals[x])
    return None


def mil_branch(pred: str, consts: Mapping[str, Any]) -> str | None:
    """The branch a MIL `cond` takes when its predicate is a constant."""
    p = scalar(consts.get(pred))
    return None if p is None else ("then_branch" if p else "else_branch")


def _arg(op: Any, param: str) -> str:
    arg = op.inputs.get(param)
    return arg.arguments[0].name if arg is not None and len(arg.arguments) == 1 else ""


def _block_literals(block: Any) -> dict[str, Any]:
    """Small immediate constants a block defines itself (a bound coremltools left inside the condition)."""
    out: dict[str, Any] = {}
    for op in block.operations:
        if op.type != "const" or len(op.outputs) != 1 or "val" not in op.attributes:
            continue
        val = op.attributes["val"]
        if not val.HasField("immediateValue"):
            continue
        t = val.immediateValue.tensor
        kind = t.WhichOneof("value")
        items = list(getattr(t, kind).values) if kind in ("ints", "floats", "longInts", "doubles", "bools") else []
        if len(items) == 1:
            out[op.outputs[0].name] = items[0]
    return out


# -- NeuralNetwork `loop` / `branch` layers ------------------------------------------------------------

def nn_constant(layer: Any) -> float | None:
    """The one number a `loadConstantND` / `loadConstant` layer holds, else None."""
    kind = layer.WhichOneof("layer")
    if kind not in ("loadConstantND", "loadConstant"):
        return None
    data = getattr(layer, kind).data
    vals = list(data.floatValue)
    return float(vals[0]) if len(vals) == 1 else None


def nn_trip_count(loop: Any, known: Mapping[str, float]) -> int | None:
    """A `loop` layer's trip count: `maxLoopIterations` when no condition network stops it earlier, else the
    counted form above. `known`: outer values holding one constant number just before the loop."""
    cond_layers = list(loop.conditionNetwork.layers)
    if not cond_layers and not loop.conditionVar:
        return int(loop.maxLoopIterations) if 0 < loop.maxLoopIterations <= MAX_TRIPS else None
    local: dict[str, float] = {}  # the bound: a constant the condition network loads itself
    cmp_layer = None
    for layer in cond_layers:
        c = nn_constant(layer)
        if c is not None:
            local[layer.output[0]] = c
        elif layer.output and layer.output[0] == loop.conditionVar:
            cmp_layer = layer
    kind = cmp_layer.WhichOneof("layer") if cmp_layer is not None else None
    if cmp_layer is None or kind not in _COMPARE:
        return None
    ins = list(cmp_layer.input)
    if len(ins) == 1:  # compared with the layer's alpha
        var, rel, bound = ins[0], _COMPARE[kind], float(getattr(cmp_layer, kind).alpha)
    elif len(ins) == 2 and ins[1] in local and ins[0] not in local:
        var, rel, bound = ins[0], _COMPARE[kind], local[ins[1]]
    elif len(ins) == 2 and ins[0] in local and ins[1] not in local:
        var, rel, bound = ins[1], _FLIP[_COMPARE[kind]], local[ins[0]]
    else:
        return None
    n = trips(known.get(var), rel, bound, _nn_step(loop.bodyNetwork.layers, var))
    return n if loop.maxLoopIterations <= 0 or n is None else min(n, int(loop.maxLoopIterations))


def _nn_step(layers: Sequence[Any], var: str) -> float | None:
    """What a body adds to `var`: an `add` of var with alpha (or a constant), copied back into var."""
    made = {layer.output[0]: layer for layer in layers if layer.output}
    writer = next((layer for layer in reversed(layers) if var in layer.output), None)
    if writer is None or writer.WhichOneof("layer") != "copy" or len(writer.input) != 1:
        return None
    add = made.get(writer.input[0])
    if add is None or add.WhichOneof("layer") != "add" or var not in add.input:
        return None
    if len(add.input) == 1:
        return float(add.add.alpha)
    other = next((i for i in add.input if i != var), "")
    c = nn_constant(made[other]) if other in made else None
    return c
