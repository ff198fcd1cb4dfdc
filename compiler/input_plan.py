"""The concrete inputs a model is analysed with: one shape and one way to fill every graph input.

A user's shapes and values come first. Every other symbolic dim gets a default by the role of its input, read
from the graph itself, and the same dim name gets the same size in every input:

- batch: a dim named like a batch, or the first dim of an input of rank 2 or more that no other axis shares: 1
  (single-inference latency). A KV cache ([layers, batch, heads, past, head_dim] or [batch, heads, past, head_dim])
  leads with its batch too: a dim that is the first symbolic one (fixed dims before it) of every input it
  sits in, at axis 0 of one of them or before another symbolic dim of a 4-D or larger one, is a batch;
- image: a 4-D float input with a fixed channel axis of 1 to 4 (NCHW or NHWC), not named like a cache or state
  (`past_key_values.0.key`, `cache_k`: [batch, 4 heads, past, 64] is none): height and width 224, or the size
  the model's metadata gives (`image_size`, `input_size`, `img_size`, `resolution`: `640` or `640x480`);
- audio: a waveform input (named audio, wav, waveform, pcm, speech, samples, input_values, or any float
  [samples], [batch, samples] or [batch, 1, samples] input beside one named like a sample rate): 16000 samples
  (1 s at 16 kHz);
- sequence: any other symbolic dim of token ids or features: 128 (a common sequence length);
- anything else: 16.

Values: integer ids that feed a `Gather` are drawn inside the table they index (a 2-row token-type table gets 0
or 1); masks are all ones; a 1-element integer input is a parameter: the constant it is compared with, 16000 when
it is named like a sample rate, else 1. Other inputs are random (floats N(0, 1), integers in [0, 100)).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.errors import InputSpecError
from compiler.graph import Dim, Graph, Node

BATCH_DEFAULT = 1
IMAGE_DEFAULT = 224
AUDIO_DEFAULT = 16000
SEQ_DEFAULT = 128
DIM_DEFAULT = 16
SAMPLE_RATE_DEFAULT = 16000
INT_HIGH = 100  # exclusive upper bound of generated integer inputs that index nothing we can see

Scalar = int | float | bool
Shapes = dict[str, list[int]]

_BATCH = re.compile(r"batch", re.IGNORECASE)
_BATCH_SHORT = re.compile(r"^(n|bs|b|unk__0)$", re.IGNORECASE)  # a batch only as the first dim
_AUDIO = re.compile(r"audio|wav|waveform|pcm|speech|samples|input_values|signal", re.IGNORECASE)
_RATE = re.compile(r"^(sr|fs|sample_?rate|sampling_?rate|rate)$", re.IGNORECASE)
_MASK = re.compile(r"mask", re.IGNORECASE)
# A decoder's cache or recurrent state: [batch, heads, past, head_dim] is no image, even with 1-4 heads.
_STATE = re.compile(r"past|cache|present|(^|[._])(kv|state|h|c)($|[._])", re.IGNORECASE)
_IMAGE_META = re.compile(r"(image|img|input)_?(size|shape|resolution)|resolution", re.IGNORECASE)
# Ops an integer input passes through unchanged in value on its way to a Gather's indices.
_INDEX_PASS = frozenset({"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Expand", "Slice",
                         "Transpose", "Concat", "Tile"})
_FLOAT = ("float32", "float16", "bfloat16", "float64")
_ROLE_ORDER = ("image", "audio", "ids", "sequence", "mask", "tensor", "parameter")


@dataclass(slots=True)
class InputPlan:
    """How one graph input is fed. `defaulted`: symbolic dim (its name, or `axis N`) -> size chosen by default."""

    name: str
    dtype: str
    declared: list[Dim] | None
    shape: list[int]
    role: str  # image, audio, sequence, ids, mask, parameter, tensor
    set_by: str  # "user" (shape or value given), "default"
    value: Scalar | None = None  # every element is this value
    low: int | None = None  # integer inputs: drawn from [low, high)
    high: int | None = None
    defaulted: dict[str, int] = field(default_factory=dict)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "declared": self.declared, "shape": self.shape,
                "role": self.role, "set_by": self.set_by, "value": self.value,
                "range": [self.low, self.high] if self.high is not None else None,
                "defaulted": self.defaulted, "note": self.note}


def is_batch_name(name: str, axis: int = 0) -> bool:
    return bool(_BATCH.search(name)) or (axis == 0 and bool(_BATCH_SHORT.match(name)))


_TORCHSCRIPT_DIM = re.compile(r"^.+_dynamic_axes_(\d+)$")


def dim_key(name: str, axis: int) -> str:
    """What a symbolic dim is shared by. torch.onnx's TorchScript exporter names each input's dynamic axes on
    its own (`input_ids_dynamic_axes_2`, `attention_mask_dynamic_axes_2`): the same numbered axis at the same
    position is taken as one dim (a batch, a sequence), so setting one input sets the others."""
    m = _TORCHSCRIPT_DIM.match(name)
    return f"dynamic_axes_{m.group(1)}@{axis}" if m else name


def plan_inputs(graph: Graph, shapes: Mapping[str, Sequence[int]] | None = None,
                values: Mapping[str, Scalar] | None = None) -> dict[str, InputPlan]:
    """The plan of every graph input; raises InputSpecError naming a bad override."""
    shapes, values = dict(shapes or {}), dict(values or {})
    for name in list(shapes) + list(values):
        if name not in graph.inputs:
            raise InputSpecError(f"the model has no input '{name}'; its inputs are: {', '.join(graph.inputs)}")
    dims = _pinned_dims(graph, shapes)
    axes_of = _axes_by_dim(graph)
    leading = _leading_dims(graph)
    counted = _counted_dims(graph)
    image = _image_size(graph.metadata)
    roles = {n: _role(n, graph) for n in graph.inputs}
    # The most specific roles claim shared dim names first.
    order = sorted(graph.inputs, key=lambda n: _ROLE_ORDER.index(roles[n]))
    out: dict[str, InputPlan] = {}
    for name in order:
        v = graph.values[name]
        plan = InputPlan(name=name, dtype=v.dtype, declared=list(v.shape) if v.shape is not None else None,
                         shape=[], role=roles[name], set_by="user" if name in shapes or name in values else "default")
        if name in shapes:
            plan.shape = [int(d) for d in shapes[name]]
        elif v.shape is None:
            if name not in values:
                raise InputSpecError(f"input '{name}' ({v.dtype}) declares no shape; set one, "
                                     f"e.g. --input {name}=1x16")
            plan.shape = []
        else:
            for axis, d in enumerate(v.shape):
                if isinstance(d, int):
                    plan.shape.append(d)
                    continue
                label = d if d not in ("?", "") else f"axis {axis}"
                key = dim_key(d, axis)
                if key in dims:
                    plan.shape.append(dims[key])
                    continue
                size = _default_dim(d, axis, v.shape, plan.role, axes_of, leading, counted, image)
                if d not in ("?", ""):
                    dims[key] = size
                plan.shape.append(size)
                plan.defaulted[label] = size
        _fill(plan, graph, values)
        out[name] = plan
    for name, plan in out.items():
        _bound_by_dims(plan, graph, dims)
    return {n: out[n] for n in graph.inputs}


def _bound_by_dims(plan: InputPlan, g: Graph, dims: Mapping[str, int]) -> None:
    """Integer indices of a computed tensor's symbolic axis are drawn below that axis' planned size."""
    if plan.value is not None or plan.high is None:
        return
    sizes = [dims[b] for b in _gather_bounds(plan.name, g) if isinstance(b, str) and b in dims]
    if sizes and min(sizes) < plan.high:
        plan.high = min(sizes)
        plan.note = "; ".join(x for x in (plan.note, f"indices below the {plan.high} rows they gather") if x)


def concrete_shapes(plans: Mapping[str, InputPlan]) -> Shapes:
    return {n: list(p.shape) for n, p in plans.items()}


def fill_values(plans: Mapping[str, InputPlan]) -> dict[str, Scalar]:
    return {n: p.value for n, p in plans.items() if p.value is not None}


def value_ranges(plans: Mapping[str, InputPlan]) -> dict[str, list[int]]:
    return {n: [p.low or 0, p.high] for n, p in plans.items() if p.high is not None and p.value is None}


def stored_inputs(inputs: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """`input_shapes`, `input_values`, `input_ranges` (as ProfileSettings takes them) of a stored plan (a job's
    `inputs`, `InputPlan.to_json` per input): run a model, or a file exported from it, as its analysis did."""
    inputs = inputs or []
    return {"input_shapes": {p["name"]: list(p["shape"]) for p in inputs},
            "input_values": {p["name"]: p["value"] for p in inputs if p.get("value") is not None},
            "input_ranges": {p["name"]: list(p["range"]) for p in inputs
                             if p.get("range") and p.get("value") is None}}


# -- roles -------------------------------------------------------------------------------------

def _role(name: str, g: Graph) -> str:
    v = g.values[name]
    shape, dtype = v.shape, v.dtype
    integer = dtype.startswith(("int", "uint"))
    if shape is not None and (len(shape) == 0 or all(d == 1 for d in shape)) and integer:
        return "parameter"
    if _MASK.search(name):
        return "mask"
    if shape is not None and len(shape) == 4 and dtype in _FLOAT and (_channels(shape[1]) or _channels(shape[3])) \
            and not _STATE.search(name):
        return "image"
    if dtype in _FLOAT and _AUDIO.search(name) and shape is not None and len(shape) <= 3:
        return "audio"
    if dtype in _FLOAT and _waveform_shape(shape) and any(_RATE.match(i) for i in g.inputs):
        return "audio"  # beside a sample-rate input, a float signal of samples is the waveform, whatever its name
    if integer and _gather_bounds(name, g):
        return "ids"
    if shape is not None and any(isinstance(d, str) for d in shape[1:]):
        return "sequence"
    return "tensor"


def _waveform_shape(shape: list[Dim] | None) -> bool:
    """[samples], [batch, samples] or [batch, 1, samples] with the samples axis symbolic (not [batch, T, 80] frames
    of features)."""
    if shape is None or not 1 <= len(shape) <= 3 or not isinstance(shape[-1], str):
        return False
    return len(shape) < 3 or shape[1] == 1


def _channels(d: Dim) -> bool:
    return isinstance(d, int) and 1 <= d <= 4


def _default_dim(d: str, axis: int, shape: list[Dim], role: str, axes_of: dict[str, set[int]],
                 leading: frozenset[str], counted: Mapping[str, str], image: tuple[int, int] | None) -> int:
    named = d not in ("?", "")
    if named and dim_key(d, axis) in counted:
        return SEQ_DEFAULT
    if (named and is_batch_name(d, axis)) or (axis == 0 and len(shape) >= 2 and (
            not named or axes_of.get(dim_key(d, axis)) == {0})) or (named and dim_key(d, axis) in leading):
        return BATCH_DEFAULT
    if role == "image":
        spatial = [i for i, x in enumerate(shape) if i not in (0, 1 if _channels(shape[1]) else 3)]
        if axis in spatial:
            h, w = image or (IMAGE_DEFAULT, IMAGE_DEFAULT)
            return h if axis == spatial[0] else w
    if role == "audio":
        return AUDIO_DEFAULT
    if role in ("ids", "sequence", "mask"):
        return SEQ_DEFAULT
    return DIM_DEFAULT


def _axes_by_dim(g: Graph) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for n in g.inputs:
        for axis, d in enumerate(g.values[n].shape or []):
            if isinstance(d, str) and d not in ("?", ""):
                out.setdefault(dim_key(d, axis), set()).add(axis)
    return out


def _leading_dims(g: Graph) -> frozenset[str]:
    """Dims (dim_key) that lead every input they sit in, as a batch does: the first symbolic dim there (all dims
    before it fixed), at axis 0 of one of them or, in an input of rank 4 or more, before another symbolic dim
    (a stacked KV cache [layers, batch, heads, past, head_dim] beside ids [batch, 1]). A dim named like a batch
    elsewhere in an input is its batch instead; a time-major [T, B, F] beside a mask [B, T] leads nowhere."""
    leads_all: dict[str, bool] = {}  # the first symbolic dim of every input it sits in
    strong: set[str] = set()  # ... and at axis 0 of one, or before another symbolic dim of a 4-D+ one
    for n in g.inputs:
        shape = g.values[n].shape or []
        sym = [(a, d) for a, d in enumerate(shape) if not isinstance(d, int)]
        named_batch = any(is_batch_name(d, a) for a, d in sym if d not in ("?", ""))
        for i, (a, d) in enumerate(sym):
            if d in ("?", ""):
                continue
            key = dim_key(d, a)
            ok = i == 0 and len(shape) >= 2 and not named_batch
            leads_all[key] = leads_all.get(key, True) and ok
            if ok and (a == 0 or (len(shape) >= 4 and len(sym) >= 2)):
                strong.add(key)
    return frozenset(k for k, v in leads_all.items() if v and k in strong)


def _image_size(meta: Mapping[str, str]) -> tuple[int, int] | None:
    """(height, width) a model's metadata gives for its image input, e.g. `image_size: 640` or `[480, 640]`."""
    for key, text in meta.items():
        if not key.startswith("meta.") or not _IMAGE_META.search(key[5:]):
            continue
        nums = [int(x) for x in re.findall(r"\d+", str(text)) if 8 <= int(x) <= 8192]
        if len(nums) == 1:
            return nums[0], nums[0]
        if len(nums) >= 2:
            return nums[-2], nums[-1]
    return None


# -- values ------------------------------------------------------------------------------------

def _fill(plan: InputPlan, g: Graph, values: Mapping[str, Scalar]) -> None:
    name = plan.name
    integer = plan.dtype.startswith(("int", "uint"))
    if name in values:
        plan.value = values[name]
        return
    if plan.role == "mask":
        plan.value, plan.note = 1, "all ones (nothing masked)"
    elif plan.role == "parameter":
        compared = _compared_constant(name, g)
        if compared is not None:
            plan.value, plan.note = compared, "the constant the model compares it with"
        elif _RATE.match(name):
            plan.value, plan.note = SAMPLE_RATE_DEFAULT, "a sample rate"
        else:
            plan.value, plan.note = 1, "a 1-element integer parameter"
    elif integer:
        tables = _gather_tables(name, g)
        plan.low, plan.high = 0, (min(tables) if tables else INT_HIGH)
        if tables:
            plan.note = f"ids inside the {min(tables)}-row table they index"
    if plan.defaulted and not plan.note:
        plan.note = f"{plan.role}: " + ", ".join(f"{k}={v}" for k, v in plan.defaulted.items()) + " by default"


def _consumers(g: Graph) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for n in g.nodes:
        for v in n.inputs:
            if v:
                out.setdefault(v, []).append(n)
    return out


def _gather_tables(name: str, g: Graph) -> list[int]:
    """Rows of every constant table that `name`'s values index (Gather's indices, through value-preserving ops)."""
    return [b for b in _gather_bounds(name, g) if isinstance(b, int)]


def _gather_bounds(name: str, g: Graph) -> list[int | str]:
    """What `name`'s values index through Gathers (as indices, through value-preserving ops and row selections):
    the rows of a constant table, or the dim key of a computed tensor's symbolic axis (a GNN's edge list indexing
    node features [nodes, F] made from another input)."""
    cons = _consumers(g)
    rows: list[int | str] = []
    seen, stack = set(), [name]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        for n in cons.get(v, []):
            axis = _indexed_axis(n, v, g)
            if axis is not None:
                table = g.values.get(n.inputs[0])
                d = table.shape[axis] if table is not None and table.shape and -len(table.shape) <= axis < len(
                    table.shape) else None
                if isinstance(d, int) and (table.weight is not None or table.is_static):
                    rows.append(d)
                elif isinstance(d, str) and d not in ("?", ""):
                    rows.append(dim_key(d, axis % len(table.shape)))
            elif (n.op_type in _INDEX_PASS and n.inputs and n.inputs[0] == v) or _row_select(n, v, g):
                stack.extend(o for o in n.outputs if o)
    return rows


def _indexed_axis(n: Node, v: str, g: Graph) -> int | None:
    """The axis of its data that `n` indexes with `v`'s values: Gather's and the *Elements ops' `axis`; GatherND's and
    ScatterND's first axis where `v`'s last dim is 1 (dynamo writes `h[src]` and `index_put` so); else None."""
    if len(n.inputs) < 2 or n.inputs[1] != v:
        return None
    if n.op_type in ("Gather", "GatherElements", "ScatterElements"):
        return int(n.attributes.get("axis", 0))
    shape = g.values[v].shape if v in g.values else None
    if n.op_type in ("GatherND", "ScatterND") and shape and shape[-1] == 1 and not n.attributes.get("batch_dims"):
        return 0
    return None


def _row_select(n: Node, v: str, g: Graph) -> bool:
    """A Gather of constant indices from `v` (`edge_index[0]`): the values it passes on are `v`'s."""
    idx = g.values.get(n.inputs[1]) if n.op_type == "Gather" and len(n.inputs) > 1 else None
    return n.inputs[0] == v and idx is not None and idx.weight is not None


def _counted_dims(g: Graph) -> dict[str, str]:
    """Symbolic dims an integer input's values index (dim key -> that input): a count of items (a GNN's nodes),
    not a batch; their default is a sequence's."""
    out: dict[str, str] = {}
    for n in g.inputs:
        if g.values[n].dtype.startswith(("int", "uint")):
            for b in _gather_bounds(n, g):
                if isinstance(b, str):
                    out.setdefault(b, n)
    return out


def _compared_constant(name: str, g: Graph) -> int | None:
    """The integer constant a parameter input is tested against (`Equal(sr, 16000)`), if any."""
    for n in _consumers(g).get(name, []):
        if n.op_type not in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
            continue
        other = g.values.get(n.inputs[1] if n.inputs[0] == name else n.inputs[0])
        w = other.weight if other is not None else None
        if w is not None and w.elements == 1 and math.isfinite(w.max):
            return int(w.max)
    return None


def describe(plan: InputPlan) -> str:
    """`x: float32 [batch, 3, H, W] -> 1x3x224x224 (image: H=224, W=224 by default)`."""
    decl = "?" if plan.declared is None else "[" + ", ".join(str(d) for d in plan.declared) + "]"
    shape = "x".join(str(d) for d in plan.shape) or "scalar"
    tail = f", value {plan.value}" if plan.value is not None else ""
    why = f" ({plan.note})" if plan.note else ""
    return f"{plan.name}: {plan.dtype} {decl} -> {shape}{tail}{why}"


def _pinned_dims(g: Graph, shapes: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """Symbolic dim name -> size fixed by the user's shapes (checked against the declared ones)."""
    dims: dict[str, int] = {}
    for name, shape in shapes.items():
        declared = g.values[name].shape
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
                if dims.setdefault(dim_key(d, axis), s) != s:
                    raise InputSpecError(f"dimension '{d}' is {dims[dim_key(d, axis)]} in one override and {s} "
                                         f"in input '{name}'")
    return dims


def _fmt(shape: Sequence[Dim]) -> str:
    return "x".join(str(d) for d in shape) or "scalar"
