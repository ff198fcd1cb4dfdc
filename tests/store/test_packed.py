"""The per-op option pack (store/packed.py): format 2 reads back exactly what format 1 stored, and a damaged or
hostile record is refused with CorruptRecord, never decoded into something else."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from store.packed import MAX_RECORD_BYTES, CorruptRecord, OpCells, PackIndex, pack, pack_table
from worker.jobs import _pack_per_op


def _graph():  # type: ignore[no-untyped-def]
    """Convs, a Gemm (weighted: every combo, exportable masks) and three Relus sharing one signature."""
    from compiler.graph import Node
    from tests.simulator.helpers import act, conv_chain

    g = conv_chain()
    for i in range(3):
        x, y = g.outputs[0], f"relu_out{i}"
        g.values[y] = act(y, [1, 10])
        g.nodes.append(Node(f"relu{i}", f"relu{i}", "Relu", inputs=[x], outputs=[y]))
        g.outputs = [y]
    return g


def test_round_trip_equals_format_1() -> None:
    from simulator.sweep import sweep

    r = sweep(_graph(), "ort-cpu/host")
    per_op, ops = r.per_op, r.bulk["ops"]
    blob, index = _pack_per_op(per_op, ops)
    index = json.loads(json.dumps(index))  # as stored: a JSON document
    old_blob, old_offsets = pack(list(per_op))
    new, old = PackIndex.of(index), PackIndex(old_offsets)
    assert index["ops"] == ops and len(index["classes"]) < len(ops)  # the Relus share one class
    for i in range(len(ops)):
        a = old.decode(old_blob[old_offsets[i]:old_offsets[i + 1]])
        b = new.decode(blob[new.offsets[i]:new.offsets[i + 1]])
        assert b == per_op[i] == a and list(b) == list(a)
    assert "exportable" in per_op[0] and len(per_op[0]["combos"]) > 100  # a weighted task's whole table
    assert len(blob) < len(old_blob)


def _one(values: list[float], exportable: list[bool] | None = None) -> tuple[bytes, PackIndex]:
    cls = {"combos": ["a", "b"], "supported": [True, False], "resolved": ["a", "a"], "unit": [0, 1], "notes": []}
    cells = OpCells("op", 0, [np.array(values[:2]), np.array(values[2:])], ["n"],
                    None if exportable is None else np.array(exportable))
    blob, index = pack_table([cls], ["x", "y"], [cells])
    return blob, PackIndex.of(index)


def test_exact_floats_and_masks() -> None:
    values = [0.1 + 0.2, 1e-300, float("inf"), -0.0]
    blob, ix = _one(values, [True, False])
    rec = ix.decode(blob)
    assert rec["x"] + rec["y"] == values and rec["exportable"] == [True, False] and rec["notes"] == ["n"]
    assert str(rec["y"][1]) == "-0.0"


@pytest.mark.parametrize("damage", ["truncated", "garbage", "bomb", "class", "cells", "header", "no_separator"])
def test_hostile_records_refused(damage: str) -> None:
    blob, ix = _one([1.0, 2.0, 3.0, 4.0])
    raw = zlib.decompress(blob)
    head, _, body = raw.partition(b"\0")
    bad = {
        "truncated": blob[:-3],
        "garbage": b"\x00\x01not zlib at all",
        "bomb": zlib.compress(bytes(MAX_RECORD_BYTES + 1), 1),  # 64 MiB of zeros in ~300 KB
        "class": zlib.compress(head.replace(b'"class":0', b'"class":7') + b"\0" + body),
        "cells": zlib.compress(raw + b"\1"),
        "header": zlib.compress(b"[1,2]\0" + body),
        "no_separator": zlib.compress(head),
    }[damage]
    with pytest.raises(CorruptRecord):
        ix.decode(bad)


def test_index_with_inconsistent_class_refused() -> None:
    _, ix = _one([1.0, 2.0, 3.0, 4.0])
    doc = {"format": 2, "ops": ["op"], "offsets": ix.offsets, "metrics": ["x", "y"],
           "classes": [{"combos": ["a", "b"], "supported": [True], "resolved": ["a", "a"], "unit": [0, 1],
                        "notes": []}]}
    with pytest.raises(CorruptRecord):
        PackIndex.of(doc)
