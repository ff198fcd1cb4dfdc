"""Static int8 on ORT's CPU: a Concat runs QLinearConcat (simulator/ort_int8.py ORT_INT8_CONCAT), which copies the
input at the output's quantization and looks up every element of the others; n - 1 of n inputs' shares of the output's
elements pay `layout.int8.lookup` beyond the Concat's copy, a figure calibration fits on QLinearConcats with one input
looked up against the same with none (calibration_nhwc)."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_models import R
from simulator.calibration_nhwc import CONCAT_SHAPES, KEY, case_elements, concat_case_name, fit_nhwc
from simulator.ort_int8 import CONCAT_LOOKUP_KEY, ORT_INT8_CONCAT, ort_task_facts
from simulator.profiles import load_profile
from simulator.roofline import rates
from tests.simulator.helpers import act, graph, paired_timings

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
STATIC, FP32 = Combo("int8", "int8", "-", 0), Combo("fp32", "fp32", "-", 0)


@pytest.mark.parametrize("n", [2, 3])
def test_the_fact_carries_the_concats_inputs(n: int) -> None:
    names = [f"x{i}" for i in range(n)]
    values = [*(act(x, [1, 8, 14, 14]) for x in names), act("y", [1, 8 * n, 14, 14])]
    cat = Node("cat", "cat", "Concat", inputs=names, outputs=["y"], attributes={"axis": 1})
    g = graph([cat], values, names, ["y"])
    assert f"{ORT_INT8_CONCAT}{n}" in ort_task_facts(g, g)[0]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_n_minus_one_of_n_inputs_pay_the_lookup_per_output_element(n: int) -> None:
    fact = frozenset({f"{ORT_INT8_CONCAT}{n}"})
    p = plan(HOST, HW, "Concat", "layout", STATIC, False, False, facts=fact)
    assert p.span_key == CONCAT_LOOKUP_KEY and p.rate_kind == "" and "QLinearConcat" in p.note
    lookup = HW.units[p.unit].kind_overhead_s[CONCAT_LOOKUP_KEY]
    assert lookup > 0 and rates(HW, p, "layout", False).span_s == pytest.approx(lookup * (n - 1) / n, rel=1e-12)
    plain = plan(HOST, HW, "Concat", "layout", STATIC, False, False)
    assert rates(HW, plain, "layout", False).span_s == 0.0
    # fp32 runs the float Concat: no lookup
    assert rates(HW, plan(HOST, HW, "Concat", "layout", FP32, False, False, facts=fact), "layout", False).span_s == 0.0


def test_a_one_input_concat_looks_nothing_up() -> None:
    p = plan(HOST, HW, "Concat", "layout", STATIC, False, False, facts=frozenset({f"{ORT_INT8_CONCAT}1"}))
    assert p.span_elements == 0.0 and rates(HW, p, "layout", False).span_s == 0.0


def test_fit_reads_the_lookup_per_element_looked_up_apart_from_the_reductions() -> None:
    names = tuple(concat_case_name(c, hw) for c, hw in CONCAT_SHAPES)
    c0, hw0 = CONCAT_SHAPES[0]
    assert case_elements(names[0]) == R * c0 * hw0 * hw0 // 2  # one of the two inputs looked up
    s = 2e-10
    measured = paired_timings(names, s, 0.05, case_elements)
    out: list[dict] = []
    fitted = fit_nhwc(names, {}, measured, HW, lambda g, h: 0.0, out)
    assert set(fitted) == {CONCAT_LOOKUP_KEY} and fitted[CONCAT_LOOKUP_KEY] == pytest.approx(s, rel=1e-9)
    assert [c["case"] for c in out] == list(names) and KEY not in fitted
    assert fit_nhwc(names, {}, {k: 1.0 for k in measured}, HW, lambda g, h: 0.0, []) == {CONCAT_LOOKUP_KEY: 0.0}
