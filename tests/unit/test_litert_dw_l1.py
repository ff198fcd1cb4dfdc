"""An fp32 depthwise conv whose pixel's weights and inputs outgrow the core's L1 (issue 13; a Zen 4's 32 KiB: 3x3
convs of 456+ channels, 5x5 of 164+) reads its weights again from the L2 for every output pixel: a cost per output
element (`dwconv.<tag>.out`) where the profile records the L1 (`l1_bytes`) and calibration fitted it; LiteRT's
calibration fits it on its depthwise cases beyond the L1, with the tiles' rates on the cases within it."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.graph import Graph
from simulator.litert_calibration import CASES, fit
from simulator.litert_paths import DW_PIXEL_BYTES, dw_pixel_bytes, litert_task_facts
from tests.unit.test_litert_narrow_channels import _hw, _measured, _model, _ms

L1 = 32768.0
COSTS = {"dwconv.fp32": 0.0, "dwconv.tile25": 0.0, "dwconv.tile25.pixel": 2e-8}


def _dw(tmp_path: Path) -> Graph:
    """3x3 convs of 448 (28.7 KB a pixel) and 480 channels (34.6 KB), 5x5 of 160 (32.0 KB) and 176 (35.2 KB)."""
    return _model(tmp_path / "dw.tflite", "DEPTHWISE_CONV_2D", [(448, 448, 3), (480, 480, 3), (160, 160, 5),
                                                              (176, 176, 5)])


def test_the_pixel_bytes_fact_and_the_cost_apply_beyond_the_l1_only(tmp_path: Path) -> None:
    g = _dw(tmp_path)
    facts = [sorted(f for f in fs if f.startswith(DW_PIXEL_BYTES)) for fs in litert_task_facts(g)]
    assert facts == [[f"{DW_PIXEL_BYTES}{dw_pixel_bytes(t, c)}"] for t, c in ((9, 448), (9, 480), (25, 160), (25, 176))]
    eff = {"dwconv.fp32": 0.3, "dwconv.tile25": 0.3}
    before = _ms(g, _hw(f32_n_block=16.0, l1_bytes=L1, efficiency=eff, kind_overhead_s=COSTS))
    out = {**COSTS, "dwconv.fp32.out": 1e-9, "dwconv.tile25.out": 2e-9}
    after = _ms(g, _hw(f32_n_block=16.0, l1_bytes=L1, efficiency=eff, kind_overhead_s=out))
    elements = 32 * 32 * 480, 32 * 32 * 176
    assert after[0] == before[0] and after[2] == before[2]
    assert after[1] - before[1] == pytest.approx(elements[0] * 1e-9 * 1e3, rel=1e-6)
    assert after[3] - before[3] == pytest.approx(elements[1] * 2e-9 * 1e3, rel=1e-6)
    # no L1 recorded (an older calibration), or one that holds every pixel: no cost
    assert _ms(g, _hw(f32_n_block=16.0, efficiency=eff, kind_overhead_s=out)) == before
    assert _ms(g, _hw(f32_n_block=16.0, l1_bytes=65536.0, efficiency=eff, kind_overhead_s=out)) == before


def test_fit_recovers_the_weights_cost_from_the_cases_beyond_the_l1(tmp_path: Path) -> None:
    """The 3x3 and 5x5 cases of 672 / 960 channels are beyond a 32 KiB L1, the others within it: the fit gives back
    the tiles' rates and each tile's cost per output element; without an L1 no such cost is fitted."""
    names = {c.name for c in CASES if c.op == "DEPTHWISE_CONV_2D" and c.shape[2] in (3, 5) and "fp32" in c.forms}
    beyond = {c.name for c in CASES if c.name in names and dw_pixel_bytes(c.shape[2] ** 2, c.shape[0]) > L1}
    assert beyond == {"dw3x3-672-14", "dw3x3-960-7", "dw5x5-672-14", "dw5x5-960-7"}
    truth = _hw(f32_n_block=16.0, l1_bytes=L1, efficiency={"dwconv.fp32": 0.3, "dwconv.tile25": 0.5},
                kind_overhead_s={**COSTS, "dwconv.fp32.out": 1e-10, "dwconv.tile25.out": 3e-10})
    cpu = fit(_measured(tmp_path, truth, names), _hw(), f32_n_block=16, l1=int(L1))["units"]["cpu"]
    assert cpu["l1_bytes"] == L1
    assert cpu["efficiency"]["dwconv.fp32"] == pytest.approx(0.3, rel=0.03)
    assert cpu["efficiency"]["dwconv.tile25"] == pytest.approx(0.5, rel=0.03)
    assert cpu["kind_overhead_s"]["dwconv.fp32.out"] == pytest.approx(1e-10, rel=0.05)
    assert cpu["kind_overhead_s"]["dwconv.tile25.out"] == pytest.approx(3e-10, rel=0.05)
    none = fit(_measured(tmp_path, truth, names), _hw(), f32_n_block=16)["units"]["cpu"]
    assert "dwconv.fp32.out" not in none["kind_overhead_s"] and none["l1_bytes"] == 0.0
