"""Static int8 on ORT's CPU: a Concat (QLinearConcat) or Split copies each part one row at a time, on NHWC data one
call per pixel and part (simulator/ort_int8_rows.py); each call pays `layout.int8.call`, a figure calibration fits on
QLinearConcats along the channels against the same inputs joined along H (calibration_nhwc, qcall-*)."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_models import R
from simulator.calibration_nhwc import CALL_SHAPES, CONCAT_SHAPES, call_case_name, case_elements, concat_case_name
from simulator.calibration_nhwc import fit_nhwc
from simulator.ort_int8 import CONCAT_LOOKUP_KEY, ort_task_facts
from simulator.ort_int8_rows import CALL_KEY, ORT_INT8_ROWS
from simulator.profiles import load_profile
from simulator.roofline import rates
from tests.simulator.helpers import act, graph, paired_timings, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
STATIC, FP32 = Combo("int8", "int8", "-", 0), Combo("fp32", "fp32", "-", 0)


def _parts(from_conv: bool, axis: int = 1) -> Graph:
    """A Conv (or an Identity where not `from_conv`) writing [1, 24, 28, 28], then a Split of it into 12 + 12
    channels and a Concat of the halves along `axis`."""
    values = [act("x", [1, 24, 28, 28]), weight("w", [24, 24, 1, 1]), act("c", [1, 24, 28, 28]),
              act("a", [1, 12, 28, 28]), act("b", [1, 12, 28, 28]),
              act("y", [1, 24, 28, 28] if axis == 1 else [1, 12, 56, 28])]
    first = Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["c"]) if from_conv else \
        Node("conv", "conv", "Identity", inputs=["x"], outputs=["c"])
    nodes = [first, Node("split", "split", "Split", inputs=["c"], outputs=["a", "b"], attributes={"axis": 1}),
             Node("cat", "cat", "Concat", inputs=["a", "b"], outputs=["y"], attributes={"axis": axis})]
    return graph(nodes, values, ["x"], ["y"])


def _run(g: Graph, op: str) -> float | None:
    facts = dict(zip([nd.op_type for nd in g.nodes], ort_task_facts(g, g)))[op]
    runs = [float(f[len(ORT_INT8_ROWS):]) for f in facts if f.startswith(ORT_INT8_ROWS)]
    return runs[0] if runs else None


@pytest.mark.parametrize("op", ["Concat", "Split"])
def test_nhwc_channels_are_one_call_per_pixel_and_part(op: str) -> None:
    # leaving a Conv: NHWC in the int8 file, 28 x 28 pixels x 2 parts, 12 channels a call
    assert _run(_parts(True), op) == 12.0
    # not leaving a Conv: the graph's own NCHW layout, one call per part (nothing before the channel axis but N)
    assert _run(_parts(False), op) == 24 * 28 * 28 / 2


def test_a_concat_along_h_is_called_per_part_whatever_the_layout() -> None:
    assert _run(_parts(True, axis=2), "Concat") == 12 * 56 * 28 / 2


@pytest.mark.parametrize("run", [8.0, 12.0, 128.0])
def test_each_call_pays_the_figure_on_the_int8_path_only(run: float) -> None:
    fact = frozenset({f"{ORT_INT8_ROWS}{run:g}"})
    for op in ("Concat", "Split"):
        p = plan(HOST, HW, op, "layout", STATIC, False, False, facts=fact)
        call = HW.units[p.unit].kind_overhead_s[CALL_KEY]
        assert call > 0 and p.call_elements == run
        assert rates(HW, p, "layout", False).call_s == pytest.approx(call / run, rel=1e-12)
        assert rates(HW, plan(HOST, HW, op, "layout", FP32, False, False, facts=fact), "layout", False).call_s == 0.0
        assert rates(HW, plan(HOST, HW, op, "layout", STATIC, False, False), "layout", False).call_s == 0.0


def test_a_concats_calls_add_to_its_lookups() -> None:
    fact = frozenset({f"{ORT_INT8_ROWS}12", "ort_int8_concat=2"})
    r = rates(HW, plan(HOST, HW, "Concat", "layout", STATIC, False, False, facts=fact), "layout", False)
    u = HW.units[0].kind_overhead_s
    assert r.span_s == pytest.approx(u[CONCAT_LOOKUP_KEY] / 2) and r.call_s == pytest.approx(u[CALL_KEY] / 12)


def test_fit_reads_the_cost_per_call_apart_from_the_lookups() -> None:
    calls = tuple(call_case_name(c, hw) for c, hw in CALL_SHAPES)
    lookups = tuple(concat_case_name(c, hw) for c, hw in CONCAT_SHAPES)
    c0, hw0 = CALL_SHAPES[0]
    assert case_elements(calls[0]) == R * (2 * hw0 * hw0 - 2)  # a memcpy per pixel and input against one per input
    measured = {**paired_timings(calls, 2e-9, 0.05, case_elements), **paired_timings(lookups, 3e-10, 0.07,
                                                                                     case_elements)}
    out: list[dict] = []
    fitted = fit_nhwc((*lookups, *calls), {}, measured, HW, lambda g, h: 0.0, out)
    assert fitted[CALL_KEY] == pytest.approx(2e-9, rel=1e-9) and fitted[CONCAT_LOOKUP_KEY] == pytest.approx(3e-10)
    assert [c["case"] for c in out if c["key"] == "qconcat-call"] == list(calls)
    assert fit_nhwc(calls, {}, {k: 1.0 for k in measured}, HW, lambda g, h: 0.0, []) == {CALL_KEY: 0.0}
