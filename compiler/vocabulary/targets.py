"""Targets = backend + hardware profile. The one registry of target names."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.vocabulary.options import OptionError


class UnknownTarget(OptionError):
    """A target name that is not in the registry. Message is user-facing."""


@dataclass(frozen=True, slots=True)
class Target:
    name: str  # "<backend>/<profile short name>"
    backend: str  # "ort-cpu", "litert-cpu", "coreml", "ort-qnn", "litert", "litert-qnn", "ort-xnnpack"
    profile: str  # file stem in simulator/hardware/
    float_format: str  # what "float" activations mean on this backend
    export: str  # "onnx" | "coreml" | "tflite" | "" (no exporter on this machine): compiler/optimize/export.py
    measurable: bool  # this machine can run and time it
    sparse_storage: bool  # the exported file stores pruned weights compactly
    description: str


_TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("ort-cpu/host", "ort-cpu", "host-cpu", "fp32", "onnx", True, False,
           "ONNX Runtime CPU EP on this machine, 1 intra-op thread, default graph optimizations"),
    # Measured whole-model only (LiteRT's Python API has no op profiler): per-op figures are host-cpu
    # predictions scaled to the measured total. The host-cpu efficiencies are ORT's (calibrated with ORT).
    Target("litert-cpu/host", "litert-cpu", "host-cpu", "fp32", "tflite", True, False,
           "LiteRT interpreter (XNNPACK) on this machine, 1 thread"),
    Target("coreml/apple-a17", "coreml", "apple-a17", "fp16", "coreml", False, True,
           "Core ML ML Program on iPhone 15 Pro (A17 Pro): ANE, GPU, CPU as Core ML places ops"),
    # The device of the mobile-architecture papers' Core ML latency tables (simulator/published/coreml.csv).
    Target("coreml/apple-a14", "coreml", "apple-a14", "fp16", "coreml", False, True,
           "Core ML ML Program on iPhone 12 (A14 Bionic): ANE, GPU, CPU as Core ML places ops"),
    Target("ort-qnn/snapdragon-8g3", "ort-qnn", "snapdragon-8g3", "fp16", "onnx", False, False,
           "ONNX Runtime QNN EP (HTP) on Snapdragon 8 Gen 3, CPU EP fallback"),
    Target("ort-qnn/snapdragon-8-elite", "ort-qnn", "snapdragon-8-elite", "fp16", "onnx", False, False,
           "ONNX Runtime QNN EP (HTP) on Snapdragon 8 Elite (Galaxy S25), CPU EP fallback"),
    # LiteRT with Qualcomm's QNN delegate (AI Hub's "tflite" runtime): profiles of its own, since AI Hub's TFLite jobs
    # show other per-run costs and placement than the ORT QNN EP's on the same chip.
    Target("litert-qnn/snapdragon-8g3", "litert-qnn", "snapdragon-8g3-litert-qnn", "fp16", "tflite", False, False,
           "LiteRT with the QNN delegate (HTP) on Snapdragon 8 Gen 3 (Galaxy S24), LiteRT CPU fallback"),
    Target("litert-qnn/snapdragon-8-elite", "litert-qnn", "snapdragon-8-elite-litert-qnn", "fp16", "tflite", False,
           False, "LiteRT with the QNN delegate (HTP) on Snapdragon 8 Elite (Galaxy S25), LiteRT CPU fallback"),
    Target("litert/pixel-8", "litert", "pixel-8", "fp32", "tflite", False, False,
           "LiteRT on Pixel 8 (Tensor G3): GPU delegate, XNNPACK CPU fallback"),
    Target("ort-xnnpack/rpi5", "ort-xnnpack", "rpi5", "fp32", "onnx", False, False,
           "ONNX Runtime XNNPACK EP on Raspberry Pi 5 (Cortex-A76, 1 thread), CPU EP fallback"),
    # ORT EPs predicted on existing device profiles; their op lists: `execution_providers:` in the YAML.
    Target("ort-coreml/apple-a17", "ort-coreml", "apple-a17", "fp16", "onnx", False, False,
           "ONNX Runtime CoreML EP (ML Program) on iPhone 15 Pro (A17 Pro): supported ops on ANE/GPU as "
           "Core ML places them, the rest on the CPU EP"),
    Target("ort-nnapi/pixel-8", "ort-nnapi", "pixel-8", "fp32", "onnx", False, False,
           "ONNX Runtime NNAPI EP on Pixel 8 (Tensor G3): NNAPI-supported ops on the accelerator, "
           "the rest on the CPU EP"),
]}
EP_TARGETS_PENDING = {n: _TARGETS[n] for n in ("ort-coreml/apple-a17", "ort-nnapi/pixel-8")}  # kept for old imports

_DEFAULTS: dict[str, list[str]] = {
    "onnx": ["ort-cpu/host", "coreml/apple-a17", "ort-qnn/snapdragon-8g3", "ort-xnnpack/rpi5",
             "ort-coreml/apple-a17", "ort-nnapi/pixel-8"],
    "tflite": ["litert-cpu/host", "litert/pixel-8"],
    "coreml": ["coreml/apple-a17"],
    # .pt2 is converted to ONNX (ORT targets, the EPs' predicted on the converted file), to Core ML and to TFLite.
    "pt2": ["ort-cpu/host", "coreml/apple-a17", "ort-qnn/snapdragon-8g3", "ort-xnnpack/rpi5",
             "ort-coreml/apple-a17", "ort-nnapi/pixel-8", "litert-cpu/host", "litert/pixel-8"],
}


# Model formats each exporter family's backends compile. A .pt2 is converted for every target (to ONNX, Core ML
# or TFLite); Core ML targets also predict an ONNX model on its own graph; LiteRT runs only TFLite flatbuffers
# and ONNX Runtime only ONNX.
_FORMATS_BY_EXPORT: dict[str, tuple[str, ...]] = {
    "onnx": ("onnx", "pt2"), "tflite": ("tflite", "pt2"), "coreml": ("coreml", "onnx", "pt2"),
}


class TargetFormatError(OptionError):
    """A target that cannot run the model's format. Message is user-facing and lists the format's targets."""


def list_targets() -> list[str]:
    return list(_TARGETS)


def runs_format(target: str, model_format: str) -> bool:
    formats = _FORMATS_BY_EXPORT.get(get_target(target).export)
    return formats is None or model_format in formats


def targets_for_format(model_format: str) -> list[str]:
    return [name for name in _TARGETS if runs_format(name, model_format)]


def check_targets_format(targets: list[str] | tuple[str, ...], model_format: str) -> None:
    """Raise TargetFormatError naming the targets that cannot run `model_format` and those that can."""
    bad = [t for t in targets if not runs_format(t, model_format)]
    if bad:
        can = ", ".join(targets_for_format(model_format)) or "none"
        raise TargetFormatError(f"target{'s' if len(bad) > 1 else ''} {', '.join(bad)} cannot run a {model_format} "
                                f"model; the targets for {model_format} models are: {can}")


def get_target(name: str) -> Target:
    t = _TARGETS.get(name)
    if t is None:
        raise UnknownTarget(f"unknown target {name!r}; known targets: {', '.join(_TARGETS)}")
    return t


def default_targets(model_format: str) -> list[str]:
    """Targets the worker sweeps for an upload of this format (first = the one measured here if any)."""
    return list(_DEFAULTS.get(model_format, ["ort-cpu/host"]))
