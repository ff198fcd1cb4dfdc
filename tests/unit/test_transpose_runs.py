"""Transposes that copy runs (transposes.copy_runs): a cost per run (`layout.fp32.run`) beside their bytes."""

from __future__ import annotations

import pytest

from simulator.calibration_bench import TRANSPOSE_RUNS
from simulator.costs import work_of
from simulator.profiles import load_profile
from tests.simulator.helpers import host_fp32_ms, transpose_graph


# (shape, perm, runs): ORT copies the trailing axes a permutation leaves in place as one memcpy each; a permutation
# that keeps every axis of more than one element in order is a plain copy; without such axes there are no runs.
RUNS = [
    ([1, 197, 3, 64], [0, 2, 1, 3], 197 * 3),  # ViT-Tiny's head transpose: runs of 64
    ([1, 3136, 2, 32], [0, 2, 1, 3], 3136 * 2),  # PVT's: runs of 32
    ([1, 196, 3, 4, 32], [2, 0, 3, 1, 4], 196 * 3 * 4),
    ([8, 4, 16, 32], [1, 0, 2, 3], 8 * 4),  # runs of 16x32 elements
    ([1, 196, 1, 64], [0, 2, 1, 3], 0),  # only a size-1 axis moves: a plain copy
    ([1, 196, 4, 32], [0, 2, 3, 1], 0),  # the innermost axis moves: ORT's single-axis kernel, element by element
    ([1, 196, 1, 4, 32], [2, 0, 3, 4, 1], 0),  # walked (kind walk)
]


@pytest.mark.parametrize(("shape", "perm", "runs"), RUNS)
def test_runs_a_transpose_copies(shape: list[int], perm: list[int], runs: int) -> None:
    g = transpose_graph(shape, perm)
    assert work_of(g.nodes[0], g).copy_runs == runs


def test_each_run_costs_the_calibrated_time_and_nothing_without_the_figure() -> None:
    base = load_profile("host-cpu")
    own = base.with_overrides({"units": {"cpu": {"kind_overhead_s": {"layout.fp32.run": 7e-9}}}})
    heads, stream = transpose_graph([1, 3136, 2, 32], [0, 2, 1, 3]), transpose_graph([1, 64, 56, 56], [0, 1, 3, 2])
    # 6272 runs at 7 ns: 0.0439 ms more; a transpose that copies no runs is unchanged.
    assert host_fp32_ms(heads, own) - host_fp32_ms(heads, base) == pytest.approx(6272 * 7e-9 * 1e3, rel=1e-6)
    assert host_fp32_ms(stream, own) == pytest.approx(host_fp32_ms(stream, base))


def test_the_calibration_cases_are_head_transposes_of_short_runs() -> None:
    for t, h, d in TRANSPOSE_RUNS:
        g = transpose_graph([1, t, h, d], [0, 2, 1, 3])
        w = work_of(g.nodes[0], g)
        assert w.kind == "layout" and w.copy_runs == t * h and d <= 64


def test_the_fit_recovers_a_cost_per_run_from_timings() -> None:
    from types import SimpleNamespace

    from simulator.calibration_fit import _fit_runs, _predict_ms

    hw = load_profile("host-cpu")
    truth = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {"layout.fp32.run": 6e-9}}}})
    graphs = {f"t{t}x{h}x{d}": transpose_graph([1, t, h, d], [0, 2, 1, 3]) for t, h, d in TRANSPOSE_RUNS}
    run_s = 5e-6  # the per-run fixed cost the fit subtracts from each timing (ms below)
    wall = {n: _predict_ms(g, truth, "fp32") + run_s * 1e3 for n, g in graphs.items()}
    bench = SimpleNamespace(transposes=tuple(graphs), graphs=graphs)
    out: list[dict[str, object]] = []
    fitted = _fit_runs(bench, wall, run_s, out, hw)  # type: ignore[arg-type]
    assert fitted["layout.fp32.run"] == pytest.approx(6e-9, rel=1e-3)
    assert [c["case"] for c in out] == list(graphs)
    # Timings no slower than the per-element rate alone give no negative cost.
    flat = {n: _predict_ms(g, hw, "fp32") * 0.9 + run_s * 1e3 for n, g in graphs.items()}
    assert _fit_runs(bench, flat, run_s, [], hw)["layout.fp32.run"] == 0.0  # type: ignore[arg-type]
