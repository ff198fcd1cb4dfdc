"""Control flow through ONNX Runtime: a Loop's body nodes are compiled, named and profiled per execution (the
graph side without a runtime: tests/unit/test_control_flow_graphs.py)."""

from __future__ import annotations

from pathlib import Path

from compiler import frontends
from compiler.backends import ort
from testkit import controlflow_models as cm
from testkit.live import QUICK_ROUNDS


def test_ort_compiles_and_profiles_loop_bodies(tmp_path: Path) -> None:
    src = cm.loop_model(tmp_path / "loop.onnx", trips=3)
    compiled = ort.compile(src, tmp_path / "loop.ort.onnx", frontends.load(src))
    body = [n for n in compiled.nodes if n.parent == "loop"]
    assert body and {s for n in body for s in n.source_nodes} >= {"body_mm", "body_tanh"}
    assert all(n.namespace.startswith("loop/body") for n in body) and compiled.node("loop").namespace == "loop"
    prof = ort.profile(tmp_path / "loop.ort.onnx", ort.ProfileSettings(warmup=1, runs=20, **QUICK_ROUNDS))
    timed = [n for n in body if n.id in prof.tasks]
    assert timed and all(prof.tasks[n.id].calls == 3 for n in timed)
    assert prof.tasks["loop"].calls == 1 and prof.tasks["loop"].median_ms > 0
