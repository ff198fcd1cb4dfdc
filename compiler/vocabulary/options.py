"""Option names: combos (`in/out/kernel/sparsity`) and presets (`int8-static`, `prune-50+fp16`, ...).

Presets say "float" where the backend's own float format is meant (fp32 on ORT CPU, fp16 on Core ML),
so one name means the natural thing on each backend; the bulk table lists each preset as resolved.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.vocabulary.formats import ACTIVATION_FORMATS, KERNEL_FORMATS, SPARSITIES


class OptionError(ValueError):
    """A bad option name or an impossible combination. The message is user-facing."""


@dataclass(frozen=True, slots=True)
class Combo:
    input: str
    output: str
    kernel: str  # "-" for ops without weights
    sparsity: int

    @property
    def name(self) -> str:
        return f"{self.input}/{self.output}/{self.kernel}/{self.sparsity}"


def parse_combo(text: str, has_kernel: bool = True) -> Combo:
    parts = text.strip().split("/")
    if len(parts) != 4:
        raise OptionError(f"{text!r} is not a combo; write input/output/kernel/sparsity, e.g. int8/int8/int8/50")
    inp, out, kernel, sp = parts
    for role, f in (("input", inp), ("output", out)):
        if f not in ACTIVATION_FORMATS:
            hint = " (a weight format)" if f in KERNEL_FORMATS else ""
            raise OptionError(f"{role} format {f!r}{hint} is not an activation format; "
                              f"use one of {', '.join(ACTIVATION_FORMATS)}")
    try:
        sparsity = int(sp)
    except ValueError:
        raise OptionError(f"sparsity {sp!r} is not a number; use one of {SPARSITIES}") from None
    if sparsity not in SPARSITIES:
        raise OptionError(f"sparsity {sparsity} is not offered; use one of {', '.join(map(str, SPARSITIES))}")
    if not has_kernel:
        if kernel not in ("-", "") or sparsity != 0:
            raise OptionError(f"this op has no weights, so its kernel must be '-' and sparsity 0 "
                              f"(write {inp}/{out}/-/0)")
        return Combo(inp, out, "-", 0)
    if kernel not in KERNEL_FORMATS:
        raise OptionError(f"kernel format {kernel!r} is unknown; use one of {', '.join(KERNEL_FORMATS)}")
    return Combo(inp, out, kernel, sparsity)


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    activation: str  # "float" | "fp32" | "fp16" | "int8"
    kernel: str  # "float" | a kernel format
    sparsity: int
    description: str
    dynamic: bool = False  # activations quantized on the fly inside the op (ORT dynamic quantization)

    def resolve(self, float_format: str, has_kernel: bool) -> Combo:
        act = float_format if self.activation == "float" else self.activation
        if not has_kernel:
            return Combo(act, act, "-", 0)
        kernel = (act if act != "int8" else float_format) if self.kernel == "float" else self.kernel
        return Combo(act, act, kernel, self.sparsity)


_BASE: dict[str, Preset] = {p.name: p for p in [
    Preset("fp32", "fp32", "fp32", 0, "everything in fp32 (the baseline)"),
    Preset("fp16", "fp16", "fp16", 0, "activations and weights in fp16"),
    Preset("int8-dynamic", "float", "int8", 0,
           "int8 weights; activations stay float (ORT quantizes them on the fly per inference; "
           "Core ML and others: weight-only int8, decompressed)", dynamic=True),
    Preset("int8-static", "int8", "int8", 0, "int8 weights and activations (QDQ, calibrated ranges)"),
    Preset("int4-weights", "float", "int4", 0, "4-bit block-quantized weights, float activations"),
    *[Preset(f"palettize-{b}bit", "float", f"lut{b}", 0,
             f"weights replaced by {b}-bit indices into a {2 ** b}-entry k-means table") for b in (1, 2, 4, 6, 8)],
    *[Preset(f"prune-{s}", "float", "float", s, f"{s}% of each weight tensor (smallest magnitude) set to zero")
      for s in (25, 50, 75, 90)],
]}

# Presets listed in the bulk table: every base preset plus pruning combined with each compression.
BULK_PRESETS: tuple[str, ...] = (
    "fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights",
    "palettize-2bit", "palettize-4bit", "palettize-6bit", "palettize-8bit",
    "prune-25", "prune-50", "prune-75", "prune-90",
    *[f"prune-{s}+{p}" for s in (25, 50, 75, 90)
      for p in ("fp16", "int8-dynamic", "int8-static", "int4-weights", "palettize-4bit")],
)


def parse_preset(name: str) -> Preset:
    """`int8-static`, `prune-50+int8-static` (any order). Raises OptionError with a useful message."""
    parts = [p.strip() for p in name.strip().split("+") if p.strip()]
    if not parts:
        raise OptionError("empty option name; run `edgescope options` for the list")
    for p in parts:
        if p not in _BASE:
            raise OptionError(f"unknown option {p!r}; known: {', '.join(_BASE)} (combine pruning with one "
                              f"other using '+', e.g. prune-50+int8-static)")
    prunes = [_BASE[p] for p in parts if p.startswith("prune-")]
    others = [_BASE[p] for p in parts if not p.startswith("prune-")]
    if len(prunes) > 1:
        raise OptionError(f"{name!r} names two sparsities; pick one prune-N")
    if len(others) > 1:
        raise OptionError(f"{name!r} combines {others[0].name} and {others[1].name}, which both set the weight "
                          f"format; combine pruning with one of them instead")
    if not others:
        return prunes[0]
    if not prunes:
        return others[0]
    o, p = others[0], prunes[0]
    canonical = f"{p.name}+{o.name}"
    return Preset(canonical, o.activation, o.kernel, p.sparsity, f"{p.description}; then {o.description}",
                  dynamic=o.dynamic)


def all_presets() -> list[Preset]:
    return list(_BASE.values())


def all_combos(has_kernel: bool) -> list[Combo]:
    """Every combo of one op, in a fixed order (the per-op table's order)."""
    acts = ACTIVATION_FORMATS
    if not has_kernel:
        return [Combo(i, o, "-", 0) for i in acts for o in acts]
    return [Combo(i, o, k, s) for i in acts for o in acts for k in KERNEL_FORMATS for s in SPARSITIES]


# What each option does on each backend (shown by `edgescope options`).
BACKEND_NOTES: dict[str, dict[str, str]] = {
    "ort-cpu": {
        "fp16": "x86 CPU EP has no fp16 kernels: ORT inserts Casts and computes fp32; only the file shrinks",
        "int8-dynamic": "DynamicQuantizeLinear + ConvInteger / DynamicQuantizeMatMul; Conv often slower than fp32 "
                        "(no NCHWc, loses activation fusion)",
        "int8-static": "QDQ folded into QLinearConv / QGemm / QLinearAdd (VNNI); Q/DQ at float boundaries",
        "int4-weights": "MatMulNBits for MatMul/Gemm with constant weights; Conv stays fp32",
        "palettize": "indices + table stored, decoded once at load by constant folding; runs as fp32",
        "prune": "zeros stored densely; no sparse kernels, so no speed or size change",
    },
    "coreml": {
        "fp16": "default ML Program precision; runs on the Neural Engine where ops allow",
        "int8-dynamic": "weight-only int8 (linear), decompressed just in time on the ANE",
        "int8-static": "exported as int8 weights only (W8A8 needs activation calibration, which runs Core ML: macOS "
                       "only), so predicted as int8-dynamic: decompressed just in time, fp16 activations",
        "int4-weights": "4-bit linear weights (per-block), decompressed on the fly",
        "palettize": "k-means LUT weights; ANE decompresses just in time (iOS 17+)",
        "prune": "sparse weights stored with a bitmask; ANE decompresses just in time",
    },
    "ort-qnn": {
        "fp16": "HTP fp16 (fp32 models are run in fp16 anyway)",
        "int8-dynamic": "not native on HTP: weights decoded to fp16 at load",
        "int8-static": "HTP int8 (the intended path)",
        "int4-weights": "4-bit weights with int8/fp16 activations where the SDK supports it",
        "palettize": "no LUT support: decoded at load, only the file shrinks",
        "prune": "no sparse kernels",
    },
    "litert": {
        "fp16": "GPU delegate computes fp16; on the CPU fp16 is the weights' storage (XNNPACK computes fp32)",
        "int8-dynamic": "XNNPACK on the CPU: int8 GEMMs for convs and fully connected layers (inputs quantized per "
                        "run); depthwise convs run on TFLite's own hybrid kernel",
        "int8-static": "XNNPACK int8 on CPU (GPU delegate needs an experimental flag)",
        "int4-weights": "decoded to float",
        "palettize": "decoded at load",
        "prune": "no sparse kernels",
    },
    "litert-qnn": {
        "fp16": "HTP fp16 (the delegate's default HTP precision; fp32 models run in fp16 anyway)",
        "int8-dynamic": "not native on HTP: int8 weights with 16-bit activations (AI Hub's w8a16)",
        "int8-static": "HTP int8 (AI Hub's w8a8): every layer of the published models on the NPU",
        "int4-weights": "4-bit weights with int8/fp16 activations where the SDK supports it",
        "palettize": "no LUT support: decoded at load, only the file shrinks",
        "prune": "no sparse kernels",
    },
    "litert-cpu": {
        "all": "fp32 measured per op with LiteRT's profiler; options predicted with XNNPACK's paths, its kernels "
               "calibrated on this machine with LiteRT (simulator/litert_calibration.py)",
        "fp16": "fp16 weights are dequantized to fp32 at load by XNNPACK; only the file shrinks",
        "int8-dynamic": "XNNPACK QD8 x QC8W GEMMs for convs and fully connected layers (inputs quantized per run); "
                        "depthwise convs on TFLite's own hybrid kernel, many times slower than XNNPACK's fp32",
        "int8-static": "XNNPACK's QS8 / QC8 kernels",
        "int4-weights": "decoded to float",
        "palettize": "decoded at load",
        "prune": "no sparse kernels",
    },
    "ort-coreml": {
        "fp16": "Core ML computes the EP's partitions in fp16 (ANE/GPU); CPU EP ops cast to fp32",
        "int8-dynamic": "weights decoded at load; CPU EP ops use dynamic int8",
        "int8-static": "QDQ on the ANE where Core ML takes it; CPU EP QLinear ops elsewhere",
        "int4-weights": "decoded at load",
        "palettize": "decoded at load",
        "prune": "no sparse kernels",
    },
    "ort-nnapi": {
        "fp16": "computed as fp32 unless the EP's USE_FP16 flag is set",
        "int8-dynamic": "weights decoded at load; CPU EP ops use dynamic int8",
        "int8-static": "QLinearConv / QLinearMatMul on the NNAPI accelerator",
        "int4-weights": "decoded at load",
        "palettize": "decoded at load",
        "prune": "no sparse kernels",
    },
    "ort-xnnpack": {
        "fp16": "computed as fp32 after casts",
        "int8-dynamic": "ORT CPU EP dynamic quantization (XNNPACK takes only QLinearConv)",
        "int8-static": "XNNPACK QLinearConv / QGemm on the A76 (SDOT)",
        "int4-weights": "MatMulNBits on the CPU EP",
        "palettize": "decoded at load",
        "prune": "no sparse kernels",
    },
}
