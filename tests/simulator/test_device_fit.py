"""The device fit (benchmarks/device_fit.py) on a tiny subset: graphs built in code stand in for four published
architectures, whose 'published' latencies are the simulator's own predictions under known figures. The fit must
recover those figures from the profile's estimates, cross-validate by family, never fit the validation model, and
give the same answer twice."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from benchmarks import device_fit as df
from compiler.graph import Graph, Node
from simulator.profiles import load_profile
from simulator.published import Measurement, architectures
from tests.simulator.helpers import act, graph, weight

TARGET = "ort-qnn/snapdragon-8g3"
SPEC = df.FitSpec(TARGET, "snapdragon-8g3", ("onnx",),
                  (df.Param("htp", "efficiency", "conv.fp16"), df.Param("htp", "run_overhead_s", "", 1e-6, 2e-3)))
TRUE = (0.12, 4e-4)
# Four families (squeezenet, shufflenet, densenet, inception) and one validation model.
MODELS = {"squeezenet1_1": (32, 56), "shufflenet_v2": (64, 56), "densenet121": (96, 28), "googlenet": (48, 112),
          "mobilenet_v2": (80, 56)}


def _net(c: int, hw: int, act_op: str = "Relu") -> Graph:
    """x -> Conv(3->c) -> Relu -> Conv(c->c, 3x3) -> Relu -> Conv(c->c, 3x3): compute-heavy enough to see eff. (The HTP
    runs a Relu in its conv: `act_op` "Sigmoid" keeps element-wise tasks of their own.)"""
    values = [act("x", [1, 3, hw, hw]), weight("w0", [c, 3, 3, 3])]
    nodes, prev = [], "x"
    for i in range(3):
        if i:
            values.append(weight(f"w{i}", [c, c, 3, 3]))
        values += [act(f"c{i}", [1, c, hw, hw]), act(f"r{i}", [1, c, hw, hw])]
        nodes += [Node(f"conv{i}", f"conv{i}", "Conv", inputs=[prev, f"w{i}"], outputs=[f"c{i}"],
                       attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
                  Node(f"relu{i}", f"relu{i}", act_op, inputs=[f"c{i}"], outputs=[f"r{i}"])]
        prev = f"r{i}"
    return graph(nodes, values, ["x"], [prev])


@pytest.fixture(scope="module")
def setup() -> tuple[list[Measurement], dict]:
    graphs = {m: (None, _net(*cs)) for m, cs in MODELS.items()}
    base = load_profile("snapdragon-8g3", "ort-qnn")
    truth = base.with_overrides(df.overrides(SPEC.params, TRUE))
    stub = [Measurement(m, (1, 3, MODELS[m][1], MODELS[m][1]), "Samsung Galaxy S24", "snapdragon-8g3", "onnx",
                        "float", 1.0, None, None, "test") for m in MODELS]
    plans = df.make_plans(SPEC, stub, graphs, base)
    rows = [dataclasses.replace(p.row, latency_ms=p.latency_ms) for p in df.predict(SPEC, stub, plans, truth)]
    return rows, plans


def test_fit_recovers_known_figures_and_cross_validates_by_family(setup: tuple) -> None:
    rows, graphs = setup
    assert architectures()["mobilenet_v2"].validation
    rep = df.run(SPEC, rows, graphs, max_nfev=40, log=lambda *_, **__: None, prior=0.0)  # exact data: no prior
    assert rep["params"]["htp.efficiency.conv.fp16"] == pytest.approx(TRUE[0], rel=0.05)
    assert rep["params"]["htp.run_overhead_s"] == pytest.approx(TRUE[1], rel=0.05)
    assert rep["params_before"]["htp.efficiency.conv.fp16"] != pytest.approx(TRUE[0], rel=0.05)  # it had to move
    assert rep["families"] == ["densenet", "inception", "shufflenet", "squeezenet"]  # validation model not among them
    assert rep["heldout"]["n_points"] == 4 and rep["heldout"]["median_pct"] < 5
    assert [v["model"] for v in rep["validation_rows"]] == ["mobilenet_v2"]
    assert abs(rep["validation_rows"][0]["error_pct"]) < 5
    assert rep["train_rows"] == 4


def test_fit_is_reproducible(setup: tuple) -> None:
    rows, graphs = setup
    a = df.run(SPEC, rows, graphs, max_nfev=15, log=lambda *_, **__: None)
    b = df.run(SPEC, rows, graphs, max_nfev=15, log=lambda *_, **__: None)
    assert a["params"] == b["params"] and a["heldout"] == b["heldout"] and a["validation_rows"] == b["validation_rows"]


def test_changing_a_validation_row_changes_no_fitted_figure(setup: tuple) -> None:
    rows, graphs = setup
    moved = [dataclasses.replace(r, latency_ms=r.latency_ms * 3) if r.model == "mobilenet_v2" else r for r in rows]
    a = df.run(SPEC, rows, graphs, max_nfev=15, log=lambda *_, **__: None)
    b = df.run(SPEC, moved, graphs, max_nfev=15, log=lambda *_, **__: None)
    assert a["params"] == b["params"]
    assert b["validation_rows"][0]["error_pct"] == pytest.approx(
        ((1 + a["validation_rows"][0]["error_pct"] / 100) / 3 - 1) * 100, abs=0.2)


def test_a_peak_figure_is_fitted_within_its_map() -> None:
    """A map field other than efficiency (peak_ops_per_s) keeps its other keys; a '*' scale of it is not capped
    at 1 as a share of peak is."""
    base = load_profile("snapdragon-8g3", "ort-qnn")
    cpu = base.units[-1]
    one = df.overrides([df.Param("cpu", "peak_ops_per_s", "int8", 1e10, 1e13)], [1e12], base)
    hw = base.with_overrides(one)
    assert hw.units[-1].peak_ops_per_s == {**cpu.peak_ops_per_s, "int8": 1e12}
    assert hw.plan_base is base  # figures only: the paths are the base's
    scaled = base.with_overrides(df.overrides([df.Param("cpu", "peak_ops_per_s", "*", 0.1, 100.0)], [8.0], base))
    assert scaled.units[-1].peak_ops_per_s == {k: v * 8.0 for k, v in cpu.peak_ops_per_s.items()}


def test_the_prior_pulls_towards_the_start(setup: tuple) -> None:
    """The prior is a residual on each parameter's distance from its start: none recovers the truth, a strong one
    keeps the start, the default moves most of the way (ViT held out drove the conv efficiencies to their bound
    and dispatch to 0 without one)."""
    rows, plans = setup
    base = load_profile("snapdragon-8g3", "ort-qnn")
    start = SPEC.params[0].start if SPEC.params[0].start is not None else df._value(base, SPEC.params[0])
    free, held, default = (df.fit(SPEC, rows, plans, base, 30, prior)[0] for prior in (0.0, 100.0, df.PRIOR))
    assert free == pytest.approx(TRUE[0], rel=0.05)
    assert held == pytest.approx(start, rel=0.05)
    assert abs(np.log(default / TRUE[0])) < 0.5 * abs(np.log(start / TRUE[0]))


def test_a_kind_overhead_is_fitted_per_task_of_its_kinds() -> None:
    """A kind_overhead_s Param "gemm+matmul" sets one fixed cost per task for both kinds (the HTP's per-GEMM
    setup), keeps the unit's other figures and the base's paths, and adds that cost once per live task."""
    base = load_profile("snapdragon-8g3", "ort-qnn")
    p = df.Param("htp", "kind_overhead_s", "gemm+matmul", 1e-8, 2e-4, 5e-6)
    ov = df.overrides([p], [2e-5], base)
    assert ov == {"units": {"htp": {"kind_overhead_s": {"gemm": 2e-5, "matmul": 2e-5}}}}
    hw = base.with_overrides(ov)
    assert hw.units[0].kind_overhead_s == {**base.units[0].kind_overhead_s, "gemm": 2e-5, "matmul": 2e-5}
    # MatMuls of two activations (kind matmul): one by a constant is a QNN FullyConnected, at the conv's figures.
    values = [act("x", [1, 64, 256]), act("w", [1, 256, 256]), act("y", [1, 64, 256]), act("w2", [1, 256, 256]),
              act("z", [1, 64, 256])]
    g = graph([Node("m0", "m0", "MatMul", inputs=["x", "w"], outputs=["y"]),
               Node("m1", "m1", "MatMul", inputs=["y", "w2"], outputs=["z"])], values, ["x", "w", "w2"], ["z"])
    stub = [Measurement("vit", (1, 64, 256), "Samsung Galaxy S24", "snapdragon-8g3", "onnx", "float", 1.0, None,
                        None, "test")]
    spec = df.FitSpec(TARGET, "snapdragon-8g3", ("onnx",), (p,))
    plans = df.make_plans(spec, stub, {"vit": (None, g)}, base)
    without = df.predict(spec, stub, plans, base)[0].latency_ms
    with_ = df.predict(spec, stub, plans, base.with_overrides(df.overrides([p], [2e-5], base)))[0].latency_ms
    assert with_ - without == pytest.approx(2 * 2e-5 * 1e3, rel=1e-6)  # two MatMul tasks, 20 us each


def test_stand_in_rows_join_only_in_their_precisions() -> None:
    """A stand-in chip's rows are fitted as the target chip's only in the precisions named for it (A16 fp16 and
    weight-only rows for the A17 Pro; not its W8A8, which lacks the A17 Pro's int8 path), and for fitted models
    only."""
    spec = df.FitSpec("coreml/apple-a17", "apple-a17", ("coreml",), (),
                      stand_ins={"apple-a16": frozenset({"fp16", "lut4"})})
    rows = [Measurement("MobileNetv3-small", (1, 3, 224, 224), d, chip, "coreml", prec, 0.13, None, None, "test")
            for d, chip, prec in (("iPhone 15 Pro", "apple-a17", "w8a8"), ("iPhone 14 Pro", "apple-a16", "fp16"),
                                  ("iPhone 14 Pro", "apple-a16", "lut4"), ("iPhone 14 Pro", "apple-a16", "w8a8"),
                                  ("iPhone 12", "apple-a14", "fp16"))]
    rows.append(dataclasses.replace(rows[1], model="ResNet50"))  # a validation model: only on its own chip
    assert [(r.chip, r.precision) for r in df.rows_for(spec, rows)] == [
        ("apple-a17", "w8a8"), ("apple-a16", "fp16"), ("apple-a16", "lut4")]
    assert df.PRESETS["lut4"] == "palettize-4bit" and df.PRESETS["sparse50"] == "prune-50"


def test_a_chip_profile_row_is_predicted_with_that_chips_peaks_and_memory() -> None:
    """A `chip_profiles` stand-in (the A15's SwiftFormer rows for the A17 Pro) is predicted with the target's profile,
    fitted figures and all, but its own chip's peaks and memory: a compute-bound conv runs at the A15's 15.8 TOPS, not
    the A17 Pro's 17.5 (apple-a15.yaml / apple-a17.yaml); the target's own rows are unchanged."""
    base = load_profile("apple-a17", "coreml")
    a15 = df.chip_hardware(base, "apple-a15")
    assert a15.units[0].peak_ops_per_s["fp16"] == 1.58e13 and a15.dram_bandwidth_bytes_per_s == 3.41e10
    assert a15.units[0].efficiency == base.units[0].efficiency  # the target's ANE figures
    spec = df.FitSpec("coreml/apple-a17", "apple-a17", ("coreml",), (),
                      stand_ins={"apple-a15": frozenset({"fp16"})}, chip_profiles={"apple-a15": "apple-a15"})
    rows = [Measurement("googlenet", (1, 3, 56, 56), d, chip, "coreml", "fp16", 1.0, None, None, "test")
            for d, chip in (("iPhone 15 Pro", "apple-a17"), ("iPhone 14", "apple-a15"))]
    big = _net(256, 56)
    plans = df.make_plans(spec, rows, {"googlenet": (None, big)}, base)
    a17, on_a15 = df.predict(spec, rows, plans, base)
    plain = df.predict(dataclasses.replace(spec, chip_profiles=None), rows, plans, base)
    assert a17.latency_ms == plain[0].latency_ms == plain[1].latency_ms  # without it: the A17 Pro's figures
    assert 1.0 < on_a15.latency_ms / a17.latency_ms <= 1.75e13 / 1.58e13 + 1e-9


def test_a_target_not_refitted_is_evaluated_as_its_yaml_has_it() -> None:
    """refit=False: the validation rows are predicted with the profile as loaded, even where a parameter's current
    value is not an identity override (a kind_bandwidth_bytes_per_s figure the unit lacks: its small tasks' rate,
    where the profile moves activations beyond its on-chip memory at the memory's)."""
    base = load_profile("snapdragon-8g3", "ort-qnn")
    assert "elementwise" not in base.units[0].kind_bandwidth_bytes_per_s
    spec = dataclasses.replace(SPEC, refit=False, params=SPEC.params + (
        df.Param("htp", "kind_bandwidth_bytes_per_s", "elementwise", 1e9, 1e13, 3e11),))
    big = _net(128, 256, "Sigmoid")  # 16 MiB per fp16 activation: beyond the HTP's VTCM (8 MB)
    row = Measurement("mobilenet_v2", (1, 3, 256, 256), "Samsung Galaxy S24", "snapdragon-8g3", "onnx", "float", 1.0,
                      None, None, "test")
    plans = df.make_plans(spec, [row], {"mobilenet_v2": (None, big)}, base)
    rep = df.run(spec, [row], plans, log=lambda *a, **k: None)
    want = df.predict(spec, [row], plans, base)[0].latency_ms
    current = base.with_overrides(df.overrides(spec.params, [df._value(base, p) for p in spec.params], base))
    moved = df.predict(spec, [row], plans, current)[0].latency_ms
    assert abs(moved / want - 1) > 0.05  # the overrides at the current values are not the profile
    assert rep["validation_rows"][0]["predicted_ms"] == round(want, 3) == rep["validation_rows"][0]["before_ms"]


def test_a_float_graph_run_cost_is_fitted_as_a_profile_figure() -> None:
    """`float_graph_run_s` (the totals rule's float-graph term): paid by the float rows, whose HTP tasks run fp16,
    not by the w8a8 ones; data made with 0.25 ms of it gives it back with the run overhead, and --write's overrides
    carry it like any figure."""
    spec = dataclasses.replace(SPEC, params=(*SPEC.params, df.Param("htp", "float_graph_run_s", "", 1e-6, 2e-3, 1e-4)))
    true = (*TRUE, 2.5e-4)
    base = load_profile("snapdragon-8g3", "ort-qnn")
    assert df.overrides(spec.params, true, base)["units"]["htp"]["float_graph_run_s"] == 2.5e-4
    graphs = {m: (None, _net(*cs)) for m, cs in MODELS.items() if m != "mobilenet_v2"}
    stub = [Measurement(m, (1, 3, MODELS[m][1], MODELS[m][1]), "Samsung Galaxy S24", "snapdragon-8g3", "onnx",
                        prec, 1.0, None, None, "test") for m in graphs for prec in ("float", "w8a8")]
    plans = df.make_plans(spec, stub, graphs, base)
    assert [bool(plans[r.model, df.PRESETS[r.precision]].float_tasks.any()) for r in stub] == [True, False] * len(graphs)
    truth = base.with_overrides(df.overrides(spec.params, true, base))
    made = df.predict(spec, stub, plans, truth)
    plain = df.predict(spec, stub, plans, base.with_overrides(df.overrides(SPEC.params, TRUE, base)))
    assert [round(a.latency_ms - b.latency_ms, 9) for a, b in zip(made, plain)] == [0.25, 0.0] * len(graphs)
    rows = [dataclasses.replace(p.row, latency_ms=p.latency_ms) for p in made]
    rep = df.run(spec, rows, plans, max_nfev=60, log=lambda *_, **__: None, prior=0.0)
    assert rep["params"]["htp.float_graph_run_s"] == pytest.approx(2.5e-4, rel=0.05)
    assert rep["params"]["htp.run_overhead_s"] == pytest.approx(TRUE[1], rel=0.05)


def test_a_conversion_that_lost_part_of_the_model_is_left_out() -> None:
    """A built graph with fewer tasks than half the layers of the model's published float job stands for another
    network (litert-torch's LeViT-128S: 74 operators against AI Hub's 280 layers): the fit leaves it out."""
    graphs = {"squeezenet1_1": (None, _net(32, 56))}  # 6 tasks
    row = lambda layers: Measurement("squeezenet1_1", (1, 3, 56, 56), "Samsung Galaxy S24", "snapdragon-8g3",  # noqa: E731
                                     "onnx", "float", 1.0, None, {"total": layers, "npu": layers, "gpu": 0, "cpu": 0},
                                     "test")
    base = load_profile("snapdragon-8g3", "ort-qnn")
    plans = {p: lp for (_, p), lp in df.make_plans(SPEC, [row(6)], graphs, base).items()}
    assert df.lost_layers("squeezenet1_1", [row(17)], plans) is None  # 6 of 17: kept
    assert "6 tasks where the published float job counts 18 layers" in (df.lost_layers("squeezenet1_1", [row(18)], plans)
                                                                       or "")
    assert df.lost_layers("squeezenet1_1", [dataclasses.replace(row(40), precision="w8a8")], plans) is None
