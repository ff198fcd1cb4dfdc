"""`edgescope analyze` end to end on control-flow models exported by torch (TorchScript exporter on
torch.jit.script) and built with onnx.helper: bodies measured and predicted once per execution, the branch
taken and the trip counts as observed, the size that of the file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testkit import controlflow_models as cm
from tests.cli.test_cli import _finish, _start

RPI = "ort-xnnpack/rpi5"


def _analyze(model: Path, calibration_dir: Path, tmp_path: Path, *args: str) -> dict[str, dict[str, Any]]:
    return _analyzed(_start_analyze(model, calibration_dir, tmp_path, *args))


def _start_analyze(model: Path, calibration_dir: Path, cwd: Path, *args: str) -> subprocess.Popen:
    return _start("analyze", str(model), "--json", "--target", "ort-cpu/host", "--target", RPI, *args,
                  calibration_dir=calibration_dir, cwd=cwd)


def _analyzed(proc: subprocess.Popen) -> dict[str, dict[str, Any]]:
    p = _finish(proc)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    for t in doc["targets"]:  # the size of the file, body weights included
        assert t["size_bytes"] == pytest.approx(doc["model"]["size_bytes"], rel=0.05)
        assert t["latency_ms"] > 0
    return {t["target"]: {o["id"]: o for o in t["ops"]} for t in doc["targets"]}


def _runs(ops: dict[str, Any], source_node: str) -> float:
    """Executions of the task implementing `source_node`."""
    return next(o["executions"] for o in ops.values() if source_node in o["source_nodes"])


def test_vad_like_model_with_if_loop_and_state(calibration_dir: Path, tmp_path: Path) -> None:
    model = cm.torch_vad_like(tmp_path / "vad.onnx")
    by = _analyze(model, calibration_dir, tmp_path, "--input", "input=1x4096", "--input-value", "sr=16000")
    frames = cm.vad_frames(4096)
    for target, ops in by.items():
        assert _runs(ops, "/b16/stft/Conv") == 1 and _runs(ops, "/b8/stft/Conv") == 0, target  # sr == 16000
        assert _runs(ops, "/cell/LSTM") == frames, target  # one LSTM step per frame
        assert not [o for o in ops.values() if o["type"] == "Constant"]
    host = by["ort-cpu/host"]
    lstm = next(o for o in host.values() if o["type"] == "LSTM")
    assert lstm["measured"] and lstm["latency_ms"] > 0
    rpi_lstm = next(o for o in by[RPI].values() if o["type"] == "LSTM")
    assert rpi_lstm["latency_ms"] > 0 and not rpi_lstm["measured"]


def test_scripted_if_and_loop(calibration_dir: Path, tmp_path: Path) -> None:
    # The two analyses side by side (each its own folder): their start-ups overlap.
    if_run = _start_analyze(cm.torch_if(tmp_path / "if.onnx"), calibration_dir, tmp_path / "if")
    loop_run = _start_analyze(cm.torch_loop(tmp_path / "loop.onnx"), calibration_dir, tmp_path / "loop",
                              "--input-value", "n=5")
    by = _analyzed(if_run)
    host, rpi = by["ort-cpu/host"], by[RPI]
    taken = [s for s in ("/a/Gemm", "/b/2/Gemm") if _runs(host, s) == 1]
    assert len(taken) == 1  # one branch ran; the predicted target costs the same one
    assert [_runs(rpi, s) for s in ("/a/Gemm", "/b/2/Gemm")] == [float(s in taken) for s in ("/a/Gemm", "/b/2/Gemm")]

    by = _analyzed(loop_run)
    for ops in by.values():
        body = [o for o in ops.values() if o["executions"] != 1]
        assert body and all(o["executions"] == 5 for o in body)
        assert sum(o["latency_ms"] or 0 for o in body) > 0


def test_scan_built_with_onnx_helper(calibration_dir: Path, tmp_path: Path) -> None:
    by = _analyze(cm.scan_model(tmp_path / "scan.onnx", steps=6, width=64), calibration_dir, tmp_path)
    for target, ops in by.items():
        assert _runs(ops, "scan_mm") == 6, target
        assert next(o for o in ops.values() if "scan_mm" in o["source_nodes"])["latency_ms"] > 0
