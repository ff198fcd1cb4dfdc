"""The `edgescope` command as a user runs it: analyze --json schema, input overrides, upload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FAST_PROFILE, ROOT


def _start(*args: str, calibration_dir: Path, cwd: Path) -> subprocess.Popen:
    """`edgescope ARGS` started in cwd (its data folder cwd/data); `_finish` waits for it."""
    cwd.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **FAST_PROFILE, "EDGESCOPE_DATA_DIR": str(cwd / "data"),
           "EDGESCOPE_CALIBRATION_DIR": str(calibration_dir), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "edgescope", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def _finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _cli(*args: str, calibration_dir: Path, cwd: Path) -> subprocess.CompletedProcess:
    return _finish(_start(*args, calibration_dir=calibration_dir, cwd=cwd))


def test_analyze_json_schema(zoo, calibration_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    p = _cli("analyze", str(zoo.path("tiny_cnn")), "--json", "--runs", "20",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["model"]["format"] == "onnx" and doc["model"]["op_count"] > 0
    assert doc["model"]["size_bytes"] == zoo.path("tiny_cnn").stat().st_size
    by_target = {t["target"]: t for t in doc["targets"]}
    host = by_target["ort-cpu/host"]
    assert host["measured"] is True
    # Device targets without a runtime here are predicted, and say so.
    apple = by_target["coreml/apple-a17"]
    assert apple["measured"] is False and apple["label"].startswith("predicted") and apple["latency_ms"] > 0
    assert host["latency_ms"] > 0 and host["peak_memory_bytes"] > 0
    assert host["ops"] and {"name", "type", "latency_ms", "source_nodes"} <= set(host["ops"][0])
    assert all(op["source_nodes"] for op in host["ops"] if op["measured"])


def test_analyze_with_input_overrides(zoo, calibration_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = zoo.path("dynamic_dims")
    # Independent runs, side by side (each its own folder): their start-ups overlap.
    good = _start("analyze", str(model), "--json", "--runs", "20", "--input", "input_ids=2x24",
                  calibration_dir=calibration_dir, cwd=tmp_path)
    bad = _cli("analyze", str(model), "--input", "nonexistent=1x2", calibration_dir=calibration_dir,
               cwd=tmp_path / "bad")
    p = _finish(good)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["targets"][0]["latency_ms"] > 0
    assert bad.returncode != 0 and "nonexistent" in bad.stderr


def test_target_that_cannot_run_the_format(calibration_dir: Path, tmp_path: Path) -> None:
    from testkit import tflite_builder

    model = tflite_builder.cnn(tmp_path / "cnn.tflite")
    runs = [_start(cmd, str(model), "--target", "ort-cpu/host", calibration_dir=calibration_dir, cwd=tmp_path / cmd)
            for cmd in ("analyze", "predict")]  # side by side
    for p in map(_finish, runs):
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
        assert ("target ort-cpu/host cannot run a tflite model; the targets for tflite models are: "
                "litert-cpu/host, litert-qnn/snapdragon-8g3, litert-qnn/snapdragon-8-elite, litert/pixel-8") in p.stderr


def test_predict_and_optimize_default_to_a_target_that_runs_the_format(calibration_dir: Path, tmp_path: Path) -> None:
    # A .tflite without --target is predicted and exported for LiteRT on this machine, not refused for ort-cpu/host.
    from testkit import tflite_builder

    model = tflite_builder.cnn(tmp_path / "cnn.tflite")
    runs = [_start("predict", str(model), calibration_dir=calibration_dir, cwd=tmp_path / "predict"),
            _start("optimize", str(model), "--model-wide", "fp16", "--out", str(tmp_path / "cnn16.tflite"),
                   calibration_dir=calibration_dir, cwd=tmp_path / "optimize")]
    for p in map(_finish, runs):
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("litert-cpu/host  fp"), p.stdout
    assert (tmp_path / "cnn16.tflite").stat().st_size > 0


def test_analyze_bad_file(calibration_dir: Path, tmp_path: Path) -> None:
    f = tmp_path / "junk.onnx"
    f.write_bytes(os.urandom(3000))
    p = _cli("analyze", str(f), calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode == 1 and "ONNX" in p.stderr and "Traceback" not in p.stderr


def test_login_then_upload_prints_url(live_server, zoo, calibration_dir: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                     monkeypatch) -> None:
    monkeypatch.setenv("EDGESCOPE_CREDENTIALS", str(tmp_path / "creds.json"))
    p = _cli("upload", str(zoo.path("tiny_cnn")), "--server", live_server.url,
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode != 0 and "edgescope login" in p.stderr
    p = _cli("login", "--server", live_server.url, "--email", "owner@example.com", "--password", "wrong password",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode != 0 and "Wrong e-mail or password" in p.stderr
    p = _cli("login", "--server", live_server.url, "--email", "owner@example.com", "--password", "owner password 1",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert oct((tmp_path / "creds.json").stat().st_mode & 0o777) == "0o600"
    p = _cli("upload", str(zoo.path("tiny_cnn")), "--server", live_server.url, "--wait",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    url = p.stdout.strip()
    assert url.startswith(f"{live_server.url}/m/") and "ready" in p.stderr
    # The uploaded model belongs to the signed-in account.
    mid = url.rsplit("/", 1)[1]
    assert live_server.get(f"/api/models/{mid}").json()["your_role"] == "owner"


def test_users_create(tmp_path: Path, calibration_dir: Path) -> None:
    p = _cli("users", "create", "root@example.com", "--password", "a long admin password",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode == 0 and "(admin)" in p.stderr, p.stderr
    p = _cli("users", "create", "root@example.com", "--password", "a long admin password",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode != 0 and "exists" in p.stderr


def test_optimize_litert_with_ai_edge_quantizer(calibration_dir: Path, tmp_path: Path) -> None:
    """`edgescope optimize` on a .tflite: ai-edge-quantizer writes the int8 file, LiteRT runs and times it."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    from testkit import tflite_builder as tb

    src = tb.transformer_block(tmp_path / "block.tflite", seq=16, hidden=128)
    p = _cli("optimize", "block.tflite", "--target", "litert-cpu/host", "--model-wide", "int8-dynamic",
             "--op", "FULLY_CONNECTED_0=fp32/fp32/fp32/0", "--out", "block-int8.tflite", "--measure", "--json",
             calibration_dir=calibration_dir, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    out = tmp_path / "block-int8.tflite"
    assert doc["size_bytes"] == out.stat().st_size < src.stat().st_size / 2
    assert doc["overrides"] == {"FULLY_CONNECTED_0": "fp32/fp32/fp32/0"}
    assert doc["measured"]["latency_ms"] > 0 and "ai-edge-litert" in doc["measured"]["label"]
    it = Interpreter(model_path=str(out))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.ones((1, 16, 128), np.float32))
    it.invoke()
    assert np.isfinite(it.get_tensor(it.get_output_details()[0]["index"])).all()
    bad = _cli("optimize", "block.tflite", "--target", "litert-cpu/host", "--model-wide", "prune-50",
               "--out", "x.tflite", calibration_dir=calibration_dir, cwd=tmp_path)
    assert bad.returncode == 1 and "Supported: fp32, fp16, int8-dynamic" in bad.stderr and "Traceback" not in bad.stderr


def test_one_shot_commands_do_not_print_the_libraries_warnings(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    # `edgescope optimize` of a transformer printed one "WARNING:root:Axis 1 is out-of-range for weight ..." per
    # LayerNorm weight (ORT's quantizer), `analyze` of a .pt2 six "Failed to load _MLModelProxy" (coremltools).
    import logging

    from click.testing import CliRunner

    from edgescope.cli import main

    root = logging.getLogger()
    monkeypatch.setattr(root, "level", root.level)  # restored after the test
    monkeypatch.setattr(root, "handlers", [])  # as in a fresh `edgescope` process: logging's last resort prints
    r = CliRunner().invoke(main, ["options", "--json"])
    assert r.exit_code == 0, r.output
    logging.warning("Axis 1 is out-of-range for weight 'norm.weight' with rank 1")  # as ORT's quantizer logs it
    logging.getLogger("coremltools").warning("Failed to load _MLModelProxy")
    logging.getLogger("edgescope.test").error("an error still shows")
    err = capsys.readouterr().err
    assert "out-of-range" not in err and "_MLModelProxy" not in err
    assert "an error still shows" in err


def test_a_calibration_directory_is_a_usage_error(tmp_path: Path) -> None:
    """`--calibration DIR` (the directory a calibration's files sit in) is refused at once, not timed for minutes."""
    from click.testing import CliRunner

    from edgescope.cli import main

    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read")
    for cmd in (["predict", str(model)], ["optimize", str(model), "--model-wide", "fp32", "--out",
                                          str(tmp_path / "o.onnx")], ["solve", str(model)]):
        r = CliRunner().invoke(main, [*cmd, "--calibration", str(tmp_path)])
        assert r.exit_code == 2 and "is a directory" in r.output, (cmd, r.output)
