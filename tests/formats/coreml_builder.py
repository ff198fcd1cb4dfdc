"""Moved to testkit/coreml_builder.py, which tests and benchmarks both import; this name is kept for tests written
before the move. New code imports `testkit.coreml_builder`."""

from testkit.coreml_builder import *  # noqa: F401,F403
