"""Calibrate the host when a worker starts, so the first upload on a new machine does not wait for it
in its simulate stage (calibration takes about a minute of CPU, once per machine and ORT version)."""

from __future__ import annotations

import logging
import threading

from edgescope.config import Settings

log = logging.getLogger(__name__)


def calibrate_in_background(settings: Settings) -> threading.Thread:
    """Start calibrating (or loading the cache) in a daemon thread. A job that needs the profile meanwhile
    waits on the same file lock (`simulator.calibration.load_or_calibrate`), so nothing runs twice."""
    def run() -> None:
        from simulator.calibration import load_or_calibrate

        try:
            hw = load_or_calibrate(settings.calibration_path)
            from simulator.litert_calibration import with_litert

            with_litert(hw, settings.calibration_path)  # LiteRT's kernels, for litert-cpu/host
        except Exception:  # noqa: BLE001 - a job will calibrate (and report any error) itself
            log.exception("host calibration at worker start failed; the first job will retry it")

    thread = threading.Thread(target=run, name="edgescope-calibration", daemon=True)
    thread.start()
    return thread
