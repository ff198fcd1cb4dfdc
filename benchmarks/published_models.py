"""Rebuild the architectures of the published measurements in code and compile them for a target.

    python benchmarks/published_models.py [--target ort-qnn/snapdragon-8g3] [--cache DIR] [model ...]

Each architecture of simulator/published/architectures.yaml is built from torchvision, timm or Hugging Face
transformers (a config in code, corpus/hf_models.py) with random weights
(`corpus.builders.build`, nothing downloaded; parameters that are exactly zero at initialisation randomised too:
`WEIGHTS`) at its published input size, exported with the TorchScript ONNX
exporter (opset 17), or for a LiteRT target converted to TFLite (torch.export, then litert-torch: what a .pt2
upload to that target goes through), then compiled for a target as the worker would
(`simulator.model.compile_for`). The ONNX file
(optimized by ONNX Runtime's basic level: shape chains folded; `optimized`), the compiled graphs and each preset's planned
latency (simulator/published/latency.py) are cached under --cache (default ~/.cache/edgescope/published), keyed by
architecture, size, target and code version, so a second device fit rebuilds and re-analyses nothing. Building runs
in a child process per model (a failing exporter fails that model only).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.published import Architecture, architectures  # noqa: E402

DEFAULT_CACHE = Path(os.environ.get("EDGESCOPE_PUBLISHED_CACHE", Path.home() / ".cache/edgescope/published"))


# The built files' weights: random, with the parameters that are exactly zero at initialisation randomised too
# (corpus.builders.randomise_zero_weights; else converters fold zero-initialised branches away). Part of every cached
# file's and plan's name: files built with those zeros are not read.
WEIGHTS = "nz"


def stem(a: Architecture) -> str:
    return f"{a.stem}.{WEIGHTS}"


def onnx_path(a: Architecture, cache: Path) -> Path:
    return cache / f"{stem(a)}.onnx"


def tflite_path(a: Architecture, cache: Path) -> Path:
    return cache / f"{stem(a)}.tflite"


def build_module(source: str, name: str, shape: tuple[int, ...], reparam: bool = False) -> Any:
    """The architecture as `corpus.builders.build` makes it (random weights), with its exactly-zero initial weights
    randomised (`WEIGHTS`): a corpus.builders.Built."""
    import corpus  # noqa: F401  (torchvision's Python side on the CPU build of torch: corpus/torchvision_compat.py)
    from corpus.builders import build, randomise_zero_weights
    from corpus.models import Entry

    # reparam: the deploy form the publishers measured (MobileOne, RepViT and FastViT fuse their branches first)
    built = build(Entry(f"{source}/{name}", "published", source, name, tuple(shape), reparam=reparam))
    randomise_zero_weights(built.module)
    return built


def _build_child(source: str, name: str, shape: tuple[int, ...], out: str, reparam: bool = False) -> None:
    """Write the architecture's ONNX export (`out` ends in .onnx), or its TFLite file (.tflite: torch.export to a
    .pt2, then litert-torch, as a .pt2 upload to a LiteRT target is converted)."""
    from corpus.exporters import convert, export_torch

    built = build_module(source, name, shape, reparam)
    if out.endswith(".tflite"):
        pt2 = Path(out).with_suffix(".pt2")
        if not pt2.exists():
            export_torch(built, "pt2", Path(f"{pt2}.part"))
            Path(f"{pt2}.part").rename(pt2)
        convert("tflite", pt2, Path(f"{out}.part.tflite"), timeout_s=3000)
        Path(f"{out}.part.tflite").rename(out)
        return
    tmp = Path(out + ".part")
    export_torch(built, "ts", tmp)
    tmp.rename(out)


# The `optimized` file's suffix: names what it is, so a change of the passes is a new cache entry.
OPTIMIZED = ".basic-nomatmuladd"


def optimized(path: Path) -> Path:
    """The export after ONNX Runtime's basic (semantics-preserving) graph optimizations at its static input shape:
    Shape / Constant / Identity chains folded, as every device compiler does before placing ops (the TorchScript
    export of timm models computes reshapes from Shape ops, which would otherwise count as tasks). Except
    MatMulAddFusion: it turns a Linear on a 3-D / 4-D activation (MatMul + Add) into Reshape + Gemm + Reshape, which
    neither the uploaded model nor AI Hub's quantized (QDQ) models have, and where the QNN EP places the two
    differently (snapdragon-8g3.yaml `quantized_ops_except`)."""
    import onnxruntime as ort

    out = path.with_suffix(f"{OPTIMIZED}.onnx")
    if not out.exists():
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.optimized_model_filepath = str(out.with_suffix(".part"))
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"], disabled_optimizers=["MatMulAddFusion"])
        out.with_suffix(".part").rename(out)
    return out


def _build(a: Architecture, out: Path, timeout_s: float) -> Path:
    """`out` (an ONNX or TFLite file of the architecture) built once in a child process."""
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.published_models import _build_child; "
            f"_build_child({a.source!r}, {a.name!r}, {a.shape!r}, {str(out)!r}, {a.reparam!r})")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
    if p.returncode != 0 or not out.exists():
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"{a.model}: build failed: {tail[0]}")
    return out


def is_built(a: Architecture, target: str, cache: Path) -> bool:
    """Whether the file `target` compiles (`compiled`) is built already."""
    from compiler.vocabulary.targets import get_target

    return (tflite_path(a, cache) if get_target(target).export == "tflite" else onnx_path(a, cache)).exists()


def build_onnx(a: Architecture, cache: Path, timeout_s: float = 900) -> Path:
    """The architecture's ONNX file, exported once in a child process, then optimized (`optimized`)."""
    return optimized(_build(a, onnx_path(a, cache), timeout_s))


def build_tflite(a: Architecture, cache: Path, timeout_s: float = 3600) -> Path:
    """The architecture's TFLite file (litert-torch, as LiteRT targets convert a .pt2 upload), built once."""
    return _build(a, tflite_path(a, cache), timeout_s)


@functools.lru_cache(maxsize=None)
def code_version(*packages: str) -> str:
    """A hash of the Python sources of `packages`: what a cached result was computed by. Read once per process: a
    run keys every result by the code it imported, even if the sources change while it runs (read per call, a run
    that outlives an edit would store plans of the code it imported under the edited code's key)."""
    h = hashlib.sha256()
    for pkg in packages:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            h.update(f.relative_to(ROOT).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def compiled(a: Architecture, target: str, cache: Path) -> tuple[Any, Any]:
    """(source graph, compiled graph) of the architecture for `target`, cached per backend (the task graph is the
    backend's: ort-qnn's two Snapdragon targets share it) and version of compiler/. A LiteRT target compiles the
    architecture's TFLite file (`build_tflite`), the others its ONNX export."""
    from compiler.vocabulary.targets import get_target
    from simulator.model import compile_for

    backend = target.split("/")[0]
    tflite = get_target(target).export == "tflite"
    file = tflite_path(a, cache).name if tflite else f"{onnx_path(a, cache).stem}{OPTIMIZED}"
    key = cache / f"{file}.{backend}.{code_version('compiler')}.pkl"
    if key.exists():
        return pickle.loads(key.read_bytes())
    path = build_tflite(a, cache) if tflite else build_onnx(a, cache)
    src, comp, _ = compile_for(path, target, cache / "work" / key.stem)
    key.write_bytes(pickle.dumps((src, comp)))
    return src, comp


# The presets the published precisions map to (benchmarks/device_fit.py PRESETS), planned for every model at once.
PLANNED_PRESETS = ("fp32", "fp16", "int8-static", "int8-dynamic")
# Core ML targets also plan the presets of coremltools' palettization and pruning tables (lut2-8, sparse50/75/90).
COREML_PRESETS = ("palettize-2bit", "palettize-4bit", "palettize-6bit", "palettize-8bit", "prune-50", "prune-75",
                  "prune-90")


def planned_presets(backend: str) -> tuple[str, ...]:
    return PLANNED_PRESETS + (COREML_PRESETS if backend == "coreml" else ())


def plans(a: Architecture, target: str, cache: Path) -> dict[str, Any]:
    """{preset: LatencyPlan} of the architecture on `target` (simulator/published/latency.py), cached on disk keyed
    by architecture, input size, target, the code (compiler/, simulator/) and the profile's structure: a re-fit
    reads them and rebuilds nothing. A new plan is checked against the sweep's total at the profile's figures."""
    from compiler.vocabulary.targets import get_target
    from simulator.profiles import load_profile
    from simulator.published.latency import check_against_sweep, plan_latency

    t = get_target(target)
    hw = load_profile(t.profile, t.backend)
    presets = planned_presets(t.backend)
    version = hashlib.sha256((code_version("compiler", "simulator") + hw.structure()
                              + ",".join(presets[len(PLANNED_PRESETS):])).encode()).hexdigest()[:12]
    key = cache / "plans" / f"{stem(a)}.{target.replace('/', '_')}.{version}.pkl"
    if key.exists():
        return pickle.loads(key.read_bytes())
    src, comp = compiled(a, target, cache)
    out = {p: plan_latency(comp, t, hw, p, source=src) for p in presets}
    for p, lp in out.items():
        diff = check_against_sweep(lp, comp, hw, source=src)
        if diff > 1e-6:
            raise RuntimeError(f"{a.model} {p}: planned latency differs from the sweep's by {diff:.2e}")
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_bytes(pickle.dumps(out))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="ort-qnn/snapdragon-8g3")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("models", nargs="*", help="model ids (default: every architecture)")
    a = ap.parse_args(argv)
    archs = architectures()
    for m in a.models or list(archs):
        try:
            _, comp = compiled(archs[m], a.target, a.cache)
            planned = plans(archs[m], a.target, a.cache)
            print(f"{m}: {len(comp.nodes)} tasks, planned {', '.join(planned)}", flush=True)
        except Exception as e:  # noqa: BLE001  (report and go on: one model's exporter failing is data)
            print(f"{m}: FAILED {e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
