"""An fp32 SGEMM whose rows of A fall in one set of the L1 data cache: what `Work.aliased_macs` counts.

MLAS's SGEMM runs a prepacked B (a MatMul's / Gemm's constant weights) against A as it is, row after row with the
leading dimension K (onnxruntime/core/mlas/lib/sgemm.cpp, MlasSgemmPackedOperation: slices of 128 columns by 256 of
K, `MlasSgemmKernelLoop(A + k, ..., lda, ...)`), and its AVX-512F kernel computes 12 rows at once, broadcasting one
float of each of the 12 rows per step (core/mlas/lib/x86_64/FgemmKernelAvx512FCommon.h: blocks of 12, 6, 3 and 1
rows). Where a row of A is a multiple of the L1's way (4 KiB on these x86 cores: 32 KiB 8-way or 48 KiB 12-way) apart
from the next, i.e. K a multiple of 1024 floats, the 12 rows' lines map to one L1 set and evict each other at every
line of K: the kernel waits on the L2 for A. A transformer's MLP second Linear has K = 4 x its width, so K = 1024,
1536, 2048, 3072 are common; 1536 (a row 6 KiB long) alternates between two sets and is not aliased.
Seen on a Zen 4 (32 KiB 8-way L1d; session 63, single-op Gemms at 49, 197 and 785 rows, thread CPU time): K = 1024,
2048 and 3072 9.5-14.3% slower than the rate the bench's K <= 896 cases fit, K = 1008, 1040, 1536 and 3088 beside them
0.7-2.8% (49 and 197 rows; 4.0-7.8% at 785 rows, where A outgrows the L2 whatever K's alignment).
The MACs count at `gemm.fp32.alias` s each (ALIAS_KEY, roofline), fitted on calibration's pairs of such products and
their twins one cache line longer (simulator/calibration_alias.py); a machine whose L1 holds those rows fits ~0.
"""

from __future__ import annotations

import math

from compiler.graph import Graph, Node

ALIAS_KEY = "gemm.fp32.alias"  # s per MAC of an fp32 SGEMM whose rows of A alias in the L1 (gemm and matmul paths)
L1_WAY_BYTES = 4096  # bytes of one way of the L1 data cache (its size over its associativity) on these x86 cores
ROW_BLOCK = 12  # rows of A MLAS's AVX-512F SGEMM kernel reads at once
_PRODUCTS = frozenset({"MatMul", "FusedMatMul", "Gemm", "FusedGemm"})


def aliased(k: int) -> bool:
    """Rows of K fp32 elements lie a multiple of the L1's way apart: all of a row block's lines in one set."""
    return k > 0 and (4 * k) % L1_WAY_BYTES == 0


def aliased_macs(node: Node, graph: Graph, kind: str, macs: float) -> float:
    """`macs` where `node` is an fp32 product MLAS runs with A as it is (not transposed: a transposed A is packed
    first) whose K aliases (`aliased`) over at least one block of ROW_BLOCK rows per SGEMM call; else 0."""
    if kind not in ("gemm", "matmul") or node.op_type not in _PRODUCTS or len(node.inputs) < 2 or not node.outputs:
        return 0.0
    if int(node.attributes.get("transA", 0) or 0):
        return 0.0
    a, b, y = (graph.values.get(n) for n in (node.inputs[0], node.inputs[1], node.outputs[0]))
    if a is None or b is None or y is None or not (a.is_static and b.is_static and y.is_static):
        return 0.0
    if not a.shape or not b.shape or len(b.shape) < 2 or not y.shape or len(y.shape) < 2:  # type: ignore[arg-type]
        return 0.0
    # ORT's MatMul folds A's batches into rows where B is 2-D (one SGEMM), else one SGEMM per batch
    rows = math.prod(int(d) for d in y.shape[:-1]) if len(b.shape) == 2 else int(y.shape[-2])  # type: ignore[index,misc]
    return macs if aliased(int(a.shape[-1])) and rows >= ROW_BLOCK else 0.0  # type: ignore[index]
