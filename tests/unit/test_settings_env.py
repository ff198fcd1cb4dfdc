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


def test_fast_rounds_default_to_the_profiles_and_the_suite_turns_them_off(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """EDGESCOPE_PROFILE_FAST_ROUNDS: the product times compiler.profile.FAST_ROUNDS rounds of the fast CPU time;
    the test suite's servers and settings (testkit.live.FAST_PROFILE) none."""
    from compiler.profile import FAST_ROUNDS, ProfileSettings
    from testkit.live import FAST_PROFILE
    from worker.pipeline import AnalysisOptions

    assert Settings.from_env({"EDGESCOPE_DATA_DIR": str(tmp_path)}).profile_fast_rounds == FAST_ROUNDS
    assert AnalysisOptions().fast_rounds == ProfileSettings().fast_rounds == FAST_ROUNDS
    assert Settings.from_env({**FAST_PROFILE, "EDGESCOPE_DATA_DIR": str(tmp_path)}).profile_fast_rounds == 0
