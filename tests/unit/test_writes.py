"""worker/writes.py: the store stage's background writes keep their order, hold at most `depth` documents and
raise a write's error where the results are read."""

from __future__ import annotations

import threading
import time

import pytest

from worker.writes import BackgroundWrites


def test_results_in_submission_order_and_depth_bounded() -> None:
    waiting: list[int] = []
    lock = threading.Lock()
    most = 0

    def call(i: int) -> int:
        time.sleep(0.002 * (i % 3))
        with lock:
            waiting.remove(i)
        return i * i

    with BackgroundWrites(depth=2) as w:
        for i in range(12):
            with lock:
                waiting.append(i)
                most = max(most, len(waiting))
            w.submit(lambda i=i: call(i))
        out = w.results()
    assert out == [i * i for i in range(12)]
    assert most <= 3  # two queued or running, and the one being submitted


def test_an_error_is_raised_by_results() -> None:
    def fail() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        with BackgroundWrites() as w:
            w.submit(lambda: 1)
            w.submit(fail)
            w.results()
