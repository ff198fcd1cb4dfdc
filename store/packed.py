"""Many small JSON records in one blob, each readable alone by a byte-range read.

Per-op option grids are ~50k records per model; one blob per record would swamp S3, one JSON
document would make the server parse megabytes to answer for one op.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

from .blobs import BlobStore


def pack(records: list[dict[str, Any]]) -> tuple[bytes, list[int]]:
    """-> (blob, offsets) where record i is blob[offsets[i]:offsets[i+1]], gzip-compressed JSON."""
    chunks, offsets, pos = [], [0], 0
    for rec in records:
        c = gzip.compress(json.dumps(rec, separators=(",", ":")).encode(), compresslevel=6, mtime=0)
        chunks.append(c)
        pos += len(c)
        offsets.append(pos)
    return b"".join(chunks), offsets


def read_record(store: BlobStore, key: str, offsets: list[int], i: int) -> dict[str, Any]:
    start, end = offsets[i], offsets[i + 1]
    return json.loads(gzip.decompress(store.get_range(key, start, end - start)))
