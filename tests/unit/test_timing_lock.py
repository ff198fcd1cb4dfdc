"""compiler.timing_lock: one timing at a time; nested holds in one thread are free; other threads wait."""

from __future__ import annotations

import threading
import time

from compiler import timing_lock


def test_a_second_holder_waits_until_the_first_lets_go(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(timing_lock.LOCK_ENV, str(tmp_path / "t.lock"))
    held, events, waited = threading.Event(), [], []

    def first() -> None:
        with timing_lock.timing_alone():
            held.set()
            time.sleep(0.3)
            events.append("first released")

    def second() -> None:
        held.wait()
        with timing_lock.timing_alone() as w:
            waited.append(w)
            events.append("second holds")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert events == ["first released", "second holds"]
    assert waited[0] > 0.15


def test_nested_holds_in_one_thread_are_free(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(timing_lock.LOCK_ENV, str(tmp_path / "t.lock"))
    with timing_lock.timing_alone() as outer:
        with timing_lock.timing_alone() as inner:
            assert inner == 0.0
    assert outer >= 0.0
    with timing_lock.timing_alone() as again:  # released: taken at once
        assert again < 0.1


def test_the_lock_file_is_the_env_path_or_one_in_the_temp_dir(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(timing_lock.LOCK_ENV, str(tmp_path / "sub" / "x.lock"))
    assert timing_lock.lock_path() == tmp_path / "sub" / "x.lock"
    with timing_lock.timing_alone():
        assert (tmp_path / "sub" / "x.lock").exists()
    monkeypatch.delenv(timing_lock.LOCK_ENV)
    assert timing_lock.lock_path().name == "edgescope-timing.lock"


def test_a_lock_file_that_cannot_be_opened_does_not_stop_the_timing(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(timing_lock.LOCK_ENV, str(blocker / "under-a-file.lock"))  # its parent is a file
    with timing_lock.timing_alone() as waited:
        assert waited == 0.0
