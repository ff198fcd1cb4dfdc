"""Dynamic int8 image stems on ONNX Runtime's CPU: a dense Conv of fewer than 4 input channels is a task fact
(simulator/ort_int8.py ORT_INT8DYN_STEM) whose ConvInteger runs at the stems' own figures (`stemgemm.int8dyn`), fitted
by calibration on stem cases (simulator/calibration_int8dyn.py); the Cast / Mul / Add after a ConvInteger cost their
bytes. Integration tier: graphs are compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_int8dyn import INT8DYN_CASES, STEM_DYN, convs_own
from simulator.calibration_models import compile_for_host, save_model
from simulator.ort_int8 import ORT_INT8_QGEMM_DENSE, ORT_INT8DYN_STEM, STEM_RATE_KIND, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
DYNAMIC, STATIC = Combo("fp32", "fp32", "int8", 0), Combo("int8", "int8", "int8", 0)


def _compiled(tmp_path: Path, name: str, ci: int, co: int, hw: int, k: int, stride: int, r: int = 1):
    src = save_model(*convs_own(ci, co, hw, k, stride, r), tmp_path / f"{name}.onnx")
    return compile_for_host(src, tmp_path / f"{name}.opt.onnx")


def test_a_conv_of_three_input_channels_is_a_stem_and_a_dense_one_is_not(tmp_path: Path) -> None:
    for name, ci, want in (("stem", 3, True), ("gray", 1, True), ("dense", 16, False)):
        g = _compiled(tmp_path, name, ci, 32, 32, 3, 2)
        convs = [i for i, nd in enumerate(g.nodes) if nd.op_type in ("Conv", "FusedConv")]
        facts = ort_task_facts(g)
        assert convs and all((ORT_INT8DYN_STEM in facts[i]) == want for i in convs), (name, facts)


def test_stems_take_their_own_figures_under_dynamic_int8_only() -> None:
    stem = plan(HOST, HW, "FusedConv", "convsmall", DYNAMIC, True, True, facts=frozenset({ORT_INT8DYN_STEM}))
    plain = plan(HOST, HW, "FusedConv", "convsmall", DYNAMIC, True, True)
    assert stem.rate_kind == STEM_RATE_KIND and stem.tag == "int8dyn" and stem.im2col and not plain.rate_kind
    # Static int8 stems keep their per-group GEMM path at the static stems' figures (stemgemm.int8, not .int8dyn).
    both = plan(HOST, HW, "FusedConv", "convsmall", STATIC, True, True,
                facts=frozenset({ORT_INT8DYN_STEM, ORT_INT8_QGEMM_DENSE}))
    assert both.qgemm and both.rate_kind == STEM_RATE_KIND and both.tag == "int8"


def test_a_stems_rate_moves_its_prediction_and_a_dense_convs_does_not(tmp_path: Path) -> None:
    from simulator.calibration_fit import _predict_ms

    fast = HW.with_overrides({"units": {"cpu": {"efficiency": {"stemgemm.int8dyn": 2.0}}}})
    slow = HW.with_overrides({"units": {"cpu": {"efficiency": {"stemgemm.int8dyn": 0.1}}}})
    stem = _compiled(tmp_path, "stem", 3, 32, 64, 3, 2)
    dense = _compiled(tmp_path, "dense", 16, 32, 32, 3, 1)
    assert _predict_ms(stem, slow, "int8-dynamic") > 1.5 * _predict_ms(stem, fast, "int8-dynamic")
    assert _predict_ms(dense, slow, "int8-dynamic") == pytest.approx(_predict_ms(dense, fast, "int8-dynamic"))


def test_the_passes_after_a_conv_integer_cost_their_bytes_not_ops() -> None:
    for kind in ("conv", "convsmall", "dwconv"):
        p = plan(HOST, HW, "FusedConv", kind, DYNAMIC, True, True)
        assert p.extra_ops_per_out == 0.0 and p.extra_ops_per_in == 2.0, (kind, p)
        # int32 written and read back (Cast), then Mul, Add and the unfused activation: 4 + 8 + 8 + 8 + 8 bytes.
        assert p.extra_out_bytes == pytest.approx(36.0), (kind, p)


def test_calibration_has_stem_and_resnet_shaped_cases() -> None:
    from simulator.calibration_bench import CASES

    names = {c.name for c in CASES}
    stems = [n for n, kind, _, v in INT8DYN_CASES if v == STEM_DYN]
    dense = [n for n, kind, _, v in INT8DYN_CASES if kind == "conv"]
    assert len(stems) >= 3 and len(dense) >= 3 and set(stems + dense) <= names
    # No other case fits the stems' key: the bench's fp32 stems share one input (one quantization for eight convs).
    assert all(("int8-dynamic", "stemgemm.int8dyn") not in c.variants for c in CASES if c.name not in stems)


def test_calibration_finds_a_stems_rate_again(tmp_path: Path) -> None:
    """The joint fit of the stems' key finds a known rate again from measurements the model makes with it (two small
    stems here: the bench's at 224 px take longer to compile, and the fit's machinery has tests of its own)."""
    from simulator import calibration_fit

    key = "stemgemm.int8dyn"
    graphs = [_compiled(tmp_path, f"s{co}x{k}", 3, co, 64, k, 2) for co, k in ((16, 3), (64, 7))]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {key: 0.4}}}})
    measured = [(g, "int8-dynamic", calibration_fit._predict_ms(g, truth, "int8-dynamic")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(measured, HW, key)
    fitted = HW.with_overrides({"units": {"cpu": {"efficiency": {key: eff}, "kind_overhead_s": s}}})
    assert eff == pytest.approx(0.4, rel=0.15)
    for g, _, ms in measured:
        assert calibration_fit._predict_ms(g, fitted, "int8-dynamic") == pytest.approx(ms, rel=0.02)
