"""The one-sentence label of a predicted table (what the UI, the CLI and exports show): its profile and its
error on models it was not fitted to (host: benchmarks/fidelity.py; devices: simulator/published/heldout.json)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def heldout_text(h: Mapping[str, Any]) -> str:
    """A device's held-out error as a label says it (simulator/published/heldout.json)."""
    cv = h.get("kind") == "leave-one-family-out"
    # Not refitted with families enough (FitSpec.refit False): a refit on them cross-validated worse than the bars.
    kept = h.get("refit") is False and h.get("families", 0) >= 2
    how = ("leave-one-family-out on published measurements" if cv
           else "on validation models never fitted; the profile is not refitted: its published families do not "
           "cross-validate" if kept
           else "on validation models never fitted; too few published families to cross-validate")
    text = (f", held-out error median {h['median_pct']:.0f}%, {h['within25_pct']:.0f}% within ±25% "
            f"(n={h['n_points']} points, {h['n_models']} models; {how})")
    pl = h.get("placement") or {}
    if pl.get("n"):
        text += f", NPU/CPU placement as published on {pl['agree']}/{pl['n']}"
    return text


def label_text(label: Mapping[str, Any]) -> str:
    err = label.get("error_pct_median")
    scaled = label.get("baseline") == "predicted, scaled to measured total"
    held = label.get("heldout")
    if held and held.get("n_points"):
        tail = heldout_text(held)
    elif err is not None:
        tail = f", median error {err:.1f}% on {label.get('error_models')} held-out models"
    elif scaled:
        tail = ""
    elif label.get("profile") == "host-cpu":
        tail = ", error not measured yet (benchmarks/fidelity.py --record)"
    else:  # a phone or board profile without published measurements fitted: nothing to check it against
        tail = ", error unknown (no published measurements of this target to check it against)"
    if scaled:
        tail += f", per-op figures scaled to the measured total ({label.get('measured_runtime') or 'measured here'})"
    if fast := label.get("baseline_fast_cpu_ms"):
        tail += (f", fp32 baseline at the model's fast CPU time ({fast:.3g} ms: the low percentile of runs over "
                 "several rounds, the state the rates were timed in)")
    elif label.get("baseline_cpu_time"):
        tail += ", fp32 baseline from the measured CPU time (the machine was busy: its wall time waited for the CPU)"
    if sp := label.get("typical_speed"):
        tail += (f", at this machine's typical speed ({sp['gflops']:.0f} GFLOP/s; its rates were timed at "
                 f"{sp['rates_gflops']:.0f}: times x{sp['factor']:.3f})")
    if label.get("fallback"):
        tail += (f"; predicted on the upload's own graph, not the runtime's operators: {label['fallback']} "
                 "(placement and fusions may differ on the device)")
    cal = "calibrated" if label.get("calibrated") else "uncalibrated"
    return f"predicted: profile {label['profile']} ({cal}){tail}"
