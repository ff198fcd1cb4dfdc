"""Hardware profiles are data with a source for every figure."""

from __future__ import annotations

import pytest
import yaml

from simulator.profiles import HARDWARE_DIR, ProfileError, list_profiles, load_profile, parse_profile
from simulator.roofline import efficiency


def test_every_shipped_profile_loads() -> None:
    names = list_profiles()
    assert {"host-cpu", "apple-a17", "snapdragon-8g3", "pixel-8", "rpi5"} <= set(names)
    for n in names:
        p = load_profile(n)
        assert p.units and p.dram_bandwidth_bytes_per_s > 0 and p.dram_energy_pj_per_byte > 0
        assert p.units[-1].ops is None, f"{n}: the last unit must run every op (the fallback)"
        for u in p.units:
            assert any(v > 0 for v in u.peak_ops_per_s.values())


def test_figure_without_source_is_refused() -> None:
    data = yaml.safe_load((HARDWARE_DIR / "rpi5.yaml").read_text())
    data["dram_bandwidth_bytes_per_s"] = {"value": 1.0}
    with pytest.raises(ProfileError, match="needs \\{value, source\\}"):
        parse_profile(data)
    data["dram_bandwidth_bytes_per_s"] = 17e9  # a bare number has no source either
    with pytest.raises(ProfileError):
        parse_profile(data)


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(ProfileError, match="known: .*host-cpu"):
        load_profile("cray-1")


def test_overrides_apply_without_touching_the_yaml() -> None:
    base = load_profile("host-cpu")
    cal = base.with_overrides({"units": {"cpu": {"dispatch_overhead_s": 1e-7, "efficiency": {"conv.fp32": 0.9}}},
                               "error_pct_median": 8.0, "error_models": 5})
    assert cal.calibrated and not base.calibrated
    assert efficiency(cal.units[0], "conv", "fp32") == 0.9 and cal.units[0].dispatch_overhead_s == 1e-7
    assert efficiency(base.units[0], "conv", "fp32") != 0.9
    assert cal.error_pct_median == 8.0


def test_a_new_path_deciding_figure_replans_and_a_new_plain_figure_does_not() -> None:
    """The fp16 NCHW depthwise path exists where `dwconvnchw.cast16nchw` is fitted (simulator.backends): a profile
    that gains it by overrides alone must not share its base's plans (simulator.sweep plans on `plan_base`)."""
    base = load_profile("host-cpu")
    assert "dwconvnchw.cast16nchw" not in base.units[0].efficiency
    gains_path = base.with_overrides({"units": {"cpu": {"efficiency": {"dwconvnchw.cast16nchw": 0.5}}}})
    assert gains_path.plan_base is None
    figure_only = base.with_overrides({"units": {"cpu": {"efficiency": {"elementwise.fp32.Tanh": 0.3}}}})
    assert figure_only.plan_base is base
