"""The hardware a target is predicted on: its YAML profile, or on this machine the calibrated one.

Above both the sweep (which takes the hardware as an argument) and calibration (which fits it by sweeping),
so neither imports the other's caller.
"""

from __future__ import annotations

import os

from compiler.vocabulary.targets import Target, get_target
from simulator.profiles import HardwareProfile, load_profile


def hardware_for(target: str | Target, calibration_path: str | os.PathLike[str] | None = None) -> HardwareProfile:
    """The profile to sweep `target` with: for the host (`host-cpu`) with a `calibration_path`, the calibrated
    profile from that cache (calibrating first if it is missing or stale), and for LiteRT on the host, with
    LiteRT's kernels calibrated too; else the target's YAML profile as its backend sees it."""
    t = target if isinstance(target, Target) else get_target(target)
    if calibration_path is not None and t.profile == "host-cpu":
        from simulator.calibration import load_or_calibrate

        hw = load_or_calibrate(calibration_path)
        if t.backend == "litert-cpu":  # XNNPACK's own rates, calibrated with LiteRT (simulator/litert_calibration.py)
            from simulator.litert_calibration import with_litert

            hw = with_litert(hw, calibration_path)
        return hw
    return load_profile(t.profile, t.backend)
