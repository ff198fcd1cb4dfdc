"""ORT's CPU ConvTranspose: an SGEMM into a column buffer, then col2im scatter-adds the columns into the zeroed output
(simulator.conv_work.col2im_elements), priced at its own figures where calibrated (backends._ort_deconv)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.graph import Node
from simulator.costs import work_of
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms, weight


def _deconv(ci: int, co: int, hw: int, k: int, s: int, pad: int = 0, group: int = 1,  # type: ignore[no-untyped-def]
            dims: int = 2):
    o = (hw - 1) * s - 2 * pad + k
    return graph([Node("d", "d", "ConvTranspose", inputs=["x", "w", "b"], outputs=["y"], attributes={
        "kernel_shape": [k] * dims, "strides": [s] * dims, "pads": [pad] * 2 * dims, "group": group})],
        [act("x", [1, ci, *[hw] * dims]), weight("w", [ci, co // group, *[k] * dims]), weight("b", [co]),
         act("y", [1, co, *[o] * dims])], ["x"], ["y"])


@pytest.mark.parametrize("ci, co, hw, k, s, pad, group, dims", [
    (24, 24, 184, 2, 2, 0, 1, 2),  # DBNet's head: [96, 33,856] columns
    (24, 1, 184, 2, 2, 0, 1, 2),  # its last, to one channel: [4, 33,856]
    (32, 16, 48, 4, 2, 1, 1, 2),  # 4x4 stride 2 pad 1: 4 column elements per output
    (16, 16, 20, 1, 1, 0, 1, 2),  # 1x1 stride 1: ORT still runs col2im (one per output)
    (32, 64, 14, 3, 2, 1, 4, 2),  # grouped: every group's columns
    (8, 8, 40, 4, 2, 1, 1, 1),  # 1-D and 3-D: Col2imNdPar, the same columns
    (8, 8, 6, 2, 2, 0, 1, 3),
])
def test_col2im_counts_every_groups_columns(ci: int, co: int, hw: int, k: int, s: int, pad: int, group: int,
                                            dims: int) -> None:
    g = _deconv(ci, co, hw, k, s, pad, group, dims)
    w = work_of(g.nodes[0], g)
    assert w.col2im_elements == co * k ** dims * hw ** dims  # C_out / group x taps x input pixels, every group
    assert w.macs == ci * hw ** dims * co // group * k ** dims


def test_a_conv_has_no_columns_to_scatter() -> None:
    g = graph([Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"], attributes={"kernel_shape": [3, 3],
                                                                                 "pads": [1] * 4})],
              [act("x", [1, 16, 20, 20]), weight("w", [16, 16, 3, 3]), act("y", [1, 16, 20, 20])], ["x"], ["y"])
    assert work_of(g.nodes[0], g).col2im_elements == 0.0


def _hw(**setups: float):  # type: ignore[no-untyped-def]
    """A calibrated profile: deconv.fp32's rate and its figures (col2im 0 unless given: the path exists where it is)."""
    return load_profile("host-cpu").with_overrides({"units": {"cpu": {
        "efficiency": {"conv.fp32": 0.5, "convsmall.fp32": 0.3, "deconv.fp32": 0.2},
        "kind_overhead_s": {f"deconv.fp32.{k}": v for k, v in {"col2im": 0.0, **setups}.items()}}}})


def test_calibrated_deconv_pays_its_columns_and_outputs_at_its_own_rate() -> None:
    head, last = _deconv(24, 24, 184, 2, 2), _deconv(24, 1, 184, 2, 2)
    base = _hw()
    for g in (head, last):
        w = work_of(g.nodes[0], g)
        cols, outs = w.col2im_elements, w.out_elements
        # the column term: 1 ns per column element; the output term: 0.5 ns per output element
        assert host_fp32_ms(g, _hw(col2im=1e-9, out=0.0)) - host_fp32_ms(g, base) == pytest.approx(cols * 1e-6)
        assert host_fp32_ms(g, _hw(col2im=0.0, out=5e-10)) - host_fp32_ms(g, base) == pytest.approx(outs * 5e-7)
    # the GEMM runs at deconv.fp32, not at the NCHWc conv's figure
    slower = base.with_overrides({"units": {"cpu": {"efficiency": {"deconv.fp32": 0.05}}}})
    assert host_fp32_ms(head, slower) > 2 * host_fp32_ms(head, base)


def test_col2im_scales_with_kernel_taps_per_output() -> None:
    # the same output (96 x 96, 16 channels) from a 2x2 and a 4x4 stride-2 ConvTranspose: 4x the columns
    two, four = _deconv(16, 16, 48, 2, 2), _deconv(16, 16, 49, 4, 2, pad=2)
    assert work_of(two.nodes[0], two).out_elements == work_of(four.nodes[0], four).out_elements
    base, per_col = _hw(), _hw(col2im=1e-9)
    d2, d4 = (host_fp32_ms(g, per_col) - host_fp32_ms(g, base) for g in (two, four))
    assert d4 / d2 == pytest.approx(16 * 49 ** 2 / (4 * 48 ** 2))  # taps x input pixels: 16 x 49^2 against 4 x 48^2


def test_uncalibrated_deconv_is_priced_as_before() -> None:
    """Without `deconv.fp32.col2im` (a profile fitted by an older calibration) a ConvTranspose keeps the conv kinds'
    figures, whatever else the profile has."""
    g = _deconv(24, 24, 92, 2, 2)
    plain = load_profile("host-cpu").with_overrides({"units": {"cpu": {"efficiency": {"conv.fp32": 0.5}}}})
    other = plain.with_overrides({"units": {"cpu": {"efficiency": {"deconv.fp32": 0.05},
                                                    "kind_overhead_s": {"deconv.fp32.out": 1e-9}}}})
    assert host_fp32_ms(g, other) == pytest.approx(host_fp32_ms(g, plain))
    assert host_fp32_ms(g, _hw()) != pytest.approx(host_fp32_ms(g, plain))  # calibrated: deconv.fp32's rate


def test_output_beyond_the_l2_pays_the_spill_figure() -> None:
    head = _deconv(24, 24, 184, 2, 2)  # 13 MB of output
    hw = _hw(spill=1e-12).with_overrides({"units": {"cpu": {"l2_share_bytes": 2 * 2 ** 20}}})
    base = _hw().with_overrides({"units": {"cpu": {"l2_share_bytes": 2 * 2 ** 20}}})
    beyond = work_of(head.nodes[0], head).out_elements * 4 - 2 * 2 ** 20
    assert host_fp32_ms(head, hw) - host_fp32_ms(head, base) == pytest.approx(beyond * 1e-9)
    small = _deconv(24, 24, 46, 2, 2)  # 0.8 MB: within it
    assert host_fp32_ms(small, hw) == pytest.approx(host_fp32_ms(small, base))


def test_the_calibration_cases_run_ort_convtransposes_and_the_joint_fit_finds_their_figures(tmp_path: Path) -> None:
    """The deconv-* cases compile to ConvTransposes as they are (ORT has no NCHWc or fused form of them), and the joint
    fit separates the GEMM's rate from the cost per column element on measurements made with known figures."""
    from simulator.calibration_bench import CASES, compile_for_host
    from simulator.calibration_fit import JOINT_FP32, _fit_eff_setup, _predict_ms

    assert "deconv.fp32" in JOINT_FP32
    names = ("deconv-24x24-92-2x2", "deconv-128x64-28-2x2", "deconv-32x16-48-4x4-p1", "deconv-24x1-184-2x2")
    graphs = []
    for name in names:
        case = next(c for c in CASES if c.name == name)
        assert case.variants == (("fp32", "deconv.fp32"),)
        g = compile_for_host(case.build(tmp_path / f"{name}.onnx"), tmp_path / f"{name}.opt.onnx")
        assert {n.op_type for n in g.nodes} == {"ConvTranspose"}
        graphs.append(g)
    base = load_profile("host-cpu")
    truth = base.with_overrides({"units": {"cpu": {"efficiency": {"deconv.fp32": 0.3},
                                                   "kind_overhead_s": {"deconv.fp32.col2im": 6e-10}}}})
    eff, s = _fit_eff_setup([(g, "fp32", _predict_ms(g, truth, "fp32")) for g in graphs], base, "deconv.fp32")
    assert eff == pytest.approx(0.3, rel=0.05) and s["deconv.fp32.col2im"] == pytest.approx(6e-10, rel=0.1)
