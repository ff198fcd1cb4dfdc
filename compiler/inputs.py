"""Inputs generated from a model's declared input shapes, for compiling and profiling.

Symbolic dimensions are resolved once per model, so the same name means the same size in
every input (`input_ids[batch, seq]` and `mask[batch, seq]` agree). Defaults:

- a dim whose name looks like a batch (`batch`, `batch_size`, `N`, `bs`, `b`), or an unnamed
  dim on axis 0, is 1 (`BATCH_DEFAULT`): profiling reports single-inference latency;
- any other symbolic dim is 16 (`DIM_DEFAULT`): small enough to stay fast, large enough that
  sequence models do real work. Users override per upload.

Overrides: `shapes={"x": [1, 3, 48, 320]}` fixes an input's shape (and so every symbolic dim
it names); `values={"sr": 16000}` fills an input with that scalar (shape from the model, or
`[]`/the override). Generated data: float inputs N(0, 1) with a fixed seed; integer inputs
in [0, 100) (valid token ids for any real vocabulary); bool inputs alternate False/True.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from compiler.errors import InputSpecError
from compiler.graph import Dim, Graph

BATCH_DEFAULT = 1
DIM_DEFAULT = 16
INT_HIGH = 100  # exclusive upper bound of generated integer inputs
_BATCH_NAMES = re.compile(r"^(batch(_?size)?|n|bs|b|num_batches|unk__0)$", re.IGNORECASE)

Shapes = dict[str, list[int]]
Scalar = int | float | bool


def is_batch_dim(name: str, axis: int) -> bool:
    return bool(_BATCH_NAMES.match(name)) or ("batch" in name.lower()) or (name in ("?", "") and axis == 0)


def resolve_shapes(graph: Graph, shapes: Mapping[str, Sequence[int]] | None = None,
                   values: Mapping[str, Scalar] | None = None, dim_default: int = DIM_DEFAULT,
                   batch_default: int = BATCH_DEFAULT) -> Shapes:
    """Concrete shape of every graph input; raises InputSpecError naming the bad override."""
    shapes, values = dict(shapes or {}), dict(values or {})
    for name in list(shapes) + list(values):
        if name not in graph.inputs:
            raise InputSpecError(f"the model has no input '{name}'; its inputs are: {', '.join(graph.inputs)}")
    dims: dict[str, int] = {}
    # Overrides first: they pin symbolic dims for every other input.
    for name, shape in shapes.items():
        declared = graph.values[name].shape
        shape = [int(d) for d in shape]
        if any(d < 0 for d in shape):
            raise InputSpecError(f"input '{name}': dimensions must be >= 0, got {shape}")
        if declared is None:
            continue
        if len(declared) != len(shape):
            raise InputSpecError(f"input '{name}' has {len(declared)} dimensions {_fmt(declared)}, "
                                 f"the override has {len(shape)}: {_fmt(shape)}")
        for axis, (d, s) in enumerate(zip(declared, shape)):
            if isinstance(d, int) and d != s:
                raise InputSpecError(f"input '{name}' has a fixed size {d} on axis {axis}; the override says {s}")
            if isinstance(d, str) and d not in ("?", ""):
                if dims.setdefault(d, s) != s:
                    raise InputSpecError(f"dimension '{d}' is {dims[d]} in one override and {s} in input '{name}'")
    out: Shapes = {}
    for name in graph.inputs:
        if name in shapes:
            out[name] = [int(d) for d in shapes[name]]
            continue
        declared = graph.values[name].shape
        if declared is None:
            if name in values:
                out[name] = []  # a scalar value with no declared rank: pass a scalar
                continue
            raise InputSpecError(f"input '{name}' has no declared shape; set it, e.g. {name}=1x3x224x224")
        resolved = []
        for axis, d in enumerate(declared):
            if isinstance(d, int):
                resolved.append(d)
                continue
            default = batch_default if is_batch_dim(d, axis) else dim_default
            if d in ("?", ""):
                resolved.append(default)  # anonymous: nothing to share with other inputs
            else:
                resolved.append(dims.setdefault(d, default))
        out[name] = resolved
    return out


def generate_inputs(graph: Graph, shapes: Mapping[str, Sequence[int]] | None = None,
                    values: Mapping[str, Scalar] | None = None, seed: int = 0,
                    dim_default: int = DIM_DEFAULT) -> dict[str, np.ndarray]:
    """Arrays for every graph input, ready for `session.run`."""
    concrete = resolve_shapes(graph, shapes, values, dim_default=dim_default)
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for name, shape in concrete.items():
        dtype = _np_dtype(graph.values[name].dtype, name)
        if values and name in values:
            feeds[name] = np.full(shape, values[name], dtype=dtype)
        elif dtype == np.bool_:
            feeds[name] = (np.arange(int(np.prod(shape))) % 2 == 1).reshape(shape)
        elif np.issubdtype(dtype, np.integer):
            feeds[name] = rng.integers(0, INT_HIGH, size=shape).astype(dtype)
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
