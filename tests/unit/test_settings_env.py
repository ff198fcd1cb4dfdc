"""Settings read from the environment: a value that cannot be meant stops the service with one line."""

from __future__ import annotations

import pytest

from edgescope.config import Settings


def test_int_settings_parse_and_negative_or_non_numbers_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {"EDGESCOPE_DATA_DIR": str(tmp_path), "EDGESCOPE_PROFILE_REMEASURE_PAUSE_MS": "0",
           "EDGESCOPE_PROFILE_RUNS": "25"}
    s = Settings.from_env(env)
    assert s.profile_remeasure_pause_ms == 0 and s.profile_runs == 25
    for raw in ("-5", "1.5", "soon"):
        with pytest.raises(SystemExit, match=r"EDGESCOPE_PROFILE_REMEASURE_PAUSE_MS=.* is not a valid int"):
            Settings.from_env({**env, "EDGESCOPE_PROFILE_REMEASURE_PAUSE_MS": raw})
