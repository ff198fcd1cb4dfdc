"""Static int8 on ONNX Runtime's CPU: a Gemm / MatMul by a constant with one activation row (a CNN classifier at batch
1) takes QGEMM's one-row figures (`gemm.int8gemv`, simulator/ort_int8.py), which calibration fits on a one-row chain;
more rows keep `gemm.int8`. Integration tier: graphs are compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.ort_int8 import ONE_ROW_TAG, ORT_INT8_ONE_ROW, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def test_one_row_gemms_are_a_task_fact(tmp_path: Path) -> None:
    from simulator import calibration_bench

    for rows, one in ((1, True), (16, False)):
        g = calibration_bench.compile_for_host(calibration_bench.matmul_chain(rows, 128)(tmp_path / f"m{rows}.onnx"),
                                               tmp_path / f"m{rows}.opt.onnx")
        facts = [f for nd, f in zip(g.nodes, ort_task_facts(g)) if nd.op_type == "MatMul"]
        assert facts and all((ORT_INT8_ONE_ROW in f) is one for f in facts), (rows, facts)


def test_the_one_row_rate_under_static_int8_only() -> None:
    from simulator.backends import plan

    fact = frozenset({ORT_INT8_ONE_ROW})
    static, dyn = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "int8", 0)
    assert plan(HOST, HW, "Gemm", "gemm", static, True, False, facts=fact).tag == ONE_ROW_TAG
    assert plan(HOST, HW, "Gemm", "gemm", static, True, False).tag == "int8"
    assert plan(HOST, HW, "Gemm", "gemm", dyn, True, False, facts=fact) == plan(HOST, HW, "Gemm", "gemm", dyn, True,
                                                                               False)
    faster = HW.with_overrides({"units": {"cpu": {"efficiency": {f"gemm.{ONE_ROW_TAG}": 5.0}}}})
    from simulator.roofline import rates

    p = plan(HOST, HW, "Gemm", "gemm", static, True, False, facts=fact)
    assert rates(faster, p, "gemm", False).peak > rates(HW, p, "gemm", False).peak


def test_calibration_times_a_one_row_static_int8_case() -> None:
    from simulator import calibration_bench

    cases = [c for c in calibration_bench.CASES if ("int8-static", f"gemm.{ONE_ROW_TAG}") in c.variants]
    assert cases and all(c.kind == "gemm" for c in cases)
