"""Source files saved inside a `.pt2` by `edgescope export-pt2`, read back for the code browser.

Layout inside the torch.export archive (`<archive>/` is torch's top folder, e.g. `model/`):
  `<archive>/extra/edgescope_sources.json`     {"root": "<abs dir at export>", "files": ["net.py", "pkg/layers.py"]}
  `<archive>/extra/edgescope_sources/<path>`   the text of each file, `<path>` relative to root
Node locations of such a model (`compiler.frontends.pt2`) use the same relative paths, so
`Node.location.file` is the key for `read_source`. Only files listed in the manifest *and*
present in the archive are served; paths are vetted (no absolute paths, no `..`), the archive
is read through `SafeZip` (size limits), and nothing is extracted to disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from compiler.frontends.archive import ZIP_MAGIC, check_member_name
from compiler.graph import ModelFormatError

if TYPE_CHECKING:
    from compiler.frontends.pt2 import Pt2Archive

MAX_SOURCE_BYTES = 2 * 1024 * 1024  # per file served


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str  # relative, "/"-separated: the key for read_source and Node.location.file
    bytes: int


class SourceNotFound(KeyError):
    """The model has no source file at that path (or the path is not acceptable)."""


def list_sources(model_path: str | os.PathLike[str]) -> list[SourceFile]:
    """Source files stored in the model, sorted by path; [] for other formats or none saved."""
    with _Opened(model_path) as arc:
        if arc is None:
            return []
        return sorted((SourceFile(p, arc.zip.infos[arc.prefix + _member(p)].file_size) for p in _listed(arc)),
                      key=lambda f: f.path)


def read_source(model_path: str | os.PathLike[str], path: str) -> str:
    """Text of one stored source file (UTF-8, undecodable bytes replaced)."""
    try:
        rel = check_member_name(path, "source path")
    except ModelFormatError:
        raise SourceNotFound(path) from None
    with _Opened(model_path) as arc:
        if arc is None or rel not in _listed(arc):
            raise SourceNotFound(path)
        info = arc.zip.infos[arc.prefix + _member(rel)]
        if info.file_size > MAX_SOURCE_BYTES:
            raise SourceNotFound(f"{path} is larger than {MAX_SOURCE_BYTES} bytes")
        return arc.read(_member(rel)).decode("utf-8", "replace")


def _member(rel: str) -> str:
    from compiler.frontends.pt2 import SOURCES_DIR

    return SOURCES_DIR + rel


def _listed(arc: Pt2Archive) -> set[str]:
    from compiler.frontends.pt2 import SOURCES_MANIFEST

    if not arc.has(SOURCES_MANIFEST):
        return set()
    files = arc.json(SOURCES_MANIFEST).get("files", [])
    out = set()
    for f in files if isinstance(files, list) else []:
        try:
            rel = check_member_name(str(f), "source path")
        except ModelFormatError:
            continue  # a manifest naming '../x' lists nothing
        if arc.has(_member(rel)):
            out.add(rel)
    return out


class _Opened:
    """Context manager yielding the vetted Pt2Archive, or None when the file is not a .pt2 zip."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self.arc: Pt2Archive | None = None

    def __enter__(self) -> Pt2Archive | None:
        from compiler.frontends.pt2 import Pt2Archive

        with open(self.path, "rb") as fh:
            if fh.read(4) != ZIP_MAGIC:
                return None
        try:
            self.arc = Pt2Archive(self.path)
        except ModelFormatError:
            return None
        return self.arc

    def __exit__(self, *exc: object) -> None:
        if self.arc is not None:
            self.arc.close()
