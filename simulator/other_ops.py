"""Work of ops of kind `other` that compute: ONNX STFT (an audio model's spectrogram front end) and GridSample (a
spatial transformer's warp, RAFT's correlation lookups). Without a count they were tasks of no work: a keyword
spotter's STFT 0.003 ms predicted against ~3.5 ms run (the model -92%), a spatial transformer's GridSample 51x under.

The counts follow ONNX Runtime's CPU kernels, and each op's rate is its own figure (`other.fp32.<op>` in host-cpu.yaml,
measured with single-op models), as LiteRT's RFFT2D has (simulator/litert_signal.py):
- STFT (onnxruntime/core/providers/cpu/signal/dft.cc): per frame, a radix-2 FFT where the frame length is a power of
  two (log2 n passes over n samples, `FFT_PASS_FLOPS` per sample and pass), and otherwise Bluestein's chirp-z
  transform (`dft_bluestein_z_chirp`, ORT 1.32; older releases ran a naive DFT): the frame times a chirp, padded to
  M = the power of two at or above 2n - 1, a forward and an inverse radix-2 FFT of M, a pointwise product, the chirp
  again (`BLUESTEIN_PASSES` passes' worth over M). So n = 400 and n = 480 cost the same (M = 1024): single STFTs over
  16,000 samples at hop 160 ran 3.84 and 3.87 ms on a Zen 4 (ORT 1.32, 1 thread, thread CPU time, 2026-12-08 01:17
  UTC, probe 101-105 GFLOP/s, load ~3; /work/lead/stft/probe.py), where a naive DFT would take 1.44x longer at 480.
  The rate is the machine's own (`other.fp32.STFT`, fitted by calibration on a radix-2 and a Bluestein case): at the
  default rate, fitted on a Xeon, the same Zen 4's radix-2 STFTs took 1.15-1.23x their price.
- GridSample (onnxruntime/core/providers/cpu/tensor/grid_sample.cc): per output pixel its source coordinates
  (`GRID_PIXEL_FLOPS`), then per output element the taps of its mode (4 bilinear, 16 bicubic, 1 nearest).
- NonMaxSuppression (onnxruntime/core/providers/cpu/object_detection/non_max_suppression.cc): per batch and class, every
  box above the score threshold pushed on a heap and popped in score order, each popped box tested against the boxes
  kept so far until one suppresses it. Its work is the data's: a kept box is tested against every box kept before it
  (S^2 / 2 tests for S kept), a suppressed one until its suppressor (cheaper on average, `NMS_FLOPS[1]` per
  kept box), so it is counted from the selection the profiled run made (the output's observed [S, 3]); without a
  run the output's shape is unknown and so is the task's work. All N boxes are taken as candidates (the score
  threshold's pass rate is the data's too; random weights pass every box).
All three are priced at the host's `default` rate (the kind `other`; STFT at its own where calibrated), the figures
below fitted to it: single-op models on this Xeon (ORT 1.32, 1 thread, thread CPU time, load 4-6, 2026-12-05), at
0.0575 ns per FLOP: STFT n=400 hop 160 over 16,000 and 48,000 samples 3.42 / 10.3 ms (Bluestein over M = 1024: 1.48
ns per sample and pass, once counted as a naive DFT at 0.43 ns per term); radix-2 n=256, 512, 1024,
2048: 1.42-1.59 ns per sample and pass (0.40, 0.68, 1.82, 2.88 ms); GridSample bilinear [1024, 1, 32, 32] by a
[1024, 7, 7, 2] grid (RAFT's lookup) 0.87 ms, [1, 3, 192, 192] by [1, 192, 192, 2] 0.69, [1, 64, 56, 56] 0.36.
"""

from __future__ import annotations

import math

from compiler.graph import Graph, Node, Value

# FLOPs of a radix-2 pass per sample (bit-reversed indexing, a complex multiply-add per half), fitted at the default
# rate on a Xeon (the figures above); a calibrated machine prices them at its own `other.fp32.STFT` rate.
FFT_PASS_FLOPS = 25.0
# Bluestein's work beyond its two FFTs of M, in radix-2 passes over M: the chirp products before and after, the
# pointwise product with the chirp's cached FFT, the inverse's scaling, the zeroed pad (Zen 4, the figures above: a
# frame of n = 400 ran 39.2 us, two radix-2 FFTs of 1024 at 1.62 ns per sample and pass 33.9; 5.3 us over M = 1024
# is ~3.2 passes).
BLUESTEIN_PASSES = 3.0
# FLOPs of a GridSample output pixel's coordinates (unnormalise, clamp or reflect, floor, weights: ~17 ns) and of
# each tap of an output element (~1.5 ns for bilinear's 4), fitted likewise.
GRID_PIXEL_FLOPS = 296.0
GRID_TAP_FLOPS = 6.5
_TAPS = {"linear": 4, "bilinear": 4, "cubic": 16, "bicubic": 16, "nearest": 1}
# NonMaxSuppression's FLOPs per IoU test of a kept box (S^2 / 2 of them), per (suppressed box x kept box) and per heap
# step (N log2 N), at the default rate, fitted by least squares on single-op files (benchmarks/nms.py: N 2,000-20,000,
# IoU 0.3-0.8) on the session-45 Xeon (family 6 model 167, 0.065 ns per FLOP at its calibrated default rate). A test
# exits at the first disjoint axis (non_max_suppression_helper.h), so its cost is the data's overlap: boxes of one
# class on an anchor grid or spread at random, 3.0 / 0.44 / 27 ns (within ±25% on 17 of 18, median 12%); classes
# moved apart before one NMS (torchvision's batched_nms adds a per-box offset: every test across classes exits at
# once), 1.1 / 0.51 / 3.5 ns (9 of 9, median 6%).
NMS_FLOPS = (46.0, 7.0, 410.0)  # (kept, suppressed, heap)
NMS_APART_FLOPS = (17.5, 7.9, 53.0)  # the same where the classes were moved apart


def other_flops(node: Node, graph: Graph, outs: list[Value | None]) -> float:
    """FLOPs of an `other` task this module counts (0 for the rest)."""
    out = outs[0] if outs else None
    if out is None or not out.is_static or not out.shape:
        return 0.0
    dims = [int(d) for d in out.shape]  # type: ignore[union-attr]
    if node.op_type == "STFT" and len(dims) == 4:
        return _stft_flops(node, graph, dims)
    if node.op_type == "NonMaxSuppression" and len(dims) == 2:
        return _nms_flops(node, graph, dims[0])
    if node.op_type == "GridSample" and len(dims) >= 3:
        mode = node.text("mode", "linear")
        pixels = dims[0] * math.prod(dims[2:])
        return pixels * GRID_PIXEL_FLOPS + math.prod(dims) * GRID_TAP_FLOPS * _TAPS.get(mode, 4)
    return 0.0


def _nms_flops(node: Node, graph: Graph, kept: int) -> float:
    """Boxes [batch, N, 4] and scores [batch, classes, N]; `kept` selected in all, spread evenly over the classes."""
    scores = graph.values.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if scores is None or not scores.is_static or len(scores.shape or ()) != 3:  # type: ignore[arg-type]
        return 0.0
    batch, classes, n = (int(d) for d in scores.shape)  # type: ignore[union-attr]
    runs = max(batch * classes, 1)
    s = kept / runs
    k, sup, heap = NMS_APART_FLOPS if classes_apart(node, graph) else NMS_FLOPS
    return runs * (k * s * s / 2 + sup * max(n - s, 0.0) * s + heap * n * math.log2(max(n, 2)))


def classes_apart(node: Node, graph: Graph) -> bool:
    """The NMS's boxes are an Add of one offset per box (shape [..., N, 1]), through casts and reshapes: the
    coordinate trick of torchvision's batched_nms (and of YOLO exports), which runs every class in one NMS."""
    producer = graph.producers()
    name = node.inputs[0]
    for _ in range(6):
        p = graph.node(producer[name]) if name in producer else None
        if p is None or not p.inputs or p.op_type not in _PASS_THROUGH | {"Add", "Sum"}:
            return False
        if p.op_type in ("Add", "Sum"):
            shapes = [graph.values[i].shape for i in p.inputs if i in graph.values]
            return any(sh is not None and len(sh) >= 2 and sh[-1] == 1 for sh in shapes)
        name = p.inputs[0]
    return False


_PASS_THROUGH = frozenset({"Cast", "Unsqueeze", "Reshape", "Squeeze", "Identity", "Flatten"})


def _stft_flops(node: Node, graph: Graph, dims: list[int]) -> float:
    """STFT output [batch, frames, bins, 2]: the frame length from the frame_length input, else the window's, else
    from the bins (onesided: n // 2 + 1)."""
    batch, frames, bins, _ = dims
    n = _frame_length(node, graph)
    onesided = int(node.attributes.get("onesided", 1) or 0)
    if n is None:
        n = 2 * (bins - 1) if onesided else bins
    n = max(n, 1)
    if n & (n - 1) == 0:
        per_frame = FFT_PASS_FLOPS * n * math.log2(max(n, 2))
    else:
        m = bluestein_size(n)
        per_frame = FFT_PASS_FLOPS * m * (2 * math.log2(m) + BLUESTEIN_PASSES)
    return batch * frames * per_frame


def bluestein_size(n: int) -> int:
    """The FFT length ORT's Bluestein transform pads a frame of n samples to: the power of two at or above 2n - 1."""
    return 1 << max(2 * n - 2, 1).bit_length()


def _frame_length(node: Node, graph: Graph) -> int | None:
    names = list(node.inputs) + ["", "", "", ""]
    length = graph.values.get(names[3]) if names[3] else None
    if length is not None and length.weight is not None and length.weight.ints:
        return int(length.weight.ints[0])
    window = graph.values.get(names[2]) if names[2] else None
    if window is not None and window.is_static and window.shape:
        return int(window.shape[0])  # type: ignore[arg-type]
    return None
