"""The embedded default's file broker never shows a consumer a message that is still being written (kombu's own
file transport did, and the worker died of the JSONDecodeError), and loses nothing under a concurrent consumer."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection
from kombu.transport.virtual import Empty

from worker import file_broker


def _connection(folder: Path) -> Connection:
    folder.mkdir(parents=True, exist_ok=True)
    opts = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False}
    return Connection(f"{file_broker.SCHEME}://", transport_options=opts)


def test_a_message_being_written_is_invisible_to_consumers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    producer, consumer = _connection(tmp_path / "q"), _connection(tmp_path / "q")
    seen: list[Any] = []

    def encode_while_a_consumer_polls(s: Any) -> bytes:
        # Called while the file is open for writing: a consumer polling now must find no message.
        try:
            seen.append(consumer.default_channel._get("jobs"))
        except Empty:
            seen.append("empty")
        return s.encode() if isinstance(s, str) else s

    monkeypatch.setattr(file_broker, "str_to_bytes", encode_while_a_consumer_polls)
    producer.default_channel._put("jobs", {"body": "x", "headers": {"id": "job1.abc"}})
    assert seen == ["empty"]
    assert consumer.default_channel._get("jobs")["headers"]["id"] == "job1.abc"  # then whole
    assert not list((tmp_path / "q").iterdir())  # nothing left behind


def test_nothing_lost_with_a_concurrent_consumer(tmp_path: Path) -> None:
    n = 400
    got: list[str] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def consume() -> None:
        ch = _connection(tmp_path / "q").default_channel
        while not (done.is_set() and len(got) >= n):
            try:
                got.append(ch._get("jobs")["headers"]["id"])
            except Empty:
                if done.is_set() and len(got) < n and not any((tmp_path / "q").glob("*.msg")):
                    break
            except BaseException as e:  # noqa: BLE001 - the failure under test
                errors.append(e)
                break

    t = threading.Thread(target=consume)
    t.start()
    ch = _connection(tmp_path / "q").default_channel
    for i in range(n):
        ch._put("jobs", {"body": "x" * 2000, "headers": {"id": f"job{i}.r"}})
    done.set()
    t.join(60)
    assert not errors, errors[:1]
    assert sorted(got) == sorted(f"job{i}.r" for i in range(n))


def test_an_unreadable_message_is_dropped_not_fatal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ch = _connection(tmp_path / "q").default_channel
    (tmp_path / "q" / "0_damaged.jobs.msg").write_bytes(b"\x00{not json")
    ch._put("jobs", {"body": "x", "headers": {"id": "job2.abc"}})
    assert ch._get("jobs")["headers"]["id"] == "job2.abc"  # the next message, not a JSONDecodeError
    assert "dropped an unreadable message" in caplog.text
    with pytest.raises(Empty):
        ch._get("jobs")
