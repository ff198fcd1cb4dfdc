"""Converted .pt2 files kept by content (compiler/conversion_cache.py): the same file through the same converter is
converted once, a different file or converter environment is converted afresh, the archive is vetted on every
lookup, and the folder keeps to its size limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compiler import conversion_cache
from compiler.backends import pt2_onnx
from compiler.frontends.pt2 import Pt2Archive
from testkit import modelzoo


@pytest.fixture
def cache(tmp_path: Path) -> Any:
    before = conversion_cache.folder()  # the run's shared cache (tests/conftest.py): put back after
    conversion_cache.configure(tmp_path / "cache")
    yield tmp_path / "cache"
    conversion_cache.configure(before)


def _counting_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = pt2_onnx.run

    def run(child: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(child)
        return real(child, *args, **kwargs)

    monkeypatch.setattr(pt2_onnx, "run", run)
    return calls


def test_a_pt2_is_converted_once_and_vetted_on_every_lookup(cache: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_runs(monkeypatch)
    src = modelzoo.pt2_net_with_sources(tmp_path / "net.pt2")
    first = pt2_onnx.to_onnx(src, tmp_path / "a.onnx")
    again = pt2_onnx.to_onnx(src, tmp_path / "b.onnx")
    assert len(calls) == 1  # the second came from the cache
    assert again.read_bytes() == first.read_bytes() and len(list(cache.glob("*.out"))) == 1
    # The archive is vetted before the lookup: a file refused now is refused even though its conversion is kept.
    def refuse(self: Pt2Archive) -> None:
        raise pt2_onnx.ModelFormatError("refused by the vetting")

    monkeypatch.setattr(Pt2Archive, "vet_pickles", refuse)
    with pytest.raises(pt2_onnx.ModelFormatError, match="refused"):
        pt2_onnx.to_onnx(src, tmp_path / "c.onnx")
    assert not (tmp_path / "c.onnx").exists() and len(calls) == 1


def test_other_input_code_or_packages_are_converted_afresh(cache: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []

    def convert(out: Path, text: str) -> Any:
        made.append(text)
        out.write_text(text)
        return {"made": text}

    a, b = tmp_path / "a.pt2", tmp_path / "b.pt2"
    a.write_bytes(b"model a")
    b.write_bytes(b"model b")
    child = "compiler.backends.pt2_onnx:_convert_child"
    for src in (a, b, a):
        out = tmp_path / f"{src.stem}.out"
        got = conversion_cache.converted(child, src, out, None, lambda: convert(out, src.name))
        assert got == {"made": src.name} and out.read_text() == src.name
    assert made == ["a.pt2", "b.pt2"]
    # Another converter environment (a torch upgrade) or other conversion code: converted again.
    monkeypatch.setattr(conversion_cache, "_environment", lambda python: "torch-9.9")
    conversion_cache.converted(child, a, tmp_path / "x", None, lambda: convert(tmp_path / "x", "a2"))
    conversion_cache._code.cache_clear()
    monkeypatch.setattr(conversion_cache, "_code", lambda child: "changed converter code")
    conversion_cache.converted(child, a, tmp_path / "y", None, lambda: convert(tmp_path / "y", "a3"))
    assert made == ["a.pt2", "b.pt2", "a2", "a3"]


def test_a_failed_conversion_is_not_kept_and_the_folder_keeps_to_its_limit(cache: Path, tmp_path: Path) -> None:
    conversion_cache.configure(cache, limit_bytes=2500)
    try:
        child = "compiler.backends.pt2_onnx:_convert_child"
        src = tmp_path / "m.pt2"
        src.write_bytes(b"m")

        def fail() -> Any:
            raise pt2_onnx.ModelRunError("cannot convert")

        with pytest.raises(pt2_onnx.ModelRunError):
            conversion_cache.converted(child, src, tmp_path / "o", None, fail)
        assert not list((tmp_path / "cache").glob("*")) if (tmp_path / "cache").exists() else True
        for i in range(4):  # 1000 bytes each: the oldest go once past 2500
            s = tmp_path / f"m{i}.pt2"
            s.write_bytes(bytes([i]))
            out = tmp_path / f"o{i}"
            conversion_cache.converted(child, s, out, None, lambda out=out: out.write_bytes(b"x" * 1000) and {})
        kept = sorted((tmp_path / "cache").glob("*.out"))
        assert len(kept) == 2 and sum(p.stat().st_size for p in kept) <= 2500
        assert not list((tmp_path / "cache").glob("*.part"))
    finally:
        conversion_cache.configure(cache)  # the default limit again
