"""Which analysis jobs the broker still holds a message for, so the reconciler can re-send the rest.

The database says what must run; the broker may have lost messages (Redis restarted without
persistence, a message dropped). Each message's Celery task id is `<job id>.<random>`
(`worker.celery_app.enqueue`), so the job is read from the message headers without decoding bodies.
Held means waiting in the queue, or delivered to a worker within the last `fresh_s` seconds and not yet
acknowledged (a worker that took a message and then died does not hold it). Returns None for a broker
whose contents cannot be listed: the reconciler then re-sends by age alone.

Kombu keeps Redis messages in a list per queue (plus one per priority step) and delivered ones in the
`unacked` hash, indexed by delivery time in `unacked_index`; the file transport keeps one file per
waiting message.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from edgescope.config import Settings

_PRIORITY_SEP = "\x06\x16"  # kombu.transport.redis: queue name + sep + priority step
_PRIORITY_STEPS = (3, 6, 9)


def job_of(message: Any) -> str | None:
    """The job id of a kombu message payload (dict or JSON text), or None."""
    try:
        if isinstance(message, (bytes, str)):
            message = json.loads(message)
        task_id = str(message["headers"]["id"])
    except (ValueError, KeyError, TypeError):
        return None
    return task_id.split(".", 1)[0] if "." in task_id else task_id


def held_jobs(settings: Settings, fresh_s: float) -> set[str] | None:
    try:
        if settings.broker_url.startswith(("redis://", "rediss://")):
            return _redis(settings, fresh_s)
        if settings.embedded_worker:
            return _files(settings.data_dir / "broker" / "queue")
    except Exception:  # noqa: BLE001 - broker unreachable now: nothing can be sent either
        return None
    return None


def _redis(settings: Settings, fresh_s: float) -> set[str]:
    import redis

    client = redis.Redis.from_url(settings.broker_url, socket_timeout=5, socket_connect_timeout=5)
    try:
        held: set[str] = set()
        for name in [settings.queue] + [f"{settings.queue}{_PRIORITY_SEP}{p}" for p in _PRIORITY_STEPS]:
            for raw in client.lrange(name, 0, -1):
                if (job := job_of(raw)) is not None:
                    held.add(job)
        since = time.time() - fresh_s
        fresh = {t.decode() if isinstance(t, bytes) else t
                 for t in client.zrangebyscore("unacked_index", since, "+inf")}
        if fresh:
            for tag, raw in zip(fresh, client.hmget("unacked", list(fresh))):
                if raw is None:
                    continue
                try:
                    payload = json.loads(raw)[0]
                except (ValueError, IndexError, TypeError):
                    continue
                if (job := job_of(payload)) is not None:
                    held.add(job)
        return held
    finally:
        client.close()


def _files(folder: Path) -> set[str]:
    held: set[str] = set()
    for f in folder.glob("*.msg"):
        try:
            job = job_of(f.read_bytes())
        except OSError:
            continue  # taken by the worker while we listed
        if job is not None:
            held.add(job)
    return held
