"""Write valid `.tflite` flatbuffers without TensorFlow, for tests and benchmarks.

Uses the object API of the schema module LiteRT ships (`ai_edge_litert.schema_py_generated`):
fill `ModelT` / `SubGraphT` / `TensorT` / `OperatorT`, then `Pack` into a flatbuffers Builder.
`litert-torch` would convert from PyTorch instead, but it pulls in JAX, transformers and an older
typing_extensions, so the tests write the few ops they need directly. Every model written here
runs in `ai_edge_litert.interpreter.Interpreter` (tests check that).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_NP_TYPE = {np.dtype("float32"): 0, np.dtype("int32"): 2, np.dtype("int8"): 9, np.dtype("int64"): 4}


def _schema() -> Any:
    from ai_edge_litert import schema_py_generated as schema

    return schema


@dataclass
class TfliteWriter:
    """Accumulates tensors, buffers and operators of one subgraph; `save` writes the file."""

    description: str = "edgescope-tests"
    tensors: list[Any] = field(default_factory=list)
    buffers: list[Any] = field(default_factory=list)
    operators: list[Any] = field(default_factory=list)
    codes: dict[int, int] = field(default_factory=dict)  # builtin code -> index in operator_codes

    def __post_init__(self) -> None:
        s = _schema()
        self.s = s
        self.buffers.append(s.BufferT())  # buffer 0 is the empty buffer by convention

    def tensor(self, name: str, shape: list[int], dtype: str = "float32", data: np.ndarray | None = None,
               quant: tuple[list[float], list[int], int] | None = None) -> int:
        t = self.s.TensorT()
        t.name = name.encode()
        t.shape = np.array(shape, dtype=np.int32)
        t.type = _NP_TYPE[np.dtype(dtype)]
        t.buffer = 0
        if data is not None:
            b = self.s.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data, dtype=dtype).tobytes(), dtype=np.uint8)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        if quant is not None:
            q = self.s.QuantizationParametersT()
            q.scale, q.zeroPoint, q.quantizedDimension = list(quant[0]), list(quant[1]), quant[2]
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, name: str, arr: np.ndarray) -> int:
        return self.tensor(name, list(arr.shape), str(arr.dtype), data=arr)

    def op(self, code_name: str, inputs: list[int], outputs: list[int], options: Any = None,
           options_type: str | None = None) -> None:
        code = getattr(self.s.BuiltinOperator, code_name)
        if code not in self.codes:
            self.codes[code] = len(self.codes)
        o = self.s.OperatorT()
        o.opcodeIndex = self.codes[code]
        o.inputs = np.array(inputs, dtype=np.int32)
        o.outputs = np.array(outputs, dtype=np.int32)
        if options is not None:
            o.builtinOptionsType = getattr(self.s.BuiltinOptions, options_type or type(options).__name__[:-1])
            o.builtinOptions = options
        self.operators.append(o)

    def options(self, kind: str, **fields: Any) -> Any:
        obj = getattr(self.s, kind + "T")()
        for k, v in fields.items():
            setattr(obj, k, v)
        return obj

    def save(self, path: str | os.PathLike[str], inputs: list[int], outputs: list[int]) -> Path:
        import flatbuffers

        s = self.s
        sg = s.SubGraphT()
        sg.tensors, sg.operators, sg.name = self.tensors, self.operators, b"main"
        sg.inputs, sg.outputs = np.array(inputs, dtype=np.int32), np.array(outputs, dtype=np.int32)
        m = s.ModelT()
        m.version = 3
        m.description = self.description.encode()
        m.subgraphs, m.buffers = [sg], self.buffers
        m.operatorCodes = []
        for code in sorted(self.codes, key=self.codes.__getitem__):
            oc = s.OperatorCodeT()
            oc.builtinCode = code
            oc.deprecatedBuiltinCode = min(code, 127)  # the int8 field; 127 = "see builtin_code"
            oc.version = 1
            m.operatorCodes.append(oc)
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        Path(path).write_bytes(bytes(b.Output()))
        return Path(path)


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.1) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def cnn(path: str | os.PathLike[str], resolution: int = 32, width: int = 16, classes: int = 10) -> Path:
    """NHWC CNN: CONV_2D(ReLU6) -> DEPTHWISE_CONV_2D -> CONV_2D 1x1 -> ADD (residual) -> MEAN ->
    FULLY_CONNECTED, with one int8 weight DEQUANTIZEd into the classifier. Tensor names carry
    namespaces (`net/stem/conv`)."""
    rng = np.random.default_rng(0)
    w = TfliteWriter()
    x = w.tensor("input", [1, resolution, resolution, 3])
    half = resolution // 2
    stem = w.tensor("net/stem/conv/Relu6", [1, half, half, width])
    w.op("CONV_2D", [x, w.const("net/stem/conv/weights", _w(rng, width, 3, 3, 3)),
                     w.const("net/stem/conv/bias", _w(rng, width))], [stem],
         w.options("Conv2DOptions", padding=0, strideW=2, strideH=2, fusedActivationFunction=3))
    dw = w.tensor("net/block1/dw/Relu", [1, half, half, width])
    w.op("DEPTHWISE_CONV_2D", [stem, w.const("net/block1/dw/weights", _w(rng, 1, 3, 3, width)),
                               w.const("net/block1/dw/bias", np.zeros(width, np.float32))], [dw],
         w.options("DepthwiseConv2DOptions", padding=0, strideW=1, strideH=1, depthMultiplier=1,
                   fusedActivationFunction=1))
    pw = w.tensor("net/block1/pw/BiasAdd", [1, half, half, width])
    pw_w = _w(rng, width, 1, 1, width)
    pw_w[:, :, :, : width // 4] = 0.0  # a pruned slice, so sparsity shows in WeightStats
    w.op("CONV_2D", [dw, w.const("net/block1/pw/weights", pw_w), w.const("net/block1/pw/bias", _w(rng, width))],
         [pw], w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
    res = w.tensor("net/block1/add", [1, half, half, width])
    w.op("ADD", [stem, pw], [res], w.options("AddOptions"))
    pooled = w.tensor("net/head/mean", [1, width])
    w.op("MEAN", [res, w.const("net/head/axes", np.array([1, 2], np.int32))], [pooled],
         w.options("ReducerOptions", keepDims=False))
    q = np.clip(np.round(_w(rng, classes, width, scale=1.0) * 40), -127, 127).astype(np.int8)
    qw = w.tensor("net/head/fc/weights_int8", [classes, width], "int8", data=q,
                  quant=([0.025], [0], 0))
    fw = w.tensor("net/head/fc/weights", [classes, width])
    w.op("DEQUANTIZE", [qw], [fw])
    out = w.tensor("logits", [1, classes])
    w.op("FULLY_CONNECTED", [pooled, fw, w.const("net/head/fc/bias", _w(rng, classes))], [out],
         w.options("FullyConnectedOptions"))
    return w.save(path, [x], [out])


def transformer_block(path: str | os.PathLike[str], seq: int = 16, hidden: int = 32) -> Path:
    """One single-head attention block with residual and a ReLU MLP: FULLY_CONNECTED (q, k, v,
    out, mlp), BATCH_MATMUL, MUL (scale), SOFTMAX, ADD; names `block0/attn/...`, `block0/mlp/...`."""
    rng = np.random.default_rng(1)
    w = TfliteWriter()
    x = w.tensor("x", [1, seq, hidden])

    def dense(name: str, inp: int, n_out: int, act: int = 0) -> int:
        out = w.tensor(f"{name}/MatMul", [1, seq, n_out])
        opts = w.options("FullyConnectedOptions", keepNumDims=True, fusedActivationFunction=act)
        w.op("FULLY_CONNECTED", [inp, w.const(f"{name}/kernel", _w(rng, n_out, hidden)),
                                 w.const(f"{name}/bias", _w(rng, n_out))], [out], opts)
        return out

    q, k, v = (dense(f"block0/attn/{n}", x, hidden) for n in "qkv")
    scores = w.tensor("block0/attn/scores", [1, seq, seq])
    w.op("BATCH_MATMUL", [q, k], [scores], w.options("BatchMatMulOptions", adjX=False, adjY=True))
    scaled = w.tensor("block0/attn/scaled", [1, seq, seq])
    w.op("MUL", [scores, w.const("block0/attn/scale", np.array([hidden ** -0.5], np.float32))], [scaled],
         w.options("MulOptions"))
    probs = w.tensor("block0/attn/softmax", [1, seq, seq])
    w.op("SOFTMAX", [scaled], [probs], w.options("SoftmaxOptions", beta=1.0))
    ctx = w.tensor("block0/attn/context", [1, seq, hidden])
    w.op("BATCH_MATMUL", [probs, v], [ctx], w.options("BatchMatMulOptions", adjX=False, adjY=False))
    proj = dense("block0/attn/out", ctx, hidden)
    h = w.tensor("block0/attn/residual", [1, seq, hidden])
    w.op("ADD", [x, proj], [h], w.options("AddOptions"))
    m1 = dense("block0/mlp/fc1", h, hidden, act=1)
    m2 = dense("block0/mlp/fc2", m1, hidden)
    y = w.tensor("y", [1, seq, hidden])
    w.op("ADD", [h, m2], [y], w.options("AddOptions"))
    return w.save(path, [x], [y])


def int8_add(path: str | os.PathLike[str]) -> Path:
    """Fully int8 ADD of an int8 input and an int8 constant, each with its own scale/zero point."""
    w = TfliteWriter()
    x = w.tensor("x", [1, 8], "int8", quant=([0.1], [0], 0))
    c = w.tensor("c", [1, 8], "int8", data=np.arange(8, dtype=np.int8), quant=([0.1], [0], 0))
    y = w.tensor("y", [1, 8], "int8", quant=([0.2], [-3], 0))
    w.op("ADD", [x, c], [y], w.options("AddOptions"))
    return w.save(path, [x], [y])
