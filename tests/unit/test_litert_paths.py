"""LiteRT's CPU paths under each option (simulator/litert_paths.py); the chains its calibration times run in
tests/simulator/test_litert_chains.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.profiles import load_profile

HOST = get_target("litert-cpu/host")


def _plan(op: str, kind: str, combo: str) -> object:
    return plan(HOST, load_profile("host-cpu", "litert-cpu"), op, kind, Combo(*combo.split("/")[:3], 0), True, False)


def test_fp16_is_the_fp32_kernel_on_litert_cpu() -> None:
    p = _plan("CONV_2D", "conv", "fp16/fp16/fp16")
    assert p.supported and p.fp32_equivalent and p.in_bytes == 4.0 and p.tag == "fp32"  # the measured fp32 applies
    assert p.resolved == Combo("fp16", "fp16", "fp16", 0) and "computes fp32" in p.note


def test_dynamic_int8_paths() -> None:
    conv = _plan("CONV_2D", "conv", "fp32/fp32/int8")
    fc = _plan("FULLY_CONNECTED", "gemm", "fp32/fp32/int8")
    dw = _plan("DEPTHWISE_CONV_2D", "dwconv", "fp32/fp32/int8")
    assert (conv.tag, fc.tag, dw.tag) == ("qd8", "qd8", "hybrid")
    assert conv.compute == "int8" and conv.w_runtime_bytes == 1.0 and conv.extra_dispatches == 1
    assert "TFLite's own hybrid kernel" in dw.note
    # ONNX Runtime's rule for the same option (ConvInteger + Cast/Mul/Add) is not LiteRT's.
    ort = plan(get_target("ort-cpu/host"), load_profile("host-cpu"), "Conv", "conv", Combo("fp32", "fp32", "int8", 0),
               True, False)
    assert ort.tag == "int8dyn"


def test_static_int8_takes_the_generic_int8_path() -> None:
    assert _plan("CONV_2D", "conv", "int8/int8/int8").tag == "int8"


def test_static_int8_hard_swish_runs_at_its_own_calibrated_rate() -> None:
    """int8 HARD_SWISH is ~8x the int8 element-wise ops' time (MobileNetV3-Small int8-static): its own efficiency,
    `elementwise.hswish8`, where LiteRT's calibration gave one; else (and for other ops, other options) the generic
    path."""
    from simulator.roofline import Rates, rates

    hw = load_profile("host-cpu", "litert-cpu")
    cal = hw.with_overrides({"units": {"cpu": {"efficiency": {"elementwise.hswish8": 0.002}}}})
    c8, c32 = Combo("int8", "int8", "-", 0), Combo("fp32", "fp32", "-", 0)
    hs = plan(HOST, cal, "HARD_SWISH", "elementwise", c8, False, False)
    assert hs.tag == "hswish8" and hs.supported and "HARD_SWISH" in hs.note
    r: Rates = rates(cal, hs, "elementwise", False)
    generic = plan(HOST, cal, "ADD", "elementwise", c8, False, False)
    assert generic.tag != "hswish8" and rates(cal, generic, "elementwise", False).peak > 5 * r.peak
    assert plan(HOST, cal, "HARD_SWISH", "elementwise", c32, False, False).tag != "hswish8"
    assert plan(HOST, hw, "HARD_SWISH", "elementwise", c8, False, False).tag != "hswish8"  # not calibrated


def test_int4_weights_leave_xnnpack_for_tflites_own_kernels() -> None:
    """ai-edge-quantizer's int4 weights sit behind a run-time DEQUANTIZE that XNNPACK does not take: TFLite's own fp32
    CONV_2D / FULLY_CONNECTED run (1.5-4x XNNPACK's fp32 time, profiled); a depthwise conv keeps fp32 weights."""
    conv = _plan("CONV_2D", "conv", "fp32/fp32/int4")
    fc = _plan("FULLY_CONNECTED", "gemm", "fp32/fp32/int4")
    assert (conv.tag, fc.tag) == ("builtin", "builtin") and (conv.rate_kind, fc.rate_kind) == ("conv", "gemm")
    assert conv.w_runtime_bytes == 4.0 and "TFLite's own fp32 kernel" in conv.note
    from simulator.roofline import efficiency

    cpu = load_profile("host-cpu", "litert-cpu").units[0]
    assert efficiency(cpu, "conv", "builtin") < 0.5 * efficiency(cpu, "conv", "fp32")
    assert _plan("DEPTHWISE_CONV_2D", "dwconv", "fp32/fp32/int4").tag != "builtin"


def _facts_plan(op: str, kind: str, combo: Combo, has_kernel: bool, facts: frozenset[str]) -> object:
    return plan(HOST, load_profile("host-cpu", "litert-cpu"), op, kind, combo, has_kernel, False, facts=facts)


def test_a_pad_xnnpack_folds_into_its_conv_costs_nothing_under_every_option() -> None:
    """litert-torch writes a stride-2 conv's symmetric padding as PAD + VALID conv; XNNPACK folds the PAD into the
    conv (profiled: no time of its own under fp32). Its own option never changes (no weights), so where the conv
    does not fold it, the conv carries its time (next test) and the PAD itself stays at zero."""
    from compiler.vocabulary.options import parse_preset
    from simulator.litert_paths import PAD_FOLDED

    for preset in ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights"):
        combo = parse_preset(preset).resolve("fp32", False)
        assert _facts_plan("PAD", "layout", combo, False, frozenset({PAD_FOLDED})).eliminated
        assert not _facts_plan("PAD", "layout", combo, False, frozenset()).eliminated


def test_the_conv_after_a_pad_carries_it_where_its_path_does_not_fold_it() -> None:
    """Dynamic int8 (a Convert between PAD and a QD8 conv; the hybrid depthwise kernel, not XNNPACK's) and int4
    (TFLite's own conv) leave the PAD to run on its own (XNNPACK's Constant Pad, 1.9 ms in MobileNetV2's
    int8-dynamic file); fp32 and static int8 fold it."""
    from simulator.litert_paths import AFTER_PAD

    after = frozenset({AFTER_PAD})
    for op, kind, kernel, acts, carries in (
            ("DEPTHWISE_CONV_2D", "dwconv", "int8", "fp32", True), ("CONV_2D", "conv", "int8", "fp32", True),
            ("CONV_2D", "conv", "int4", "fp32", True), ("CONV_2D", "conv", "fp32", "fp32", False),
            ("DEPTHWISE_CONV_2D", "dwconv", "fp32", "fp32", False), ("CONV_2D", "conv", "int8", "int8", False)):
        c = Combo(acts, acts, kernel, 0)
        plain, padded = _facts_plan(op, kind, c, True, frozenset()), _facts_plan(op, kind, c, True, after)
        assert (padded.cached_extra_in_bytes > plain.cached_extra_in_bytes) is carries, (op, kernel, acts)
        assert padded.extra_dispatches == plain.extra_dispatches + carries
        assert ("PAD before it runs on its own" in padded.note) is carries


def test_an_unfolded_pad_pays_a_copy_per_pixel() -> None:
    """The Constant Pad XNNPACK runs on its own copies pixel by pixel (~12 ns each beside the bytes): per element,
    a 3-channel image PAD costs ~30x what a 96-channel one does (MobileNetV2 int8-dynamic, profiled: the image PAD
    226x226x3 0.61 ms, predicted 0.03 by the bytes alone)."""
    from simulator.litert_paths import AFTER_PAD

    c = Combo("fp32", "fp32", "int8", 0)
    plain = _facts_plan("CONV_2D", "conv", c, True, frozenset())
    image, wide, unknown = (_facts_plan("CONV_2D", "conv", c, True, frozenset({AFTER_PAD, *f}))
                            for f in ({"pad_channels=3"}, {"pad_channels=96"}, set()))
    per_el = [p.cached_extra_in_bytes - plain.cached_extra_in_bytes for p in (image, wide, unknown)]
    assert per_el[0] > 10 * per_el[1] and per_el[2] == 16.0  # unknown channels: the bytes only
    assert 3 * per_el[0] == pytest.approx(96 * (per_el[1] - 16.0) + 3 * 16.0)  # the same cost per pixel


def _conv_latency(hw: object, p: object, pixels: float, c_in: int, c_out: int) -> float:
    """One 3x3 conv's latency on path `p` (simulator.roofline.task_cost), over `pixels` output pixels."""
    import numpy as np

    from simulator.roofline import Counts, Residency, rates, stack, task_cost

    col = lambda x: np.array([[x]], dtype=np.float64)  # noqa: E731
    w = Counts(macs=col(9 * c_in * c_out * pixels), flops=col(0), epilogue_flops=col(0),
               in_elements=col(4 * pixels * c_in), out_elements=col(pixels * c_out),
               kernel_elements=col(9 * c_in * c_out),
               aux_elements=col(c_out), other_const_bytes=col(0), kernel_rows=col(c_out), im2col_elements=col(0),
               groups=col(1), im2col_rows=col(0))
    return float(task_cost(w, stack([rates(hw, p, "conv", False)]), Residency(True, 0.0)).latency_s[0, 0])


def test_an_unfolded_pads_copy_moves_at_the_cache_rate_whatever_the_convs_size() -> None:
    """The PAD's pass is charged at the cache rate, not at the rate of the conv's own traffic: an image stem's input
    and output outgrow the L2, and on a Sapphire Rapids VM measuring 27 GB/s from memory the image PAD was predicted
    2.1 ms against 0.35-0.38 profiled. Its charge is the same whatever the memory bandwidth."""
    from simulator.litert_paths import AFTER_PAD

    hw = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"onchip_memory_bytes": 2.0 ** 21}}})
    slow = hw.with_overrides({"dram_bandwidth_bytes_per_s": hw.dram_bandwidth_bytes_per_s / 4})
    c = Combo("fp32", "fp32", "int8", 0)
    plain = plan(HOST, hw, "CONV_2D", "conv", c, True, False, facts=frozenset())
    padded = plan(HOST, hw, "CONV_2D", "conv", c, True, False, facts=frozenset({AFTER_PAD, "pad_channels=3"}))
    pixels = 112 * 112  # 3 -> 32 channels: 0.6 MB in, 1.6 MB out, beyond a 2 MiB L2
    pad = [_conv_latency(h, padded, pixels, 3, 32) - _conv_latency(h, plain, pixels, 3, 32) for h in (hw, slow)]
    assert pad[0] == pytest.approx(pad[1])
    cpu = hw.units[0]
    copy = 4 * pixels * 3 * padded.cached_extra_in_bytes / cpu.cache_bandwidth_bytes_per_s
    assert pad[0] == pytest.approx(copy + cpu.dispatch_overhead_s)  # and its own kernel launch
    assert plain.cached_extra_in_bytes == 0.0


def test_a_static_int8_pointwise_conv_runs_the_fully_connected_gemm_at_its_own_figures() -> None:
    """Under static int8 a 1x1 stride-1 conv is XNNPACK's fully connected QS8 GEMM, which pays a cost per pixel the
    indirect GEMM does not (MobileNetV2's int8-static file on AMX: 3.0x / 1.6x at 112x112): its own figures
    (`conv.int8gemm`, `.pixel`), where LiteRT's calibration gave them; a 3x3 conv and an uncalibrated profile keep
    the generic int8 path."""
    from simulator.litert_paths import GEMM_CONV, QS8_GEMM_TAG, QS8_OUT
    from simulator.roofline import rates

    hw = load_profile("host-cpu", "litert-cpu")
    cal = hw.with_overrides({"units": {"cpu": {"efficiency": {f"conv.{QS8_GEMM_TAG}": 4.0},
                                               "kind_overhead_s": {f"conv.{QS8_GEMM_TAG}.pixel": 1e-8}}}})
    c8, dyn = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "int8", 0)
    gemm, facts = frozenset({GEMM_CONV, QS8_OUT}), frozenset({QS8_OUT})
    pw = plan(HOST, cal, "CONV_2D", "conv", c8, True, False, facts=gemm)
    assert pw.tag == QS8_GEMM_TAG and pw.setup_per_pixel and pw.out_cost and "fully connected QS8 GEMM" in pw.note
    assert rates(cal, pw, "conv", False).pixel_s == 1e-8
    assert plan(HOST, cal, "CONV_2D", "conv", c8, True, False, facts=facts).tag == "int8"  # an indirect GEMM
    assert plan(HOST, hw, "CONV_2D", "conv", c8, True, False, facts=gemm).tag == "int8"  # not calibrated
    assert plan(HOST, cal, "CONV_2D", "conv", dyn, True, False, facts=gemm).tag == "qd8gemm"  # dynamic int8: QD8's
    pixels = 112 * 112
    assert _conv_latency(cal, pw, pixels, 16, 16) > pixels * 1e-8


def test_qd8_pays_a_cost_per_output_pixel() -> None:
    """XNNPACK's QD8 quantizes each row (pixel) with its own parameters: the path has a per-pixel cost, fitted by
    LiteRT's calibration as `conv.qd8.pixel`, which its rates read."""
    from simulator.roofline import rates

    hw = load_profile("host-cpu", "litert-cpu").with_overrides(
        {"units": {"cpu": {"kind_overhead_s": {"conv.qd8.pixel": 3e-8}}}})
    qd8 = plan(HOST, hw, "CONV_2D", "conv", Combo("fp32", "fp32", "int8", 0), True, False)
    f32 = plan(HOST, hw, "CONV_2D", "conv", Combo("fp32", "fp32", "fp32", 0), True, False)
    assert qd8.setup_per_pixel and not f32.setup_per_pixel
    assert rates(hw, qd8, "conv", False).pixel_s == 3e-8 and rates(hw, f32, "conv", False).pixel_s == 0.0


def test_litert_task_facts_find_the_pads_xnnpack_folds(tmp_path: Path) -> None:
    """Only a zero PAD on H and W whose one reader is a conv (reading it as its input) is folded."""
    import numpy as np

    from compiler.frontends import tflite
    from compiler.frontends.tflite_writer import TfliteWriter
    from simulator.litert_paths import (AFTER_PAD, DW_PIXEL_BYTES, PAD_FOLDED, QS8_OUT, XNN_CONV, dw_pixel_bytes,
                                        litert_task_facts)

    w = TfliteWriter(description="pads")
    x = w.tensor("x", [1, 8, 8, 4])

    def pad(name: str, src: int, pads: list[list[int]], shape: list[int]) -> int:
        out = w.tensor(name, shape)
        w.op("PAD", [src, w.const(name + "/p", np.array(pads, np.int32))], [out], w.options("PadOptions"))
        return out

    def conv(name: str, src: int, op: str, shape: list[int], c_in: int) -> int:
        out = w.tensor(name, shape)
        c = shape[3]
        kernel = np.zeros([1, 3, 3, c] if op == "DEPTHWISE_CONV_2D" else [c, 3, 3, c_in], np.float32)
        opts = (w.options("DepthwiseConv2DOptions", padding=1, strideW=1, strideH=1, depthMultiplier=1)
                if op == "DEPTHWISE_CONV_2D" else w.options("Conv2DOptions", padding=1, strideW=1, strideH=1))
        w.op(op, [src, w.const(name + "/w", kernel), w.const(name + "/b", np.zeros(c, np.float32))], [out], opts)
        return out

    spatial = [[0, 0], [1, 1], [1, 1], [0, 0]]
    a = conv("dw", pad("pad_a", x, spatial, [1, 10, 10, 4]), "DEPTHWISE_CONV_2D", [1, 8, 8, 4], 4)
    b = conv("conv_b", pad("pad_b", a, [[0, 0], [1, 1], [1, 1], [0, 4]], [1, 10, 10, 8]), "CONV_2D", [1, 8, 8, 8], 8)
    p_c = pad("pad_c", a, spatial, [1, 10, 10, 4])  # two readers: the conv and an ADD
    c = conv("conv_c", p_c, "CONV_2D", [1, 8, 8, 4], 4)
    d = w.tensor("add", [1, 10, 10, 4])
    w.op("ADD", [p_c, p_c], [d], w.options("AddOptions"))
    g = tflite.load(w.save(tmp_path / "pads.tflite", [x], [b, c, d]))
    facts = dict(zip((n.op_type + ":" + n.outputs[0] for n in g.nodes), litert_task_facts(g)))
    dw_facts = {AFTER_PAD, "pad_channels=4", f"{DW_PIXEL_BYTES}{dw_pixel_bytes(9, 4)}"}
    assert facts == {"PAD:pad_a": {PAD_FOLDED}, "DEPTHWISE_CONV_2D:dw": dw_facts, "PAD:pad_b": set(),
                     "CONV_2D:conv_b": {QS8_OUT, XNN_CONV}, "PAD:pad_c": set(), "CONV_2D:conv_c": {QS8_OUT, XNN_CONV},
                     "ADD:add": set()}


def test_the_hybrid_depthwise_kernel_pays_for_its_output_beyond_the_l2() -> None:
    """TFLite's hybrid depthwise kernel steps up once its fp32 output outgrows the core's L2: `dwconv.hybrid.spill`
    per output byte beyond `l2_share_bytes`, nothing below it, and no other path (nor an unknown L2) pays it."""
    import numpy as np

    from simulator.roofline import Counts, Residency, rates, stack, task_cost

    l2, spill = 512 * 1024, 2e-9
    hw = load_profile("host-cpu", "litert-cpu").with_overrides(
        {"units": {"cpu": {"l2_share_bytes": float(l2), "kind_overhead_s": {"dwconv.hybrid.spill": spill}}}})
    hybrid = plan(HOST, hw, "DEPTHWISE_CONV_2D", "dwconv", Combo("fp32", "fp32", "int8", 0), True, False)
    f32 = plan(HOST, hw, "DEPTHWISE_CONV_2D", "dwconv", Combo("fp32", "fp32", "fp32", 0), True, False)
    assert hybrid.spill and not f32.spill

    def latency(hw_: object, p: object, elements: float) -> float:
        col = lambda x: np.array([[x]], dtype=np.float64)  # noqa: E731
        w = Counts(macs=col(9 * elements), flops=col(0), epilogue_flops=col(0), in_elements=col(elements),
                   out_elements=col(elements), kernel_elements=col(9 * 32), aux_elements=col(32),
                   other_const_bytes=col(0), kernel_rows=col(32), im2col_elements=col(0), groups=col(32),
                   im2col_rows=col(0))
        return float(task_cost(w, stack([rates(hw_, p, "dwconv", False)]), Residency(True, 0.0)).latency_s[0, 0])

    no_spill = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {"dwconv.hybrid.spill": 0.0}}}})
    small, big = 28 * 28 * 96, 112 * 112 * 32  # fp32 outputs 294 KiB and 1.5 MiB
    assert latency(hw, hybrid, small) == latency(no_spill, hybrid, small)
    assert latency(hw, hybrid, big) - latency(no_spill, hybrid, big) == pytest.approx(spill * (4 * big - l2))
    assert latency(hw, f32, big) == latency(no_spill, f32, big)
    unknown = hw.with_overrides({"units": {"cpu": {"l2_share_bytes": 0.0}}})
    assert rates(unknown, hybrid, "dwconv", False).spill_s == 0.0


def test_only_the_slices_xnnpack_takes_stay_off_tflites_reference_kernel(tmp_path: Path) -> None:
    """XNNPACK's STRIDED_SLICE wants begin / end / strides as int32 constants of the file, strides 1, no ellipsis,
    new-axis or shrink-axis mask and float data (VisitStridedSliceNode); the rest run TFLite's reference kernel at
    its own rate, `layout.builtin.STRIDED_SLICE` (BirdNET's slices, whose `end` a CONCATENATION computes)."""
    import numpy as np

    from compiler.frontends import tflite
    from compiler.frontends.tflite_writer import TfliteWriter
    from simulator.litert_paths import BUILTIN_SLICE, litert_task_facts
    from simulator.sweep import sweep

    w = TfliteWriter(description="slices")
    x = w.tensor("x", [1, 4000])
    i32 = lambda name, v: w.const(name, np.array(v, np.int32))  # noqa: E731
    end = w.tensor("end", [2], "int32")
    w.op("CONCATENATION", [i32("h", [1]), i32("t", [3000])], [end], w.options("ConcatenationOptions", axis=0))

    def sl(name: str, src: int, ins: list[int], shape: list[int], dtype: str = "float32", **masks: int) -> int:
        y = w.tensor(name, shape, dtype)
        w.op("STRIDED_SLICE", [src, *ins], [y], w.options("StridedSliceOptions", **masks))
        return y

    begin, ones = i32("begin", [0, 0]), i32("ones", [1, 1])
    outs = [sl("const", x, [begin, i32("e", [1, 3000]), ones], [1, 3000]),
            sl("computed_end", x, [begin, end, ones], [1, 3000]),
            sl("stride2", x, [begin, i32("e2", [1, 3000]), i32("two", [1, 2])], [1, 1500]),
            sl("shrink", x, [begin, i32("e3", [1, 3000]), ones], [3000], shrinkAxisMask=1)]
    shape = w.tensor("shape", [2], "int32")
    w.op("SHAPE", [x], [shape], w.options("ShapeOptions"))
    outs.append(sl("ints", shape, [i32("b1", [1]), i32("e1", [2]), i32("s1", [1])], [1]))
    g = tflite.load(w.save(tmp_path / "slices.tflite", [x], outs))
    facts = {n.outputs[0]: f for n, f in zip(g.nodes, litert_task_facts(g)) if n.op_type == "STRIDED_SLICE"}
    assert facts == {"const": set(), "computed_end": {BUILTIN_SLICE}, "stride2": {BUILTIN_SLICE},
                     "shrink": {BUILTIN_SLICE}, "ints": {BUILTIN_SLICE}}

    def ms(eff: float) -> dict[str, float]:
        hw = load_profile("host-cpu", "litert-cpu").with_overrides(
            {"units": {"cpu": {"efficiency": {"layout.builtin.STRIDED_SLICE": eff}}}})
        r = sweep(g, HOST, hardware=hw, presets_only=("fp32",))
        j = [p["name"] for p in r.bulk["presets"]].index("fp32")
        return {n.outputs[0]: row[j] for n, row in zip(g.nodes, r.bulk["metrics"]["latency_ms"])}

    fast, slow = ms(1.0), ms(1e-3)
    assert slow["const"] == pytest.approx(fast["const"])  # XNNPACK's copy: the kind's rate, not the builtin's
    assert slow["computed_end"] > 5 * fast["computed_end"] and slow["computed_end"] > 3 * slow["const"]


def test_an_int8_silu_is_one_table_lookup(tmp_path: Path) -> None:
    """LOGISTIC then MUL by its own input (a SiLU): on int8 data XNNPACK runs the pair as one 256-entry lookup, at
    `elementwise.lut`, charged to the LOGISTIC (the profiler's event); the MUL is gone. A squeeze-excite MUL (two
    tensors) and a LOGISTIC read twice stay what they were; fp32 is untouched."""
    from compiler.frontends import tflite
    from compiler.frontends.tflite_writer import TfliteWriter
    from simulator.litert_paths import SILU_FOLDED, SILU_LUT, litert_task_facts
    from simulator.sweep import sweep

    w = TfliteWriter(description="silu")
    shape = [1, 28, 28, 64]
    x = w.tensor("x", shape)

    def op(name: str, code: str, ins: list[int], opts: object = None) -> int:
        y = w.tensor(name, shape)
        w.op(code, ins, [y], opts)
        return y

    silu = op("silu", "MUL", [x, op("sig", "LOGISTIC", [x])], w.options("MulOptions"))
    se = op("se", "MUL", [silu, op("gate", "LOGISTIC", [x])], w.options("MulOptions"))  # gates another tensor
    twice = op("twice", "LOGISTIC", [se])
    out = op("out", "ADD", [op("m", "MUL", [se, twice], w.options("MulOptions")), twice], w.options("AddOptions"))
    g = tflite.load(w.save(tmp_path / "silu.tflite", [x], [out]))
    facts = {n.outputs[0]: f for n, f in zip(g.nodes, litert_task_facts(g))}
    assert facts == {"sig": {SILU_LUT}, "silu": {SILU_FOLDED}, "gate": set(), "se": set(), "twice": set(),
                     "m": set(), "out": set()}

    def ms(preset: str, eff: float) -> dict[str, float]:
        hw = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"efficiency": {"elementwise.lut": eff}}}})
        r = sweep(g, HOST, hardware=hw, presets_only=(preset,))
        j = [p["name"] for p in r.bulk["presets"]].index(preset)
        return {n.outputs[0]: row[j] for n, row in zip(g.nodes, r.bulk["metrics"]["latency_ms"])}

    fast, slow = ms("int8-static", 1.0), ms("int8-static", 1e-3)
    assert fast["silu"] == slow["silu"] == 0.0 and fast["se"] > 0.0  # the SiLU's MUL folded, the gate's kept
    assert slow["sig"] > 10 * fast["sig"] and slow["gate"] == pytest.approx(fast["gate"])  # only the lookup's rate
    f32 = ms("fp32", 1e-3)
    assert f32["silu"] > 0.0 and f32["sig"] == pytest.approx(ms("fp32", 1.0)["sig"])


def test_integer_gemms_multiply_their_channels_rounded_up_to_the_machines_blocks(tmp_path: Path) -> None:
    """XNNPACK's QS8 / QD8 kernels pack each tap's input channels rounded up to their K block and compute the output
    channels in blocks of N (AVX2 8 x 8, AVX-512 8 x 16, AMX 64 x 64): a 3-channel stem does 8/3 of its MACs at
    K = 8, 64/3 at K = 64; 16 output channels cost 64 with AMX. fp32 (F32 IGEMM, no such block) is as counted."""
    import numpy as np

    from compiler.frontends import tflite
    from compiler.frontends.tflite_writer import TfliteWriter
    from simulator.host_machine import int8_gemm_blocks
    from simulator.sweep import sweep
    from simulator.tflite_ops import tflite_works

    assert int8_gemm_blocks(frozenset({"avx2", "fma"})) == (8, 8)
    assert int8_gemm_blocks(frozenset({"avx2", "avx512f", "avx512_vnni"})) == (8, 16)
    assert int8_gemm_blocks(frozenset({"avx2", "avx512f", "avx512_vnni", "amx_int8", "amx_tile"})) == (64, 64)
    w = TfliteWriter(description="stems")
    outs = []
    for c, co in ((3, 64), (8, 64), (8, 16)):
        x = w.tensor(f"x{c}-{co}", [1, 112, 112, c])
        y = w.tensor(f"y{c}-{co}", [1, 112, 112, co])
        w.op("CONV_2D", [x, w.const(f"w{c}-{co}", np.full([co, 3, 3, c], 0.01, np.float32)),
                         w.const(f"b{c}-{co}", np.zeros(co, np.float32))], [y],
             w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
        outs.append(x)
    ys = [n for n in range(len(w.tensors)) if w.tensors[n].name.startswith(b"y")]
    g = tflite.load(w.save(tmp_path / "stems.tflite", outs, ys))
    assert [wk.gemm_k for wk in tflite_works(g)[0]] == [3.0, 8.0, 8.0]
    base = load_profile("host-cpu", "litert-cpu").with_overrides(
        {"units": {"cpu": {"efficiency": {"conv.int8": 1.0}, "kind_overhead_s": {"conv.int8": 0.0}}}})

    def ms(hw: object, preset: str) -> list[float]:
        r = sweep(g, HOST, hardware=hw, presets_only=(preset,))
        j = [p["name"] for p in r.bulk["presets"]].index(preset)
        return [row[j] for row in r.bulk["metrics"]["latency_ms"]]

    def blocks(k: int, n: int) -> object:
        return base.with_overrides({"units": {"cpu": {"int8_k_block": float(k), "int8_n_block": float(n)}}})

    avx2, amx, k4 = ms(blocks(8, 8), "int8-static"), ms(blocks(64, 64), "int8-static"), ms(blocks(4, 64), "int8-static")
    assert avx2[0] == pytest.approx(avx2[1], rel=0.05)  # 3 channels padded to 8: the 8-channel conv's compute
    assert k4[0] < 0.8 * k4[1]  # K = 4: 4/8 of it
    assert amx[0] == pytest.approx(amx[1], rel=0.05) and amx[1] > 5 * avx2[1]  # K = 64: 3 and 8 channels alike
    assert k4[2] > 2.5 * avx2[2]  # 16 outputs: 64 computed with N = 64
    dyn_amx, dyn_avx2 = ms(blocks(64, 64), "int8-dynamic"), ms(blocks(8, 8), "int8-dynamic")
    assert dyn_amx[0] > 2.5 * dyn_avx2[0]  # QD8: the same blocks
    f32 = ms(blocks(64, 64), "fp32")
    assert f32[0] < 0.6 * f32[1] and f32[2] < 0.4 * f32[1]  # fp32: as counted


def test_a_pointwise_conv_under_dynamic_int8_runs_xnnpacks_fully_connected_gemm(tmp_path: Path) -> None:
    """XNNPACK runs a 1x1 stride-1 CONV_2D as a fully connected GEMM, which under dynamic int8 quantizes each input
    row inline at a cost of its own: such a conv takes the `qd8gemm` figures (fitted by LiteRT's calibration on its
    1x1 cases), a 3x3 or a strided 1x1 conv keeps `qd8`; static int8 and fp32 are unchanged."""
    import numpy as np

    from compiler.frontends import tflite
    from compiler.frontends.tflite_writer import TfliteWriter
    from simulator.litert_paths import GEMM_CONV, litert_task_facts
    from simulator.sweep import sweep

    w = TfliteWriter(description="pointwise")
    x = w.tensor("x", [1, 28, 28, 32])
    ys = []
    for name, k, s in (("pw", 1, 1), ("k3", 3, 1), ("pw2", 1, 2)):
        h = 28 // s
        y = w.tensor(name, [1, h, h, 32])
        w.op("CONV_2D", [x, w.const(f"{name}/w", np.full([32, k, k, 32], 0.01, np.float32)),
                         w.const(f"{name}/b", np.zeros(32, np.float32))], [y],
             w.options("Conv2DOptions", padding=0, strideW=s, strideH=s))
        ys.append(y)
    g = tflite.load(w.save(tmp_path / "pw.tflite", [x], ys))
    assert [GEMM_CONV in f for f in litert_task_facts(g)] == [True, False, False]
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {
        "efficiency": {"conv.qd8": 1.0, "conv.qd8gemm": 1.0},
        "kind_overhead_s": {"conv.qd8": 0.0, "conv.qd8.pixel": 1e-8, "conv.qd8gemm": 0.0, "conv.qd8gemm.pixel": 1e-8}}}})
    dearer = base.with_overrides({"units": {"cpu": {"kind_overhead_s": {"conv.qd8gemm.pixel": 5e-8}}}})

    def ms(hw: object, preset: str) -> list[float]:
        r = sweep(g, HOST, hardware=hw, presets_only=(preset,))
        j = [p["name"] for p in r.bulk["presets"]].index(preset)
        return [row[j] for row in r.bulk["metrics"]["latency_ms"]]

    before, after = ms(base, "int8-dynamic"), ms(dearer, "int8-dynamic")
    assert after[0] == pytest.approx(before[0] + 28 * 28 * 4e-8 * 1e3, rel=0.01)  # its own cost per pixel
    assert after[1:] == before[1:]
    for preset in ("int8-static", "fp32"):
        assert ms(dearer, preset) == ms(base, preset)


def test_a_depthwise_conv_beyond_xnnpacks_tiles_runs_as_a_grouped_igemm(tmp_path: Path) -> None:
    """XNNPACK's x86 fp32 depthwise kernels cover at most 25 taps: a 7x7 depthwise conv (ConvNeXt's) runs as a grouped
    IGEMM at its own figure (`dwconv.grouped`, fitted by LiteRT's calibration on 7x7 cases), under fp32 and fp16
    (fp32's kernels), and so does QS8 under static int8 (`dwconv.grouped8`); 5x5 and 3x3 ones keep the depthwise
    figure, and the hybrid int8 kernel is not XNNPACK's."""
    from compiler.frontends import tflite
    from simulator.litert_paths import DW_GROUPED, litert_task_facts
    from simulator.sweep import sweep
    from testkit.tflite_builder import depthwise_trio

    g = tflite.load(depthwise_trio(tmp_path / "dw.tflite"))
    assert [DW_GROUPED in f for f in litert_task_facts(g)] == [True, False, False]
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {
        "efficiency": {"dwconv.fp32": 0.2, "dwconv.grouped": 0.2, "dwconv.int8": 0.2, "dwconv.grouped8": 0.2}}}})
    slower = base.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.grouped": 0.02, "dwconv.grouped8": 0.02}}}})

    def ms(hw: object, preset: str) -> list[float]:
        r = sweep(g, HOST, hardware=hw, presets_only=(preset,))
        j = [p["name"] for p in r.bulk["presets"]].index(preset)
        return [row[j] for row in r.bulk["metrics"]["latency_ms"]]

    for preset in ("fp32", "fp16", "int8-static"):  # static int8: QS8's own figure (`dwconv.grouped8`)
        before, after = ms(base, preset), ms(slower, preset)
        assert after[0] > 3 * before[0]  # the grouped IGEMM's own rate
        assert after[1:] == before[1:]
    assert ms(slower, "int8-dynamic") == ms(base, "int8-dynamic")


def test_fp32_convs_pay_xnnpacks_output_channel_block_and_a_pointwise_one_its_gemm_figures(tmp_path: Path) -> None:
    """XNNPACK's F32 GEMM (1x1 stride-1 conv) and IGEMM (other convs) compute output channels in blocks of nr (16 on x86
    with AVX: 24 channels cost 32), and the 1x1 GEMM runs at `conv.fp32gemm` where calibrated (the IGEMM keeps
    `conv.fp32`); fp16 weights run the same fp32 kernels. Without `f32_n_block` the channels are as counted."""
    import numpy as np

    from compiler.frontends import tflite
    from compiler.frontends.tflite_writer import TfliteWriter
    from simulator.host_machine import f32_gemm_n_block
    from simulator.litert_paths import GEMM_CONV, XNN_CONV, litert_task_facts
    from simulator.sweep import sweep

    assert f32_gemm_n_block(frozenset({"avx", "avx2", "fma", "avx512f"})) == 16
    assert f32_gemm_n_block(frozenset({"avx", "avx2", "fma"})) == 16 and f32_gemm_n_block(frozenset({"sse2"})) == 8
    w = TfliteWriter(description="f32 blocks")
    x = w.tensor("x", [1, 28, 28, 96])
    ys = []
    for name, k, co in (("pw24", 1, 24), ("pw32", 1, 32), ("k3-24", 3, 24), ("k3-32", 3, 32)):
        y = w.tensor(name, [1, 28, 28, co])
        w.op("CONV_2D", [x, w.const(f"{name}/w", np.full([co, k, k, 96], 0.01, np.float32)),
                         w.const(f"{name}/b", np.zeros(co, np.float32))], [y],
             w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
        ys.append(y)
    g = tflite.load(w.save(tmp_path / "f32.tflite", [x], ys))
    facts = litert_task_facts(g)
    assert all(XNN_CONV in f for f in facts) and [GEMM_CONV in f for f in facts] == [True, True, False, False]
    # compute-bound figures (a slow rate, no fixed cost): each conv's time is its MACs as computed
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {
        "efficiency": {"conv.fp32": 0.01}, "kind_overhead_s": {"conv.fp32": 0.0}}}})
    blocked = base.with_overrides({"units": {"cpu": {"f32_n_block": 16.0}}})
    split = blocked.with_overrides({"units": {"cpu": {"efficiency": {"conv.fp32gemm": 0.02},
                                                      "kind_overhead_s": {"conv.fp32gemm": 0.0}}}})

    def ms(hw: object, preset: str = "fp32") -> list[float]:
        r = sweep(g, HOST, hardware=hw, presets_only=(preset,))
        j = [p["name"] for p in r.bulk["presets"]].index(preset)
        return [row[j] for row in r.bulk["metrics"]["latency_ms"]]

    plain, pad, two = ms(base), ms(blocked), ms(split)
    assert plain[0] == pytest.approx(0.75 * plain[1], rel=0.02) and plain[2] == pytest.approx(0.75 * plain[3], rel=0.02)
    assert pad[0] == pytest.approx(pad[1], rel=0.02) and pad[2] == pytest.approx(pad[3], rel=0.02)  # 24 cost 32
    assert two[1] == pytest.approx(0.5 * pad[1], rel=0.02) and two[2:] == pad[2:]  # only the 1x1 GEMM at its own rate
    assert ms(split, "fp16") == pytest.approx(two, rel=0.02)  # fp16 weights: fp32's kernels (their bytes aside)


def test_xnnpacks_fp32_igemm_computes_wider_blocks_from_that_many_outputs_on(tmp_path: Path) -> None:
    """XNNPACK runs an F32 conv on its IGEMM config's kernels and on its `nr2` kernels only where their nr exceeds the
    output channels (convolution-nhwc.c, select_gemm_config): with blocks of 32 and 16, a 3x3 conv of 48 outputs computes
    64, of 24 computes 32 and of 16 computes 16; a 1x1 one (the GEMM) keeps blocks of 16 (48 computes 48)."""
    import numpy as np

    from compiler.frontends import tflite
    from compiler.frontends.tflite_writer import TfliteWriter
    from simulator.host_machine import f32_igemm_n_block
    from simulator.sweep import sweep

    assert f32_igemm_n_block(frozenset({"avx", "avx2", "avx512f"})) == 32
    assert f32_igemm_n_block(frozenset({"avx", "avx2", "fma"})) == 16
    w = TfliteWriter(description="igemm blocks")
    x = w.tensor("x", [1, 28, 28, 64])
    ys = []
    for name, k, co in (("k3-48", 3, 48), ("k3-64", 3, 64), ("k3-24", 3, 24), ("k3-16", 3, 16), ("pw48", 1, 48),
                        ("pw64", 1, 64)):
        y = w.tensor(name, [1, 28, 28, co])
        w.op("CONV_2D", [x, w.const(f"{name}/w", np.full([co, k, k, 64], 0.01, np.float32)),
                         w.const(f"{name}/b", np.zeros(co, np.float32))], [y],
             w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
        ys.append(y)
    g = tflite.load(w.save(tmp_path / "igemm.tflite", [x], ys))
    hw = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {
        "efficiency": {"conv.fp32": 0.01}, "kind_overhead_s": {"conv.fp32": 0.0},
        "f32_n_block": 16.0, "f32_igemm_n_block": 32.0}}})
    r = sweep(g, HOST, hardware=hw, presets_only=("fp32",))
    j = [p["name"] for p in r.bulk["presets"]].index("fp32")
    ms = [row[j] for row in r.bulk["metrics"]["latency_ms"]]
    assert ms[0] == pytest.approx(ms[1], rel=0.02)  # 48 outputs compute 64
    assert ms[2] == pytest.approx(ms[1] / 2, rel=0.02)  # 24 compute 32 (nr2's 16)
    assert ms[3] == pytest.approx(ms[1] / 4, rel=0.03)  # 16 compute 16
    assert ms[4] == pytest.approx(0.75 * ms[5], rel=0.02)  # the 1x1 GEMM: 48 compute 48
