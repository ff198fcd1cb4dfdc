"""Result records of profiling a compiled model on a real runtime.

Every figure here was measured (`measured=True`, with `device` saying where). Predicted
figures come from `simulator/` and carry their own label.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from compiler.sandbox import DEFAULT_MEMORY_LIMIT


@dataclass(frozen=True, slots=True)
class TaskTiming:
    median_ms: float
    p25_ms: float
    p75_ms: float
    runs: int  # number of runs the task was seen in
    # Executions per run: 1, or a body node's trip count (its times are per run, all calls summed).
    calls: float = 1.0


@dataclass(slots=True)
class Profile:
    target: str  # e.g. "ort-cpu/host"
    runtime: str  # e.g. "onnxruntime 1.32.0 CPUExecutionProvider"
    device: str  # e.g. CPU model string of this machine
    threads: int
    runs: int
    warmup: int
    latency_ms: float  # whole-model median
    latency_p90_ms: float
    peak_memory_bytes: int
    input_shapes: dict[str, list[int]]
    tasks: dict[str, TaskTiming] = field(default_factory=dict)  # compiled node id -> timing
    measured: bool = True
    kernels: dict[str, list[str]] = field(default_factory=dict)  # compiled node id -> kernels the runtime ran

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Profile:
        d = dict(d)
        d["tasks"] = {k: TaskTiming(**v) for k, v in d.get("tasks", {}).items()}
        return cls(**d)


@dataclass(slots=True)
class ProfileSettings:
    warmup: int = 5
    runs: int = 30
    threads: int = 1  # intra-op threads; inter-op is always 1 (sequential execution)
    timeout_s: float = 600.0
    memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    input_values: dict[str, int | float | bool] = field(default_factory=dict)


def profile_in_sandbox(child: str, model_path: str | os.PathLike[str], settings: ProfileSettings) -> Profile:
    """Run a backend's profiling child (`"module:function"`, returning Profile JSON) in the sandbox."""
    from compiler.sandbox import Limits, run

    if settings.runs < 1 or settings.warmup < 0 or settings.threads < 1:
        raise ValueError("runs and threads must be >= 1, warmup >= 0")
    payload = {"model": os.fspath(model_path), "settings": asdict(settings)}
    data = run(child, payload, Limits(settings.timeout_s, settings.memory_limit_bytes, what="profiling"))
    return Profile.from_json(data)
