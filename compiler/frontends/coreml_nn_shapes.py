"""Shapes of a NeuralNetwork `.mlmodel`'s intermediate tensors, which the file does not store.

coremltools writes a NeuralNetwork with the input and output shapes only (the layers' `inputTensor` /
`outputTensor` stay empty), so without this every task but the first had unknown work (154 of 160 on
MobileNetV3-small). The shapes are propagated layer by layer from the inputs, by the rules of the layer
kinds the converter writes (NeuralNetwork.proto; ND semantics: convolution and pooling act on the last
three axes C, H, W, an inner product on C of (C, 1, 1) or on the last axis). A kind without a rule, or an
input of unknown shape, leaves its outputs unknown: the task says "work unknown", never a guessed zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Shape = list[int]

# Layers whose output has the shape of their first input.
_SAME = frozenset({"activation", "reverse", "batchnorm", "unary", "clip", "softmax", "softmaxND", "l2normalize", "mvn",
                   "layerNormalization", "gelu", "instanceNormalization", "lrn", "scale", "bias", "round", "sign",
                   "floor", "ceil", "erf", "sigmoid_hard", "copy"})
_BROADCAST = frozenset({"add", "multiply", "addBroadcastable", "multiplyBroadcastable", "subtractBroadcastable",
                        "divideBroadcastable", "maxBroadcastable", "minBroadcastable", "powBroadcastable", "max",
                        "min", "average", "whereBroadcastable", "greaterThan", "lessThan", "equal"})


def _window(size: int, k: int, s: int, d: int, pad: tuple[int, int] | None, same: bool, ceil: bool = False) -> int:
    if same:
        return -(-size // s)
    b, e = pad or (0, 0)
    span = size + b + e - d * (k - 1) - 1
    return (-(-span // s) if ceil else span // s) + 1


def _pads(p: Any, field: str) -> list[tuple[int, int]] | None:
    if p.WhichOneof(field) != "valid":
        return None
    return [(a.startEdgeSize, a.endEdgeSize) for a in p.valid.paddingAmounts.borderAmounts] or None


def _conv(p: Any, x: Shape) -> Shape:
    k = list(p.kernelSize) or [3, 3]
    s = list(p.stride) or [1, 1]
    d = list(p.dilationFactor) or [1, 1]
    pads = _pads(p, "ConvolutionPaddingType") or [(0, 0), (0, 0)]
    if p.isDeconvolution:
        hw = list(p.outputShape) or [(x[-2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - sum(pads[i]) for i in (0, 1)]
    else:
        same = p.WhichOneof("ConvolutionPaddingType") == "same"
        hw = [_window(x[-2 + i], k[i], s[i], d[i], pads[i], same) for i in (0, 1)]
    return [*x[:-3], int(p.outputChannels), *hw]


def _pool(p: Any, x: Shape) -> Shape:
    if p.globalPooling:
        return [*x[:-2], 1, 1]
    k = list(p.kernelSize) or [3, 3]
    s = list(p.stride) or [1, 1]
    kind = p.WhichOneof("PoolingPaddingType")
    if kind == "includeLastPixel":
        pads = [(a, a) for a in p.includeLastPixel.paddingAmounts] or [(0, 0), (0, 0)]
        hw = [_window(x[-2 + i], k[i], s[i], 1, pads[i], False, ceil=True) for i in (0, 1)]
    else:
        pads = _pads(p, "PoolingPaddingType") or [(0, 0), (0, 0)]
        hw = [_window(x[-2 + i], k[i], s[i], 1, pads[i], kind == "same") for i in (0, 1)]
    return [*x[:-2], *hw]


def _inner(p: Any, x: Shape) -> Shape:
    if len(x) >= 3 and x[-2:] == [1, 1]:
        return [*x[:-3], int(p.outputChannels), 1, 1]
    return [*x[:-1], int(p.outputChannels)]


def _broadcast(shapes: list[Shape]) -> Shape:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0]
        out.append(max(dims) if 0 not in dims else 0)
    return out


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


def _concat(p: Any, xs: list[Shape], axis: int) -> Shape:
    a = _axis(axis, len(xs[0]))
    return [*xs[0][:a], sum(x[a] for x in xs), *xs[0][a + 1:]]


def _reduce(p: Any, x: Shape) -> Shape:
    axes = set(range(len(x))) if p.reduceAll else {_axis(a, len(x)) for a in p.axes}
    if p.keepDims:
        return [1 if i in axes else d for i, d in enumerate(x)]
    return [d for i, d in enumerate(x) if i not in axes] or [1]


def _matmul(p: Any, xs: list[Shape]) -> Shape:
    a = xs[0][:-2] + (xs[0][-2:][::-1] if p.transposeA else xs[0][-2:])
    if len(xs) > 1:
        b = xs[1][-2:][::-1] if p.transposeB else xs[1][-2:]
        batch = _broadcast([a[:-2], xs[1][:-2]]) if len(a) > 2 or len(xs[1]) > 2 else []
        return [*batch, a[-2], b[-1]]
    return [*a[:-1], int(p.weightMatrixSecondDimension)]


def _split(p: Any, x: Shape, n_out: int) -> list[Shape | None]:
    a = _axis(int(p.axis), len(x))
    sizes = [int(v) for v in p.splitSizes] or [x[a] // n_out] * n_out
    return [[*x[:a], k, *x[a + 1:]] for k in sizes]


def _reshape(target: Shape, x: Shape) -> Shape:
    """ND reshape: 0 copies the input's dim, one -1 takes what is left."""
    out = [x[i] if d == 0 and i < len(x) else d for i, d in enumerate(target)]
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        out[out.index(-1)] = math.prod(x) // known if known else 0
    return out


def _recurrent(kind: str, p: Any, x: Shape, n_out: int) -> list[Shape | None]:
    """Recurrent layers take [Seq, B, C, 1, 1]: the sequence (or its last step) of H (2H both ways), then the
    final state(s) [1, B, H, 1, 1]."""
    h = int(p.outputVectorSize)
    seq = bool(p.params.sequenceOutput if kind.endswith("LSTM") else p.sequenceOutput)
    out = [x[0] if seq else 1, x[1], 2 * h if kind == "biDirectionalLSTM" else h, 1, 1]
    return [out] + [[1, x[1], h, 1, 1]] * (n_out - 1)


def _squeeze(p: Any, x: Shape) -> Shape:
    if p.squeezeAll:
        return [d for d in x if d != 1] or [1]
    axes = {_axis(a, len(x)) for a in p.axes}
    return [d for i, d in enumerate(x) if i not in axes]


def _expand(p: Any, x: Shape) -> Shape:
    out = list(x)
    rank = len(x) + len(p.axes)
    for a in sorted(_axis(a, rank) for a in p.axes):
        out.insert(a, 1)
    return out


def _slice(p: Any, x: Shape) -> Shape:
    out = list(x)
    for i in range(min(len(x), len(p.beginIds))):
        b = 0 if p.beginMasks[i] else _axis(p.beginIds[i], x[i])
        e = x[i] if p.endMasks[i] else _axis(p.endIds[i], x[i])
        s = p.strides[i] if i < len(p.strides) else 1
        out[i] = max(0, math.ceil((min(e, x[i]) - b) / s))
    return out


def _legacy_slice(p: Any, x: Shape) -> Shape:
    """The rank-5 `slice` layer: one of the C, H, W axes (SliceAxis 0, 1, 2), end <= 0 counting from the end."""
    a = len(x) - 3 + int(p.axis)
    end = int(p.endIndex) if p.endIndex > 0 else x[a] + int(p.endIndex)
    return [*x[:a], max(0, -(-(min(end, x[a]) - int(p.startIndex)) // max(1, int(p.stride)))), *x[a + 1:]]


def _flatten2d(p: Any, x: Shape) -> Shape:
    a = _axis(p.axis, len(x))
    return [math.prod(x[:a]), math.prod(x[a:])]


def _upsample(p: Any, x: Shape) -> Shape:
    f = list(p.scalingFactor) or list(p.fractionalScalingFactor) or [1, 1]
    return [*x[:-2], int(x[-2] * f[0]), int(x[-1] * f[1])]


def _padding(p: Any, x: Shape) -> Shape:
    amounts = [(a.startEdgeSize, a.endEdgeSize) for a in p.paddingAmounts.borderAmounts] or [(0, 0), (0, 0)]
    return [*x[:-2], x[-2] + sum(amounts[0]), x[-1] + sum(amounts[1])]


_ONE: dict[str, Callable[[Any, Shape], Shape]] = {
    "convolution": _conv, "pooling": _pool, "innerProduct": _inner, "reduceMean": _reduce, "reduceSum": _reduce,
    "reduceMax": _reduce, "reduceMin": _reduce, "reduceProd": _reduce, "reduceL2": _reduce,
    "reduceLogSumExp": _reduce, "squeeze": _squeeze, "expandDims": _expand, "sliceStatic": _slice,
    "flattenTo2D": _flatten2d, "upsample": _upsample, "padding": _padding,
    "reshapeStatic": lambda p, x: _reshape([int(d) for d in p.targetShape], x),
    "transpose": lambda p, x: [x[int(a)] for a in p.axes],
    "embeddingND": lambda p, x: [*x[:-1], int(p.embeddingSize)] if x and x[-1] == 1 else [*x, int(p.embeddingSize)],
    "loadConstantND": lambda p, x: [int(d) for d in p.shape],
    "flatten": lambda p, x: [*x[:-3], math.prod(x[-3:]), 1, 1],
    "slice": lambda p, x: _legacy_slice(p, x),
}


def out_shapes(kind: str, params: Any, ins: list[Shape | None], n_out: int) -> list[Shape | None]:
    """The shapes of one layer's outputs from its inputs' (None: unknown)."""
    if kind == "loadConstantND":
        return [_ONE[kind](params, [])]
    if not ins or any(s is None for s in ins):
        return [None] * n_out
    xs: list[Shape] = [s for s in ins if s is not None]
    try:
        if kind in _SAME:
            return [list(xs[0])] * n_out
        if kind in _BROADCAST:
            return [_broadcast(xs)] * n_out
        if kind in ("concat", "concatND"):
            return [_concat(params, xs, -3 if kind == "concat" else int(params.axis))]
        if kind == "batchedMatmul":
            return [_matmul(params, xs)]
        if kind == "gather" and len(xs) == 2:  # a loop body's step: x[i] along `axis`
            a = _axis(params.axis, len(xs[0]))
            return [[*xs[0][:a], *xs[1], *xs[0][a + 1:]]]
        if kind in ("scatter", "copy"):  # the data tensor, updated / as it is
            return [list(xs[0])] * n_out
        if kind in ("lessThan", "greaterThan", "lessEqual", "greaterEqual", "equal", "notEqual"):
            return [_broadcast(xs)] * n_out
        if kind == "splitND":
            return _split(params, xs[0], n_out)
        if kind in ("uniDirectionalLSTM", "biDirectionalLSTM", "gru", "simpleRecurrent"):
            return _recurrent(kind, params, xs[0], n_out)
        if kind in _ONE and params is not None:
            return [_ONE[kind](params, xs[0])] + [None] * (n_out - 1)
    except (IndexError, ValueError, ZeroDivisionError):  # a layer of a form these rules do not cover
        pass
    return [None] * n_out
