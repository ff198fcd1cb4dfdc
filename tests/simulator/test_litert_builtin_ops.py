"""Operators LiteRT's CPU runs at rates of their own (simulator.litert_paths): a PADV2 (TFLite's own pad kernel, the
XNNPACK delegate has no PADV2) at `layout.builtin.PADV2` (fp32 data) and `layout.builtin8.PADV2` (int8), fitted on
simulator.litert_signal's PADV2 cases; GELU at
`elementwise.fp32.GELU` (XNNPACK's) and, on int8 data, `elementwise.builtin8.GELU` (TFLite's table), fitted on
LiteRT's calibration chains. Each was costed at its kind's generic rate before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.backends.litert_profiler import per_op_child
from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from simulator import litert_signal
from simulator.litert_calibration import CASES, build, fit
from simulator.litert_cases import predicted_ms
from simulator.litert_paths import BUILTIN_PAD, PAD_FOLDED, litert_task_facts
from simulator.profiles import load_profile

PAD_KEYS = litert_signal.PAD_KEYS


def _pads(path: Path) -> Path:
    """x -> PADV2 -> MAX_POOL (a max pool's padding as litert-torch writes it); x -> PAD -> conv (folded); x -> ADD."""
    w = TfliteWriter(description="pads")
    c, h = 16, 28
    x = w.tensor("x", [1, h, h, c])
    pads = w.const("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    p2 = w.tensor("padv2", [1, h + 2, h + 2, c])
    w.op("PADV2", [x, pads, w.const("low", np.array(np.finfo(np.float32).min, np.float32))], [p2])
    pool = w.tensor("pool", [1, h // 2, h // 2, c])
    w.op("MAX_POOL_2D", [p2], [pool], w.options("Pool2DOptions", padding=1, strideW=2, strideH=2, filterWidth=3,
                                                 filterHeight=3))
    p1 = w.tensor("pad", [1, h + 2, h + 2, c])
    w.op("PAD", [x, pads], [p1])
    conv = w.tensor("conv", [1, h, h, c])
    w.op("CONV_2D", [p1, w.const("k", np.full([c, 3, 3, c], 0.01, np.float32)), w.const("b", np.zeros(c, np.float32))],
         [conv], w.options("Conv2DOptions", padding=1, strideW=1, strideH=1))
    add = w.tensor("add", [1, h, h, c])
    w.op("ADD", [x, x], [add], w.options("AddOptions"))
    return w.save(path, [x], [pool, conv, add])


def test_a_padv2_is_tflites_own_and_only_it_takes_the_pad_rate(tmp_path: Path) -> None:
    """The PADV2 alone has the fact (the PAD before a conv is folded into it, as before); its rate prices the PADV2
    under every option (the int8 one under static int8) and nothing else."""
    g = tflite.load(_pads(tmp_path / "m.tflite"))
    facts = {n.outputs[0]: f for n, f in zip(g.nodes, litert_task_facts(g))}
    assert BUILTIN_PAD in facts["padv2"] and PAD_FOLDED in facts["pad"]
    assert not any(BUILTIN_PAD in f for k, f in facts.items() if k != "padv2")
    hw = load_profile("host-cpu", "litert-cpu")
    from simulator.sweep import sweep

    for preset, key in (("fp32", PAD_KEYS["float32"]), ("int8-static", PAD_KEYS["int8"]),
                        ("int8-dynamic", PAD_KEYS["float32"])):
        slow = hw.with_overrides({"units": {"cpu": {"efficiency": {key: 1e-4}}}})
        def ms(h):  # type: ignore[no-untyped-def]  # every operator, the PADV2 (the first) included
            r = sweep(g, "litert-cpu/host", hardware=h, presets_only=(preset,))
            j = [p["name"] for p in r.bulk["presets"]].index(preset)
            return [row[j] for row in r.bulk["metrics"]["latency_ms"]]

        base, after = ms(hw), ms(slow)
        assert g.nodes[0].op_type == "PADV2" and after[0] > 5 * base[0], preset
        assert after[1:] == base[1:], preset


def test_padv2_cases_run_tflites_pad_and_fit_one_rate_per_element(tmp_path: Path) -> None:
    """The calibration's PADV2 cases run `TFLite PADV2` (fp32 and int8); the fit, each type's cases predicted under
    its option, recovers the rate each was made with."""
    case = next(c for c in litert_signal.PAD_CASES if c.dtype == "int8")
    path = litert_signal.build_pad(case, tmp_path / f"{case.name}.tflite")
    r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 2})
    assert [k[-1] for k in r["kernels"].values()] == ["TFLite PADV2"] * litert_signal.R
    assert {c.dtype for c in litert_signal.PAD_CASES} == {"int8", "float32"}
    hw = load_profile("host-cpu", "litert-cpu")
    figures = {PAD_KEYS["float32"]: 0.004, PAD_KEYS["int8"]: 0.002}
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": figures}}})
    measured = {}
    for c in litert_signal.PAD_CASES:
        g = tflite.load(litert_signal.build_pad(c, tmp_path / f"{c.name}.tflite"))
        measured[c.name] = (g, predicted_ms(g, truth, litert_signal.PAD_PRESET[c.dtype]))
    eff = litert_signal.fit(measured, hw)["units"]["cpu"]["efficiency"]
    assert set(eff) == set(figures)
    for k, v in figures.items():
        assert eff[k] == pytest.approx(v, rel=0.03), k


def test_gelu_chains_run_xnnpacks_fp32_and_tflites_int8_kernel_at_rates_of_their_own(tmp_path: Path) -> None:
    """fp32 GELU is XNNPACK's, int8 GELU TFLite's own; the fit recovers each one's rate, which only GELU reads (an
    int8 ADD and an fp32 HARD_SWISH keep theirs)."""
    from simulator.roofline import efficiency

    cases = [c for c in CASES if c.op == "GELU"]
    assert cases and all(c.forms == ("fp32", "static8") for c in cases)
    kernels = {}
    for form in ("fp32", "static8"):
        path = build(cases[0], form, tmp_path / f"{cases[0].name}-{form}.tflite")
        r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 2})
        kernels[form] = {k[-1] for k in r["kernels"].values()}
    assert kernels["static8"] == {"TFLite GELU"} and not any(k.startswith("TFLite") for k in kernels["fp32"]), kernels
    hw = load_profile("host-cpu", "litert-cpu")
    figures = {"elementwise.fp32.GELU": 0.05, "elementwise.builtin8.GELU": 0.01}
    # (with their fixed costs, as a calibration writes them: a key of kind_overhead_s the base lacks is what makes
    # the int8 path planned anew, simulator.profiles.HardwareProfile.with_overrides)
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": figures, "kind_overhead_s": {k: 0.0 for k in figures}}}})
    measured = {}
    for case in cases:
        for form, preset in (("fp32", "fp32"), ("static8", "int8-static")):
            g = tflite.load(build(case, form, tmp_path / f"{case.name}-{form}.tflite"))
            assert predicted_ms(g, truth, preset) != predicted_ms(g, hw, preset)
            measured[(case.name, form)] = (g, predicted_ms(g, truth, preset))
    o = fit(measured, hw)
    eff = o["units"]["cpu"]["efficiency"]
    assert set(eff) == set(figures)
    for k, v in figures.items():
        assert eff[k] == pytest.approx(v, rel=0.03), k
    fitted = hw.with_overrides(o).units[0]
    assert efficiency(fitted, "elementwise", "int8", "ADD") == efficiency(hw.units[0], "elementwise", "int8", "ADD")
    assert efficiency(fitted, "elementwise", "fp32", "HARD_SWISH") == efficiency(hw.units[0], "elementwise", "fp32",
                                                                                "HARD_SWISH")



def _attention_bmm(path: Path, rhs_zero_point: int | None) -> Path:
    """q [4, 64, 32] x k^T [4, 32, 64] (two activations) and q x a constant [32, 16]; `rhs_zero_point`: the int8
    file's zero point of k^T (None: an fp32 file)."""
    w = TfliteWriter(description="bmm")
    dt, q = ("float32", None) if rhs_zero_point is None else ("int8", ([0.02], [3], 0))
    qx = w.tensor("q", [4, 64, 32], dt, quant=q)
    kt = w.tensor("kt", [4, 32, 64], dt, quant=None if q is None else ([0.02], [rhs_zero_point], 0))
    s = w.tensor("scores", [4, 64, 64], dt, quant=q)
    w.op("BATCH_MATMUL", [qx, kt], [s], w.options("BatchMatMulOptions"))
    p = w.tensor("proj", [4, 64, 16], dt, quant=q)
    const = np.full([32, 16], 0.01 if q is None else 1, np.float32 if q is None else np.int8)
    w.op("BATCH_MATMUL", [qx, w.const("wk", const)], [p], w.options("BatchMatMulOptions"))
    return w.save(path, [qx, kt], [s, p])


def test_an_int8_batch_matmul_of_two_activations_is_tflites_own(tmp_path: Path) -> None:
    """Session 39 sweep: XNNPACK's QS8 batch matmul takes a right-hand side of zero point 0 only, so under static
    int8 attention's Q x K^T runs TFLite's own kernel at `matmul.builtin8` (a Whisper-like encoder's int8-static file
    was predicted at 29.6 ms against 71.3 measured, its fp32 file's 34.8). fp32 and a constant right-hand side keep
    XNNPACK's rates; an int8 upload whose right-hand zero point is 0 keeps XNNPACK's QS8 one."""
    from simulator.litert_paths import BUILTIN_BMM, BUILTIN_INT8_MATMUL
    from simulator.sweep import sweep

    g = tflite.load(_attention_bmm(tmp_path / "f.tflite", None))
    assert [BUILTIN_BMM in f for f in litert_task_facts(g)] == [True, False]
    hw = load_profile("host-cpu", "litert-cpu")
    assert BUILTIN_INT8_MATMUL in hw.units[0].efficiency
    slow = hw.with_overrides({"units": {"cpu": {"efficiency": {BUILTIN_INT8_MATMUL: 1e-4}}}})

    def ms(graph, h, preset):  # type: ignore[no-untyped-def]
        r = sweep(graph, "litert-cpu/host", hardware=h, presets_only=(preset,))
        j = [p["name"] for p in r.bulk["presets"]].index(preset)
        return [row[j] for row in r.bulk["metrics"]["latency_ms"]]

    base, after = ms(g, hw, "int8-static"), ms(g, slow, "int8-static")
    assert after[0] > 5 * base[0] and after[1] == base[1]
    assert ms(g, slow, "fp32") == ms(g, hw, "fp32")
    zero = tflite.load(_attention_bmm(tmp_path / "z.tflite", 0))
    assert not any(BUILTIN_BMM in f for f in litert_task_facts(zero))
    assert BUILTIN_BMM in litert_task_facts(tflite.load(_attention_bmm(tmp_path / "n.tflite", 5)))[0]
