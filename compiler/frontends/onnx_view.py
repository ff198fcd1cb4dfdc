"""An ONNX-vocabulary view of a TFLite, Core ML or pt2 graph, for consumers that speak ONNX op types.

The simulator's cost model (`simulator/costs.py`) classifies ops by ONNX op type and reads conv
kernels as OIHW, Gemm kernels as [N, K] with `transB`. `onnx_view(graph)` returns a graph with the
same node ids, namespaces, locations, inputs and outputs, whose op types and attributes are the
ONNX equivalents and whose kernel weights are described in ONNX layout (shape only: WeightStats are
layout-free). The loaded graph keeps the format's own names for display; this view is for costing.

Ops without an equivalent keep their op type (the simulator calls them "other"). Mappings are data
(tables below), as in Netron's metadata files; each entry is (ONNX op type, attribute renames).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.graph import Graph, Node, Value

Attrs = dict[str, Any]

# -- TFLite builtin ops ---------------------------------------------------------------------------
_TFLITE: dict[str, str] = {
    "CONV_2D": "Conv", "DEPTHWISE_CONV_2D": "Conv", "TRANSPOSE_CONV": "ConvTranspose", "CONV_3D": "Conv",
    "FULLY_CONNECTED": "Gemm", "BATCH_MATMUL": "MatMul",
    "ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div", "SQUARED_DIFFERENCE": "Sub", "MAXIMUM": "Max",
    "MINIMUM": "Min", "POW": "Pow", "RELU": "Relu", "RELU6": "Clip", "RELU_N1_TO_1": "Clip", "LEAKY_RELU": "LeakyRelu",
    "PRELU": "PRelu", "LOGISTIC": "Sigmoid", "TANH": "Tanh", "HARD_SWISH": "HardSwish", "GELU": "Gelu", "EXP": "Exp",
    "LOG": "Log", "SQRT": "Sqrt", "RSQRT": "Reciprocal", "NEG": "Neg", "ABS": "Abs", "ELU": "Elu", "SIN": "Sin",
    "COS": "Cos", "FLOOR": "Floor", "CEIL": "Ceil", "ROUND": "Round", "SELECT": "Where", "SELECT_V2": "Where",
    "EQUAL": "Equal", "LESS": "Less", "GREATER": "Greater",
    "SOFTMAX": "Softmax", "LOG_SOFTMAX": "LogSoftmax",
    "MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin",
    "REDUCE_PROD": "ReduceProd", "ARG_MAX": "ArgMax", "ARG_MIN": "ArgMin", "CUMSUM": "CumSum",
    "AVERAGE_POOL_2D": "AveragePool", "MAX_POOL_2D": "MaxPool", "L2_POOL_2D": "LpPool",
    "RESHAPE": "Reshape", "SQUEEZE": "Squeeze", "EXPAND_DIMS": "Unsqueeze",
    "TRANSPOSE": "Transpose", "CONCATENATION": "Concat", "PACK": "Concat", "SPLIT": "Split", "SPLIT_V": "Split",
    "UNPACK": "Split", "SLICE": "Slice", "STRIDED_SLICE": "Slice", "GATHER": "Gather", "GATHER_ND": "GatherND",
    "EMBEDDING_LOOKUP": "Gather", "PAD": "Pad", "PADV2": "Pad", "MIRROR_PAD": "Pad", "TILE": "Tile",
    "BROADCAST_TO": "Expand", "DEPTH_TO_SPACE": "DepthToSpace", "SPACE_TO_DEPTH": "SpaceToDepth",
    "RESIZE_BILINEAR": "Resize", "RESIZE_NEAREST_NEIGHBOR": "Resize", "SCATTER_ND": "ScatterND",
    "QUANTIZE": "QuantizeLinear", "DEQUANTIZE": "DequantizeLinear", "CAST": "Cast",
    "SHAPE": "Shape", "FILL": "ConstantOfShape", "L2_NORMALIZATION": "LpNormalization",
}
_FUSED_ACT = {"RELU": "Relu", "RELU6": "Clip", "RELU_N1_TO_1": "Clip", "TANH": "Tanh"}

# -- Core ML MIL ops ------------------------------------------------------------------------------
_MIL: dict[str, str] = {
    "conv": "Conv", "conv_transpose": "ConvTranspose", "linear": "Gemm", "matmul": "MatMul", "einsum": "Einsum",
    "add": "Add", "sub": "Sub", "mul": "Mul", "real_div": "Div", "floor_div": "Div", "pow": "Pow",
    "maximum": "Max", "minimum": "Min", "relu": "Relu", "relu6": "Clip", "leaky_relu": "LeakyRelu", "prelu": "PRelu",
    "sigmoid": "Sigmoid", "tanh": "Tanh", "gelu": "Gelu", "silu": "Swish", "elu": "Elu", "softplus": "Softplus",
    "square": "Mul", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "rsqrt": "Reciprocal", "inverse": "Reciprocal", "abs": "Abs",
    "sin": "Sin", "cos": "Cos", "erf": "Erf", "select": "Where", "equal": "Equal", "less": "Less",
    "greater": "Greater", "clip": "Clip", "sigmoid_hard": "HardSigmoid", "thresholded_relu": "ThresholdedRelu",
    "softmax": "Softmax", "layer_norm": "LayerNormalization", "batch_norm": "BatchNormalization",
    "instance_norm": "InstanceNormalization", "l2_norm": "LpNormalization",
    "reduce_mean": "ReduceMean", "reduce_sum": "ReduceSum", "reduce_max": "ReduceMax", "reduce_min": "ReduceMin",
    "reduce_prod": "ReduceProd", "reduce_l2_norm": "ReduceL2", "reduce_argmax": "ArgMax", "reduce_argmin": "ArgMin",
    "topk": "TopK",
    "cumsum": "CumSum", "avg_pool": "AveragePool", "max_pool": "MaxPool", "l2_pool": "LpPool",
    "reshape": "Reshape", "squeeze": "Squeeze", "expand_dims": "Unsqueeze", "transpose": "Transpose",
    "concat": "Concat", "split": "Split", "slice_by_index": "Slice", "slice_by_size": "Slice", "gather": "Gather",
    "gather_nd": "GatherND", "pad": "Pad", "tile": "Tile", "depth_to_space": "DepthToSpace",
    "space_to_depth": "SpaceToDepth", "upsample_bilinear": "Resize", "upsample_nearest_neighbor": "Resize",
    "resize_bilinear": "Resize", "cast": "Cast", "quantize": "QuantizeLinear", "dequantize": "DequantizeLinear",
    "constexpr_affine_dequantize": "DequantizeLinear", "constexpr_blockwise_shift_scale": "DequantizeLinear",
    "constexpr_lut_to_dense": "DequantizeLinear", "identity": "Identity", "shape": "Shape",
    "scaled_dot_product_attention": "MultiHeadAttention", "while_loop": "Loop", "cond": "If",
}
# NeuralNetwork (.mlmodel) layer kinds.
_NN: dict[str, str] = {
    "convolution": "Conv", "innerProduct": "Gemm", "batchedMatmul": "MatMul", "batchnorm": "BatchNormalization",
    "activation": "Relu", "pooling": "MaxPool", "add": "Add", "multiply": "Mul", "softmax": "Softmax",
    "reduceMean": "ReduceMean", "reduceSum": "ReduceSum", "reshapeStatic": "Reshape", "reshape": "Reshape",
    "flatten": "Flatten", "concat": "Concat", "transpose": "Transpose", "layerNormalization": "LayerNormalization",
    "gelu": "Gelu", "upsample": "Resize", "padding": "Pad", "squeeze": "Squeeze", "expandDims": "Unsqueeze",
    "embedding": "Gather", "embeddingND": "Gather", "unary": "Sqrt", "loadConstantND": "Constant",
    "clip": "Clip", "softmaxND": "Softmax", "concatND": "Concat", "flattenTo2D": "Flatten", "sliceStatic": "Slice",
    "splitND": "Split", "split": "Split", "addBroadcastable": "Add", "multiplyBroadcastable": "Mul",
    "subtractBroadcastable": "Sub", "divideBroadcastable": "Div", "powBroadcastable": "Pow", "erf": "Erf",
    "reduceMax": "ReduceMax", "reduceL2": "ReduceL2", "gather": "Gather", "tile": "Tile", "permute": "Transpose",
    "constantPad": "Pad", "whereBroadcastable": "Where", "copy": "Identity", "loop": "Loop", "branch": "If",
    "lessThan": "Less", "greaterThan": "Greater", "lessEqual": "LessOrEqual", "greaterEqual": "GreaterOrEqual",
    # a LayerNorm written as NeuralNetwork layers: mvn (normalize) then scale (gamma, beta)
    "mvn": "LayerNormalization", "scale": "Mul", "bias": "Add",
}
# NeuralNetwork `activation` layers by their nonlinearity (was: every one read as a Relu).
_NN_ACTIVATION: dict[str, str] = {
    "ReLU": "Relu", "leakyReLU": "LeakyRelu", "thresholdedReLU": "ThresholdedRelu", "PReLU": "PRelu",
    "tanh": "Tanh", "scaledTanh": "Tanh", "sigmoid": "Sigmoid", "sigmoidHard": "HardSigmoid", "ELU": "Elu",
    "softsign": "Softsign", "softplus": "Softplus", "parametricSoftplus": "Softplus", "linear": "Identity",
}

# -- pt2 (ATen) ops -------------------------------------------------------------------------------
_ATEN: dict[str, str] = {
    "aten.conv1d": "Conv", "aten.conv2d": "Conv", "aten.conv3d": "Conv", "aten.convolution": "Conv",
    "aten.conv_transpose1d": "ConvTranspose", "aten.conv_transpose2d": "ConvTranspose",
    "aten.linear": "Gemm", "aten.addmm": "Gemm", "aten.matmul": "MatMul", "aten.mm": "MatMul", "aten.bmm": "MatMul",
    "aten.einsum": "Einsum", "aten.scaled_dot_product_attention": "MultiHeadAttention",
    "aten.add": "Add", "aten.sub": "Sub", "aten.mul": "Mul", "aten.div": "Div", "aten.pow": "Pow",
    "aten.maximum": "Max", "aten.minimum": "Min", "aten.relu": "Relu", "aten.relu_": "Relu", "aten.relu6": "Clip",
    "aten.hardtanh": "Clip", "aten.clamp": "Clip", "aten.leaky_relu": "LeakyRelu", "aten.prelu": "PRelu",
    "aten.sigmoid": "Sigmoid", "aten.tanh": "Tanh", "aten.gelu": "Gelu", "aten.silu": "Swish", "aten.silu_": "Swish",
    "aten.hardswish": "HardSwish", "aten.hardsigmoid": "HardSigmoid", "aten.elu": "Elu", "aten.exp": "Exp",
    "aten.log": "Log", "aten.sqrt": "Sqrt", "aten.rsqrt": "Reciprocal", "aten.reciprocal": "Reciprocal",
    "aten.neg": "Neg", "aten.abs": "Abs", "aten.sin": "Sin", "aten.cos": "Cos", "aten.erf": "Erf",
    "aten.where": "Where", "aten.eq": "Equal", "aten.lt": "Less", "aten.gt": "Greater",
    "aten.softmax": "Softmax", "aten._softmax": "Softmax", "aten.log_softmax": "LogSoftmax",
    "aten.layer_norm": "LayerNormalization", "aten.native_layer_norm": "LayerNormalization",
    "aten.batch_norm": "BatchNormalization", "aten._native_batch_norm_legit_no_training": "BatchNormalization",
    "aten.group_norm": "GroupNormalization", "aten.rms_norm": "RMSNormalization",
    "aten.mean": "ReduceMean", "aten.sum": "ReduceSum", "aten.amax": "ReduceMax", "aten.amin": "ReduceMin",
    "aten.argmax": "ArgMax", "aten.argmin": "ArgMin", "aten.topk": "TopK", "aten.cumsum": "CumSum",
    "aten.max_pool2d": "MaxPool", "aten.avg_pool2d": "AveragePool", "aten.adaptive_avg_pool2d": "GlobalAveragePool",
    "aten.view": "Reshape", "aten.reshape": "Reshape", "aten._unsafe_view": "Reshape", "aten.flatten": "Flatten",
    "aten.squeeze": "Squeeze", "aten.unsqueeze": "Unsqueeze", "aten.permute": "Transpose",
    "aten.transpose": "Transpose", "aten.t": "Transpose", "aten.cat": "Concat", "aten.split": "Split",
    "aten.split_with_sizes": "Split", "aten.chunk": "Split", "aten.slice": "Slice", "aten.select": "Gather",
    "aten.index_select": "Gather", "aten.embedding": "Gather", "aten.pad": "Pad", "aten.constant_pad_nd": "Pad",
    "aten.repeat": "Tile", "aten.expand": "Expand", "aten.upsample_nearest2d": "Resize",
    "aten.upsample_bilinear2d": "Resize", "aten.contiguous": "Identity", "aten.clone": "Identity",
    "aten.dropout": "Dropout", "aten.to": "Cast", "aten._to_copy": "Cast", "aten.type_as": "Cast",
}


def onnx_view(graph: Graph) -> Graph:
    """The graph in ONNX op vocabulary (see module doc); ONNX graphs come back unchanged."""
    convert = _CONVERTERS.get(graph.format)
    if convert is None:
        return graph
    values = dict(graph.values)
    nodes = [convert(n, graph, values) for n in graph.nodes]
    if graph.format == "coreml":
        nodes = _fold_hardswish(nodes, set(graph.outputs))
    return Graph(name=graph.name, format=graph.format, nodes=nodes, values=values, inputs=graph.inputs,
                 outputs=graph.outputs, metadata={**graph.metadata, "view": "onnx"}, eliminated=dict(graph.eliminated))


def _fold_hardswish(nodes: list[Node], outputs: set[str]) -> list[Node]:
    """coremltools writes a PyTorch Hardswish as three MIL ops, w = thresholded_relu(x, -3), y = sigmoid_hard(w,
    1/6, 0.5), mul(w, y) (coremltools 9.0, converters/mil/frontend/torch/ops.py `hardswish`; a NeuralNetwork file
    has the same three layers). They are one HardSwish, as an ONNX or TFLite export of the same network writes it:
    the mul becomes HardSwish(w) and the other two are marked `act_part` (a Core ML target runs them inside it,
    simulator/coreml_rules.py), so the network is priced as one pass over the tensor whichever format it came in
    (was three: MobileNetV3 / LCNet ML Programs 25-60% above their ONNX exports)."""
    readers: dict[str, list[int]] = {}
    for i, nd in enumerate(nodes):
        for v in dict.fromkeys(nd.inputs):
            readers.setdefault(v, []).append(i)
    out = list(nodes)
    for i, t in enumerate(nodes):
        if t.op_type != "ThresholdedRelu" or len(t.outputs) != 1 or t.outputs[0] in outputs:
            continue
        w = t.outputs[0]
        r = readers.get(w, [])
        hs = next((j for j in r if nodes[j].op_type == "HardSigmoid" and nodes[j].inputs[:1] == [w]), None)
        mul = next((j for j in r if nodes[j].op_type == "Mul"), None)
        if hs is None or mul is None or len(r) != 2 or nodes[hs].outputs[0] in outputs:
            continue
        y = nodes[hs].outputs[0]
        if readers.get(y) != [mul] or sorted(nodes[mul].inputs) != sorted([w, y]):
            continue
        out[i], out[hs] = (_node(n, n.op_type, {**n.attributes, "act_part": "HardSwish"}) for n in (t, nodes[hs]))
        out[mul] = _node(nodes[mul], "HardSwish", {})
        out[mul].inputs = [w]
    return out


def _node(n: Node, op_type: str, attrs: Attrs) -> Node:
    return Node(id=n.id, name=n.name, op_type=op_type, namespace=n.namespace, inputs=list(n.inputs),
                outputs=list(n.outputs), attributes=attrs, domain="", source_nodes=list(n.source_nodes),
                location=n.location, parent=n.parent, branch=n.branch)


def _reshape_weight(values: dict[str, Value], name: str, perm: Callable[[list[Any]], list[Any]]) -> None:
    v = values.get(name)
    if v is None or v.weight is None or not v.shape:
        return
    values[name] = Value(name=v.name, shape=perm(list(v.shape)), dtype=v.dtype, weight=v.weight, quant=v.quant)


def _tflite(n: Node, graph: Graph, values: dict[str, Value]) -> Node:
    op = _TFLITE.get(n.op_type, n.op_type)
    a: Attrs = {}
    src = n.attributes
    if "stride_h" in src:
        a["strides"] = [src["stride_h"], src["stride_w"]]
    if "dilation_h_factor" in src:
        a["dilations"] = [src["dilation_h_factor"], src["dilation_w_factor"]]
    if "filter_height" in src:
        a["kernel_shape"] = [src["filter_height"], src["filter_width"]]
    k = n.inputs[1] if len(n.inputs) > 1 else ""
    if n.op_type in ("CONV_2D", "CONV_3D"):
        _reshape_weight(values, k, lambda s: [s[0], s[-1], *s[1:-1]])  # OHWI -> OIHW
        kv = values.get(k)
        x = values.get(n.inputs[0])
        if kv is not None and kv.shape and x is not None and x.shape and isinstance(x.shape[-1], int) \
                and isinstance(kv.shape[1], int) and kv.shape[1] and x.shape[-1] != kv.shape[1]:
            a["group"] = x.shape[-1] // kv.shape[1]
    elif n.op_type == "DEPTHWISE_CONV_2D":
        _reshape_weight(values, k, lambda s: [s[-1], 1, *s[1:-1]])  # 1HW(C*m) -> (C*m)1HW
        x = values.get(n.inputs[0])
        if x is not None and x.shape and isinstance(x.shape[-1], int):
            a["group"] = x.shape[-1]
    elif n.op_type == "TRANSPOSE_CONV":
        # TFLite: (output_shape, weights OHWI, input, bias); ONNX: (input, weights IOHW, bias).
        ins = list(n.inputs)
        node = _node(n, op, a)
        node.inputs = [ins[2], ins[1], *(ins[3:4])] if len(ins) >= 3 else ins
        _reshape_weight(values, ins[1] if len(ins) > 1 else "", lambda s: [s[-1], s[0], *s[1:-1]])
        return node
    elif n.op_type == "FULLY_CONNECTED":
        a["transB"] = 1  # weights are [out, in]
    elif n.op_type == "BATCH_MATMUL":
        a["transA"], a["transB"] = int(bool(src.get("adj_x"))), int(bool(src.get("adj_y")))
    act = src.get("fused_activation_function")
    if act and act != "NONE":
        if op == "Conv":
            op = "FusedConv"
        elif op == "Gemm":
            op = "FusedGemm"
        a["activation"] = _FUSED_ACT.get(act, act.title())
    if n.op_type in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
        a["keepdims"] = int(bool(src.get("keep_dims")))
    if n.op_type == "SOFTMAX":
        a["axis"] = -1
    return _node(n, op, a)


def _coreml(n: Node, graph: Graph, values: dict[str, Value]) -> Node:
    if graph.metadata.get("model_type", "mlProgram") != "mlProgram":
        return _nn(n, values)
    op = _MIL.get(n.op_type, n.op_type)
    src = n.attributes
    a: Attrs = {}
    for mil, onnx in (("strides", "strides"), ("dilations", "dilations"), ("kernel_sizes", "kernel_shape"),
                      ("axes", "axes"), ("axis", "axis"), ("epsilon", "epsilon")):
        if mil in src:
            a[onnx] = src[mil]
    if "groups" in src:
        a["group"] = src["groups"]
    if "keep_dims" in src:
        a["keepdims"] = int(bool(src["keep_dims"]))
    if n.op_type == "linear":
        a["transB"] = 1  # MIL linear weight is [out, in]
    if n.op_type == "lstm" and src.get("direction", "forward") in ("forward", "bidirectional"):
        return _mil_lstm(n, values, a)
    if n.op_type == "matmul":
        a["transA"], a["transB"] = int(bool(src.get("transpose_x"))), int(bool(src.get("transpose_y")))
    if n.op_type in ("while_loop", "cond"):
        return _mil_control(n, op)
    return _node(n, op, a)


def _mil_control(n: Node, op: str) -> Node:
    """A MIL `while_loop` / `cond` as an ONNX Loop / If, its bodies, trip count and taken branch kept (costed per
    trip: simulator/control_flow.py). A Loop's first two inputs are M and cond: the while_loop's loop variables
    follow two omitted ones, so its initial counter (0) is not read as a trip count of 0."""
    keep = {k: v for k, v in n.attributes.items()
            if k in ("trip_count", "taken_branch") or (isinstance(v, dict) and "graph" in v)}
    node = _node(n, op, keep)
    if op == "Loop":
        node.inputs = ["", "", *n.inputs]
    return node


def _mil_lstm(n: Node, values: dict[str, Value], a: Attrs) -> Node:
    """A forward MIL `lstm` (x [T, B, I], weight_ih [4H, I], weight_hh [4H, H], bias [4H], initial_h / _c [B, H]) as
    an ONNX LSTM (X, W [1, 4H, I], R [1, 4H, H], B, -, initial_h, initial_c), so it is costed as an RNN (MACs per
    step, recurrent weights read at every step) and not as an unknown op (a keyword spotter's 2-layer LSTM: 0.17 ms
    as an ML Program, 0.44 as a NeuralNetwork file, 0.51 as ONNX on coreml/apple-a17). A bidirectional one (its
    reverse weights in `weight_ih_back`, `weight_hh_back`, `bias_back`) is ONNX's bidirectional LSTM: twice the steps'
    MACs and R read again each step of both directions (R described as [2, 4H, H]: the view's shapes only size the
    work; the reverse weights are read as the task's further inputs, so their bytes still count once)."""
    bound = dict(zip(n.attributes.get("input_params", ["x"]), n.inputs))
    r = values.get(bound.get("weight_hh", ""))
    if "x" not in bound or r is None or not r.shape or not isinstance(r.shape[-1], int):
        return _node(n, n.op_type, a)
    dirs = 2 if n.attributes.get("direction") == "bidirectional" else 1
    if dirs == 2 and "weight_hh_back" not in bound:
        return _node(n, n.op_type, a)
    for k in ("weight_ih", "weight_hh"):
        if k in bound:
            _reshape_weight(values, bound[k], lambda s: [1, *s] if len(s) == 2 else s)
    if dirs == 2:
        _reshape_weight(values, bound["weight_hh"], lambda s: [2, *s[1:]])
        a["direction"] = "bidirectional"
    node = _node(n, "LSTM", {**a, "hidden_size": int(r.shape[-1])})
    node.inputs = [bound.get(k, "") for k in ("x", "weight_ih", "weight_hh", "bias", "", "initial_h", "initial_c")]
    if dirs == 2:
        node.inputs += ["", *(bound.get(k, "") for k in ("weight_ih_back", "weight_hh_back", "bias_back"))]
    return node


def _nn(n: Node, values: dict[str, Value]) -> Node:
    op = _NN.get(n.op_type, n.op_type)
    src = n.attributes
    a: Attrs = {}
    if n.op_type in ("loop", "branch"):
        return _mil_control(n, op)
    if n.op_type in ("uniDirectionalLSTM", "biDirectionalLSTM"):
        return _nn_lstm(n, values)
    if n.op_type == "activation":
        op = _NN_ACTIVATION.get(src.get("activation", "ReLU"), "Relu")
    if n.op_type == "pooling":  # PoolingType MAX = 0 (the default, so absent), AVERAGE = 1, L2 = 2
        op = {1: "AveragePool", 2: "LpPool"}.get(int(src.get("type", 0)), "MaxPool")
        if src.get("globalPooling"):
            op = "GlobalAveragePool" if op == "AveragePool" else "GlobalMaxPool"
        else:
            a["kernel_shape"], a["strides"] = list(src.get("kernelSize", [])), list(src.get("stride", []))
    if n.op_type == "convolution" and len(n.inputs) > 1:
        a["group"] = int(src.get("nGroups", 1) or 1)
        a["strides"] = list(src.get("stride", [1, 1]))
        a["dilations"] = list(src.get("dilationFactor", [1, 1]))
        shape = [src.get("outputChannels", 0), src.get("kernelChannels", 0), *src.get("kernelSize", [1, 1])]
        _reshape_weight(values, n.inputs[1], lambda s: shape if all(shape) else s)
    if n.op_type == "innerProduct" and len(n.inputs) > 1:
        a["transB"] = 1
        shape = [src.get("outputChannels", 0), src.get("inputChannels", 0)]
        _reshape_weight(values, n.inputs[1], lambda s: shape if all(shape) else s)
    return _node(n, op, a)


def _nn_lstm(n: Node, values: dict[str, Value]) -> Node:
    """A NeuralNetwork LSTM layer (x [T, B, I, 1, 1], initial h / c per direction, then per direction 8 gate matrices
    and 4 biases, each a flat WeightParams) as an ONNX LSTM, costed per step as one (was an op of no work: the
    keyword spotter's NN file had 0 MACs in its LSTMs). W and R are the first input and recurrence matrices, described
    as [dirs, 4H, I] and [dirs, 4H, H] to size the work; every matrix is read as the task's further inputs, so the
    bytes are the file's."""
    dirs = 2 if n.op_type == "biDirectionalLSTM" else 1
    hidden, n_in = int(n.attributes.get("outputVectorSize", 0) or 0), int(n.attributes.get("inputVectorSize", 0) or 0)
    states, weights = n.inputs[1:1 + 2 * dirs], n.inputs[1 + 2 * dirs:]
    w = next((v for v in weights if v.endswith("/inputGateWeightMatrix")), "")
    r = next((v for v in weights if v.endswith("/inputGateRecursionMatrix")), "")
    x = values.get(n.inputs[0]) if n.inputs else None
    if not (hidden and n_in and w and r and x is not None and x.shape and len(x.shape) == 5 and x.shape[3:] == [1, 1]):
        return _node(n, "LSTM", {})
    values[x.name] = Value(name=x.name, shape=list(x.shape[:3]), dtype=x.dtype, weight=x.weight, quant=x.quant)
    _reshape_weight(values, w, lambda s: [dirs, 4 * hidden, n_in])
    _reshape_weight(values, r, lambda s: [dirs, 4 * hidden, hidden])
    node = _node(n, "LSTM", {"hidden_size": hidden, **({"direction": "bidirectional"} if dirs == 2 else {})})
    node.inputs = [n.inputs[0], w, r, "", "", *(states[:2] + ["", ""])[:2], "",
                   *(v for v in weights if v not in (w, r)), *states[2:]]
    return node


def _pt2(n: Node, graph: Graph, values: dict[str, Value]) -> Node:
    # An in-place variant (`aten.hardtanh_`, a ReLU6 with inplace=True) is its op's kernel
    op = _ATEN.get(n.op_type) or _ATEN.get(n.op_type.rstrip("_"), n.op_type)
    src = n.attributes
    a: Attrs = {}
    if "stride" in src:
        a["strides"] = src["stride"]
    if "dilation" in src:
        a["dilations"] = src["dilation"]
    if "groups" in src:
        a["group"] = src["groups"]
    if "kernel_size" in src:
        a["kernel_shape"] = src["kernel_size"]
    if n.op_type in ("aten.linear",):
        a["transB"] = 1  # weight [out, in]
    if n.op_type == "aten.addmm" and len(n.inputs) == 3:
        node = _node(n, op, a)
        node.inputs = [n.inputs[1], n.inputs[2], n.inputs[0]]  # addmm(bias, x, w) -> Gemm(x, w, bias)
        return node
    if n.op_type in ("aten.mean", "aten.sum", "aten.amax", "aten.amin"):
        a["keepdims"] = int(bool(src.get("keepdim")))
        if "dim" in src:
            a["axes"] = src["dim"]
    return _node(n, op, a)


_CONVERTERS: dict[str, Callable[[Node, Graph, dict[str, Value]], Node]] = {
    "tflite": _tflite, "coreml": _coreml, "pt2": _pt2,
}
