"""Static int8 on ORT's CPU: a squeeze-excite ReduceMean of NHWC data (simulator/ort_int8.py ORT_INT8_NHWC_REDUCE)
pays `reduce.int8.nhwc` per element read (calibration_nhwc), before the fp32 file's short-row cost; a Conv ORT made of a
BatchNormalization alone stays an fp32 BatchNormalization in NCHW in the int8 file, so a reduction after it is none."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_models import R
from simulator.calibration_nhwc import KEY, SHAPES, case_elements, case_name, fit_nhwc
from simulator.ort_int8 import NHWC_REDUCE_KEY, ORT_INT8_NHWC_REDUCE, ORT_REDUCE_ROWS, REDUCE_ROW_KEY, ort_task_facts
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, paired_timings, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
STATIC, FP32 = Combo("int8", "int8", "-", 0), Combo("fp32", "fp32", "-", 0)


def _conv_then_mean(made_of: str) -> tuple[Graph, Graph]:
    """(source, compiled): a source node `made_of` (Conv or BatchNormalization) that the compiled graph runs as a
    Conv, then a ReduceMean over H, W of [1, 32, 28, 28]."""
    values = [act("x", [1, 32, 28, 28]), weight("w", [32, 32, 1, 1]), act("c", [1, 32, 28, 28]),
              act("m", [1, 32, 1, 1])]
    mean = Node("mean", "mean", "ReduceMean", inputs=["c"], outputs=["m"], attributes={"axes": [2, 3], "keepdims": 1})
    source = graph([Node("src", "src", made_of, inputs=["x", "w"], outputs=["c"]), mean], values, ["x"], ["m"])
    conv = Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["c"], source_nodes=["src"])
    compiled = graph([conv, Node("mean", "mean", "ReduceMean", inputs=["c"], outputs=["m"],
                                 attributes={"axes": [2, 3], "keepdims": 1}, source_nodes=["mean"])],
                     values, ["x"], ["m"])
    return source, compiled


@pytest.mark.parametrize(("made_of", "nhwc"), [("Conv", True), ("BatchNormalization", False)])
def test_a_conv_made_of_a_batchnorm_leaves_its_reduction_nchw(made_of: str, nhwc: bool) -> None:
    source, compiled = _conv_then_mean(made_of)
    facts = ort_task_facts(compiled, source)[1]
    assert (f"{ORT_INT8_NHWC_REDUCE}784" in facts) is nhwc, facts


def test_nhwc_reduce_pays_its_figure_per_element_read_before_the_short_row_cost() -> None:
    facts = frozenset({f"{ORT_INT8_NHWC_REDUCE}49", f"{ORT_REDUCE_ROWS}49"})
    p = plan(HOST, HW, "ReduceMean", "reduce", STATIC, False, False, facts=facts)
    assert p.span_key == NHWC_REDUCE_KEY and p.span_elements == pytest.approx(1 / 49), p
    assert not p.fp32_equivalent  # the fp32 upload's measured (contiguous) time does not apply
    plain = plan(HOST, HW, "ReduceMean", "reduce", STATIC, False, False)
    assert plain.span_key == "" and plain.span_elements == 0.0
    # fp32 runs the upload's layout: its short rows, one call each, not the NHWC figure
    f = plan(HOST, HW, "ReduceMean", "reduce", FP32, False, False, facts=facts)
    assert f.span_key == REDUCE_ROW_KEY and f.span_elements == 1.0, f


def test_fit_reads_the_cases_time_over_their_references_per_element() -> None:
    names = tuple(case_name(c, hw) for c, hw in SHAPES)
    assert case_elements(names[0]) == R * SHAPES[0][0] * SHAPES[0][1] ** 2
    s = 5e-10
    measured = paired_timings(names, s, 0.1, case_elements)
    out: list[dict] = []
    assert fit_nhwc(names, {}, measured, HW, lambda g, h: 0.0, out)[KEY] == pytest.approx(s, rel=1e-9)
    assert [c["case"] for c in out] == list(names)
    # a case no slower than its reference: no extra cost, not a negative one
    assert fit_nhwc(names, {}, {k: 1.0 for k in measured}, HW, lambda g, h: 0.0, []) == {KEY: 0.0}
    assert fit_nhwc(names, {}, {}, HW, lambda g, h: 0.0, []) == {}
