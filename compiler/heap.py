"""Fewer cyclic garbage collections while an analysis builds its large graphs, tables and documents.

CPython collects its young generation every 700 allocations of container objects. Building a 50,000-node
graph, its JSON or the stored documents allocates millions of lists, dicts and records, none of them in reference
cycles, and those collections (with the older generations they trigger) were a third of the CPU time of parsing,
serialising and reading back such a graph. While any analysis is in this block the young generation is collected
every 50,000 allocations instead; refcounting still frees everything acyclic at once, and the thresholds in force
before come back when the last block ends (the embedded worker shares the web process, and jobs may overlap).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

ANALYSIS_THRESHOLDS = (50_000, 20, 10)

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] = gc.get_threshold()


@contextmanager
def fewer_collections() -> Iterator[None]:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*ANALYSIS_THRESHOLDS)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_saved)
