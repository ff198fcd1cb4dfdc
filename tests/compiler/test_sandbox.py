"""The sandbox turns every way a child can die into a SandboxError; the parent carries on."""

from __future__ import annotations

import os
import time

import pytest

from compiler import sandbox
from compiler.errors import ModelRunError, SandboxError

T = "tests.compiler.sandbox_targets"


def test_result_comes_back() -> None:
    assert sandbox.run(f"{T}:echo", {"x": 21}) == {"echo": 42}


def test_segfault() -> None:
    with pytest.raises(SandboxError, match=r"the runtime crashed while running the model \(.+; signal 11: SIGSEGV\)"):
        sandbox.run(f"{T}:segfault", {})
    assert sandbox.run(f"{T}:echo", {"x": 1}) == {"echo": 2}  # the parent is fine


def test_out_of_memory_under_cap() -> None:
    limits = sandbox.Limits(timeout_s=60, memory_limit_bytes=1 * 2**30, what="profiling")
    with pytest.raises(SandboxError, match=r"profiling ran out of memory \(1.0 GiB cap\)"):
        sandbox.run(f"{T}:allocate", {"bytes": 3 * 2**30}, limits)


def test_timeout_kills_child() -> None:
    t = time.perf_counter()
    with pytest.raises(SandboxError, match="profiling exceeded the 1 s limit"):
        sandbox.run(f"{T}:sleep", {"seconds": 30}, sandbox.Limits(timeout_s=1, what="profiling"))
    assert time.perf_counter() - t < 10


def test_python_exception_and_exit_code() -> None:
    with pytest.raises(SandboxError, match="RuntimeError: something broke in the child"):
        sandbox.run(f"{T}:fail", {})
    with pytest.raises(SandboxError, match="exit code 3"):
        sandbox.run(f"{T}:exit_hard", {})


def test_user_facing_errors_pass_through(zoo, tmp_path) -> None:
    from compiler.backends import ort

    with pytest.raises(ModelRunError, match="FooBar"):
        ort.profile(zoo.path("unknown_op"), ort.ProfileSettings(runs=1, warmup=0))


def test_child_gets_no_secrets(monkeypatch) -> None:
    monkeypatch.setenv("EDGESCOPE_SECRET_KEY", "hunter2")
    env = sandbox.run(f"{T}:environ", {})
    assert "EDGESCOPE_SECRET_KEY" not in env and "PYTHONPATH" in env
    assert "EDGESCOPE_SECRET_KEY" in os.environ
