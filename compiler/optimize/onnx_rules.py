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

from collections.abc import Sequence
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
# The ONNX-ML operators (ai.onnx.ml: scikit-learn's and the like's exports): ORT's fp16 converter blocks every one by
# op type (onnxruntime.transformers.float16.DEFAULT_OP_BLOCK_LIST) and quantize_static's registries hold none, so both
# tools leave them fp32. Asked fp16, onnxruntime's 670-byte logreg_iris (LinearClassifier, Normalizer, ZipMap) was
# written through the converter anyway: no op converted, its tensors renamed and five value_info records left, 1130
# bytes against 1065 predicted; asked int8-static, ORT's saved file (873 bytes, no quantizer run) against 949.
_ML_OPS = frozenset({"ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer",
                      "FeatureVectorizer", "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor",
                      "Normalizer", "OneHotEncoder", "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsemble",
                      "TreeEnsembleClassifier", "TreeEnsembleRegressor", "ZipMap"})
# Ops of a file ORT's dynamic quantization wrote, their weights stored int8 (ddddocr's older recognizer is all
# ConvInteger, MatMulInteger and DynamicQuantizeLSTM): the exporter's tools quantize float weights only, so it
# writes these as stored, which is the fp32 and int8-dynamic options' file (file_bytes sizes them as stored).
STORED_INT8_OPS = frozenset({"ConvInteger", "MatMulInteger", "DynamicQuantizeLSTM", "DynamicQuantizeMatMul",
                             "MatMulIntegerToFloat"})
# The rules' op type for a node the fp16 option keeps fp32 (fp16_kept: ONNX Runtime cannot load or run it in fp16):
# its op type with this suffix, so the option table, the exporter and a per-op override all read it as written.
FP16_KEPT = "/fp32-under-fp16"
# Why ORT cannot take each such op in fp16 (ORT 1.32, x86 CPU EP; fp16_kept says which nodes).
_FP16_KEPT_WHY = {
    "Transpose": "this Transpose moves the batch axis into a MatMul, and ONNX Runtime segfaults loading that in fp16 "
                 "(its MatMul-Transpose fusion swaps the Cast it inserts before the MatMul, then the NCHWc "
                 "transformer crashes)",
    "ScatterND": "ONNX Runtime's CPU ScatterND has no fp16 kernel for a reduction (add, mul, max, min)",
    "ScatterElements": "ONNX Runtime's CPU ScatterElements has no fp16 kernel for reduction add or mul",
}
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
    if op_type.endswith(FP16_KEPT):
        base = op_type[:-len(FP16_KEPT)]
        if "fp16" in (i, o):
            return f"{combo.name}: {_FP16_KEPT_WHY[base]}; the fp16 option keeps it fp32 between Casts"
        return combo_reason(base, combo)
    if i != o:
        return (f"{combo.name}: an ONNX file gives a node one activation format in and out ({i} in and {o} out "
                f"cannot be written)")
    if i == "int8" and op in _RECURRENT:
        return (f"{combo.name}: ORT's static quantization has no QDQ form for {op}, whose weights stay float "
                f"(int8-dynamic quantizes it)")
    if i in ("fp16", "int8") and op in _ML_OPS:
        return f"{combo.name}: {op} is an ONNX-ML operator, which ORT's fp16 converter and quantizers leave fp32"
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
    is still refused (combo_reason): only the model-wide preset leaves the op as the tool does. fp16 leaves the
    nodes fp16_kept names fp32 (the exporter blocks them in ORT's fp16 converter, which puts Casts around them), and
    both fp16 and static int8 leave the ONNX-ML operators fp32 (_ML_OPS)."""
    if op_type.endswith(FP16_KEPT):
        return combo.input == "fp16" or left_float(op_type[:-len(FP16_KEPT)], combo)
    op = _COMPILED.get(op_type, op_type)
    if op_type in STORED_INT8_OPS:
        return False
    dynamic_left = combo.input == combo.output == "fp32" and combo.kernel == "int8" and op not in DYNAMIC_OPS
    ml_left = combo.input in ("fp16", "int8") and op in _ML_OPS
    return dynamic_left or ml_left or (combo.input == "int8" and op in _RECURRENT)


def as_written(combo: Combo, float_format: str = FLOAT_FORMAT) -> Combo:
    """The float combo a node left float by its tool is written in (left_float): its pruning still applies."""
    return Combo(float_format, float_format, float_format if combo.kernel != "-" else "-", combo.sparsity)


def fp16_kept(op_type: str, reduction: str, perm: Sequence[int], read_by_matmul: bool) -> bool:
    """Whether the fp16 option keeps a node fp32 because ONNX Runtime 1.32 (x86 CPU EP) cannot take it in fp16:
    - a ScatterND with a reduction, a ScatterElements with reduction add / mul: their CPU kernels refuse fp16 at run
      time ("MLFloat16 data type is not supported with ScatterND opset 16 when reduction is 'add'": torch/gnn's
      message passing exported by dynamo, index_add_ as ScatterND(reduction=add));
    - a Transpose a MatMul reads whose perm ORT's MatmulTransposeFusion folds as a batch transpose (transBatch:
      rank 3+, perm[0] == 1, the batch axes in order, the last axis among the last two; its
      GetTransposeNodeFromOutput). ORT has no fp16 MatMul, so it casts the MatMul's input to fp32 at load; the fusion
      swaps that Cast with the Transpose (ReorderCastAndTranspose), and where the fold moves the batch axis the
      NCHWc transformer that runs next segfaults in InferenceSession: the fp16 files of torch/crnn48 (its LSTM
      output's (1, 0, 2) into the classifier) and torch/transformer-encoder (self-attention's (1, 0, 2)) at dynamic
      shapes. Kept fp32 its Cast comes before it, no Cast after: ORT folds it as in the fp32 file.
    A node kept fp32 runs its fp32 kernel between Casts, as ORT runs an fp16 node without an fp16 kernel."""
    if op_type == "ScatterND":
        return reduction not in ("", "none")
    if op_type == "ScatterElements":
        return reduction in ("add", "mul")
    rank = len(perm)
    if op_type != "Transpose" or not read_by_matmul or rank < 3 or perm[0] != 1 or rank - 1 not in perm[-2:]:
        return False
    return all(perm[i] + 1 == perm[i + 1] for i in range(rank - 3))


def rule_op(op_type: str, reduction: str, perm: Sequence[int], read_by_matmul: bool) -> str:
    """The op type the rules read a node as: FP16_KEPT added where fp16_kept holds."""
    return op_type + FP16_KEPT if fp16_kept(op_type, reduction, perm, read_by_matmul) else op_type


def preset_reason(preset: str, op_type: str, has_kernel: bool) -> str | None:
    """combo_reason of a model-wide preset on one node, as the exporter resolves it (fp32 as the float)."""
    return combo_reason(op_type, parse_preset(preset).resolve(FLOAT_FORMAT, has_kernel))
