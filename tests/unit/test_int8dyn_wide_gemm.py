"""Calibration times a wide dynamic int8 classifier (simulator/calibration_int8dyn.py `wide_gemms`) beside its square
MatMul chains, so `gemm.int8dyn` is fitted (jointly: rate and setup) on the shape CRNN recognizers end with."""

from __future__ import annotations

from simulator.calibration_int8dyn import INT8DYN_CASES, wide_gemms


def test_each_wide_gemm_reads_a_weight_of_its_own() -> None:
    nodes, ins, outs, inits = wide_gemms(8, 64, 256, 2)
    assert [n.op_type for n in nodes] == ["MatMul", "MatMul"] and len(ins) == 1 and len(outs) == 2
    assert len({n.input[1] for n in nodes}) == 2 and [list(i.dims) for i in inits] == [[64, 256], [64, 256]]


def test_the_wide_case_joins_the_square_chains_in_the_dynamic_gemm_fit() -> None:
    from simulator.calibration_bench import CASES

    wide = [c for c in CASES if c.name == "dyngemm-48x512-n8192"]
    assert len(wide) == 1 and wide[0].kind == "gemm" and wide[0].variants == (("int8-dynamic", "int8dyn"),)
    assert any(n == "dyngemm-48x512-n8192" for n, *_ in INT8DYN_CASES)
    fitted = [c for c in CASES if c.kind == "gemm" and ("int8-dynamic", "int8dyn") in c.variants]
    assert len(fitted) >= 3  # calibration_fit fits a key of 3+ quantized cases jointly (efficiency + setup)
