"""Moved to testkit/tflite_builder.py, which tests and benchmarks both import; this name is kept for tests written
before the move. New code imports `testkit.tflite_builder`."""

from testkit.tflite_builder import *  # noqa: F401,F403
