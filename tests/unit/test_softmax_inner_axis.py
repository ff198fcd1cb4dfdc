"""A Softmax over an axis that is not the last one (transposes.inner_axis_transposes): ORT's kernel (opset 13 on) swaps
that axis with the last, runs its rows there and swaps back; those two Transposes are priced as Transpose tasks of the
same permutation would be (a walk's rate; where they move blocks, calibration's figure for them, `layout.fp32.inner`,
else the layout rate), on ORT's CPU EP only."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from simulator.calibration_inner import AXIS, CASE, SHAPE, fit_inner, reference_shape
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.roofline import INNER_MOVE_KEY
from tests.simulator.helpers import act, graph, host_fp32_ms, transpose_graph

HW = load_profile("host-cpu")


def _softmax(shape: list[int], axis: int, opset: int | None = None, op: str = "Softmax") -> Graph:
    g = graph([Node("sm", "sm", op, inputs=["x"], outputs=["y"], attributes={"axis": axis})],
              [act("x", shape), act("y", shape)], ["x"], ["y"])
    if opset is not None:
        g.metadata["opsets"] = f"ai.onnx:{opset},com.microsoft:1"
    return g


def _inner(g: Graph) -> tuple[float, float, float]:
    w = work_of(g.nodes[0], g)
    return w.inner_walked, w.inner_moved, w.inner_far


# CoaT-Lite-Tiny's Softmax as ORT's transpose pass leaves it: [1, tokens, heads, channels] over the tokens. The swap
# [0, 3, 2, 1] walks both ways; the way in reads each input line again only after 8 x 3137 outputs (a far walk).
COAT = [1, 3137, 8, 8]


def test_coats_softmax_walks_both_transposes_and_the_first_is_far() -> None:
    n = 3137 * 64
    assert _inner(_softmax(COAT, 1, 17)) == (2.0 * n, 0.0, 1.0)
    assert _inner(_softmax(COAT, -3, 17)) == (2.0 * n, 0.0, 1.0)


@pytest.mark.parametrize(("shape", "axis", "moved"), [
    ([1, 8, 3137, 8], 2, True),  # timm's own `k.softmax(dim=2)`: the swap [0, 1, 3, 2] moves one axis, blocked
    ([1, 197, 192], 1, True),  # [0, 2, 1]: one axis
    ([1, 8, 3137, 8], 3, False),  # the last axis: the row kernel alone
    ([1, 8, 3137, 8], -1, False),
])
def test_other_axes(shape: list[int], axis: int, moved: bool) -> None:
    n = float(shape[0] * shape[1] * shape[2] * (shape[3] if len(shape) > 3 else 1))
    assert _inner(_softmax(shape, axis)) == ((0.0, 2 * n, 0.0) if moved else (0.0, 0.0, 0.0))


def test_before_opset_13_the_axis_flattens_into_rows_without_transposes() -> None:
    assert _inner(_softmax(COAT, 1, 12)) == (0.0, 0.0, 0.0)
    assert _inner(_softmax(COAT, 1, 13))[0] > 0
    assert _inner(_softmax(COAT, 1, 13, op="LogSoftmax"))[0] > 0
    assert _inner(_softmax(COAT, 1, 13, op="QLinearSoftmax")) == (0.0, 0.0, 0.0)


def test_walked_transposes_cost_what_the_same_transpose_tasks_cost() -> None:
    """Beside its row kernel over the swapped tensor, a Softmax over an inner axis whose swap walks costs what two
    Transpose tasks of that swap cost, less their fixed setup (they are not tasks of their own), within the cache and
    beyond it (a far walk's bytes beyond the L2: [1, 12544, 8, 8] is 3.2 MB)."""
    hw = HW.with_overrides({"units": {"cpu": {"efficiency": {"walk.fp32": 0.003, "layout.fp32": 0.3},
                                              "kind_overhead_s": {"walk.fp32.far": 2e-9}}}})
    for shape, axis in (([1, 3137, 8, 8], 1), ([1, 12544, 8, 8], 1), ([2, 64, 8, 16], 1)):
        perm = list(range(len(shape)))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        swapped = [shape[p] for p in perm]
        rows = host_fp32_ms(_softmax(swapped, -1), hw)
        parts = host_fp32_ms(transpose_graph(shape, perm), hw) + host_fp32_ms(transpose_graph(swapped, perm), hw)
        setups = host_fp32_ms(transpose_graph([1, 1, 2], [0, 2, 1]), hw) * 2  # ~ two empty Transpose tasks
        got = host_fp32_ms(_softmax(shape, axis), hw)
        assert got == pytest.approx(rows + parts - setups, rel=0.1), shape
    # A blocked swap moves its elements at the layout rate: [4, 1024, 64] over axis 1, two moves of 262,144 elements
    n, peak = 4 * 1024 * 64, hw.units[0].peak_ops_per_s["fp32"]
    rows = host_fp32_ms(_softmax([4, 64, 1024], -1), hw)
    assert host_fp32_ms(_softmax([4, 1024, 64], 1), hw) - rows == pytest.approx(2 * n / (peak * 0.3) * 1e3, rel=1e-6)


def test_only_ort_cpus_kernel_transposes() -> None:
    from simulator.sweep import sweep

    hw = HW.with_overrides({"units": {"cpu": {"efficiency": {"walk.fp32": 0.003}}}})
    g, last = _softmax(COAT, 1, 17), _softmax([1, 8, 8, 3137], -1, 17)
    assert host_fp32_ms(g, hw) > 5 * host_fp32_ms(last, hw)

    def ms(x: Graph, target: str, preset: str) -> float:
        r = sweep(x, target, hardware=hw if target == "ort-cpu/host" else None, presets_only=(preset,))
        j = [p["name"] for p in r.bulk["presets"]].index(preset)
        return float(r.bulk["metrics"]["latency_ms"][0][j])

    # another backend (ORT's XNNPACK EP on a Raspberry Pi 5) runs no such kernel
    assert ms(g, "ort-xnnpack/rpi5", "fp32") == pytest.approx(ms(last, "ort-xnnpack/rpi5", "fp32"), rel=0.05)


def test_blocked_swaps_move_at_calibrations_own_figure_where_it_has_one() -> None:
    """`layout.fp32.inner` (calibration_inner) prices a blocked swap's elements in place of the layout rate, whose
    compute term the layout fit drives to its ceiling (~0.003 ns per element: CaiT's talking-heads Softmax priced
    as its rows alone); walks keep the walk's figures."""
    s = 2.3e-10
    hw = HW.with_overrides({"units": {"cpu": {"efficiency": {"walk.fp32": 0.003, "layout.fp32": 2.4},
                                              "kind_overhead_s": {INNER_MOVE_KEY: s}}}})
    plain = HW.with_overrides({"units": {"cpu": {"efficiency": {"walk.fp32": 0.003, "layout.fp32": 2.4}}}})
    shape = [1, 196, 196, 4]  # CaiT-XXS-24's, as ORT's transpose pass leaves it: a swap [0, 1, 3, 2], blocked
    n = 196 * 196 * 4
    rows = host_fp32_ms(_softmax(reference_shape(shape, 2), -1), hw)
    assert host_fp32_ms(_softmax(shape, 2), hw) - rows == pytest.approx(2 * n * s * 1e3, rel=1e-6)
    assert host_fp32_ms(_softmax(shape, 2), plain) - rows < 0.1 * 2 * n * s * 1e3  # the layout rate: ~0
    assert host_fp32_ms(_softmax(COAT, 1, 17), hw) == pytest.approx(host_fp32_ms(_softmax(COAT, 1, 17), plain))


def test_the_fit_reads_the_figure_off_the_case_over_its_reference() -> None:
    truth = 2.3e-10
    graphs = {CASE: _softmax(SHAPE, AXIS), f"{CASE}-ref": _softmax(reference_shape(SHAPE, AXIS), -1)}
    with_truth = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {INNER_MOVE_KEY: truth}}}})
    measured = {k: host_fp32_ms(g, with_truth) for k, g in graphs.items()}
    out: list[dict[str, object]] = []
    assert fit_inner((CASE,), graphs, measured, HW, host_fp32_ms, out)[INNER_MOVE_KEY] == pytest.approx(truth, rel=1e-6)
    assert [o["case"] for o in out] == [CASE]
    # a case no slower than its reference leaves the figure at 0; no timings, no figure
    assert fit_inner((CASE,), graphs, {k: 1.0 for k in graphs}, HW, host_fp32_ms, []) == {INNER_MOVE_KEY: 0.0}
    assert fit_inner((CASE,), graphs, {}, HW, host_fp32_ms, []) == {}
