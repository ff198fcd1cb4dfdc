"""Result blobs compressed and written in a thread while the job builds the next document: `json.dumps` holds the
GIL, but zlib and the blob store's file or network writes release it, so the store stage of a large analysis keeps
both cores busy instead of one."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")


class BackgroundWrites:
    """Calls run one after another in one thread, in submission order; at most `depth` wait at a time (each holds
    a document's bytes), so a submit past that waits for the oldest. Leaving the block waits for every call;
    `results()` are theirs in order, and the first error of one is raised there."""

    def __init__(self, depth: int = 2) -> None:
        self.depth = depth
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-writes")
        self._futures: list[Future[object]] = []

    def submit(self, fn: Callable[[], T]) -> None:
        waiting = [f for f in self._futures[-self.depth:] if not f.done()]
        if len(waiting) >= self.depth:
            waiting[0].result()
        self._futures.append(self._pool.submit(fn))

    def results(self) -> list[object]:
        return [f.result() for f in self._futures]

    def __enter__(self) -> BackgroundWrites:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # On an error the calls not started are dropped; a started one finishes (a blob nothing points to yet).
        self._pool.shutdown(wait=True, cancel_futures=kind is not None)
