"""The real-world corpus (corpus/): its registry is sound, a failed export is a record not a crash, real
files are fetched only with their recorded hashes, and a fast slice of it goes through the real pipeline
(built here, no
network, into a per-machine cache kept between runs) analysed, without silent zero work, at the file's size.

The whole corpus, with timing, is benchmarks/realworld.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from pathlib import Path

import pytest

from corpus import cache
from corpus.build import build_one
from corpus.exporters import EXPORTERS
from corpus.models import BY_ID, ENTRIES, FAMILIES, SLOW_SLICE, TEST_SLICE, Entry, select
from corpus.wheels import HELD_OUT_PACKAGES, REAL_FILES, RealFile, fetch
from testkit.live import QUICK_ROUNDS


def test_registry_covers_sixty_architectures_with_known_exports() -> None:
    archs = {(e.source, e.name) for e in ENTRIES}
    assert len(archs) >= 60
    assert len({e.id for e in ENTRIES}) == len(ENTRIES)
    assert {e.family for e in ENTRIES} <= set(FAMILIES)
    for e in ENTRIES:
        assert {"dynamo", "ts"} <= set(e.exports) <= set(EXPORTERS), e.id
        for x in e.exports:  # a conversion's input is exported too
            assert EXPORTERS[x].needs in (None, *e.exports), (e.id, x)
    for i, x in TEST_SLICE + SLOW_SLICE:
        assert x in BY_ID[i].exports
    assert len(select(exporters=["tflite"])) >= 10
    assert {x for e in ENTRIES for x in e.exports} == set(EXPORTERS)


def test_real_files_are_pinned_and_not_held_out() -> None:
    assert len(REAL_FILES) >= 10
    assert len({r.id for r in REAL_FILES}) == len(REAL_FILES)
    for r in REAL_FILES:
        assert r.package not in HELD_OUT_PACKAGES
        assert not re.search(r"silero|ppocr|paddle|mediapipe", r.member, re.I), r.member
        assert re.fullmatch(r"[0-9a-f]{64}", r.wheel_sha256) and re.fullmatch(r"[0-9a-f]{64}", r.member_sha256)
        assert r.wheel.startswith(r.package.replace("-", "_") + "-" + r.version), r.wheel
        assert r.license and r.suffix in (".onnx", ".tflite", ".mlmodel")


def _wheel(tmp: Path, member: str, data: bytes) -> tuple[Path, str]:
    whl = tmp / "wheels" / "demo-1.0-py3-none-any.whl"
    whl.parent.mkdir(parents=True)
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr(member, data)
    return whl, hashlib.sha256(whl.read_bytes()).hexdigest()


def test_real_file_extracted_only_when_both_hashes_match(tmp_path: Path) -> None:
    data = b"not really a model"
    _, wheel_sha = _wheel(tmp_path, "demo/m.onnx", data)
    good = RealFile("demo/m", "demo", "1.0", "demo-1.0-py3-none-any.whl", wheel_sha, "demo/m.onnx",
                    hashlib.sha256(data).hexdigest(), "MIT", "mlp", "test")
    rec = fetch(good, tmp_path)
    assert rec.status == "built" and (tmp_path / rec.path).read_bytes() == data

    bad_member = RealFile(**{**good.__dict__, "id": "demo/other", "member_sha256": "0" * 64})
    rec = fetch(bad_member, tmp_path)
    assert rec.status == "failed" and "sha256" in rec.reason and not (tmp_path / "real" / "demo__other.onnx").exists()

    bad_wheel = RealFile(**{**good.__dict__, "id": "demo/third", "wheel_sha256": "1" * 64})
    rec = fetch(bad_wheel, tmp_path)
    assert rec.status == "failed" and "is not the recorded" in rec.reason
    assert not list((tmp_path / "real").glob("*.part"))


def test_a_failed_extraction_leaves_the_file_in_place_alone(tmp_path: Path) -> None:
    """Two builds on one cache: a file another build put in place is not overwritten, then deleted, by a check that
    fails here (the member is extracted beside it and renamed only once its hash matches)."""
    data = b"not really a model"
    _, wheel_sha = _wheel(tmp_path, "demo/m.onnx", data)
    mismatched = RealFile("demo/m", "demo", "1.0", "demo-1.0-py3-none-any.whl", wheel_sha, "demo/m.onnx", "0" * 64,
                          "MIT", "mlp", "test")
    placed = tmp_path / "real" / "demo__m.onnx"
    placed.parent.mkdir()
    placed.write_bytes(b"another build's file")
    rec = fetch(mismatched, tmp_path)
    assert rec.status == "failed" and "sha256" in rec.reason
    assert placed.read_bytes() == b"another build's file" and not list(placed.parent.glob("*.part"))


def test_failed_export_is_a_one_line_record(tmp_path: Path) -> None:
    broken = Entry("torch/nothing", "mlp", "torch", "no-such-builder", (1, 4))
    rec = build_one(broken, "ts", tmp_path, 60)
    assert rec.status == "failed" and rec.reason == "ValueError: unknown torch builder 'no-such-builder'"
    assert "\n" not in rec.reason and not list(tmp_path.rglob("*.onnx"))
    # A conversion whose input export failed says so.
    cache.save(tmp_path, cache.Record(broken.id, "pt2", "k", "failed", reason="ValueError: x"))
    rec = build_one(broken, "tflite", tmp_path, 60)
    assert rec.status == "failed" and "needs the pt2 export, which failed: ValueError: x" in rec.reason


_NOT_EXPORT_CODE = ("models.py", "wheels.py", "check.py")


@pytest.fixture(scope="session")
def slice_cache() -> Path:
    """The test slice, exported in this process (each module built once) into this machine's test cache,
    `~/.cache/edgescope/test-corpus/<hash of corpus/'s export code>/` (EDGESCOPE_TEST_CORPUS_CACHE overrides): a later
    run re-exports only what is not current there (corpus.cache.current: same entry, exporter and package versions),
    as `make corpus` does; exporting the slice took 2-4 min of a 2-core machine's test run. Failures are retried.
    The hash leaves out the registry, the wheels' files and the analysis (`_NOT_EXPORT_CODE`): each record's key holds
    its entry's description, so a new corpus entry re-exports nothing here."""
    from corpus.build import _key
    from corpus.builders import build

    code = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(Path(cache.__file__).parent.glob("*.py"))
                                   if f.name not in _NOT_EXPORT_CODE))
    root = Path(os.environ.get("EDGESCOPE_TEST_CORPUS_CACHE") or Path.home() / ".cache" / "edgescope" / "test-corpus")
    root = root / code.hexdigest()[:16]
    modules: dict[str, object] = {}
    for entry_id, x in TEST_SLICE:
        e = BY_ID[entry_id]
        rec = cache.load(root, entry_id, x)
        if cache.current(root, rec, _key(e, x)) and rec is not None and rec.status == "built":
            continue
        if entry_id not in modules:
            modules[entry_id] = build(e)
        cache.save(root, build_one(e, x, root, 300, modules[entry_id]))
    return root


@pytest.mark.slow  # the slice's exports (minutes on a new machine) and analyses: its file starts early
@pytest.mark.parametrize(("entry_id", "exporter"), TEST_SLICE, ids=[f"{i}:{x}" for i, x in TEST_SLICE])
def test_slice_is_analysed_without_silent_zeros_at_file_size(slice_cache: Path, entry_id: str, exporter: str) -> None:
    from corpus.check import analyse

    rec = cache.load(slice_cache, entry_id, exporter)
    assert rec is not None and rec.status == "built", rec and rec.reason
    # No ONNX export dry runs, no rounds of the fast CPU time and no pause before a noisy round is timed again:
    # nothing here reads them (tests/compiler and benchmarks/exports.py check exports,
    # tests/server/test_summary_latency.py the fast CPU time).
    row = analyse(slice_cache / rec.path, rec.inputs, None, runs=3, warmup=1, measure_cpu=False, check_exports=False,
                  **QUICK_ROUNDS)
    assert row["status"] == "analysed", row.get("error")
    if row["target"].startswith("coreml/"):  # Core ML does not run on Linux: predicted on the device only
        assert row["measured_ms"] is None and row["predicted_ms"] > 0 and "as uploaded" in row["note"]
    else:
        assert row["measured_ms"] > 0 and row["predicted_ms"] > 0
        # each task's prediction beside its profile, where ORT profiles tasks (what a miss is made of, by kind)
        assert not row["target"].startswith("ort-") or any(t[4] is not None for t in row["per_task"])
    assert row["per_task"] and all(len(t) == 5 and t[3] >= 0 for t in row["per_task"]), row["per_task"][:3]
    assert row["zero_tasks"] == 0, row["zero_examples"]
    assert row["unknown_tasks"] == 0, row["unknown_examples"]
    assert abs(row["predicted_size"] / row["runs_bytes"] - 1) <= 0.05, (row["predicted_size"], row["runs_bytes"])


def test_torchvision_ops_check_compiles_when_a_detector_is_traced() -> None:
    """Tracing a torchvision detector scripts batched_nms, which compiles torchvision's "are the compiled ops there"
    check: the stand-in the corpus installs must be a function TorchScript compiles (a lambda failed every whole
    detector's TorchScript export)."""
    import torch
    import torchvision.ops

    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [50.0, 50.0, 60.0, 60.0]])
    scores, idxs = torch.tensor([0.9, 0.8, 0.7]), torch.tensor([0, 0, 1])

    def keep(b: torch.Tensor, s: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return torchvision.ops.batched_nms(b, s, i, 0.5)

    traced = torch.jit.trace(keep, (boxes, scores, idxs))
    assert traced(boxes, scores, idxs).tolist() == [0, 2]
