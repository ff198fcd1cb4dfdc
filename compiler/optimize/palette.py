"""Palettization as the ONNX exporter writes it (compiler.optimize.onnx_export): a weight's k-means table of 2^bits
float32 entries, its indices packed `8 // bits` per byte (6- and 8-bit a byte each), and the small decode subgraph
ORT constant-folds at load. Core ML's palettes take their tables from the same k-means (compiler.optimize.coreml_export)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


# Values Lloyd's iterations fit the table on: a weight with more is fitted on this many drawn from it (with a fixed
# seed), then every value assigned once. Fitting on all of VGG-16's 138 M took 13 passes of a 138 M searchsorted
# per palette: 300 s of its export check's 561.
KMEANS_FIT_VALUES = 1 << 20


def kmeans_1d(w: np.ndarray, bits: int, iters: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """(table[2^bits] float32, indices uint8) by Lloyd's algorithm on the values, seeded at quantiles (on at most
    KMEANS_FIT_VALUES of them), each value then given its nearest entry."""
    x = w.reshape(-1).astype(np.float64)
    k = 2 ** bits
    fit = x if x.size <= KMEANS_FIT_VALUES else x[np.random.default_rng(0).integers(0, x.size, KMEANS_FIT_VALUES)]
    table = np.quantile(fit, (np.arange(k) + 0.5) / k)
    for _ in range(iters):
        # Sorted table + midpoints = nearest-centroid assignment in O(n log k).
        table = np.sort(table)
        idx = np.searchsorted((table[1:] + table[:-1]) / 2, fit)
        sums = np.bincount(idx, weights=fit, minlength=k)
        counts = np.bincount(idx, minlength=k)
        table = np.where(counts > 0, sums / np.maximum(counts, 1), table)
    table = np.sort(table)
    idx = np.searchsorted((table[1:] + table[:-1]) / 2, x)
    return table.astype(np.float32), idx.astype(np.uint8)


def _pack(idx: np.ndarray, bits: int) -> np.ndarray:
    """Pack `8 // bits` indices per byte (low bits first); 6- and 8-bit indices take a byte each."""
    if bits >= 6:
        return idx.astype(np.uint8)
    per = 8 // bits
    pad = (-idx.size) % per
    v = np.concatenate([idx, np.zeros(pad, np.uint8)]).reshape(-1, per).astype(np.uint16)
    shifts = (np.arange(per) * bits).astype(np.uint16)
    return (v << shifts).sum(axis=1).astype(np.uint8)


def palettize_nodes(name: str, w: np.ndarray, bits: int) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Initializers + decode nodes that rebuild `name` (float32, w.shape) from packed indices."""
    table, idx = kmeans_1d(w, bits)
    packed = _pack(idx, bits)
    p = f"{name}__lut{bits}"
    inits = [numpy_helper.from_array(table, f"{p}_table"), numpy_helper.from_array(packed, f"{p}_idx"),
             numpy_helper.from_array(np.array(w.shape, np.int64), f"{p}_shape")]
    nodes: list[onnx.NodeProto] = []
    cur = f"{p}_idx"
    if bits < 6:
        per = 8 // bits
        inits += [numpy_helper.from_array((np.arange(per) * bits).astype(np.uint8), f"{p}_shifts"),
                  numpy_helper.from_array(np.array([2 ** bits - 1], np.uint8), f"{p}_mask"),
                  numpy_helper.from_array(np.array([1], np.int64), f"{p}_axis"),
                  numpy_helper.from_array(np.array([0], np.int64), f"{p}_zero"),
                  numpy_helper.from_array(np.array([w.size], np.int64), f"{p}_n"),
                  numpy_helper.from_array(np.array([-1], np.int64), f"{p}_flat")]
        nodes += [
            helper.make_node("Unsqueeze", [cur, f"{p}_axis"], [f"{p}_u"], name=f"{p}/Unsqueeze"),
            helper.make_node("BitShift", [f"{p}_u", f"{p}_shifts"], [f"{p}_s"], direction="RIGHT", name=f"{p}/Shift"),
            helper.make_node("BitwiseAnd", [f"{p}_s", f"{p}_mask"], [f"{p}_m"], name=f"{p}/And"),
            helper.make_node("Reshape", [f"{p}_m", f"{p}_flat"], [f"{p}_r"], name=f"{p}/Flat"),
            helper.make_node("Slice", [f"{p}_r", f"{p}_zero", f"{p}_n"], [f"{p}_sl"], name=f"{p}/Slice"),
        ]
        cur = f"{p}_sl"
    nodes += [
        helper.make_node("Cast", [cur], [f"{p}_i64"], to=TensorProto.INT64, name=f"{p}/Cast"),
        helper.make_node("Gather", [f"{p}_table", f"{p}_i64"], [f"{p}_g"], axis=0, name=f"{p}/Gather"),
        helper.make_node("Reshape", [f"{p}_g", f"{p}_shape"], [name], name=f"{p}/Reshape"),
    ]
    return nodes, inits
