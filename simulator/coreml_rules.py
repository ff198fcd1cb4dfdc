"""What Core ML (`coreml/*` targets) writes and runs per task, read from the graph: the facts
`simulator.backends.plan` takes for a Core ML task (`coreml_facts`).

"""

from __future__ import annotations

from compiler.graph import Graph, Node

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
# Op types are ONNX's (a model predicted from its ONNX graph) or MIL's (a .pt2 converted to Core ML here).
_A8_OPS = frozenset({"Conv", "Gemm", "MatMul", "Add", "MaxPool", "AveragePool",
                     "conv", "linear", "add", "max_pool", "avg_pool"})
_A8_TWO_LIVE = frozenset({"Add", "add"})
_A8_NEEDS_WEIGHT = frozenset({"MatMul"})  # a MatMul by a constant is MIL `linear`; of two activations, `matmul`
_FLOATS = frozenset({"float32", "float16"})
_A8_ACTIVATIONS = frozenset({"Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid",
                             "relu", "relu6", "clip", "sigmoid", "tanh", "leaky_relu", "hard_sigmoid", "scaled_tanh"})


def coreml_facts(compiled: Graph) -> list[frozenset[str]]:
    """Per task, the Core ML facts above."""
    uploaded = compiled.format == "coreml" and "converted_from" not in compiled.metadata
    producer = {o: nd for nd in compiled.nodes for o in nd.outputs}
    readers: dict[str, int] = {}
    for nd in compiled.nodes:
        for v in dict.fromkeys(nd.inputs):
            readers[v] = readers.get(v, 0) + 1

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

    out = []
    for nd in compiled.nodes:
        x = nd.inputs[0] if nd.inputs else ""
        src = producer.get(x)
        fused = (nd.op_type in _A8_ACTIVATIONS and src is not None and quantized(src) and readers.get(x, 0) == 1
                 and x not in compiled.outputs)
        facts = {"ane_fused"} if fused else set()
        if nd.op_type in ("Cast", "cast") and nd.inputs and nd.outputs and (
                nd.inputs[0] in compiled.inputs or nd.outputs[0] in compiled.outputs):
            dtypes = {v.dtype for v in (compiled.values.get(nd.inputs[0]), compiled.values.get(nd.outputs[0]))
                      if v is not None}
            if len(dtypes) == 2 and dtypes <= _FLOATS:
                facts.add("io_cast")
        if uploaded:
            facts.add("a8_weights_only")
        elif not (quantized(nd) or fused):
            facts.add("a8_float")
        out.append(frozenset(facts))
    return out
