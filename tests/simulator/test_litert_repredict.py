"""benchmarks/litert_exports.py's short hold of the measurement lock: `--rounds-only` times the kept exports only
(CPU time per round, written with `--json`), `--repredict` makes the rounds' table from those times with any
calibration, outside the lock."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from compiler.frontends.tflite_writer import TfliteWriter

from tests import benchmark_module


def _bench():  # type: ignore[no-untyped-def]
    return benchmark_module.load("litert_exports")


def test_rounds_only_then_repredict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "tiny" / "model.tflite"
    src.parent.mkdir()
    w = TfliteWriter(description="tiny")
    x, y = w.tensor("x", [1, 16, 16, 8]), w.tensor("y", [1, 16, 16, 8])
    w.op("CONV_2D", [x, w.const("w", np.full([8, 1, 1, 8], 0.01, np.float32)), w.const("b", np.zeros(8, np.float32))],
         [y], w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
    w.save(src, [x], [y])
    bench, keep, rows = _bench(), tmp_path / "keep", tmp_path / "rows.json"
    assert bench.main([str(src), "--fp32-source-only", "--options", "fp32", "int8-dynamic", "--keep", str(keep),
                       "--no-measure"]) == 0
    assert bench.main([str(src), "--options", "fp32", "int8-dynamic", "--keep", str(keep), "--rounds-only",
                       "--rounds", "2", "--runs", "2", "--json", str(rows)]) == 0
    kept = json.loads(rows.read_text())
    assert [(r["model"], r["option"]) for r in kept] == [("tiny", "fp32"), ("tiny", "int8-dynamic")]
    assert all(len(r["cpu_ms"]) == 2 and min(r["cpu_ms"]) > 0 for r in kept)
    capsys.readouterr()
    assert bench.main(["unused", "--repredict", str(rows)]) == 0
    out = capsys.readouterr().out
    assert "| tiny | fp32 | int8-dynamic |" in out and "change error median" in out
