"""Facts of a device runtime (ORT's QNN EP, LiteRT's QNN delegate) that a task's op type and kind do not tell:
read from the compiled graph once (`qnn_task_facts`), then applied to the task's path (`apply_facts`,
simulator.backends.plan). Software behaviour seen in AI Hub's published measurements (simulator/published), so it
lives in code; the figures it is combined with live in the YAML profiles.
"""

from __future__ import annotations

import dataclasses

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import Target
from simulator.folding import fold_constants
from simulator.kernel_path import Path
from simulator.profiles import HardwareProfile

# The facts (`qnn_task_facts`):
# - "folded_activation": a Relu / Clip that the QDQ model folds into its producer's output range (the quantizer drops an
#   activation whose range the following QuantizeLinear already clips), the sole reader of a Conv / Gemm / MatMul /
#   Add output. AI Hub's ORT QNN EP jobs count the difference: ResNet-50 float 128 layers, w8a8 80 (its 49 Relus
#   gone); ResNet-18 55 / 39, RegNet 190 / 115 (simulator/published/aihub.csv). Gone under int8 activations; and on
#   the HTP under any option: there it runs in its producer's output stage. AI Hub's QNN (DLC) float jobs, which
#   keep it a layer of its own (ResNet-18 54 layers, SqueezeNet 71, MNASNet 104), take what the TFLite jobs take
#   where the converter fused it into the conv (38, 41, 71 layers): 0.929 / 0.924, 0.446 / 0.450, 0.516 / 0.519 ms
#   on the S24, 0.720 / 0.735, 0.326 / 0.330, 0.379 / 0.384 on the S25; RegNetY-800MF, ResNet-101, Wide ResNet-50
#   within 1% likewise. The QNN EP hands the same HTP backend the same graph (the ORT jobs' counts: 55, 71, 104).
# - "fully_connected": a Gemm with a constant weight, or a MatMul by a 2-D constant weight (of an activation of any
#   rank), which the ORT QNN EP builds as a QNN FullyConnected on the activation flattened to 2-D (repo
#   microsoft/onnxruntime, onnxruntime/core/providers/qnn/builder/opbuilder/matmul_op_builder.cc @0b013b4: "If
#   MatMul's 2nd input is 2D initializer, we can transpose the 2nd input and use FullyConnected Op instead, which is
#   faster"; not for a quantized weight, which the QNN EP leaves to the CPU EP: `quantized_ops_except`; Gemm is a
#   FullyConnected in gemm_op_builder.cc @0162e1b). One QNN op, one rate, the conv rate: AI Hub's float ConvNeXt-B,
#   whose time is in such MatMuls (4-D), runs 15.4 GMAC in 5.4 ms where a gemm rate put it +68% held out. Costed
#   so only for 4-D activations before, ViT / BEiT (3-D Linears, and MultiheadAttention's out-projection Gemm) were
#   predicted +220% / +181% held out on the 8 Elite (cross-validated; their family sets the gemm rate otherwise).
# - "affine_norm": a BatchNormalization (one ORT's basic optimizations did not fold into a preceding Conv: DenseNet's
#   62 pre-activation norms), which the QNN EP builds with its mean, variance, scale and bias folded into a weight
#   and a bias per channel (batch_norm_op_builder.cc @061a31b, PreprocessMean / PreprocessStd / PreprocessScale):
#   a per-channel multiply-add, costed at the element-wise rate. Costed as a norm (a reduction), DenseNet-121 was
#   predicted +48% held out on the 8 Elite, +14% at the element-wise rate.
# - "inplace_concat": a Concat of 4-D activations along their channel axis (ONNX NCHW axis 1, TFLite NHWC axis 3),
#   which the HTP does not run as a copy: the graph is prepared with each producer writing its slice of the concat's
#   buffer. Costed as a copy of its output, DenseNet-121 (62 such Concats) was predicted +28% held out, GoogLeNet /
#   Inception-v3 +36%; costed as nothing, +14% and +31% (cross-validated, 8 Gen 3: within +-25% 75.5% -> 81.6%).
# - "gelu_part": the Div (by sqrt 2), Add (1) and two Muls (by the input, by 0.5) around an Erf, which the ORT QNN EP
#   builds with the Erf as one QNN Gelu op (repo microsoft/onnxruntime, onnxruntime/core/providers/qnn/builder/
#   qnn_node_group/gelu_fusion.cc @0bd81b3, both orders of the Muls): one pass over the tensor, the Erf's, where the
#   five tasks cost five. AI Hub's ORT ConvNeXt-T job counts 198 layers, fewer than its 18 blocks take with five per
#   GELU. Not on LiteRT (its GELU is one op already).
# - "row_view" (LiteRT's QNN delegate): a TFLite RESHAPE / SQUEEZE / EXPAND_DIMS that keeps the innermost dim or only
#   adds or drops unit dims moves no element, and costs nothing on the HTP. litert-torch writes one on each side of
#   every FULLY_CONNECTED of a 3-D / 4-D activation (ConvNeXt-B: 204 of its 761 operators; without them 557, where
#   AI Hub's TFLite job counts 598 layers). Costed as copies, they were 0.59 of ConvNeXt-B's predicted 6.3 ms.
#   A channel shuffle's RESHAPE (the innermost dim split) stays a copy.
# - "shuffle_layout" (LiteRT's QNN delegate): the head and tail TRANSPOSEs of a channel shuffle as litert-torch writes
#   PyTorch's view / transpose / view in NHWC: TRANSPOSE (to NCHW) -> RESHAPE -> TRANSPOSE (the shuffle) -> RESHAPE ->
#   TRANSPOSE (back), the outer two cancelling. QNN has the shuffle as one op, ChannelShuffle, and ORT's QNN EP builds
#   it from exactly this five-node pattern (repo microsoft/onnxruntime, onnxruntime/core/providers/qnn/builder/
#   qnn_node_group/channel_shuffle_fusion.cc @b2db0b8): the tensor moves once, the middle TRANSPOSE's pass. AI Hub's
#   TFLite ShuffleNet v2 float job counts 159 layers where litert-torch's file has 191 operators: two fewer for each
#   of its 16 shuffles (simulator/published/aihub.csv). Not under int8 activations: AI Hub's w8a8 job counts 207
#   layers, 48 more than the float one (three per shuffle), and runs at 0.63x the float time where the other CNNs'
#   w8a8 jobs run at 0.32-0.49x (DenseNet aside): the quantized graph does not move the tensor once.
# - "float_norm" (LiteRT's QNN delegate): an op of a normalisation computed from its statistics (litert-torch writes a
#   LayerNorm as MEAN, SQUARED_DIFFERENCE, MEAN, ADD, RSQRT, MUL, SUB, MUL, ADD and unit-dim RESHAPEs; `norm_islands`)
#   stays float (fp16 on the HTP) in a w8a8 model, between a DEQUANTIZE of its input and a QUANTIZE of its output.
#   AI Hub's w8a8 ViT TFLite job counts 1631 layers where its float job counts 1579: 52 = a DEQUANTIZE and a QUANTIZE
#   around each of ViT-B/16's 25 LayerNorms, plus the model's input QUANTIZE and output DEQUANTIZE that every w8a8 job
#   has (SqueezeNet 41 -> 43, GoogLeNet 84 -> 86, RegNet 114 -> 116; simulator/published/aihub.csv). AI Hub quantizes
#   ViT with a plain min-max range scheme (no mixed precision), so the float islands are the TFLite compile's, i.e.
#   the runtime's. Such a job pays what a float graph pays on the HTP (`float_graph_run_s`) and the conversions.
# - "silu" (LiteRT's QNN delegate, float activations): the LOGISTIC of a SiLU as litert-torch writes it (LOGISTIC, then
#   a MUL of the LOGISTIC's input by its output) costs no pass of its own on the HTP: its MUL, which reads x anyway,
#   carries it. No public source says the HTP's graph prepare fuses the pair: QNN has no SiLU op (ORT's QNN EP lowers
#   Swish to QNN Sigmoid + ElementWiseMultiply, onnxruntime/onnxruntime-qnn pull request #777) and AI Hub's QNN DLC
#   EfficientNet-B0 job counts 244 layers, two per SiLU (aihub.csv). The evidence is the timing: the EfficientNet
#   family (49-102 SiLUs, SiLU on every activation) was predicted +20..+35% held out on both chips with two passes,
#   +4..+18% with one, no free parameter added; MobileViT's 30 moved -8% -> -8%. Not under int8 (no such rows).
# What the QNN EP refuses (`quantized_ops_except`) is a MatMul with quantized weights: AI Hub's w8a8 ViT / BEiT jobs
# put their Linear layers on the CPU (constant int8 weights) and their attention MatMuls (int8 activations on both
# inputs, no weight) on the HTP (simulator/published/aihub.csv layer counts). So an op with float weights between
# int8 activations is a float node between DequantizeLinear and QuantizeLinear, not a QDQ node unit, and where the
# HTP has no int8 path for that combo it runs there as a float op at fp16: the EP takes float nodes on the HTP at
# fp16 by default, a QDQ model's too (repo microsoft/onnxruntime, pull request #19863 "Enable float32 model with FP16
# precision for QNN HTP backend", merged 2024-03, which "slows down the perf for quantized model"; before it,
# "Non-QDQ Conv operators are not supported on HTP or DSP backends", issue #18351). Refused as quantized before, such
# a MatMul fell back to fp16 on the CPU at 10x the HTP's time (simulator.backends.plan). A refused op with quantized
# weights stays on the CPU EP in any form: the whole QDQ node unit is the EP's unit of assignment.
# - "npu_refused" (ORT's QNN EP): an LSTM the EP's LSTMOpBuilder refuses, which stays on ORT's CPU EP though LSTM is in
#   the HTP's op list. The builder (repo microsoft/onnxruntime, onnxruntime/core/providers/qnn/builder/opbuilder/
#   lstm_op_builder.cc @64b269e; added by pull request #24646, merged 2025-05, so first in ORT 1.23, AI Hub's) refuses
#   in IsOpSupported a `clip` other than 0, `activations` other than exactly "sigmoid", "tanh", "tanh" (it compares the
#   lower-case names, so ONNX's own spelling "Sigmoid" / "Tanh" written out is refused too), a `sequence_lens` that is
#   not a constant of equal values; and `layout` 1 when it builds the node. It does not check `input_forget` or
#   `activation_alpha` / `activation_beta`. It unrolls the sequence into one QNN LSTM op per step and direction. GRU
#   and RNN have no builder in ORT 1.23 (a GRU builder came with onnxruntime-qnn 2.4.0, 2026-07): not in the op list.
QNN_FACT_BACKENDS = frozenset({"ort-qnn", "litert-qnn"})
_QNN_LSTM_ACTIVATIONS = ["sigmoid", "tanh", "tanh"]
_QDQ_FOLDED_OPS = frozenset({"Relu", "Clip"})
_QDQ_PRODUCERS = frozenset({"Conv", "Gemm", "MatMul", "Add", "ConvTranspose"})
_CHANNEL_AXIS = {"Concat": 1, "CONCATENATION": 3}  # of a 4-D activation, in each format's layout
# TFLite's shape-only operators: litert-torch writes a RESHAPE on each side of a FULLY_CONNECTED of a 3-D / 4-D
# activation (the builtin takes 2-D rows), and around a LayerNorm's per-row statistics.
_TFLITE_VIEWS = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"})


def _row_view(nd: Node, compiled: Graph) -> bool:
    """A TFLite RESHAPE / SQUEEZE / EXPAND_DIMS that moves no element: it keeps the innermost dim (merging or
    splitting outer dims of a row-major buffer) or only inserts or removes unit dims."""
    if nd.op_type not in _TFLITE_VIEWS or not nd.inputs or not nd.outputs:
        return False
    i, o = compiled.values.get(nd.inputs[0]), compiled.values.get(nd.outputs[0])
    if i is None or o is None or not i.shape or not o.shape:
        return False
    return i.shape[-1] == o.shape[-1] or [d for d in i.shape if d != 1] == [d for d in o.shape if d != 1]


def _shuffle_layouts(compiled: Graph) -> set[int]:
    """Indices of the head and tail TRANSPOSEs of each TRANSPOSE -> RESHAPE -> TRANSPOSE -> RESHAPE -> TRANSPOSE chain
    whose outer permutations cancel (a channel shuffle in NHWC; "shuffle_layout" above), each link read only by the
    next."""
    readers: dict[str, list[int]] = {}
    for i, nd in enumerate(compiled.nodes):
        for v in dict.fromkeys(nd.inputs):
            readers.setdefault(v, []).append(i)

    def perm(i: int) -> tuple[int, ...] | None:
        nd = compiled.nodes[i]
        v = compiled.values.get(nd.inputs[1]) if nd.op_type == "TRANSPOSE" and len(nd.inputs) > 1 else None
        return v.weight.ints if v is not None and v.weight is not None else None

    def next_op(i: int, op: str) -> int | None:
        out = compiled.nodes[i].outputs[0] if compiled.nodes[i].outputs else ""
        r = readers.get(out, [])
        return r[0] if len(r) == 1 and compiled.nodes[r[0]].op_type == op and out not in compiled.outputs else None

    found: set[int] = set()
    for head, nd in enumerate(compiled.nodes):
        p = perm(head) if nd.op_type == "TRANSPOSE" else None
        chain = [head]
        for op in ("RESHAPE", "TRANSPOSE", "RESHAPE", "TRANSPOSE"):
            nxt = next_op(chain[-1], op) if p is not None else None
            if nxt is None:
                break
            chain.append(nxt)
        q = perm(chain[-1]) if len(chain) == 5 else None
        if p is not None and q is not None and len(p) == len(q) and all(p[q[k]] == k for k in range(len(q))):
            found |= {chain[0], chain[-1]}
    return found


def _silu_sigmoids(compiled: Graph) -> set[int]:
    """Indices of the LOGISTICs whose only reader is a MUL of the LOGISTIC's own input by its output: x * sigmoid(x),
    a SiLU as litert-torch writes it ("silu" above)."""
    readers: dict[str, list[int]] = {}
    for i, nd in enumerate(compiled.nodes):
        for v in dict.fromkeys(nd.inputs):
            readers.setdefault(v, []).append(i)
    found: set[int] = set()
    for i, nd in enumerate(compiled.nodes):
        if nd.op_type != "LOGISTIC" or not nd.inputs or not nd.outputs or nd.outputs[0] in compiled.outputs:
            continue
        r = readers.get(nd.outputs[0], [])
        mul = compiled.nodes[r[0]] if len(r) == 1 else None
        if mul is not None and mul.op_type == "MUL" and sorted(mul.inputs) == sorted([nd.inputs[0], nd.outputs[0]]):
            found.add(i)
    return found


# The ops a normalisation's statistics and its affine part are written in (TFLite builtins).
_NORM_OPS = frozenset({"MEAN", "SQUARED_DIFFERENCE", "ADD", "SUB", "MUL", "DIV", "RSQRT", "SQRT", "POW", "RESHAPE"})


def norm_islands(compiled: Graph) -> list[frozenset[int]]:
    """The normalisations of a TFLite graph, each as the indices of its ops: seeded by a MEAN of an activation x that a
    SQUARED_DIFFERENCE of x reads (directly or through a RESHAPE), grown in graph order by every `_NORM_OPS` op whose
    inputs are x, constants or the island's own outputs (at least one of those)."""
    producer = {o: i for i, nd in enumerate(compiled.nodes) for o in nd.outputs}

    def const(v: str) -> bool:
        val = compiled.values.get(v)
        return v not in producer and val is not None and val.weight is not None

    readers: dict[str, list[int]] = {}
    for i, nd in enumerate(compiled.nodes):
        for v in dict.fromkeys(nd.inputs):
            readers.setdefault(v, []).append(i)
    islands: list[frozenset[int]] = []
    taken: set[int] = set()
    for i, nd in enumerate(compiled.nodes):
        if nd.op_type != "MEAN" or i in taken or not nd.inputs or not nd.outputs:
            continue
        x, mean = nd.inputs[0], nd.outputs[0]
        views = {mean} | {o for r in readers.get(mean, []) if compiled.nodes[r].op_type == "RESHAPE"
                          for o in compiled.nodes[r].outputs}
        if not any(compiled.nodes[r].op_type == "SQUARED_DIFFERENCE" and x in compiled.nodes[r].inputs
                   and views & set(compiled.nodes[r].inputs) for r in readers.get(x, [])):
            continue
        island, outs = {i}, set(nd.outputs)
        for j in range(i + 1, len(compiled.nodes)):
            n = compiled.nodes[j]
            ins = [v for v in n.inputs if v and not const(v)]
            if n.op_type in _NORM_OPS and j not in taken and any(v in outs for v in ins) \
                    and all(v in outs or v == x for v in ins):
                island.add(j)
                outs.update(n.outputs)
        taken |= island
        islands.append(frozenset(island))
    return islands


def _channel_concat(nd: Node, compiled: Graph) -> bool:
    axis = _CHANNEL_AXIS.get(nd.op_type)
    out = compiled.values.get(nd.outputs[0]) if axis is not None and nd.outputs else None
    if out is None or out.shape is None or len(out.shape) != 4:
        return False
    a = int(nd.attributes.get("axis", 0) or 0)
    return (a + 4 if a < 0 else a) == axis


def _const(compiled: Graph, name: str) -> float | None:
    """The value of a scalar constant (its min and max agree), else None."""
    v = compiled.values.get(name)
    w = v.weight if v is not None else None
    return w.min if w is not None and w.elements == 1 else None


def gelu_parts(compiled: Graph) -> set[int]:
    """Indices of the nodes the QNN EP fuses with an Erf into one Gelu: x/sqrt2 -> Erf -> +1 -> *x -> *0.5 (or x*0.5
    first, then times the sum); Core ML's one `gelu` too (simulator/coreml_rules.py)."""
    producer = {o: i for i, nd in enumerate(compiled.nodes) for o in nd.outputs}
    readers: dict[str, list[int]] = {}
    for i, nd in enumerate(compiled.nodes):
        for v in dict.fromkeys(nd.inputs):
            readers.setdefault(v, []).append(i)

    def is_const(i: int, op: str, value: float) -> str | None:
        """The other input of node i if it is `op` with a scalar constant `value` as one input (a Div's divisor),
        else None."""
        nd = compiled.nodes[i]
        if nd.op_type != op or len(nd.inputs) != 2:
            return None
        for k in (0,) if op == "Div" else (0, 1):
            c = _const(compiled, nd.inputs[1 - k])
            if c is not None and abs(c - value) <= 1e-2:
                return nd.inputs[k]
        return None

    def only_reader(out: str, op: str) -> int | None:
        r = readers.get(out, [])
        return r[0] if len(r) == 1 and compiled.nodes[r[0]].op_type == op and out not in compiled.outputs else None

    parts: set[int] = set()
    for e, nd in enumerate(compiled.nodes):
        div = producer.get(nd.inputs[0]) if nd.op_type == "Erf" and nd.inputs else None
        x = is_const(div, "Div", 2 ** 0.5) if div is not None else None
        add = only_reader(nd.outputs[0], "Add") if x is not None else None
        if add is None or is_const(add, "Add", 1.0) is None:
            continue
        mul = only_reader(compiled.nodes[add].outputs[0], "Mul")
        if mul is None:
            continue
        other = [v for v in compiled.nodes[mul].inputs if v != compiled.nodes[add].outputs[0]]
        half = producer.get(other[0]) if len(other) == 1 else None
        if half is not None and is_const(half, "Mul", 0.5) == x:  # x*0.5, times (1 + erf)
            parts |= {div, add, mul, half}
        elif other == [x]:  # x times (1 + erf), then * 0.5
            last = only_reader(compiled.nodes[mul].outputs[0], "Mul")
            if last is not None and is_const(last, "Mul", 0.5) is not None:
                parts |= {div, add, mul, last}
    return parts


def _qnn_refuses_lstm(nd: Node, compiled: Graph) -> bool:
    """An LSTM whose attributes or sequence lengths ORT's QNN EP LSTMOpBuilder refuses ("npu_refused" above)."""
    a = nd.attributes
    acts = a.get("activations")
    if float(a.get("clip", 0.0) or 0.0) != 0.0 or int(a.get("layout", 0) or 0) != 0 or (
            acts and (acts[:3] != _QNN_LSTM_ACTIVATIONS or (len(acts) == 6 and acts[3:] != _QNN_LSTM_ACTIVATIONS))):
        return True
    lens = compiled.values.get(nd.inputs[4]) if len(nd.inputs) > 4 and nd.inputs[4] else None
    return lens is not None and (lens.weight is None or lens.weight.min != lens.weight.max)


def qnn_task_facts(target: Target, compiled: Graph) -> list[frozenset[str]]:
    """Per compiled task: the facts above that hold for it on `target` (empty elsewhere)."""
    if target.backend not in QNN_FACT_BACKENDS:
        return [frozenset()] * len(compiled.nodes)
    producer = {o: nd for nd in compiled.nodes for o in nd.outputs}
    readers: dict[str, int] = {}
    for nd in compiled.nodes:
        for v in dict.fromkeys(nd.inputs):
            readers[v] = readers.get(v, 0) + 1
    gelu = gelu_parts(compiled) if target.backend == "ort-qnn" else set()
    shuffle = _shuffle_layouts(compiled) if target.backend == "litert-qnn" else set()
    norms = set().union(*norm_islands(compiled)) if target.backend == "litert-qnn" else set()
    silu = _silu_sigmoids(compiled) if target.backend == "litert-qnn" else set()
    # A weight behind Identity / Cast / Transpose is a weight: ORT folds them before the EP takes the graph (the
    # TorchScript exporter reads a weight several layers share through Identity: nn.TransformerEncoder's copies)
    values = fold_constants(compiled)[0].values
    out = []
    for i, nd in enumerate(compiled.nodes):
        x = nd.inputs[0] if nd.inputs else ""
        src = producer.get(x)
        facts = set()
        if nd.op_type in _QDQ_FOLDED_OPS and src is not None and src.op_type in _QDQ_PRODUCERS \
                and readers.get(x, 0) == 1 and x not in compiled.outputs:
            facts.add("folded_activation")
        wv = values.get(nd.inputs[1]) if len(nd.inputs) > 1 else None
        if wv is not None and wv.weight is not None and (
                nd.op_type == "Gemm" or (nd.op_type == "MatMul" and wv.shape is not None and len(wv.shape) == 2)):
            facts.add("fully_connected")
        if nd.op_type == "BatchNormalization":
            facts.add("affine_norm")
        if _channel_concat(nd, compiled):
            facts.add("inplace_concat")
        if i in gelu:
            facts.add("gelu_part")
        if _row_view(nd, compiled):
            facts.add("row_view")
        if i in shuffle:
            facts.add("shuffle_layout")
        if i in norms:
            facts.add("float_norm")
        if i in silu:
            facts.add("silu")
        if nd.op_type == "LSTM" and target.backend == "ort-qnn" and _qnn_refuses_lstm(nd, compiled):
            facts.add("npu_refused")
        out.append(frozenset(facts))
    return out


def fact_combo(target: Target, combo: Combo, facts: frozenset[str]) -> Combo:
    """The combo a task runs under `combo` on the device runtime: a normalisation's op in a w8a8 model on LiteRT's
    QNN delegate stays in the target's float format ("float_norm")."""
    if "float_norm" in facts and "int8" in (combo.input, combo.output):
        f = target.float_format
        return Combo(f, f, f if combo.kernel != "-" else "-", 0)
    return combo


def apply_facts(p: Path, profile: HardwareProfile, combo: Combo, facts: frozenset[str]) -> Path:
    """The path `p` (planned as for any task) with the runtime's facts of this task applied, on the NPU only."""
    on_npu = p.unit != len(profile.units) - 1  # the profiles end with the catch-all CPU
    if "npu_refused" in facts:
        p = dataclasses.replace(p, note="; ".join([*([p.note] if p.note else []), "the QNN EP's LSTM builder refuses "
                                                   "its clip / activations / layout / sequence_lens: ORT's CPU EP"]))
    if "folded_activation" in facts and "int8" in (combo.input, combo.output):
        p = dataclasses.replace(p, eliminated=True, note="folded into the producer's int8 output range (QDQ)")
    elif "folded_activation" in facts and on_npu:
        p = dataclasses.replace(p, eliminated=True, note="; ".join(
            [*([p.note] if p.note else []), "runs in its producer's output stage on the HTP"]))
    if "gelu_part" in facts and on_npu:
        p = dataclasses.replace(p, eliminated=True, note="part of one QNN Gelu with the Erf (the QNN EP's GELU fusion)")
    if "inplace_concat" in facts and on_npu:
        p = dataclasses.replace(p, eliminated=True, note="channel concat: its producers write into its buffer")
    if "row_view" in facts and on_npu:
        p = dataclasses.replace(p, eliminated=True, note="a reshape of a row-major buffer: no data moves on the HTP")
    if "shuffle_layout" in facts and on_npu and "int8" not in (combo.input, combo.output):
        p = dataclasses.replace(p, eliminated=True, note="a channel shuffle's layout transpose: one QNN ChannelShuffle "
                                                         "moves the tensor once on the HTP")
    if "silu" in facts and on_npu and "int8" not in (combo.input, combo.output):
        p = dataclasses.replace(p, eliminated=True, note="a SiLU's sigmoid: computed in its MUL's pass over x on the HTP")
    if "fully_connected" in facts and on_npu:
        p = dataclasses.replace(p, rate_kind="conv", note="; ".join(
            ["a QNN FullyConnected (weight a 2-D constant): runs at the conv rate", *([p.note] if p.note else [])]))
    if "affine_norm" in facts and on_npu:
        p = dataclasses.replace(p, rate_kind="elementwise", note="; ".join(
            ["BatchNormalization: a per-channel multiply-add on the HTP", *([p.note] if p.note else [])]))
    return p
