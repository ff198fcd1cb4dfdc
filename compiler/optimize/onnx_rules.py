"""Which combos the ONNX exporter writes exactly (`compiler.optimize.onnx_export`), and why not the others.

One source for the exporter (which refuses the rest before writing anything) and the option table (which marks
them not exportable). No heavy imports: the sweep calls it for every task signature.

What ONNX Runtime's tools can write for one node:
- float activations (fp32 or fp16) in and out, the same on both sides: ORT's fp16 converter changes a node's
  inputs, outputs and weights together, so fp16 activations take fp16 (or palettized, decoded at load) weights
  and fp32 activations take fp32, palettized, int4 (MatMulNBits) or dynamic int8 weights;
- int8 activations in and out with int8 weights: a QDQ node (quantize_static writes Q/DQ on every input and
  output of a node it quantizes, so int8 on one side only cannot be written);
- any sparsity (pruning zeroes weights in place, whatever the format).
"""

from __future__ import annotations

from functools import lru_cache

from compiler.vocabulary.options import Combo, parse_preset

# The exporter's float: presets saying "float" are written as fp32 whatever the target (ORT CPU's float).
FLOAT_FORMAT = "fp32"
# Source op types whose float weights the exporter quantizes dynamically (ORT's IntegerOps registry; the exporter
# turns a constant-weight Gemm into MatMul + Add first).
DYNAMIC_OPS = frozenset({"Conv", "MatMul", "Gemm"})
# Recurrent ops quantize_static leaves float (not in its QDQ registry; quantize_dynamic takes LSTM): the benchmark's
# LSTM/GRU int8-static files were 3.9x the predicted int8 size.
_RECURRENT = frozenset({"LSTM", "GRU", "RNN"})
# Ops of a file ORT's dynamic quantization wrote, their weights stored int8 (ddddocr's older recognizer is all
# ConvInteger, MatMulInteger and DynamicQuantizeLSTM): the exporter's tools quantize float weights only, so it
# writes these as stored, which is the fp32 and int8-dynamic options' file (file_bytes sizes them as stored).
STORED_INT8_OPS = frozenset({"ConvInteger", "MatMulInteger", "DynamicQuantizeLSTM", "DynamicQuantizeMatMul",
                             "MatMulIntegerToFloat"})
# Compiled (fused) op types the option table prices, and the source op they export as.
_COMPILED = {"FusedConv": "Conv", "NhwcFusedConv": "Conv", "FusedGemm": "Gemm", "FusedMatMul": "MatMul",
             "QLinearConv": "Conv", "ConvInteger": "Conv", "QGemm": "Gemm", "QLinearMatMul": "MatMul",
             "MatMulInteger": "MatMul", "DynamicQuantizeMatMul": "MatMul", "MatMulIntegerToFloat": "MatMul",
             "MatMulNBits": "MatMul"}


@lru_cache(maxsize=8192)
def combo_reason(op_type: str, combo: Combo) -> str | None:
    """None if the exporter writes `combo` on a node of `op_type` exactly; else one sentence saying why not."""
    op = _COMPILED.get(op_type, op_type)
    i, o, k = combo.input, combo.output, combo.kernel
    if op_type in STORED_INT8_OPS:
        if i == o == "fp32" and k in ("-", "fp32", "int8") and not combo.sparsity:
            return None  # written as stored
        return (f"{combo.name}: {op_type} stores its weights int8 already (a file ORT's dynamic quantization wrote), "
                f"and the exporter quantizes float weights only: fp32 and int8-dynamic write them as stored; "
                f"export the float model for other options")
    if i != o:
        return (f"{combo.name}: an ONNX file gives a node one activation format in and out ({i} in and {o} out "
                f"cannot be written)")
    if i == "int8" and op in _RECURRENT:
        return (f"{combo.name}: ORT's static quantization has no QDQ form for {op}, whose weights stay float "
                f"(int8-dynamic quantizes it)")
    if k == "-":
        return None
    if i == "int8":
        return None if k == "int8" else (f"{combo.name}: int8 activations are written as QDQ with int8 weights; "
                                         f"{k} weights with int8 activations cannot be written")
    if i == "fp16":
        return None if k == "fp16" or k.startswith("lut") else (
            f"{combo.name}: ORT's fp16 converter gives a node fp16 weights with fp16 activations; {k} weights "
            f"cannot be written with them")
    if k == "fp16":
        return (f"{combo.name}: ORT's fp16 converter converts a node's activations with its weights; "
                f"use fp16/fp16/fp16")
    if k == "int8" and op not in DYNAMIC_OPS:
        return f"{combo.name}: ORT's dynamic quantization writes int8 weights for Conv, MatMul and Gemm only, not {op}"
    return None


def left_float(op_type: str, combo: Combo) -> bool:
    """Whether a model-wide preset's tool writes a node of `op_type` float where the preset asks `combo`, rather
    than the export failing: ORT's dynamic quantization quantizes the weights of its registry's ops only (a
    ConvTranspose, a DBNet-style text detector's upsampling head, keeps its float weights; the whole int8-dynamic
    option was refused for it), and static quantization leaves recurrent ops float. A per-op override asking for it
    is still refused (combo_reason): only the model-wide preset leaves the op as the tool does."""
    op = _COMPILED.get(op_type, op_type)
    if op_type in STORED_INT8_OPS:
        return False
    dynamic_left = combo.input == combo.output == "fp32" and combo.kernel == "int8" and op not in DYNAMIC_OPS
    return dynamic_left or (combo.input == "int8" and op in _RECURRENT)


def as_written(combo: Combo, float_format: str = FLOAT_FORMAT) -> Combo:
    """The float combo a node left float by its tool is written in (left_float): its pruning still applies."""
    return Combo(float_format, float_format, float_format if combo.kernel != "-" else "-", combo.sparsity)


def preset_reason(preset: str, op_type: str, has_kernel: bool) -> str | None:
    """combo_reason of a model-wide preset on one node, as the exporter resolves it (fp32 as the float)."""
    return combo_reason(op_type, parse_preset(preset).resolve(FLOAT_FORMAT, has_kernel))
