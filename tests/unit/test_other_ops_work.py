"""STFT, GridSample and NonMaxSuppression count their work (they were tasks of no work); ORT's element-wise kernels over short broadcast
spans and Reduce* over short kept blocks pay a cost per kernel call (simulator/other_ops.py, ort_broadcast.py)."""

from __future__ import annotations

import math

import pytest

from compiler.graph import Node, Value, WeightStats
from simulator.costs import work_of
from simulator.ort_broadcast import short_reduce_block, short_reduce_rows, short_span
from simulator.other_ops import (BLUESTEIN_PASSES, FFT_PASS_FLOPS, GRID_PIXEL_FLOPS, GRID_TAP_FLOPS, NMS_FLOPS,
                                 bluestein_size)
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms


def _int(name: str, v: int) -> Value:
    return Value(name, [], "int64", weight=WeightStats(1, 8, v, v, 0.0, ints=(v,)))


def _stft(n: int, samples: int = 16000, hop: int = 160):  # type: ignore[no-untyped-def]
    frames, bins = (samples - n) // hop + 1, n // 2 + 1
    node = Node("s", "s", "STFT", inputs=["x", "step", "", "len"], outputs=["y"], attributes={"onesided": 1})
    return graph([node], [act("x", [1, samples, 1]), _int("step", hop), _int("len", n), act("y", [1, frames, bins, 2])],
                 ["x"], ["y"]), frames, bins


def test_stft_counts_bluestein_or_a_radix2_fft_as_ort_runs_it() -> None:
    g, frames, bins = _stft(400)  # not a power of two: two FFTs of 1024 and the chirp's passes (ORT 1.32)
    assert work_of(g.nodes[0], g).flops == pytest.approx(frames * 1024 * (20 + BLUESTEIN_PASSES) * FFT_PASS_FLOPS)
    # n = 480 pads to the same M: the same work per frame (3.84 and 3.87 ms over 98 frames on a Zen 4), where a naive
    # DFT's count grew with bins x n (1.44x)
    g480, frames480, _ = _stft(480)
    assert frames480 == frames and work_of(g480.nodes[0], g480).flops == pytest.approx(work_of(g.nodes[0], g).flops)
    assert [bluestein_size(n) for n in (3, 400, 480, 513, 1000)] == [8, 1024, 1024, 2048, 2048]
    g2, frames2, _ = _stft(512)
    assert work_of(g2.nodes[0], g2).flops == pytest.approx(frames2 * 512 * 9 * FFT_PASS_FLOPS)
    hw = load_profile("host-cpu")
    # a 16,000-sample spectrogram at n=400: milliseconds, where it was a task of no work (dispatch only)
    assert host_fp32_ms(g, hw) > 1.0 and host_fp32_ms(g, hw) > 3 * host_fp32_ms(g2, hw)


def test_stft_takes_the_machines_own_rate_where_calibrated() -> None:
    """Calibration fits `other.fp32.STFT` (a radix-2 and a Bluestein case): at half the default efficiency an STFT
    takes about twice as long, and a GridSample (the kind `other` too) keeps the default rate."""
    hw = load_profile("host-cpu")
    own = hw.with_overrides({"units": {"cpu": {"efficiency": {
        "other.fp32.STFT": hw.units[0].efficiency["default"] / 2}}}})
    g, _, _ = _stft(400)
    assert host_fp32_ms(g, own) == pytest.approx(2 * host_fp32_ms(g, hw), rel=0.05)
    node = Node("g", "g", "GridSample", inputs=["x", "grid"], outputs=["y"])
    gs = graph([node], [act("x", [1, 3, 64, 64]), act("grid", [1, 64, 64, 2]), act("y", [1, 3, 64, 64])],
               ["x", "grid"], ["y"])
    assert host_fp32_ms(gs, own) == pytest.approx(host_fp32_ms(gs, hw))


def test_grid_sample_counts_a_pixel_cost_and_its_taps() -> None:
    def gs(mode: str):  # type: ignore[no-untyped-def]
        node = Node("g", "g", "GridSample", inputs=["x", "grid"], outputs=["y"], attributes={"mode": mode})
        return graph([node], [act("x", [1024, 1, 32, 32]), act("grid", [1024, 7, 7, 2]), act("y", [1024, 1, 7, 7])],
                     ["x", "grid"], ["y"])

    lin, cubic = gs("linear"), gs("cubic")
    px = 1024 * 49
    assert work_of(lin.nodes[0], lin).flops == pytest.approx(px * GRID_PIXEL_FLOPS + px * 4 * GRID_TAP_FLOPS)
    assert work_of(cubic.nodes[0], cubic).flops > work_of(lin.nodes[0], lin).flops
    assert host_fp32_ms(lin, load_profile("host-cpu")) > 0.3  # RAFT's lookup: 0.87 ms measured, 0.013 before


def _nms(kept: list[int | str], n: int = 27000, classes: int = 1):  # type: ignore[no-untyped-def]
    node = Node("n", "n", "NonMaxSuppression", inputs=["boxes", "scores", "max_out", "iou"], outputs=["sel"])
    return graph([node], [act("boxes", [1, n, 4]), act("scores", [1, classes, n]), _int("max_out", 2 ** 62),
                          Value("iou", [1], "float32", weight=WeightStats(1, 4, 0.55, 0.55, 0.0)),
                          Value("sel", kept, "int64")], ["boxes", "scores"], ["sel"])


def test_nms_counts_the_iou_tests_of_the_selection_the_run_made() -> None:
    """SSDlite's NMS on random weights: 27,000 boxes in one class (torchvision's batched_nms offsets the classes),
    5,760 kept, 88 ms profiled on a Xeon where it was priced 0.006 ms (the whole detector -85%)."""
    g = _nms([5760, 3])
    s, n = 5760, 27000
    kept, suppressed, heap = NMS_FLOPS
    want = kept * s * s / 2 + suppressed * (n - s) * s + heap * n * math.log2(n)
    w = work_of(g.nodes[0], g)
    assert w.shapes_known and w.flops == pytest.approx(want)
    assert 20 < host_fp32_ms(g, load_profile("host-cpu")) < 400
    # more kept boxes, more tests; the same selection over 90 classes of 300 boxes: far fewer
    assert work_of(_nms([20000, 3]).nodes[0], _nms([20000, 3])).flops > 5 * w.flops
    per_class = _nms([5760, 3], n=300, classes=90)
    assert work_of(per_class.nodes[0], per_class).flops < w.flops / 10


def test_nms_of_classes_moved_apart_costs_less_per_test() -> None:
    """torchvision's batched_nms adds one offset per box so that classes never overlap: every IoU test across
    classes exits at its first axis (single-op files: 1.1 ns per kept test against 3.0 for one class's boxes)."""
    from simulator.other_ops import classes_apart

    one = _nms([5760, 3])
    node = Node("a", "a", "Add", inputs=["raw", "offsets"], outputs=["apart"])
    unsq = Node("u", "u", "Unsqueeze", inputs=["apart", "axis"], outputs=["boxes"])
    apart = graph([node, unsq, *one.nodes], [*one.values.values(), act("raw", [27000, 4]), act("offsets", [27000, 1]),
                                             act("apart", [27000, 4]), _int("axis", 0)], ["raw", "offsets", "scores"],
                  ["sel"])
    assert classes_apart(apart.nodes[2], apart) and not classes_apart(one.nodes[0], one)
    assert work_of(apart.nodes[2], apart).flops < 0.8 * work_of(one.nodes[0], one).flops


def test_nms_without_a_run_has_unknown_work_not_a_silent_zero() -> None:
    g = _nms(["S", 3])  # the selection's size is the data's: unknown until the model runs
    assert not work_of(g.nodes[0], g).shapes_known


@pytest.mark.parametrize("a, b, span", [
    ([1024, 7, 7, 1], [], 1),  # innermost axis 1: a call per element (RAFT's coordinate normalisation)
    ([1, 36864, 3, 1], [1, 1, 3, 2], 2),  # affine_grid's product
    ([1, 16384, 4, 1], [1, 1, 4, 4], 4),
    ([1, 256, 16], [1, 1, 16], 16),  # a Mamba-like scan's step: 8-9 ns per call measured on a Zen 4
    ([1, 256, 16], [1, 256, 1], 16),
    ([1, 576, 7, 7], [1, 576, 1, 1], 49),  # a squeeze-excite gate at 7 x 7
    ([1, 64, 256], [1, 64, 1], None),  # a span of 256: the element rate holds (3 ns per call measured)
    ([1, 672, 14, 14], [1, 672, 1, 1], None),  # 196
    ([50176], [], None),  # one call
    ([1, 64, 56, 56], [1, 64, 56, 56], None),  # same shapes
])
def test_short_broadcast_spans(a: list[int], b: list[int], span: int | None) -> None:
    out = [max(x, y) for x, y in zip([1] * (len(b) - len(a)) + a, [1] * (len(a) - len(b)) + b)]
    g = graph([Node("m", "m", "Mul", inputs=["a", "b"], outputs=["y"])], [act("a", a), act("b", b), act("y", out)],
              ["a", "b"], ["y"])
    assert short_span(g.nodes[0], g) == span


def test_a_short_span_costs_a_call_per_span_on_the_host() -> None:
    def mul(a: list[int]):  # type: ignore[no-untyped-def]
        return graph([Node("m", "m", "Mul", inputs=["a", "s"], outputs=["y"])],
                     [act("a", a), Value("s", [], "float32", weight=WeightStats(1, 4, 2.0, 2.0, 0.0)), act("y", a)],
                     ["a"], ["y"])

    hw = load_profile("host-cpu")
    unit, flat = mul([1024, 7, 7, 1]), mul([50176])
    per_call = hw.units[0].kind_overhead_s["elementwise.fp32.span"]
    assert host_fp32_ms(unit, hw) >= 50176 * per_call * 1e3  # 0.49 ms measured; 0.006 before
    assert host_fp32_ms(flat, hw) < 0.1 * host_fp32_ms(unit, hw)


def test_a_reduce_over_a_short_kept_block_costs_a_call_per_block() -> None:
    def rsum(shape: list[int], axis: int):  # type: ignore[no-untyped-def]
        out = [d for i, d in enumerate(shape) if i != axis]
        axes = Value("ax", [1], "int64", weight=WeightStats(1, 8, axis, axis, 0.0, ints=(axis,)))
        return graph([Node("r", "r", "ReduceSum", inputs=["x", "ax"], outputs=["y"], attributes={"keepdims": 0})],
                     [act("x", shape), axes, act("y", out)], ["x"], ["y"])

    stn, inner = rsum([1, 36864, 3, 2], 2), rsum([1, 36864, 6], 2)
    assert short_reduce_block(stn.nodes[0], stn) == 2 and short_reduce_block(inner.nodes[0], inner) is None
    hw = load_profile("host-cpu")
    per_call = hw.units[0].kind_overhead_s["reduce.fp32.span"]
    assert host_fp32_ms(stn, hw) >= 36864 * per_call * 1e3  # 2.61 ms measured; 0.21 before
    assert math.isfinite(host_fp32_ms(inner, hw)) and host_fp32_ms(inner, hw) < 0.2


def _rsum(shape: list[int], axes: list[int]):  # type: ignore[no-untyped-def]
    out = [d for i, d in enumerate(shape) if i not in axes]
    ax = Value("ax", [len(axes)], "int64", weight=WeightStats(len(axes), 8, min(axes), max(axes), 0.0, ints=tuple(axes)))
    return graph([Node("r", "r", "ReduceSum", inputs=["x", "ax"], outputs=["y"], attributes={"keepdims": 0})],
                 [act("x", shape), ax, act("y", out)], ["x"], ["y"])


@pytest.mark.parametrize("shape, axes, row", [
    ([1, 36864, 6], [2], 6),  # affine_grid's sum: 0.09 ms measured, 0.02 at the element rate
    ([1, 256, 16], [2], 16),  # a Mamba-like scan's (h * C).sum(-1)
    ([1, 64, 7, 7], [2, 3], 49),  # a spatial mean over the innermost axes
    ([1, 128, 128], [2], None),  # a row of 128: no cost beyond the element rate measured
    ([1, 36864, 3, 2], [2], None),  # not the innermost axis (short_reduce_block's case)
    ([1, 16], [1], None),  # one row
])
def test_short_innermost_reduce_rows(shape: list[int], axes: list[int], row: int | None) -> None:
    g = _rsum(shape, axes)
    assert short_reduce_rows(g.nodes[0], g) == row


def test_an_innermost_reduce_of_short_rows_costs_a_call_per_row() -> None:
    hw = load_profile("host-cpu")
    per_row = hw.units[0].kind_overhead_s["reduce.fp32.row"]
    short, long_ = _rsum([1, 36864, 6], [2]), _rsum([1, 1728, 128], [2])  # the same 221,184 elements
    assert host_fp32_ms(short, hw) >= 36864 * per_row * 1e3
    assert host_fp32_ms(short, hw) > host_fp32_ms(long_, hw) + 0.8 * 36864 * per_row * 1e3


def test_short_spans_are_paid_under_fp16_and_by_int8_kernels_too() -> None:
    """ORT runs a float op of an fp16 model in fp32 over the same spans; QLinearMul calls its kernel per span."""
    from simulator.sweep import sweep

    g = graph([Node("m", "m", "Mul", inputs=["a", "b"], outputs=["y"])],
              [act("a", [1, 36864, 3, 1]), act("b", [1, 1, 3, 2]), act("y", [1, 36864, 3, 2])], ["a", "b"], ["y"])
    # the int8 kernel's cost per call is calibrated (11 ns on this Xeon); the yaml has none
    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {"kind_overhead_s": {"elementwise.int8.span": 1.1e-8}}}})
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=("fp32", "fp16", "int8-static"))
    names = [p["name"] for p in r.bulk["presets"]]
    ms = {n: float(r.bulk["metrics"]["latency_ms"][0][names.index(n)]) for n in ("fp32", "fp16", "int8-static")}
    calls = 36864 * 3
    assert ms["fp32"] >= calls * 1e-8 * 1e3 and ms["fp16"] >= 0.8 * ms["fp32"]
    assert ms["int8-static"] > 0.5 * ms["fp32"]  # 1.27 ms predicted for the spatial transformer's, 0.02 before


def test_zipmap_counts_one_map_entry_per_input_element() -> None:
    """A ZipMap's output is a sequence of maps, which has no tensor shape: its work is its input's (scikit-learn
    classifiers' probabilities), where it was a task of unknown work."""
    node = Node("z", "z", "ZipMap", inputs=["p"], outputs=["m"], attributes={"classlabels_int64s": [0, 1, 2]})
    g = graph([node], [act("p", [5, 3]), Value("m", None, "unknown")], ["p"], ["m"])
    w = work_of(node, g)
    assert w.shapes_known and w.in_elements == 15 and w.out_elements == 15
    other = Node("n", "n", "Normalizer", inputs=["p"], outputs=["m"], attributes={"norm": "L1"})
    assert not work_of(other, graph([other], [act("p", [5, 3]), Value("m", None, "unknown")], ["p"], ["m"])).shapes_known
