"""ORT's fp32 data movement beyond the core's L2: calibration's MixNet-shaped channel-group blocks and the joint layout
fit (efficiency, setup per task, cost per output byte beyond the L2). Integration tier: graphs compiled by ORT."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_layout import mlp_blocks
from simulator.profiles import load_profile

L2 = 1 << 20  # the spill threshold the tests set: 1 MiB, whatever this machine's L2 is
HW = load_profile("host-cpu").with_overrides({"units": {"cpu": {"l2_share_bytes": float(L2)}}})


def test_only_ort_fp32_layout_pays_the_spill() -> None:
    host, litert = get_target("ort-cpu/host"), get_target("litert-cpu/host")
    fp32, int8 = Combo("fp32", "fp32", "-", 0), Combo("int8", "int8", "-", 0)
    assert plan(host, HW, "Concat", "layout", fp32, False, False).spill
    assert not plan(host, HW, "Concat", "layout", int8, False, False).spill
    assert not plan(host, HW, "Add", "elementwise", fp32, False, False).spill
    assert not plan(litert, HW, "CONCATENATION", "layout", fp32, False, False).spill


def _mixed_graphs(tmp_path: Path) -> tuple[list[str], dict]:  # type: ignore[type-arg]
    from simulator import calibration_bench as cb

    graphs = {}
    for name, build in (("mixed-64x28", lambda p: cb.mixed_blocks(64, 28, p)),
                        ("split-240x28", lambda p: cb.mixed_split_blocks(40, 240, 3, 28, p)),
                        ("split-144x56", lambda p: cb.mixed_split_blocks(24, 144, 2, 56, p)),
                        ("mlp-64x28", lambda p: cb.save_model(*mlp_blocks(64, 28, 512, 1), p))):
        graphs[name] = cb.compile_for_host(build(tmp_path / f"{name}.onnx"), tmp_path / f"{name}.opt.onnx")
    return list(graphs), graphs


def test_channel_group_blocks_move_tensors_beyond_the_l2(tmp_path: Path) -> None:
    """The 56 px block's Split, Concat and reorders write more than 1 MiB each on every ISA (NCHWc blocks of 8 or 16);
    the 28 px one's stay within it, so the cases tell the spill from the per-element and per-task costs."""
    from simulator.costs import work_of

    _, graphs = _mixed_graphs(tmp_path)
    for name, big in (("split-144x56", True), ("split-240x28", False)):
        g = graphs[name]
        lay = [(n.op_type, work_of(n, g)) for n in g.nodes if n.op_type in ("Split", "Concat", "ReorderInput",
                                                                            "ReorderOutput")]
        assert {"Split", "Concat"} <= {op for op, _ in lay}
        assert all(w.kind == "layout" for _, w in lay)
        assert any(w.out_elements * 4 > L2 for _, w in lay) == big


def test_joint_layout_fit_recovers_the_spill(tmp_path: Path) -> None:
    """Synthetic measurements made by the cost model with a known layout efficiency, spill cost and cost of strided
    moves (transposes.strided_move): _fit_layout finds both again and reproduces every case."""
    from simulator import calibration_bench as cb
    from simulator import calibration_fit as cf

    names, graphs = _mixed_graphs(tmp_path)
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": 0.3},
                                                 "kind_overhead_s": {"layout.fp32.spill": 4e-11,
                                                                     "layout.fp32.far": 1e-10}}}})
    run_s = HW.units[0].run_overhead_s
    wall = {n: cf._predict_ms(graphs[n], truth, "fp32") + run_s * 1e3 for n in names}
    bench = cb.Bench(tmp_path, time.perf_counter(), {}, graphs, [], names, 0, 0, 0.0, 0.0)
    out: list[dict] = []  # type: ignore[type-arg]
    eff, setups = cf._fit_layout(bench, wall, run_s, out, HW)
    assert setups["layout.fp32.spill"] == pytest.approx(4e-11, rel=0.15)
    assert setups["layout.fp32.far"] == pytest.approx(1e-10, rel=0.15)
    fitted = HW.with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": eff}, "kind_overhead_s": setups}}})
    for n in names:
        assert cf._predict_ms(graphs[n], fitted, "fp32") == pytest.approx(wall[n] - run_s * 1e3, rel=0.05)
    assert [c["case"] for c in out] == names and all(c["key"] == "layout.fp32" for c in out)
