"""benchmarks/speed_drift.py's `--model`: each model's fastest run in thread CPU time after every probe, and the slope
of log time on log probe that says how far the model moves with the GEMM probe."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tests import benchmark_module


def _bench():  # type: ignore[no-untyped-def]
    return benchmark_module.load("speed_drift")


def test_log_slope_reads_how_far_a_time_moves_with_the_probe() -> None:
    b = _bench()
    assert b.log_slope([100.0, 200.0, 400.0], [4.0, 2.0, 1.0]) == pytest.approx(-1.0)  # moves as the probe
    assert b.log_slope([100.0, 200.0, 400.0], [2.0, 2.0, 2.0]) == pytest.approx(0.0)  # does not move
    assert b.log_slope([100.0, 400.0], [4.0, 1.0]) is None  # too few points
    assert b.log_slope([100.0, 100.0, 100.0], [1.0, 2.0, 3.0]) is None  # the probe did not move


def test_model_timer_times_a_model_with_symbolic_dims(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    ms = _bench().model_timer(str(path), runs=3)()
    assert 0 < ms < 1000
