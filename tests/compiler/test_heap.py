"""compiler.heap.fewer_collections: the analysis thresholds while any block runs (blocks may nest or overlap in
threads), the ones in force before once the last ends, also after an error."""

from __future__ import annotations

import gc
import threading

import pytest

from compiler.heap import ANALYSIS_THRESHOLDS, fewer_collections


def test_thresholds_while_in_blocks_and_restored_after() -> None:
    before = gc.get_threshold()
    gc.set_threshold(900, 11, 12)
    try:
        with fewer_collections():
            assert gc.get_threshold() == ANALYSIS_THRESHOLDS
            with fewer_collections():
                assert gc.get_threshold() == ANALYSIS_THRESHOLDS
            assert gc.get_threshold() == ANALYSIS_THRESHOLDS  # the outer block still runs
        assert gc.get_threshold() == (900, 11, 12)
        with pytest.raises(RuntimeError), fewer_collections():
            raise RuntimeError("stage failed")
        assert gc.get_threshold() == (900, 11, 12)
    finally:
        gc.set_threshold(*before)


def test_overlapping_blocks_in_threads() -> None:
    before = gc.get_threshold()
    entered, release = threading.Event(), threading.Event()

    def job() -> None:
        with fewer_collections():
            entered.set()
            release.wait(10)

    t = threading.Thread(target=job)
    with fewer_collections():
        t.start()
        entered.wait(10)
    assert gc.get_threshold() == ANALYSIS_THRESHOLDS  # the thread's job is still in its block
    release.set()
    t.join(10)
    assert gc.get_threshold() == before
