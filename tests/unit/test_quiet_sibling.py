"""benchmarks/quiet_sibling.py: which processes it spares (the lock holder's whole tree) and how it finds the holder."""

from __future__ import annotations

import fcntl
import os

from benchmarks.quiet_sibling import lock_holder, tree


def test_the_holders_descendants_are_spared_and_nothing_else() -> None:
    procs = {1: (0, 0, "init"), 10: (1, 5, "flock lock sh -c ..."), 11: (10, 9, "sh -c"), 12: (11, 90, "python x"),
             13: (12, 40, "python -m compiler.sandbox_child"), 20: (1, 300, "pytest"), 21: (20, 80, "child")}
    assert tree(10, procs) == {10, 11, 12, 13}
    assert tree(20, procs) == {20, 21}


def test_the_holder_is_read_from_proc_locks(tmp_path) -> None:
    lock = tmp_path / "m.lock"
    lock.touch()
    assert lock_holder(lock) is None
    with open(lock) as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        assert lock_holder(lock) == os.getpid()
    assert lock_holder(lock) is None
