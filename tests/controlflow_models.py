"""Moved to testkit/controlflow_models.py, which tests and benchmarks both import; this name is kept for tests written
before the move. New code imports `testkit.controlflow_models`."""

from testkit.controlflow_models import *  # noqa: F401,F403
