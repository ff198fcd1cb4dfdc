"""The embedded default's message broker: kombu's file transport, with each message written whole.

kombu's own `_put` creates the message file under its final name and then writes it, while `_get` takes any file
of that name without the writer's lock: a consumer polling at that moment reads an empty file, and the
JSONDecodeError it raises is "unrecoverable" to Celery, which stops the embedded worker for good (seen under load
in the fault suite: the next job then waited forever). Here a message is written under a name `_get` and the
reconciler's inventory (worker/broker_inventory.py) skip, then renamed into the queue in one step. A message that
still cannot be read (a file damaged on disk, or put there by hand) is logged and dropped rather than stopping the
worker: its job stays queued in the database, and the reconciler re-sends jobs the broker lost.
"""

from __future__ import annotations

import logging
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

SCHEME = "edgescope-files"
log = logging.getLogger(__name__)


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.partial")  # a dotfile: no queue's pattern matches it
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)  # atomic on one file system: a reader sees all of it or nothing
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str) -> Any:
        while True:  # ends with a message or kombu's Empty
            try:
                return super()._get(queue)
            except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError: the file is already taken off the queue
                log.error("dropped an unreadable message of queue %r (%s); the reconciler re-sends its job", queue, exc)


class Transport(filesystem.Transport):
    Channel = Channel


TRANSPORT_ALIASES[SCHEME] = f"{__name__}:Transport"
