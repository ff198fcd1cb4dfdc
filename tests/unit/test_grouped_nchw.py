"""Grouped (not depthwise) Convs ORT leaves in NCHW: MLAS runs them group by group, im2col + an SGEMM each, at figures
of their own (`gconvnchw.nchw*`, host-cpu.yaml), where the NCHWc rate predicted RegNetX-002's at 0.13-0.5x."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.costs import work_of
from simulator.calibration_bench import CASES
from simulator.calibration_fit import off_path
from simulator.host_machine import machine_overrides
from simulator.profiles import load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import act, graph, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
FP32 = Combo("fp32", "fp32", "fp32", 0)


def _grouped(op: str, domain: str, c: int = 56, width: int = 8, stride: int = 1, size: int = 28):
    out = size // stride
    return graph([Node("g", "g", op, inputs=["x", "w"], outputs=["y"], domain=domain,
                       attributes={"group": c // width, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                   "strides": [stride, stride], **({"activation": "Relu"} if op == "FusedConv" else {})})],
                 [act("x", [1, c, size, size]), weight("w", [c, width, 3, 3]), act("y", [1, c, out, out])], ["x"], ["y"])


def test_grouped_conv_left_in_nchw_records_its_groups_and_every_groups_im2col() -> None:
    c, width = 56, 8
    g = _grouped("FusedConv", "com.microsoft", c, width)
    w = work_of(g.nodes[0], g)
    assert w.kind == "gconvnchw" and w.groups == c // width
    assert w.macs == c * 28 * 28 * width * 9
    # Every group expands its own input channels: width x 3 x 3 taps per output pixel and group.
    assert w.im2col_elements == width * 9 * 28 * 28 * (c // width)
    # At stride 2 the expansion gathers every other element: counted twice per element, as the depthwise one.
    g2 = _grouped("Conv", "", c, width, stride=2)
    w2 = work_of(g2.nodes[0], g2)
    assert w2.kind == "gconvnchw" and w2.im2col_elements == 2 * width * 9 * 14 * 14 * (c // width)
    # The same conv once ORT made it NCHWc is the NCHWc kernel's; a depthwise FusedConv left in NCHW is dwconvnchw.
    gc = _grouped("Conv", "com.microsoft.nchwc", c, width)
    assert work_of(gc.nodes[0], gc).kind == "convsmall"
    dw = _grouped("FusedConv", "com.microsoft", 58, 1)
    assert work_of(dw.nodes[0], dw).kind == "dwconvnchw"


def test_grouped_nchw_path_pays_its_im2col_and_a_setup_per_group() -> None:
    p = plan(HOST, HW, "FusedConv", "gconvnchw", FP32, True, True)
    assert p.tag == "nchw" and p.rate_kind == "gconvnchw" and p.im2col and p.setup_per_channel and p.fp32_equivalent
    # Other options run as the NCHWc few-channel conv's paths (ConvInteger's im2col reads Work.im2col_elements).
    int8dyn = Combo("fp32", "fp32", "int8", 0)
    assert plan(HOST, HW, "FusedConv", "gconvnchw", int8dyn, True, True).tag == \
        plan(HOST, HW, "FusedConv", "convsmall", int8dyn, True, True).tag == "int8dyn"
    # A profile without the figures keeps the NCHWc ones.
    bare = dataclasses.replace(HW, units=tuple(dataclasses.replace(u, kind_overhead_s={}) for u in HW.units))
    assert plan(HOST, bare, "FusedConv", "gconvnchw", FP32, True, True).tag == "fp32"
    g = _grouped("FusedConv", "com.microsoft")
    w = work_of(g.nodes[0], g)
    lat = [sweep(g, HOST, hardware=HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {
        "gconvnchw.nchw.im2col": im, "gconvnchw.nchw": per_group}}}})).bulk
        for im, per_group in ((2e-10, 0.0), (3e-10, 0.0), (2e-10, 1e-6))]
    j = [q["name"] for q in lat[0]["presets"]].index("fp32")
    ms = [b["metrics"]["latency_ms"][0][j] for b in lat]
    assert ms[1] - ms[0] == pytest.approx(1e-10 * w.im2col_elements * 1e3)
    assert ms[2] - ms[0] == pytest.approx(1e-6 * w.groups * 1e3)  # per group (7), not per output channel (56)


def _dense(domain: str, c: int = 38, size: int = 56, k: int = 1):
    op = "FusedConv" if domain == "com.microsoft" else "Conv"
    return graph([Node("d", "d", op, inputs=["x", "w"], outputs=["y"], domain=domain,
                       attributes={"kernel_shape": [k, k], "pads": [k // 2] * 4,
                                   **({"activation": "Relu"} if op == "FusedConv" else {})})],
                 [act("x", [1, c, size, size]), weight("w", [6 * c, c, k, k]), act("y", [1, 6 * c, size, size])],
                 ["x"], ["y"])


def test_dense_conv_left_in_nchw_runs_the_nchw_gemm_path_with_one_setup() -> None:
    """ReXNet's 1x1 Convs of 27-117 input channels stay NCHW in ORT: MLAS's SGEMM path (the grouped one, one group),
    at its figures; the NCHWc rate priced them 1.17-1.84x too fast (single-op chains on a Zen 4)."""
    g = _dense("com.microsoft")
    assert work_of(g.nodes[0], g).kind == "convnchw"
    assert work_of(*(lambda h: (h.nodes[0], h))(_dense("com.microsoft.nchwc"))).kind == "conv"
    few = _dense("", c=8)  # fewer input channels than a block keep the few-channel kind, on every target
    assert work_of(few.nodes[0], few).kind == "convsmall"
    p = plan(HOST, HW, "FusedConv", "convnchw", FP32, True, True)
    assert (p.tag, p.rate_kind, p.im2col, p.setup_per_channel) == ("nchw", "gconvnchw", True, False)
    # Other options run the NCHWc Conv's paths, as before.
    int8dyn = Combo("fp32", "fp32", "int8", 0)
    assert plan(HOST, HW, "FusedConv", "convnchw", int8dyn, True, True) == \
        dataclasses.replace(plan(HOST, HW, "FusedConv", "conv", int8dyn, True, True), rate_kind="conv")
    figures = [{"efficiency": {"gconvnchw.nchw": eff}, "kind_overhead_s": {"gconvnchw.nchw": s}}
               for eff, s in ((1.0, 0.0), (0.5, 0.0), (1.0, 1e-6))]
    lat = [sweep(g, HOST, hardware=HW.with_overrides({"units": {"cpu": f}})).bulk for f in figures]
    j = [q["name"] for q in lat[0]["presets"]].index("fp32")
    ms = [b["metrics"]["latency_ms"][0][j] for b in lat]
    assert ms[1] > 1.8 * ms[0]  # the grouped path's MAC rate prices it
    assert ms[2] - ms[0] == pytest.approx(1e-6 * 1e3)  # one setup for the one GEMM, not one per output channel


def _pointwise(c: int, size: int, group: int = 4, stride: int = 1):
    out = (size + stride - 1) // stride
    return graph([Node("p", "p", "Conv", inputs=["x", "w"], outputs=["y"], attributes={
        "group": group, "kernel_shape": [1, 1], "strides": [stride, stride]})],
        [act("x", [1, c, size, size]), weight("w", [c, c // group, 1, 1]), act("y", [1, c, out, out])], ["x"], ["y"])


def _fp32_ms(g, hw) -> float:
    b = sweep(g, HOST, hardware=hw).bulk
    return b["metrics"]["latency_ms"][0][[q["name"] for q in b["presets"]].index("fp32")]


def test_grouped_1x1_conv_pays_sgemm_columns_padded_to_the_machines_block() -> None:
    """MLAS's SGEMM computes a GEMM's last columns one vector register at a time: 16 floats with AVX-512F, 8 with
    AVX2 (onnxruntime mlas/lib/x86_64/FgemmKernelFma3Common.h): ShuffleNet v1's 544-channel, 4-group 1x1 convs on
    7x7 maps run 49 pixel columns as 64 on a Zen 4 (single-op chains: 1.18-1.26x the time per MAC of 48 where a group
    is 58-136 channels, not a multiple of 16; 0.98-1.04x where it is), as 56 with AVX2."""
    for c, size, align in ((544, 7, 8), (272, 14, 4), (232, 7, 2), (512, 7, 64)):
        g = _pointwise(c, size)
        w = work_of(g.nodes[0], g)
        assert w.kind == "gconvnchw" and (w.sgemm_columns, w.sgemm_align) == (size * size, align)
    for g in (_pointwise(544, 14, stride=2), _pointwise(544, 7, group=1)):
        assert work_of(g.nodes[0], g).sgemm_columns == 0.0  # strided (im2col), dense: the MACs stand
    assert plan(HOST, HW, "Conv", "gconvnchw", FP32, True, False).padded_sgemm
    assert not plan(HOST, HW, "Conv", "convnchw", FP32, True, False).padded_sgemm
    assert not plan(HOST, HW, "Conv", "gconvnchw", Combo("fp32", "fp32", "int8", 0), True, False).padded_sgemm
    # The fp32 path's compute time reads the padded MACs: halving the MAC rate adds their time, not the MACs'.
    # 58 channels per group (2-aligned) pay on both ISAs; 136 (8-aligned) on AVX-512 only; 128 on neither.
    for c, block, cols in ((232, 16, 64), (232, 8, 56), (544, 16, 64), (544, 8, 49), (512, 16, 49), (512, 8, 49)):
        g = _pointwise(c, 7)
        w = work_of(g.nodes[0], g)
        hw = HW.with_overrides({"units": {"cpu": {"sgemm_column_block": block}}})
        cpu = next(u for u in hw.units if "fp32" in u.peak_ops_per_s)
        ms = [_fp32_ms(g, hw.with_overrides({"units": {"cpu": {"efficiency": {"gconvnchw.nchw": eff}}}}))
              for eff in (1e-3, 5e-4)]
        assert ms[1] - ms[0] == pytest.approx(2 * w.macs * cols / 49 / (cpu.peak_ops_per_s["fp32"] * 1e-3) * 1e3,
                                              rel=0.02), (c, block)


def test_the_sgemm_block_is_the_isas() -> None:
    """The block is a fact of the ISA the calibration reads (host_machine.machine_overrides), not a constant."""
    base = {"vendor": "AuthenticAMD", "model_name": "AMD EPYC", "family": 25, "model": 1, "mhz": 2450.0,
            "cpus": 2, "caches": {2: (524288, 524288)}}
    for flags, block in (({"avx", "avx2", "fma"}, 8.0), ({"avx", "avx2", "fma", "avx512f"}, 16.0)):
        over = machine_overrides({**base, "flags": frozenset(flags)})
        assert over["units"]["cpu"]["sgemm_column_block"] == block
    assert HW.with_overrides({"units": {"cpu": {"sgemm_column_block": 8.0}}}).units[0].sgemm_column_block == 8.0


def test_a_calibration_case_ort_runs_in_nchwc_does_not_fit_the_nchw_path() -> None:
    """With AVX2 ORT blocks channels by 8, so RegNet-like width-8 grouped cases run NCHWc there: fitted as NCHW-path
    cases they pinned gconvnchw.nchw at the fit's cap (6.0) on a Zen 3. Such a case is left out of that path's fit."""
    case = next(c for c in CASES if c.name == "gconvact-128x28-1x1-g8")
    nchw = _pointwise(128, 28, group=16)
    nchwc = dataclasses.replace(nchw, nodes=[dataclasses.replace(nchw.nodes[0], domain="com.microsoft.nchwc")])
    assert not off_path(case, "fp32", "nchw", nchw)
    assert off_path(case, "fp32", "nchw", nchwc)
    assert not off_path(case, "int8-static", "int8", nchwc)  # other paths fit on their own graphs
