"""Which jointly fitted paths a calibration's cases cannot price on this machine.

A path's cases are written for the kernel a machine is expected to run; where this machine's ORT runs another (an
alignment its dispatch does not meet), none of the cases' predictions moves with the path's efficiency, the fit's
error is flat, and its search settles at the lower bound. Seen on a Zen 3 (AVX2, 2026-12-06, CACHE_VERSION 96): the
three `convsmallact-8x*` static int8 cases (8 output channels, under MLAS's symmetric conv minimum of 16) run the
per-group GEMM path (`stemgemm.int8`), `convsmall.int8` came out at 1.6e-4 of the peak, and LCNet-050's one 8 -> 16
1x1 QLinearConv on the symmetric path was priced at 162 ms (its whole int8-static file 165.5 ms against 3.3 with the
profile's own figure). Such a key is left unfitted (calibration_fit._fit_joint): the profile's figure stands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.graph import Graph
from simulator.profiles import HardwareProfile

# The efficiencies the cases are predicted at (the fit searches 1e-4 .. EFF_MAX), and the relative move of a case's
# prediction below which it counts as not priced by the key.
PROBES = (0.01, 1.0)
MOVE = 1e-6
# The setups a joint fit may give a key (calibration_fit._fit_eff_setup's columns), present at 0 in both predictions
# as they are while it fits: some paths are taken only where the profile has their figures (an NCHW path's im2col, a
# ConvTranspose's col2im), and without them ORT's deconv and conv3d keys read as unpriced.
SETUP_SUFFIXES = ("", ".pixel", ".im2col", ".weights", ".row", ".tap", ".span", ".out", ".scalar", ".im2col.row",
                  ".spill", ".im2col.strided", ".far", ".col2im")


def efficiency_moves(cases: list[tuple[Graph, str]], hw: HardwareProfile, key: str,
                     predict: Callable[[Graph, HardwareProfile, str], float]) -> bool:
    """Whether any of `cases` ((graph, preset)) is predicted differently at two efficiencies of `key`
    (`predict(graph, hw, preset)`: ms)."""
    setups = {key + s: 0.0 for s in SETUP_SUFFIXES}
    lo, hi = (hw.with_overrides({"units": {"cpu": {"efficiency": {key: e}, "kind_overhead_s": setups}}})
              for e in PROBES)
    for g, preset in cases:
        a, b = predict(g, lo, preset), predict(g, hi, preset)
        if abs(a - b) > MOVE * max(abs(a), abs(b), 1e-9):
            return True
    return False


def unpriced(graphs: dict[str, Graph], cases_out: list[dict[str, Any]], hw: HardwareProfile,
             predict: Callable[[Graph, HardwareProfile, str], float]) -> set[str]:
    """The jointly fitted keys of `cases_out` (calibration_fit's case records) none of whose cases' predictions moves
    with the key's efficiency."""
    keys = {c["key"] for c in cases_out if c["joint"]}
    return {k for k in keys if not efficiency_moves([(graphs[c["case"]], c["preset"]) for c in cases_out
                                                     if c["key"] == k], hw, k, predict)}
