"""Arrays for a model's inputs, for compiling, profiling and calibrating, and the CLI's input strings.

Which shape and values each input gets (the user's, else defaults by the input's role) is decided by
`compiler.input_plan`; this module turns that into arrays. Generated data: float inputs N(0, 1) with a fixed
seed; integer inputs uniform in their plan's range (inside the table they index), else [0, 100); bool inputs
alternate False/True; an input with a value is filled with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from compiler.errors import InputSpecError
from compiler.graph import Dim, Graph
from compiler.input_plan import (  # noqa: F401  (re-exported: the defaults are part of this module's contract)
    BATCH_DEFAULT,
    DIM_DEFAULT,
    INT_HIGH,
    SEQ_DEFAULT,
    Scalar,
    Shapes,
    concrete_shapes,
    fill_values,
    plan_inputs,
    value_ranges,
)


def resolve_shapes(graph: Graph, shapes: Mapping[str, Sequence[int]] | None = None,
                   values: Mapping[str, Scalar] | None = None) -> Shapes:
    """Concrete shape of every graph input; raises InputSpecError naming the bad override."""
    return concrete_shapes(plan_inputs(graph, shapes, values))


def generate_inputs(graph: Graph, shapes: Mapping[str, Sequence[int]] | None = None,
                    values: Mapping[str, Scalar] | None = None, seed: int = 0,
                    ranges: Mapping[str, Sequence[int]] | None = None) -> dict[str, np.ndarray]:
    """Arrays for every graph input, ready for `session.run`. `ranges`: {input: [low, high)} of integer
    inputs; by default those of the input plan (which needs the graph's nodes to find them)."""
    plans = plan_inputs(graph, shapes, values)
    fills = {**fill_values(plans), **dict(values or {})}
    ranges = {**value_ranges(plans), **dict(ranges or {})}
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for name, plan in plans.items():
        shape = plan.shape
        dtype = _np_dtype(graph.values[name].dtype, name)
        if name in fills:
            feeds[name] = np.full(shape, fills[name], dtype=dtype)
        elif dtype == np.bool_:
            feeds[name] = (np.arange(int(np.prod(shape))) % 2 == 1).reshape(shape)
        elif np.issubdtype(dtype, np.integer):
            low, high = ranges.get(name, (0, INT_HIGH))
            feeds[name] = rng.integers(int(low), max(int(high), int(low) + 1), size=shape).astype(dtype)
        elif dtype == np.str_:
            feeds[name] = np.full(shape, "a", dtype=object)
        else:
            feeds[name] = rng.standard_normal(size=shape).astype(dtype)
    return feeds


def _np_dtype(name: str, input_name: str) -> np.dtype:
    if name == "string":
        return np.dtype(np.str_)
    if name == "bfloat16":
        raise InputSpecError(f"input '{input_name}' is bfloat16, which generated inputs do not support yet")
    try:
        return np.dtype(name)
    except TypeError:
        raise InputSpecError(f"input '{input_name}' has type '{name}', which Edgescope cannot generate") from None


def _fmt(shape: Sequence[Dim]) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


# -- CLI / form strings ------------------------------------------------------------------------

def _split(arg: str) -> tuple[str, str]:
    name, sep, rhs = arg.partition("=")
    if not sep or not name.strip() or not rhs.strip():
        raise InputSpecError(f"'{arg}' is not NAME=VALUE")
    return name.strip(), rhs.strip()


def parse_shape_arg(arg: str) -> tuple[str, list[int]]:
    """`x=1x3x48x320` -> ("x", [1, 3, 48, 320]); `x=` with `scalar` -> []."""
    name, rhs = _split(arg)
    if rhs.lower() == "scalar":
        return name, []
    try:
        dims = [int(d) for d in rhs.lower().replace(",", "x").split("x")]
    except ValueError:
        raise InputSpecError(f"'{arg}': a shape is sizes joined by 'x', e.g. {name}=1x3x224x224") from None
    if any(d < 0 for d in dims):
        raise InputSpecError(f"'{arg}': sizes must be >= 0")
    return name, dims


def parse_value_arg(arg: str) -> tuple[str, Scalar]:
    """`sr=16000` -> ("sr", 16000); `t=0.5` -> 0.5; `flag=true` -> True."""
    name, rhs = _split(arg)
    low = rhs.lower()
    if low in ("true", "false"):
        return name, low == "true"
    for cast in (int, float):
        try:
            return name, cast(rhs)
        except ValueError:
            pass
    raise InputSpecError(f"'{arg}': the value must be a number or true/false")


def parse_shape_args(args: Sequence[str]) -> Shapes:
    return dict(parse_shape_arg(a) for a in args)


def parse_value_args(args: Sequence[str]) -> dict[str, Scalar]:
    return dict(parse_value_arg(a) for a in args)
