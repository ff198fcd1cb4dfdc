"""ONNX Runtime's fp16 on its x86 CPU EP: which ops have fp16 kernels, and the two graph facts an fp16 model's
run depends on that its op types do not tell (a Conv behind a run-time Cast of a shared constant; a
SkipLayerNormalization ORT does not form in the fp16 graph). simulator.backends plans paths from them."""

from __future__ import annotations

import dataclasses
import math

from compiler.graph import Graph, Node
from compiler.vocabulary.targets import Target
from simulator.folding import fold_constants
from simulator.kernel_path import Path
from simulator.ort_int8 import ORT_INT8_UNFOLDED
from simulator.profiles import CAST16NCHW

# Op types ORT's x86 CPU EP (1.32) has fp16 kernels for: data movement, Clip and LayerNormalization
# (probed with single-op fp16 models: their optimized graphs have no Cast). Every other fp16 node runs
# its fp32 kernel between Casts ORT inserts, and a Cast pair between two such nodes cancels; so under
# fp16 those ops run as fp32 and only edges to these fp16 ops pay a Cast (the totals rule's conversion).
FP16_KERNELS: dict[str, frozenset[str]] = {
    "ort-cpu": frozenset({"Clip", "LayerNormalization", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                          "Identity", "Concat", "Split", "Slice", "Gather", "Expand", "Tile"}),
}


CONV_OPS = frozenset({"Conv", "FusedConv"})
GEMM_OPS = frozenset({"Gemm", "FusedGemm", "MatMul", "FusedMatMul"})
# s per weight a Gemm / MatMul of an fp16 file casts and packs on every run when its weight is shared
# (fp16_shared_casts; kernel_path.Path.repack's `<kind>.<tag>.weights` for the `cast16` path of kind gemm)
SHARED_WEIGHTS_KEY = "gemm.cast16.weights"

# A task fact (simulator.ort_int8.ort_task_facts): the activation ORT fused into this Conv / Gemm has no fp16 kernel
# (Relu, Sigmoid, LeakyRelu...), so in the fp16 graph it too runs fp32 between Casts, the Cast pair between the two
# cancels and ORT fuses them again: the fp16 file runs the fp32 graph (torchvision's quantized MobileNetV2, Relu
# throughout: its fp16 export 3.684 ms against 3.686 for fp32, the optimized graphs alike, load 0.3, 2026-12-05). A
# Clip (fp16 kernel) stays fp16 behind a real Cast, and the Conv runs unfused (MobileNetV2's ReLU6: 35 Clips apart).
FP16_FUSION_KEPT = "fp16.fusion-kept"

# A task fact (fp16_task_facts): a Conv of more than one group. Behind a shared Cast (fp16_shared_casts) ORT leaves it
# NCHW, and MLAS's NCHW Conv runs it group by group (im2col + SGEMM per group), not as one NCHWc kernel: the path of
# the grouped convs ORT leaves NCHW in fp32 (`gconvnchw`). With AVX2's 8-wide NCHWc blocks RegNet's group width 8
# runs NCHWc in fp32, so only fp16 moves it: RegNetY-400MF's fp16 TorchScript export (its zero biases shared, 60 of
# 85 Convs left NCHW) measured 1.42x its fp32 export in fast CPU time, predicted 1.07x with its 16 grouped convs
# priced as dense NCHW ones (AMD EPYC Zen 3, AVX2, 2026-12-07; README Round 30).
FP16_GROUPED = "fp16.grouped"


def fp16_shared_casts(target: Target, compiled: Graph, source: Graph | None = None) -> list[bool]:
    """Per compiled task: whether, once its model is fp16, the task is a Conv that reads its weight or bias
    through a Cast ORT keeps at run time, so ORT leaves it a plain NCHW Conv (im2col + SGEMM) instead of
    an NCHWc one; or a Gemm / MatMul that reads its weight so (below).

    ORT (x86 CPU EP) inserts one Cast per fp16 tensor that nodes without an fp16 kernel read, whatever the
    number of such readers. FuseInitializersTransformer folds a Cast of an initializer back into an fp32
    initializer only when that Cast has exactly one consumer; the NCHWc transformer converts only Convs
    whose weight and bias are constant initializers. So a constant read by two or more Cast-needing nodes
    (after Identity wrappers, which ORT removes) keeps its Cast and its Convs stay NCHW. Seen in the
    optimized graph of an fp16 ResNet: the untrained BatchNorms fold into one zero bias per stage that
    TorchScript's exporter deduplicates (Identity per use), and the 12 Convs reading them run as
    Conv / FusedConv at 1.3-1.5x the NCHWc time. Real models hit it the same way: deduplicated constant
    biases (zero-initialised or frozen layers, BN-folded copies), and tied weights read by several Convs.
    Trained models whose Convs each own their bias keep NCHWc; so the rule reads the graph, never names.
    A Gemm / MatMul whose weight (B) is shared the same way reads it through the kept Cast too: ORT cannot prepack
    it, so MLAS's SGEMM packs it on every run (backends._ort_fp16). TorchScript deduplicates equal initializers, and
    a transformer whose layers were cloned from one (nn.TransformerEncoder's deep copies, untrained) shares every
    layer's weights: torch/transformer-encoder's fp16 file keeps 12 Casts of initializers, which all its 16 Gemms
    read (as weight or bias). A product of one row of A (M = 1: a decoder step, a batch-1 classifier head) is no such
    case: MLAS runs its M = 1 kernel on B as it is, packing nothing (sgemm.cpp, MlasSgemmOperation: "the data from
    matrix B is not referenced multiple times"), so the kept Cast costs it nothing per reader. A greedy decoder's 73
    Gemms (M = 1, three weights each read by 24 steps) were priced 4.86 ms in its fp16 file, 4.6x their fp32 price,
    and measured 0.91 against 0.92 in fp32 (Zen 4, ORT's profiler, 2026-12-08 01:52 UTC, probe 109-110, load 8;
    benchmarks/export_ops.py). The kept Cast itself, once per shared weight and run, is not priced (0.15 ms of 1.51
    there: three Casts of 2.6 M weights).
    Counted on the source (what the fp16 exporter converts), else on the compiled graph itself."""
    native = FP16_KERNELS.get(target.backend)
    if native is None:
        return [False] * len(compiled.nodes)
    g = source if source is not None else compiled
    view, folded = fold_constants(g)
    alias: dict[str, str] = {}  # Identity output -> the tensor it forwards
    for nd in g.nodes:
        if nd.op_type == "Identity" and nd.inputs and nd.outputs:
            alias[nd.outputs[0]] = alias.get(nd.inputs[0], nd.inputs[0])
    readers: dict[str, set[str]] = {}  # float constant -> nodes that read it through a Cast
    for nd in g.nodes:
        if nd.id in folded or nd.op_type in native or nd.op_type == "Identity":  # no Cast: folded or fp16 itself
            continue
        for v in dict.fromkeys(nd.inputs):
            r = alias.get(v, v)
            val = view.values.get(r)
            if val is not None and val.weight is not None and val.dtype.startswith("float"):
                readers.setdefault(r, set()).add(nd.id)
    shared = {r for r, ns in readers.items() if len(ns) > 1}
    hit = {nd.id for nd in g.nodes if (nd.op_type in CONV_OPS
                                       and any(alias.get(v, v) in shared for v in nd.inputs[1:3] if v))
           or (nd.op_type in GEMM_OPS and len(nd.inputs) > 1 and alias.get(nd.inputs[1], nd.inputs[1]) in shared
               and not _one_row(nd, g))}
    if source is None:
        return [nd.id in hit for nd in compiled.nodes]
    return [nd.op_type in CONV_OPS | GEMM_OPS and any(s in hit for s in nd.source_nodes) for nd in compiled.nodes]


def _one_row(nd: Node, g: Graph) -> bool:
    """A Gemm / MatMul whose A has one row (M = 1, A not transposed): MLAS's M = 1 kernel, which packs no B."""
    a = g.values.get(nd.inputs[0]) if nd.inputs else None
    if a is None or not a.is_static or not a.shape or nd.attributes.get("transA"):
        return False
    return math.prod(int(d) for d in a.shape[:-1]) == 1  # type: ignore[union-attr]


def fp16_unfused_norms(target: Target, compiled: Graph) -> list[bool]:
    """Per compiled task: whether it is a SkipLayerNormalization that ORT does not form in the model's fp16
    graph, where the residual Add runs alone (fp32, between Casts) and the LayerNormalization runs fp16 with
    its own kernel. The compile step asks ORT (compiler.backends.ort._fp16_plain_norms) and records the
    LayerNormalization nodes left plain; without that record every fusion is assumed kept. Seen in a BERT
    fp16 export: the attention block's Add + LayerNormalization stay apart (the norm's output feeds the FFN
    through an fp16 Reshape), the FFN block's fuse; the plain norm is several times faster on this host."""
    import json

    names = compiled.metadata.get("fp16_plain_norms") if target.backend in FP16_KERNELS else None
    if not names:
        return [False] * len(compiled.nodes)
    plain = set(json.loads(names))
    return [nd.op_type == "SkipLayerNormalization" and any(s in plain for s in nd.source_nodes)
            for nd in compiled.nodes]


def fp16_task_facts(compiled: Graph) -> list[frozenset[str]]:
    """Per compiled task of ORT's x86 CPU EP: FP16_FUSION_KEPT where the activation fused into it has no fp16 kernel,
    FP16_GROUPED where it is a Conv of more than one group."""
    native = FP16_KERNELS["ort-cpu"]
    out = []
    for nd in compiled.nodes:
        act = nd.text("activation")
        grouped = nd.op_type in CONV_OPS and int(nd.attributes.get("group", 1) or 1) > 1
        out.append(frozenset({FP16_FUSION_KEPT} if act and act not in native else set())
                   | frozenset({FP16_GROUPED} if grouped else set()))
    return out


def fp16_nchw_kind(kind: str, op_type: str, has_kernel: bool, shared_cast: bool, grouped: bool) -> str:
    """The kind whose fp32 path an fp16 task runs behind its Casts: a Conv behind a shared Cast (fp16_shared_casts)
    leaves NCHWc, so a depthwise one runs MLAS's depthwise NCHW Conv (`dwconvnchw`) and another grouped one
    (FP16_GROUPED) its grouped NCHW Conv (`gconvnchw`); a dense one keeps its kind (its own `cast16nchw` figures);
    any other task keeps its kind."""
    if not (has_kernel and shared_cast and op_type in CONV_OPS):
        return kind
    if kind in ("dwconv", "dwconvnchw"):
        return "dwconvnchw"
    return "gconvnchw" if grouped else kind


# A HardSwish that ORT fused into an NCHWc Conv of the fp32 graph (ort_int8.ORT_INT8_UNFOLDED + "HardSwish" among the
# task's facts). The exporter's ORT pre-processing writes it as its function body, HardSigmoid + Mul, and ORT fuses the
# pair back into a Conv only in its NCHWc form: where the Conv runs otherwise (fp16 behind a shared Cast: a plain NCHW
# Conv; int8-dynamic: ConvInteger), HardSigmoid and Mul run as fp32 kernels of their own. The HardSigmoid reads and
# writes an fp32 tensor (3 FLOPs at its own calibrated rate), the Mul reads two and writes one (1 FLOP); int8-dynamic
# already pays one pass for its unfused activation. Priced as folded in the fp16 files: MobileNetV3-Large's 21 and
# LCNet-050's 28 HardSwish (a Zen 4, 2026-12-07; README Round 33).
SPLIT_HARDSWISH = ORT_INT8_UNFOLDED + "HardSwish"
_HARDSIGMOID_BYTES, _MUL_BYTES, _HARDSIGMOID_FLOPS = 8.0, 12.0, 3.0


def split_hardswish(p: Path, facts: frozenset[str], fp16_nchw: bool) -> Path:
    """`p` with the HardSigmoid and Mul kernels of a HardSwish that ORT cannot fuse back (SPLIT_HARDSWISH): under fp16
    where the Conv left NCHWc (`fp16_nchw`: behind a shared Cast), under int8-dynamic (ConvInteger, which pays the
    HardSigmoid's pass already as its unfused activation's)."""
    if SPLIT_HARDSWISH not in facts or p.eliminated or not (fp16_nchw or p.tag == "int8dyn"):
        return p
    paid = p.tag == "int8dyn"
    return dataclasses.replace(
        p, extra_out_bytes=p.extra_out_bytes + _MUL_BYTES + (0.0 if paid else _HARDSIGMOID_BYTES),
        extra_dispatches=p.extra_dispatches + (1 if paid else 2), fp32_equivalent=False,
        extra_fp32_ops_per_out=p.extra_fp32_ops_per_out + _HARDSIGMOID_FLOPS + 1.0,
        extra_act_flops_per_out=p.extra_act_flops_per_out + _HARDSIGMOID_FLOPS, extra_act_op="HardSigmoid",
        note="; ".join([*([p.note] if p.note else []), "HardSwish written as HardSigmoid + Mul, which ORT fuses back "
                        "only into an NCHWc Conv: two fp32 kernels of their own"]))


# An fp16 image stem (a dense Conv of few input channels, `convsmall`) behind a shared Cast: MLAS's plain NCHW Conv runs
# an SGEMM of K = 3 x kh x kw per output element, which its MACs do not price. Calibration's stemact-shared-* cases (a
# Zen 4, 2026-12-07, per stem at 224 px: 8 outputs 238 us, 16 318, 32 523, 48 710; 3x3 at 160 px 256 us; 7x7 with 64
# outputs 3.37 ms) rise by a fixed cost per output element beside one per MAC and one per im2col element (3x3 at 224:
# ~0.97 ns per output element, 7x7 ~3.3 ns). With a rate, a setup and the im2col cost alone they fitted -15..+11%.
STEM_NCHW_KIND = "convsmall"


def fp16_nchw_path(p: Path, facts: frozenset[str], nchw: bool, kind: str) -> Path:
    """An fp16 task `p` with what its Conv leaving NCHWc (`nchw`: behind a shared Cast) adds: a HardSwish's split
    kernels (split_hardswish), a stem's cost per output element (`convsmall.cast16nchw.out`)."""
    p = split_hardswish(p, facts, nchw)
    return dataclasses.replace(p, out_cost=True) if nchw and kind == STEM_NCHW_KIND and p.tag == CAST16NCHW else p
