"""LiteRT's fp32 TRANSPOSE and element-wise ops at XNNPACK's figures (simulator.tflite_ops.transpose_calls,
simulator.litert_layout.transpose_fit, simulator.litert_elementwise): a transpose costs its kernel calls (a memcpy per
run kept in place, else an 8 x 8 tile whether full or not) and its far rows beyond the L2, not the layout rate per
element (profiled on a Zen 4: 0.07-0.45 ns per element in cache by shape, LR-ASPP's 22 MB output 4.1 ms against 1.6);
fp32 element-wise ops move their bytes at a rate of their own (ADD 0.35-0.45x its price at the cache rate)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from simulator import litert_elementwise, litert_layout
from simulator.calibration_fit import EFF_MAX
from simulator.litert_cases import predicted_ms
from simulator.litert_paths import XNN_TRANSPOSE, litert_task_facts
from simulator.profiles import XNN_TRANSPOSE_KEY, HardwareProfile, load_profile
from simulator.roofline import efficiency
from simulator.tflite_ops import transpose_calls, tflite_works
from tests.simulator.helpers import task_ms

HOST = "litert-cpu/host"


@pytest.mark.parametrize("dims, perm, calls, far", [
    ([1, 3, 224, 224], [0, 2, 3, 1], 6272, False),  # an image to NHWC: 3 x 8 tiles, its output's rows 3 wide
    ([1, 56, 56, 24], [0, 3, 1, 2], 392 * 3, True),  # NHWC -> NCHW: full tiles
    ([1, 784, 2, 58], [0, 1, 3, 2], 784 * 8, False),  # a channel shuffle's pairs: 1 x 8 tiles of 2 x 58
    ([1, 2, 58, 784], [0, 2, 1, 3], 116, False),  # the shuffle's middle transpose: runs of 784 kept in place
    ([1, 197, 3, 3, 64], [2, 0, 3, 1, 4], 197 * 9, False),  # q / k / v heads: runs of 64
    ([1, 5, 1, 7], [0, 2, 1, 3], 0, False),  # only a size-1 axis moves: a plain copy
    ([256, 256], [1, 0], 1024, True),
])
def test_xnnpack_transpose_calls(dims: list[int], perm: list[int], calls: int, far: bool) -> None:
    assert transpose_calls(dims, perm) == (calls, far)


def _transposes(path: Path) -> Path:
    """x [1, 64, 64, 16] -> TRANSPOSE to NCHW; -> ADD x + x."""
    w = TfliteWriter(description="t")
    x = w.tensor("x", [1, 64, 64, 16])
    t = w.tensor("nchw", [1, 16, 64, 64])
    w.op("TRANSPOSE", [x, w.const("perm", np.array([0, 3, 1, 2], np.int32))], [t])
    s = w.tensor("sum", [1, 64, 64, 16])
    w.op("ADD", [x, x], [s], w.options("AddOptions"))
    return w.save(path, [x], [t, s])


def test_a_transpose_pays_its_calls_and_far_rows_where_calibrated(tmp_path: Path) -> None:
    g = tflite.load(_transposes(tmp_path / "t.tflite"))
    assert [XNN_TRANSPOSE in f for f in litert_task_facts(g)] == [True, False]
    w = tflite_works(g)[0][0]
    assert w.copy_runs == 8 * 64 * 2 and w.far_walk == 64 * 64 * 16
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"l2_share_bytes": 65536.0}}})
    eff = {XNN_TRANSPOSE_KEY: efficiency(base.units[0], "layout", "fp32")}
    figures = {"efficiency": eff,
               "kind_overhead_s": {litert_layout.TRANSPOSE_RUN: 6e-9, litert_layout.TRANSPOSE_FAR: 1e-10},
               "kind_bandwidth_bytes_per_s": {litert_layout.TRANSPOSE_BW: 2e11}}
    cal = base.with_overrides({"units": {"cpu": figures}})
    zero = base.with_overrides({"units": {"cpu": {**figures, "kind_overhead_s": {
        litert_layout.TRANSPOSE_RUN: 0.0, litert_layout.TRANSPOSE_FAR: 0.0}}}})
    slow = base.with_overrides({"units": {"cpu": {**figures, "kind_bandwidth_bytes_per_s": {
        litert_layout.TRANSPOSE_BW: 1e11}}}})
    for preset in ("fp32", "fp16"):  # fp16 weights run fp32's kernels
        ms = task_ms(g, HOST, cal, preset)[0]
        # 1,024 tiles of 8 x 8 at 6 ns, the output's 256 KiB beyond a 64 KiB L2 at 0.1 ns per byte
        assert ms - task_ms(g, HOST, zero, preset)[0] == pytest.approx(1024 * 6e-6 + (65536 * 4 - 65536) * 1e-7,
                                                                       rel=0.01)
        # its 512 KiB (in and out) beyond the L2 at the rate they had without its own, within a 1 MiB one at its own
        # (the roofline's max with its arithmetic: up to that)
        assert task_ms(g, HOST, slow, preset)[0] == ms
        big = {"units": {"cpu": {"l2_share_bytes": 2.0**20}}}
        bytes_ms = 64 * 64 * 16 * 8 * (1e-11 - 5e-12) * 1e3
        assert 0.5 * bytes_ms < (task_ms(g, HOST, slow.with_overrides(big), preset)[0]
                                 - task_ms(g, HOST, cal.with_overrides(big), preset)[0]) <= bytes_ms * 1.001
    # static int8: XNNPACK's x8 kernel, not these figures
    assert task_ms(g, HOST, cal, "int8-static")[0] == task_ms(g, HOST, base, "int8-static")[0]


def test_the_transpose_fit_recovers_its_figures(tmp_path: Path) -> None:
    """The transpose cases 'measured' at known figures: the fit finds them again."""
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"l2_share_bytes": 1048576.0}}})
    eff = {XNN_TRANSPOSE_KEY: efficiency(base.units[0], "layout", "fp32")}
    true = base.with_overrides({"units": {"cpu": {
        "efficiency": eff, "kind_overhead_s": {litert_layout.TRANSPOSE_RUN: 5e-9, litert_layout.TRANSPOSE_FAR: 8e-11},
        "kind_bandwidth_bytes_per_s": {litert_layout.TRANSPOSE_BW: 1.5e11}}}})
    measured = {}
    for c in (c for c in litert_layout.CASES if c.op == "TRANSPOSE"):
        g = tflite.load(litert_layout.build(c, tmp_path / f"{c.name}.tflite"))
        measured[c.name] = (g, predicted_ms(g, true, "fp32"))
    o = litert_layout.fit(measured, base)["units"]["cpu"]
    assert o["kind_overhead_s"][litert_layout.TRANSPOSE_RUN] == pytest.approx(5e-9, rel=0.02)
    assert o["kind_overhead_s"][litert_layout.TRANSPOSE_FAR] == pytest.approx(8e-11, rel=0.02)
    assert o["kind_bandwidth_bytes_per_s"][litert_layout.TRANSPOSE_BW] == pytest.approx(1.5e11, rel=0.02)


def test_fp32_element_wise_ops_move_at_their_own_rate_within_the_l2(tmp_path: Path) -> None:
    """The ADD's 0.75 MiB (two reads of x, its sum) at `elementwise.fp32` in a 4 MiB L2; beyond a 512 KiB one at the
    rate it had without it (the cache's or memory's: in the models, maps beyond the L2 ran at about the cache rate)."""
    g = tflite.load(_transposes(tmp_path / "t.tflite"))
    for l2, faster in ((4 * 2**20, True), (2**19, False)):
        base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"l2_share_bytes": l2}}})
        fast = base.with_overrides({"units": {"cpu": {
            "kind_bandwidth_bytes_per_s": litert_elementwise.with_bandwidths(base, {litert_elementwise.BW_KEY: 1e13})}}})
        if faster:
            assert task_ms(g, HOST, fast, "fp32")[1] < task_ms(g, HOST, base, "fp32")[1] * 0.6  # its arithmetic left
        else:
            assert task_ms(g, HOST, fast, "fp32")[1] == task_ms(g, HOST, base, "fp32")[1]
        assert task_ms(g, HOST, fast, "int8-static")[1] == task_ms(g, HOST, base, "int8-static")[1]  # fp32's only


def test_litert_bandwidths_join_the_profiles_which_with_overrides_replaces() -> None:
    """with_overrides replaces a unit's kind bandwidths (a device fit sets them as one); LiteRT's fits and its
    calibrated profile merge their own over the profile's (`with_bandwidths`)."""
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {
        "kind_bandwidth_bytes_per_s": {"reduce": 5e10}}}})
    own = {litert_elementwise.BW_KEY: 2e11}
    assert base.with_overrides({"units": {"cpu": {"kind_bandwidth_bytes_per_s": own}}}).units[0] \
        .kind_bandwidth_bytes_per_s == own
    assert litert_elementwise.with_bandwidths(base, own) == {"reduce": 5e10, **own}


_BYTES_BOUND = {key: EFF_MAX for key in litert_elementwise.BINARY_KEYS}  # XNNPACK's ADD and MUL: their bytes only


def _chains(tmp_path: Path, l2: float, bw: float, read: Callable[[Any, list[float]], list[float]]
            ) -> tuple[HardwareProfile, dict[str, tuple[Any, list[float]]]]:
    """(the profile fitted from, the element-wise chains 'measured' at `bw` and LOGISTIC 0.05 in an `l2` L2, as
    `read` (case, its predicted operators) gives them)."""
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {"l2_share_bytes": l2}}})
    true = base.with_overrides({"units": {"cpu": {
        "kind_bandwidth_bytes_per_s": {litert_elementwise.BW_KEY: bw},
        "efficiency": {litert_elementwise.LOGISTIC_KEY: 0.05, **_BYTES_BOUND}}}})
    measured = {}
    for c in litert_elementwise.CASES:
        g = tflite.load(litert_elementwise.build(c, tmp_path / f"{c.name}.tflite"))
        measured[c.name] = (g, read(c, predicted_ms(g, true, "fp32")[:-1]))
    return base, measured


def test_the_element_wise_fit_recovers_its_figures(tmp_path: Path) -> None:
    """Chains 'measured' at a known bandwidth and LOGISTIC efficiency (one case read 3x off): both found again, the
    bandwidth on the cases within the L2 (none without one)."""
    base, measured = _chains(tmp_path, 2.0**19, 1.6e11, lambda c, ms: [
        ms[0] * (3 if c == litert_elementwise.CASES[0] else 1), *ms[1:]])
    o = litert_elementwise.fit(measured, base)["units"]["cpu"]
    assert o["kind_bandwidth_bytes_per_s"][litert_elementwise.BW_KEY] == pytest.approx(1.6e11, rel=0.05)
    assert o["efficiency"][litert_elementwise.LOGISTIC_KEY] == pytest.approx(0.05, rel=0.05)
    no_l2 = base.with_overrides({"units": {"cpu": {"l2_share_bytes": 0.0}}})
    assert litert_elementwise.fit(measured, no_l2)["units"]["cpu"]["kind_bandwidth_bytes_per_s"] == {}


def test_the_element_wise_fit_leaves_out_operators_under_two_ticks(tmp_path: Path) -> None:
    """A Zen 5 (1 MiB L2, ~300 GB/s): the chains of maps under 0.5 MB ran in under a microsecond and the profiler read
    some at 0; those cases are left out (every rate's log error was infinite: the fit ran to its grid's floor,
    15.8 MB/s) and the bandwidth comes from the cases timed above two ticks, LOGISTIC's efficiency at it."""
    base, measured = _chains(tmp_path, 2.0**20, 3e11, lambda c, ms: [0.0] * len(ms) if c.name in (
        "add-120-14", "add-32-28") else ms)  # as s61 read them
    o = litert_elementwise.fit(measured, base)["units"]["cpu"]
    assert o["kind_bandwidth_bytes_per_s"][litert_elementwise.BW_KEY] == pytest.approx(3e11, rel=0.05)
    assert {k: o["efficiency"][k] for k in litert_elementwise.BINARY_KEYS} == _BYTES_BOUND
    assert o["efficiency"][litert_elementwise.LOGISTIC_KEY] == pytest.approx(0.05, rel=0.05)
