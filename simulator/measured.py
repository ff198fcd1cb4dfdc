"""Measured figures of a target that runs here, as the sweep's fp32 baseline.

A profile with per-task times (ONNX Runtime) gives each task its measured time, less the profiler's own cost,
and the whole model's measured time beyond its tasks (`unexplained_ms`); one with only a whole-model time
(LiteRT) scales every prediction of the target to it (`total_scale`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.graph import Graph
from compiler.profile import NOISY_CPU_SHARE, Profile
from compiler.vocabulary.targets import Target
from simulator.control_flow import discount_parents
from simulator.profiles import HardwareProfile


def own_whole_ms(profile: Profile) -> float:
    """The whole-model time the measured tasks are set against: the median wall time, or, where the process had
    the CPU for less than NOISY_CPU_SHARE of the round (other load) and ORT ran its one intra-op thread on the
    calling thread, the median CPU time of that thread: the model's own time. The wall time's excess is waiting
    for the CPU, which would otherwise become a per-inference term added to every option (seen: int8 files
    predicted at 2.5-6.8x what they measure after an fp32 analysis at load 3 per CPU)."""
    wall = float(profile.latency_ms or 0.0)
    noise = profile.noise or {}
    cpu = float(noise.get("cpu_latency_ms") or 0.0)
    if profile.threads == 1 and 0 < cpu < wall and float(noise.get("cpu_share", 1.0)) < NOISY_CPU_SHARE:
        return cpu
    return wall


def fast_scale(profile: Profile | None) -> float | None:
    """The model's fast CPU time over its own time in the profile's round (own_whole_ms), where the profile timed
    it (`noise["fast_cpu_ms"]`, compiler.profile.fast_cpu_ms: ORT, 1 thread), within [IN_MODEL_BOUNDS[0], 1]; else
    None. The sweep scales the measured baseline (its tasks and the time they leave unexplained) by it, so the fp32
    column and every option's prediction stand for the machine's fast state, the state the calibrated rates were
    timed in; the other kernels take how the fast-state tasks ran against their prediction (baseline_speed). A round
    in a slow state would otherwise carry it to every option (session 54, a Zen 4: the dialog within ±10% of the
    int8-static exports' fast CPU time on 12/18 TorchScript files, the rules alone 16/18)."""
    if profile is None or profile.threads != 1:
        return None
    fast, own = float((profile.noise or {}).get("fast_cpu_ms") or 0.0), own_whole_ms(profile)
    if fast <= 0 or own <= 0:
        return None
    return float(np.clip(fast / own, IN_MODEL_BOUNDS[0], 1.0))


def total_scale(t: Target, profile: Profile | None, measured: np.ndarray, lat: np.ndarray,
                 presets: list[Any], per_inference_ms: float = 0.0, base: str = "fp32") -> float | None:
    """measured / predicted whole-model latency of the file as uploaded (preset `base`), when the profile measured
    only the whole model (`per_inference_ms`: the time per inference besides the tasks')."""
    if profile is None or profile.target != t.name or not profile.measured or profile.tasks or measured.any():
        return None
    p = [x.name for x in presets].index(base)
    pred = float(lat[:, p].sum()) + per_inference_ms  # one preset everywhere: no edge converts, so its total
    if pred <= 0 or not profile.latency_ms or profile.latency_ms <= 0:
        return None
    return float(profile.latency_ms) / pred


def unexplained_ms(profile: Profile | None, measured: np.ndarray, lat: np.ndarray, presets: list[Any],
                   run_ms: float = 0.0) -> float:
    """Measured whole-model latency minus the fp32 tasks' total and the runtime's fixed cost `run_ms`, when the
    tasks were measured (else 0)."""
    if profile is None or not measured.any() or not profile.latency_ms:
        return 0.0
    p = [x.name for x in presets].index("fp32")
    return max(0.0, own_whole_ms(profile) * (fast_scale(profile) or 1.0) - (float(lat[:, p].sum()) + run_ms))


_MEASURED_ZERO_MS = 1e-9  # a measured "no time of its own": positive, so the measurement replaces the prediction


def measured_ms(g: Graph, t: Target, profile: Profile | None, profiler_overhead_s: float,
                 run_overhead_s: float = 0.0) -> np.ndarray:
    """Measured task medians (ms per call), less the time the profiler itself adds to each recorded task.

    That cost is calibrated on a chain of tiny kernels; inside a real graph it is often larger (each
    event also pays for the switch between kernels). The profile's whole-model latency is timed without
    the profiler, so when the task medians add up to more than it, the excess per task is taken as
    this graph's profiler cost: the measured tasks then sum to the measured whole."""
    out = np.zeros(len(g.nodes))
    if profile is None or profile.target != t.name or not profile.measured:
        return out
    med = np.array([profile.tasks[nd.id].median_ms if nd.id in profile.tasks else 0.0 for nd in g.nodes])
    # A body task's median covers all its calls in a run; the profiler pays per call (event).
    calls = np.array([profile.tasks[nd.id].calls if nd.id in profile.tasks else 1.0 for nd in g.nodes])
    n = float(calls[med > 0].sum())
    # LiteRT's per-operator times are XNNPACK's own timers, not an event profiler's (the calibrated overhead
    # is ORT's): nothing to take off but an excess over the whole.
    litert = g.format == "tflite"
    over_ms = 0.0 if litert else profiler_overhead_s * 1e3
    whole = own_whole_ms(profile)
    if n and whole > 0:
        med = discount_parents(g, med, calls, whole - run_overhead_s * 1e3)
        excess = float(med.sum()) - (whole - run_overhead_s * 1e3)
        over_ms = max(over_ms, excess / n)
    per_run = np.where(med > 0, np.maximum(med - over_ms * calls, 0.25 * med), 0.0)
    # On a busy machine a kernel the OS preempts waits inside its own event, and the profiler's median keeps that
    # wait for the long kernels a preemption hits most: the same excess per event does not take it off (the small
    # tasks stop at the floor above) and the tasks stayed over the whole they were measured against. What is left is
    # waiting in proportion to the tasks' length, scaled off. Seen: MobileNetV3-Large analysed at load 6 per CPU
    # (2026-12-03), tasks 13.5 ms against its 9.05 ms of CPU time per run, so every option's prediction carried
    # +49%; its fp32 export measured 8.1 ms.
    own = whole - run_overhead_s * 1e3
    if not litert and own > 0 and float(per_run.sum()) > own:
        per_run = per_run * (own / float(per_run.sum()))
    out = per_run / np.maximum(calls, 1e-9)  # per call: the sweep scales tasks by their executions
    if not litert and (fast := fast_scale(profile)) is not None:  # the baseline in the machine's fast state
        out = out * fast
    if litert:
        # An operator XNNPACK folded into a neighbour (a PAD into the next conv) was measured at no time of its
        # own: a measured zero, not a missing measurement to predict.
        present = np.array([nd.id in profile.tasks for nd in g.nodes])
        out = np.where(present & (out <= 0), _MEASURED_ZERO_MS, out)
    return out


# Bounds of the factors below: beyond them the measured tasks are not the kernels their prediction describes (a
# profile of another graph, a run that stalled), or the probe did not time the CPU the model ran on, and the factor
# would carry that to every option.
IN_MODEL_BOUNDS = (0.5, 2.0)


def in_model_factor(measured: np.ndarray, predicted: np.ndarray, runs: np.ndarray) -> float:
    """How the measured tasks ran against their fp32 prediction, sum over sum (1.0 where none was measured),
    within IN_MODEL_BOUNDS. `measured`, `predicted`: ms per call of each task; `runs`: its calls per inference.
    The other kernels' factor where the CPU's speed is not known (`option_factor`). On a Zen 4 (2 vCPUs, load 1.2-2.0
    per CPU, 2026-12-03) 8 TorchScript CNNs' fp32 tasks measured 1.0-1.55x their prediction (median 1.24) and their
    fp16, int8-dynamic and int8-static exports 1.2-2.3x theirs (median 1.58) in CPU time per run."""
    m = (measured > 0) & (predicted > 0)
    p = float((predicted[m] * runs[m]).sum())
    if p <= 0:
        return 1.0
    return float(np.clip(float((measured[m] * runs[m]).sum()) / p, *IN_MODEL_BOUNDS))


def speed_factor(profile: Profile | None, rates_gflops: float | None) -> float | None:
    """How much slower the CPU ran while the profile was timed than when the calibrated rates were: the rates' speed
    probe figure (`rates_gflops`, HardwareProfile.speed_gflops) over the profile's (compiler.speed_probe, the mean
    of its probes before and after the rounds), within IN_MODEL_BOUNDS; None where either is unknown."""
    from compiler.speed_probe import SpeedCheck

    speed = (profile.noise or {}).get("speed") if profile is not None else None
    if not rates_gflops or not isinstance(speed, dict) or (gflops := SpeedCheck.from_json(speed).gflops) <= 0:
        return None
    return float(np.clip(rates_gflops / gflops, *IN_MODEL_BOUNDS))


def baseline_speed(profile: Profile | None, rates_gflops: float | None) -> float | None:
    """The speed factor the other kernels of measured tasks take (option_factor): the speed probe's (speed_factor),
    or None, which leaves them the in-model factor, where the measured baseline is scaled to the model's fast CPU
    time (fast_scale). In the fast state the fp32 tasks against their prediction tell how this machine runs now
    against its rates, and the probe around one round no longer does: on a Zen 3 with the other vCPU busy
    (2026-12-06, README Round 29) 18 TorchScript files' int8-static exports ran 0.87x their rules' speed in fast
    CPU time, the option's predicted change times the upload's fast CPU time within ±10% on 15/18, the rules alone
    (a factor of 1) on 4/18."""
    return None if fast_scale(profile) is not None else speed_factor(profile, rates_gflops)


def typical_factor(hw: HardwareProfile) -> float | None:
    """How much slower this CPU typically runs than when its rates were timed: the rates' speed probe figure
    (HardwareProfile.speed_gflops) over the median of the machine's probe history (typical_gflops,
    simulator.speed_history), within IN_MODEL_BOUNDS; None where either is unknown. A prediction made without a
    profile scales every task's time by it, as a measured profile's options scale by `speed_factor`."""
    if not hw.speed_gflops or not hw.typical_gflops:
        return None
    return float(np.clip(hw.speed_gflops / hw.typical_gflops, *IN_MODEL_BOUNDS))


def option_factor(measured: np.ndarray, predicted: np.ndarray, runs: np.ndarray, speed: float | None) -> float:
    """The factor the sweep scales the other kernels of measured tasks by (their int8, fp16-through-Casts,
    MatMulNBits... paths, predicted from calibration's chains): an option's kernels run at the speed the CPU had
    while the analysis measured the fp32 ones. That speed is the speed probe's (`speed`, speed_factor) where the
    profile and the calibration both recorded one, else how the measured tasks ran against their prediction
    (in_model_factor), which also carries the fp32 rules' own error onto kernels the fp32 run does not have.

    README "Exporting the optimized model", Round 21 (Emerald Rapids, 2026-12-06, the CPU's probe at ~72-100 or
    ~130-158 GFLOP/s, switching within seconds): 3 holds x 11-18 models x 4 options, the dialog within ±10% on 71/172
    rows of >= 1 ms with in_model_factor, 88/172 with this (median |error| 14.4% -> 9.4%); no factor on int8
    kernels 53/172, a factor only on fp16's Cast-wrapped fp32 kernels 53/172."""
    return speed if speed is not None else in_model_factor(measured, predicted, runs)
