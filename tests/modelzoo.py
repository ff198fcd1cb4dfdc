"""Moved to testkit/modelzoo.py, which tests and benchmarks both import; this name is kept for tests written
before the move. New code imports `testkit.modelzoo`."""

from testkit.modelzoo import *  # noqa: F401,F403
