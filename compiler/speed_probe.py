"""Speed probe: how fast one core of this machine computes right now, so a profile can say when the CPU ran at another
speed than when the host's rates were measured (`edgescope calibrate`).

On a shared cloud VM a core's speed drifts for minutes at a time at the same load (seen: 1.7x within minutes on a
2-vCPU VM, a single-thread 384x384 GEMM at 87-151 GFLOP/s). A prediction from rates timed at one speed set against a
profile timed at another is off by that ratio, and without a probe nothing says so. The probe is ONNX Runtime itself
running one fp32 MatMul on 1 intra-op thread, timed in the calling thread's CPU time: the kernel family (MLAS's SGEMM)
and the clock the calibration's fp32 rates are fitted with (`simulator.calibration_timing.clock`), where numpy's GEMM
is another library (OpenBLAS, its own kernels and thread pool, which a child that has imported numpy cannot pin to
one thread any more). 28-32 ms on the session-43 VM (Xeon, ~200 GFLOP/s): a session, 5 warm-up runs and 40 timed
runs of ~0.6 ms.

Calibration records a probe before and after its case timings and between their rounds, a profile before and
after its timed rounds (`SpeedCheck`); `mark` folds what they say into the profile's `noise` record.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

PROBE_N = 384  # MatMul of two N x N fp32 matrices: 113 MFLOP, under 1 ms a run, inside the 2 MiB L2 per core
PROBE_RUNS = 40
PROBE_WARMUP = 5
# Two probes differ beyond this factor (either way): the CPU ran at another speed. 10% is the accuracy goal of a
# host prediction (benchmarks/realworld.py counts models within ±10%): a drift beyond it alone can move a perfect
# prediction out of the goal. Back-to-back probes on a quiet moment agree within a few percent (README, "Noisy
# measurements"), so the limit does not fire on the probe's own noise.
DRIFT_LIMIT = 1.10


def _model_bytes(n: int) -> bytes:
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "speed_probe", [a, b], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def probe(runs: int = PROBE_RUNS, n: int = PROBE_N) -> float:
    """GFLOP/s of an N x N fp32 MatMul on ONNX Runtime, 1 intra-op thread: 2 N^3 over the median thread CPU time of
    `runs` runs after warm-up (the median: a run another process preempted counts no more than one)."""
    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    sess = ort.InferenceSession(_model_bytes(n), so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal((n, n)).astype(np.float32) for k in ("a", "b")}
    for _ in range(PROBE_WARMUP):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        c0 = time.thread_time()
        sess.run(None, feeds)
        times.append(time.thread_time() - c0)
    t = statistics.median(times)
    return 2 * n**3 / t / 1e9 if t > 0 else 0.0


def drifted(ratio: float) -> bool:
    """A speed ratio beyond DRIFT_LIMIT either way (log-symmetric: 1.1x faster and 1.1x slower alike)."""
    return ratio > 0 and abs(math.log(ratio)) > math.log(DRIFT_LIMIT)


def _ratio_text(ratio: float) -> str:
    return f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"


@dataclass(frozen=True, slots=True)
class SpeedCheck:
    """Probes (GFLOP/s) before and after a timing, and the calibration's figure to hold them against (None: none
    known, e.g. no calibration yet or one made before calibrations recorded a probe)."""

    before: float
    after: float
    reference: float | None = None

    @property
    def gflops(self) -> float:
        return (self.before + self.after) / 2

    @property
    def ratio(self) -> float | None:
        """This timing's speed over the calibration's (> 1: the CPU ran faster than when the rates were measured)."""
        return self.gflops / self.reference if self.reference and self.gflops > 0 else None

    def reasons(self) -> list[str]:
        out = []
        if self.before > 0 and self.after > 0 and drifted(self.after / self.before):
            out.append(f"the CPU's speed changed during the timing (speed probe {self.before:.0f} GFLOP/s before, "
                       f"{self.after:.0f} after)")
        if (r := self.ratio) is not None and drifted(r):
            out.append(f"the CPU ran {_ratio_text(r)} than when this machine's rates were measured (speed probe "
                       f"{self.gflops:.0f} vs {self.reference:.0f} GFLOP/s)")
        return out

    @property
    def drifted(self) -> bool:
        return bool(self.reasons())

    def to_json(self) -> dict[str, Any]:
        r = self.ratio
        return {"before_gflops": round(self.before, 1), "after_gflops": round(self.after, 1),
                "reference_gflops": None if self.reference is None else round(self.reference, 1),
                "ratio": None if r is None else round(r, 3), "drifted": self.drifted}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SpeedCheck:
        ref = d.get("reference_gflops")
        return cls(float(d["before_gflops"]), float(d["after_gflops"]), None if ref is None else float(ref))


def probe_figures(record: dict[str, Any] | None) -> list[float]:
    """Every probe figure (GFLOP/s) of a calibration's probe record: before, between its rounds (`during_gflops`,
    calibrations since session 58) and after; [] where `before_gflops` or `after_gflops` is missing or zero."""
    if not record or not record.get("before_gflops") or not record.get("after_gflops"):
        return []
    during = [float(g) for g in record.get("during_gflops") or () if g and g > 0]
    return [float(record["before_gflops"]), *during, float(record["after_gflops"])]


def reference_of(record: dict[str, Any] | None) -> float | None:
    """The figure a calibration's probe record stands for, which a profile's drift is flagged against: the median of
    its probes (of a record with only `before` and `after`, their mean), so one probe that met a slow moment (a
    calibration's first, say) does not flag every later profile as drifted."""
    probes = probe_figures(record)
    return statistics.median(probes) if probes else None


def fastest_of(record: dict[str, Any] | None) -> float | None:
    """The speed a calibration's rates stand for: the fastest of its probes. Each case is timed at the 5th percentile
    of runs pooled over its rounds (simulator.calibration_timing.FAST_PERCENTILE), i.e. at the CPU's fastest state
    during the timing, which a drift between the probes (seen: 90 -> 145 GFLOP/s on an Emerald Rapids, 2026-12-06)
    leaves the fastest probe to describe; the probes between the rounds catch a fast state both ends missed."""
    probes = probe_figures(record)
    return max(probes) if probes else None


def mark(noise: dict[str, Any], check: SpeedCheck) -> dict[str, Any]:
    """`noise` (Round.noise's record) with the speed check in it (`speed`): noisy with its reasons appended when the
    probes drifted. Idempotent: a reason already in the record is not added twice, so a profile marked in its child
    and again against the calibration reads the same."""
    out = dict(noise)
    reasons = [r for r in (out.get("reason") or "").split("; ") if r]
    new = [r for r in check.reasons() if r not in reasons]
    out["speed"] = check.to_json()
    out["noisy"] = bool(out.get("noisy")) or check.drifted
    out["reason"] = "; ".join(reasons + new)
    return out


def against(noise: dict[str, Any], reference: float | None) -> dict[str, Any]:
    """`noise` of a profile held against the calibration's probe figure `reference`; as it is when the profile has no
    probe (measured before profiles recorded one) or no reference is known."""
    if reference is None or not isinstance(noise.get("speed"), dict):
        return noise
    old = SpeedCheck.from_json(noise["speed"])
    return mark(noise, SpeedCheck(old.before, old.after, reference))
