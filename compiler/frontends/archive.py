"""Reading uploaded zip archives (`.mlpackage` zips, `.pt2`) without trusting them.

Every member is vetted before a byte is used: names must be relative paths that stay inside the
archive (no `/abs`, `C:`, `..` components, backslashes, NUL), no symlinks or other special files,
at most `max_members` entries, a total uncompressed size under `max_total_bytes` and each member's
compression ratio under `max_ratio` (zip bombs). Declared sizes can lie, so reads count the bytes
actually inflated and stop at the declared size + 1, and every byte inflated from the archive, by any
read, counts against one budget of `max_total_bytes` (reading a member twice counts twice).

Memory stays bounded whatever the archive holds: members are inflated as streams (`open`, `copy_to`),
and `read` (a member as bytes) refuses members declared larger than `max_read_bytes`; large members
(weights) are streamed or copied to a file in chunks. Failures are `ModelFormatError`s.

Limits default to the upload limit (`EDGESCOPE_MAX_UPLOAD_BYTES`, 512 MiB when unset) times
`EXPANSION`: a model file legitimately unpacks to about its own size (weights compress poorly).
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from compiler.graph import ModelFormatError

ZIP_MAGIC = b"PK\x03\x04"
EXPANSION = 4  # allowed uncompressed bytes per uploaded byte limit
DEFAULT_UPLOAD_BYTES = 512 * 1024 * 1024


def _upload_limit() -> int:
    try:
        return int(os.environ.get("EDGESCOPE_MAX_UPLOAD_BYTES", DEFAULT_UPLOAD_BYTES))
    except ValueError:
        return DEFAULT_UPLOAD_BYTES


@dataclass(frozen=True, slots=True)
class ZipLimits:
    max_total_bytes: int = 0  # 0 = EXPANSION x the upload limit
    max_ratio: float = 200.0  # uncompressed / compressed, per member (zeros compress ~1000x)
    max_members: int = 10_000
    # Largest member `read` returns as bytes (program JSON, specs, pickles); weights are streamed instead.
    max_read_bytes: int = 256 * 1024 * 1024

    def total(self) -> int:
        return self.max_total_bytes or EXPANSION * _upload_limit()


class SafeZip:
    """A vetted zip archive: `names()`, `chunks(name)`, `read(name)` and `copy_to(name, file)`."""

    def __init__(self, path: str | os.PathLike[str], limits: ZipLimits = ZipLimits(), label: str = "archive") -> None:
        self.label = label
        self.limits = limits
        try:
            self.zf = zipfile.ZipFile(path)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
            raise ModelFormatError(f"the {label} is not a readable zip archive: {e}") from None
        if len(infos) > limits.max_members:
            raise ModelFormatError(f"the {label} has {len(infos)} entries; at most {limits.max_members} are allowed")
        total = 0
        self.inflated = 0  # bytes inflated by every read so far (the byte budget)
        self.infos: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = check_member_name(info.filename, label)
            # Unix file type bits (0 when the zip tool wrote none, e.g. Python's writestr).
            ftype = stat.S_IFMT(info.external_attr >> 16)
            if ftype and ftype not in (stat.S_IFREG, stat.S_IFDIR):
                raise ModelFormatError(f"the {label} contains a symbolic link or special file ('{info.filename}'); "
                                       "only regular files and folders are accepted")
            if info.flag_bits & 0x1:
                raise ModelFormatError(f"the {label} contains an encrypted entry ('{info.filename}')")
            total += info.file_size
            if total > limits.total():
                raise ModelFormatError(f"the {label} unpacks to more than {limits.total()} bytes "
                                       "(a zip bomb, or a model over the upload limit)")
            if info.file_size > 1024 * 1024 and info.file_size > limits.max_ratio * max(info.compress_size, 1):
                raise ModelFormatError(f"the {label} entry '{info.filename}' expands {info.file_size / max(info.compress_size, 1):.0f}x "
                                       f"(limit {limits.max_ratio:.0f}x): refusing a likely zip bomb")
            if not info.is_dir():
                self.infos[name] = info

    def names(self) -> list[str]:
        return list(self.infos)

    def info(self, name: str) -> zipfile.ZipInfo:
        info = self.infos.get(name)
        if info is None:
            raise ModelFormatError(f"the {self.label} has no entry '{name}'")
        return info

    def chunks(self, name: str, chunk_bytes: int = 1 << 20) -> Iterator[bytes]:
        """The member's bytes, inflated as a stream, counted against the archive's byte budget."""
        info = self.info(name)
        seen = 0
        try:
            with self.zf.open(info) as fh:
                while chunk := fh.read(chunk_bytes):
                    seen += len(chunk)
                    self.inflated += len(chunk)
                    if seen > info.file_size:  # the header lied about the size
                        raise ModelFormatError(f"the {self.label} entry '{name}' is larger than its header says")
                    if self.inflated > self.limits.total():
                        raise ModelFormatError(f"reading the {self.label} inflated more than {self.limits.total()} "
                                               "bytes; refusing it")
                    yield chunk
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            if isinstance(e, ModelFormatError):
                raise
            raise ModelFormatError(f"the {self.label} entry '{name}' is corrupt: {e}") from None

    def read(self, name: str) -> bytes:
        """A small member as bytes; members declared over `max_read_bytes` are refused (stream them)."""
        info = self.info(name)
        if info.file_size > self.limits.max_read_bytes:
            raise ModelFormatError(f"the {self.label} entry '{name}' is {info.file_size} bytes, more than the "
                                   f"{self.limits.max_read_bytes} read into memory")
        return b"".join(self.chunks(name))

    def copy_to(self, name: str, dest: str | os.PathLike[str]) -> Path:
        """Inflate one member into the file `dest`, in chunks (for readers that need random access)."""
        with open(dest, "wb") as out:
            for chunk in self.chunks(name):
                out.write(chunk)
        return Path(dest)

    def close(self) -> None:
        self.zf.close()

    def __enter__(self) -> SafeZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_member_name(name: str, label: str = "archive") -> str:
    """The member's normalised relative path, or ModelFormatError for names that escape."""
    bad = (not name or "\\" in name or "\x00" in name or name.startswith("/")
           or (len(name) > 1 and name[1] == ":"))
    parts = PurePosixPath(name).parts
    if bad or any(p == ".." for p in parts):
        raise ModelFormatError(f"the {label} contains an unsafe path '{name}' (absolute or leaving the archive "
                               "with '..'); refusing to read it")
    return "/".join(p for p in parts if p not in (".", ""))


def extract(path: str | os.PathLike[str], dest: str | os.PathLike[str], limits: ZipLimits = ZipLimits(),
            label: str = "archive") -> Path:
    """Vet, then write every member under `dest` (which must not exist or be empty). For tools that
    need a directory, e.g. `coremltools.models.MLModel` on an unzipped `.mlpackage`."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with SafeZip(path, limits, label) as z:
        for name in z.names():
            target = (dest / name).resolve()
            if root not in target.parents:
                raise ModelFormatError(f"the {label} contains an unsafe path '{name}'")
            target.parent.mkdir(parents=True, exist_ok=True)
            z.copy_to(name, target)
    return dest
