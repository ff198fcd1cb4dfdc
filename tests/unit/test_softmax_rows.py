"""ORT's fp32 Softmax row kernel (simulator/softmax_rows.py): a cost per row (`softmax.fp32.row`) and each row's
elements rounded up to the machine's register block (Unit.sgemm_column_block), on ORT's CPU EP only."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.softmax_rows import softmax_rows
from tests.simulator.helpers import act, graph, host_fp32_ms

# compute-bound: activations at a very high rate and no fixed costs, so the latency is the row kernel's work
FAST = {"cache_bandwidth_bytes_per_s": 1e18, "kind_bandwidth_bytes_per_s": {"default": 1e18},
        "dispatch_overhead_s": 0.0, "kind_overhead_s": {"softmax": 0.0, "softmax.fp32": 0.0}}
HW = load_profile("host-cpu").with_overrides({"units": {"cpu": {**FAST, "sgemm_column_block": 16.0}}})


def _softmax(shape: list[int], axis: int = -1, opset: int | None = None, op: str = "Softmax") -> Graph:
    g = graph([Node("sm", "sm", op, inputs=["x"], outputs=["y"], attributes={"axis": axis})],
              [act("x", shape), act("y", shape)], ["x"], ["y"])
    if opset is not None:
        g.metadata["opsets"] = f"ai.onnx:{opset},com.microsoft:1"
    return g


@pytest.mark.parametrize(("shape", "axis", "opset", "rows", "d", "off_line"), [
    ([64, 3, 49, 49], -1, 17, 64 * 3 * 49, 49, 15 / 16),  # Swin's windows: one row in 16 starts a cache line
    ([8, 196, 196], -1, 17, 8 * 196, 196, 3 / 4),  # 784 bytes a row: every fourth row on a line
    ([8, 64, 48], -1, 17, 8 * 64, 48, 0.0),  # 192 bytes: every row on a line
    ([1, 3137, 8, 8], 1, 17, 64, 3137, 15 / 16),  # an inner axis: swapped to the last, rows over it
    ([2, 3, 4, 5], 1, 11, 2, 60, 3 / 4),  # before opset 13: the axes from `axis` flatten into one row
    ([2, 3, 4, 5], None, 11, 2, 60, 3 / 4),  # ... and the axis defaults to 1
])
def test_rows_and_their_length(shape: list[int], axis: int | None, opset: int, rows: int, d: int,
                               off_line: float) -> None:
    g = _softmax(shape, -1 if axis is None else axis, opset)
    if axis is None:
        g.nodes[0].attributes.pop("axis")
    assert softmax_rows(g.nodes[0], g) == {"row_calls": float(rows), "row_extra_calls": rows * off_line,
                                           "sgemm_columns": float(d), "sgemm_align": float(min(d & -d, 64))}
    w = work_of(g.nodes[0], g)
    assert (w.row_calls, w.sgemm_columns) == (float(rows), float(d))


def test_other_ops_have_no_rows() -> None:
    g = _softmax([4, 49], op="QLinearSoftmax")
    assert softmax_rows(g.nodes[0], g) == {}


@pytest.mark.parametrize(("d", "padded"), [(49, 64), (16, 16), (17, 32), (196, 208), (128, 128)])
def test_a_row_pays_its_elements_in_whole_registers(d: int, padded: int) -> None:
    """Rows of 49 cost what rows of 64 do (measured 29.9 against 30.8 ns a row on an Emerald Rapids); a machine
    without the block figure pays the elements alone."""
    unpadded = HW.with_overrides({"units": {"cpu": {"sgemm_column_block": 0.0}}})
    g = _softmax([3136, d])
    assert host_fp32_ms(g, HW) / host_fp32_ms(g, unpadded) == pytest.approx(padded / d, rel=0.01)


def test_each_row_costs_the_fitted_figures_on_orts_cpu_ep_only() -> None:
    """`softmax.fp32.row` per row, `.tap` more per row off a cache line: rows of 64 floats pay no `.tap`."""
    fig = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {"softmax.fp32.row": 1e-8,
                                                                   "softmax.fp32.tap": 2e-8}}}})
    aligned, off = _softmax([3136, 64]), _softmax([3136, 49])
    assert host_fp32_ms(aligned, fig) - host_fp32_ms(aligned, HW) == pytest.approx(3136 * 1e-8 * 1e3, rel=1e-6)
    assert host_fp32_ms(off, fig) - host_fp32_ms(off, HW) == pytest.approx(3136 * (1e-8 + 15 / 16 * 2e-8) * 1e3,
                                                                           rel=1e-6)
    fp32, int8 = Combo("fp32", "fp32", "-", 0), Combo("int8", "int8", "-", 0)
    ort = plan(get_target("ort-cpu/host"), HW, "Softmax", "softmax", fp32, False, False)
    assert ort.qgemm and ort.padded_sgemm
    assert not plan(get_target("ort-cpu/host"), HW, "QLinearSoftmax", "softmax", int8, False, False).qgemm
    xnn = plan(get_target("litert-cpu/host"), load_profile("host-cpu"), "SOFTMAX", "softmax", fp32, False, False)
    assert not xnn.qgemm and not xnn.padded_sgemm
