"""Small ONNX models written on demand, for tests and benchmarks across the project.

Every builder takes the output path, writes one model there and returns the path. No cache:
each call builds again, in well under a few seconds. Torch models use the TorchScript exporter
(`dynamo=False`): with torch 2.13 it takes ~0.1 s, keeps `/encoder/layer.0/...` style names
and leaves GELU as Erf arithmetic (so ORT's fusions have something to fuse). The dynamo exporter
(~3 s on first use) writes flat names plus namespace metadata; `dynamo=True` selects it.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 18
PathLike = str | os.PathLike[str]
PT2_SRC = Path(__file__).parent / "pt2src"  # the user code `edgescope export-pt2` saves inside a .pt2


# -- helpers --------------------------------------------------------------------------

def _save(model: onnx.ModelProto, path: PathLike) -> Path:
    onnx.checker.check_model(model)
    onnx.save(model, os.fspath(path))
    return Path(path)


def _model(graph: onnx.GraphProto, opset: int = OPSET) -> onnx.ModelProto:
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="edgescope-modelzoo")
    m.ir_version = 9  # ORT 1.32 reads up to IR 11; 9 keeps the files readable by older tools too
    return m


def _init(name: str, shape: list[int], rng: np.random.Generator, scale: float = 0.1) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def torch_export(module, args: tuple, path: PathLike, *, input_names: list[str], output_names: list[str],
                  dynamic_axes: dict | None = None, dynamo: bool = False, keep_batchnorm: bool = False,
                  opset: int = OPSET) -> Path:
    import logging

    import torch

    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # dynamo's "torchvision is not installed" lines

    module.eval()
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        if dynamo:
            dynamic_shapes = None
            if dynamic_axes:
                dynamic_shapes = {n: {ax: torch.export.Dim.DYNAMIC for ax in axes}
                                  for n, axes in dynamic_axes.items() if n in input_names}
            torch.onnx.export(module, args, os.fspath(path), dynamo=True, input_names=input_names,
                              output_names=output_names, dynamic_shapes=dynamic_shapes, verbose=False,
                              external_data=False)
        else:
            torch.onnx.export(module, args, os.fspath(path), dynamo=False, opset_version=opset,
                              input_names=input_names, output_names=output_names,
                              dynamic_axes=dynamic_axes, do_constant_folding=True,
                              # PRESERVE keeps BatchNormalization nodes in eval mode (EVAL folds them into Conv)
                              training=torch.onnx.TrainingMode.PRESERVE if keep_batchnorm else torch.onnx.TrainingMode.EVAL)
    return Path(path)


# -- torch models -----------------------------------------------------------------------

def mobilenet_v2_like(path: PathLike, width: float = 0.5, resolution: int = 96, dynamo: bool = False,
                      keep_batchnorm: bool = True) -> Path:
    """MobileNetV2-shaped CNN: stem conv, inverted residual blocks (1x1 expand, 3x3 depthwise,
    1x1 project, residual add when shapes allow), BatchNorm (kept as nodes unless `keep_batchnorm` is False,
    as an eval-mode export folds them), ReLU6, pooling, classifier."""
    import torch
    from torch import nn

    def c(ch: int) -> int:
        return max(8, int(ch * width) // 8 * 8)

    def conv_bn(cin: int, cout: int, k: int, s: int, groups: int = 1, act: bool = True) -> nn.Sequential:
        layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.ReLU6())
        return nn.Sequential(*layers)

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            self.use_res = stride == 1 and cin == cout
            layers = [] if expand == 1 else [conv_bn(cin, hidden, 1, 1)]
            layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, 1, act=False)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            return x + self.conv(x) if self.use_res else self.conv(x)

    class MobileNetV2Like(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # (expand, out channels, repeats, stride): a shortened MobileNetV2 table.
            table = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2), (6, 64, 2, 2), (6, 96, 1, 1)]
            cin = c(32)
            blocks: list[nn.Module] = [conv_bn(3, cin, 3, 2)]
            for t, ch, n, s in table:
                for i in range(n):
                    blocks.append(InvertedResidual(cin, c(ch), s if i == 0 else 1, t))
                    cin = c(ch)
            blocks.append(conv_bn(cin, c(320), 1, 1))
            self.features = nn.Sequential(*blocks)
            self.classifier = nn.Linear(c(320), 10)

        def forward(self, x):
            return self.classifier(self.features(x).mean((2, 3)))

    torch.manual_seed(0)
    model = MobileNetV2Like()
    with torch.no_grad():  # non-trivial BatchNorm statistics so folding is observable
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, resolution, resolution)
    return torch_export(model, (x,), path, input_names=["input"], output_names=["logits"], dynamo=dynamo,
                         keep_batchnorm=keep_batchnorm)


def bert_like(path: PathLike, layers: int = 4, hidden: int = 128, heads: int = 4, seq: int = 32,
              vocab: int = 1000, dynamo: bool = False, opset: int = OPSET, dynamic: bool = False) -> Path:
    """BERT-shaped encoder: token + position embeddings, LayerNorm, per layer multi-head attention
    written out (Q/K/V MatMul, scaled softmax with mask), GELU MLP, residuals and LayerNorm.

    `opset=11` writes LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div arithmetic (no LayerNormalization
    op before opset 17), which ORT's LayerNormFusion then has to find. ORT 1.32's built-in
    AttentionFusion matches neither export (it wants opset <= 12 op versions and a plain
    LayerNormalization feeding Q/K/V); attention stays separate ops on `ort-cpu/host`.
    `dynamic=True` makes batch and sequence symbolic (`batch`, `seq`): shape arithmetic
    (Shape/Gather/Concat) then stays in the graph."""
    import math

    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
            self.output = nn.Linear(hidden, hidden)

        def split(self, t):
            b, s, _ = t.shape
            return t.view(b, s, heads, hidden // heads).transpose(1, 2)

        def forward(self, x, mask_bias):
            q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
            scores = q @ k.transpose(-1, -2) / math.sqrt(hidden // heads) + mask_bias
            ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(x.shape)
            return self.output(ctx)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = Attention()
            self.ln1 = nn.LayerNorm(hidden)
            self.intermediate = nn.Linear(hidden, 4 * hidden)
            self.out = nn.Linear(4 * hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)

        def forward(self, x, mask_bias):
            x = self.ln1(x + self.attention(x, mask_bias))
            return self.ln2(x + self.out(nn.functional.gelu(self.intermediate(x))))

    class BertLike(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(vocab, hidden)
            self.position = nn.Embedding(512, hidden)
            self.ln = nn.LayerNorm(hidden)
            self.encoder = nn.ModuleList(Layer() for _ in range(layers))
            self.pooler = nn.Linear(hidden, hidden)

        def forward(self, input_ids, attention_mask):
            pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
            x = self.ln(self.word(input_ids) + self.position(pos))
            mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
            for layer in self.encoder:
                x = layer(x, mask_bias)
            return torch.tanh(self.pooler(x[:, 0]))

    torch.manual_seed(0)
    ids = torch.randint(0, vocab, (1, seq))
    mask = torch.ones(1, seq, dtype=torch.int64)
    return torch_export(BertLike(), (ids, mask), path, input_names=["input_ids", "attention_mask"],
                         output_names=["pooled"], dynamo=dynamo, opset=opset,
                         dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask")} if dynamic else None)


# -- onnx.helper models --------------------------------------------------------------------

def dynamic_dims(path: PathLike) -> Path:
    """Token model with symbolic `batch` and `seq`: ids [batch, seq] int64, mask [batch, seq] bool,
    embedding lookup, masked mean over `seq`, linear head. Symbolic dims must survive loading."""
    rng = np.random.default_rng(1)
    g = helper.make_graph(
        [
            helper.make_node("Gather", ["embed.weight", "input_ids"], ["emb"], name="/embed/Gather"),
            helper.make_node("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT, name="/pool/Cast"),
            helper.make_node("Unsqueeze", ["maskf", "axis_last"], ["mask3"], name="/pool/Unsqueeze"),
            helper.make_node("Mul", ["emb", "mask3"], ["masked"], name="/pool/Mul"),
            helper.make_node("ReduceSum", ["masked", "axis_seq"], ["summed"], keepdims=0, name="/pool/ReduceSum"),
            helper.make_node("ReduceSum", ["mask3", "axis_seq"], ["count"], keepdims=0, name="/pool/ReduceSum_1"),
            helper.make_node("Max", ["count", "one"], ["count1"], name="/pool/Max"),
            helper.make_node("Div", ["summed", "count1"], ["pooled"], name="/pool/Div"),
            helper.make_node("MatMul", ["pooled", "head.weight"], ["mm"], name="/head/MatMul"),
            helper.make_node("Add", ["mm", "head.bias"], ["logits"], name="/head/Add"),
        ],
        "dynamic_dims",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 4])],
        [_init("embed.weight", [100, 32], rng), _init("head.weight", [32, 4], rng), _init("head.bias", [4], rng),
         numpy_helper.from_array(np.array([-1], np.int64), "axis_last"),
         numpy_helper.from_array(np.array([1], np.int64), "axis_seq"),
         numpy_helper.from_array(np.array([1.0], np.float32), "one")],
    )
    return _save(_model(g), path)


def namespaced(path: PathLike, layers: int = 2, hidden: int = 16) -> Path:
    """Transformer-ish MatMul/Add/Softmax blocks with names like `/encoder/layer.0/attention/MatMul`."""
    rng = np.random.default_rng(2)
    nodes, inits = [], []
    x = "hidden_states"
    for i in range(layers):
        p = f"/encoder/layer.{i}"
        for part in ("query", "key"):
            inits.append(_init(f"encoder.layer.{i}.attention.{part}.weight", [hidden, hidden], rng))
            nodes.append(helper.make_node("MatMul", [x, f"encoder.layer.{i}.attention.{part}.weight"],
                                          [f"{p}/attention/{part}/MatMul_output_0"], name=f"{p}/attention/{part}/MatMul"))
        nodes += [
            helper.make_node("Transpose", [f"{p}/attention/key/MatMul_output_0"], [f"{p}/attention/Transpose_output_0"],
                             perm=[0, 2, 1], name=f"{p}/attention/Transpose"),
            helper.make_node("MatMul", [f"{p}/attention/query/MatMul_output_0", f"{p}/attention/Transpose_output_0"],
                             [f"{p}/attention/MatMul_output_0"], name=f"{p}/attention/MatMul"),
            helper.make_node("Softmax", [f"{p}/attention/MatMul_output_0"], [f"{p}/attention/Softmax_output_0"],
                             axis=-1, name=f"{p}/attention/Softmax"),
            helper.make_node("MatMul", [f"{p}/attention/Softmax_output_0", x], [f"{p}/attention/MatMul_1_output_0"],
                             name=f"{p}/attention/MatMul_1"),
            helper.make_node("Add", [x, f"{p}/attention/MatMul_1_output_0"], [f"{p}/Add_output_0"], name=f"{p}/Add"),
        ]
        x = f"{p}/Add_output_0"
    nodes.append(helper.make_node("Relu", [x], ["output"], name="/head/Relu"))
    g = helper.make_graph(nodes, "namespaced",
                          [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [1, 8, hidden])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8, hidden])], inits)
    return _save(_model(g), path)


def flat_names(path: PathLike, n: int = 6) -> Path:
    """`n` Conv+Relu pairs named `Conv_0`, `Relu_1`, ... (old exporter style, no hierarchy); one
    node deliberately unnamed and two sharing a name, to exercise id assignment."""
    rng = np.random.default_rng(3)
    nodes, inits, x = [], [], "input"
    for i in range(n):
        inits.append(_init(f"w{i}", [4, 4, 3, 3], rng))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1], name=f"Conv_{2 * i}"))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"Relu_{2 * i + 1}"))
        x = f"r{i}"
    nodes[1].name = ""  # unnamed node
    nodes[3].name = "dup"  # repeated name
    nodes[5].name = "dup"
    nodes.append(helper.make_node("Flatten", [x], ["output"], name=f"Flatten_{2 * n}"))
    g = helper.make_graph(nodes, "flat_names", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 256])], inits)
    return _save(_model(g), path)


def tiny_cnn(path: PathLike) -> Path:
    """Conv+Relu, global pool, Flatten, Gemm; onnx.helper only (no torch), builds in milliseconds."""
    rng = np.random.default_rng(4)
    w = (rng.standard_normal([8, 3, 3, 3]) * 0.2).astype(np.float32)
    w[0] = 0.0  # one dead filter: sparsity 1/8 in the weight stats
    g = helper.make_graph(
        [
            helper.make_node("Conv", ["input", "conv.weight", "conv.bias"], ["conv_out"], pads=[1, 1, 1, 1], name="/conv/Conv"),
            helper.make_node("Relu", ["conv_out"], ["relu_out"], name="/relu/Relu"),
            helper.make_node("GlobalAveragePool", ["relu_out"], ["pool_out"], name="/pool/GlobalAveragePool"),
            helper.make_node("Flatten", ["pool_out"], ["flat"], name="/Flatten"),
            helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1, name="/fc/Gemm"),
        ],
        "tiny_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(w, "conv.weight"), _init("conv.bias", [8], rng),
         _init("fc.weight", [10, 8], rng), _init("fc.bias", [10], rng)],
    )
    return _save(_model(g), path)


def stored_fp16(src: PathLike, path: PathLike, layout: str = "graph") -> Path:
    """`src` (an fp32 model) stored fp16 as the tools in use write it. `graph`: ORT's fp16 converter (the
    onnxconverter_common code) with fp32 inputs and outputs, `graph-io16`: the same with fp16 ones (as
    `model.half()` before torch.onnx.export); `casts`: every float initializer fp16 behind a `Cast(to=float)`,
    the graph fp32 (the converter's form for the nodes it blocks, with force_fp16_initializers)."""
    model = onnx.load(os.fspath(src))
    if layout in ("graph", "graph-io16"):
        from onnxruntime.transformers.float16 import convert_float_to_float16

        # saved as the converter leaves it: its Casts at the inputs and outputs last, out of topological order
        # (which ORT accepts and onnx.checker does not)
        onnx.save(convert_float_to_float16(model, keep_io_types=layout == "graph"), os.fspath(path))
        return Path(path)
    assert layout == "casts", layout
    casts = []
    for t in model.graph.initializer:
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
            casts.append(helper.make_node("Cast", [t.name], [f"{t.name}_fp32"], to=TensorProto.FLOAT,
                                          name=f"{t.name}_cast"))
    names = {c.input[0] for c in casts}
    for n in model.graph.node:
        n.input[:] = [f"{v}_fp32" if v in names else v for v in n.input]
    nodes = casts + list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return _save(model, path)


def unknown_op(path: PathLike) -> Path:
    """Valid ONNX (structurally) with a `FooBar` node in the default domain: no runtime can run it."""
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("FooBar", ["r"], ["y"], name="foobar")],
        "unknown_op", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    m = _model(g)
    onnx.save(m, os.fspath(path))  # no checker: it rightly rejects FooBar
    return Path(path)


def large_chain(path: PathLike, n_nodes: int = 10_000, namespaces: bool = True, block: int = 50) -> Path:
    """`n_nodes` cheap elementwise nodes (Add/Mul/Relu cycle) on a [1, 8] tensor, each reading the
    previous one and a shared constant; names `/stage.3/block.12/Add_7` when `namespaces`."""
    ops = ("Add", "Mul", "Relu")
    nodes = []
    x = "input"
    for i in range(n_nodes):
        op = ops[i % 3]
        name = f"/stage.{i // (block * 10)}/block.{i // block}/{op}_{i}" if namespaces else f"{op}_{i}"
        ins = [x] if op == "Relu" else [x, "one" if op == "Mul" else "eps"]
        out = f"v{i}" if i < n_nodes - 1 else "output"
        nodes.append(helper.make_node(op, ins, [out], name=name))
        x = out
    g = helper.make_graph(nodes, "large_chain", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8])],
                          [numpy_helper.from_array(np.array([1.0], np.float32), "one"),
                           numpy_helper.from_array(np.array([1e-3], np.float32), "eps")])
    m = _model(g)
    onnx.save(m, os.fspath(path))  # the checker takes seconds at 50k nodes and adds nothing here
    return Path(path)


BUILDERS = {
    "mobilenet_v2_like": mobilenet_v2_like, "bert_like": bert_like, "dynamic_dims": dynamic_dims,
    "namespaced": namespaced, "flat_names": flat_names, "tiny_cnn": tiny_cnn, "unknown_op": unknown_op,
    "large_chain": large_chain,
}


# -- other formats (issue 6): TFLite written with LiteRT's flatbuffer schema, no TensorFlow --------

def tflite_cnn(path: PathLike, resolution: int = 32, width: int = 16) -> Path:
    """NHWC CNN .tflite: CONV_2D, DEPTHWISE_CONV_2D, ADD, MEAN, DEQUANTIZE (int8 weight), FULLY_CONNECTED."""
    from testkit import tflite_builder

    return tflite_builder.cnn(path, resolution=resolution, width=width)


def tflite_transformer_block(path: PathLike, seq: int = 16, hidden: int = 32) -> Path:
    """One attention + MLP block .tflite: FULLY_CONNECTED, BATCH_MATMUL, SOFTMAX, MUL, ADD."""
    from testkit import tflite_builder

    return tflite_builder.transformer_block(path, seq=seq, hidden=hidden)


def coreml_cnn_mlpackage_zip(path: PathLike) -> Path:
    """Small torch CNN converted by coremltools to an ML Program `.mlpackage`, zipped for upload."""
    from testkit import coreml_builder

    return coreml_builder.mlpackage_zip(path, "cnn")


def coreml_block_mlpackage_zip(path: PathLike) -> Path:
    """Pre-norm attention + MLP block as a zipped ML Program `.mlpackage`."""
    from testkit import coreml_builder

    return coreml_builder.mlpackage_zip(path, "block")


def coreml_cnn_mlmodel(path: PathLike) -> Path:
    """The small CNN as a NeuralNetwork `.mlmodel` (one file, weights inside)."""
    from testkit import coreml_builder

    return coreml_builder.mlmodel_nn(path)


def pt2_net_with_sources(path: PathLike) -> Path:
    """torch.export of testkit/pt2src/net.py:build (Conv stem, two residual Blocks from
    layers.py, Linear head) saved with both source files, as `edgescope export-pt2` does."""
    from edgescope.commands.export_pt2 import export_pt2

    return export_pt2(f"{PT2_SRC / 'net.py'}:build", Path(path))[0]


# -- torchvision's MobileNetV3-Small (seed 0, 1x3x224x224): seconds per export, so tests share one per run ------

def _mobilenet_v3_small():  # type: ignore[no-untyped-def]
    import corpus  # noqa: F401  (torchvision importable beside CPU torch)
    import torch
    import torchvision

    torch.manual_seed(0)
    return torchvision.models.mobilenet_v3_small(weights=None).eval(), (torch.randn(1, 3, 224, 224),)


def pt2_mobilenet_v3_small(path: PathLike) -> Path:
    """`torch.export` of MobileNetV3-Small saved as a .pt2 (~4 s)."""
    import torch

    module, args = _mobilenet_v3_small()
    torch.export.save(torch.export.export(module, args), os.fspath(path))
    return Path(path)


def mobilenet_v3_small_dynamo(path: PathLike) -> Path:
    """The same network by the dynamo ONNX exporter, input `x`, output `y`, weights inside the file (~7 s)."""
    module, args = _mobilenet_v3_small()
    return torch_export(module, args, path, input_names=["x"], output_names=["y"], dynamo=True)
