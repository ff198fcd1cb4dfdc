"""`.tflite` models for tests and benchmarks, written with `compiler.frontends.tflite_writer` (no TensorFlow).
Every model written here runs in `ai_edge_litert.interpreter.Interpreter` (tests check that)."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from compiler.frontends.tflite_writer import TfliteWriter

__all__ = ["TfliteWriter", "cnn", "transformer_block", "int8_add", "op_zoo", "with_custom_op", "shape_arithmetic",
           "computed_reshape", "fp16_mlp", "depthwise_trio", "mediapipe_ops"]


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.1) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def cnn(path: str | os.PathLike[str], resolution: int = 32, width: int = 16, classes: int = 10,
        fp16: bool = False) -> Path:
    """NHWC CNN: CONV_2D(ReLU6) -> DEPTHWISE_CONV_2D -> CONV_2D 1x1 -> ADD (residual) -> MEAN ->
    FULLY_CONNECTED, with one int8 weight DEQUANTIZEd into the classifier. Tensor names carry
    namespaces (`net/stem/conv`). `fp16`: the conv filters are stored fp16 behind DEQUANTIZE operators,
    as fp16-weight converters write them."""
    rng = np.random.default_rng(0)
    w = TfliteWriter()
    if fp16:
        plain = w.const

        def const(name: str, arr: np.ndarray) -> int:
            if not name.endswith("/weights") or arr.dtype != np.float32:
                return plain(name, arr)
            out = w.tensor(name, list(arr.shape))
            w.op("DEQUANTIZE", [plain(name + "_fp16", arr.astype(np.float16))], [out])
            return out
        w.const = const  # type: ignore[method-assign]
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


def op_zoo(path: str | os.PathLike[str]) -> Path:
    """One operator of each builtin real converters emit, chained so LiteRT runs them all (hand-computed
    work in tests/formats/test_tflite_work.py). Weights reach their kernels in the file's own ways: fp16
    and per-channel int8 behind DEQUANTIZE, a depth multiplier of 2, a sparse matrix behind DENSIFY."""
    rng = np.random.default_rng(2)
    w = TfliteWriter()
    x = w.tensor("x", [1, 8, 8, 4])
    s = w.tensor("s", [1, 6, 8])
    t = lambda name, shape, dtype="float32", **kw: w.tensor(name, shape, dtype, **kw)  # noqa: E731
    dw16 = w.const("dw/w_fp16", _w(rng, 1, 3, 3, 8).astype(np.float16))
    dw_w = t("dw/w", [1, 3, 3, 8])
    w.op("DEQUANTIZE", [dw16], [dw_w])
    y1 = t("dw/out", [1, 8, 8, 8])
    w.op("DEPTHWISE_CONV_2D", [x, dw_w, w.const("dw/b", _w(rng, 8))], [y1],
         w.options("DepthwiseConv2DOptions", padding=0, strideW=1, strideH=1, depthMultiplier=2,
                   fusedActivationFunction=3))
    q = np.clip(np.round(_w(rng, 16, 3, 3, 8, scale=40.0)), -127, 127).astype(np.int8)
    c8 = w.tensor("conv/w_int8", [16, 3, 3, 8], "int8", data=q, quant=([0.01] * 16, [0] * 16, 0))
    c_w = t("conv/w", [16, 3, 3, 8])
    w.op("DEQUANTIZE", [c8], [c_w])
    y2 = t("conv/out", [1, 4, 4, 16])
    w.op("CONV_2D", [y1, c_w, w.const("conv/b", _w(rng, 16))], [y2],
         w.options("Conv2DOptions", padding=0, strideW=2, strideH=2))
    y3 = t("hswish", [1, 4, 4, 16])
    w.op("HARD_SWISH", [y2], [y3])
    y4 = t("mul", [1, 4, 4, 16])
    w.op("MUL", [y3, w.const("mul/c", _w(rng, 16))], [y4], w.options("MulOptions"))
    y5 = t("add", [1, 4, 4, 16])
    w.op("ADD", [y4, y2], [y5], w.options("AddOptions", fusedActivationFunction=1))
    y6 = t("pad", [1, 6, 6, 16])
    w.op("PAD", [y5, w.const("pad/p", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))], [y6])
    y7 = t("avgpool", [1, 4, 4, 16])
    w.op("AVERAGE_POOL_2D", [y6], [y7], w.options("Pool2DOptions", padding=1, strideW=1, strideH=1,
                                                  filterWidth=3, filterHeight=3))
    y8 = t("maxpool", [1, 2, 2, 16])
    w.op("MAX_POOL_2D", [y7], [y8], w.options("Pool2DOptions", padding=1, strideW=2, strideH=2,
                                              filterWidth=2, filterHeight=2))
    y9 = t("bilinear", [1, 4, 4, 16])
    w.op("RESIZE_BILINEAR", [y8, w.const("bilinear/size", np.array([4, 4], np.int32))], [y9],
         w.options("ResizeBilinearOptions"))
    y10 = t("nearest", [1, 8, 8, 16])
    w.op("RESIZE_NEAREST_NEIGHBOR", [y9, w.const("nearest/size", np.array([8, 8], np.int32))], [y10],
         w.options("ResizeNearestNeighborOptions"))
    y11 = t("deconv", [1, 16, 16, 8])
    w.op("TRANSPOSE_CONV", [w.const("deconv/shape", np.array([1, 16, 16, 8], np.int32)),
                            w.const("deconv/w", _w(rng, 8, 3, 3, 16)), y10], [y11],
         w.options("TransposeConvOptions", padding=0, strideW=2, strideH=2))
    y12 = t("mean", [1, 8])
    w.op("MEAN", [y11, w.const("mean/axes", np.array([1, 2], np.int32))], [y12],
         w.options("ReducerOptions", keepDims=False))
    y13 = t("reshape", [1, 1, 8])
    w.op("RESHAPE", [y12, w.const("reshape/shape", np.array([1, 1, 8], np.int32))], [y13])
    z1 = t("fc", [1, 6, 12])
    w.op("FULLY_CONNECTED", [s, w.const("fc/w", _w(rng, 12, 8)), w.const("fc/b", _w(rng, 12))], [z1],
         w.options("FullyConnectedOptions", keepNumDims=True))
    z2 = t("slice", [1, 6, 8])
    w.op("STRIDED_SLICE", [z1, w.const("slice/begin", np.array([0, 0, 0], np.int32)),
                           w.const("slice/end", np.array([1, 6, 8], np.int32)),
                           w.const("slice/strides", np.array([1, 1, 1], np.int32))], [z2],
         w.options("StridedSliceOptions"))
    z3 = t("scores", [1, 6, 6])
    w.op("BATCH_MATMUL", [z2, z2], [z3], w.options("BatchMatMulOptions", adjX=False, adjY=True))
    z4 = t("softmax", [1, 6, 6])
    w.op("SOFTMAX", [z3], [z4], w.options("SoftmaxOptions", beta=1.0))
    z5 = t("context", [1, 6, 8])
    w.op("BATCH_MATMUL", [z4, z2], [z5], w.options("BatchMatMulOptions", adjX=False, adjY=False))
    z6 = t("gelu", [1, 6, 8])
    w.op("GELU", [z5], [z6], w.options("GeluOptions", approximate=False))
    z7 = t("concat", [1, 7, 8])
    w.op("CONCATENATION", [z6, y13], [z7], w.options("ConcatenationOptions", axis=1))
    z8 = t("transpose", [1, 8, 7])
    w.op("TRANSPOSE", [z7, w.const("transpose/perm", np.array([0, 2, 1], np.int32))], [z8])
    z9 = t("quant", [1, 8, 7], "int8", quant=([0.05], [0], 0))
    w.op("QUANTIZE", [z8], [z9])
    z10 = t("dequant", [1, 8, 7])
    w.op("DEQUANTIZE", [z9], [z10])
    sparse = _w(rng, 5, 7)
    sparse[:, 1:] = np.where(rng.random((5, 6)) < 0.7, 0.0, sparse[:, 1:])
    sp = w.sparse_const("sparse/w", sparse.astype(np.float32))
    sp_w = t("sparse/dense", [5, 7])
    w.op("DENSIFY", [sp], [sp_w])
    z11 = t("sparse/fc", [8, 5])
    w.op("FULLY_CONNECTED", [z10, sp_w, -1], [z11], w.options("FullyConnectedOptions"))
    return w.save(path, [x, s], [z11])


def with_custom_op(path: str | os.PathLike[str], code: str = "EdgescopeTestOp") -> Path:
    """CONV_2D -> a custom operator no LiteRT build resolves -> ADD -> FULLY_CONNECTED, and a second branch
    that does not depend on it, as models with a vendor's custom kernels (MediaPipe's) are."""
    rng = np.random.default_rng(4)
    w = TfliteWriter()
    x = w.tensor("x", [1, 8, 8, 3])
    c = w.tensor("conv", [1, 8, 8, 8])
    w.op("CONV_2D", [x, w.const("conv/w", _w(rng, 8, 3, 3, 3)), w.const("conv/b", _w(rng, 8))], [c],
         w.options("Conv2DOptions", padding=0, strideW=1, strideH=1, fusedActivationFunction=1))
    u = w.tensor("custom", [1, 8, 8, 8])
    w.op(code, [c], [u], custom=True)
    a = w.tensor("add", [1, 8, 8, 8])
    w.op("ADD", [u, c], [a], w.options("AddOptions"))
    m = w.tensor("mean", [1, 8])
    w.op("MEAN", [a, w.const("mean/axes", np.array([1, 2], np.int32))], [m], w.options("ReducerOptions"))
    y = w.tensor("logits", [1, 4])
    w.op("FULLY_CONNECTED", [m, w.const("fc/w", _w(rng, 4, 8)), w.const("fc/b", _w(rng, 4))], [y],
         w.options("FullyConnectedOptions"))
    s = w.tensor("side", [1, 8, 8, 3])
    w.op("LOGISTIC", [x], [s])
    return w.save(path, [x], [y, s])


def mediapipe_ops(path: str | os.PathLike[str], builtin: bool = False, width: int = 16) -> Path:
    """CONV_2D -> MaxPoolingWithArgmax2D -> MaxUnpooling2D -> Convolution2DTransposeBias (2x2, stride 2), MediaPipe's
    custom operators with their options as C structs (TfLitePoolParams, TfLiteTransposeConvParams; VALID = 2), the
    argmax as float32 as XNNPACK takes it. `builtin`: the twin with TFLite's own MAX_POOL_2D (a second output) and
    TRANSPOSE_CONV, which reads the conv's output (no unpooling: the same shape as the unpooled map). `width`: the
    conv's output channels, the deconvolution's input ones."""
    rng = np.random.default_rng(7)
    w = TfliteWriter()
    x = w.tensor("x", [1, 32, 32, 3])
    c = w.tensor("conv", [1, 32, 32, width])
    w.op("CONV_2D", [x, w.const("conv/w", _w(rng, width, 3, 3, 3)), w.const("conv/b", _w(rng, width))], [c],
         w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
    v = w.tensor("pool", [1, 16, 16, width])
    pool = struct.pack("<6i", 2, 2, 2, 2, 2, 0)  # padding, stride w / h, filter w / h, activation
    if builtin:
        w.op("MAX_POOL_2D", [c], [v], w.options("Pool2DOptions", padding=1, strideW=2, strideH=2, filterWidth=2,
                                                 filterHeight=2))
        u = c
    else:
        i = w.tensor("argmax", [1, 16, 16, width])
        w.op("MaxPoolingWithArgmax2D", [c], [v, i], custom=True)
        w.operators[-1].customOptions = np.frombuffer(pool, np.uint8)
        u = w.tensor("unpool", [1, 32, 32, width])
        w.op("MaxUnpooling2D", [v, i], [u], custom=True)
        w.operators[-1].customOptions = np.frombuffer(pool, np.uint8)
    y = w.tensor("deconv", [1, 64, 64, 8])
    kernel, bias = w.const("deconv/w", _w(rng, 8, 2, 2, width)), w.const("deconv/b", _w(rng, 8))
    if builtin:
        w.op("TRANSPOSE_CONV", [w.const("deconv/shape", np.array([1, 64, 64, 8], np.int32)), kernel, u, bias], [y],
             w.options("TransposeConvOptions", padding=1, strideW=2, strideH=2))
    else:
        w.op("Convolution2DTransposeBias", [u, kernel, bias], [y], custom=True)
        w.operators[-1].customOptions = np.frombuffer(struct.pack("<3i", 2, 2, 2), np.uint8)
    return w.save(path, [x], [y, v] if builtin else [y])


def computed_reshape(w: TfliteWriter, x: Any) -> Any:
    """x [-1, 16] reshaped to [batch, 4, 4] by a shape computed from it (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE), as
    TensorFlow's converter writes `tf.reshape(x, [tf.shape(x)[0], 4, 4])`. Returns the reshaped tensor."""
    shape = w.tensor("shape", [2], "int32")
    w.op("SHAPE", [x], [shape], w.options("ShapeOptions", outType=2))
    b = w.tensor("batch", [], "int32")
    ends = [w.const(f"slice/{k}", np.array([v], np.int32)) for k, v in (("begin", 0), ("end", 1), ("strides", 1))]
    w.op("STRIDED_SLICE", [shape, *ends], [b], w.options("StridedSliceOptions", shrinkAxisMask=1))
    target = w.tensor("target", [3], "int32")
    four = w.const("four", np.array(4, np.int32))
    w.op("PACK", [b, four, four], [target], w.options("PackOptions", valuesCount=3, axis=0))
    r = w.tensor("r", [1, 4, 4], signature=[-1, 4, 4])
    w.op("RESHAPE", [x, target], [r], w.options("ReshapeOptions"))
    return r


def shape_arithmetic(path: str | os.PathLike[str]) -> Path:
    """A dynamic batch (x: signature [-1, 16]) reshaped to a shape computed from it, as TensorFlow's converter writes
    `tf.reshape(x, [tf.shape(x)[0], 4, 4])`: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE, then FULLY_CONNECTED (rows of
    4 -> 8) and LOGISTIC. LiteRT's Prepare cannot size the RESHAPE (its shape is data) until an invoke."""
    w = TfliteWriter()
    x = w.tensor("x", [1, 16], signature=[-1, 16])
    r = computed_reshape(w, x)
    h = w.tensor("h", [4, 8], signature=[-1, 8])
    w.op("FULLY_CONNECTED", [r, w.const("fc/w", np.ones((8, 4), np.float32)), -1], [h],
         w.options("FullyConnectedOptions"))
    y = w.tensor("y", [4, 8], signature=[-1, 8])
    w.op("LOGISTIC", [h], [y])
    return w.save(path, [x], [y])


def fp16_mlp(path: str | os.PathLike[str], sizes: tuple[int, ...] = (64, 1024, 2048, 512)) -> Path:
    """FULLY_CONNECTED layers of batch 1 with fp16 weights behind DEQUANTIZE, as BirdNET's metadata model (a 27 MB
    fp32 MLP stored fp16): bound by its weights, small enough for a server's last-level cache."""
    rng = np.random.default_rng(5)
    w = TfliteWriter()
    x = prev = w.tensor("x", [1, sizes[0]])
    for k, (a, b) in enumerate(zip(sizes, sizes[1:])):
        fw = w.tensor(f"fc{k}/weights", [b, a])
        w.op("DEQUANTIZE", [w.const(f"fc{k}/weights_fp16", _w(rng, b, a).astype(np.float16))], [fw])
        out = w.tensor(f"fc{k}/out", [1, b])
        w.op("FULLY_CONNECTED", [prev, fw, -1], [out], w.options("FullyConnectedOptions", fusedActivationFunction=1))
        prev = out
    return w.save(path, [x], [prev])


def depthwise_trio(path: str | os.PathLike[str], taps: tuple[int, ...] = (7, 5, 3)) -> Path:
    """fp32 DEPTHWISE_CONV_2D of each kernel size in `taps` side by side on one [1, 14, 14, 64] input (XNNPACK picks
    its kernel by the tap count: 3x3 and 5x5 depthwise, 7x7 a grouped IGEMM)."""
    w = TfliteWriter(description="dw")
    x = w.tensor("x", [1, 14, 14, 64])
    ys = []
    for k in taps:
        y = w.tensor(f"dw{k}", [1, 14, 14, 64])
        w.op("DEPTHWISE_CONV_2D", [x, w.const(f"dw{k}/w", np.full([1, k, k, 64], 0.01, np.float32)),
                                   w.const(f"dw{k}/b", np.zeros(64, np.float32))], [y],
             w.options("DepthwiseConv2DOptions", padding=0, strideW=1, strideH=1, depthMultiplier=1))
        ys.append(y)
    return w.save(path, [x], ys)
