"""Many small records in one blob, each readable alone by a byte-range read.

Per-op option grids are ~50k records per model; one blob per record would swamp S3, one JSON
document would make the server parse megabytes to answer for one op.

Two layouts. `pack`: each record gzip-compressed JSON (format 1, what analyses stored before format 2 read).
`pack_table` (format 2, the per-op option tables): the parts every op of a signature group shares (combos,
supported, resolved, unit, the combos' notes) are written once, in the index document as `classes`; each record
holds only its op's own cells, metrics as little-endian float64 behind a small JSON header, zlib-compressed. The
JSON of a 405-combo record's floats was most of a 100,000-task analysis' store stage (63 of its CPU seconds) and
123 MB; floats survive float64 bytes exactly, so a record reads back equal to what format 1 served.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .blobs import BlobStore

TABLE_FORMAT = 2
_CLASS_KEYS = ("combos", "supported", "resolved", "unit", "notes")
MAX_RECORD_BYTES = 64 * 2**20  # a record decompressing past this is not one we wrote


def pack(records: list[dict[str, Any]]) -> tuple[bytes, list[int]]:
    """-> (blob, offsets) where record i is blob[offsets[i]:offsets[i+1]], gzip-compressed JSON."""
    chunks, offsets, pos = [], [0], 0
    for rec in records:
        c = gzip.compress(json.dumps(rec, separators=(",", ":")).encode(), compresslevel=6, mtime=0)
        chunks.append(c)
        pos += len(c)
        offsets.append(pos)
    return b"".join(chunks), offsets


@dataclass(frozen=True, slots=True)
class OpCells:
    """One op's own part of its option table: `metrics` [len(metric names), combos] float64, `exportable` a bool
    per combo (or None where the target's exporter does not mark)."""

    op: str
    cls: int
    metrics: Sequence[np.ndarray]
    notes: list[str]
    exportable: np.ndarray | None = None


def pack_table(classes: list[dict[str, Any]], metric_names: Sequence[str], cells: Iterable[OpCells]
               ) -> tuple[bytes, dict[str, Any]]:
    """-> (blob, index document): format 2, record i at blob[offsets[i]:offsets[i+1]]."""
    chunks, offsets, ops, pos = [], [0], [], 0
    for c in cells:
        head = json.dumps({"op": c.op, "class": c.cls, "notes": c.notes, "exportable": c.exportable is not None},
                          separators=(",", ":")).encode()
        parts = [head, b"\0", *(np.ascontiguousarray(m, dtype="<f8").tobytes() for m in c.metrics)]
        if c.exportable is not None:
            parts.append(np.asarray(c.exportable, dtype=np.uint8).tobytes())
        z = zlib.compress(b"".join(parts), 1)
        chunks.append(z)
        ops.append(c.op)
        pos += len(z)
        offsets.append(pos)
    index = {"format": TABLE_FORMAT, "ops": ops, "offsets": offsets, "metrics": list(metric_names),
             "classes": [{k: cl[k] for k in _CLASS_KEYS} for cl in classes]}
    return b"".join(chunks), index


class CorruptRecord(ValueError):
    pass


@dataclass(frozen=True)
class PackIndex:
    """What reading one record needs: its offsets and, for format 2, the shared classes and metric names."""

    offsets: list[int]
    classes: list[dict[str, Any]] | None = None  # None: format 1 (gzip JSON records)
    metrics: tuple[str, ...] = ()

    @staticmethod
    def of(doc: dict[str, Any]) -> PackIndex:
        if doc.get("format") != TABLE_FORMAT:
            return PackIndex(doc["offsets"])
        classes = doc["classes"]
        for cl in classes:
            n = len(cl["combos"])
            if any(len(cl[k]) != n for k in ("supported", "resolved", "unit")):
                raise CorruptRecord("option table index: a class's columns differ in length")
        return PackIndex(doc["offsets"], classes, tuple(doc["metrics"]))

    def decode(self, data: bytes) -> dict[str, Any]:
        if self.classes is None:
            return json.loads(gzip.decompress(data))
        return _decode(self, data)


def _decode(ix: PackIndex, data: bytes) -> dict[str, Any]:
    """A format-2 record as the dict format 1 stored (same keys, order and values)."""
    assert ix.classes is not None
    try:
        d = zlib.decompressobj()
        raw = d.decompress(data, MAX_RECORD_BYTES)
        if d.unconsumed_tail or not d.eof:
            raise CorruptRecord("option record: truncated or too large")
        head_b, sep, body = raw.partition(b"\0")
        head = json.loads(head_b)
    except (zlib.error, ValueError) as e:
        raise CorruptRecord(f"option record unreadable: {e}") from None
    if not sep or not isinstance(head, dict) or not isinstance(head.get("class"), int) \
            or not 0 <= head["class"] < len(ix.classes) or not isinstance(head.get("notes"), list):
        raise CorruptRecord("option record: bad header")
    cl = ix.classes[head["class"]]
    n, m = len(cl["combos"]), len(ix.metrics)
    exp = bool(head.get("exportable"))
    if len(body) != m * n * 8 + (n if exp else 0):
        raise CorruptRecord("option record: cells do not match its class")
    values = np.frombuffer(body, dtype="<f8", count=m * n).reshape(m, n)
    rec: dict[str, Any] = {"op": head.get("op"), "combos": list(cl["combos"]), "supported": list(cl["supported"]),
                           "resolved": list(cl["resolved"]), "unit": list(cl["unit"])}
    rec.update({name: values[j].tolist() for j, name in enumerate(ix.metrics)})
    rec["notes"] = [*head["notes"], *cl["notes"]]
    if exp:
        rec["exportable"] = [b != 0 for b in body[m * n * 8:]]
    return rec


def read_record(store: BlobStore, key: str, index: PackIndex | list[int], i: int) -> dict[str, Any]:
    """Record i of a pack; `index`: its PackIndex (a plain offsets list: format 1)."""
    ix = index if isinstance(index, PackIndex) else PackIndex(index)
    start, end = ix.offsets[i], ix.offsets[i + 1]
    return ix.decode(store.get_range(key, start, end - start))
