"""LiteRT's own last-level cache ladder (simulator.litert_llc): its chains, and the ramp fitted to XNNPACK's times."""

from __future__ import annotations

import numpy as np

from compiler.frontends import tflite
from simulator import host_machine, litert_llc
from simulator.calibration_llc import PREFIX, R, footprint, memory_k, stream_k
from simulator.profiles import load_profile

MB = 1e6
LLC_ALL = 32 * 1024 * 1024  # a 32 MiB L3 shared by 2 vCPUs


def test_the_chain_is_r_batch1_fully_connected_layers_of_k_by_k_weights(tmp_path) -> None:
    g = tflite.load(litert_llc.chain(256, tmp_path / "c.tflite"))
    fcs = [n for n in g.nodes if n.op_type == "FULLY_CONNECTED"]
    assert len(fcs) == R
    assert all(g.values[n.inputs[1]].shape == [256, 256] for n in fcs)
    assert footprint(256) == R * 256 * 256 * 4


def test_the_stream_chain_fits_the_share_and_the_memory_chain_is_4x_the_cache() -> None:
    assert footprint(stream_k(LLC_ALL // 2)) <= LLC_ALL // 4
    assert footprint(memory_k(LLC_ALL)) >= 3.9 * LLC_ALL


def _xnnpack(keep: float, gone: float, hot_gbs: float, cold_gbs: float):
    """A fake profile_cases: each chain's layers at the time a ramp (keep, gone) and the two rates give."""

    def run(cases, build, name, tmp, what, runs, warmup=3, limit_s=600.0, progress=lambda s: None):
        out = []
        for key, k in cases:
            share = 1.0 if key == "memory" else 0.0 if key == "stream" else float(
                np.clip((footprint(k) - keep) / (gone - keep), 0.0, 1.0))
            w = k * k * 4
            ms = (w * (1 - share) / (hot_gbs * 1e9) + w * share / (cold_gbs * 1e9)) * 1e3
            out.append(((key, k), tmp / f"{name((key, k))}.tflite",
                        {"tasks": {f"FULLY_CONNECTED_{i}": [ms, ms, ms, runs, 1.0] for i in range(R)}}))
        return out

    return run


def test_calibrate_fits_the_ramp_xnnpacks_chains_show(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(host_machine, "llc_bytes", lambda: (LLC_ALL // 2, LLC_ALL))
    monkeypatch.setattr(litert_llc, "profile_cases", _xnnpack(12 * MB, 26 * MB, 45.0, 17.8))
    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {"llc_hold_s": 0.0, "llc_evict_s": 0.0}}})
    lines: list[str] = []
    kept = litert_llc.calibrate(tmp_path, hw, lines.append)["units"]["cpu"]
    # the ladder's footprints (10-47 MB) bracket the ramp: it is found within a ladder step
    assert 8 * MB <= kept["llc_keep_bytes"] <= 15 * MB
    assert 22 * MB <= kept["llc_gone_bytes"] <= 32 * MB
    assert any(line.startswith("LiteRT last-level cache ladder") and PREFIX not in line for line in lines)


def test_no_listed_cache_no_ladder(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(host_machine, "llc_bytes", lambda: (0, 0))
    assert litert_llc.calibrate(tmp_path, load_profile("host-cpu"))["units"]["cpu"] == {}
