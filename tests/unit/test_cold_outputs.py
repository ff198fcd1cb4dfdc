"""An SGEMM's output beyond the core's L2 written to lines the model's own traffic evicted (roofline.cold_output_s)."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.roofline import Counts, Rates, Residency, cold_output_s, rates, stack, task_cost
from tests.simulator.helpers import act, graph, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu").with_overrides({"units": {"cpu": {
    "l2_share_bytes": 2.0 ** 20, "llc_spill_hold_bytes": 5e6, "llc_spill_evict_bytes": 20e6}}})
FP32 = Combo("fp32", "fp32", "fp32", 0)


def _task(op: str, rows: int, k: int, n: int) -> tuple[Counts, Rates]:
    if op == "Gemm":  # CoaT's stage-1 fc1 at 3137 tokens: [3137, 64] x [64, 512], a 6.4 MB output
        g = graph([Node("fc", "fc", "Gemm", inputs=["x", "w"], outputs=["y"])],
                  [act("x", [rows, k]), weight("w", [k, n]), act("y", [rows, n])], ["x"], ["y"])
    else:
        g = graph([Node("r", "r", op, inputs=["x"], outputs=["y"])], [act("x", [rows, n]), act("y", [rows, n])],
                  ["x"], ["y"])
    w = work_of(g.nodes[0], g)
    return Counts.of([w]), stack([rates(HW, plan(HOST, HW, op, w.kind, FP32, True, False), w.kind, epilogue_pass=True)])


def _cold(op: str, rows: int, k: int, n: int, spill_bytes: float) -> float:
    c, r = _task(op, rows, k, n)
    return float(cold_output_s(c, r, Residency(False, 1e6, run_s=0.0, spill_bytes=spill_bytes))[0, 0])


def test_a_gemm_whose_output_outgrows_the_l2_pays_its_cold_lines_once_the_run_evicts_them() -> None:
    c, r = _task("Gemm", 3137, 64, 512)
    beyond = 3137 * 512 * 4 - float(r.l2[0])
    assert _cold("Gemm", 3137, 64, 512, 1e6) == 0.0  # the run's traffic within the ramp's hold: buffers stay
    assert _cold("Gemm", 3137, 64, 512, 40e6) == pytest.approx(beyond / float(r.evicted_bw[0]), rel=1e-6)
    assert _cold("Gemm", 3137, 64, 512, 12.5e6) == pytest.approx(beyond / float(r.evicted_bw[0]) / 2, rel=1e-6)
    busy = Residency(False, 1e6, run_s=0.0, spill_bytes=40e6)
    without = dataclasses.replace(r, cold_out=r.cold_out * 0)  # the same task, its output's lines left out
    added = task_cost(c, r, busy).latency_s[0, 0] - task_cost(c, without, busy).latency_s[0, 0]
    assert added == pytest.approx(beyond / float(r.evicted_bw[0]), rel=1e-6)


def test_outputs_within_the_l2_other_kernels_and_resident_models_pay_nothing() -> None:
    assert _cold("Gemm", 197, 384, 384, 40e6) == 0.0  # a 0.3 MB output
    assert _cold("Relu", 3137, 0, 512, 40e6) == 0.0
    c, r = _task("Gemm", 3137, 64, 512)
    assert cold_output_s(c, r, Residency(True, 1e6, spill_bytes=40e6)) == 0.0
