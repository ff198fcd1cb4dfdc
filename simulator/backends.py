"""What a backend actually does with one task under one combo: the execution path.

This is software behaviour (ORT's kernels, Core ML's placement), so it lives in code; the hardware
figures it is combined with live in the YAML profiles. One pure function, `plan`, returns a frozen
`Path`; the sweep turns paths into coefficient arrays once per (kind, combo) and vectorises over ops.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compiler.graph import Graph
from compiler.vocabulary.formats import BITS, lut_bits
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import Target
from simulator.coreml_rules import A8_WHY, ANE_FUSED_WHY, coreml_facts, in_conv_stage, on_cpu
from simulator.costs import ALIASED_VIEWS, base_kind
from simulator.device_facts import QNN_FACT_BACKENDS, apply_facts, fact_combo, qnn_task_facts
from simulator.kernel_path import Path
from simulator.litert_paths import LITERT_BACKENDS, litert_cpu_path, litert_fact_path, litert_task_facts
from simulator.ort_fp16 import (CONV_OPS, FP16_FUSION_KEPT, FP16_GROUPED, FP16_KERNELS, GEMM_OPS, fp16_nchw_kind,
                                fp16_nchw_path, fp16_task_facts, split_hardswish)
from simulator.ort_int8 import ORT_INT8DYN_NATIVE, native_int8dyn_path, ort_fact_path, ort_span_path, ort_task_facts
from simulator.profiles import CAST16NCHW, INT8_GELU, HardwareProfile, Unit

# Compiled op types -> the op type placement rules (EP op lists) talk about.
PLACEMENT_OP: dict[str, str] = {
    "FusedConv": "Conv", "NhwcFusedConv": "Conv", "QLinearConv": "Conv", "ConvInteger": "Conv",
    "FusedGemm": "Gemm", "QGemm": "Gemm", "FusedMatMul": "MatMul", "QLinearMatMul": "MatMul",
    "MatMulNBits": "MatMul", "DynamicQuantizeMatMul": "MatMul", "MatMulIntegerToFloat": "MatMul",
    "MatMulInteger": "MatMul", "QLinearAdd": "Add", "QLinearMul": "Mul", "QLinearAveragePool": "AveragePool",
    "QLinearGlobalAveragePool": "GlobalAveragePool", "QLinearConcat": "Concat", "QLinearSigmoid": "Sigmoid",
    "QLinearSoftmax": "Softmax", "QLinearLeakyRelu": "LeakyRelu", "ReorderInput": "Transpose",
    "ReorderOutput": "Transpose", "SkipLayerNormalization": "LayerNormalization", "BiasGelu": "Gelu",
    "FastGelu": "Gelu", "NhwcMaxPool": "MaxPool", "QuickGelu": "Gelu",
}

# Kernel formats a backend's exporter can store and the runtime decodes once at load (constant
# folding in ORT; Core ML CPU/GPU decompress at load, hardware-facts P5; LiteRT dequantizes
# dynamic-range weights, L1).
_LOAD_DECODE: dict[str, frozenset[str]] = {
    "ort-cpu": frozenset({"fp16", "lut1", "lut2", "lut4", "lut6", "lut8"}),
    "ort-xnnpack": frozenset({"fp16", "lut1", "lut2", "lut4", "lut6", "lut8"}),
    "ort-coreml": frozenset({"fp16", "int8", "int4", "lut1", "lut2", "lut4", "lut6", "lut8"}),
    "ort-nnapi": frozenset({"fp16", "lut1", "lut2", "lut4", "lut6", "lut8"}),
    "ort-qnn": frozenset({"fp16", "int8", "lut1", "lut2", "lut4", "lut6", "lut8"}),
    "litert-qnn": frozenset({"fp16", "int8", "lut1", "lut2", "lut4", "lut6", "lut8"}),
    "coreml": frozenset({"fp16", "int8", "int4", "lut1", "lut2", "lut4", "lut6", "lut8"}),
    "litert": frozenset({"fp16", "int8", "int4", "lut1", "lut2", "lut4", "lut6", "lut8"}),
    "litert-cpu": frozenset({"fp16", "int8", "int4", "lut1", "lut2", "lut4", "lut6", "lut8"}),
}


# Backends whose fused activations run as an element-wise pass over the kernel's output (ORT's CPU EP: MLAS
# applies every activation of FusedConv / FusedGemm, and all but Relu in NCHWc convs, after the kernel), at the
# element-wise rate (simulator.roofline.rates); elsewhere at the task's own rate.
EPILOGUE_PASS_BACKENDS = frozenset({"ort-cpu"})

# Element-wise op types ORT's x86 CPU EP runs on uint8 under QDQ: its QLinear* kernels, and the activations
# the QDQ transformers fold into the quantized output range. Every other element-wise op (Div, Sub, Erf,
# Tanh, Exp, a fused Gelu...) stays float between DequantizeLinear and QuantizeLinear (seen in the bert and
# ViT int8-static profiles). A SiLU (x * Sigmoid(x)), which the fp32 graph fuses into QuickGelu, is a Sigmoid and a
# Mul the quantizer both quantizes: the int8 file runs QLinearSigmoid (a 256-entry table) and QLinearMul on uint8
# (EfficientNet-B0's int8-static file: 65 of each, no float kernel), at their own calibrated rate
# (`elementwise.int8.QuickGelu`, fitted on such a chain). As float between DequantizeLinear and QuantizeLinear its 49
# SiLUs of the fp32 graph were predicted at 7.5 ms on this Zen 3 (3.95 ms of QuickGelu, ~3.5 ms of conversions),
# profiled 2.2 ms (ORT's profiler, load 5 per CPU, 2026-12-03).
_INT8_ELEMENTWISE: dict[str, frozenset[str]] = {
    "ort-cpu": frozenset({"Add", "Mul", "Sigmoid", "LeakyRelu", "Relu", "Clip", "QLinearAdd", "QLinearMul",
                          "QLinearSigmoid", "QLinearLeakyRelu", "QuickGelu"}),
}
# ORT fuses Div, Erf, Add, Mul, Mul into one Gelu kernel only in a plain fp32 graph: the Casts of an fp16 graph
# and the Q/DQ pairs of an int8 one break the pattern, and the five run as kernels of their own (seen in bert,
# ViT and MLP fp16 and int8-static profiles): four more passes, each reading and writing the tensor.
_GELU_SPLIT_PASSES = 4
_GELU_SPLIT_NOTE = "Gelu not fused: Div, Erf, Add, Mul, Mul run as 5 kernels"
# Under static int8 the quantizer quantizes that split Gelu's Add and two Muls as well: DequantizeLinear, Div and Erf in
# fp32, QuantizeLinear, then QLinearAdd and two QLinearMuls on uint8 (7 kernels; ConvNeXt-V2-atto's int8 file on a Zen
# 4, ORT's profiler, 2026-12-05: its 12 Gelus 3.80 ms with their Q/DQ against 2.57 priced as the fp16 split, 2.80
# measured there). Where calibration timed such a chain (`gelu-int8-*`: `elementwise.int8.Gelu`) the Gelu takes that
# figure as one int8 task (its conversions inside it); elsewhere it falls back to the fp32 split (_int8_lost_fusion).
_INT8_OWN_RATE = {"Gelu": INT8_GELU}  # op type -> the key whose presence decides it (profiles.PATH_EFFICIENCY_KEYS)


def _int8_own_rate(unit: Unit, op_type: str) -> bool:
    """An element-wise op whose static int8 kernels calibration timed as a whole (`elementwise.int8.<op>`)."""
    return op_type in _INT8_OWN_RATE and _INT8_OWN_RATE[op_type] in unit.efficiency


def task_facts(target: Target, compiled: Graph, source: Graph | None = None) -> list[frozenset[str]]:
    """Per compiled task: what `target`'s runtime does with it that its op type and kind do not tell: the QNN
    runtimes' (simulator/device_facts.py), XNNPACK's PAD folding (simulator/litert_paths.py), Core ML's
    (simulator/coreml_rules.py), ORT CPU's static int8 (simulator/ort_int8.py, reading `source` where given) and
    fp16 (simulator/ort_fp16.py); empty elsewhere."""
    if target.backend in QNN_FACT_BACKENDS:
        return qnn_task_facts(target, compiled)
    if target.backend in LITERT_BACKENDS:
        return litert_task_facts(compiled)
    if target.backend == "coreml":
        return coreml_facts(compiled)
    if target.backend == "ort-cpu":
        return [a | b for a, b in zip(ort_task_facts(compiled, source), fp16_task_facts(compiled))]
    return [frozenset()] * len(compiled.nodes)


def _coreml_plan(target: Target, profile: HardwareProfile, op_type: str, kind: str, combo: Combo, has_kernel: bool,
                 fused: bool, facts: frozenset[str]) -> Path:
    """A Core ML task under its facts (simulator.coreml_rules): int8-static as float activations; the CPU; fusions."""
    p = plan(target, profile, op_type, kind, combo, has_kernel, fused)
    if "int8" in (combo.input, combo.output) and facts & {"a8_weights_only", "a8_float"}:
        why = A8_WHY["a8_weights_only" if "a8_weights_only" in facts else "a8_float"]
        alt = Combo(target.float_format, target.float_format, combo.kernel, combo.sparsity)
        p = plan(target, profile, op_type, kind, alt, has_kernel, fused)
        p = dataclasses.replace(p, supported=False, note="; ".join([f"the Core ML export writes {alt.name} ({why})",
                                                                     *([p.note] if p.note else [])]))
    if "cpu_body" in facts:  # control flow runs on the CPU (simulator/coreml_rules.py)
        p = on_cpu(p, profile, combo, _fallbacks(combo, target.float_format), lambda ui, c: _plan_on_unit(
            target, ui, profile.units[ui], op_type, kind, c, has_kernel, fused))
    ane = next((i for i, u in enumerate(profile.units) if u.name == "ane"), None)  # io_cast: the ML Program's own
    if "io_cast" in facts and ane is not None:  # I/O conversion, as for an fp32 model
        return dataclasses.replace(p, unit=ane, eliminated=True, note="fp32 <-> fp16 at the model's inputs / outputs")
    if "act_part" in facts:  # one MIL silu / gelu / hardswish (simulator/coreml_rules.py): its carrying task's pass
        return dataclasses.replace(p, eliminated=True, note="part of one Core ML silu / gelu / hardswish op")
    if "ane_fused" in facts and profile.units[p.unit].name == "ane":
        p = dataclasses.replace(p, eliminated=True, note="; ".join([*([p.note] if p.note else []), ANE_FUSED_WHY]))
    return in_conv_stage(p, kind, facts, profile.units[p.unit].name)


def _float_compute(unit: Unit, fmt: str) -> str | None:
    if fmt in unit.activation_formats:
        return fmt
    if fmt in unit.activation_formats_as:  # the runtime lowers it (fp32 graphs at fp16 on HTP / ANE)
        return unit.activation_formats_as[fmt]
    if fmt in unit.activation_formats_via_cast:
        return "fp32" if "fp32" in unit.activation_formats else "fp16"
    return None


def _plan_on_unit(target: Target, ui: int, unit: Unit, op_type: str, kind: str, c: Combo, has_kernel: bool,
                  fused: bool) -> Path | None:
    """The path of a task on unit `ui` under combo `c`, or None when that unit cannot run it so."""
    if kind in _NCHW_AS:
        p = _nchw_grouped(target, ui, unit, kind, c, has_kernel)
        if p is not None:
            return p
        alt = _NCHW_AS[kind]  # other options and backends: as the NCHWc kind's paths
        p = _plan_on_unit(target, ui, unit, op_type, alt, c, has_kernel, fused)
        return None if p is None else dataclasses.replace(p, rate_kind=p.rate_kind or alt)
    if target.backend in LITERT_BACKENDS and unit.name == "cpu":  # XNNPACK's paths (simulator/litert_paths.py)
        p = litert_cpu_path(target, ui, unit, op_type, kind, c, has_kernel, fused,
                            lambda alt, hk=has_kernel: _plan_on_unit(target, ui, unit, op_type, kind, alt, hk, fused))
        if p is not None:
            return p
    any_int8 = "int8" in (c.input, c.output)
    if any_int8 and kind not in unit.int8_kinds and base_kind(kind) not in unit.int8_kinds:
        return None
    int8_ew = _INT8_ELEMENTWISE.get(target.backend)
    if (any_int8 and kind == "elementwise" and int8_ew is not None and op_type not in int8_ew
            and not _int8_own_rate(unit, op_type)):
        return None
    d = _activations(unit, c)
    if d is None:
        return None
    if any_int8 and _int8_own_rate(unit, op_type):
        d.notes.append(f"{_GELU_SPLIT_NOTE}; Div and Erf in fp32 between Q/DQ, the Add and Muls as QLinear kernels")
    eliminated = any_int8 and op_type in ("ReorderInput", "ReorderOutput")  # ORT has no NCHWc int8 path
    if not has_kernel:
        tag = "int8" if any_int8 else ("cast16" if d.via_cast else d.fcompute)
        # Weightless ops' float constants take the activation format (QDQ); ORT's fp32 layout pays `layout.fp32.spill`.
        moves = not (target.backend == "ort-cpu" and op_type in ALIASED_VIEWS)  # aliased views move nothing (costs)
        return Path(ui, c, True, "int8" if any_int8 else d.fcompute, tag, d.in_b * moves, d.out_b * moves, 0.0,
                    False, {"fp16": 2.0, "int8": 1.0}.get(c.input, 4.0), d.extra_in, d.extra_out, d.dispatches, 0.0,
                    eliminated, not any_int8 and d.fcompute == "fp32" and c.input == c.output == "fp32",
                    "; ".join(d.notes), spill=target.backend == "ort-cpu" and kind == "layout" and tag == "fp32",
                    # ORT's bicubic kernel: a cost per output element (its cache lookups) beside its misses' work
                    out_cost=target.backend == "ort-cpu" and kind == "cubic",
                    # MLAS's SGEMM computes C's columns in whole registers (simulator.einsum.product_columns), its
                    # Softmax a row's elements, with costs per row (`softmax.fp32.row`, `.tap`: simulator.softmax_rows)
                    padded_sgemm=target.backend == "ort-cpu" and kind in ("matmul", "softmax") and tag == "fp32",
                    qgemm=target.backend == "ort-cpu" and kind == "softmax" and tag == "fp32")
    k = _kernel(target, unit, op_type, kind, c, fused, d)
    if k is None:
        return None
    runtime_sparse = unit.sparse == "jit" and c.sparsity > 0
    if c.sparsity and not runtime_sparse:
        d.notes.append("no sparse kernels: zeros are computed")
    if k.per_channel:
        d.notes.append("ConvInteger runs an im2col + GEMM per group: a fixed cost per channel")
    return _ort_deconv(target, unit, op_type, Path(
        ui, c, True, k.compute, k.tag, d.in_b, d.out_b, k.w_rt, runtime_sparse, k.aux_b, d.extra_in, d.extra_out,
        d.dispatches, k.decode, eliminated, k.fp32_equiv, "; ".join(d.notes), k.per_channel, k.extra_ops, k.per_pixel,
        k.im2col, k.repack, extra_ops_per_in=k.extra_in_ops, extra_ops_format=k.extra_format,
        padded_sgemm=target.backend == "ort-cpu" and kind in ("gemm", "matmul") and k.compute == "fp32"))


# ORT's CPU ConvTranspose is no NCHWc Conv: an SGEMM into a column buffer, then col2im scatter-adds the columns into
# the zeroed output and a bias pass follows (simulator.conv_work.col2im_elements). Where calibration fitted its
# figures (the deconv-* cases, calibration_deconv; its cost per column known) it runs at them: `deconv.fp32` the GEMM's rate, `.col2im` per
# column element, `.out` per output element (the zeroing and the bias), `.spill` per output byte beyond the core's L2
# (its columns and output leave it); elsewhere at the conv kind's, as before.
# A DBNet-like detector's two 2x2 stride-2 heads (24 -> 24 from 184 x 184) were priced 3.08 ms at the NCHWc rate,
# ORT's profiler gave 16.6-19.4 (an Emerald Rapids Xeon, load ~10, session 42).
DECONV_RATE = "deconv"


def _ort_deconv(target: Target, unit: Unit, op_type: str, p: Path) -> Path:
    if (target.backend != "ort-cpu" or op_type != "ConvTranspose" or p.compute != "fp32"
            or f"{DECONV_RATE}.fp32.col2im" not in unit.kind_overhead_s):
        return p
    return dataclasses.replace(p, rate_kind=DECONV_RATE, col2im=True, out_cost=True, spill=True, note="; ".join(
        [*([p.note] if p.note else []), "ORT's ConvTranspose: an SGEMM into columns, then col2im scatter-adds them"]))


@dataclass
class _Draft:
    """A path under construction: the activations' side (formats, casts, quantize passes), before the kernel's."""

    via_cast: bool  # an activation reaches the unit through a Cast only
    fcompute: str  # the float format the unit computes in
    in_b: float
    out_b: float
    extra_in: float
    extra_out: float
    dispatches: int
    notes: list[str]


def _activations(unit: Unit, c: Combo) -> _Draft | None:
    """What `c`'s activation formats cost on `unit`: bytes per element, cast and quantize passes; None where the
    unit cannot take one of them."""
    any_int8 = "int8" in (c.input, c.output)
    via_cast = any(f in unit.activation_formats_via_cast and f not in unit.activation_formats
                   for f in (c.input, c.output))
    extra_in = extra_out = 0.0
    dispatches = 0
    notes: list[str] = []
    floats = [f for f in (c.input, c.output) if f != "int8"]
    fcompute = None
    for f in floats:
        fc = _float_compute(unit, f)
        if fc is None:
            return None
        fcompute = fc
    if fcompute is None:
        fcompute = "fp32" if "fp32" in unit.activation_formats else "fp16"
    lowered = sorted({f for f in floats if f in unit.activation_formats_as and f not in unit.activation_formats})
    if lowered:
        notes.append(f"{'/'.join(lowered)} computed as {fcompute} on {unit.name}")
    # Activations the unit only reaches through a Cast (fp16 on x86 ORT): one cast pass per side.
    if c.input in unit.activation_formats_via_cast and c.input not in unit.activation_formats:
        extra_in += BITS[c.input] / 8 + BITS[fcompute] / 8
        dispatches += 1
        notes.append(f"{c.input} input cast to {fcompute}")
    if c.output in unit.activation_formats_via_cast and c.output not in unit.activation_formats:
        extra_out += BITS[c.output] / 8 + BITS[fcompute] / 8
        dispatches += 1
    in_b = 1.0 if c.input == "int8" else BITS[fcompute] / 8
    out_b = 1.0 if c.output == "int8" else BITS[fcompute] / 8
    if any_int8 and c.input != c.output:
        # Mixed int8/float: a quantize or dequantize pass on the float side.
        if c.input != "int8":
            extra_in += in_b + 1
        else:
            extra_out += out_b + 1
        dispatches += 1
    return _Draft(via_cast, fcompute, in_b, out_b, extra_in, extra_out, dispatches, notes)


@dataclass
class _Kernel:
    """The kernel's side of a path: its compute format and efficiency key, and its weights' costs."""

    compute: str
    tag: str
    w_rt: float  # bytes per kernel element streamed per run
    aux_b: float  # bytes per bias / gamma element
    fp32_equiv: bool = False
    decode: float = 0.0
    per_channel: bool = False
    per_pixel: bool = False
    im2col: bool = False
    repack: bool = False
    extra_ops: float = 0.0
    extra_in_ops: float = 0.0  # ops per input element of extra element-wise kernels
    extra_format: str = ""  # their compute format where not the kernel's


def _kernel(target: Target, unit: Unit, op_type: str, kind: str, c: Combo, fused: bool, d: _Draft
            ) -> _Kernel | None:
    """How the kernel of a weighted task runs under `c` (adding its passes to `d`); None where the unit cannot."""
    k = c.kernel
    aux_b = 2.0 if k == "fp16" else 4.0
    fcompute = d.fcompute
    if "int8" in (c.input, c.output):
        return _int8_kernel(target, unit, op_type, kind, c, fused, d)
    if k in ("fp32", "fp16"):
        # fp16 through casts: ORT's x86 CPU EP runs the fp32 kernel, without the NCHWc layout (own efficiency).
        w_rt = BITS[fcompute] / 8 if k not in unit.kernel_formats_native else BITS[k] / 8
        return _Kernel(fcompute, "cast16" if d.via_cast else fcompute, w_rt, aux_b,
                       fp32_equiv=fcompute == "fp32" and c.input == c.output == "fp32")
    if k == "int8" and unit.dynamic_int8 and kind in ("conv", "convsmall", "dwconv", "gemm"):
        return _dynamic_int8_kernel(kind, fused, d)
    if k in unit.weight_only_fused and base_kind(kind) in unit.weight_only_fused[k]:
        # MatMulNBits (accuracy level 0) unpacks the 4-bit blocks to fp32 on every run, whatever M is.
        return _Kernel(k, "int4w", BITS[k] / 8, aux_b, decode=1.0)
    if k in unit.kernel_formats_jit or k in unit.kernel_formats_native:
        d.notes.append(f"{k} weights decompressed just in time")
        return _Kernel(fcompute, fcompute, BITS[k] / 8, aux_b)
    if k in _LOAD_DECODE.get(target.backend, frozenset()):
        d.notes.append(f"{k} weights decoded once at load; runs as {fcompute}")
        return _Kernel(fcompute, fcompute, BITS[fcompute] / 8, aux_b,
                       fp32_equiv=fcompute == "fp32" and c.input == c.output == "fp32")
    return None


def _int8_kernel(target: Target, unit: Unit, op_type: str, kind: str, c: Combo, fused: bool, d: _Draft
                 ) -> _Kernel | None:
    """A weighted task with int8 activations (static int8, QDQ): the weights must be int8 (or a format the unit
    decodes to it); ORT's CPU EP adds its requantization and bias passes."""
    k = c.kernel
    aux_b = 2.0 if k == "fp16" else 4.0
    if not (k == "int8" or (k == "int4" and "int4" in unit.kernel_formats_native)
            or (lut_bits(k) and k in unit.kernel_formats_jit)):
        return None
    out = _Kernel("int8", "int8", BITS[k] / 8, aux_b)
    if fused:
        d.notes.append("activation folded into the int8 output range")
    if target.export == "onnx" and op_type in ("Gemm", "FusedGemm"):
        out.aux_b = 1.0  # the exporter's Add holds the bias: a uint8 constant in the file and for QLinearAdd
    if target.backend == "ort-cpu" and op_type in ("Gemm", "FusedGemm"):
        # ORT fused MatMul + bias Add into Gemm; the QDQ export keeps them apart (QLinearMatMul has no
        # bias) and the Add runs as QLinearAdd, an int8 element-wise kernel (about 3 ops per element).
        d.extra_out += 2 * 1.0
        out.extra_ops = 3.0
        d.dispatches += 1
        d.notes.append("bias Add runs as its own QLinearAdd")
    if target.backend == "ort-cpu" and kind in ("gemm", "matmul"):
        # QLinearMatMul runs QGEMM into a full int32 buffer (M x N) and requantizes it in its output pass,
        # as QLinearConv does below.
        d.extra_out += 2 * 4.0
        d.notes.append("int32 accumulators requantized to uint8")
    if target.backend == "ort-cpu" and kind in ("conv", "convsmall", "dwconv"):
        # ORT's QLinearConv (NHWC) accumulates into an int32 buffer, then requantizes it to uint8
        # (MlasRequantizeOutput): 4 bytes written and read back per output element. Against the MACs
        # this is large when a conv has few input channels (narrow pointwise convs).
        d.extra_out += 2 * 4.0
        d.notes.append("int32 accumulators requantized to uint8 in a second pass")
        # The depthwise kernel walks an indirection buffer (kh * kw input pointers per output pixel)
        # and loops over the channels pixel by pixel: a cost per pixel, whatever the channel count.
        out.per_pixel = kind == "dwconv"
    return out


def _dynamic_int8_kernel(kind: str, fused: bool, d: _Draft) -> _Kernel:
    """int8 weights with float activations on a unit with dynamic quantization (ORT's CPU EP)."""
    # DynamicQuantizeLinear reads the input twice (range, then quantize) and writes uint8.
    d.extra_in += 2 * d.in_b + 1
    d.dispatches += 1
    if kind in ("conv", "convsmall", "dwconv"):
        # ConvInteger writes int32, then Cast, Mul by scale, Add bias run as separate fp32 kernels.
        d.extra_out += 4 + 3 * 2 * d.out_b
        d.dispatches += 3
        if fused:
            d.extra_out += 2 * d.out_b
            d.dispatches += 1
            d.notes.append("activation no longer fused: runs as its own kernel")
        d.notes.append("dynamic int8 Conv = DynamicQuantizeLinear + ConvInteger + Cast/Mul/Add, no NCHWc")
    # ConvInteger expands the uint8 input (Im2col) for every kernel larger than 1x1, group by group (a depthwise
    # conv: channel by channel), row by row (Work.im2col_rows: `<kind>.int8dyn.im2col.row`), then runs a GEMM,
    # packing its weights again on every run, once per 256 output pixels (no pre-packing, unlike QLinearConv;
    # roofline.QGEMM_STRIDE_N). Fitted on `conv` only: the few-channel cases cannot tell the packing from the fixed
    # setup (fitted there, it came out at 15 ns per weight, a setup in disguise).
    # DynamicQuantizeLinear (ORT 1.32 dynamicquantizelinear.cc: MlasFindMinMaxElement, MlasQuantizeLinear): its bytes
    # and 2 ops per input element at the fp32 element-wise rate. The Cast, Mul, Add, activation after a ConvInteger:
    # bytes (Conv + bias + Relu less its ConvInteger alone, single-op files on a Zen 4, thread CPU time, load 2.5 per
    # CPU, 2026-12-04: 0.53-0.59 ns per output for stems, 0.76-0.84 for 3x3 convs; their ops on top cost 1.5-1.9x that,
    # and calibration made up for it with free depthwise MACs: dwconv.int8dyn fitted at its 6x bound).
    conv = kind in ("conv", "convsmall", "dwconv")
    return _Kernel("int8", "int8dyn", 1.0, 4.0, per_channel=kind == "dwconv", im2col=conv, repack=kind == "conv",
                   extra_in_ops=2.0, extra_format="fp32")


# Conv kinds ORT leaves in NCHW (simulator.costs.kind_of) -> the NCHWc kind whose paths they take where MLAS's NCHW
# figures do not apply (other options, other backends, a profile without them).
_NCHW_AS = {"dwconvnchw": "dwconv", "gconvnchw": "convsmall", "convnchw": "conv", "conv3d": "conv"}
_NCHW_GROUPED = frozenset({"dwconvnchw", "gconvnchw"})  # a setup per group (dense ones: one per task)


def _nchw_grouped(target: Target, ui: int, unit: Unit, kind: str, c: Combo, has_kernel: bool) -> Path | None:
    """fp32 grouped Conv that ORT leaves in NCHW (costs.kind_of: `dwconvnchw` depthwise, `gconvnchw` other grouped;
    under fp16 also a depthwise one behind a shared Cast, _ort_fp16): MLAS's plain NCHW Conv, group by group: im2col
    of the group's taps + an SGEMM, so a cost per im2col element (its buffer every group's taps: Work.im2col_elements)
    and one per group, the kind's own figures (`<kind>.nchw*`). Depthwise: 3-7x the NCHWc kernel's time at 14-112
    pixels (ShuffleNet v2's 19 depthwise convs: 0.10 ms predicted at the NCHWc rate, 0.49 measured). Other grouped:
    RegNetX-002's group width 8 at 0.13-0.5x of measured at the NCHWc rate. Only where the profile has them."""
    # fp16 weights are decoded to fp32 at load (fp16 activations reach here as fp32 from _ort_fp16).
    # A dense NCHW Conv (`convnchw`: one group) takes the grouped figures; a 3-D one (`conv3d`) its own once fitted.
    own = kind != "conv3d" or "conv3d.nchw.im2col" in unit.kind_overhead_s
    rate = kind if own and kind != "convnchw" else "gconvnchw"
    if (target.backend != "ort-cpu" or c.input != "fp32" or c.output != "fp32" or c.kernel not in ("fp32", "fp16", "-")
            or not has_kernel or f"{rate}.nchw.im2col" not in unit.kind_overhead_s):  # pruned: zeros computed
        return None
    what = {"dwconvnchw": "depthwise", "convnchw": "dense", "conv3d": "3-D"}.get(kind, "grouped")
    return Path(ui, c, True, "fp32", "nchw", 4.0, 4.0, 4.0, False, 4.0, 0.0, 0.0, 0, 0.0, False, True,
                f"{what} Conv left in NCHW by ORT: im2col + GEMM per group", setup_per_channel=kind in _NCHW_GROUPED,
                im2col=True, rate_kind=rate, padded_sgemm=kind == "gconvnchw")


def _fallbacks(c: Combo, float_format: str) -> list[Combo]:
    """Nearer options first: keep the weights, drop int8 activations; then drop the weight format too."""
    f = float_format
    out = []
    if "int8" in (c.input, c.output):
        out.append(Combo(f, f, c.kernel, c.sparsity))
    if c.kernel not in ("-", f):
        out.append(Combo(c.input, c.output, f, c.sparsity))
        out.append(Combo(f, f, f, c.sparsity))
    out.append(Combo(f, f, "-" if c.kernel == "-" else f, c.sparsity))
    out.append(Combo("fp32", "fp32", "-" if c.kernel == "-" else "fp32", c.sparsity))
    return out


def _ort_fp16(target: Target, profile: HardwareProfile, op_type: str, kind: str, combo: Combo,
                  has_kernel: bool, fused: bool, shared_cast: bool = False, plain_norm: bool = False,
                  fusion_kept: bool = False, grouped: bool = False) -> Path | None:
    """fp16 activations on a backend with fp16 kernels for a few ops only (FP16_KERNELS). Those ops run
    fp16 as their fp32 kernel would on half the bytes. Any other op runs its fp32 kernel behind Casts: the path
    of the same op with fp32 activations (the fp16 weights are cast back to fp32 at load), plus what the
    fp16 graph loses. A fused activation with an fp16 kernel (Clip) runs as its own kernel behind a Cast, and an
    NCHWc Conv then needs reorders on both sides. Softmax has no fp16 kernel: ReduceMax, Sub, Exp, ReduceSum, Div.
    `shared_cast` (ort_fp16.fp16_shared_casts): a Conv whose weight or bias ORT keeps behind a run-time Cast stays
    a plain NCHW Conv (path `cast16nchw`): no reorders, its own rate. `plain_norm` (ort_fp16.fp16_unfused_norms): a
    SkipLayerNormalization ORT does not form in the fp16 graph runs as its Add (fp32) and a fp16
    LayerNormalization. `fusion_kept` (ort_fp16.FP16_FUSION_KEPT): the fused activation has no fp16 kernel either:
    ORT fuses it again; such a Conv (or one without one) runs the fp32 graph's kernel: fp32 figures. `grouped`
    (ort_fp16.FP16_GROUPED): a Conv of more than one group, which a shared Cast leaves to MLAS's grouped NCHW Conv."""
    native = FP16_KERNELS.get(target.backend)
    if native is None or "fp16" not in (combo.input, combo.output):
        return None

    f32 = Combo(*("fp32" if f == "fp16" else f for f in (combo.input, combo.output)), combo.kernel, combo.sparsity)
    kind = "conv" if kind in ("convnchw", "conv3d") else kind  # a dense NCHW Conv keeps the fp16 Conv paths' figures
    # A depthwise (or grouped) Conv behind a shared Cast leaves NCHWc too: MLAS's grouped NCHW Conv, as a
    # depthwise Conv ORT already leaves in NCHW runs (_nchw_grouped). At the NCHWc kernel's rate it was 10x too
    # fast: an fp16 MobileNetV2 (TorchScript export, its zero biases shared) measured its 17 depthwise convs at
    # 12.6x their fp32 time, predicted 1.2x (benchmarks/export_ops.py).
    nchw_kind = fp16_nchw_kind(kind, op_type, has_kernel, shared_cast, grouped)
    p = plan(target, profile, op_type, nchw_kind, f32, has_kernel, fused)
    if not p.supported:
        return None
    if plain_norm and kind == "skipnorm" and combo.output == "fp16":
        # Add (fp32, reading what its producers hand it) -> Cast to fp16 -> LayerNormalization in fp16: the norm
        # at LayerNormalization's rate on fp16 output; the Add writes fp32 and the Cast reads it and writes fp16.
        return dataclasses.replace(p, resolved=Combo("fp32", "fp16", combo.kernel, combo.sparsity), rate_kind="norm",
                                   out_bytes=2.0, extra_out_bytes=p.extra_out_bytes + 4 + 4 + 2 + 2,
                                   extra_dispatches=p.extra_dispatches + 2, fp32_equivalent=False,
                                   note="; ".join(["fp16 graph keeps Add and LayerNormalization apart: Add in fp32, "
                                                   "then a Cast and an fp16 LayerNormalization",
                                                   *([p.note] if p.note else [])]))
    if op_type in native:  # runs fp16 itself: the fp32 kernel's work on half the bytes, no Casts
        return dataclasses.replace(p, resolved=combo, in_bytes=2.0 if combo.input == "fp16" else p.in_bytes,
                                   out_bytes=2.0 if combo.output == "fp16" else p.out_bytes,
                                   aux_bytes=2.0 if not has_kernel else p.aux_bytes, fp32_equivalent=False)

    extra_in, extra_out, disp = 0.0, 0.0, 0
    notes = ["no fp16 kernel on this CPU: runs as fp32 between Casts"]
    nchw = shared_cast and has_kernel and op_type in CONV_OPS
    if nchw:
        notes.append("weight or bias shared with other nodes keeps a run-time Cast: plain NCHW Conv, no NCHWc")
    if fused and has_kernel and not fusion_kept:
        extra_out += 2 * p.out_bytes  # the activation's own pass
        disp += 1
        notes.append("activation no longer fused: runs as its own kernel")
        if op_type == "Conv" and not nchw:  # an NCHWc Conv (plain ONNX Conv has no activation): reorders both sides
            extra_in += 2 * p.in_bytes
            extra_out += 2 * p.out_bytes
            disp += 2
    if kind == "softmax":
        extra_in += 6 * p.in_bytes  # five element-wise passes instead of one fused kernel
        disp += 4
        notes.append("Softmax inlined as 5 element-wise kernels")
    if op_type == "Gelu":
        extra_in += _GELU_SPLIT_PASSES * 2 * p.in_bytes
        disp += _GELU_SPLIT_PASSES
        notes.append(_GELU_SPLIT_NOTE)
    tag, repacked = _fp16_tag(profile, p, op_type, has_kernel, fused, fusion_kept, nchw, shared_cast)
    if repacked:
        notes.append("weight shared with other nodes keeps a run-time Cast: cast and packed for the GEMM every run")
    # MLAS runs a plain NCHW Conv as im2col ("expand") + SGEMM for kernels larger than 1x1.
    return dataclasses.replace(p, tag=tag, im2col=nchw or p.im2col, repack=p.repack or repacked,
                               extra_in_bytes=p.extra_in_bytes + extra_in,
                               extra_out_bytes=p.extra_out_bytes + extra_out,
                               extra_dispatches=p.extra_dispatches + disp,
                               # (not where fp32 ran the NCHWc kernel: that measured time is not this path's)
                               fp32_equivalent=(p.fp32_equivalent and tag == p.tag and not (extra_in or extra_out)
                                                and nchw_kind == kind),
                               aux_bytes=2.0 if not has_kernel and combo.input == "fp16" else p.aux_bytes,
                               note="; ".join(notes + ([p.note] if p.note else [])))


def _fp16_tag(profile: HardwareProfile, p: Path, op_type: str, has_kernel: bool, fused: bool, fusion_kept: bool,
              nchw: bool, shared_cast: bool) -> tuple[str, bool]:
    """(the efficiency tag of an fp16 task that runs its fp32 kernel between Casts (fp32 path `p`), whether its GEMM
    packs its weight on every run). Weighted ops keep the fp16 path's own efficiency and setup (`cast16`, calibrated
    on fp16 exports of Conv + bias + activation chains): the lost fusions and the load-time cast weights are in those
    figures. A depthwise Conv in NCHW runs the fp32 kernel of its NCHW path between the Casts: at that path's figures,
    or at its own where calibration fitted them on fp16 exports (`dwconvnchw.cast16nchw`: depthwise chains sharing one
    bias, 3x3 and 5x5; the fp32 figures, fitted on 3x3 only, priced MobileNetV3's 5x5 ones 1.6-1.7x too fast).
    A Gemm / MatMul whose weight a kept Cast hands it (`shared_cast`, ort_fp16.fp16_shared_casts) runs MLAS's SGEMM
    on a B it cannot prepack: the weight is cast and packed on every run, at `<kind>.cast16.weights` s per weight
    (calibration's `gemm-shared-*` cases: fp16 MatMul chains reading one weight)."""
    if not has_kernel:
        return p.tag, False
    if p.tag == "nchw":
        own = f"{p.rate_kind}.{CAST16NCHW}" in profile.units[p.unit].efficiency
        return ("cast16nchw" if own else p.tag), False
    if shared_cast and op_type in GEMM_OPS and p.tag == "fp32":
        return "cast16", True
    return ("cast16nchw" if nchw else (p.tag if fusion_kept or not fused else "cast16")), False


def _int8_lost_fusion(target: Target, op_type: str, kind: str, asked: Combo, p: Path) -> Path:
    """A fused ORT task asked to run int8 on the CPU EP, where the QDQ export breaks the fusion, so its parts
    run as the unfused graph does (float, between DequantizeLinear and QuantizeLinear, which the totals rule
    charges on the edges):
    - SkipLayerNormalization fuses a residual Add with the LayerNormalization after it. The exporter quantizes
      that Add, so ORT runs a QLinearAdd and a plain LayerNormalization: at LayerNormalization's rate, not the
      fused kernel's (about 7x slower per element on the host, calibration cases skipnorm-* vs layernorm-*).
    - Gelu splits into its five kernels again, as under fp16 (_GELU_SPLIT_PASSES).
    Both seen in bert int8-static profiles. Neither runs the fp32 graph's fused kernel, so its measured time is not
    theirs (fp32_equivalent off): with a measured profile the causal decoder's 9 SkipLayerNormalizations kept their
    fused 0.75 ms under int8-static where their LayerNormalizations are priced 0.13 (its file measured 2.83 ms, the
    dialog said 3.82; Zen 4, session 44)."""
    if target.backend != "ort-cpu" or "int8" not in (asked.input, asked.output):
        return p
    if kind == "skipnorm":
        return dataclasses.replace(p, rate_kind="norm", extra_dispatches=p.extra_dispatches + 1, fp32_equivalent=False,
                                   extra_in_bytes=p.extra_in_bytes + 3 / 2,  # per input element: 2 int8 in, 1 out
                                   note=p.note + "; residual Add quantized (QLinearAdd): no SkipLayerNormalization "
                                                 "fusion, a plain LayerNormalization runs")
    if op_type == "Gelu":
        return dataclasses.replace(p, extra_dispatches=p.extra_dispatches + _GELU_SPLIT_PASSES, fp32_equivalent=False,
                                   extra_in_bytes=p.extra_in_bytes + _GELU_SPLIT_PASSES * 2 * p.in_bytes,
                                   note=f"{p.note}; {_GELU_SPLIT_NOTE}")
    return p


def plan(target: Target, profile: HardwareProfile, op_type: str, kind: str, combo: Combo, has_kernel: bool,
         fused: bool, shared_cast: bool = False, plain_norm: bool = False, facts: frozenset[str] = frozenset(),
         npu_refused: bool = False) -> Path:
    """The path of one task under one combo; falls back (supported=False) if no unit can run it.
    `shared_cast`: the task reads a constant other nodes read too (ort_fp16.fp16_shared_casts); `plain_norm`: ORT does
    not form this SkipLayerNormalization in the fp16 graph (ort_fp16.fp16_unfused_norms); `facts`: the device runtime's
    (task_facts); `npu_refused`: the runtime's builder refuses this node, so only the last (catch-all) unit runs it."""
    if ORT_INT8DYN_NATIVE in facts and has_kernel and combo.input == combo.output == combo.kernel == "fp32":
        # the file's own dynamic int8 kernel (ort_int8.NATIVE_INT8DYN_OPS): as int8-dynamic runs it
        dyn = dataclasses.replace(combo, kernel="int8")
        p = plan(target, profile, op_type, kind, dyn, has_kernel, fused, shared_cast, plain_norm,
                 facts - {ORT_INT8DYN_NATIVE}, npu_refused)
        return dataclasses.replace(native_int8dyn_path(p, op_type), resolved=combo)
    p16 = _ort_fp16(target, profile, op_type, kind, combo, has_kernel, fused, shared_cast, plain_norm,
                    FP16_FUSION_KEPT in facts, FP16_GROUPED in facts)
    if p16 is not None:  # a float op ORT runs over short spans pays its calls under fp16 too
        nchw = shared_cast and has_kernel and op_type in CONV_OPS  # a Conv left NCHWc, as _ort_fp16 reads it
        return ort_span_path(fp16_nchw_path(p16, facts, nchw, kind), facts) if target.backend == "ort-cpu" else p16
    if facts and target.backend == "coreml":
        return _coreml_plan(target, profile, op_type, kind, combo, has_kernel, fused, facts)
    if facts:
        if target.backend in QNN_FACT_BACKENDS:
            combo = fact_combo(target, combo, facts)
        p = plan(target, profile, op_type, kind, combo, has_kernel, fused, npu_refused="npu_refused" in facts)
        if target.backend == "ort-cpu":
            return ort_fact_path(split_hardswish(p, facts, False), combo, facts)
        if target.backend in QNN_FACT_BACKENDS:
            return apply_facts(p, profile, combo, facts)
        return litert_fact_path(p, facts, profile.units[p.unit])
    place_op = PLACEMENT_OP.get(op_type, op_type)
    # An op with quantized weights a unit refuses (`quantized_ops_except`) goes to the next unit under every combo
    # (the EP hands its QDQ node to the CPU EP); a float-weight op between int8 activations is a float op there.
    quantized = has_kernel and combo.kernel in ("int8", "int4")
    units = [(ui, u) for ui, u in enumerate(profile.units) if u.runs(place_op) and not (
        quantized and place_op in u.quantized_ops_except) and not (npu_refused and u is not profile.units[-1])]
    for ui, unit in units:
        p = _plan_on_unit(target, ui, unit, op_type, kind, combo, has_kernel, fused)
        if p is not None:
            return p
    for alt in _fallbacks(combo, target.float_format):
        # the fallback runs as its combo chosen itself would (fp16 on ORT CPU: behind its Casts)
        p = _ort_fp16(target, profile, op_type, kind, alt, has_kernel, fused, shared_cast, plain_norm,
                      FP16_FUSION_KEPT in facts, FP16_GROUPED in facts)
        if p is None:
            p = next((q for ui, unit in units
                      if (q := _plan_on_unit(target, ui, unit, op_type, kind, alt, has_kernel, fused)) is not None), None)
        if p is not None:
            p = dataclasses.replace(p, supported=False, note=f"{combo.name} not supported here; runs as {alt.name}"
                                    + (f"; {p.note}" if p.note else ""))
            return _int8_lost_fusion(target, op_type, kind, combo, p)
    raise AssertionError(f"no unit of {profile.name} runs {op_type}")  # profiles end with a catch-all CPU
