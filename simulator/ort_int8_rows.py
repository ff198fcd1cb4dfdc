"""Static int8 on ORT's x86 CPU EP: the copy kernels that move a tensor's parts one row at a time (the calls of
QLinearConcat and Split), priced per call beside their bytes (simulator/ort_int8.py facts;
kernel_path.Path.call_elements).

ORT 1.32's QLinearConcat (contrib_ops/cpu/quantization/qlinear_concat.cc, Compute) walks each input in rows of its
extent along the axis and everything inside it (`axis_pitch`): one memcpy for an input at the output's scale and zero
point, one QLinearLookupTableTransform for any other, per row, so `inputs x (elements before the axis)` calls. Split
(core/providers/cpu/tensor/split.cc) copies each output as a matrix of the same rows (math::CopyMatrix, a memcpy a
row). In a static int8 file the data between QLinearConvs is NHWC (ORT's layout pass), so a concat or split along the
channels of a CNN's maps is one call per pixel and part: GhostNet's ghost modules join 8 + 8 .. 80 + 80 channels a
pixel, SqueezeNet's fire modules 64 + 64 .. 256 + 256, MixNet-S's mixed depthwise convs split and join 2-4 groups of
20-240. On a Zen 5 (README Round 26, thread CPU time, 2026-12-06 14:42 UTC) 8 QLinearConcats of two 12-channel
uint8 inputs at 56 x 56, both copied, took 0.096 ms (1.9 ns a call) where the Concat's layout rate priced their bytes at
~0.01; GhostNet's 32 QLinearConcats 0.59 ms of ORT's node medians against 0.37 priced with the lookup. Each call costs
`layout.int8.call` s (CALL_KEY), fitted by calibration on QLinearConcats along the channels against the same inputs
joined along H (one call per input: simulator/calibration_nhwc.py): on a Zen 4 (README Round 27, 16:00 UTC) 2.29 / 2.25
ns per call at runs of 8 / 12 bytes, 0.99 at 64 (the copy's bandwidth hides part of it), fitted 2.22. The fact carries
the elements moved per call.
"""

from __future__ import annotations

import dataclasses
import math

from compiler.graph import Graph, Node
from simulator.kernel_path import Path

ORT_INT8_ROWS = "ort_int8_rows="
CALL_KEY = "layout.int8.call"
COPY_OPS = frozenset({"Concat", "Split"})
NHWC_AXIS = (0, 3, 1, 2)  # where an NCHW axis is in NHWC


def copy_run(nd: Node, g: Graph, nhwc: bool) -> float | None:
    """The mean number of elements a static int8 Concat / Split of two or more parts moves per call (ORT_INT8_ROWS),
    else None. `nhwc`: its 4-D data leaves QLinearConvs, NHWC in the int8 file, where the channel axis (1 here) is
    innermost: one call per pixel and part (along H, one per part)."""
    if nd.op_type not in COPY_OPS or not nd.inputs or not nd.outputs:
        return None
    concat = nd.op_type == "Concat"
    parts = [v for v in (nd.inputs if concat else nd.outputs) if v]
    whole = g.values.get(nd.outputs[0] if concat else nd.inputs[0])
    if len(parts) < 2 or whole is None or not whole.is_static or not whole.shape:
        return None
    dims = [int(d) for d in whole.shape]  # type: ignore[union-attr]
    axis = int(nd.attributes.get("axis", 0) or 0)
    axis = axis + len(dims) if axis < 0 else axis
    if not 0 <= axis < len(dims) or math.prod(dims) <= 0:
        return None
    if nhwc and len(dims) == 4:  # the int8 file's [N, H, W, C]
        dims, axis = [dims[0], dims[2], dims[3], dims[1]], NHWC_AXIS[axis]
    outer = math.prod(dims[:axis])
    return math.prod(dims) / (len(parts) * outer)


def rows_path(p: Path, facts: frozenset[str]) -> Path:
    """`p` with a cost per call (`call_elements`, CALL_KEY) where its task is such a copy on the int8 path, else `p`."""
    runs = [float(f[len(ORT_INT8_ROWS):]) for f in facts if f.startswith(ORT_INT8_ROWS)]
    if not runs or p.tag != "int8" or p.eliminated or runs[0] <= 0:
        return p
    return dataclasses.replace(p, call_elements=runs[0], note="; ".join(
        [*([p.note] if p.note else []), f"copied one row of {runs[0]:g} elements per call (NHWC)"]))
