"""A dry-run export that crashes ONNX Runtime (a CRNN's fp16 LSTM at dynamic width: SIGSEGV in the check run) marks
that option only, in one sentence; before, the whole check's child died and every option was marked with a nested
message ("the exporter could not be checked on this model (the runtime crashed while running the model (...)))")."""

from __future__ import annotations

from typing import Any

import pytest

from compiler import sandbox
from compiler.errors import SandboxError
from compiler.optimize.onnx_dry_run import DRY_RUN_OPTIONS, dry_run
from compiler.optimize.onnx_prepare import crash_sentence

CRASH = "the runtime crashed while running the model (the export check; signal 11: SIGSEGV)"


def test_a_crash_marks_only_the_option_that_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_run(target: str, payload: dict[str, Any], limits: object = None) -> dict[str, None]:
        options = payload.get("options") or DRY_RUN_OPTIONS
        if "fp16" in options:
            raise SandboxError(CRASH)
        return {o: None for o in options}

    monkeypatch.setattr(sandbox, "run", fake_run)
    reasons = dry_run("/nonexistent.onnx", {})
    assert set(reasons) == set(DRY_RUN_OPTIONS)
    assert reasons["fp16"] == "the fp16 export crashes ONNX Runtime (signal 11: SIGSEGV)"
    assert all(r is None for o, r in reasons.items() if o != "fp16")


def test_limits_keep_the_sandbox_sentence() -> None:
    assert crash_sentence("the written file", SandboxError(CRASH)) == \
        "the written file crashes ONNX Runtime (signal 11: SIGSEGV)"
    timeout = "the export check exceeded the 600 s limit"
    assert crash_sentence("the fp16 export", SandboxError(timeout)) == timeout
