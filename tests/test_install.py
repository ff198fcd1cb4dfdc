"""A plain `pip install .` (no extras) carries every dependency the base commands import.

Installs the package into a fresh venv, with the project's pins as constraints, offline from a wheelhouse
(`--no-index --find-links`, `EDGESCOPE_WHEELHOUSE`, default `~/.cache/edgescope/wheelhouse`) that the first
run fills with `pip download` (from pip's own cache where it can), then runs `edgescope analyze` and an int8
`edgescope optimize` with that venv's own interpreter on a model built here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_base_install_analyzes_and_exports_int8(tmp_path: Path, zoo, calibration_dir: Path) -> None:  # type: ignore[no-untyped-def]
    env_dir = tmp_path / "venv"
    # No pip inside it (ensurepip costs ~5 s): the runner's pip installs into it with `--python`.
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    # A copy of the source tree without venvs, the web app or state: `pip install .` builds in it.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".venv*", ".git", "web", "instance", "build", "*.egg-info", "__pycache__", ".pytest_cache", "tests"))
    wheels = Path(os.environ.get("EDGESCOPE_WHEELHOUSE", Path.home() / ".cache" / "edgescope" / "wheelhouse"))
    wheels.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "--python", str(py), "--disable-pip-version-check", "-q"]
    env = {**os.environ, "PIP_NO_INPUT": "1"}
    # --no-compile: byte-compiling botocore's thousands of files is most of an install's CPU time.
    offline = ["--no-index", "--find-links", str(wheels), "--no-compile"]
    build = ["setuptools>=68", "wheel"]  # the project's build backend (installed offline too)
    lock = ["-c", str(ROOT / "requirements.lock")]

    def install() -> bool:
        ok = subprocess.run(pip + ["install"] + offline + build, env=env, capture_output=True).returncode == 0
        return ok and subprocess.run(pip + ["install", "--no-build-isolation"] + offline + lock + [str(src)],
                                     env=env, capture_output=True).returncode == 0

    if not install():  # first run on this machine: fill the wheelhouse, then install offline
        subprocess.run(pip + ["download", "-d", str(wheels), "--prefer-binary"] + build, env=env, check=True,
                       timeout=900)
        subprocess.run(pip + ["install"] + offline + build, env=env, check=True)
        subprocess.run(pip + ["download", "-d", str(wheels), "--prefer-binary", "--no-build-isolation"] + lock
                       + [str(src)], env=env, check=True, timeout=900)
        assert install(), "offline install from the filled wheelhouse failed"
    extras = subprocess.run([str(py), "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
                            capture_output=True, text=True, check=True)
    assert extras.stdout.strip() == "True"  # really the base install: no torch

    model = zoo.path("tiny_cnn")
    # The run's shared host calibration: calibrating afresh here would take minutes and test nothing new. No pause
    # before a noisy round is timed again and no rounds of the fast CPU time, as the suite's other servers
    # (testkit.live.FAST_PROFILE): nothing here reads them.
    env = {**os.environ, "EDGESCOPE_PROFILE_RUNS": "20",
           "EDGESCOPE_CALIBRATION_DIR": str(calibration_dir), "EDGESCOPE_PROFILE_REMEASURE_PAUSE_MS": "0",
           "EDGESCOPE_PROFILE_WARMUP": "1", "EDGESCOPE_PROFILE_FAST_ROUNDS": "0", "PYTHONPATH": ""}
    cli = [str(env_dir / "bin" / "edgescope")]
    # The two commands are independent: run side by side (each its own data folder), their start-ups overlap.
    runs = [subprocess.Popen(cli + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                             env={**env, "EDGESCOPE_DATA_DIR": str(tmp_path / f"data-{args[0]}")})
            for args in (["analyze", str(model), "--target", "ort-cpu/host", "--json", "--runs", "20"],
                         ["optimize", str(model), "--target", "ort-cpu/host", "--model-wide", "int8-dynamic",
                          "--out", str(tmp_path / "int8.onnx"), "--json"])]
    analyzed, optimized = [p.communicate(timeout=600) for p in runs]
    assert runs[0].returncode == 0, analyzed[1][-2000:]
    doc = json.loads(analyzed[0])
    assert doc["targets"][0]["measured"] and doc["targets"][0]["latency_ms"] > 0
    assert runs[1].returncode == 0, optimized[1][-2000:]
    assert (tmp_path / "int8.onnx").stat().st_size > 0
    assert sys.executable != str(py)
