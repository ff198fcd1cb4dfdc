"""Static int8 on ONNX Runtime's CPU: a dense 1x1 unit-stride unpadded Conv on the symmetric kernel takes its own figures
(`conv.int8pw`, simulator/ort_int8_dense.py ORT_INT8_POINTWISE), fitted by calibration on 1x1 chains; 3x3 convs keep
`conv.int8`, one-pixel maps `conv.int8px`, and dense 1x1 convs off the kernel's alignment (ShuffleNet v2's 58 -> 58)
the per-group GEMM path, which calibration now fits on dense cases too. Integration tier: graphs are compiled by ONNX
Runtime."""

from __future__ import annotations

from pathlib import Path

from compiler.graph import Graph
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.ort_int8 import ORT_INT8_QGEMM_DENSE, ort_task_facts
from simulator.ort_int8_dense import ORT_INT8_ONE_PIXEL, ORT_INT8_POINTWISE, POINTWISE_TAG
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def _conv_facts(g: Graph) -> list[frozenset[str]]:
    return [f for nd, f in zip(g.nodes, ort_task_facts(g)) if nd.op_type in ("Conv", "FusedConv")]


def test_pointwise_convs_are_a_task_fact_and_3x3_strided_narrow_or_one_pixel_ones_are_not(tmp_path: Path) -> None:
    from simulator.calibration_bench import compile_for_host, conv_chain
    from simulator.calibration_models import save_model, strided_own
    from simulator.calibration_se import pixel_chain

    def facts(build, name: str) -> list[frozenset[str]]:  # type: ignore[no-untyped-def]
        return _conv_facts(compile_for_host(build(tmp_path / f"{name}.onnx"), tmp_path / f"{name}.opt.onnx"))

    pw = facts(conv_chain(32, 56, 1), "pw")
    assert pw and all(ORT_INT8_POINTWISE in f for f in pw), pw
    k3 = facts(conv_chain(64, 28, 3), "k3")
    assert k3 and not any(ORT_INT8_POINTWISE in f for f in k3), k3
    s2 = facts(strided_own(32, 64, 28, 1), "s2")  # a 1x1 at stride 2 (ResNet's downsample): not read in place
    assert s2 and not any(ORT_INT8_POINTWISE in f for f in s2), s2
    narrow = facts(conv_chain(58, 28, 1), "n58")  # off the symmetric kernel: the GEMM path, not these figures
    assert narrow and all(ORT_INT8_QGEMM_DENSE in f and ORT_INT8_POINTWISE not in f for f in narrow), narrow
    px = _conv_facts(compile_for_host(save_model(*pixel_chain(48, 8), tmp_path / "px.onnx"), tmp_path / "px.opt.onnx"))
    assert px and all(ORT_INT8_ONE_PIXEL in f and ORT_INT8_POINTWISE not in f for f in px), px


def test_the_pointwise_figures_under_static_int8_only() -> None:
    from simulator.backends import plan
    from simulator.roofline import rates

    fact = frozenset({ORT_INT8_POINTWISE})
    static, dyn = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "int8", 0)
    p = plan(HOST, HW, "Conv", "conv", static, True, False, facts=fact)
    assert (p.tag, p.rate_kind) == (POINTWISE_TAG, "conv")
    assert plan(HOST, HW, "Conv", "conv", static, True, False).tag == "int8"
    assert plan(HOST, HW, "Conv", "conv", dyn, True, False, facts=fact) == plan(HOST, HW, "Conv", "conv", dyn, True,
                                                                               False)
    own = HW.with_overrides({"units": {"cpu": {"efficiency": {f"conv.{POINTWISE_TAG}": 0.25, "conv.int8": 2.0},
                                               "kind_overhead_s": {f"conv.{POINTWISE_TAG}": 3e-6}}}})
    r = rates(own, p, "conv", False)
    assert r.setup_s == 3e-6 and r.peak < rates(own, plan(HOST, own, "Conv", "conv", static, True, False), "conv",
                                                False).peak


def test_calibration_fits_pointwise_convs_apart_and_dense_narrow_ones_with_the_gemm_path() -> None:
    from simulator import calibration_bench
    from simulator.calibration_bench import QGEMM

    pw = [c for c in calibration_bench.CASES if ("int8-static", f"conv.{POINTWISE_TAG}") in c.variants]
    # three or more 1x1 shapes (a joint fit of rate and setups), and no 3x3 one among them
    assert len(pw) >= 3 and all(c.name.endswith("-1x1") for c in pw), [c.name for c in pw]
    k3 = [c for c in calibration_bench.CASES if c.name.startswith("convact-") and c.name.endswith("-3x3")
          and ("int8-static", "int8") in c.variants]
    assert len(k3) >= 3
    dense = [c for c in calibration_bench.CASES if QGEMM in c.variants and "-g" not in c.name]
    assert any(c.name == "qdense-58x28-1x1" for c in dense), [c.name for c in dense]
