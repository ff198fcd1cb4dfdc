"""An fp16 Gemm / MatMul whose weight other nodes read too (TorchScript deduplicates equal initializers: a transformer's
layers cloned from one) reads it through a Cast ORT keeps at run time, so the SGEMM cannot prepack it: the weight is
cast and packed on every run (simulator.ort_fp16.fp16_shared_casts, backends._ort_fp16), at the calibrated
`gemm.cast16.weights` per weight (`gemm-shared-*` cases, calibration_fit.fit_weights). A weight of its own is folded
back to fp32 at load and prepacked: the fp32 kernel's time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.graph import Graph
from compiler.vocabulary.targets import get_target
from simulator.calibration_fit import fit_weights
from simulator.calibration_models import R, compile_for_host, op_chain, shared_matmul_chain
from simulator.ort_fp16 import SHARED_WEIGHTS_KEY, fp16_shared_casts
from simulator.profiles import load_profile
from simulator.sweep import sweep
from simulator.totals import totals

BASE = load_profile("host-cpu")
S = 1.0e-9  # s per weight
CAL = BASE.with_overrides({"units": {"cpu": {"kind_overhead_s": {SHARED_WEIGHTS_KEY: S}}}})
HOST = get_target("ort-cpu/host")


def _own_weights(m: int, k: int, path: Path) -> Path:
    rng = np.random.default_rng(0)
    return op_chain("MatMul", [m, k], path, weight=lambda i: (rng.standard_normal([k, k]) / k ** 0.5).astype(np.float32))


def _task_ms(g: Graph, hw: object, preset: str) -> np.ndarray:
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=(preset,))
    j = [p["name"] for p in r.bulk["presets"]].index(preset)
    return np.array([float(row[j]) for row in r.bulk["metrics"]["latency_ms"]])


def _predict_ms(g: Graph, hw: object, preset: str) -> float:
    """As calibration predicts a case: the preset's total less the per-inference fixed cost."""
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=(preset,))
    return float(totals(r.bulk, r.per_op, preset, {})["latency_ms"]) - BASE.units[0].run_overhead_s * 1e3


def test_only_a_shared_weight_keeps_its_cast(tmp_path: Path) -> None:
    shared = compile_for_host(shared_matmul_chain(32, 64)(tmp_path / "s.onnx"), tmp_path / "s.opt.onnx")
    own = compile_for_host(_own_weights(32, 64, tmp_path / "o.onnx"), tmp_path / "o.opt.onnx")
    assert fp16_shared_casts(HOST, shared) == [True] * R
    assert fp16_shared_casts(HOST, own) == [False] * R


def test_a_shared_weight_is_cast_and_packed_every_run(tmp_path: Path) -> None:
    """Each MatMul of the shared chain pays k x k weights at the figure under fp16, none under fp32; a chain of
    weights of their own runs fp32's kernels under fp16 too."""
    k = 64
    shared = compile_for_host(shared_matmul_chain(32, k)(tmp_path / "s.onnx"), tmp_path / "s.opt.onnx")
    own = compile_for_host(_own_weights(32, k, tmp_path / "o.onnx"), tmp_path / "o.opt.onnx")
    extra = _task_ms(shared, CAL, "fp16") - _task_ms(shared, BASE, "fp16")
    assert extra == pytest.approx(np.full(R, k * k * S * 1e3), rel=1e-6)
    assert _task_ms(shared, CAL, "fp32") == pytest.approx(_task_ms(shared, BASE, "fp32"))
    assert _task_ms(own, CAL, "fp16") == pytest.approx(_task_ms(own, BASE, "fp16"))
    assert _task_ms(own, CAL, "fp16") == pytest.approx(_task_ms(own, CAL, "fp32"))


def test_the_fit_reads_the_shared_cases(tmp_path: Path) -> None:
    """Cases measured at exactly the figure's prediction give the figure back; without such cases, nothing."""
    graphs = {f"gemm-shared-{m}x{k}": compile_for_host(shared_matmul_chain(m, k)(tmp_path / f"{m}.onnx"),
                                                      tmp_path / f"{m}.opt.onnx") for m, k in ((32, 64), (16, 128))}
    cases = [{"case": n, "preset": "fp16", "key": SHARED_WEIGHTS_KEY, "measured_ms": _predict_ms(g, CAL, "fp16")}
             for n, g in graphs.items()]
    assert fit_weights(graphs, cases, BASE)[SHARED_WEIGHTS_KEY] == pytest.approx(S, rel=1e-3)
    assert fit_weights(graphs, [{**c, "key": "gemm.fp32"} for c in cases], BASE) == {}
