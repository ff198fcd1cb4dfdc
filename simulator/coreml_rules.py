"""What Core ML (`coreml/*` targets) writes and runs per task, read from the graph: the facts
`simulator.backends.plan` takes for a Core ML task (`coreml_facts`).

"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from simulator.device_facts import gelu_parts

# Core ML (`coreml/*`), from what the exporter writes (compiler/optimize/coreml_w8a8.py) and coremltools' W8A8 passes:
# - "a8_weights_only": the model is an uploaded ML Program, which cannot be run here to calibrate activations, so
#   `int8-static` is written as int8 weights with fp16 activations (every task).
# - "a8_float": coremltools' passes put int8 activations around conv, linear, add (both inputs live), avg_pool and
#   max_pool only, and the activation right after one of them (insert_suffix_quantize_dequantize_pair's list); every
#   other op (mul, a global pool = reduce_mean, softmax, matmul of two activations, norms...) stays fp16 in the file.
# - "ane_fused": that activation, the sole reader of a conv / linear / add output, runs inside its producer's
#   kernel on the ANE (coremltools matches conv -> activation -> quantize as one pattern "for more fusions on
#   hardware", optimize_activation_quantization.py), so it is not a pass of its own.
# - "io_cast": a Cast between fp32 and fp16 at a graph input or output (ORT's float16 converter with keep_io_types
#   writes one per input and output). An ML Program computes an fp32 model in fp16 and converts at its inputs and
#   outputs itself, which the cost model takes as free; the explicit Cast is that same conversion, so it costs
#   nothing and leaves the ANE partition whole (as a GPU task it cost two partition crossings).
# - "act_part": a SiLU's Sigmoid (x * Sigmoid(x)) and a GELU's Div (sqrt 2), Add (1) and two Muls around its Erf, as an
#   ONNX export writes them: coremltools converts a PyTorch SiLU / GELU to one MIL `silu` / `gelu` op (repo
#   apple/coremltools, coremltools/converters/mil/frontend/torch/ops.py: `mb.silu`, `mb.gelu`), which the published
#   Core ML models are, so one pass over the tensor (the Mul's, the Erf's), not two or five. The reverse for a
#   HardSwish: coremltools writes three ops (thresholded_relu, sigmoid_hard, mul), the ONNX view one HardSwish and
#   two parts (onnx_view._fold_hardswish), priced as an ONNX export's one HardSwish.
# - "ane_fused" also takes a SiLU (its Mul, or an ML Program's own silu) whose input is a conv's or linear's output that
#   only the SiLU reads, as for a Relu; not a GELU, which stays one pass of its own. The evidence is the published
#   times (cross-validated, leave one family out, the A17 fit's two figures; README): MobileViTv2 (25 SiLUs after
#   convs) held out +88..+140% with the SiLU as its own pass, -15..+2% inside the conv; SwiftFormer (A15) and Depth
#   Anything, whose GELUs follow convs / Linears, -39..0% with the GELU inside them, -29..+11% as its own pass.
# - "cpu_body": a task inside a Core ML loop or branch body (a `while_loop` / `cond` block, a NeuralNetwork `loop` /
#   `branch` layer's network) and the loop itself run on the CPU: Core ML runs no control flow on the ANE or GPU
#   (repo apple/coremltools, issue #2208: a while_loop of matmul + sigmoid never ran on the ANE nor the GPU; #1780,
#   Apple's reply: RNN / LSTM ops are not supported on the neural engine). Placed by op type, each tiny step op of a
#   GRU's loop went to the GPU, with a partition crossing per trip.
# - "conv_stage": a task that reads the output of a conv or linear (a Conv, ConvTranspose, Gemm or MatMul by a constant)
#   that only it reads: an arithmetic one (a residual Add after a block's last conv, a Linear's bias Add) moves its
#   activations at the rate of the conv's, through memory, not at the on-chip rate of the ANE's other element-wise
#   ops (apple-a17.yaml `kind_bandwidth_bytes_per_s`: `convstage` has no figure of its own, so it takes `default`). An
#   ANE op is a conv with a post stage (bias / nonlinearity) between an input and an output DMA, with two read streams
#   "used for things like sum", each from RAM or a manually managed L2 (repo commaai/openpilot @9a5d7db,
#   tinygrad_repo/extra/accel/ane/README.md): such an Add is the conv's op reading a second tensor. Which tensors
#   stay in the L2 is the compiler's choice, not published, so the rates are placed by the published times (the A17
#   fit, leave one family out: 6.5%, 94.7% within +-25% with the rule; every element-wise op at the chained rate
#   16.6%, 68.4%; all at the activation rate 41.3%, 31.6%; README "The A17 Pro's activations through memory").
# Op types are ONNX's (a model predicted from its ONNX graph) or MIL's (a .pt2 converted to Core ML here).
A8_WHY = {"a8_weights_only": "int8 activations need calibration: an uploaded ML Program runs on macOS only",
          "a8_float": "coremltools quantizes activations around conv, linear, add and pools only"}
ANE_FUSED_WHY = "runs inside its producer's kernel on the ANE (conv / linear / add + activation)"
_A8_OPS = frozenset({"Conv", "Gemm", "MatMul", "Add", "MaxPool", "AveragePool",
                     "conv", "linear", "add", "max_pool", "avg_pool"})
_A8_TWO_LIVE = frozenset({"Add", "add"})
_A8_NEEDS_WEIGHT = frozenset({"MatMul"})  # a MatMul by a constant is MIL `linear`; of two activations, `matmul`
_FLOATS = frozenset({"float32", "float16"})
_A8_ACTIVATIONS = frozenset({"Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid",
                             "relu", "relu6", "clip", "sigmoid", "tanh", "leaky_relu", "hard_sigmoid", "scaled_tanh"})


def _silus(g: Graph) -> dict[int, tuple[str, set[int]]]:
    """Per SiLU's carrying task (the Mul of x * Sigmoid(x), or an ML Program's silu: Swish), its input x and tasks."""
    readers: dict[str, list[int]] = {}
    for i, nd in enumerate(g.nodes):
        for v in dict.fromkeys(nd.inputs):
            readers.setdefault(v, []).append(i)
    found: dict[int, tuple[str, set[int]]] = {}
    for i, nd in enumerate(g.nodes):
        if nd.op_type == "Sigmoid" and nd.inputs and nd.outputs and nd.outputs[0] not in g.outputs:
            r = readers.get(nd.outputs[0], [])
            mul = g.nodes[r[0]] if len(r) == 1 else None
            if mul is not None and mul.op_type == "Mul" and sorted(mul.inputs) == sorted([nd.inputs[0], nd.outputs[0]]):
                found[r[0]] = (nd.inputs[0], {i, r[0]})
        elif nd.op_type == "Swish" and nd.inputs:
            found[i] = (nd.inputs[0], {i})
    return found


_CONV_STAGE_SRC = frozenset({"Conv", "ConvTranspose", "Gemm", "conv", "conv_transpose", "linear"})
_BY_CONSTANT = frozenset({"MatMul", "matmul"})
# An activation function (HardSwish, a GELU's Erf, an ML Program's gelu / silu) is not one: the same network's ONNX
# export and ML Program write it as different ops, which read the conv's output differently.
_ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Div", "add", "sub", "mul", "real_div"})
CONV_STAGE_RATE = "convstage"  # the rate kind of a "conv_stage" element-wise task (simulator.backends)


def _wiring(g: Graph) -> tuple[dict[str, Node], dict[str, int]]:
    """Each value's producer, and how many tasks read it (a task reading it twice counts once)."""
    producer = {o: nd for nd in g.nodes for o in nd.outputs}
    readers: dict[str, int] = {}
    for nd in g.nodes:
        for v in dict.fromkeys(nd.inputs):
            readers[v] = readers.get(v, 0) + 1
    return producer, readers


def _conv_stage(g: Graph, parts: set[int]) -> set[int]:
    """Arithmetic tasks (Add, Sub, Mul, Div; not part of a silu / gelu / hardswish, `parts`) with an input that is a
    conv's or linear's output only they read (not a graph output)."""
    producer, readers = _wiring(g)

    def weight(v: str) -> bool:
        val = g.values.get(v)
        return val is not None and val.weight is not None

    def conv_out(v: str) -> bool:
        src = producer.get(v)
        if src is None or readers.get(v, 0) != 1 or v in g.outputs:
            return False
        return src.op_type in _CONV_STAGE_SRC or (src.op_type in _BY_CONSTANT and any(weight(u) for u in src.inputs))

    return {i for i, nd in enumerate(g.nodes)
            if nd.op_type in _ARITHMETIC and i not in parts and any(conv_out(v) for v in nd.inputs if v)}


def coreml_facts(compiled: Graph) -> list[frozenset[str]]:
    """Per task, the Core ML facts above."""
    uploaded = compiled.format == "coreml" and "converted_from" not in compiled.metadata
    producer, readers = _wiring(compiled)

    def live(v: str) -> bool:
        val = compiled.values.get(v)
        return bool(v) and (val is None or val.weight is None)

    def quantized(nd: Node) -> bool:
        ins = [v for v in nd.inputs if live(v)]
        if nd.op_type not in _A8_OPS or not ins:
            return False
        if nd.op_type in _A8_TWO_LIVE:
            return len(ins) >= 2
        return nd.op_type not in _A8_NEEDS_WEIGHT or len(ins) < len([v for v in nd.inputs if v])

    def linear(v: str) -> bool:  # a conv's or linear's output (a Linear on 3-D: MatMul by a weight, + its bias)
        nd = producer.get(v)
        if nd is not None and nd.op_type in ("Add", "add") and any(not live(u) for u in nd.inputs):
            nd = next((producer[u] for u in nd.inputs if live(u) and u in producer), None)
        return nd is not None and nd.op_type in _A8_OPS - _A8_TWO_LIVE - {"MaxPool", "AveragePool", "max_pool",
                                                                            "avg_pool"} and quantized(nd)

    silus = _silus(compiled)
    parts = gelu_parts(compiled) | {j for m, (_, grp) in silus.items() for j in grp if j != m}
    stage = _conv_stage(compiled, parts | {i for i, nd in enumerate(compiled.nodes) if nd.attributes.get("act_part")})
    out = []
    for i, nd in enumerate(compiled.nodes):
        x = nd.inputs[0] if nd.inputs else ""
        src = producer.get(x)
        fused = (nd.op_type in _A8_ACTIVATIONS and src is not None and quantized(src) and readers.get(x, 0) == 1
                 and x not in compiled.outputs)
        in_stage = fused
        if i in silus:  # x read by the SiLU's tasks only
            x, grp = silus[i]
            in_stage = linear(x) and x not in compiled.outputs and readers.get(x, 0) == len(grp)
        facts = {"ane_fused"} if in_stage else set()
        if i in stage:
            facts.add("conv_stage")
        if i in parts or nd.attributes.get("act_part"):  # the latter: a HardSwish's (compiler/frontends/onnx_view.py)
            facts.add("act_part")
        if nd.op_type in ("Cast", "cast") and nd.inputs and nd.outputs and (
                nd.inputs[0] in compiled.inputs or nd.outputs[0] in compiled.outputs):
            dtypes = {v.dtype for v in (compiled.values.get(nd.inputs[0]), compiled.values.get(nd.outputs[0]))
                      if v is not None}
            if len(dtypes) == 2 and dtypes <= _FLOATS:
                facts.add("io_cast")
        if nd.parent or any(isinstance(b, dict) and "graph" in b for b in nd.attributes.values()):
            facts.add("cpu_body")
        if uploaded:
            facts.add("a8_weights_only")
        elif not (quantized(nd) or fused):
            facts.add("a8_float")
        out.append(frozenset(facts))
    return out


def on_cpu(p: Any, profile: Any, combo: Combo, fallbacks: Sequence[Combo], plan_on: Callable[[int, Combo], Any]) -> Any:
    """A `cpu_body` task's path on the CPU unit in place of `p` (the op type's own placement): fp32 activations
    first, since Core ML's CPU computes and keeps an fp16 program's tensors in fp32 (no cast per op), then the asked
    combo and its fallbacks. `plan_on(unit index, combo)`: backends' path on that unit, or None."""
    cpu = next((i for i, u in enumerate(profile.units) if u.name == "cpu"), None)
    if cpu is None or profile.units[p.unit].name == "cpu":
        return p
    wide = Combo("fp32", "fp32", combo.kernel, combo.sparsity)
    q = next((q for c in (wide, combo, *fallbacks) if (q := plan_on(cpu, c)) is not None), None)
    if q is None:
        return p
    note = "; ".join(x for x in (p.note, "in a loop or branch body: Core ML runs control flow on the CPU") if x)
    return dataclasses.replace(q, supported=p.supported, note=note)


def in_conv_stage(p: Any, kind: str, facts: frozenset[str], unit: str) -> Any:
    """Path `p` of a "conv_stage" element-wise task on the ANE at the conv's activation rate (`CONV_STAGE_RATE`: a
    profile without a figure of that name moves it at its `default` one); `p` itself otherwise."""
    if "conv_stage" in facts and kind == "elementwise" and unit == "ane" and not p.eliminated:
        return dataclasses.replace(p, rate_kind=CONV_STAGE_RATE)
    return p
