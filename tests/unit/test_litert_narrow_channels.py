"""XNNPACK's fp32 kernels at channel counts that do not fill their blocks (issue 13): a 5x5 depthwise conv pays its
channels in whole tiles of the depthwise kernel and a cost per output pixel (`dwconv.tile25.pixel`); a deconvolution
its output channels in the F32 IGEMM's blocks; a 3x3 conv of fewer outputs than the IGEMM's nr runs its nr2 kernels
at their own rate where calibrated (`conv.fp32nr2`). LiteRT's calibration fits each on synthetic cases here, and a
fit that ignores the remainder cannot match them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from compiler.graph import Graph
from simulator.litert_calibration import CASES, _fit, build, fit
from simulator.litert_cases import predicted_ms
from simulator.profiles import HardwareProfile, load_profile
from tests.simulator.helpers import task_ms

BASE = {"efficiency": {"dwconv.tile25": 0.05, "conv.fp32": 0.05, "conv.deconv": 0.05},
        "kind_overhead_s": {"dwconv.tile25": 0.0, "conv.fp32": 0.0, "conv.deconv": 0.0}}


def _ms(g: Graph, hw: HardwareProfile) -> list[float]:
    return task_ms(g, "litert-cpu/host", hw, "fp32")


def _hw(**cpu: object) -> HardwareProfile:
    return load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {**BASE, **cpu}}})


def _model(path: Path, op: str, specs: list[tuple[int, int, int]]) -> Graph:
    """One `op` per (C_in, C_out, kernel), each reading an input of its own (32 x 32 x C_in; a deconvolution's
    output 64 x 64, stride 2)."""
    w = TfliteWriter(description=op)
    ins, outs = [], []
    for i, (ci, co, k) in enumerate(specs):
        x = w.tensor(f"x{i}", [1, 32, 32, ci])
        if op == "DEPTHWISE_CONV_2D":
            y = w.tensor(f"y{i}", [1, 32, 32, co])
            w.op(op, [x, w.const(f"w{i}", np.full([1, k, k, co], 0.01, np.float32)),
                      w.const(f"b{i}", np.zeros(co, np.float32))], [y],
                 w.options("DepthwiseConv2DOptions", padding=0, strideW=1, strideH=1, depthMultiplier=1))
        elif op == "TRANSPOSE_CONV":
            y = w.tensor(f"y{i}", [1, 64, 64, co])
            w.op(op, [w.const(f"s{i}", np.array([1, 64, 64, co], np.int32)),
                      w.const(f"w{i}", np.full([co, k, k, ci], 0.01, np.float32)), x,
                      w.const(f"b{i}", np.zeros(co, np.float32))], [y],
                 w.options("TransposeConvOptions", padding=0, strideW=2, strideH=2))
        else:
            y = w.tensor(f"y{i}", [1, 32, 32, co])
            w.op(op, [x, w.const(f"w{i}", np.full([co, k, k, ci], 0.01, np.float32)),
                      w.const(f"b{i}", np.zeros(co, np.float32))], [y],
                 w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
        ins.append(x)
        outs.append(y)
    return tflite.load(w.save(path, ins, outs))


def test_a_5x5_depthwise_conv_pays_whole_tiles_and_a_cost_per_pixel(tmp_path: Path) -> None:
    """24 channels cost 32 in tiles of 16 (a remainder of 8 at a whole tile's cost: measured on a Zen 3, 2026-12-07,
    24 and 32 channels at 64 px 0.233 and 0.241 ms, 40 and 48 0.330 and 0.336); 3x3 convs keep their channels."""
    g = _model(tmp_path / "dw.tflite", "DEPTHWISE_CONV_2D", [(16, 16, 5), (24, 24, 5), (32, 32, 5), (24, 24, 3)])
    plain, tiled = _ms(g, _hw()), _ms(g, _hw(f32_n_block=16.0))
    assert plain[1] == pytest.approx(0.75 * plain[2], rel=0.02)  # without a tile: as counted
    assert tiled[1] == pytest.approx(tiled[2], rel=0.02) and tiled[0] == pytest.approx(0.5 * tiled[2], rel=0.02)
    assert tiled[3] == plain[3]  # the 9-tap tile: as counted
    per_px = _ms(g, _hw(f32_n_block=16.0, kind_overhead_s={**BASE["kind_overhead_s"], "dwconv.tile25.pixel": 1e-8}))
    assert per_px[0] - tiled[0] == pytest.approx(32 * 32 * 1e-8 * 1e3, rel=0.02)  # 1,024 output pixels
    assert per_px[3] == tiled[3]


def test_a_deconvolution_pays_its_output_channels_in_the_igemms_blocks(tmp_path: Path) -> None:
    """XNNPACK's Subconv2D runs the F32 IGEMM config's kernels (deconvolution-nhwc.c, as a conv's): 24 outputs cost
    32 in blocks of 16, 16 cost 16."""
    g = _model(tmp_path / "deconv.tflite", "TRANSPOSE_CONV", [(24, 16, 2), (24, 24, 2), (24, 32, 2)])
    plain = _ms(g, _hw())
    blocked = _ms(g, _hw(f32_n_block=16.0, f32_igemm_n_block=16.0))
    assert plain[1] == pytest.approx(0.75 * plain[2], rel=0.02)
    assert blocked[1] == pytest.approx(blocked[2], rel=0.02) and blocked[0] == pytest.approx(0.5 * blocked[2], rel=0.02)


def test_the_igemms_nr2_kernels_run_at_their_own_rate_where_calibrated(tmp_path: Path) -> None:
    """With an IGEMM of nr 32 (AVX-512F), 16 and 24 outputs run the nr2 kernels (16 wide): at `conv.fp32nr2` where the
    profile has it, 32 and 64 outputs and the 1x1 GEMM keep `conv.fp32`; without the figure, as before."""
    g = _model(tmp_path / "conv.tflite", "CONV_2D", [(96, 16, 3), (96, 24, 3), (96, 32, 3), (96, 64, 3), (96, 24, 1)])
    blocks = {"f32_n_block": 16.0, "f32_igemm_n_block": 32.0}
    before = _ms(g, _hw(**blocks))
    after = _ms(g, _hw(**blocks, efficiency={**BASE["efficiency"], "conv.fp32nr2": 0.025}))
    assert after[0] == pytest.approx(2 * before[0], rel=0.02) and after[1] == pytest.approx(2 * before[1], rel=0.02)
    assert after[2:] == before[2:]
    assert before[1] == pytest.approx(before[2], rel=0.02)  # both compute 32 columns
    zen3 = {"f32_n_block": 16.0, "f32_igemm_n_block": 16.0}  # FMA3: nr 16, no case below it
    assert _ms(g, _hw(**zen3, efficiency={**BASE["efficiency"], "conv.fp32nr2": 0.025})) == \
        _ms(g, _hw(**zen3))


def _measured(tmp_path: Path, truth: HardwareProfile, names: set[str]) -> dict[tuple[str, str], tuple[Graph, list[float]]]:
    out = {}
    for case in (c for c in CASES if c.name in names):
        g = tflite.load(build(case, "fp32", tmp_path / f"{case.name}.tflite"))
        out[(case.name, "fp32")] = (g, predicted_ms(g, truth, "fp32"))
    assert len(out) == len(names)
    return out


def test_the_5x5_cases_fit_the_tiles_rate_and_cost_per_pixel_which_channels_as_counted_cannot(tmp_path: Path) -> None:
    names = {c.name for c in CASES if c.op == "DEPTHWISE_CONV_2D" and c.shape[2] == 5}
    assert {"dw5x5-16-64", "dw5x5-24-64", "dw5x5-32-64"} <= names
    truth = _hw(f32_n_block=16.0, efficiency={"dwconv.tile25": 0.5},
                kind_overhead_s={"dwconv.tile25": 0.0, "dwconv.tile25.pixel": 2e-8})
    measured = _measured(tmp_path, truth, names)
    cases = [(g, "fp32", ms) for g, ms in measured.values()]
    eff, setups = _fit(cases, _hw(f32_n_block=16.0), "dwconv.tile25")
    assert eff == pytest.approx(0.5, rel=0.03) and setups["dwconv.tile25.pixel"] == pytest.approx(2e-8, rel=0.05)
    # Channels as counted (no tile): the best fit misses the 24-channel case by more than 10%
    eff0, setups0 = _fit(cases, _hw(f32_n_block=0.0), "dwconv.tile25")
    fitted = _hw(f32_n_block=0.0, efficiency={"dwconv.tile25": eff0}, kind_overhead_s=setups0)
    g24, ms24 = measured[("dw5x5-24-64", "fp32")]
    assert abs(np.median(predicted_ms(g24, fitted, "fp32")) / np.median(ms24) - 1) > 0.10


def test_the_deconvolution_cases_pin_the_subconv_rate_with_24_and_48_channels(tmp_path: Path) -> None:
    """The older cases (16 -> 1 over 128 px and three small ones) spend most of their time per pixel: on a Zen 3
    (2026-12-07) the fit put the MACs at 6x the peak and priced 32 -> 32 and 48 -> 48 deconvolutions at 0.25-0.57x their
    time. With 24 and 48 channels the rate and the cost per pixel come apart."""
    names = {c.name for c in CASES if c.op == "TRANSPOSE_CONV"}
    assert {"deconv2x2-24x24-46", "deconv2x2-48x48-46"} <= names
    blocks = {"f32_n_block": 16.0, "f32_igemm_n_block": 16.0}
    truth = _hw(**blocks, efficiency={"conv.deconv": 0.35},
                kind_overhead_s={"conv.deconv": 2e-5, "conv.deconv.pixel": 4e-9})
    cases = [(g, "fp32", ms) for g, ms in _measured(tmp_path, truth, names).values()]
    eff, setups = _fit(cases, _hw(**blocks), "conv.deconv")
    assert eff == pytest.approx(0.35, rel=0.05) and setups["conv.deconv.pixel"] == pytest.approx(4e-9, rel=0.15)


def test_fit_gives_the_nr2_kernels_their_rate_only_where_cases_run_them(tmp_path: Path) -> None:
    """With nr 32 the 16- and 24-output 3x3 cases run the nr2 kernels: fitted apart (`conv.fp32nr2`) on
    `conv.fp32`'s figures, which the wider cases keep; with nr 16 (FMA3) no case is narrower, and no nr2 figure."""
    names = {c.name for c in CASES if c.op == "CONV_2D" and "fp32" in c.forms and len(c.shape) < 5}
    assert {"conv3x3-16-56", "conv3x3-24-56", "conv3x3-32-28"} <= names
    blocks = {"f32_n_block": 16.0, "f32_igemm_n_block": 32.0}
    truth = _hw(**blocks, efficiency={"conv.fp32": 0.8, "conv.fp32gemm": 0.9, "conv.fp32nr2": 0.5},
                kind_overhead_s={"conv.fp32": 3e-6, "conv.fp32gemm": 1e-6})
    measured = _measured(tmp_path, truth, names)
    cpu = fit(measured, _hw(), f32_n_block=16, f32_igemm_n_block=32)["units"]["cpu"]
    assert cpu["efficiency"]["conv.fp32nr2"] == pytest.approx(0.5, rel=0.03)
    assert cpu["efficiency"]["conv.fp32"] == pytest.approx(0.8, rel=0.03)
    assert "conv.fp32nr2" not in cpu["kind_overhead_s"]
    zen3 = _hw(f32_n_block=16.0, f32_igemm_n_block=16.0, efficiency={"conv.fp32": 0.8, "conv.fp32gemm": 0.9})
    cpu3 = fit(_measured(tmp_path, zen3, names), _hw(), f32_n_block=16, f32_igemm_n_block=16)["units"]["cpu"]
    assert "conv.fp32nr2" not in cpu3["efficiency"]
    assert cpu3["efficiency"]["conv.fp32"] == pytest.approx(0.8, rel=0.03)


def test_a_5x5_depthwise_conv_of_channels_not_whole_vectors_runs_at_its_own_rate(tmp_path: Path) -> None:
    """With AVX-512F's 16 lanes, 24 and 40 channels (a row of 96 or 160 bytes: loads across cache lines) run at
    `dwconv.tile25split` where the profile has it; 16 and 32 channels and the 9-tap tile keep `dwconv.tile25` / their
    rate; with AVX's 8 lanes 24 channels are whole vectors."""
    from simulator.host_machine import f32_vector_floats

    assert [f32_vector_floats(frozenset(f)) for f in ({"avx", "avx512f"}, {"avx", "fma"}, {"sse2"})] == [16, 8, 4]
    g = _model(tmp_path / "dw.tflite", "DEPTHWISE_CONV_2D", [(16, 16, 5), (24, 24, 5), (32, 32, 5), (40, 40, 5),
                                                              (24, 24, 3)])
    split = {**BASE["efficiency"], "dwconv.tile25split": 0.025}
    before = _ms(g, _hw(f32_n_block=16.0, f32_vector_floats=16.0))
    after = _ms(g, _hw(f32_n_block=16.0, f32_vector_floats=16.0, efficiency=split))
    assert after[1] == pytest.approx(2 * before[1], rel=0.02) and after[3] == pytest.approx(2 * before[3], rel=0.02)
    assert [after[0], after[2], after[4]] == [before[0], before[2], before[4]]
    assert _ms(g, _hw(f32_n_block=16.0, f32_vector_floats=8.0, efficiency=split)) == before
    assert _ms(g, _hw(f32_n_block=16.0, efficiency=split)) == before  # no lanes recorded (an older calibration)


def test_fit_gives_the_split_tiles_their_rate_only_where_cases_are_not_whole_vectors(tmp_path: Path) -> None:
    """With 16 lanes the 24-, 72- and 88-channel 5x5 cases fit `dwconv.tile25split` on the whole-vector cases'
    `dwconv.tile25` and cost per pixel; with 8 lanes (AVX2) every case is whole vectors, and no split figure."""
    names = {c.name for c in CASES if c.op == "DEPTHWISE_CONV_2D" and c.shape[2] == 5}
    assert {c for c in names if int(c.split("-")[1]) % 16} == {"dw5x5-24-64", "dw5x5-72-64", "dw5x5-88-16"}
    lanes = {"f32_n_block": 16.0, "f32_vector_floats": 16.0}
    truth = _hw(**lanes, efficiency={"dwconv.tile25": 0.5, "dwconv.tile25split": 0.4},
                kind_overhead_s={"dwconv.tile25": 0.0, "dwconv.tile25.pixel": 2e-8})
    cpu = fit(_measured(tmp_path, truth, names), _hw(), f32_n_block=16, f32_vector_floats=16)["units"]["cpu"]
    assert cpu["efficiency"]["dwconv.tile25"] == pytest.approx(0.5, rel=0.03)
    assert cpu["efficiency"]["dwconv.tile25split"] == pytest.approx(0.4, rel=0.03)
    assert cpu["kind_overhead_s"]["dwconv.tile25.pixel"] == pytest.approx(2e-8, rel=0.05)
    assert "dwconv.tile25split" not in cpu["kind_overhead_s"] and cpu["f32_vector_floats"] == 16.0
    avx2 = _hw(f32_n_block=16.0, f32_vector_floats=8.0, efficiency={"dwconv.tile25": 0.5},
               kind_overhead_s={"dwconv.tile25": 0.0, "dwconv.tile25.pixel": 2e-8})
    cpu2 = fit(_measured(tmp_path, avx2, names), _hw(), f32_n_block=16, f32_vector_floats=8)["units"]["cpu"]
    assert "dwconv.tile25split" not in cpu2["efficiency"]
    assert cpu2["efficiency"]["dwconv.tile25"] == pytest.approx(0.5, rel=0.03)
