"""How ONNX Runtime's CPU kernels resize and rearrange maps, per output element: which Resizes interpolate (kind
`resize`; bicubic ones kind `cubic`), which map each output back to its input on the generic nearest kernel (kind
`nearest`), which are a plain copy (a layout move), and how many moves each element costs against its kind's rate.
costs.py counts the work with these; the rates are calibrated (`resize.fp32`, `cubic.fp32`, `nearest.fp32`)."""

from __future__ import annotations

import numpy as np

from compiler.graph import Graph, Node

# A cubic Resize against a linear one at the same shapes, per output element: ORT's bicubic kernel (the only one: LiteRT
# and Core ML have no bicubic resize) took 45.7-48.9x the linear one's time on this Zen 4 ([1, 3, 224, 224] by 3: 84.4
# against 1.85 ms; [1, 64, 56, 56] by 2: 54.6 / 1.12; [1, 256, 14, 14] by 2: 14.3 / 0.29; thread CPU time, load 2,
# 2026-12-04), 62-71 ns per output element: an ESPCN's bicubic skip was predicted at 2 ms against 100. (An Emerald
# Rapids Xeon: 39.6-42.2x at the first two shapes, load 4, 2026-12-05.)
CUBIC_RESIZE_OPS = 48.0
# DepthToSpace is a 6-D transpose whose innermost axis interleaves with the block's, which ORT walks element by
# element, at about half a Transpose walk's time per element: 1.73-1.85 ns on this Zen 4 ([1, 27, 224, 224] by 3,
# [1, 64, 56, 56] by 2; thread CPU time, load 2, 2026-12-04) where walks take 3.3-3.6 (transposes.far_walk); priced
# at the layout rate it was 18x under (ESPCN). SpaceToDepth by 2 took 0.34 ns per element: a layout move, as before.
DEPTH_TO_SPACE_WALK = 0.54


def resize_kind(node: Node, graph: Graph) -> str | None:
    """`resize` for an interpolating Resize / Upsample (ORT computes each output element from 4 (linear, 2-D) or 16
    (cubic) inputs and their weights, 1.15-1.5 ns per element where a copy moves one at 0.05-0.2), `nearest` for a
    nearest one on ORT's generic kernel, None for the 2x copy, MLAS's NCHWc Upsample and a Resize to its own shape
    (layout moves)."""
    if same_shape(node, graph):
        return None
    mode = node.text("mode", "nearest")
    if mode == "cubic" and len(_spatial(node, graph)) == 4:
        return "cubic"
    if mode in ("linear", "cubic"):
        return "resize"
    if node.domain in ("", "ai.onnx") and not nearest_2x(node, graph):
        return "nearest"
    return None


def same_shape(node: Node, graph: Graph) -> bool:
    """Whether a Resize / Upsample of the ONNX domain writes its input's own shape, which ORT (1.32, CPU:
    Upsample<T>::BaseCompute, onnxruntime/core/providers/cpu/tensor/upsample.cc, whose `no_scale` test compares the
    output's dims with the input's) copies with one memcpy whatever its mode: torchvision's detectors resize their
    320 x 320 input to 320 x 320 (GeneralizedRCNNTransform, sizes computed at run time). SSDlite320's, bilinear on
    [1, 3, 320, 320], was priced 0.50 ms at the `resize` rate and profiled 0.041 (a Zen 4, 2026-12-06 16:21 UTC)."""
    src = graph.values.get(node.inputs[0]) if node.inputs else None
    out = graph.values.get(node.outputs[0]) if node.outputs else None
    return (node.domain in ("", "ai.onnx") and src is not None and out is not None and src.is_static
            and out.is_static and list(src.shape) == list(out.shape))


def moves_per_element(node: Node, kind: str) -> float:
    """Moves per output element of a layout-like task against its kind's rate."""
    if kind == "walk" and node.op_type == "DepthToSpace":
        return DEPTH_TO_SPACE_WALK
    if kind == "resize" and node.text("mode", "nearest") == "cubic":
        return CUBIC_RESIZE_OPS
    return 1.0


# ORT's bicubic kernel (ResizeBiCubic, onnxruntime/core/providers/cpu/tensor/upsample.cc) interpolates along x first
# and keeps each 1-D result in a hash map keyed by its x fraction and grid position, cleared per channel: an output
# element looks four of them up, and each one missing is computed from 4 taps and inserted. So the time follows the
# misses (distinct x positions x input rows the output rows touch), not the output: a 2x upscale misses 0.5 per output
# element, 240 -> 224 1.08, 448 -> 224 2. Single ops on an Emerald Rapids Xeon (thread CPU time, load ~7,
# 2026-12-05): 110 ns per output element for 2x upscales, 180-295 for downscales and 224 -> 240; a cost per output
# element plus one per miss fits all eight shapes within 26%, one per output element alone (as before) within 2.7x.
# Calibration fits both (kind `cubic`: efficiency on CUBIC_MISS_OPS per miss, `cubic.fp32.out` per output element).
# The kernel keeps one map per x fraction (coeff_to_1Dinterpolation_map[s_x]): consecutive output columns look up and
# insert in the maps of their fractions in turn, few maps for an integer scale (one for a halving, two for a 2x
# upscale), one per column in a period of the scale otherwise (ORT's float fractions: 41-57 for 15/14, 24 for 8/7).
# A miss costs more the more maps they spread over, up to about twice from ~32 maps: on an Emerald Rapids Xeon (20
# shapes, eight Resizes side by side, thread CPU time, round-robin, 2026-12-06 10:32 and 10:49 UTC; /work/h51attn/
# ops.py, cubfit.py) 76-80 ns per miss for halvings, 131-157 for 15/14 and 8/7 scales, 142 for 2x upscales (whose
# outputs pay half as many misses). A cost per output element plus one per miss weighted 1 + min(maps, 32) / 32 fits
# all but the largest shape within 9% (median 3.3%; per output and miss alone 23%, 15.7%: CrossViT's 240 -> 224 was
# 1.29x its price); [1, 1, 480, 480] -> 448, whose maps hold 8 MB per channel, reads 1.3x (not modelled).
CUBIC_MAPS_FULL = 32
# a 2x upscale's uncalibrated cost (0.5 misses per output over 2 maps) stays 48 moves per output element
CUBIC_MISS_OPS = 2 * CUBIC_RESIZE_OPS / (1 + 2 / CUBIC_MAPS_FULL)


def cubic_misses(node: Node, graph: Graph) -> float:
    """The 1-D interpolations ORT's bicubic kernel computes for this Resize (its cache misses, all channels), each
    weighted by how many fraction maps they spread over (1 + min(maps, CUBIC_MAPS_FULL) / CUBIC_MAPS_FULL): per
    channel, the distinct (x fraction, x position) pairs of the output columns times the input rows (from y - 1 to
    y + 2 of each output row's y) the output rows touch. 0 where the shapes are unknown."""
    dims = _spatial(node, graph)
    if len(dims) != 4:
        return 0.0
    (h_in, w_in, h_out, w_out), planes = dims[:4], _planes(node, graph)
    mode = node.text("coordinate_transformation_mode", "half_pixel")
    ys, xs = _source_coords(h_out, h_in, mode), _source_coords(w_out, w_in, mode)
    y0, x0 = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
    rows = np.unique(np.concatenate([y0 + d for d in (-1, 0, 1, 2)])).size
    fractions = (xs - x0).tolist()
    columns, maps = len(set(zip(fractions, x0.tolist()))), len(set(fractions))
    return float(planes * columns * rows) * (1.0 + min(maps, CUBIC_MAPS_FULL) / CUBIC_MAPS_FULL)


def _source_coords(n_out: int, n_in: int, mode: str) -> np.ndarray:
    """Each output index's source coordinate along one axis, as ORT computes it in float32 (scale = out / in)."""
    o, scale = np.arange(n_out, dtype=np.float32), np.float32(n_out / n_in)
    if mode == "align_corners":
        return (o * np.float32((n_in - 1) / max(n_out - 1, 1))).astype(np.float32)
    if mode == "asymmetric":
        return (o / scale).astype(np.float32)
    if mode == "pytorch_half_pixel" and n_out <= 1:
        return np.zeros(n_out, dtype=np.float32)
    return ((o + np.float32(0.5)) / scale - np.float32(0.5)).astype(np.float32)


def _spatial(node: Node, graph: Graph) -> tuple[int, ...]:
    """(H in, W in, H out, W out) of a 4-D Resize with static shapes; () otherwise."""
    src = graph.values.get(node.inputs[0]) if node.inputs else None
    out = graph.values.get(node.outputs[0]) if node.outputs else None
    if src is None or out is None or not src.is_static or not out.is_static or len(src.shape) != 4 \
            or len(out.shape) != 4:
        return ()
    return (int(src.shape[2]), int(src.shape[3]), int(out.shape[2]), int(out.shape[3]))


def _planes(node: Node, graph: Graph) -> int:
    shape = graph.values[node.outputs[0]].shape
    return int(shape[0]) * int(shape[1])


def nearest_2x(node: Node, graph: Graph) -> bool:
    """Whether ORT (1.32, CPU) runs this nearest Resize as its 2x upsampling copy (`UpsampleNearest2x`): a 4-D
    input scaled by exactly [1, 1, 2, 2], from an opset-9 Upsample or with asymmetric coordinates and floor rounding
    (torch's exporters write both). Other nearest Resizes (3x, `interpolate(size=)`, half-pixel coordinates) run
    the generic kernel, which maps every output element back to its input: 0.54-0.58 ns per element on an Emerald
    Rapids Xeon against 0.15-0.24 for the 2x copy (single-op models, thread CPU time, load 4, 2026-12-05), 0.37x a
    linear Resize's time (kind `nearest`, fitted by calibration: the `nearest-*` case)."""
    if node.op_type == "Resize" and (node.text("coordinate_transformation_mode", "half_pixel") != "asymmetric"
                                     or node.text("nearest_mode", "round_prefer_floor") != "floor"):
        return False
    src = graph.values.get(node.inputs[0]) if node.inputs else None
    out = graph.values.get(node.outputs[0]) if node.outputs else None
    if src is None or out is None or not src.is_static or not out.is_static or len(src.shape) != 4:
        return False  # shapes unknown: the generic kernel, the slower guess
    return list(out.shape) == [src.shape[0], src.shape[1], 2 * src.shape[2], 2 * src.shape[3]]
