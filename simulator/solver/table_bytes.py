"""The solver's table as one blob, written when an analysis is stored and read back when a user asks for a solve:
reading it costs one decompression and a few array copies instead of parsing every per-op option record (10,000
gzipped JSON records and the bulk table's JSON: seconds on a 10,000-task model).

The arrays hold the same float64 values as the JSON documents (a float survives JSON exactly), and the bulk table
and per-op records handed to `simulator.totals.totals` are rebuilt from them as lists of Python floats, so the
totals of a proposal are the same to the digit as from the stored JSON."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from simulator.table_schema import old_charge, upgraded_head

from .table import METRIC_KEYS, SolverTable, assemble, combo_class, gc_paused, prepare

FORMAT = 1
_BIG = ("metrics", "combos", "units", "supported", "edges", "ops")  # bulk keys stored as arrays


class ClassRows(Mapping[str, Mapping[str, Any]]):
    """The per-op option records the totals rule reads (combos, metrics, unit), served from the table's arrays."""

    def __init__(self, table: SolverTable, units: Sequence[Sequence[int] | None]):
        self._t, self._units = table, units
        self._index = {o: i for i, o in enumerate(table.bulk["ops"])}
        self._cidx = {id(c): j for j, c in enumerate(table.classes)}

    def __getitem__(self, op: str) -> Mapping[str, Any]:
        r = self._t.rows[self._index[op]]
        rec: dict[str, Any] = {"op": op, "combos": r.combos}
        rec.update({k: r.m[:, j] for j, k in enumerate(METRIC_KEYS)})  # indexed as lists, read as floats
        units = self._units[self._cidx[id(r.cls)]]
        if units is not None:
            rec["unit"] = list(units)
        return rec

    def __iter__(self) -> Iterator[str]:
        return iter(self._t.bulk["ops"])

    def __len__(self) -> int:
        return len(self._t.bulk["ops"])


class _Rows(Sequence[Any]):
    """A bulk table's [op][preset] list of lists, read from an array row by row (no million Python floats built
    for a solve that reads one preset's column)."""

    def __init__(self, a: np.ndarray):
        self._a = a

    def __getitem__(self, i: Any) -> Any:
        return self._a[i]

    def __len__(self) -> int:
        return len(self._a)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._a if dtype is None else self._a.astype(dtype)


class _NamedRow(Sequence[str]):
    def __init__(self, idx: np.ndarray, names: list[str]):
        self._idx, self._names = idx, names

    def __getitem__(self, p: Any) -> Any:
        return self._names[int(self._idx[p])]

    def __len__(self) -> int:
        return len(self._idx)


class _Named(_Rows):
    """A bulk table of strings ([op][preset] combos or units) as indices into its distinct strings."""

    def __init__(self, idx: np.ndarray, names: list[str]):
        super().__init__(idx)
        self._names = names

    def __getitem__(self, i: Any) -> Any:
        return _NamedRow(self._a[i], self._names)


def _indexed(table: Sequence[Sequence[str]], width: int) -> tuple[list[str], np.ndarray]:
    """A table of strings as the distinct strings and each cell's index into them."""
    names: dict[str, int] = {}
    idx = np.array([names.setdefault(x, len(names)) for row in table for x in row], dtype=np.int32)
    return list(names), idx.reshape(len(table), width)


def table_bytes(bulk: Mapping[str, Any], per_op: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]
                ) -> bytes:
    """The solver's table of this option table (bulk + per-op records), as stored beside them."""
    t = prepare(bulk, per_op)
    ops, width = bulk["ops"], len(bulk["presets"])
    combo_names, combo_idx = _indexed(bulk["combos"], width)
    unit_table, unit_idx = _indexed(bulk["units"], width)
    classes = []
    for c in t.classes:
        e = per_op[ops[c.members[0]]] if isinstance(per_op, Mapping) else per_op[c.members[0]]
        classes.append({"combos": c.combos, "unit": list(e["unit"]) if "unit" in e else None})
    header = {"format": FORMAT, "bulk": {k: v for k, v in bulk.items() if k not in _BIG}, "ops": ops,
              "combo_names": combo_names, "unit_table": unit_table, "classes": classes}
    arrays = {"header": np.frombuffer(json.dumps(header, separators=(",", ":")).encode(), dtype=np.uint8),
              "metrics": np.array([bulk["metrics"][k] for k in METRIC_KEYS], dtype=np.float64).reshape(
                  len(METRIC_KEYS), len(ops), width),
              "combos": combo_idx, "units": unit_idx, "supported": np.array(bulk["supported"], dtype=bool).reshape(len(ops), width),
              "src": np.array(bulk["edges"]["src"], dtype=np.int64), "dst": np.array(bulk["edges"]["dst"], dtype=np.int64),
              "elements": np.array(bulk["edges"]["elements"], dtype=np.float64)}
    for j, c in enumerate(t.classes):
        arrays[f"m{j}"] = c.m
        arrays[f"members{j}"] = np.array(c.members, dtype=np.int64)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    return zlib.compress(buf.getvalue(), 1)  # level 1: most of the gain at a fraction of the time


def table_from_bytes(data: bytes) -> SolverTable:
    """The table `table_bytes` wrote, with its bulk table and per-op records (totals() reads them) rebuilt."""
    with gc_paused():  # tens of thousands of small lists and records, no cycles
        return _table_from_bytes(data)


def _npz_views(raw: bytes) -> Mapping[str, np.ndarray]:
    """The arrays of an uncompressed .npz (what np.savez writes) as read-only views of `raw`: np.load would copy
    every array and check its CRC (tens of MB on a 10,000-task model; zlib has already checked the blob)."""
    out: dict[str, np.ndarray] = {}
    buf = io.BytesIO(raw)
    with zipfile.ZipFile(buf) as zf:
        for info in zf.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                return np.load(io.BytesIO(raw), allow_pickle=False)
            # The member's data follows its local header: 30 bytes, then its name and extra field.
            name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
            start = info.header_offset + 30 + name_len + extra_len
            buf.seek(start)
            version = np.lib.format.read_magic(buf)
            if version not in ((1, 0), (2, 0)):
                return np.load(io.BytesIO(raw), allow_pickle=False)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(buf)
            if dtype.hasobject:
                raise ValueError("solver table with object arrays")
            count = int(np.prod(shape)) if shape else 1
            a = np.frombuffer(raw, dtype=dtype, count=count, offset=buf.tell())
            out[info.filename[:-4]] = a.reshape(shape, order="F" if fortran else "C")
    return out


def _table_from_bytes(data: bytes) -> SolverTable:
    z = _npz_views(zlib.decompress(data))
    header = json.loads(z["header"].tobytes())
    if header["format"] != FORMAT:
        raise ValueError(f"solver table format {header['format']}, expected {FORMAT}")
    bulk = dict(header["bulk"])
    bulk["ops"] = header["ops"]
    metrics = z["metrics"]
    charge = old_charge(bulk)  # a table stored under schema 1: op 0 carried the per-inference time
    if charge is not None:
        bulk.update(upgraded_head(bulk, charge))
        if charge > 0:
            metrics = metrics.copy()
            metrics[0, 0] = np.maximum(0.0, metrics[0, 0] - charge)  # latency (METRIC_KEYS[0]) of op 0
    bulk["metrics"] = {k: _Rows(metrics[j]) for j, k in enumerate(METRIC_KEYS)}
    bulk["combos"] = _Named(z["combos"], header["combo_names"])
    bulk["units"] = _Named(z["units"], header["unit_table"])
    bulk["supported"] = _Rows(z["supported"])
    bulk["edges"] = {"src": z["src"].tolist(), "dst": z["dst"].tolist(), "elements": z["elements"].tolist()}
    unit_names = bulk["unit_names"]
    classes = []
    for j, c in enumerate(header["classes"]):
        unit = [unit_names[u] for u in c["unit"]] if c["unit"] is not None else [unit_names[0]] * len(c["combos"])
        members, m = z[f"members{j}"].tolist(), z[f"m{j}"]
        if charge and 0 in members:
            m = m.copy()
            m[members.index(0), :, 0] = np.maximum(0.0, m[members.index(0), :, 0] - charge)
        classes.append(combo_class(c["combos"], unit, members, m))
    t = assemble(bulk, None, classes)
    t.per_op = ClassRows(t, [c["unit"] for c in header["classes"]])
    return t
